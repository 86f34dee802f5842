"""Sweep configs: TOML → frozen, validated, normalized objects; grid
expansion.

A config has three tables (and an optional fourth)::

    [source]      # where the realizations come from (a tagged union on kind)
    kind = "synthetic"          # or "store", "series", "google2011", "google2019"
    tasks = 100000              # N, rows of the store
    realizations = 10000        # R
    seed = 2017
    sampling = "independent"    # or "paired" (SPEC §8), "time-aligned" (docs/estimators.md),
                                # "window-quantiles" (docs/spec.md)
    daily_amplitude = 0.0       # optional common daily pattern (docs/estimators.md)
    memory = false              # realize memory too (set by itself when the grid packs memory)

    [instances]   # SPEC §6
    count = 50
    tasks = 1000
    seed = 1

    [grid]        # every key takes a non-empty list; missing keys take the default
    estimator = ["gpa:0.01", "av:1"]
    algorithm = ["best-fit"]          # first-fit, best-fit, *-decreasing
    capacity = [1.0]                  # or fleets "C:SHARE,..." (docs/estimators.md),
                                      # machine shapes "CxM:SHARE,..." (docs/memory.md)
    clairvoyance = [1.0]
    data = ["inst"]                   # inst, avg
    rebalance = [true]
    headroom = [1.0]
    memory_capacity = [0.5]           # optional: pack memory too (docs/memory.md)
    memory_estimator = ["max"]        # memory's estimator (default max)
    fit_rule = ["cpu"]                # Best Fit across both: cpu, l2, dot

    [output]
    path = "results/NAME.csv"         # relative to the config's folder (default:
                                      # results/CONFIG.csv in the working directory)

Any unknown key, wrong type, empty list, value listed twice or
out-of-range value is an :class:`InputError` naming the key and the file.
Grid values are normalized once (``capacity = [1]`` and ``[1.0]`` are the
same config), and the fingerprint is taken of the normalized values, under
:data:`CONFIG_SCHEMA`.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .errors import InputError
from .io.results import GRID_KEYS, fingerprint
from .model.fleet import Fleet
from .model.grid import GridPoint, normalize, value_text
from .resources import MAX_INSTANCES, MAX_REALIZATIONS, MAX_SEED, MAX_TASKS
from .sources.ingest import MIN_RECORDS
from .sources.realize import SAMPLINGS

#: Version of the normalized form the fingerprint is taken of: raised when
#: the same config would fingerprint differently, so that results made
#: under another version are recognized as such.
CONFIG_SCHEMA = 2


@dataclass(frozen=True, kw_only=True)
class StoreSource:
    """An existing store file (``path``, relative to the config's folder)."""

    kind: Literal["store"] = "store"
    path: str


@dataclass(frozen=True, kw_only=True)
class _RealizedSource:
    """What every source realized into a store has: N, R, the seed, the
    sampling (SPEC §8) and, optionally, where to keep the store (relative
    to the config's folder; default: the cache)."""

    tasks: int
    realizations: int
    seed: int
    sampling: str = SAMPLINGS[0]
    store: str | None = None
    #: realize memory beside CPU (docs/memory.md); set by itself when a grid
    #: point packs memory
    memory: bool = False


@dataclass(frozen=True, kw_only=True)
class SyntheticSource(_RealizedSource):
    """The built-in population, realized once into a cached store."""

    kind: Literal["synthetic"] = "synthetic"
    daily_amplitude: float = 0.0


@dataclass(frozen=True, kw_only=True)
class SeriesSource(_RealizedSource):
    """A series file (``path``), realized once into a store."""

    kind: Literal["series"] = "series"
    path: str


@dataclass(frozen=True, kw_only=True)
class TraceSource(_RealizedSource):
    """A trace folder (``path``) of ``kind`` google2011 or google2019,
    ingested once into a series file and realized once into a store."""

    kind: Literal["google2011", "google2019"]
    path: str
    min_records: int = MIN_RECORDS


Source = Union[StoreSource, SyntheticSource, SeriesSource, TraceSource]

SOURCE_KINDS: dict[str, type] = {
    "store": StoreSource,
    "synthetic": SyntheticSource,
    "series": SeriesSource,
    "google2011": TraceSource,
    "google2019": TraceSource,
}


@dataclass(frozen=True)
class Instances:
    count: int
    tasks: int
    seed: int


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep config. ``grid`` holds each key's normalized values
    in the order listed; ``points`` their product (SPEC §5 order)."""

    path: Path
    source: Source
    instances: Instances
    grid: tuple[tuple[str, tuple], ...]
    output: str | None = None

    @property
    def points(self) -> list[GridPoint]:
        """The grid's product, in SPEC §5 order (keys in column order, values
        in the order the config lists them)."""
        keys = [k for k, _ in self.grid]
        return [GridPoint(**dict(zip(keys, combo))) for combo in itertools.product(*(v for _, v in self.grid))]

    def effective(self) -> dict:
        """The config as parsed and normalized (after any scaling), as data:
        what a results sidecar records."""
        return {
            "source": dataclasses.asdict(self.source),
            "instances": dataclasses.asdict(self.instances),
            "grid": {k: [value_text(v) for v in values] for k, values in self.grid},
            "output": self.output,
        }

    def fingerprint(self) -> str:
        """SHA-256 of everything that determines the results (not the
        output path), in normalized form."""
        return fingerprint({
            "schema": CONFIG_SCHEMA,
            "source": dataclasses.asdict(self.source),
            "instances": dataclasses.asdict(self.instances),
            "grid": [[k, [value_text(v) for v in values]] for k, values in self.grid],
        })


def load_config(path, *, grid_required: bool = True) -> SweepConfig:
    """Read and validate a sweep config (a plan config may leave out
    ``[grid]``: every key at its default)."""
    path = Path(path)
    try:
        if path.exists() and not path.is_dir() and not path.is_file():
            raise InputError(f"{path}: not a regular file (a device, FIFO or socket), not a config file")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: config file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a config file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:  # no permission, a name too long, a path through a file
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: invalid TOML ({exc})") from None
    return parse_config(raw, path, grid_required=grid_required)


def parse_config(raw: dict, path: Path, *, grid_required: bool = True) -> SweepConfig:
    _keys(raw, {"source", "instances", "grid", "output"}, path, "")
    if not grid_required:
        raw = {"grid": {}, **raw}
    for table in ("source", "instances", "grid"):
        if table not in raw:
            raise InputError(f"{path}: missing table [{table}]")
        if not isinstance(raw[table], dict):
            raise InputError(f"{path}: '{table}' must be a table")
    source = _source(raw["source"], path)
    inst = raw["instances"]
    _keys(inst, {"count", "tasks", "seed"}, path, "instances.")
    instances = Instances(
        count=_int(inst, "count", path, "instances.", minimum=1, maximum=MAX_INSTANCES),
        tasks=_int(inst, "tasks", path, "instances.", minimum=1, maximum=MAX_TASKS),
        seed=_int(inst, "seed", path, "instances.", minimum=0, maximum=MAX_SEED),
    )
    grid = _grid(raw["grid"], path)
    if packs_memory(grid) and hasattr(source, "memory") and not source.memory:
        source = dataclasses.replace(source, memory=True)
    output = None
    if "output" in raw:
        if not isinstance(raw["output"], dict):
            raise InputError(f"{path}: 'output' must be a table")
        _keys(raw["output"], {"path"}, path, "output.")
        output = _str(raw["output"], "path", path, "output.")
    tasks = getattr(source, "tasks", None)
    if tasks is not None and instances.tasks > tasks:
        raise InputError(
            f"{path}: instances.tasks = {instances.tasks} is more than the store's "
            f"{tasks} tasks (source.tasks)"
        )
    return SweepConfig(path=path, source=source, instances=instances, grid=grid, output=output)


#: the TOML types each grid key's values may have
_GRID_TYPES = {
    "estimator": (str,), "algorithm": (str,), "data": (str,), "rebalance": (bool,),
    "capacity": (int, float, str), "clairvoyance": (int, float), "headroom": (int, float),
    "fit_rule": (str,), "memory_capacity": (int, float), "memory_estimator": (str,),
}


def _grid(table: dict, path: Path) -> tuple[tuple[str, tuple], ...]:
    _keys(table, set(GRID_KEYS), path, "grid.")
    grid = []
    for key, default in GRID_KEYS.items():
        values = table.get(key, [default])
        if not isinstance(values, list):
            raise InputError(f"{path}: grid.{key} must be a list, not {type(values).__name__}")
        if not values:
            raise InputError(f"{path}: grid.{key} is an empty list")
        normalized = []
        for v in values:
            expected = _GRID_TYPES[key]
            if v is None and key not in table:  # a default that is no value (memory_capacity)
                normalized.append(None)
                continue
            if (isinstance(v, bool) and bool not in expected) or not isinstance(v, expected):
                names = " or ".join(dict.fromkeys(
                    "number" if t in (int, float) else {str: "string", bool: "boolean"}[t] for t in expected))
                raise InputError(f"{path}: grid.{key} value {v!r} must be a {names}")
            try:
                value = normalize(key, v)
            except InputError as exc:
                raise InputError(f"{path}: grid.{key} value {v!r}: {exc}") from None
            if value in normalized:
                raise InputError(f"{path}: grid.{key} lists {value_text(value)!r} twice")
            normalized.append(value)
        grid.append((key, tuple(normalized)))
    values = dict(grid)
    shaped = [c.spec for c in values["capacity"] if isinstance(c, Fleet) and c.memories is not None]
    given = [m for m in values["memory_capacity"] if m is not None]
    if shaped and given:
        raise InputError(f"{path}: grid.memory_capacity {given[0]!r} with the machine shapes {shaped[0]!r} in "
                         "grid.capacity: give memory either in the shapes or as memory_capacity")
    return tuple(grid)


def packs_memory(grid) -> bool:
    """Whether a grid point packs memory (docs/memory.md)."""
    values = dict(grid)
    return any(m is not None for m in values["memory_capacity"]) or any(
        isinstance(c, Fleet) and c.memories is not None for c in values["capacity"])


def _source(src: dict, path: Path) -> Source:
    kind = src.get("kind")
    if not isinstance(kind, str) or kind not in SOURCE_KINDS:
        raise InputError(f"{path}: source.kind must be one of {', '.join(SOURCE_KINDS)}, not {kind!r}")
    cls = SOURCE_KINDS[kind]
    fields = {f.name: f for f in dataclasses.fields(cls)}
    _keys(src, set(fields), path, "source.")
    values = {"kind": kind}
    for name, f in fields.items():
        if name == "kind":
            continue
        required = f.default is dataclasses.MISSING
        if name not in src:
            if required:
                raise InputError(f"{path}: missing key 'source.{name}'")
            continue
        if name in ("path", "store"):
            values[name] = _str(src, name, path, "source.")
        elif name == "sampling":
            if src[name] not in SAMPLINGS:
                raise InputError(f"{path}: source.sampling must be "
                                 f"{', '.join(repr(s) for s in SAMPLINGS)}, not {src[name]!r}")
            if src[name] == "window-quantiles" and kind in ("synthetic", "google2011"):
                raise InputError(f"{path}: source.sampling 'window-quantiles' needs each window's CPU percentiles, "
                                 f"which a {kind} source has not (Google 2019 data has them)")
            values[name] = src[name]
        elif name == "memory":
            if not isinstance(src[name], bool):
                raise InputError(f"{path}: source.memory must be true or false, not {src[name]!r}")
            values[name] = src[name]
        elif name == "daily_amplitude":
            v = src[name]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
                raise InputError(f"{path}: source.daily_amplitude must be a number in [0, 1), not {v!r}")
            values[name] = float(v)
        else:
            minimum = {"tasks": 1, "realizations": 2, "seed": 0, "min_records": 1}[name]
            maximum = {"tasks": MAX_TASKS, "realizations": MAX_REALIZATIONS, "seed": MAX_SEED}.get(name)
            values[name] = _int(src, name, path, "source.", minimum=minimum, maximum=maximum)
    return cls(**values)


def _keys(table: dict, allowed: set, path: Path, prefix: str) -> None:
    for key in table:
        if key not in allowed:
            raise InputError(f"{path}: unknown key '{prefix}{key}' (allowed: {', '.join(sorted(allowed))})")


def _int(table, key, path, prefix, minimum, maximum=None):
    if key not in table:
        raise InputError(f"{path}: missing key '{prefix}{key}'")
    v = table[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"{path}: {prefix}{key} must be an integer, not {v!r}")
    if v < minimum:
        raise InputError(f"{path}: {prefix}{key} must be >= {minimum}, not {v}")
    if maximum is not None and v > maximum:
        raise InputError(f"{path}: {prefix}{key} must be <= {maximum:_}, not {v:_}")
    return v


def _str(table, key, path, prefix):
    if key not in table:
        raise InputError(f"{path}: missing key '{prefix}{key}'")
    v = table[key]
    if not isinstance(v, str) or not v:
        raise InputError(f"{path}: {prefix}{key} must be a non-empty string, not {v!r}")
    return v
