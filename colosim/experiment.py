"""One instance × a list of grid points → metrics (SPEC §2–5).

Work that grid points share is done once: task statistics once per
(data, clairvoyance) for all estimators, items once per estimator, and the
violation count once per distinct (packing, clairvoyance, capacity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .errors import InputError
from .estimators import Estimator, compute_statistics, parse_estimator
from .fleet import Fleet, parse_fleet
from .kernels.evaluate import evaluate_packings
from .kernels.packing import BEST_FIT, FIRST_FIT, pack_many, shared_online
from .kernels.stats import row_means

ALGORITHMS = {"first-fit": FIRST_FIT, "best-fit": BEST_FIT}
# beyond the paper (docs/beyond.md): sorted orders, packed by colosim.beyond
SORTED_ALGORITHMS = {"first-fit-decreasing": FIRST_FIT, "best-fit-decreasing": BEST_FIT}
DATA = ("inst", "avg")
METRICS = ("m_abs", "m_norm", "m", "q", "q_max", "severity", "oversize")


@dataclass(frozen=True)
class GridPoint:
    """One combination of the sweep's grid keys (SPEC §5 column order)."""

    estimator: Estimator
    algorithm: str = "best-fit"
    capacity: float | Fleet = 1.0
    clairvoyance: float = 1.0
    data: str = "inst"
    rebalance: bool = True
    headroom: float = 1.0

    @classmethod
    def make(cls, estimator, algorithm="best-fit", capacity=1.0, clairvoyance=1.0,
             data="inst", rebalance=True, headroom=1.0) -> "GridPoint":
        """Validate and normalize user values; :class:`InputError` names the
        offending argument."""
        est = parse_estimator(estimator)
        if algorithm not in ALGORITHMS and algorithm not in SORTED_ALGORITHMS:
            raise InputError(f"algorithm must be one of {', '.join([*ALGORITHMS, *SORTED_ALGORITHMS])}, "
                             f"not {algorithm!r}")
        if isinstance(capacity, (str, Fleet)):  # a mixed fleet (docs/beyond.md)
            capacity = parse_fleet(capacity)
        else:
            capacity = _real("capacity", capacity)
            if not capacity > 0:
                raise InputError(f"capacity must be > 0, not {capacity!r}")
        clairvoyance = _real("clairvoyance", clairvoyance)
        if not 0 < clairvoyance <= 1:
            raise InputError(f"clairvoyance must be in (0, 1], not {clairvoyance!r}")
        if data not in DATA:
            raise InputError(f"data must be 'inst' or 'avg', not {data!r}")
        if not isinstance(rebalance, (bool, np.bool_)):
            raise InputError(f"rebalance must be true or false, not {rebalance!r}")
        headroom = _real("headroom", headroom)
        if not 0 < headroom <= 1:
            raise InputError(f"headroom must be in (0, 1], not {headroom!r}")
        return cls(est, algorithm, capacity, clairvoyance, data, bool(rebalance), headroom)


