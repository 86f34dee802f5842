"""Mixed fleets: a capacity made of several machine types with shares.

Written ``C1:SHARE1,C2:SHARE2,...`` (for example ``"1:0.5,0.5:0.5"``: half
the machines of capacity 1, half of capacity 0.5), in a config's
``grid.capacity`` list beside plain numbers. Types keep the order written:
it breaks ties when a new bin's type is chosen (see ``docs/estimators.md``).

A type may also be a machine shape, CPU and memory capacity written
``CxM:SHARE`` (for example ``"0.5x0.5:6732,0.5x0.25:3863"``, docs/memory.md):
then every type of the fleet is a shape, and memory is packed too.
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
    memories: tuple[float, ...] | None = None

    @property
    def spec(self) -> str:
        """Canonical spec: each capacity and share as ``repr(float)`` without
        a trailing ``.0``, in the order written."""
        if self.memories is None:
            return ",".join(f"{number_text(c)}:{number_text(s)}" for c, s in zip(self.capacities, self.shares))
        return ",".join(f"{number_text(c)}x{number_text(m)}:{number_text(s)}"
                        for c, m, s in zip(self.capacities, self.memories, self.shares))

    @property
    def mean_capacity(self) -> float:
        """Share-weighted mean capacity ``sum s_t c_t / sum s_t`` (the m_norm
        divisor of a fleet)."""
        return math.fsum(s * c for s, c in zip(self.shares, self.capacities)) / math.fsum(self.shares)

    @property
    def mean_memory(self) -> float | None:
        """Share-weighted mean memory capacity (the memory m_norm divisor),
        None without shapes."""
        if self.memories is None:
            return None
        return math.fsum(s * m for s, m in zip(self.shares, self.memories)) / math.fsum(self.shares)

    def __str__(self) -> str:
        return self.spec


def parse_fleet(spec) -> Fleet:
    """Parse ``C:SHARE,...``; :class:`InputError` names the spec."""
    if isinstance(spec, Fleet):
        return spec
    if not isinstance(spec, str):
        raise InputError(f"capacity {spec!r}: a fleet must be a string such as '1:0.5,0.5:0.5'")
    parts = [p.strip() for p in spec.split(",")]
    caps, mems, shares = [], [], []
    for part in parts:
        fields = part.split(":")
        if len(fields) != 2:
            raise InputError(f"capacity {spec!r}: malformed fleet type {part!r} (expected CAPACITY:SHARE "
                             "or CPUxMEMORY:SHARE)")
        shape = fields[0].split("x")
        if len(shape) > 2:
            raise InputError(f"capacity {spec!r}: malformed machine shape {fields[0]!r} (expected CPUxMEMORY)")
        try:
            c, s = float(shape[0]), float(fields[1])
            m = float(shape[1]) if len(shape) == 2 else None
        except ValueError:
            raise InputError(f"capacity {spec!r}: {part!r} is not CAPACITY:SHARE or CPUxMEMORY:SHARE "
                             "with numbers") from None
        if not (math.isfinite(c) and c > 0):
            raise InputError(f"capacity {spec!r}: machine capacity must be > 0 and finite, not {shape[0]!r}")
        if m is not None and not (math.isfinite(m) and m > 0):
            raise InputError(f"capacity {spec!r}: memory capacity must be > 0 and finite, not {shape[1]!r}")
        if not (math.isfinite(s) and s > 0):
            raise InputError(f"capacity {spec!r}: share must be > 0 and finite, not {fields[1]!r}")
        caps.append(c)
        mems.append(m)
        shares.append(s)
    shaped = [m is not None for m in mems]
    if any(shaped) and not all(shaped):
        raise InputError(f"capacity {spec!r}: either every machine type is a shape CPUxMEMORY or none is")
    keys = list(zip(caps, mems))
    if len(set(keys)) != len(keys):
        raise InputError(f"capacity {spec!r}: a machine " + ("shape" if all(shaped) else "capacity")
                         + " is listed twice")
    return Fleet(tuple(caps), tuple(shares), tuple(mems) if all(shaped) else None)
