"""Grid points beyond the paper (``docs/beyond.md``): the estimators
``emp``, ``gpa-cal``, ``hoeffding``, ``effsize``, ``nsigma``; the sorted
orders ``first-fit-decreasing`` and ``best-fit-decreasing``; mixed fleets.

:func:`colosim.experiment.instance_metrics` hands such points here; the
others keep the paper's path (and its exact results). Every packing here is
done by :func:`colosim.kernels.vector_packing.pack_vector`, every
evaluation by :func:`~colosim.kernels.vector_packing.violations_per_bin_capacity`
(per-bin capacities; the same counts as SPEC §5 for a single capacity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.special import ndtri

from .errors import InputError
from .estimators import Estimator, compute_statistics, parse_estimator
from .experiment import SORTED_ALGORITHMS, GridPoint, Metrics, normalization, observation_split
from .fleet import Fleet
from .kernels.stats import row_means
from .kernels.vector_packing import (
    BEST_FIT, EFFSIZE, EMP, FIRST_FIT, GAUSS, NSIGMA, log_mgf, pack_vector, standalone_loads,
    violations_per_bin_capacity,
)

BEYOND_ESTIMATORS = ("emp", "gpa-cal", "hoeffding", "effsize", "nsigma")
ONLINE = {"first-fit": FIRST_FIT, "best-fit": BEST_FIT}

#: effsize: s_g = (ln(1/RHO) / (h c)) * 2**(g/2), g = -8..12 (1/16 to 64 times
#: the scale ln(1/RHO) / (h c); see docs/beyond.md)
EFFSIZE_EXPONENTS = np.arange(-8, 13) / 2.0

#: gpa-cal: rho is searched in [CAL_RHO_MIN, 0.5] by bisection on log(rho)
CAL_RHO_MIN = 1e-9
CAL_RHO_MAX = 0.5
CAL_STEPS = 24


def is_beyond(p: GridPoint) -> bool:
    """Whether grid point p needs this module (else the paper's path)."""
    return (p.estimator.name in BEYOND_ESTIMATORS or p.algorithm in SORTED_ALGORITHMS
            or isinstance(p.capacity, Fleet))


@dataclass
class BeyondMetrics(Metrics):
    """SPEC §5 metrics plus what the new points report.

    ``calibrated_rho``: the rho chosen by ``gpa-cal`` (None otherwise);
    ``bin_type``: each bin's machine type; ``m_abs_by_type`` and
    ``q_by_type``: bins and violation frequency per machine type (fleets).
    """

    calibrated_rho: float | None = None
    bin_type: np.ndarray | None = None
    m_abs_by_type: tuple = ()
    q_by_type: tuple = ()


# ------------------------------------------------------------------ capacity

def fleet_of(p: GridPoint) -> tuple[np.ndarray, np.ndarray]:
    """Machine capacities (not yet times the headroom) and shares of p."""
    if isinstance(p.capacity, Fleet):
        return np.array(p.capacity.capacities), np.array(p.capacity.shares)
    return np.array([p.capacity]), np.array([1.0])


def fleet_normalization(means: np.ndarray, p: GridPoint) -> int:
    """``m_norm = max(1, ceil(S / c_bar))``, c_bar the share-weighted mean
    capacity (the plain SPEC §5 rule for a single capacity)."""
    if isinstance(p.capacity, Fleet):
        return max(1, math.ceil(math.fsum(means.tolist()) / p.capacity.mean_capacity))
    return max(1, math.ceil(math.fsum(means.tolist()) / p.capacity))


# --------------------------------------------------------------- estimators

def emp_allowance(rho: float, k: int) -> int:
    """``r = floor(RHO k)``, RHO taken as the decimal number written (so that
    0.29 × 100 is 29, not 28)."""
    return math.floor(Fraction(repr(float(rho))) * k)


def effsize_grid(rho: float, cap: float) -> np.ndarray:
    return (math.log(1.0 / rho) / cap) * np.exp2(EFFSIZE_EXPONENTS)


def task_vectors(est: Estimator, observed: np.ndarray, cap_ref: float, z: float | None = None):
    """``(V, kind, params)`` of every task for estimator ``est`` on the
    observation columns ``observed`` (n, k).

    ``cap_ref`` (the smallest packing capacity h c) scales effsize's s grid;
    ``z`` overrides the GPA quantile (gpa-cal).
    """
    name = est.name
    if name == "emp":
        return observed, EMP, np.array([float(emp_allowance(est.param, observed.shape[1]))])
    if name == "nsigma":
        return observed, NSIGMA, np.array([est.param])
    if name == "effsize":
        s = effsize_grid(est.param, cap_ref)
        return log_mgf(observed, s), EFFSIZE, np.concatenate([[math.log(1.0 / est.param)], s])
    levels = [est.param] if est.needs_percentile else []
    stats = compute_statistics(observed, levels)
    if name == "hoeffding":
        stats.minimum = observed.min(axis=1).astype(np.float64)
    if name == "gpa-cal":
        a, b = stats.mean, stats.var
    else:
        a, b = est.items(stats)
    V = np.ascontiguousarray(np.stack([a, b], axis=1))
    return V, GAUSS, np.array([est.z if z is None else z])


# ------------------------------------------------------------------ packing

def pack_point(V, kind, params, p: GridPoint):
    """Pack by p's algorithm (online, or sorted by decreasing standalone
    load), capacities and rebalancing. Returns ``(assign, n_bins, moves,
    bin_type, standalone)`` in instance order."""
    caps, shares = fleet_of(p)
    type_caps = p.headroom * caps
    standalone = standalone_loads(V, kind, params)
    if p.algorithm in SORTED_ALGORITHMS:
        # decreasing L({i}), ties by position; the online rule on that order
        order = np.argsort(-standalone, kind="stable")
        Vs = np.ascontiguousarray(V[order])
        a_s, m, moves, types = pack_vector(Vs, kind, params, type_caps, shares,
                                           SORTED_ALGORITHMS[p.algorithm], p.rebalance)
        assign = np.empty_like(a_s)
        assign[order] = a_s
    else:
        assign, m, moves, types = pack_vector(V, kind, params, type_caps, shares,
                                              ONLINE[p.algorithm], p.rebalance)
    return assign, int(m), int(moves), types, standalone


def calibrate_gpa(observed: np.ndarray, p: GridPoint) -> tuple[float, tuple]:
    """The largest rho found by bisection whose GPA packing (p's algorithm,
    capacities, rebalancing) has a violation frequency on the observation
    columns of at most p's TARGET.

    The frequency on O is ``sum_j #{t in O: S_j(t) > c_j} / (m k)`` with
    ``c_j`` the bin's capacity (without headroom, as q in SPEC §5). It is not
    monotone in rho in general; bisection on ``log rho`` over
    ``[CAL_RHO_MIN, 0.5]`` keeps a bracket ``lo`` (meets) / ``hi`` (misses)
    for ``CAL_STEPS`` halvings and returns ``lo``. If even ``CAL_RHO_MIN``
    misses, it is returned (the most conservative GPA tried).

    Returns ``(rho, packing)`` with packing as from :func:`pack_point`.
    """
    target = p.estimator.param
    caps, _ = fleet_of(p)
    stats = compute_statistics(observed, [])
    V = np.ascontiguousarray(np.stack([stats.mean, stats.var], axis=1))
    k = observed.shape[1]

    def attempt(rho):
        packing = pack_point(V, GAUSS, np.array([float(ndtri(1.0 - rho))]), p)
        assign, m, _, types, _ = packing
        counts, _ = violations_per_bin_capacity(observed, 0, k, assign, m, caps[types])
        return int(counts.sum()) / (m * k) <= target, packing

    ok, packing = attempt(CAL_RHO_MAX)
    if ok:
        return CAL_RHO_MAX, packing
    ok, low_packing = attempt(CAL_RHO_MIN)
    if not ok:
        return CAL_RHO_MIN, low_packing
    lo, hi = math.log(CAL_RHO_MIN), math.log(CAL_RHO_MAX)
    best = (CAL_RHO_MIN, low_packing)
    for _ in range(CAL_STEPS):
        mid = 0.5 * (lo + hi)
        rho = math.exp(mid)
        ok, packing = attempt(rho)
        if ok:
            lo, best = mid, (rho, packing)
        else:
            hi = mid
    return best


# ------------------------------------------------------------------ metrics

def beyond_metrics(x: np.ndarray, y: np.ndarray | None, points: list[GridPoint], classic) -> list[Metrics]:
    """Metrics of every point; points this module does not own are passed
    (together) to ``classic``, the paper's path."""
    owned = [k for k, p in enumerate(points) if is_beyond(p)]
    others = [k for k, p in enumerate(points) if not is_beyond(p)]
    out: list = [None] * len(points)
    if others:
        for k, met in zip(others, classic(x, y, [points[k] for k in others])):
            out[k] = met
    if not owned:
        return out
    n, R = x.shape
    means = row_means(x)
    vectors = {}
    for k in owned:
        p = points[k]
        kk, first = observation_split(p.clairvoyance, R)
        source = x if p.data == "inst" else y
        if source is None:
            raise InputError("data = 'avg' needs the average matrix y")
        observed = np.ascontiguousarray(source[:, :kk])
        caps, shares = fleet_of(p)
        rho = None
        if p.estimator.name == "gpa-cal":
            rho, packing = calibrate_gpa(observed, p)
        else:
            cap_ref = p.headroom * float(caps.min())
            key = (p.data, p.clairvoyance, p.estimator,
                   cap_ref if p.estimator.name == "effsize" else None)
            if key not in vectors:
                vectors[key] = task_vectors(p.estimator, observed, cap_ref)
            packing = pack_point(*vectors[key], p)
        assign, m_abs, moves, types, standalone = packing
        bin_caps = caps[types]
        counts, severity = violations_per_bin_capacity(x, first, R, assign, m_abs, bin_caps)
        n_eval = R - first
        n_viol = int(counts.sum())
        sev = 0.0
        for j in range(m_abs):  # bin order: the same bits every time
            sev += float(severity[j])
        m_norm = fleet_normalization(means, p) if isinstance(p.capacity, Fleet) else normalization(x, p.capacity, means)
        m_by, q_by = (), ()
        if isinstance(p.capacity, Fleet):
            m_by = tuple(int(np.count_nonzero(types == t)) for t in range(len(caps)))
            q_by = tuple(
                (int(counts[types == t].sum()) / (m_by[t] * n_eval)) if m_by[t] else 0.0
                for t in range(len(caps))
            )
        out[k] = BeyondMetrics(
            m_abs=m_abs, m_norm=m_norm, m=m_abs / m_norm, q=n_viol / (m_abs * n_eval),
            q_max=int(counts.max()) / n_eval, severity=sev / n_viol if n_viol else 0.0,
            oversize=int(np.count_nonzero(standalone > p.headroom * bin_caps[assign])),
            assign=assign, counts=counts, moves=moves, calibrated_rho=rho, bin_type=types,
            m_abs_by_type=m_by, q_by_type=q_by,
        )
    return out


def pack_observed(observed: np.ndarray, p: GridPoint) -> np.ndarray:
    """Assignment of one point from its observed usage (``colosim.pack``)."""
    if p.estimator.name == "gpa-cal":
        return calibrate_gpa(observed, p)[1][0]
    caps, _ = fleet_of(p)
    return pack_point(*task_vectors(p.estimator, observed, p.headroom * float(caps.min())), p)[0]


# ------------------------------------------------------------ results table

def extra_columns(points: list[GridPoint]) -> tuple[str, ...]:
    """Columns appended after the SPEC §5 metrics: ``calibrated_rho`` when a
    point is gpa-cal, ``m_abs_by_type`` and ``q_by_type`` when a point has a
    fleet."""
    cols = ()
    if any(p.estimator.name == "gpa-cal" for p in points):
        cols += ("calibrated_rho",)
    if any(isinstance(p.capacity, Fleet) for p in points):
        cols += ("m_abs_by_type", "q_by_type")
    return cols


def extra_values(met: Metrics, columns: tuple[str, ...]) -> tuple:
    """Values of the extra columns for one row (empty strings where they do
    not apply)."""
    out = []
    for c in columns:
        v = getattr(met, c, None)
        if c == "calibrated_rho":
            out.append("" if v is None else float(v))
        else:
            out.append(";".join(repr(x) if isinstance(x, float) else str(x) for x in v) if v else "")
    return tuple(out)
