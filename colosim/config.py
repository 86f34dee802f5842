"""Sweep configs: TOML → frozen, validated objects; grid expansion.

A config has three tables (and an optional fourth)::

    [source]      # where the realizations come from
    kind = "synthetic"          # or "store", "series", "google2011", "google2019"
    tasks = 100000              # N, rows of the store
    realizations = 10000        # R
    seed = 2017
    sampling = "independent"    # or "paired" (SPEC §8), "time-aligned" (docs/beyond.md)
    daily_amplitude = 0.0       # optional common daily pattern (docs/beyond.md)

    [instances]   # SPEC §6
    count = 50
    tasks = 1000
    seed = 1

    [grid]        # every key takes a non-empty list; missing keys take the default
    estimator = ["gpa:0.01", "av:1"]
    algorithm = ["best-fit"]          # first-fit, best-fit
    capacity = [1.0]                  # or fleets "C:SHARE,..." (docs/beyond.md)
    clairvoyance = [1.0]
    data = ["inst"]                   # inst, avg
    rebalance = [true]
    headroom = [1.0]

    [output]
    path = "results/NAME.csv"         # relative to the working directory

Any unknown key, wrong type, empty list or out-of-range value is an
:class:`InputError` naming the key and the file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from .errors import InputError
from .experiment import GridPoint

#: grid keys in SPEC §5 column order, with their defaults
GRID_KEYS = {
    "estimator": ["gpa:0.01"],
    "algorithm": ["best-fit"],
    "capacity": [1.0],
    "clairvoyance": [1.0],
    "data": ["inst"],
    "rebalance": [True],
    "headroom": [1.0],
}

SOURCE_KINDS = {
    "synthetic": {"kind", "tasks", "realizations", "seed", "sampling", "store", "daily_amplitude"},
    "store": {"kind", "path"},
    "series": {"kind", "path", "tasks", "realizations", "seed", "sampling", "store"},
    "google2011": {"kind", "path", "tasks", "realizations", "seed", "sampling", "store", "min_records"},
    "google2019": {"kind", "path", "tasks", "realizations", "seed", "sampling", "store", "min_records"},
}


@dataclass(frozen=True)
class Source:
    kind: str
    path: str | None = None  # store file (kind "store") or where to cache the derived store
    input: str | None = None  # series file or trace folder a store is derived from
    tasks: int | None = None
    realizations: int | None = None
    seed: int | None = None
    sampling: str = "independent"
    daily_amplitude: float = 0.0  # synthetic: common daily pattern (docs/beyond.md)
    min_records: int = 24  # trace sources: the ingest's short-task threshold


@dataclass(frozen=True)
class Instances:
    count: int
    tasks: int
    seed: int


@dataclass(frozen=True)
class SweepConfig:
    path: Path
    source: Source
    instances: Instances
    grid: tuple[tuple[str, tuple], ...]  # (key, values) in column order
    output: str | None = None

    def points(self) -> list[GridPoint]:
        """The grid's product, in SPEC §5 order (keys in column order, values
        in the order the config lists them)."""
        keys = [k for k, _ in self.grid]
        return [GridPoint.make(**dict(zip(keys, combo))) for combo in itertools.product(*(v for _, v in self.grid))]

    def fingerprint(self) -> str:
        """SHA-256 of everything that determines the results (not the
        output path)."""
        source = asdict(self.source)
        if not source["daily_amplitude"]:  # absent = 0: fingerprints of older configs stay valid
            del source["daily_amplitude"]
        payload = {
            "source": source,
            "instances": asdict(self.instances),
            "grid": [[k, list(v)] for k, v in self.grid],
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def load_config(path) -> SweepConfig:
    """Read and validate a sweep config."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: config file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a config file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: invalid TOML ({exc})") from None
    return parse_config(raw, path)


