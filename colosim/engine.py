"""One instance × many grid points → metrics (SPEC §2–5): the one path
every grid point takes.

1. **Statistics** once per (data, clairvoyance), with every percentile the
   points need (:func:`colosim.model.estimators.compute_statistics`).
2. **Packing.** A point whose estimator has a scalar item form and whose
   capacity is one number is packed by the scalar kernel, all such points of
   the instance in one call (:func:`colosim.kernels.packing.pack_many`);
   the others — vector forms, fleets — by the vector kernel
   (:func:`colosim.kernels.vector_packing.pack_vector`). A calibrated
   estimator's parameter is first searched on the observation columns.
3. **Evaluation.** Every packing of the instance by one evaluator, which
   judges each bin against its own capacity and sums a set of tasks that
   several packings share only once
   (:func:`colosim.kernels.evaluate.count_violations`).
4. **Metrics**, assembled once (SPEC §5).

Each point's numbers are a function of the point and the instance alone:
neither the other points of the grid nor the thread count changes a bit.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from . import streams
from .errors import InputError
from .io._checks import raise_usage_problem, statistics_problem, usage_problem
from .kernels.evaluate import count_violations
from .kernels.packing import pack_many
from .kernels.stats import row_maxima, row_means
from .kernels.tiles import TILE, column_tiles
from .kernels.two_resource import pack_two
from .kernels.vector_packing import GAUSS, pack_vector
from .model.estimators import SCALAR, TaskStatistics, compute_statistics
from .model.grid import GridPoint, observation_split
from .model.intervals import row_q_intervals
from .model.metrics import Metrics, normalization

#: A calibrated estimator's rho is searched in [CAL_RHO_MIN, CAL_RHO_MAX] by
#: CAL_STEPS halvings of log(rho) (docs/estimators.md).
CAL_RHO_MIN = 1e-9
CAL_RHO_MAX = 0.5
CAL_STEPS = 24


@dataclass
class Packing:
    """One point's packing: bins numbered in opening order, each bin's
    machine type, the tasks' standalone loads ``L({i})``."""

    assign: np.ndarray
    n_bins: int
    moves: int
    bin_type: np.ndarray
    standalone: np.ndarray
    calibrated_rho: float | None = None
    standalone_m: np.ndarray | None = None  # memory's standalone loads (two resources)
    fills: np.ndarray | None = None  # (n_bins, 2): each bin's CPU and memory load over its capacity


class Observations:
    """What the estimators of one instance see, computed once per
    (data, clairvoyance): the observation columns, their statistics, and
    their layout for judging packings on them (calibration)."""

    def __init__(self, x: np.ndarray, y: np.ndarray | None, points: list[GridPoint], unchecked: str | None = None):
        self.x, self.y = x, y
        #: x's name when its values are yet to be checked: by the first
        #: statistics over all of x (float32), else by :meth:`check`
        self.unchecked = unchecked
        R = x.shape[1]
        self.k = {p.clairvoyance: observation_split(p.clairvoyance, R)[0] for p in points}
        self._levels: dict[tuple, set] = {}
        for p in points:
            levels = self._levels.setdefault((p.data, p.clairvoyance), set())
            if "percentile" in p.estimator.kind.needs:
                levels.add(p.estimator.param)
        self._stats: dict[tuple, TaskStatistics] = {}
        self.statistics_seconds = 0.0  # spent in statistics(), for a profile
        self._layouts: dict[tuple, Layout] = {}
        self._columns: dict[tuple, np.ndarray] = {}

    def source(self, data: str) -> np.ndarray:
        if data == "avg":
            if self.y is None:
                raise InputError("data = 'avg' needs the average matrix y")
            return self.y
        return self.x

    def columns(self, data: str, clairvoyance: float) -> np.ndarray:
        """The observation columns, contiguous."""
        key = (data, clairvoyance)
        if key not in self._columns:
            self._columns[key] = np.ascontiguousarray(self.source(data)[:, : self.k[clairvoyance]])
        return self._columns[key]

    def statistics(self, data: str, clairvoyance: float) -> TaskStatistics:
        key = (data, clairvoyance)
        if key not in self._stats:
            t0 = time.perf_counter()
            stats = compute_statistics(self.source(data), sorted(self._levels.get(key, ())), self.k[clairvoyance])
            if self.unchecked is not None and data == "inst" and self.k[clairvoyance] == self.x.shape[1]:
                self._raise_problem(statistics_problem(stats.mean, stats.maximum, stats.minimum))
            self._stats[key] = stats
            self.statistics_seconds += time.perf_counter() - t0
        return self._stats[key]

    def _raise_problem(self, problem: int) -> None:
        name, self.unchecked = self.unchecked, None
        raise_usage_problem(name, problem)

    def check(self) -> None:
        """Check x's values now if no statistics have (a pass of its own)."""
        if self.unchecked is not None:
            self._raise_problem(usage_problem(self.x))

    def _of_all_of_x(self) -> TaskStatistics | None:
        """Statistics computed so far over every column of x, if any."""
        R = self.x.shape[1]
        for (data, cl), stats in self._stats.items():
            if data == "inst" and self.k[cl] == R:
                return stats
        return None

    def row_means(self) -> np.ndarray:
        """Each task's mean of x over all its columns (for m_norm): the
        statistics' means when some point observed every column of x (the
        same sum, so the same bits), else one pass."""
        stats = self._of_all_of_x()
        return row_means(self.x) if stats is None else stats.mean

    def maxima(self, first: int) -> np.ndarray:
        """An upper bound of each task's values in x over columns ``[first,
        R)``: the statistics' maxima when some point observed every column
        of x, else one pass over those columns."""
        stats = self._of_all_of_x()
        return row_maxima(self.x, first, self.x.shape[1]) if stats is None else stats.maximum

    def layout(self, data: str, clairvoyance: float) -> "Layout":
        """The observation columns laid out for :func:`evaluate`."""
        key = (data, clairvoyance)
        if key not in self._layouts:
            self._layouts[key] = lay_out(self.source(data), 0, self.k[clairvoyance])
        return self._layouts[key]


