"""Estimators of task size (SPEC §3, paper Section 5.1) and per-task
statistics over the observation set.

Every estimator is reduced to an *item* ``(a_i, b_i)`` per task and one
number ``z`` per estimator, so that the load of a bin is always

    L(B) = sum_{i in B} a_i + z * sqrt(sum_{i in B} b_i)

Additive estimators (``av``, ``perc``, ``max``, ``cantelli``) have ``b = 0`` and
``z = 0``, so ``L`` is the plain sum of sizes; GPA has ``a = mu``, ``b = s2`` and
``z = Phi^-1(1 - rho)``. One packing kernel then serves every estimator.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from .errors import InputError
from .kernels.stats import task_statistics

#: name -> (takes a parameter, validity test, description of valid values)
_RULES = {
    "av": (True, lambda p: p > 0, "F > 0"),
    "perc": (True, lambda p: 0 <= p <= 100, "0 <= P <= 100"),
    "max": (False, None, "no parameter"),
    "cantelli": (True, lambda p: p >= 0, "B >= 0"),
    "gpa": (True, lambda p: 0 < p <= 0.5, "0 < RHO <= 0.5"),
    # beyond the paper (docs/beyond.md); packed by colosim.beyond
    "emp": (True, lambda p: 0 <= p < 1, "0 <= RHO < 1"),
    "gpa-cal": (True, lambda p: 0 <= p < 1, "0 <= TARGET < 1"),
    "hoeffding": (True, lambda p: 0 < p < 1, "0 < RHO < 1"),
    "effsize": (True, lambda p: 0 < p < 1, "0 < RHO < 1"),
    "nsigma": (True, lambda p: p >= 0, "N >= 0"),
}

#: estimators whose bin load is not of the (a, b, z) form, or that need more
#: than per-task statistics (packed by colosim.beyond)
VECTOR_ESTIMATORS = ("emp", "gpa-cal", "effsize", "nsigma")

_SPEC_RE = re.compile(r"^\s*([A-Za-z][A-Za-z-]*)\s*(?::\s*(\S+?)\s*)?$")


def _format_param(value: float) -> str:
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


@dataclass(frozen=True)
class Estimator:
    """A parsed estimator spec such as ``gpa:0.01`` or ``max``."""

    name: str
    param: float | None = None
    text: str | None = None  # canonical spec

    @property
    def spec(self) -> str:
        """Canonical spec (SPEC §5): lower-case name, ``:``, the parameter as
        ``repr(float)`` without a trailing ``.0``."""
        return self.text

    @property
    def z(self) -> float:
        """Standard normal quantile at ``1 - rho`` for GPA, ``sqrt(ln(1/rho)
        / 2)`` for Hoeffding's bound, 0 otherwise."""
        if self.name == "gpa":
            return float(ndtri(1.0 - self.param))
        if self.name == "hoeffding":
            return math.sqrt(math.log(1.0 / self.param) / 2.0)
        return 0.0

    @property
    def needs_percentile(self) -> bool:
        return self.name == "perc"

    def items(self, stats: "TaskStatistics") -> tuple[np.ndarray, np.ndarray]:
        """The item ``(a, b)`` of every task from its statistics."""
        zeros = np.zeros_like(stats.mean)
        if self.name == "av":
            return self.param * stats.mean, zeros
        if self.name == "perc":
            return stats.percentile(self.param), zeros
        if self.name == "max":
            return stats.maximum, zeros
        if self.name == "cantelli":
            return stats.mean + self.param * np.sqrt(stats.var), zeros
        if self.name == "hoeffding":
            if stats.minimum is None:
                raise ValueError("hoeffding needs the per-task minimum (TaskStatistics.minimum)")
            spread = stats.maximum - stats.minimum
            return stats.mean, spread * spread
        if self.name in VECTOR_ESTIMATORS:
            raise ValueError(f"{self.spec} has no (a, b) items; it is packed by colosim.beyond")
        return stats.mean, stats.var  # gpa

    def __str__(self) -> str:
        return self.spec


def parse_estimator(spec) -> Estimator:
    """Parse ``NAME`` or ``NAME:PARAM``; a malformed spec or an out-of-range
    parameter is an :class:`InputError` naming the spec."""
    if isinstance(spec, Estimator):
        return spec
    if not isinstance(spec, str):
        raise InputError(f"estimator spec must be a string such as 'gpa:0.01', not {spec!r}")
    match = _SPEC_RE.match(spec)
    if not match:
        raise InputError(f"malformed estimator spec {spec!r} (expected NAME or NAME:PARAM, e.g. 'gpa:0.01')")
    name, raw = match.group(1).lower(), match.group(2)
    if name not in _RULES:
        raise InputError(f"unknown estimator {spec!r} (known: {', '.join(_RULES)})")
    takes_param, valid, allowed = _RULES[name]
    if not takes_param:
        if raw is not None:
            raise InputError(f"estimator {spec!r}: '{name}' takes no parameter")
        return Estimator(name, None, name)
    if raw is None:
        raise InputError(f"estimator {spec!r}: '{name}' needs a parameter ({allowed})")
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"estimator {spec!r}: parameter {raw!r} is not a number") from None
    if not math.isfinite(value) or not valid(value):
        raise InputError(f"estimator {spec!r}: parameter out of range ({allowed})")
    return Estimator(name, value, f"{name}:{_format_param(value)}")


@dataclass
class TaskStatistics:
    """Per-task statistics over the observation columns (SPEC §3), float64.

    ``percentiles`` holds the columns of ``percentile_levels`` in order.
    """

    mean: np.ndarray
    var: np.ndarray
    maximum: np.ndarray
    percentile_levels: tuple[float, ...]
    percentiles: np.ndarray
    minimum: np.ndarray | None = None  # filled where needed (hoeffding)

    def percentile(self, level: float) -> np.ndarray:
        return self.percentiles[:, self.percentile_levels.index(level)]


def compute_statistics(observed: np.ndarray, percentile_levels=()) -> TaskStatistics:
    """Mean, population variance, maximum and the requested percentiles
    (NumPy's linear method) of every row of ``observed``."""
    levels = tuple(sorted({float(p) for p in percentile_levels}))
    mean, var, maximum, perc = task_statistics(observed, np.asarray(levels, dtype=np.float64))
    return TaskStatistics(mean, var, maximum, levels, perc)
