"""Mixed fleets: a capacity made of several machine types with shares.

Written ``C1:SHARE1,C2:SHARE2,...`` (for example ``"1:0.5,0.5:0.5"``: half
the machines of capacity 1, half of capacity 0.5), in a config's
``grid.capacity`` list beside plain numbers. Types keep the order written:
it breaks ties when a new bin's type is chosen (see ``docs/estimators.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError
from ._text import number_text


@dataclass(frozen=True)
class Fleet:
    """Machine types ``capacities[t]`` in proportions ``shares[t]``."""

    capacities: tuple[float, ...]
    shares: tuple[float, ...]

    @property
    def spec(self) -> str:
        """Canonical spec: each capacity and share as ``repr(float)`` without
        a trailing ``.0``, in the order written."""
        return ",".join(f"{number_text(c)}:{number_text(s)}" for c, s in zip(self.capacities, self.shares))

    @property
    def mean_capacity(self) -> float:
        """Share-weighted mean capacity ``sum s_t c_t / sum s_t`` (the m_norm
        divisor of a fleet)."""
        return math.fsum(s * c for s, c in zip(self.shares, self.capacities)) / math.fsum(self.shares)

    def __str__(self) -> str:
        return self.spec


def parse_fleet(spec) -> Fleet:
    """Parse ``C:SHARE,...``; :class:`InputError` names the spec."""
    if isinstance(spec, Fleet):
        return spec
    if not isinstance(spec, str):
        raise InputError(f"capacity {spec!r}: a fleet must be a string such as '1:0.5,0.5:0.5'")
    parts = [p.strip() for p in spec.split(",")]
    caps, shares = [], []
    for part in parts:
        fields = part.split(":")
        if len(fields) != 2:
            raise InputError(f"capacity {spec!r}: malformed fleet type {part!r} (expected CAPACITY:SHARE)")
        try:
            c, s = float(fields[0]), float(fields[1])
        except ValueError:
            raise InputError(f"capacity {spec!r}: {part!r} is not CAPACITY:SHARE with two numbers") from None
        if not (math.isfinite(c) and c > 0):
            raise InputError(f"capacity {spec!r}: machine capacity must be > 0 and finite, not {fields[0]!r}")
        if not (math.isfinite(s) and s > 0):
            raise InputError(f"capacity {spec!r}: share must be > 0 and finite, not {fields[1]!r}")
        caps.append(c)
        shares.append(s)
    if len(set(caps)) != len(caps):
        raise InputError(f"capacity {spec!r}: a machine capacity is listed twice")
    return Fleet(tuple(caps), tuple(shares))