def _items(estimator, data: str, clairvoyance: float, obs: Observations):
    """The scalar items ``(a, b)`` of an estimator on these observations."""
    a, b = estimator.items(obs.statistics(data, clairvoyance))
    return np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64)


def _in_one_scalar_call(p: GridPoint) -> bool:
    """Whether the point is packed in the instance's one call of the scalar
    kernel: a scalar item form, known before packing (not calibrated), and a
    single capacity."""
    return p.estimator.kind.form == SCALAR and p.estimator.kind.calibrated is None and not p.fleet


def _pack_vector(p: GridPoint, V, kind, params) -> Packing:
    caps, shares = p.machine_types()
    type_caps = p.headroom * np.array(caps)
    assign, n_bins, moves, bin_type, standalone = pack_vector(
        V, kind, params, type_caps, np.array(shares), p.algorithm_code, p.rebalance)
    return Packing(assign, int(n_bins), int(moves), bin_type, standalone)


def _pack_two(p: GridPoint, V, kind, params, memory_state) -> Packing:
    """One point packed on CPU (states ``V``) and memory (``memory_state``,
    the memory estimator's ``(W, kind, params)``) together (docs/memory.md)."""
    caps, shares = p.machine_types()
    W, kind_m, params_m = memory_state
    assign, n_bins, moves, bin_type, standalone, standalone_m, fills = pack_two(
        V, kind, params, W, kind_m, params_m, p.headroom * np.array(caps), np.array(p.machine_memories()),
        np.array(shares), p.algorithm_code, p.rebalance, p.fit_rule_code)
    return Packing(assign, int(n_bins), int(moves), bin_type, standalone, standalone_m=standalone_m, fills=fills)


def memory_state(p: GridPoint, mobs: "Observations"):
    """``(W, kind, params)`` of the point's memory estimator on the memory
    observation columns: a scalar item form as GAUSS states."""
    est = p.memory_estimator
    if est.kind.form == SCALAR:
        a, b = _items(est, "inst", p.clairvoyance, mobs)
        return np.ascontiguousarray(np.stack([a, b], axis=1)), GAUSS, np.array([est.z])
    return est.state(mobs.columns("inst", p.clairvoyance), min(p.machine_memories()))


