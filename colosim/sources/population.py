"""The built-in synthetic task population (SPEC §12).

It stands in for the long tasks of the Google 2011 trace (paper Section 3.1)
when no trace is at hand, and is judged by the paper's own numbers: the
per-task std ~ mean lines (Fig. 3), the time variability (Section 3.3), the
shapes of the per-task histograms (Fig. 4), the sums of tasks (Fig. 5,
Table 1) and the packing results of Section 5. ``docs/population.md``
describes the model and its calibration; ``benchmarks/calibrate_population.py``
measures it.

The model, per task k (all of it a pure function of ``(seed, k)``):

- a duration of ``T_k`` 5-minute records, 24 (2 hours) to 8,352 (29 days);
- a mean usage ``mu_k`` (log-normal across tasks, capped) and a target
  coefficient of variation ``cv_k`` of its instantaneous usage, a power law
  of ``mu_k`` with scatter (concave std ~ mean, Fig. 3);
- ``K_k`` usage *levels* (1 to ``max_levels``) whose time-weighted mean is
  ``mu_k``, visited by a regime process with geometric dwell times of mean
  ``D_k`` records: a long dwell makes two hours of the task look different
  (the tasks that reject time invariance, Section 3.3), a dwell of about one
  record makes the task a stationary mixture (the multi-modal centroids of
  Fig. 4); the levels carry a share of the task's variance;
- within a 5-minute window t, the per-second usage takes ``phases`` values
  ``V_t1 .. V_tM`` for equal parts of the window, each ``level(t)`` times a
  unit-mean factor ``F`` that carries the rest of the variance. The
  *average* record is the window's mean, ``mean_j V_tj``; the
  *instantaneous* record is one sampled second of the same window, which by
  symmetry is ``V_t1`` (Google 2011 columns 6 and 20). Both therefore have
  the same mean, and the instantaneous record is the more variable.

``F`` is built on the power of a uniform ``U**p``: an affine ``a + b U**p``
(never below ``a``; left-skewed, flat or right-skewed as the task's shape
``p`` is below, at or above 1) when the CV allows, the exponential-like
``(p + 1) U**p`` when it does not, and an on-off factor (idle, or bursting)
for the burstiest tasks. Being bounded, these have the thin tails beyond
mean + 2 std that the paper's conservative estimators imply (SPEC §12),
unlike a gamma of the same std, and sums of such tasks turn Gaussian
almost as fast as Table 1 reports (docs/population.md lists what fits).

Values are clipped to [0, 1] (the largest machine has capacity 1).
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy.signal import lfilter
from scipy.special import ndtri

from ..errors import InputError
from ..io.series import WINDOW_US
from ..kernels.population import phases
from .ingest import MIN_RECORDS

#: Version of the model's definition: bump it whenever the same (seed, k,
#: defaults) would give other records, so that cached stores are not reused.
MODEL_VERSION = 2

#: Records per task allowed by the model: 2 hours (the ingest's threshold of
#: a long task, SPEC §7) to 29 days of 5-minute windows.
MAX_RECORDS = 8352
#: Reference mean usage of the CV law (the paper's mean task, 13.5 / 500).
MEAN_REF = 0.027
#: Trace conventions (Google 2011 task_usage): microseconds, 300-s windows,
#: the first window starting 600 s after the time origin.
DAY_US = 86_400_000_000
TRACE_START_US = 600_000_000

# Stream tags keep the population's random numbers apart from each other and
# from the realization streams of SPEC §8 (which use [seed, 0], [seed, 1, j]).
_TAG_RECORDS = 2011
_JOB_BASE = 6_000_000_000
_TASKS_PER_JOB = 10

# Indices of the per-task uniforms (hashed streams, see _uniforms).
(_U_LENGTH, _U_FULL, _U_MEAN, _U_CV, _U_LEVELS, _U_DWELL, _U_START, _U_SHAPE,
 _N_UNIFORMS) = range(9)


@dataclass(frozen=True)
class PopulationModel:
    """Parameters of the synthetic population; defaults are the calibrated
    values (docs/population.md, benchmarks/calibrate_population.py).

    Attributes
    ----------
    full_share : float
        Share of tasks that last the whole trace (``MAX_RECORDS``); the others
        have a log-uniform duration in [``MIN_RECORDS``, ``MAX_RECORDS``].
    mean_median, mean_sigma : float
        Median and log-scale std of the per-task mean usage ``mu``
        (log-normal), before the cap.
    mean_max : float
        Cap on ``mu``.
    cv_ref, cv_exponent : float
        Target coefficient of variation of a task's instantaneous usage,
        ``cv_ref * (mu / MEAN_REF) ** -cv_exponent``: the std grows with the
        mean, concavely, which a least-squares line (Fig. 3) sees as a slope
        and a positive intercept ...
    cv_sigma : float
        ... times a log-normal scatter of this log-scale std.
    multi_share : float
        Share of tasks with more than one usage level.
    max_levels : int
        Largest number of levels (2..max_levels, uniformly).
    level_share : float
        Share of a multi-level task's log-variance ``log(1 + cv**2)`` carried
        by its levels (the rest by the factor ``F``). The spread is capped
        where the lowest level reaches 0 (an idle level).
    share_concentration : float
        Dirichlet concentration of the levels' time shares (large: even
        shares; small: some levels rare).
    dwell_min, dwell_max : float
        Mean dwell times ``D`` in a level (records) are log-uniform in
        [dwell_min, dwell_max].
    phases : int
        Values per window (``M``): a window's average is the mean of M
        independent draws, its instantaneous record one of them, so within a
        level the average's variance is 1/M of the instantaneous one.
    p_on : float
        Largest power of the factors' power-of-uniform part: a factor whose
        squared CV exceeds ``p_on**2 / (2 p_on + 1)`` becomes on-off (idle
        or bursting).
    shape_min : float
        Per-task shape powers are log-uniform in [shape_min, p_on]; a factor
        uses its task's shape when its CV allows a floor >= 0.
    spike_max : float
        Scale of the highest bursts: a task's CV is capped at
        ``sqrt(spike_max / mu)``, so that a small task idle most of the time
        bursts to about ``spike_max``, not to the whole machine.
    daily_amplitude : float
        Amplitude A of an optional daily pattern common to all tasks
        (docs/estimators.md): every record of a window starting at time tau is
        multiplied by ``1 + A sin(2 pi (tau mod day) / day)`` before the clip
        to [0, 1]. 0 (the default) leaves the calibrated population as it is.
    """

    full_share: float = 0.12
    mean_median: float = 0.01726
    mean_sigma: float = 0.9474
    mean_max: float = 0.4525
    cv_ref: float = 1.041
    cv_exponent: float = 0.4724
    cv_sigma: float = 0.1633
    spike_max: float = 0.15
    multi_share: float = 0.85
    max_levels: int = 4
    level_share: float = 0.9
    share_concentration: float = 8.353
    dwell_min: float = 1.0
    dwell_max: float = 200.0
    phases: int = 3
    p_on: float = 2.177
    shape_min: float = 0.2869
    daily_amplitude: float = 0.0

    def __post_init__(self):
        def bad(name, rule):
            raise InputError(f"PopulationModel.{name} = {getattr(self, name)!r}: must be {rule}")

        for name in ("full_share", "multi_share", "level_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                bad(name, "in [0, 1]")
        for name in ("mean_median", "mean_max", "dwell_min", "dwell_max", "spike_max", "share_concentration",
                     "shape_min", "p_on"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v > 0):
                bad(name, "finite and > 0")
        for name in ("mean_sigma", "cv_ref", "cv_exponent", "cv_sigma"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                bad(name, "finite and >= 0")
        if self.mean_max > 1:
            bad("mean_max", "<= 1")
        if not (np.isfinite(self.daily_amplitude) and 0.0 <= self.daily_amplitude < 1.0):
            bad("daily_amplitude", "in [0, 1)")
        if self.shape_min > self.p_on:
            bad("shape_min", f"<= p_on ({self.p_on})")
        if self.dwell_min < 1:
            bad("dwell_min", ">= 1")
        if self.dwell_max < self.dwell_min:
            bad("dwell_max", f">= dwell_min ({self.dwell_min})")
        if not (isinstance(self.phases, (int, np.integer)) and 1 <= self.phases <= 64):
            bad("phases", "an integer in [1, 64]")
        if not (isinstance(self.max_levels, (int, np.integer)) and 2 <= self.max_levels <= 16):
            bad("max_levels", "an integer in [2, 16]")

    def replace(self, **changes) -> "PopulationModel":
        """A copy with some parameters changed (validated)."""
        return dataclasses.replace(self, **changes)


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer on uint64 arrays (wrapping arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _uniforms(seed: int, ks: np.ndarray, n: int = _N_UNIFORMS) -> np.ndarray:
    """Uniforms in (0, 1), shape (len(ks), n): a counter-based hash of
    (seed, k, j), so that a task's parameters depend on (seed, k) only and
    the whole population's are computed at once without generating records."""
    ks = np.asarray(ks, dtype=np.uint64).reshape(-1, 1)
    j = np.arange(n, dtype=np.uint64).reshape(1, -1)
    s = _mix64(np.full(1, seed & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15))
    x = _mix64(s + _mix64(ks * np.uint64(0xD1B54A32D192ED03) + j * np.uint64(0x8CB92BA72F3D8DD7)))
    return ((x >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53


# ---------------------------------------------------------------- memory
# Memory (docs/population.md, "Memory"): constants of the model, kept out of
# PopulationModel so that a CPU-only store's bytes and attributes do not
# change. A task's level is log-normal, tied to its CPU mean through the
# normal score that draws that mean; its windows vary around the level as
# an AR(1) process; a window's maximum sits a little above its mean.
MEM_LOG_MEDIAN = -3.985  # fitted: log of the 2011 cross-section's median memory (0.0186)
MEM_LOG_SIGMA = 0.5      # fitted: from that median and its 90th percentile (0.0353)
MEM_CPU_RHO = 0.85       # fitted toward the cross-section's Spearman correlation of one window's memory
                         # and CPU (0.62; the population reaches 0.50, docs/population.md)
MEM_MAX_LEVEL = 0.5      # a task's level never exceeds half the largest machine's memory
MEM_CV_MEDIAN = 0.051    # fitted: median window-to-window CV of mean memory (2019 tasks)
MEM_CV_SIGMA = 0.51      # fitted: sd of log CV across the 2019 tasks
MEM_AR = 0.68            # fitted: median lag-1 autocorrelation of mean memory (2019 tasks)
MEM_PEAK = 0.013         # mean of (max / mean - 1) within a window: 2011's median 1.009, p90 1.036
#: the uniforms of the memory parameters follow the CPU's (_uniforms columns)
_U_MEM_LEVEL, _U_MEM_CV = _N_UNIFORMS, _N_UNIFORMS + 1
_TAG_MEMORY = 2012  # the records' generator: default_rng([seed, _TAG_MEMORY, k])
#: raised whenever the memory model would give other memory records (cached
#: stores with memory carry it in their name and source)
MEMORY_VERSION = 1


def memory_levels(seed: int, ks: np.ndarray, cpu_score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each task's memory level and window-to-window CV (vectorized).
    ``cpu_score`` is the normal score that drew the task's CPU mean."""
    u = _uniforms(seed, ks, _N_UNIFORMS + 2)
    z = MEM_CPU_RHO * cpu_score + np.sqrt(1 - MEM_CPU_RHO**2) * ndtri(u[:, _U_MEM_LEVEL])
    level = np.minimum(MEM_MAX_LEVEL, np.exp(MEM_LOG_MEDIAN + MEM_LOG_SIGMA * z))
    cv = MEM_CV_MEDIAN * np.exp(MEM_CV_SIGMA * ndtri(u[:, _U_MEM_CV]))
    return level, cv


def generate_memory(seed: int, k: int, length: int, level: float, cv: float) -> tuple[np.ndarray, np.ndarray]:
    """``(mem_avg, mem_max)`` of task k's ``length`` windows (float32)."""
    g = np.random.default_rng([seed, _TAG_MEMORY, k])
    e = g.standard_normal(length)
    x = np.sqrt(1 - MEM_AR**2) * e
    x[0] = e[0]  # a stationary start: every window of unit variance
    a = lfilter([1.0], [1.0, -MEM_AR], x)  # AR(1): a_t = MEM_AR a_(t-1) + x_t
    mem_avg = np.clip(level * (1 + cv * a), 0, 1)
    mem_max = np.clip(mem_avg * (1 + g.exponential(MEM_PEAK, length)), 0, 1)
    return mem_avg.astype(np.float32), np.maximum(mem_max, mem_avg).astype(np.float32)


def _check_seed(seed) -> int:
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, not {seed!r}")
    return int(seed)


class TaskParameters:
    """The per-task scalars of a set of tasks (vectorized, no records).

    Attributes are arrays over the tasks: ``length`` (T_k), ``mean`` (mu_k),
    ``cv`` (target coefficient of variation of the instantaneous usage),
    ``n_levels``, ``dwell`` (mean dwell time D_k, records), ``shape`` (power
    of the factor F when its CV allows), ``start`` (first window index in
    the trace).
    """

    def __init__(self, model: PopulationModel, seed: int, ks: np.ndarray):
        m = model
        u = _uniforms(seed, ks)
        full = u[:, _U_FULL] < m.full_share
        log_t = np.log(MIN_RECORDS) + u[:, _U_LENGTH] * (np.log(MAX_RECORDS + 1) - np.log(MIN_RECORDS))
        self.length = np.where(full, MAX_RECORDS,
                               np.clip(np.floor(np.exp(log_t)), MIN_RECORDS, MAX_RECORDS)).astype(np.int64)
        self.mean_score = ndtri(u[:, _U_MEAN])  # the normal score of the mean (memory follows it)
        self.mean = np.minimum(m.mean_max, m.mean_median * np.exp(m.mean_sigma * self.mean_score))
        cv = m.cv_ref * (self.mean / MEAN_REF) ** -m.cv_exponent * np.exp(m.cv_sigma * ndtri(u[:, _U_CV]))
        # a bursty task's peaks reach about mu * (1 + cv**2): keep them near spike_max
        self.cv = np.minimum(cv, np.sqrt(m.spike_max / self.mean))
        # levels: a share multi_share has 2..max_levels, uniformly
        lv = u[:, _U_LEVELS]
        multi = lv < m.multi_share
        frac = np.where(multi, lv / max(m.multi_share, 1e-300), 0.0)
        self.n_levels = np.where(multi, 2 + np.minimum(m.max_levels - 2, np.floor(frac * (m.max_levels - 1))),
                                 1).astype(np.int64)
        self.dwell = m.dwell_min * np.exp(u[:, _U_DWELL] * np.log(m.dwell_max / m.dwell_min))
        self.shape = m.shape_min * np.exp(u[:, _U_SHAPE] * np.log(m.p_on / m.shape_min))
        self.start = np.floor(u[:, _U_START] * (MAX_RECORDS - self.length + 1)).astype(np.int64)


def _power_cv2(p: float) -> float:
    """Squared CV of the power factor (p + 1) U**p."""
    return p * p / (2.0 * p + 1.0)


def factor_spec(cv2: float, shape: float, p_on: float) -> tuple[float, float, float, float]:
    """Parameters ``(a, b, p, pi)`` of the factor F: bounded, non-negative,
    unit mean, squared CV ``cv2``. With U uniform on [0, 1),
    ``F = a + b (U / pi)**p`` if ``U < pi``, else 0.

    - If ``cv2`` allows a floor ``a >= 0`` at power ``shape``: ``pi = 1``,
      ``a + b U**shape`` -- never below ``a`` times the mean, left-skewed,
      flat or right-skewed as ``shape`` is below, at or above 1;
    - else, up to power ``p_on``, ``(p + 1) U**p`` with
      ``p**2 / (2p + 1) = cv2`` (floor 0, exponential-like);
    - beyond, *on-off*: 0 with probability ``1 - pi``, else the power factor
      of power ``p_on`` divided by ``pi`` -- a task idle most of the time
      with bursts, whose peak grows like ``cv2`` rather than like a heavy
      tail.
    Every branch is bounded, so tails beyond mean + 2 std stay thin.
    """
    if cv2 <= 0.0:
        return 1.0, 0.0, 1.0, 1.0
    p_min = cv2 + np.sqrt(cv2 * cv2 + cv2)  # the power whose floor is 0
    if p_min <= shape:
        sd = shape / ((shape + 1.0) * np.sqrt(2.0 * shape + 1.0))  # std of U**shape
        b = np.sqrt(cv2) / sd
        return max(0.0, 1.0 - b / (shape + 1.0)), b, shape, 1.0
    if p_min <= p_on:
        return 0.0, p_min + 1.0, p_min, 1.0
    pi = (1.0 + _power_cv2(p_on)) / (1.0 + cv2)
    return 0.0, (p_on + 1.0) / pi, p_on, pi


def _levels(g: np.random.Generator, K: int, cv2_target: float, concentration: float):
    """Relative levels (time-weighted mean 1) and time shares of K levels,
    with squared CV ``cv2_target`` or the largest spread that keeps the
    lowest level >= 0 (it is then an idle level at 0)."""
    share = g.dirichlet(np.full(K, concentration))
    # evenly spaced levels in random order: the modes of a mixture
    z = g.permutation(np.linspace(-1.0, 1.0, K))
    z = z - share @ z
    sd = np.sqrt(share @ (z * z))
    if sd == 0.0:
        return np.ones(K), share
    lam = np.sqrt(cv2_target) / sd
    zmin = z.min()
    if zmin < 0:
        lam = min(lam, -1.0 / zmin)
    return np.maximum(0.0, 1.0 + lam * z), share


def generate_task(model: PopulationModel, seed: int, k: int, params: TaskParameters | None = None):
    """Records (inst, avg) of task k, float32, in [0, 1]. A pure function of
    (model, seed, k)."""
    if params is None:
        params = TaskParameters(model, seed, np.array([k]))
        i = 0
    else:
        i = k
    T = int(params.length[i])
    mu = float(params.mean[i])
    K = int(params.n_levels[i])
    log_var = float(np.log1p(params.cv[i] ** 2))  # log(1 + cv^2) of the instantaneous usage
    g = np.random.default_rng([seed, _TAG_RECORDS, k])
    if K == 1:
        level = np.full(T, mu)
    else:
        rel, share = _levels(g, K, np.expm1(model.level_share * log_var), model.share_concentration)
        log_var -= float(np.log1p(share @ (rel * rel) - 1.0))
        # a regime process: geometric dwell times of mean D, each next level
        # drawn by the shares (so the time spent in level j is ~ share_j)
        d = float(params.dwell[i])
        n_seg = int(np.ceil(T / d)) + 8
        dur = g.geometric(min(1.0, 1.0 / d), n_seg)
        # the first segment starts at a random point of its dwell
        dur[0] = 1 + g.integers(0, dur[0])
        while dur.sum() < T:  # rare: extend
            dur = np.concatenate([dur, g.geometric(min(1.0, 1.0 / d), n_seg)])
        states = g.choice(K, size=len(dur), p=share)
        level = np.repeat(mu * rel[states], dur)[:T]
    log_var = max(0.0, log_var)
    M = int(model.phases)
    a, b, p, pi = factor_spec(float(np.expm1(log_var)), float(params.shape[i]), model.p_on)
    u = g.random(T * M)
    inst = np.empty(T)
    avg = np.empty(T)
    phases(u, level, M, a, b, p, pi, inst, avg)
    return inst.astype(np.float32), avg.astype(np.float32)


class SyntheticPopulation:
    """A population of ``n_tasks`` synthetic long tasks, generated on demand.

    Satisfies the series-source protocol of :mod:`colosim.sources.realize`: task k's
    records are a pure function of ``(seed, k, model)``, whichever other tasks
    are generated and in whatever order or thread.

    Parameters
    ----------
    n_tasks : int
        Number of tasks (>= 1).
    seed : int
        Non-negative seed.
    model : PopulationModel
        The model's parameters (default: the calibrated values).
    """

    def __init__(self, n_tasks: int, seed: int = 0, model: PopulationModel = PopulationModel()):
        if not isinstance(n_tasks, (int, np.integer)) or isinstance(n_tasks, bool) or n_tasks < 1:
            raise InputError(f"n_tasks must be a positive integer, not {n_tasks!r}")
        if not isinstance(model, PopulationModel):
            raise InputError(f"model must be a PopulationModel, not {type(model).__name__}")
        self._n = int(n_tasks)
        self.seed = _check_seed(seed)
        self.model = model
        self._params: TaskParameters | None = None
        self._memory: tuple | None = None
        ks = np.arange(self._n, dtype=np.int64)
        # job IDs and task indices shaped like the trace's: tasks of a job
        # share its ID and are numbered 0, 1, ...; sorted like a series file.
        self.task_id = np.stack([_JOB_BASE + 37 * (ks // _TASKS_PER_JOB), ks % _TASKS_PER_JOB], axis=1)

    @property
    def n_tasks(self) -> int:
        return self._n

    @property
    def params(self) -> TaskParameters:
        """Per-task scalars of all tasks (computed once, no records)."""
        if self._params is None:
            self._params = TaskParameters(self.model, self.seed, np.arange(self._n))
        return self._params

    def _index(self, k) -> int:
        if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k < self._n:
            raise InputError(f"task {k!r} is out of range [0, {self._n})")
        return int(k)

    def lengths(self) -> np.ndarray:
        """Records per task, T_k (int64), without generating records."""
        return self.params.length.copy()

    def task(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(inst, avg) records of task k, float32 arrays of length T_k."""
        k = self._index(k)
        inst, avg = generate_task(self.model, self.seed, k, self.params)
        if self.model.daily_amplitude:
            inst, avg = self._daily(k, inst, avg)
        return inst, avg

    #: the built-in population has memory (docs/population.md, "Memory")
    has_memory = True

    def memory(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(mem_avg, mem_max) records of task k, float32 arrays of length
        T_k, from streams of their own (the CPU records do not change)."""
        k = self._index(k)
        if self._memory is None:
            self._memory = memory_levels(self.seed, np.arange(self._n), self.params.mean_score)
        level, cv = self._memory
        return generate_memory(self.seed, k, int(self.params.length[k]), float(level[k]), float(cv[k]))

    def _daily(self, k: int, inst: np.ndarray, avg: np.ndarray):
        """The common daily pattern (``PopulationModel.daily_amplitude``)."""
        start = TRACE_START_US + (int(self.params.start[k]) + np.arange(len(inst), dtype=np.int64)) * WINDOW_US
        factor = 1.0 + self.model.daily_amplitude * np.sin(2 * np.pi * (start % DAY_US) / DAY_US)
        return ((inst * factor).clip(0, 1).astype(np.float32), (avg * factor).clip(0, 1).astype(np.float32))

    def time_range(self) -> tuple[int, int]:
        """Earliest record start and latest record start plus one window
        (µs), from the per-task scalars alone (time-aligned realization)."""
        p = self.params
        return (TRACE_START_US + int(p.start.min()) * WINDOW_US,
                TRACE_START_US + int((p.start + p.length).max()) * WINDOW_US)

    def records(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(inst, avg, start_time) of task k; start times in microseconds,
        one 300-s window apart, as in the trace's task_usage table."""
        inst, avg = self.task(k)
        k = int(k)
        first = TRACE_START_US + int(self.params.start[k]) * WINDOW_US
        start = first + WINDOW_US * np.arange(len(inst), dtype=np.int64)
        return inst, avg, start

    def reader(self):
        """The population itself: its tasks are generated on demand (the
        series-source protocol of :mod:`colosim.sources.realize`)."""
        return contextlib.nullcontext(self)

    @property
    def source(self) -> dict:
        """What the population is, for a file's ``source`` attribute."""
        return {
            "kind": "synthetic",
            "model_version": MODEL_VERSION,
            "population_tasks": self._n,
            "seed": self.seed,
            "model": dataclasses.asdict(self.model),
        }

    def to_series_arrays(self, tasks=None) -> dict:
        """Materialize tasks (default: all) as the arrays of a series file.

        Returns a dict with ``task_id``, ``offsets``, ``inst``, ``avg``,
        ``start_time`` ready for :func:`colosim.io.write_series` (add
        ``source=self.source`` and ``filters``). Meant for small
        populations: it holds every record in memory.
        """
        ks = np.arange(self._n) if tasks is None else np.asarray(tasks, dtype=np.int64).reshape(-1)
        for k in ks:
            self._index(int(k))
        lengths = self.params.length[ks]
        offsets = np.zeros(len(ks) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        inst = np.empty(offsets[-1], dtype=np.float32)
        avg = np.empty_like(inst)
        start_time = np.empty(offsets[-1], dtype=np.int64)
        for j, k in enumerate(ks):
            a, b = offsets[j], offsets[j + 1]
            inst[a:b], avg[a:b], start_time[a:b] = self.records(int(k))
        return {
            "task_id": self.task_id[ks].copy(),
            "offsets": offsets,
            "inst": inst,
            "avg": avg,
            "start_time": start_time,
        }
