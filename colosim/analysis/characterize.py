"""Characterization of a trace (paper Section 3; SPEC §9).

Every analysis the paper uses to describe the Google 2011 long tasks, computed
for any series file (and, for the analyses that need realizations, a store):

- :func:`mean_convergence` — Fig. 1: relative error of the mean of k
  instantaneous records against the mean of all 5-minute averages;
- :func:`task_moments`, :func:`variability_lines` — Figs. 2–3: per-task
  standard deviations and the least-squares lines std ~ mean;
- :func:`time_invariance` — Section 3.3: two-sample Kolmogorov–Smirnov test
  between two random aligned windows of Delta records;
- :func:`usage_histograms`, :func:`cluster_histograms` — Fig. 4: 100-bin
  histograms of instantaneous usage clustered by k-means (k = 16);
- :func:`sums_normality` — Table 1, Fig. 5: Anderson–Darling normality of the
  sum of N tasks' realizations;
- :func:`percentile_prediction` — Fig. 6: relative error of the Gaussian
  prediction of the sum's high percentiles.

:func:`characterize` runs them all; :func:`write_outputs` writes the CSVs,
figures and ``report.md``. Randomness comes from
``numpy.random.default_rng([seed, 9, analysis, unit])`` streams (``unit`` a
fixed block or sample number), so every number is a pure function of the
inputs and the seed, whatever the number of threads.

Choices SPEC §9 leaves open (documented in ``docs/characterize.md``):

- Fig. 1 draws one random order of each task's records; the k-subset is its
  first k records (a uniformly random k-subset for each k, nested across k).
- The std ~ mean line of each kind of data uses that data's own means.
- Samples of tasks are nested: the sample of size N + 10 extends the one of
  size N (SPEC §9 allows it; it is what makes paper scale affordable).
- Without a store, the realization-based analyses use an in-memory store made
  by SPEC §8's recipe (the ``x`` matrix ``colosim.sources.realize.realize`` would
  write with the same seed), of ``min(tasks, store_tasks)`` tasks.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import scipy.stats
from scipy.special import ndtri

from .. import streams
from ..errors import InputError
from ..io.series import WINDOW_US, Series
from ..kernels.anderson import nested_sum_statistics
from ..progress import Progress, no_progress
from ..sources.realize import draw_indices, interpolate_quantiles, quantile_draws, select_rows, window_knots

MEAN_CONVERGENCE_K = (1, 2, 5, 10, 15, 20, 50, 100, 200, 500, 1000)
KS_DELTAS = (12, 24, 36)
KS_ALPHA = 0.05
HISTOGRAM_BINS = 100
N_CLUSTERS = 16
DEFAULT_SIZES = tuple(range(10, 501, 10))
PERCENTILE_SIZES = (10, 20, 30, 40, 50)
PERCENTILES = (90.0, 95.0, 99.0, 99.9)
DEFAULT_REPETITIONS = 1000
DEFAULT_STORE_TASKS = 5000
DEFAULT_REALIZATIONS = 10_000
DEFAULT_N_INIT = 10

# SPEC §9: rejected iff A^2 > 0.787 / (1 + 4/n - 25/n^2).
AD_CRITICAL_5PCT = 0.787
# SciPy >= 1.11's own 5% critical value for the normal case (Stephens):
# 0.752 / (1 + 0.75/n + 2.25/n^2), rounded to 3 decimals; reported beside.
AD_CRITICAL_5PCT_STEPHENS = 0.752

TASK_BLOCK = 1024  # tasks per block of the per-record analyses (fixes streams)
SAMPLE_CHUNK = 64  # samples per call of the Table 1 kernel (progress steps)

# Stream numbers of the analyses: default_rng([seed, 9, analysis, ...]).
_STREAM_MEANS, _STREAM_KS, _STREAM_KMEANS, _STREAM_SUMS, _STREAM_PERCENTILES = 1, 2, 3, 4, 5
_STREAM_WINDOW_DRAWS = 6

#: what a task's instantaneous values are: the trace's sampled second of each
#: window, or a second drawn from the window's per-second distribution
SAMPLINGS = ("sample", "window-quantiles")

def _rng(seed: int, analysis: int, *unit: int) -> np.random.Generator:
    return streams.analysis(seed, analysis, *unit)


# --------------------------------------------------------------------------
# helpers over a series


def _lengths(series) -> np.ndarray:
    return np.diff(np.asarray(series.offsets, dtype=np.int64))


def _blocks(n_tasks: int, block: int = TASK_BLOCK):
    for a in range(0, n_tasks, block):
        yield a // block, a, min(n_tasks, a + block)


def _segment_sums(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sums of consecutive segments of ``values`` (float64); 0 for empty ones."""
    out = np.zeros(lengths.size)
    nonempty = lengths > 0
    if nonempty.any():
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nonempty]
        out[nonempty] = np.add.reduceat(values, starts)
    return out