def _pack_gaussian(p: GridPoint, a, b, z: float, mstate=None) -> Packing:
    """One point with items (a, b) and this z, by the kernel its capacity
    needs (with memory: the two-resource kernel, memory's states
    ``mstate``)."""
    if mstate is not None:
        return _pack_two(p, np.ascontiguousarray(np.stack([a, b], axis=1)), GAUSS, np.array([z]), mstate)
    if p.fleet:
        return _pack_vector(p, np.ascontiguousarray(np.stack([a, b], axis=1)), GAUSS, np.array([z]))
    one = np.zeros(1, dtype=np.int64)
    assigns, n_bins, moves = pack_many(a[None, :], b[None, :], np.array([z]), one,
                                       np.array([p.headroom * p.capacity]), np.array([p.algorithm_code]),
                                       np.array([p.rebalance]), one, one)
    return Packing(assigns[0], int(n_bins[0]), int(moves[0]), np.zeros(int(n_bins[0]), dtype=np.int64),
                   a + z * np.sqrt(b))


def _calibrate(p: GridPoint, obs: Observations, mstate=None) -> Packing:
    """The packing at the largest rho found by bisection whose packing has a
    violation frequency on the observation columns of at most the point's
    target (docs/estimators.md).

    The frequency on O is ``sum_j #{t in O: S_j(t) > c_j} / (m k)`` with
    ``c_j`` the bin's capacity (without headroom, as q in SPEC §5). It is not
    monotone in rho in general; bisection on ``log rho`` over
    ``[CAL_RHO_MIN, CAL_RHO_MAX]`` keeps a bracket ``lo`` (meets) / ``hi``
    (misses) for ``CAL_STEPS`` halvings and returns ``lo``. If even
    ``CAL_RHO_MIN`` misses, it is returned (the most conservative rho tried).
    """
    target = p.estimator.param
    a, b = _items(p.estimator, p.data, p.clairvoyance, obs)
    layout = obs.layout(p.data, p.clairvoyance)
    k = obs.k[p.clairvoyance]
    z_of = p.estimator.kind.calibrated

    def attempt(rho):
        packing = _pack_gaussian(p, a, b, z_of(rho), mstate)
        packing.calibrated_rho = rho
        (counts,), _, _ = evaluate(layout, [packing.assign], [bin_capacities(p, packing)], [0])
        return int(counts.sum()) / (packing.n_bins * k) <= target, packing

    ok, packing = attempt(CAL_RHO_MAX)
    if ok:
        return packing
    ok, low = attempt(CAL_RHO_MIN)
    if not ok:
        return low
    lo, hi = math.log(CAL_RHO_MIN), math.log(CAL_RHO_MAX)
    best = low
    for _ in range(CAL_STEPS):
        mid = 0.5 * (lo + hi)
        ok, packing = attempt(math.exp(mid))
        if ok:
            lo, best = mid, packing
        else:
            hi = mid
    return best


def memory_observations(memory: np.ndarray | None, points: list[GridPoint]) -> "Observations | None":
    """What the memory estimators of the points that pack memory see
    (docs/memory.md), or None when no point packs memory."""
    mpoints = [GridPoint(p.memory_estimator, clairvoyance=p.clairvoyance) for p in points if p.memory]
    if not mpoints:
        return None
    if memory is None:
        raise InputError("a grid point packs memory (memory_capacity or machine shapes) but there is no memory "
                         "usage: give memory realizations")
    return Observations(memory, None, mpoints)


def pack_points(points: list[GridPoint], obs: Observations, mobs: Observations | None = None) -> list[Packing]:
    """The packing of every point: the scalar kernel's points in one call,
    then each other point by the kernel its form and capacity need (a
    calibrated estimator through its search; a point that packs memory by
    the two-resource kernel, its memory seen through ``mobs``)."""
    scalar = [i for i, p in enumerate(points) if _in_one_scalar_call(p) and not p.memory]
    out = dict(zip(scalar, _pack_scalar([points[i] for i in scalar], obs)))
    states: dict[tuple, tuple] = {}
    mstates: dict[tuple, tuple] = {}
    for i, p in enumerate(points):
        if i in out:
            continue
        mstate = None
        if p.memory:
            mkey = (p.clairvoyance, p.memory_estimator, min(p.machine_memories()))
            if mkey not in mstates:
                mstates[mkey] = memory_state(p, mobs)
            mstate = mstates[mkey]
        if p.estimator.kind.calibrated is not None:
            out[i] = _calibrate(p, obs, mstate)
        elif p.estimator.kind.form == SCALAR:  # a fleet, or memory
            a, b = _items(p.estimator, p.data, p.clairvoyance, obs)
            out[i] = _pack_gaussian(p, a, b, p.estimator.z, mstate)
        else:
            cap_ref = p.headroom * min(p.machine_types()[0])
            key = (p.data, p.clairvoyance, p.estimator, cap_ref)
            if key not in states:
                states[key] = p.estimator.state(obs.columns(p.data, p.clairvoyance), cap_ref)
            out[i] = _pack_vector(p, *states[key]) if mstate is None else _pack_two(p, *states[key], mstate)
    return [out[i] for i in range(len(points))]


