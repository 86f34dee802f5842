"""The estimator table: every estimator of task size is one entry
(SPEC §3 for the paper's five, docs/estimators.md for the others).

An entry (:class:`EstimatorKind`) says everything colosim needs to know of
an estimator: its name and parameter rule, the per-task statistics it
needs, its item form, its family and its label for tables and figures.

Item forms:

- **scalar**: an item ``(a_i, b_i)`` per task and one number ``z``, so that
  a bin's load is ``L(B) = sum a + z * sqrt(sum b)``. Additive estimators
  (``av``, ``perc``, ``max``, ``cantelli``) have ``b = 0`` and ``z = 0``;
  GPA has ``a = mu``, ``b = s2`` and ``z = Phi^-1(1 - rho)``. Items come
  from :class:`TaskStatistics`, computed once per instance, data and
  clairvoyance for every estimator that needs them.
- **vector**: a state row per task, summed per bin, and a load that is a
  function of the summed state (``emp``, ``nsigma``, ``effsize``; see
  :mod:`colosim.kernels.vector_packing`).

A *calibrated* estimator (``gpa-cal``) has a scalar form whose ``z`` comes
from a search the engine runs per instance: its parameter is a target
violation frequency, not a rho.

Adding an estimator is adding an entry to :data:`ESTIMATORS` (and its plain
reference to ``tests/naive.py``); the engine, the config checks, the
results reader, the figures and the error messages all read this table.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np
from scipy.special import ndtri

from ..errors import InputError
from ..kernels import vector_packing as vp
from ..kernels.stats import log_mgf, task_statistics
from ._text import number_text

SCALAR = "scalar"
VECTOR = "vector"

#: statistics a scalar estimator may need (the fields of TaskStatistics)
STATISTICS = ("mean", "var", "maximum", "minimum", "percentile")


@dataclass(frozen=True)
class Parameter:
    """The parameter of an estimator: its symbol, its valid values and how
    they are described in messages."""

    symbol: str
    valid: Callable[[float], bool]
    allowed: str


@dataclass
class TaskStatistics:
    """Per-task statistics over the observation columns (SPEC §3), float64.

    A field an estimator does not need may be None; ``percentiles`` holds
    the columns of ``percentile_levels`` in order.
    """

    mean: np.ndarray | None = None
    var: np.ndarray | None = None
    maximum: np.ndarray | None = None
    minimum: np.ndarray | None = None
    percentile_levels: tuple[float, ...] = ()
    percentiles: np.ndarray | None = None

    def percentile(self, level: float) -> np.ndarray:
        return self.percentiles[:, self.percentile_levels.index(level)]


def compute_statistics(observed: np.ndarray, percentile_levels=(), k: int | None = None) -> TaskStatistics:
    """Every statistic of every row of ``observed`` (n, R), over its first
    ``k`` columns (all when None), with the requested percentiles (NumPy's
    linear method)."""
    levels = tuple(sorted({float(p) for p in percentile_levels}))
    k = observed.shape[1] if k is None else k
    mean, var, maximum, minimum, perc = task_statistics(observed, k, np.asarray(levels, dtype=np.float64))
    return TaskStatistics(mean, var, maximum, minimum, levels, perc)


@dataclass(frozen=True)
class EstimatorKind:
    """One entry of the estimator table.

    ``items(stats, param) -> (a, b)`` and ``z(param)`` give the scalar form
    (``z`` None: 0); ``state(observed, param, cap_ref) -> (V, kind,
    params)`` the vector form, with ``cap_ref`` the smallest packing
    capacity ``h c`` of the point. ``calibrated(rho) -> z``, when set, makes
    the parameter a target frequency and ``z`` the result of the engine's
    search over rho. ``equivalent(param)`` names another spec that is the
    same estimator (``perc:100`` is ``max``), for families and comparisons.
    ``label`` is a format string with ``{p}`` (the parameter, ``%g``).
    """

    name: str
    family: str
    label: str
    parameter: Parameter | None
    needs: frozenset
    form: str
    paper: bool
    description: str
    items: Callable | None = None
    z: Callable | None = None
    state: Callable | None = None
    calibrated: Callable | None = None
    equivalent: Callable | None = None

    def __post_init__(self):
        assert self.form in (SCALAR, VECTOR), self.form
        assert (self.items is not None) == (self.form == SCALAR), self.name
        assert (self.state is not None) == (self.form == VECTOR), self.name
        assert self.form == VECTOR or set(self.needs) <= set(STATISTICS), self.name


# ---------------------------------------------------------------- rules

def _zeros(stats: TaskStatistics) -> np.ndarray:
    for v in (stats.mean, stats.maximum, stats.var, stats.minimum):
        if v is not None:
            return np.zeros_like(v)
    return np.zeros(stats.percentiles.shape[0])


def _gaussian_z(rho: float) -> float:
    """``Phi^-1(1 - rho)`` (SPEC §3)."""
    return float(ndtri(1.0 - rho))


def emp_allowance(rho: float, k: int) -> int:
    """``r = floor(RHO k)``, RHO taken as the decimal number written (so that
    0.29 × 100 is 29, not 28)."""
    return math.floor(Fraction(repr(float(rho))) * k)


#: effsize: s_g = (ln(1/RHO) / (h c)) * 2**(g/2), g = -8..12 (1/16 to 64
#: times the scale ln(1/RHO) / (h c); see docs/estimators.md)
EFFSIZE_EXPONENTS = np.arange(-8, 13) / 2.0


def effsize_grid(rho: float, cap: float) -> np.ndarray:
    return (math.log(1.0 / rho) / cap) * np.exp2(EFFSIZE_EXPONENTS)


def _emp_state(observed, rho, cap_ref):
    return observed, vp.EMP, np.array([float(emp_allowance(rho, observed.shape[1]))])


def _nsigma_state(observed, n, cap_ref):
    return observed, vp.NSIGMA, np.array([float(n)])


def _effsize_state(observed, rho, cap_ref):
    s = effsize_grid(rho, cap_ref)
    return log_mgf(observed, s), vp.EFFSIZE, np.concatenate([[math.log(1.0 / rho)], s])


def _hoeffding_items(stats, rho):
    spread = stats.maximum - stats.minimum
    return stats.mean, spread * spread


# ---------------------------------------------------------------- the table

ESTIMATORS: dict[str, EstimatorKind] = {e.name: e for e in (
    EstimatorKind(
        "gpa", "gpa", "GPA ρ={p}", Parameter("RHO", lambda p: 0 < p <= 0.5, "0 < RHO <= 0.5"),
        frozenset({"mean", "var"}), SCALAR, True,
        "Gaussian approximation: a bin fits while sum(mean) + Phi^-1(1 - RHO) sqrt(sum(var)) <= h c",
        items=lambda s, p: (s.mean, s.var), z=_gaussian_z),
    EstimatorKind(
        "av", "av", "av {p}", Parameter("F", lambda p: p > 0, "F > 0"),
        frozenset({"mean"}), SCALAR, True, "F × the mean",
        items=lambda s, p: (p * s.mean, _zeros(s))),
    EstimatorKind(
        "perc", "perc", "perc {p}", Parameter("P", lambda p: 0 <= p <= 100, "0 <= P <= 100"),
        frozenset({"percentile"}), SCALAR, True, "the P-th percentile",
        items=lambda s, p: (s.percentile(p), _zeros(s)),
        equivalent=lambda p: "max" if p == 100 else None),
    EstimatorKind(
        "cantelli", "cantelli", "Cantelli b={p}", Parameter("B", lambda p: p >= 0, "B >= 0"),
        frozenset({"mean", "var"}), SCALAR, True, "mean + B × std",
        items=lambda s, p: (s.mean + p * np.sqrt(s.var), _zeros(s))),
    EstimatorKind(
        "max", "max", "max", None, frozenset({"maximum"}), SCALAR, True, "the maximum",
        items=lambda s, p: (s.maximum, _zeros(s))),
    EstimatorKind(
        "emp", "emp", "emp {p}", Parameter("RHO", lambda p: 0 <= p < 1, "0 <= RHO < 1"),
        frozenset({"observed"}), VECTOR, False,
        "the exact Monte Carlo chance constraint on the observed realizations",
        state=_emp_state),
    EstimatorKind(
        "effsize", "effsize", "effsize {p}", Parameter("RHO", lambda p: 0 < p < 1, "0 < RHO < 1"),
        frozenset({"observed"}), VECTOR, False, "Chernoff effective size",
        state=_effsize_state),
    EstimatorKind(
        "hoeffding", "hoeffding", "hoeffding {p}", Parameter("RHO", lambda p: 0 < p < 1, "0 < RHO < 1"),
        frozenset({"mean", "maximum", "minimum"}), SCALAR, False,
        "Hoeffding's bound: sum(mean) + sqrt(ln(1/RHO) / 2) sqrt(sum((max - min)^2))",
        items=_hoeffding_items, z=lambda rho: math.sqrt(math.log(1.0 / rho) / 2.0)),
    EstimatorKind(
        "nsigma", "nsigma", "nsigma {p}", Parameter("N", lambda p: p >= 0, "N >= 0"),
        frozenset({"observed"}), VECTOR, False, "mean + N std of the machine's summed usage",
        state=_nsigma_state),
    EstimatorKind(
        "gpa-cal", "gpa-cal", "gpa-cal {p}", Parameter("TARGET", lambda p: 0 <= p < 1, "0 <= TARGET < 1"),
        frozenset({"mean", "var"}), SCALAR, False,
        "GPA with rho tuned per instance to meet TARGET on the observations",
        items=lambda s, p: (s.mean, s.var), calibrated=_gaussian_z),
)}

_SPEC_RE = re.compile(r"^\s*([A-Za-z][A-Za-z-]*)\s*(?::\s*(\S+?)\s*)?$")
#: a parameter as a plain decimal number (not Python's lenient float(): no
#: "1_0", "inf" or "nan")
_NUMBER_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$", re.ASCII)  # ASCII digits only


def known_specs() -> str:
    """The table's estimators as they are written: ``gpa:RHO, av:F, ..., max``."""
    return ", ".join(k.name if k.parameter is None else f"{k.name}:{k.parameter.symbol}" for k in ESTIMATORS.values())