def _block_values(series, a: int, b: int, name: str) -> np.ndarray:
    off = series.offsets
    return np.asarray(getattr(series, name)[int(off[a]) : int(off[b])], dtype=np.float64)


def _check_series(series) -> np.ndarray:
    lengths = _lengths(series)
    if lengths.size == 0 or not (lengths > 0).any():
        raise InputError(f"{getattr(series, 'path', 'series')}: series holds no task with records")
    return lengths


# --------------------------------------------------------------------------
# Fig. 1: mean convergence


def box_stats(values: np.ndarray) -> dict:
    """Quartiles (NumPy linear percentiles) and Tukey whiskers (the most
    extreme values within 1.5 IQR of the quartiles), as drawn in Fig. 1."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        nan = float("nan")
        return dict(n=0, whislo=nan, q1=nan, median=nan, q3=nan, whishi=nan, mean=nan)
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    iqr = q3 - q1
    lo = v[v >= q1 - 1.5 * iqr].min()
    hi = v[v <= q3 + 1.5 * iqr].max()
    return dict(n=int(v.size), whislo=float(lo), q1=float(q1), median=float(med),
                q3=float(q3), whishi=float(hi), mean=float(v.mean()))


def mean_convergence(series, ks=MEAN_CONVERGENCE_K, *, seed: int = 0,
                     progress: Progress = no_progress) -> dict[int, np.ndarray]:
    """Relative difference of means for Fig. 1 (paper Section 3.2).

    For each k and each task with at least k records and a non-zero mean of
    averages: ``(mean of k instantaneous records chosen without replacement
    - mean of all averages) / mean of all averages``.

    Each task's records are put in one uniformly random order (the ranks of
    uniform keys from stream ``[seed, 9, 1, block]``, one key per record);
    the k-subset is the first k records of that order, hence uniformly random
    for each k (and nested across k). Only the first max(ks) positions of
    the order are needed, found by a partial sort.

    Returns
    -------
    dict k -> ndarray of relative differences (tasks in series order)
    """
    lengths = _check_series(series)
    advance = progress("Fig. 1 mean convergence", series.n_tasks)
    ks = np.array(sorted(set(int(k) for k in ks)), dtype=np.int64)
    if ks.size == 0 or ks[0] < 1:
        raise InputError("mean convergence: k must be positive")
    k_max = int(ks[-1])
    parts: dict[int, list] = {int(k): [] for k in ks}
    for bi, a, b in _blocks(series.n_tasks):
        L = lengths[a:b]
        inst = _block_values(series, a, b, "inst")
        with np.errstate(invalid="ignore", divide="ignore"):
            avg_mean = _segment_sums(_block_values(series, a, b, "avg"), L) / L
        keys = _rng(seed, _STREAM_MEANS, bi).random(inst.size)
        start = 0
        for i in range(b - a):
            n = int(L[i])
            if n > 0 and avg_mean[i] > 0:
                u = keys[start : start + n]
                m = min(n, k_max)
                first = np.argpartition(u, m - 1)[:m] if n > m else np.arange(n)
                first = first[np.argsort(u[first], kind="stable")]
                prefix = np.cumsum(inst[start + first])
                for k in ks[ks <= n]:
                    parts[int(k)].append((prefix[k - 1] / k - avg_mean[i]) / avg_mean[i])
            start += n
        advance(b - a)
    return {k: np.array(p, dtype=np.float64) for k, p in parts.items()}


# --------------------------------------------------------------------------
# Figs. 2-3: variability


@dataclass
class TaskMoments:
    """Per-task float64 mean and population std (ddof = 0) of the records;
    NaN for tasks without records."""

    lengths: np.ndarray
    mean_inst: np.ndarray
    std_inst: np.ndarray
    mean_avg: np.ndarray
    std_avg: np.ndarray


def task_moments(series, *, progress: Progress = no_progress) -> TaskMoments:
    """Per-task mean and std of instantaneous and of average usage (two-pass,
    float64)."""
    lengths = _check_series(series)
    n = series.n_tasks
    out = {name: np.full(n, np.nan) for name in ("mean_inst", "std_inst", "mean_avg", "std_avg")}
    advance = progress("Figs. 2-3 per-task moments", n)
    for _, a, b in _blocks(n):
        L = lengths[a:b]
        ok = L > 0
        for kind in ("inst", "avg"):
            v = _block_values(series, a, b, kind)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = _segment_sums(v, L) / L
                dev = v - np.repeat(np.where(ok, mean, 0.0), L)
                std = np.sqrt(_segment_sums(dev * dev, L) / L)
            out[f"mean_{kind}"][a:b][ok] = mean[ok]
            out[f"std_{kind}"][a:b][ok] = std[ok]
        advance(b - a)
    return TaskMoments(lengths=lengths, **out)


@dataclass
class Line:
    """Least-squares line ``std = slope * mean + intercept`` over ``n`` tasks."""

    slope: float
    intercept: float
    rvalue: float
    n: int


def variability_lines(moments: TaskMoments) -> dict[str, Line]:
    """Least-squares std ~ mean lines of Fig. 3 (``scipy.stats.linregress``),
    for instantaneous and for average usage, each against its own means."""
    lines = {}
    for kind in ("inst", "avg"):
        x = getattr(moments, f"mean_{kind}")
        y = getattr(moments, f"std_{kind}")
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.sum() < 2 or np.ptp(x[ok]) == 0:
            lines[kind] = Line(float("nan"), float("nan"), float("nan"), int(ok.sum()))
            continue
        fit = scipy.stats.linregress(x[ok], y[ok])
        lines[kind] = Line(float(fit.slope), float(fit.intercept), float(fit.rvalue), int(ok.sum()))
    return lines


# --------------------------------------------------------------------------
# Section 3.3: time invariance


@dataclass
class TimeInvariance:
    delta: int
    tested: int
    rejected: int
    statistic: np.ndarray = field(repr=False)
    pvalue: np.ndarray = field(repr=False)

    @property
    def share(self) -> float:
        return self.rejected / self.tested if self.tested else float("nan")


def time_invariance(series, deltas=KS_DELTAS, *, seed: int = 0, alpha: float = KS_ALPHA,
                    progress: Progress = no_progress) -> dict[int, TimeInvariance]:
    """Two-sample KS test between two distinct random windows per task.

    Windows are Delta consecutive instantaneous records starting at multiples
    of Delta (only whole windows count); tasks with fewer than 2·Delta records
    are not tested. The two window numbers are drawn uniformly among the
    distinct pairs (stream ``[seed, 9, 2, Delta, block]``). ``scipy.stats.ks_2samp``
    (two-sided, ``method="auto"``) gives the p-value; a task is rejected when
    it is below ``alpha``.
    """
    lengths = _check_series(series)
    off = np.asarray(series.offsets, dtype=np.int64)
    results = {}
    for delta in deltas:
        delta = int(delta)
        if delta < 1:
            raise InputError(f"Delta must be >= 1, not {delta}")
        eligible = np.flatnonzero(lengths >= 2 * delta)
        advance = progress(f"KS time invariance, Delta={delta}", eligible.size)
        stats, pvals = [], []
        for bi, a, b in _blocks(eligible.size, 4 * TASK_BLOCK):
            tasks = eligible[a:b]
            windows = lengths[tasks] // delta
            g = _rng(seed, _STREAM_KS, delta, bi)
            k1 = g.integers(0, windows)
            k2 = g.integers(0, windows - 1)
            k2 = k2 + (k2 >= k1)
            step = np.arange(delta)
            first = np.asarray(series.inst[(off[tasks] + k1 * delta)[:, None] + step], dtype=np.float64)
            second = np.asarray(series.inst[(off[tasks] + k2 * delta)[:, None] + step], dtype=np.float64)
            with warnings.catch_warnings():
                # For some D near 1 SciPy's exact method gives up and falls
                # back to the asymptotic p-value, saying so; that is its choice
                # (SPEC §9), not a problem of the input.
                warnings.filterwarnings("ignore", "ks_2samp: Exact calculation unsuccessful",
                                        RuntimeWarning)
                res = scipy.stats.ks_2samp(first, second, axis=1, method="auto")
            stats.append(np.atleast_1d(res.statistic))
            pvals.append(np.atleast_1d(res.pvalue))
            advance(b - a)
        statistic = np.concatenate(stats) if stats else np.empty(0)
        pvalue = np.concatenate(pvals) if pvals else np.empty(0)
        results[delta] = TimeInvariance(delta, int(eligible.size), int((pvalue < alpha).sum()),
                                        statistic, pvalue)
    return results


# --------------------------------------------------------------------------
# Fig. 4: clusters


def usage_histograms(series, *, progress: Progress = no_progress) -> np.ndarray:
    """Per-task histograms of instantaneous usage (SPEC §9): 100 bins of width
    0.01, bin ``min(99, floor(100 * v))`` in float64, normalized to sum 1.
    Tasks without records get an all-zero row."""
    lengths = _check_series(series)
    n = series.n_tasks
    hist = np.zeros((n, HISTOGRAM_BINS))
    advance = progress("Fig. 4 histograms", n)
    for _, a, b in _blocks(n):
        L = lengths[a:b]
        v = _block_values(series, a, b, "inst")
        bins = np.minimum(HISTOGRAM_BINS - 1, np.floor(100.0 * v)).astype(np.int64)
        local = np.repeat(np.arange(b - a), L)
        counts = np.bincount(local * HISTOGRAM_BINS + bins, minlength=(b - a) * HISTOGRAM_BINS)
        with np.errstate(invalid="ignore", divide="ignore"):
            block = counts.reshape(b - a, HISTOGRAM_BINS) / L[:, None]
        hist[a:b] = np.where(L[:, None] > 0, block, 0.0)
        advance(b - a)
    return hist


@dataclass
class Clusters:
    """k-means result, clusters ordered by decreasing share (ties: centroid
    order of the fit)."""

    centroids: np.ndarray  # (k, 100)
    counts: np.ndarray  # (k,)
    labels: np.ndarray  # (n,) cluster of each clustered task
    inertia: float
    notes: list = field(default_factory=list)

    @property
    def shares(self) -> np.ndarray:
        return self.counts / self.counts.sum()


def cluster_histograms(hist: np.ndarray, *, n_clusters: int = N_CLUSTERS, n_init: int = DEFAULT_N_INIT,
                       seed: int = 0) -> Clusters:
    """k-means (Euclidean, k-means++ initialization, ``n_init`` runs, the best
    kept) of the per-task histograms with scikit-learn's ``KMeans``.

    The fit runs on one OpenMP thread: scikit-learn merges per-thread partial
    sums in completion order, which would make the last bits (and rarely a
    label) depend on the thread count.
    """
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    hist = np.asarray(hist, dtype=np.float64)
    if hist.shape[0] < n_clusters:
        raise InputError(f"k-means needs at least {n_clusters} tasks, the series has {hist.shape[0]}")
    random_state = int(_rng(seed, _STREAM_KMEANS).integers(0, 2**31 - 1))
    notes = []
    with threadpool_limits(limits=1, user_api="openmp"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=random_state).fit(hist)
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            notes.append(f"k-means: {w.message}")
    counts = np.bincount(km.labels_, minlength=n_clusters)
    order = np.argsort(-counts, kind="stable")
    relabel = np.empty(n_clusters, dtype=np.int64)
    relabel[order] = np.arange(n_clusters)
    return Clusters(centroids=km.cluster_centers_[order], counts=counts[order],
                    labels=relabel[km.labels_], inertia=float(km.inertia_), notes=notes)


# --------------------------------------------------------------------------
# Table 1, Fig. 5: sums of tasks


def ad_critical_value(n: int) -> float:
    """SPEC §9's 5% critical value of A^2 for n realizations."""
    return AD_CRITICAL_5PCT / (1.0 + 4.0 / n - 25.0 / n**2)