def _pack_scalar(points: list[GridPoint], obs: Observations) -> list[Packing]:
    """Points of a scalar item form at single capacities, in one call of the
    scalar kernel: items once per (data, clairvoyance, estimator); points
    that differ only in rebalancing share their online packing."""
    if not points:
        return []
    rows = list(dict.fromkeys((p.data, p.clairvoyance, p.estimator) for p in points))
    n = obs.x.shape[0]
    a_all, b_all, z_all = np.empty((len(rows), n)), np.empty((len(rows), n)), np.empty(len(rows))
    for e, (data, cl, est) in enumerate(rows):
        a_all[e], b_all[e] = _items(est, data, cl, obs)
        z_all[e] = est.z
    index = {key: e for e, key in enumerate(rows)}
    item_of = np.array([index[p.data, p.clairvoyance, p.estimator] for p in points], dtype=np.int64)
    caps = np.array([p.headroom * p.capacity for p in points])
    codes = np.array([p.algorithm_code for p in points], dtype=np.int64)
    assigns, n_bins, moves = pack_many(a_all, b_all, z_all, item_of, caps, codes,
                                       np.array([p.rebalance for p in points], dtype=np.bool_),
                                       *_shared_online(item_of, caps, codes))
    standalone = a_all + z_all[:, None] * np.sqrt(b_all)
    return [Packing(assigns[s], int(n_bins[s]), int(moves[s]), np.zeros(int(n_bins[s]), dtype=np.int64),
                    standalone[item_of[s]]) for s in range(len(points))]


def _shared_online(item_of, caps, codes):
    """Points that differ only in rebalancing share one online packing:
    ``sources`` (the first point of each distinct (items, capacity,
    algorithm)) and ``online_of`` (each point's index into ``sources``)."""
    keys = np.stack([item_of, caps.view(np.int64), codes], axis=1)
    _, sources, online_of = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return sources.astype(np.int64), online_of.ravel().astype(np.int64)


def bin_capacities(p: GridPoint, packing: Packing) -> np.ndarray:
    """The capacity each bin is judged against (without headroom)."""
    return np.array(p.machine_types()[0])[packing.bin_type]


@dataclass(frozen=True)
class Layout:
    """Columns ``[tile0 * TILE, stop)`` of an instance for the evaluation,
    and each task's largest value over them (or any upper bound of it).

    ``tiles`` is the tile layout of :func:`lay_out` (n_tiles, n, TILE), or
    the instance itself (n, R), C-contiguous, read row by row
    (:func:`as_rows`): one packing is judged fastest on its rows, several
    that share bins on tiles."""

    tiles: np.ndarray
    maxima: np.ndarray
    tile0: int
    stop: int


def lay_out(x: np.ndarray, first: int, stop: int, out: np.ndarray | None = None) -> Layout:
    """The columns from ``first`` (rounded down to a tile) to ``stop``, in
    ``out`` when it has room (see :func:`column_tiles`)."""
    tile0 = first // TILE
    return Layout(*column_tiles(x, tile0, stop, out), tile0, stop)


def as_rows(x: np.ndarray, first: int, stop: int, maxima: np.ndarray | None = None) -> Layout:
    """The columns from ``first`` (rounded down to a tile) to ``stop`` of
    the C-contiguous ``x``, read in place: no copy. ``maxima``, when given,
    bounds each task's values there."""
    tile0 = first // TILE
    if maxima is None:
        maxima = row_maxima(x, tile0 * TILE, stop)
    return Layout(x, maxima, tile0, stop)


_workspace = threading.local()


def _kept(name: str, size: int, dtype) -> np.ndarray:
    """This thread's array ``name`` of at least ``size`` items of ``dtype``:
    kept from call to call (a loop of calls works in pages already mapped),
    replaced by a larger one when too small. No result refers to it."""
    buf = getattr(_workspace, name, None)
    if buf is None or buf.dtype != dtype or buf.size < size:
        buf = np.empty(size, dtype=dtype)
        setattr(_workspace, name, buf)
    return buf