@dataclass(frozen=True)
class Estimator:
    """A parsed estimator spec such as ``gpa:0.01`` or ``max``."""

    name: str
    param: float | None = None

    @property
    def kind(self) -> EstimatorKind:
        return ESTIMATORS[self.name]

    @property
    def spec(self) -> str:
        """Canonical spec (SPEC §5): lower-case name, ``:``, the parameter as
        ``repr(float)`` without a trailing ``.0``."""
        return self.name if self.param is None else f"{self.name}:{number_text(self.param)}"

    @property
    def same_as(self) -> str:
        """The spec of the estimator this one is equal to (``max`` for
        ``perc:100``), else its own spec."""
        eq = self.kind.equivalent
        return (eq(self.param) if eq is not None else None) or self.spec

    @property
    def family(self) -> str:
        return ESTIMATORS[parse_estimator(self.same_as).name].family

    @property
    def label(self) -> str:
        """A reader's name: ``GPA ρ=0.01``, ``av 1.25``, ``perc 100 (max)``."""
        text = self.kind.label.format(p=f"{self.param:g}" if self.param is not None else "")
        return text if self.same_as == self.spec else f"{text} ({self.same_as})"

    @property
    def z(self) -> float:
        """The scalar form's z (0 for additive estimators)."""
        return 0.0 if self.kind.z is None else float(self.kind.z(self.param))

    def items(self, stats: TaskStatistics) -> tuple[np.ndarray, np.ndarray]:
        """The item ``(a, b)`` of every task (scalar form)."""
        return self.kind.items(stats, self.param)

    def state(self, observed: np.ndarray, cap_ref: float):
        """``(V, kind, params)`` of every task (vector form)."""
        return self.kind.state(observed, self.param, cap_ref)

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
    if name not in ESTIMATORS:
        raise InputError(f"unknown estimator {spec!r} (known: {known_specs()})")
    rule = ESTIMATORS[name].parameter
    if rule is None:
        if raw is not None:
            raise InputError(f"estimator {spec!r}: '{name}' takes no parameter")
        return Estimator(name)
    if raw is None:
        raise InputError(f"estimator {spec!r}: '{name}' needs a parameter ({rule.allowed})")
    if not _NUMBER_RE.match(raw):
        raise InputError(f"estimator {spec!r}: parameter {raw!r} is not a number")
    value = float(raw)
    if not math.isfinite(value) or not rule.valid(value):
        raise InputError(f"estimator {spec!r}: parameter out of range ({rule.allowed})")
    estimator = Estimator(name, value)
    if ESTIMATORS[name].z is not None and not math.isfinite(estimator.z):
        raise InputError(f"estimator {spec!r}: parameter {raw} is too small to compute with "
                         f"(its z = {estimator.z} is not finite)")
    return estimator


def family(spec: str) -> str:
    """The family of an estimator spec (``perc:100`` is of ``max``'s)."""
    return parse_estimator(spec).family


def label(spec: str) -> str:
    """A reader's name for an estimator spec: ``GPA ρ=0.01``, ``av 1.25``."""
    return parse_estimator(spec).label


def parameter(spec: str) -> float | None:
    return parse_estimator(spec).param


def same_estimator(a: str, b: str) -> bool:
    """Whether two specs are the same estimator (``max`` and ``perc:100``)."""
    return parse_estimator(a).same_as == parse_estimator(b).same_as