def ad_critical_value_stephens(n: int) -> float:
    """SciPy >= 1.11's 5% critical value (``scipy.stats.anderson``)."""
    return float(np.around(AD_CRITICAL_5PCT_STEPHENS / (1.0 + 0.75 / n + 2.25 / n**2), 3))


def nested_samples(n_store: int, size: int, first: int, count: int, seed: int, stream: int) -> np.ndarray:
    """Rows of samples ``first .. first + count - 1``: sample r is
    ``default_rng([seed, 9, stream, r]).choice(n_store, size, replace=False)``;
    its first N rows are the sample of size N."""
    return np.stack([_rng(seed, stream, r).choice(n_store, size, replace=False)
                     for r in range(first, first + count)]).astype(np.int64)


@dataclass
class SumsNormality:
    sizes: np.ndarray
    a2: np.ndarray  # (repetitions, len(sizes))
    total_mean: np.ndarray  # (repetitions, len(sizes))
    n_realizations: int

    @property
    def rejected(self) -> np.ndarray:
        return (self.a2 > ad_critical_value(self.n_realizations)).sum(axis=0)

    @property
    def rejected_stephens(self) -> np.ndarray:
        return (self.a2 > ad_critical_value_stephens(self.n_realizations)).sum(axis=0)

    @property
    def undefined(self) -> np.ndarray:
        return np.isnan(self.a2).sum(axis=0)

    @property
    def share(self) -> np.ndarray:
        return self.rejected / self.a2.shape[0]

    def at(self, n: int):
        """(share rejected, mean total usage) at size n, or None."""
        hit = np.flatnonzero(self.sizes == n)
        if hit.size == 0:
            return None
        j = int(hit[0])
        return float(self.share[j]), float(self.total_mean[:, j].mean())