def _real(name, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number, not {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise InputError(f"{name} must be finite, not {value!r}")
    return value


def observation_split(clairvoyance: float, n_realizations: int) -> tuple[int, int]:
    """``(k, first)``: O = columns ``[0, k)`` and E = ``[first, R)`` (SPEC §2)."""
    if clairvoyance == 1.0:
        return n_realizations, 0
    k = max(1, math.floor(clairvoyance * n_realizations + 0.5))
    if k >= n_realizations:
        raise InputError(
            f"clairvoyance {clairvoyance!r} leaves no evaluation column with R = {n_realizations}"
        )
    return k, k


@dataclass
class Metrics:
    """The metrics of one instance × grid point (SPEC §5)."""

    m_abs: int
    m_norm: int
    m: float
    q: float
    q_max: float
    severity: float
    oversize: int
    assign: np.ndarray = field(repr=False)
    counts: np.ndarray = field(repr=False)
    moves: int = 0

    def row(self) -> tuple:
        return tuple(getattr(self, k) for k in METRICS)


def normalization(x: np.ndarray, capacity: float, means: np.ndarray | None = None) -> int:
    """``m_norm = max(1, ceil(S / c))``, ``S = fsum`` of the tasks' float64
    means over all R columns of x."""
    if means is None:
        means = row_means(x)
    return max(1, math.ceil(math.fsum(means.tolist()) / capacity))


def instance_metrics(x: np.ndarray, y: np.ndarray | None, points: list[GridPoint]) -> list[Metrics]:
    """Pack and evaluate one instance (rows of x and y) at every grid point.

    ``x``, ``y``: validated float arrays of shape (n, R) (``y`` may be None
    when no point uses ``data = "avg"``).
    """
    # beyond the paper (docs/beyond.md): new estimators, sorted orders, fleets
    from .beyond import beyond_metrics, is_beyond

    if any(is_beyond(p) for p in points):
        return beyond_metrics(x, y, points, instance_metrics)

    n, R = x.shape
    means = row_means(x)
    splits = {p.clairvoyance: observation_split(p.clairvoyance, R) for p in points}

    # statistics once per (data, clairvoyance), with every percentile needed
    levels: dict[tuple, set] = {}
    for p in points:
        lv = levels.setdefault((p.data, p.clairvoyance), set())
        if p.estimator.needs_percentile:
            lv.add(p.estimator.param)
    stats = {}
    for (data, cl), lv in levels.items():
        source = x if data == "inst" else y
        if source is None:
            raise InputError("data = 'avg' needs the average matrix y")
        k = splits[cl][0]
        stats[data, cl] = compute_statistics(source[:, :k], sorted(lv))

    # items once per (data, clairvoyance, estimator); all packings in one call
    item_keys = list(dict.fromkeys((p.data, p.clairvoyance, p.estimator) for p in points))
    a_all = np.empty((len(item_keys), n))
    b_all = np.empty((len(item_keys), n))
    z_all = np.empty(len(item_keys))
    for e, (data, cl, est) in enumerate(item_keys):
        a_all[e], b_all[e] = est.items(stats[data, cl])
        z_all[e] = est.z
    index = {key: e for e, key in enumerate(item_keys)}
    item_of = np.array([index[p.data, p.clairvoyance, p.estimator] for p in points], dtype=np.int64)
    caps = np.array([p.headroom * p.capacity for p in points])
    algorithms = np.array([ALGORITHMS[p.algorithm] for p in points], dtype=np.int64)
    assigns, n_bins, moves = pack_many(
        a_all, b_all, z_all, item_of, caps, algorithms,
        np.array([p.rebalance for p in points], dtype=np.bool_), *shared_online(item_of, caps, algorithms),
    )
    standalone = a_all + z_all[:, None] * np.sqrt(b_all)
    packings = [
        (assigns[k], int(n_bins[k]), int(moves[k]), int(np.count_nonzero(standalone[item_of[k]] > caps[k])))
        for k in range(len(points))
    ]

    # all packings of the instance are evaluated together: a bin that several
    # packings share (across estimators, algorithms, rebalancing or
    # clairvoyance levels) is summed once
    evaluations = evaluate_packings(
        x, [splits[p.clairvoyance][1] for p in points], R, [pk[0] for pk in packings],
        [pk[1] for pk in packings], [p.capacity for p in points],
    )

    out = []
    m_norms: dict[float, int] = {}
    for p, (assign, m_abs, moves, oversize), (counts, severity_sum, n_viol) in zip(points, packings, evaluations):
        n_eval = R - splits[p.clairvoyance][1]
        if p.capacity not in m_norms:
            m_norms[p.capacity] = normalization(x, p.capacity, means)
        m_norm = m_norms[p.capacity]
        out.append(
            Metrics(
                m_abs=m_abs,
                m_norm=m_norm,
                m=m_abs / m_norm,
                q=n_viol / (m_abs * n_eval),
                q_max=int(counts.max()) / n_eval,
                severity=severity_sum / n_viol if n_viol else 0.0,
                oversize=oversize,
                assign=assign,
                counts=counts,
                moves=moves,
            )
        )
    return out