def parse_config(raw: dict, path: Path) -> SweepConfig:
    _keys(raw, {"source", "instances", "grid", "output"}, path, "")
    for table in ("source", "instances", "grid"):
        if table not in raw:
            raise InputError(f"{path}: missing table [{table}]")
        if not isinstance(raw[table], dict):
            raise InputError(f"{path}: '{table}' must be a table")
    source = _source(raw["source"], path)
    inst = raw["instances"]
    _keys(inst, {"count", "tasks", "seed"}, path, "instances.")
    instances = Instances(
        count=_int(inst, "count", path, "instances.", minimum=1),
        tasks=_int(inst, "tasks", path, "instances.", minimum=1),
        seed=_int(inst, "seed", path, "instances.", minimum=0),
    )
    grid_raw = raw["grid"]
    _keys(grid_raw, set(GRID_KEYS), path, "grid.")
    grid = []
    for key, default in GRID_KEYS.items():
        values = grid_raw.get(key, default)
        if not isinstance(values, list):
            raise InputError(f"{path}: grid.{key} must be a list, not {type(values).__name__}")
        if not values:
            raise InputError(f"{path}: grid.{key} is an empty list")
        for v in values:
            _check_grid_value(key, v, path)
        if len(set(map(repr, values))) != len(values):
            raise InputError(f"{path}: grid.{key} lists a value twice")
        grid.append((key, tuple(values)))
    output = None
    if "output" in raw:
        if not isinstance(raw["output"], dict):
            raise InputError(f"{path}: 'output' must be a table")
        _keys(raw["output"], {"path"}, path, "output.")
        output = _str(raw["output"], "path", path, "output.")
    config = SweepConfig(path=path, source=source, instances=instances, grid=tuple(grid), output=output)
    try:
        config.points()  # every grid value validated with the engine's own rules
    except InputError as exc:
        raise InputError(f"{path}: grid: {exc}") from None
    if source.tasks is not None and instances.tasks > source.tasks:
        raise InputError(
            f"{path}: instances.tasks = {instances.tasks} is more than the store's "
            f"{source.tasks} tasks (source.tasks)"
        )
    return config


def _check_grid_value(key, v, path):
    expected = {
        "estimator": (str,), "algorithm": (str,), "data": (str,), "rebalance": (bool,),
        "capacity": (int, float, str), "clairvoyance": (int, float), "headroom": (int, float),
    }[key]
    if isinstance(v, bool) and bool not in expected:
        raise InputError(f"{path}: grid.{key} value {v!r} has the wrong type")
    if key == "capacity" and isinstance(v, str):  # a mixed fleet (docs/beyond.md)
        from .fleet import parse_fleet

        try:
            parse_fleet(v)
        except InputError as exc:
            raise InputError(f"{path}: grid.capacity value {v!r} is not a number or a fleet: {exc}") from None
    if not isinstance(v, expected):
        names = " or ".join(dict.fromkeys(
            "number" if t in (int, float) else {str: "string", bool: "boolean"}[t] for t in expected))
        raise InputError(f"{path}: grid.{key} value {v!r} must be a {names}")


def _source(src: dict, path: Path) -> Source:
    kind = src.get("kind")
    if kind not in SOURCE_KINDS:
        raise InputError(f"{path}: source.kind must be one of {', '.join(SOURCE_KINDS)}, not {kind!r}")
    _keys(src, SOURCE_KINDS[kind], path, "source.")
    if kind == "store":
        return Source(kind="store", path=_str(src, "path", path, "source."))
    sampling = src.get("sampling", "independent")
    if sampling not in ("independent", "paired", "time-aligned"):
        raise InputError(
            f"{path}: source.sampling must be 'independent', 'paired' or 'time-aligned', not {sampling!r}"
        )
    return Source(
        kind=kind,
        path=_str(src, "store", path, "source.") if "store" in src else None,
        input=_str(src, "path", path, "source.") if kind != "synthetic" else None,
        min_records=_int(src, "min_records", path, "source.", minimum=1) if "min_records" in src else 24,
        tasks=_int(src, "tasks", path, "source.", minimum=1),
        realizations=_int(src, "realizations", path, "source.", minimum=2),
        seed=_int(src, "seed", path, "source.", minimum=0),
        sampling=sampling,
        daily_amplitude=_daily_amplitude(src, path) if kind == "synthetic" else 0.0,
    )


def _daily_amplitude(src: dict, path: Path) -> float:
    v = src.get("daily_amplitude", 0.0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1:
        raise InputError(f"{path}: source.daily_amplitude must be a number in [0, 1), not {v!r}")
    return float(v)


def _keys(table: dict, allowed: set, path: Path, prefix: str) -> None:
    for key in table:
        if key not in allowed:
            raise InputError(f"{path}: unknown key '{prefix}{key}' (allowed: {', '.join(sorted(allowed))})")


def _int(table, key, path, prefix, minimum):
    if key not in table:
        raise InputError(f"{path}: missing key '{prefix}{key}'")
    v = table[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"{path}: {prefix}{key} must be an integer, not {v!r}")
    if v < minimum:
        raise InputError(f"{path}: {prefix}{key} must be >= {minimum}, not {v}")
    return v


def _str(table, key, path, prefix):
    if key not in table:
        raise InputError(f"{path}: missing key '{prefix}{key}'")
    v = table[key]
    if not isinstance(v, str) or not v:
        raise InputError(f"{path}: {prefix}{key} must be a non-empty string, not {v!r}")
    return v