def _check_x(x, where) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise InputError(f"{where}: realizations must form a (tasks, R >= 2) matrix, not {x.shape}")
    return x


def sums_normality(x, sizes=DEFAULT_SIZES, *, repetitions: int = DEFAULT_REPETITIONS, seed: int = 0,
                   where: str = "store", progress: Progress = no_progress) -> SumsNormality:
    """Anderson–Darling normality of sums of N random tasks (Table 1).

    Sample r (stream ``[seed, 9, 4, r]``) is a random ordering of max(sizes)
    distinct store rows; its first N rows are the sample of size N (nested
    samples, SPEC §9). For each, the float64 sum of the rows' realizations is
    tested with the Numba A^2 (:mod:`colosim.kernels.anderson`), which
    equals ``scipy.stats.anderson``'s statistic.
    """
    x = _check_x(x, where)
    sizes = np.asarray(sorted(set(int(s) for s in sizes)), dtype=np.int64)
    if sizes.size == 0 or sizes[0] < 1 or sizes[-1] > x.shape[0]:
        raise InputError(f"{where}: sizes must lie in 1..{x.shape[0]} (the store's tasks)")
    if repetitions < 1:
        raise InputError(f"repetitions must be >= 1, not {repetitions}", param="repetitions")
    a2 = np.empty((repetitions, sizes.size))
    total = np.empty_like(a2)
    advance = progress("Table 1 A-D on sums of N tasks", repetitions)
    for first in range(0, repetitions, SAMPLE_CHUNK):
        count = min(SAMPLE_CHUNK, repetitions - first)
        samples = nested_samples(x.shape[0], int(sizes[-1]), first, count, seed, _STREAM_SUMS)
        a, t, bad = nested_sum_statistics(x, samples, sizes)
        if (bad >= 0).any():
            row = int(bad[bad >= 0][0])
            raise InputError(f"{where}: dataset 'x' row {row} holds a NaN, infinite or negative value")
        a2[first : first + count] = a
        total[first : first + count] = t
        advance(count)
    return SumsNormality(sizes=sizes, a2=a2, total_mean=total, n_realizations=int(x.shape[1]))


