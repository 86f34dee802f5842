"""The metrics of one instance × grid point (SPEC §5)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..io.results import METRICS


@dataclass
class Metrics:
    """What one packing of one instance scores (SPEC §5), and what it is.

    ``assign`` and ``counts`` (q_j per bin) are the packing and its
    violations; ``moves`` the tasks rebalancing moved; ``bin_type`` each
    bin's machine type (all 0 for a single capacity); ``calibrated_rho``
    the rho a calibrated estimator chose (None otherwise);
    ``m_abs_by_type`` and ``q_by_type`` the bins and violation frequency
    per machine type of a fleet (empty otherwise). With memory packed too
    (docs/memory.md): ``q_memory`` and ``q_memory_max`` (memory's q and
    q_max), ``memory_bound`` (the share of bins that memory fills more than
    CPU), ``counts_memory`` (memory's q_j); None otherwise. ``q_ci`` is the 95%
    interval of q from the evaluation columns
    (:func:`colosim.model.intervals.row_q_interval`).
    """

    m_abs: int
    m_norm: int
    m: float
    q: float
    q_max: float
    severity: float
    oversize: int
    q_ci: tuple[float, float]
    assign: np.ndarray = field(repr=False)
    counts: np.ndarray = field(repr=False)
    moves: int = 0
    bin_type: np.ndarray | None = field(default=None, repr=False)
    calibrated_rho: float | None = None
    m_abs_by_type: tuple = ()
    q_by_type: tuple = ()
    q_memory: float | None = None
    q_memory_max: float | None = None
    memory_bound: float | None = None
    counts_memory: np.ndarray | None = field(default=None, repr=False)

    def row(self, extra: tuple[str, ...] = ()) -> tuple:
        """The metrics, the interval of q, then the ``extra`` columns."""
        return tuple(getattr(self, k) for k in METRICS) + self.q_ci + self.extras(extra)

    def extras(self, columns: tuple[str, ...]) -> tuple:
        """The extra columns' values (None or () where they do not apply)."""
        return tuple(getattr(self, c) for c in columns)

    @property
    def q_ci_low(self) -> float:
        return self.q_ci[0]

    @property
    def q_ci_high(self) -> float:
        return self.q_ci[1]


def normalization(means_sum: float, capacity: float) -> int:
    """``m_norm = max(1, ceil(S / c))`` (SPEC §5), ``S`` the exactly rounded
    sum of the tasks' means and ``c`` the (mean) capacity."""
    return max(1, math.ceil(means_sum / capacity))