def _buffer(x: np.ndarray, first: int, stop: int) -> np.ndarray:
    """This thread's buffer for the evaluation layout of an instance like
    ``x`` (only :func:`instance_metrics` lays out in it)."""
    n_tiles = (stop - first // TILE * TILE + TILE - 1) // TILE
    return _kept("tiles", n_tiles * x.shape[0] * TILE, x.dtype)


def _scratch_words(words: int) -> np.ndarray:
    """This thread's scratch for the evaluation, exactly ``words`` long
    (see :func:`count_violations`)."""
    return _kept("words", words, np.dtype(np.uint64))[:words]


def evaluate(layout: Layout, assigns, bin_caps, firsts,
             work: dict | None = None) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Violation counts of several packings of one instance: packing p
    (``assigns[p]``, bins numbered 0..m-1) is judged on columns
    ``[firsts[p], stop)``, each bin j against ``bin_caps[p][j]``.

    Returns each packing's q_j per bin, its sum of ``(S - c) / c`` over
    its violations (bins added in bin order), and its ``sum_t V_t^2`` with
    ``V_t`` its number of violating bins in column t. A set of tasks that several
    packings share is summed once for all of them (SPEC §5). The additions
    performed are added to ``work["additions"]`` when ``work`` is given.
    """
    P = len(assigns)
    n = assigns[0].shape[0]
    sizes = [len(c) for c in bin_caps]
    capacities, cap_index = np.unique(np.concatenate(bin_caps).astype(np.float64), return_inverse=True)
    bin_cap = np.zeros((P, max(sizes)), dtype=np.int64)
    lengths = np.array(sizes, dtype=np.int64)
    packing_of = np.repeat(np.arange(P), lengths)
    bin_cap[packing_of, np.arange(packing_of.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)] = cap_index
    starts, first_index = np.unique(np.asarray(firsts, dtype=np.int64), return_inverse=True)
    stacked = np.stack(assigns).astype(np.int64, copy=False)
    counts, severity, squares, additions = count_violations(
        layout.tiles, layout.maxima, layout.tile0, layout.stop, stacked, lengths, bin_cap,
        capacities, first_index.astype(np.int64), starts, streams.hash_keys(n), _scratch_words)
    if work is not None:
        work["additions"] = work.get("additions", 0) + int(additions)
    return [counts[q, :m] for q, m in enumerate(sizes)], severity, squares


def checks_in_statistics(p: GridPoint) -> bool:
    """Whether the first thing a point computes is the statistics over
    every column of x (a scalar item form on inst data, all observed), which
    then check x's values too (see ``unchecked`` of
    :func:`instance_metrics`)."""
    return _in_one_scalar_call(p) and not p.memory and p.data == "inst" and p.clairvoyance == 1.0


def instance_metrics(x: np.ndarray, y: np.ndarray | None, points: list[GridPoint],
                     work: dict | None = None, memory: np.ndarray | None = None,
                     unchecked: str | None = None) -> list[Metrics]:
    """Pack and evaluate one instance (rows of x and y) at every grid point.

    ``x``, ``y``: validated float32 or float64 arrays of shape (n, R) (``y``
    may be None when no point uses ``data = "avg"``). ``memory``: the
    memory realizations (n, R), needed when a point packs memory too
    (docs/memory.md).

    ``unchecked``, when given, is x's name and says that its values are
    not yet checked (SPEC §10): the statistics over all of float32 x check
    them (where every point computes them first; else a pass of its own
    does), and a bad value raises :class:`InputError` as
    :func:`colosim.api.as_usage_matrix` would, before any packing.

    ``work``, when given, is a profile the call adds to (for benchmarks):
    seconds of ``"statistics"``, ``"packing"`` and ``"evaluation"``, the
    ``"additions"`` the evaluation performed and the ``"nominal_additions"``
    (n × evaluation columns, summed over the points) it stands for.
    """
    n, R = x.shape
    t0 = time.perf_counter()
    obs = Observations(x, y, points, unchecked)
    if unchecked is not None and not (x.dtype == np.float32 and all(checks_in_statistics(p) for p in points)):
        obs.check()
    mobs = memory_observations(memory, points)
    packings = pack_points(points, obs, mobs)
    obs.check()  # (done already by the statistics)
    t1 = time.perf_counter()
    firsts = [observation_split(p.clairvoyance, R)[1] for p in points]
    start = min(firsts)
    if len(packings) == 1:  # a lone call: its rows are read once, in place
        layout = as_rows(x, start, R, obs.maxima(start // TILE * TILE))
    else:
        layout = lay_out(x, start, R, _buffer(x, start, R))
    counts, severity, squares = evaluate(layout, [pk.assign for pk in packings],
                                         [bin_capacities(p, pk) for p, pk in zip(points, packings)], firsts,
                                         work)
    memory_counts = _memory_counts(memory, points, packings, firsts, work) if mobs is not None else {}
    if work is not None:
        for key, seconds in (("statistics", obs.statistics_seconds),
                             ("packing", t1 - t0 - obs.statistics_seconds),
                             ("evaluation", time.perf_counter() - t1)):
            work[key] = work.get(key, 0.0) + seconds
        work["nominal_additions"] = work.get("nominal_additions", 0) + sum(n * (R - f) for f in firsts)
    means_sum = math.fsum(obs.row_means().tolist())
    memory_sum = math.fsum(mobs.row_means().tolist()) if mobs is not None else None
    m_norms: dict[tuple, int] = {}
    out, tallies = [], []
    for s, (p, pk, first, c, sev, sq) in enumerate(zip(points, packings, firsts, counts, severity, squares)):
        n_eval = R - first
        n_viol = int(c.sum())
        cbar = (p.mean_capacity, p.mean_memory if p.memory else None)
        if cbar not in m_norms:  # by the binding resource when memory is packed
            m_norms[cbar] = normalization(means_sum, cbar[0])
            if p.memory:
                m_norms[cbar] = max(m_norms[cbar], normalization(memory_sum, cbar[1]))
        type_caps = p.headroom * np.array(p.machine_types()[0])
        m_by, q_by = (), ()
        if p.fleet:
            m_by = tuple(int(np.count_nonzero(pk.bin_type == t)) for t in range(type_caps.size))
            q_by = tuple((int(c[pk.bin_type == t].sum()) / (m_by[t] * n_eval)) if m_by[t] else 0.0
                         for t in range(type_caps.size))
        oversize = pk.standalone > type_caps[pk.bin_type[pk.assign]]
        two = {}
        if p.memory:
            cm = memory_counts[s]
            oversize |= pk.standalone_m > np.array(p.machine_memories())[pk.bin_type[pk.assign]]
            two = dict(q_memory=int(cm.sum()) / (pk.n_bins * n_eval), q_memory_max=int(cm.max()) / n_eval,
                       memory_bound=int(np.count_nonzero(pk.fills[:, 1] > pk.fills[:, 0])) / pk.n_bins,
                       counts_memory=cm)
        out.append(dict(
            m_abs=pk.n_bins, m_norm=m_norms[cbar], m=pk.n_bins / m_norms[cbar], q=n_viol / (pk.n_bins * n_eval),
            q_max=int(c.max()) / n_eval, severity=float(sev) / n_viol if n_viol else 0.0,
            oversize=int(np.count_nonzero(oversize)),
            assign=pk.assign, counts=c, moves=pk.moves, bin_type=pk.bin_type,
            calibrated_rho=pk.calibrated_rho, m_abs_by_type=m_by, q_by_type=q_by, **two,
        ))
        tallies.append((pk.n_bins, n_eval, n_viol, int(sq)))
    # the intervals of q, all rows at once
    intervals = row_q_intervals(*(np.array(column, dtype=np.int64) for column in zip(*tallies)))
    return [Metrics(q_ci=ci, **fields) for fields, ci in zip(out, intervals)]


def _memory_counts(memory, points, packings, firsts, work) -> dict[int, np.ndarray]:
    """Memory's q_j of every point that packs memory, by the same evaluator
    as CPU's (each bin against its type's memory capacity), read from the
    memory rows in place."""
    which = [s for s, p in enumerate(points) if p.memory]
    start = min(firsts[s] for s in which)
    layout = as_rows(memory, start, memory.shape[1])
    counts, _, _ = evaluate(layout, [packings[s].assign for s in which],
                            [np.array(points[s].machine_memories())[packings[s].bin_type] for s in which],
                            [firsts[s] for s in which], work)
    return dict(zip(which, counts))


def pack_observed(observed: np.ndarray, point: GridPoint, memory: np.ndarray | None = None) -> np.ndarray:
    """The assignment of one point packed from ``observed`` (all of its
    columns observed; ``memory`` likewise when the point packs memory):
    what :func:`colosim.pack` returns."""
    return pack_points([point], Observations(observed, None, [point]),
                       memory_observations(memory, [point]))[0].assign