def _rows(x, rows, where) -> np.ndarray:
    block = np.asarray(x[np.asarray(rows)], dtype=np.float64)
    bad = ~np.isfinite(block) | (block < 0)
    if bad.any():
        r = int(np.argwhere(bad)[0][0])
        raise InputError(f"{where}: dataset 'x' row {int(rows[r])} holds a NaN, infinite or negative value")
    return block


@dataclass
class SumExamples:
    """Fig. 5: the realized sums of a few samples and their fitted Gaussians."""

    size: int
    sums: np.ndarray  # (count, R)
    mu: np.ndarray  # sum of the tasks' means
    sigma: np.ndarray  # sqrt of the sum of the tasks' variances (ddof = 0)


def sum_examples(x, size: int, *, count: int = 3, seed: int = 0, where: str = "store") -> SumExamples:
    """The first ``count`` Table 1 samples at ``size`` tasks (the same rows as
    :func:`sums_normality` uses), summed, with mu_j = sum mu_i and
    sigma_j = sqrt(sum sigma_i^2) from each task's realizations (paper
    Section 3.4)."""
    x = _check_x(x, where)
    samples = nested_samples(x.shape[0], size, 0, count, seed, _STREAM_SUMS)
    sums, mu, sigma = [], [], []
    for rows in samples:
        block = _rows(x, rows, where)
        sums.append(np.cumsum(block, axis=0)[-1])
        mu.append(block.mean(axis=1).sum())
        sigma.append(math.sqrt(block.var(axis=1).sum()))
    return SumExamples(size, np.array(sums), np.array(mu), np.array(sigma))


# --------------------------------------------------------------------------
# Fig. 6: percentile prediction


@dataclass
class PercentilePrediction:
    sizes: np.ndarray
    percentiles: np.ndarray
    gaussian: np.ndarray  # (repetitions, sizes, percentiles) F^-1_{mu_j, sigma_j}(k)
    empirical: np.ndarray  # (repetitions, sizes, percentiles) P_k

    @property
    def error(self) -> np.ndarray:
        """(F^-1(k) - P_k) / P_k; NaN where P_k is 0."""
        with np.errstate(invalid="ignore", divide="ignore"):
            err = (self.gaussian - self.empirical) / self.empirical
        return np.where(self.empirical > 0, err, np.nan)


