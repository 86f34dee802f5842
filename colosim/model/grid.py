"""Grid points: one value of every grid key (SPEC §2–5), validated and
normalized once, and what follows from them (observation split, machine
types, extra result columns).

The grid keys, their column order and their defaults are declared in
:data:`colosim.io.results.GRID_KEYS`; the values each key takes are
checked and normalized here (:func:`normalize`), for configs, the API and
the results reader alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..io.results import GRID_KEYS
from ..kernels import BEST_FIT, DECREASING, FIRST_FIT
from ..kernels.two_resource import RULE_CPU, RULE_DOT, RULE_L2
from .estimators import Estimator, parse_estimator
from .fleet import Fleet, parse_fleet

#: algorithm name -> kernel code (SPEC §4; the decreasing orders:
#: docs/estimators.md)
ALGORITHMS = {
    "first-fit": FIRST_FIT,
    "best-fit": BEST_FIT,
    "first-fit-decreasing": FIRST_FIT | DECREASING,
    "best-fit-decreasing": BEST_FIT | DECREASING,
}
DATA = ("inst", "avg")
#: Best Fit's score across CPU and memory (docs/memory.md) -> kernel code
FIT_RULES = {"cpu": RULE_CPU, "l2": RULE_L2, "dot": RULE_DOT}


def _real(name, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number, not {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise InputError(f"{name} must be finite, not {value!r}")
    return value


def normalize(key: str, value):
    """The canonical value of grid key ``key``: an :class:`Estimator`, an
    algorithm name, a float or :class:`Fleet` capacity, a float, ``inst`` or
    ``avg``, a bool, a float. An invalid value is an :class:`InputError`
    naming the key."""
    if key == "estimator":
        return parse_estimator(value)
    if key == "algorithm":
        if value not in ALGORITHMS:
            raise InputError(f"algorithm must be one of {', '.join(ALGORITHMS)}, not {value!r}")
        return value
    if key == "capacity":
        if isinstance(value, (str, Fleet)):  # a mixed fleet (docs/estimators.md)
            return parse_fleet(value)
        value = _real("capacity", value)
        if not value > 0:
            raise InputError(f"capacity must be > 0, not {value!r}")
        return value
    if key == "clairvoyance":
        value = _real("clairvoyance", value)
        if not 0 < value <= 1:
            raise InputError(f"clairvoyance must be in (0, 1], not {value!r}")
        return value
    if key == "data":
        if value not in DATA:
            raise InputError(f"data must be 'inst' or 'avg', not {value!r}")
        return value
    if key == "rebalance":
        if not isinstance(value, (bool, np.bool_)):
            raise InputError(f"rebalance must be true or false, not {value!r}")
        return bool(value)
    if key == "headroom":
        value = _real("headroom", value)
        if not 0 < value <= 1:
            raise InputError(f"headroom must be in (0, 1], not {value!r}")
        return value
    if key == "fit_rule":
        if value not in FIT_RULES:
            raise InputError(f"fit_rule must be one of {', '.join(FIT_RULES)}, not {value!r}")
        return value
    if key == "memory_capacity":
        if value is None or value == "":
            return None
        value = _real("memory_capacity", value)
        if not value > 0:
            raise InputError(f"memory_capacity must be > 0, not {value!r}")
        return value
    if key == "memory_estimator":
        try:
            estimator = parse_estimator(value)
        except InputError as exc:
            raise InputError(f"memory_estimator: {exc}") from None
        if estimator.kind.calibrated is not None:
            raise InputError(f"memory_estimator {estimator.spec!r}: a calibrated estimator searches CPU's rho; "
                             "memory takes any other estimator of the table")
        return estimator
    raise InputError(f"unknown grid key {key!r} (known: {', '.join(GRID_KEYS)})")


def value_text(value) -> str | float | bool:
    """A normalized value as the results table holds it: specs as text,
    numbers and booleans as they are."""
    if isinstance(value, (Estimator, Fleet)):
        return value.spec
    return value


@dataclass(frozen=True)
class GridPoint:
    """One combination of the grid keys (SPEC §5 column order), normalized."""

    estimator: Estimator
    algorithm: str = GRID_KEYS["algorithm"]
    capacity: float | Fleet = GRID_KEYS["capacity"]
    clairvoyance: float = GRID_KEYS["clairvoyance"]
    data: str = GRID_KEYS["data"]
    rebalance: bool = GRID_KEYS["rebalance"]
    headroom: float = GRID_KEYS["headroom"]
    fit_rule: str = GRID_KEYS["fit_rule"]
    memory_capacity: float | None = GRID_KEYS["memory_capacity"]
    memory_estimator: Estimator | None = None  # normalized to GRID_KEYS["memory_estimator"] by make

    @classmethod
    def make(cls, estimator=GRID_KEYS["estimator"], algorithm=GRID_KEYS["algorithm"],
             capacity=GRID_KEYS["capacity"], clairvoyance=GRID_KEYS["clairvoyance"], data=GRID_KEYS["data"],
             rebalance=GRID_KEYS["rebalance"], headroom=GRID_KEYS["headroom"], fit_rule=GRID_KEYS["fit_rule"],
             memory_capacity=GRID_KEYS["memory_capacity"],
             memory_estimator=GRID_KEYS["memory_estimator"]) -> "GridPoint":
        """Validate and normalize user values; :class:`InputError` names the
        offending argument."""
        values = dict(estimator=estimator, algorithm=algorithm, capacity=capacity, clairvoyance=clairvoyance,
                      data=data, rebalance=rebalance, headroom=headroom, fit_rule=fit_rule,
                      memory_capacity=memory_capacity, memory_estimator=memory_estimator)
        point = cls(**{k: normalize(k, v) for k, v in values.items()})
        if point.memory_capacity is not None and point.fleet and point.capacity.memories is not None:
            raise InputError(f"memory_capacity = {point.memory_capacity!r} with the machine shapes "
                             f"{point.capacity.spec!r}: give memory either in the shapes or as memory_capacity")
        return point

    def __post_init__(self):
        if self.memory_estimator is None:
            object.__setattr__(self, "memory_estimator", normalize("memory_estimator",
                                                                   GRID_KEYS["memory_estimator"]))

    def keys(self) -> tuple:
        """The grid keys' values as the results table holds them."""
        return tuple(value_text(getattr(self, k)) for k in GRID_KEYS)

    @property
    def fleet(self) -> bool:
        return isinstance(self.capacity, Fleet)

    def machine_types(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """``(capacities, shares)`` of the point's machine types (one type
        of share 1 for a single capacity); capacities without headroom."""
        if isinstance(self.capacity, Fleet):
            return self.capacity.capacities, self.capacity.shares
        return (self.capacity,), (1.0,)

    @property
    def memory(self) -> bool:
        """Whether memory is packed too: a memory capacity, or a fleet of
        machine shapes (docs/memory.md)."""
        return self.memory_capacity is not None or (self.fleet and self.capacity.memories is not None)

    def machine_memories(self) -> tuple[float, ...]:
        """Each machine type's memory capacity (in the order of
        :meth:`machine_types`); only when :attr:`memory`."""
        if self.fleet and self.capacity.memories is not None:
            return self.capacity.memories
        return (self.memory_capacity,) * len(self.machine_types()[0])

    @property
    def mean_memory(self) -> float:
        """The memory m_norm divisor: the memory capacity, or a fleet's
        share-weighted mean memory."""
        if self.fleet and self.capacity.memories is not None:
            return self.capacity.mean_memory
        return self.memory_capacity

    @property
    def fit_rule_code(self) -> int:
        return FIT_RULES[self.fit_rule]

    @property
    def mean_capacity(self) -> float:
        """The m_norm divisor: c, or a fleet's share-weighted mean capacity."""
        return self.capacity.mean_capacity if isinstance(self.capacity, Fleet) else self.capacity

    @property
    def algorithm_code(self) -> int:
        return ALGORITHMS[self.algorithm]


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


def evaluation_columns(clairvoyance: float, n_realizations: int) -> int:
    """|E| (SPEC §2)."""
    return n_realizations - observation_split(clairvoyance, n_realizations)[1]


def extra_columns(points) -> tuple[str, ...]:
    """The extra results columns a grid's points report: ``calibrated_rho``
    when a point's estimator is calibrated, ``m_abs_by_type`` and
    ``q_by_type`` when a point's capacity is a fleet."""
    cols = ()
    if any(p.estimator.kind.calibrated is not None for p in points):
        cols += ("calibrated_rho",)
    if any(p.fleet for p in points):
        cols += ("m_abs_by_type", "q_by_type")
    if any(p.memory for p in points):
        cols += ("q_memory", "q_memory_max", "memory_bound")
    return cols


def check_row(row: dict) -> None:
    """A results row's grid keys must be valid grid values; specs are put in
    canonical form (for :func:`colosim.io.results.read_results`)."""
    for key in GRID_KEYS:
        row[key] = value_text(normalize(key, row[key]))