def percentile_prediction(x, sizes=PERCENTILE_SIZES, percentiles=PERCENTILES, *,
                          repetitions: int = DEFAULT_REPETITIONS, seed: int = 0, where: str = "store",
                          progress: Progress = no_progress) -> PercentilePrediction:
    """Gaussian prediction of the sum's percentiles (Fig. 6, Section 3.4).

    Sample r (stream ``[seed, 9, 5, r]``, nested over sizes): the sum of its
    tasks' realizations (float64, row order); ``P_k`` its percentile by
    NumPy's linear method; the prediction ``mu_j + sigma_j * ndtri(k/100)``
    with ``mu_j = sum mu_i``, ``sigma_j = sqrt(sum sigma_i^2)``, mu_i and
    sigma_i (ddof = 0) taken over the task's realizations.
    """
    x = _check_x(x, where)
    sizes = np.asarray(sorted(set(int(s) for s in sizes)), dtype=np.int64)
    percentiles = np.asarray(percentiles, dtype=np.float64)
    if sizes.size == 0 or sizes[0] < 1 or sizes[-1] > x.shape[0]:
        raise InputError(f"{where}: percentile sample sizes must lie in 1..{x.shape[0]}")
    if repetitions < 1:
        raise InputError(f"repetitions must be >= 1, not {repetitions}", param="repetitions")
    z = ndtri(percentiles / 100.0)
    gauss = np.empty((repetitions, sizes.size, percentiles.size))
    emp = np.empty_like(gauss)
    advance = progress("Fig. 6 percentile prediction", repetitions)
    for r in range(repetitions):
        rows = _rng(seed, _STREAM_PERCENTILES, r).choice(x.shape[0], int(sizes[-1]), replace=False)
        block = _rows(x, rows, where)
        sums = np.cumsum(block, axis=0)[sizes - 1]
        mu = np.cumsum(block.mean(axis=1))[sizes - 1]
        sigma = np.sqrt(np.cumsum(block.var(axis=1))[sizes - 1])
        emp[r] = np.percentile(sums, percentiles, axis=1).T
        gauss[r] = mu[:, None] + sigma[:, None] * z[None, :]
        if r % 16 == 15 or r == repetitions - 1:
            advance(r % 16 + 1)
    return PercentilePrediction(sizes, percentiles, gauss, emp)


# --------------------------------------------------------------------------
# in-memory store


def _check_sampling(series, sampling: str) -> None:
    if sampling not in SAMPLINGS:
        raise InputError(f"sampling must be one of {', '.join(SAMPLINGS)}, not {sampling!r}", param="sampling")
    if sampling == "window-quantiles" and not getattr(series, "has_quantiles", False):
        raise InputError("sampling 'window-quantiles' needs per-window CPU distributions (a series ingested "
                         f"from Google 2019 data with percentiles); {getattr(series, 'path', None) or 'the series'} "
                         "has none", param="sampling")


def realize_in_memory(series, n_tasks: int, n_realizations: int, *, seed: int = 0, sampling: str = "sample",
                      progress: Progress = no_progress) -> tuple[np.ndarray, np.ndarray]:
    """The instantaneous matrix ``x`` of the store SPEC §8 makes from
    ``series`` with this seed (row selection and x draws as in
    :func:`colosim.sources.realize.realize`, whose ``paired`` and
    ``window-quantiles`` samplings give this x; y is not needed here).

    Returns (x float32 (n_tasks, n_realizations), series rows).
    """
    if n_realizations < 2:
        raise InputError(f"n_realizations must be >= 2, not {n_realizations}", param="n_realizations")
    _check_sampling(series, sampling)
    rows = select_rows(series.n_tasks, n_tasks, seed)
    x = np.empty((n_tasks, n_realizations), dtype=np.float32)
    advance = progress("Realizing an in-memory store", n_tasks)
    for j, row in enumerate(rows):
        inst, _ = series.task(int(row))
        if len(inst) == 0:
            raise InputError(f"series task {int(row)} has no records")
        if sampling == "window-quantiles":
            ix, _, u = quantile_draws(seed, j, len(inst), n_realizations)
            x[j] = interpolate_quantiles(window_knots(series, int(row), len(inst))[ix], u)
        else:
            # The x indices are drawn first in every mode; "paired" skips the
            # y draw, which is not needed here.
            ix, _ = draw_indices(seed, j, len(inst), n_realizations, "paired")
            x[j] = inst[ix]
        if j % 256 == 255 or j == n_tasks - 1:
            advance(j % 256 + 1)
    return x, rows


def window_draw_series(series, *, seed: int = 0, progress: Progress = no_progress) -> Series:
    """``series`` with each record's instantaneous value replaced by one
    second drawn from that window's per-second CPU distribution: the
    interpolated quantile function of the record's ``cpu_quantiles``
    (:func:`colosim.sources.realize.interpolate_quantiles`) at a level ``u``
    uniform on [0, 1), one per record, from ``default_rng([seed, 9, 6,
    block])`` for each block of :data:`TASK_BLOCK` tasks. What the per-record
    analyses see under the ``window-quantiles`` sampling."""
    _check_sampling(series, "window-quantiles")
    off = np.asarray(series.offsets, dtype=np.int64)
    inst = np.empty(int(off[-1]), dtype=np.float32)
    advance = progress("Drawing a second of every window", series.n_tasks)
    for bi, a, b in _blocks(series.n_tasks):
        lo, hi = int(off[a]), int(off[b])
        u = _rng(seed, _STREAM_WINDOW_DRAWS, bi).random(hi - lo)
        knots = np.concatenate([window_knots(series, k, int(off[k + 1] - off[k])) for k in range(a, b)])
        inst[lo:hi] = interpolate_quantiles(knots, u)
        advance(b - a)
    return Series(path=series.path, task_id=np.asarray(series.task_id), offsets=off, inst=inst,
                  avg=np.asarray(series.avg), start_time=np.asarray(series.start_time), attrs=dict(series.attrs),
                  cpu_quantiles=series.cpu_quantiles)


def as_series(source, *, progress: Progress = no_progress):
    """``source`` itself when it is a :class:`~colosim.io.Series`; otherwise
    (any SPEC §8 ``SeriesSource``, e.g. a synthetic population generated on
    demand) an in-memory :class:`~colosim.io.Series` of all its tasks, in
    order. Record start times are the record numbers × 300 s."""
    if hasattr(source, "offsets") and hasattr(source, "inst"):
        return source
    n = int(source.n_tasks)
    inst, avg = [], []
    advance = progress("Reading the population's tasks", n)
    for k in range(n):
        i, a = source.task(k)
        inst.append(np.asarray(i, dtype=np.float32))
        avg.append(np.asarray(a, dtype=np.float32))
        if k % 256 == 255 or k == n - 1:
            advance(k % 256 + 1)
    lengths = np.array([len(v) for v in inst], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    start = np.concatenate([np.arange(t, dtype=np.int64) * WINDOW_US for t in lengths]) if n else np.empty(0, np.int64)

    def cat(parts):
        return np.concatenate(parts) if parts else np.empty(0, np.float32)

    return Series(path=None, task_id=np.asarray(source.task_id, dtype=np.int64).reshape(n, 2),
                  offsets=offsets, inst=cat(inst), avg=cat(avg), start_time=start,
                  attrs={"source": getattr(source, "source", None)})


# --------------------------------------------------------------------------
# everything


def _list_sizes(sizes) -> str:
    sizes = list(sizes)
    if len(sizes) <= 4:
        return ", ".join(str(s) for s in sizes)
    return f"{sizes[0]}, {sizes[1]}, ..., {sizes[-1]}; {len(sizes)} sizes"


@dataclass
class Characterization:
    """All of Section 3 for one trace (what :func:`write_outputs` writes)."""

    settings: dict
    n_tasks: int
    n_records: int
    convergence: dict
    moments: TaskMoments
    lines: dict
    invariance: dict
    histograms: np.ndarray
    clusters: Optional[Clusters]
    sums: Optional[SumsNormality]
    examples: Optional[SumExamples]
    percentiles: Optional[PercentilePrediction]
    notes: list = field(default_factory=list)
    task_id: Optional[np.ndarray] = None


def characterize(series, store=None, *, seed: int = 0, repetitions: int = DEFAULT_REPETITIONS,
                 sizes=DEFAULT_SIZES, percentile_sizes=PERCENTILE_SIZES, n_init: int = DEFAULT_N_INIT,
                 store_tasks: int = DEFAULT_STORE_TASKS, realizations: int = DEFAULT_REALIZATIONS,
                 sampling: str = "sample", progress: Progress = no_progress,
                 name: Optional[str] = None) -> Characterization:
    """Run every analysis of SPEC §9 on ``series`` (and ``store`` if given).

    ``sampling`` says what a task's instantaneous values are: ``sample``, the
    trace's one sampled second per window (the paper's); ``window-quantiles``,
    one second drawn from each window's per-second distribution
    (:func:`window_draw_series` for the per-record analyses, the store's
    ``window-quantiles`` realization for the in-memory store; a series with
    per-window distributions only, and no ``store``).

    Without a store, Table 1 and Figs. 5–6 use :func:`realize_in_memory` with
    ``min(series tasks, store_tasks)`` tasks and ``realizations`` columns.
    Sample sizes larger than the store's task count are dropped with a note.
    ``series`` may be any SPEC §8 ``SeriesSource`` (see :func:`as_series`);
    ``name`` says what it is in the report (default: the file's path).
    """
    if seed < 0:
        raise InputError(f"seed must be >= 0, not {seed}", param="seed")
    if repetitions < 1:
        raise InputError(f"repetitions must be >= 1, not {repetitions}", param="repetitions")
    if n_init < 1:
        raise InputError(f"n_init must be >= 1, not {n_init}", param="n_init")
    notes: list[str] = []
    series = as_series(series, progress=progress)
    _check_sampling(series, sampling)
    if sampling != "sample" and store is not None:
        raise InputError(f"sampling {sampling!r} realizes its own in-memory store; give no store",
                         param="sampling")
    lengths = _check_series(series)
    if sampling == "window-quantiles":
        series = window_draw_series(series, seed=seed, progress=progress)
    convergence = mean_convergence(series, seed=seed, progress=progress)
    moments = task_moments(series, progress=progress)
    lines = variability_lines(moments)
    invariance = time_invariance(series, seed=seed, progress=progress)
    hist = usage_histograms(series, progress=progress)
    nonempty = lengths > 0
    clusters = None
    if nonempty.sum() >= N_CLUSTERS:
        tick = progress("Fig. 4 k-means (k=16)", 1)
        clusters = cluster_histograms(hist[nonempty], n_init=n_init, seed=seed)
        notes.extend(clusters.notes)
        tick(1)
    else:
        notes.append(f"Fig. 4 skipped: k-means needs {N_CLUSTERS} tasks, the series has {int(nonempty.sum())}.")

    if store is not None:
        x = store.x
        where = str(store.path)
        realized = store.attrs.get("sampling") or "unknown"
        store_desc = (f"store `{store.path.name}` ({store.n_tasks} tasks × {store.n_realizations} realizations, "
                      f"realized with sampling `{realized}`)")
        if realized == "window-quantiles" and sampling == "sample":
            notes.append("Table 1 and Figs. 5-6 come from the store, whose instantaneous values were drawn from the "
                         "windows' distributions (sampling window-quantiles); Figs. 1-4 from the series' sampled "
                         "seconds.")
    else:
        if store_tasks < 1:
            raise InputError(f"store_tasks must be >= 1, not {store_tasks}", param="store_tasks")
        n_store = min(int(nonempty.sum()), store_tasks, series.n_tasks)
        x, _ = realize_in_memory(series, n_store, realizations, seed=seed, sampling=sampling, progress=progress)
        where = "in-memory store"
        recipe = ("SPEC §8's recipe" if sampling == "sample" else
                  "the window-quantiles recipe (docs/spec.md)")
        store_desc = (f"in-memory store realized from the series by {recipe} "
                      f"(seed {seed}, {n_store} tasks × {realizations} realizations)")
    n_store = int(np.shape(x)[0])

    kept = tuple(s for s in sizes if s <= n_store)
    if len(kept) < len(tuple(sizes)):
        notes.append(f"Table 1: sizes above the store's {n_store} tasks dropped "
                     f"({_list_sizes([s for s in sizes if s > n_store])}).")
    sums = examples = None
    if kept:
        sums = sums_normality(x, kept, repetitions=repetitions, seed=seed, where=where, progress=progress)
        examples = sum_examples(x, max(kept), seed=seed, where=where)
    else:
        notes.append("Table 1 and Fig. 5 skipped: no sample size fits the store.")
    pkept = tuple(s for s in percentile_sizes if s <= n_store)
    if len(pkept) < len(tuple(percentile_sizes)):
        notes.append(f"Fig. 6: sample sizes above the store's {n_store} tasks dropped "
                     f"({_list_sizes([s for s in percentile_sizes if s > n_store])}).")
    pred = None
    if pkept:
        pred = percentile_prediction(x, pkept, repetitions=repetitions, seed=seed, where=where,
                                     progress=progress)
    else:
        notes.append("Fig. 6 skipped: no sample size fits the store.")

    settings = dict(sampling=sampling, seed=seed, repetitions=repetitions, sizes=list(kept),
                    percentile_sizes=list(pkept), n_init=n_init, store=store_desc, n_store=n_store,
                    n_realizations=int(np.shape(x)[1]),
                    source=name or (str(series.path) if getattr(series, "path", None) else "in-memory series"))
    return Characterization(settings=settings, n_tasks=int(series.n_tasks), n_records=int(lengths.sum()),
                            convergence=convergence, moments=moments, lines=lines, invariance=invariance,
                            histograms=hist, clusters=clusters, sums=sums, examples=examples,
                            percentiles=pred, notes=notes, task_id=np.asarray(series.task_id))
