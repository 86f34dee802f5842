"""From a config's ``[source]`` to a store file on disk.

A synthetic source, a series file or a trace folder is turned into a store
once and the store is reused after (a trace folder is first ingested into a
series file, cached too). The cache folder is ``$COLOSIM_CACHE`` or
``~/.cache/colosim``, unless the config names the store's path
(``source.store``, relative to the config file's folder). A cached file is
named after what it was made from — for inputs, their paths, sizes and
modification times — so a changed input makes a new one.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..errors import InputError, parameters_as
from ..io._hdf5 import sha256_file
from ..io.outputs import claim, lock
from ..io.series import open_series
from ..io.store import STORE_KIND, open_store
from ..progress import Progress, no_progress
from .population import MEMORY_VERSION, MODEL_VERSION, PopulationModel, SyntheticPopulation
from .realize import check_store_size, realize

#: the config keys of the library parameters a source's values reach
_SOURCE_KEYS = {"n_tasks": "source.tasks", "n_realizations": "source.realizations", "sampling": "source.sampling",
                "min_records": "source.min_records"}


def cache_dir() -> Path:
    env = os.environ.get("COLOSIM_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "colosim"


def _relative(path: str, config_dir: Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else config_dir / p


def synthetic_store_path(source, config_dir: Path) -> Path:
    if source.store is not None:
        return _relative(source.store, config_dir)
    daily = f"-daily{source.daily_amplitude!r}" if source.daily_amplitude else ""
    memory = f"-mem{MEMORY_VERSION}" if getattr(source, "memory", False) else ""
    name = (
        f"synthetic-v{MODEL_VERSION}-n{source.tasks}-r{source.realizations}"
        f"-s{source.seed}-{source.sampling}{daily}{memory}.h5"
    )
    return cache_dir() / name


def population_source(n_tasks: int, seed: int, daily_amplitude: float = 0.0, memory: bool = False) -> dict:
    """The ``source`` attribute of a store of the built-in population."""
    source = {"kind": "synthetic", "model_version": MODEL_VERSION, "population_tasks": n_tasks, "seed": seed}
    if daily_amplitude:
        source["daily_amplitude"] = daily_amplitude
    if memory:
        source["memory_version"] = MEMORY_VERSION
    return source


def generate_synthetic_store(out, *, n_tasks: int, n_realizations: int, seed: int,
                             sampling: str = "independent", progress: Progress = no_progress,
                             daily_amplitude: float = 0.0, force: bool = False, memory: bool = False) -> None:
    """Realize ``n_tasks`` tasks of the built-in population into a store
    (with a common daily pattern of that amplitude when > 0); an existing
    ``out`` is replaced only with ``force``, and only when it is a store."""
    claim(out, kind=STORE_KIND, force=force)
    if not (isinstance(daily_amplitude, (int, float)) and 0 <= daily_amplitude < 1):
        raise InputError(f"daily_amplitude must be in [0, 1), not {daily_amplitude!r}", param="daily_amplitude")
    check_store_size(out, n_tasks, n_realizations, memory)
    with lock(out, can_wait=False):
        claim(out, kind=STORE_KIND, force=force)  # again, now that no other run can write it
        population = SyntheticPopulation(n_tasks, seed, PopulationModel(daily_amplitude=daily_amplitude))
        realize(population, out, n_tasks=n_tasks, n_realizations=n_realizations, seed=seed, sampling=sampling,
                source=population_source(n_tasks, seed, daily_amplitude, memory), progress=progress, memory=memory)


def _check_store(path: Path, want: dict, found_of) -> None:
    """An existing store is reused only if it is what the source
    describes: ``want`` against ``found_of(store)``."""
    with open_store(path) as store:
        found = found_of(store)
    differ = [f"{k} {found[k]!r} (config: {want[k]!r})" for k in want if found[k] != want[k]]
    if differ:
        raise InputError(f"{path}: exists but is not the store this source describes: "
                         + ", ".join(differ) + "; delete it or name another source.store")


def _made(store, key):
    made = store.attrs.get("source")
    return made.get(key) if isinstance(made, dict) else None


def _store_shape(store) -> dict:
    return {"tasks": store.n_tasks, "realizations": store.n_realizations, "seed": store.seed,
            "sampling": store.attrs.get("sampling")}


def input_identity(path: Path) -> str:
    """A short digest of a file's or folder's (recursive) names, sizes and
    modification times: it changes when any input changes."""
    path = path.resolve()
    if not path.exists():
        raise InputError(f"{path}: source.path not found")
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    listing = [[str(p.relative_to(path.parent)), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
    return hashlib.sha256(json.dumps([str(path), listing]).encode()).hexdigest()[:16]


def _derived_store_path(source, config_dir: Path, identity: str) -> Path:
    """Where the store realized from a series or trace source is kept."""
    if source.store is not None:
        return _relative(source.store, config_dir)
    memory = "-mem" if getattr(source, "memory", False) else ""
    return cache_dir() / (f"{source.kind}-{identity}-n{source.tasks}-r{source.realizations}"
                          f"-s{source.seed}-{source.sampling}{memory}.h5")


def _series_path(source, identity: str) -> Path:
    """Where the series file ingested from a trace source is kept (series
    format 2 with memory, and 3 with Google 2019's window percentiles)."""
    return cache_dir() / f"series-{source.kind}-{identity}-m{source.min_records}-v3.h5"


def _derived_store(source, config_dir: Path, series_path: Path, identity: str, progress: Progress) -> Path:
    """The store realized from a series file (created when missing)."""
    out = _derived_store_path(source, config_dir, identity)
    if out.exists():
        want = {"tasks": source.tasks, "realizations": source.realizations, "seed": source.seed,
                "sampling": source.sampling, "identity": identity}
        if getattr(source, "memory", False):
            want["memory"] = True
        _check_store(out, want, lambda s: {**_store_shape(s), "identity": _made(s, "identity"),
                                           "memory": s.has_memory})
        return out
    made_from = {"kind": source.kind, "identity": identity, "series": str(series_path),
                 "sha256": sha256_file(series_path)}
    with open_series(series_path) as series:
        realize(series, out, n_tasks=source.tasks, n_realizations=source.realizations, seed=source.seed,
                sampling=source.sampling, source=made_from, progress=progress,
                memory=getattr(source, "memory", False))
    return out


def _ingested_series(source, trace: Path, identity: str, progress: Progress) -> Path:
    """The series file ingested from a trace folder (created when missing)."""
    out = _series_path(source, identity)
    if not out.exists():
        if source.kind == "google2011":
            from .google2011 import ingest_google2011  # DuckDB is loaded only for a trace source

            ingest_google2011(trace, out, min_records=source.min_records, progress=progress)
        else:
            from .google2019 import ingest_google2019

            ingest_google2019([trace], out, min_records=source.min_records, progress=progress)
    return out


def source_inputs(source, config_dir: Path) -> list[Path]:
    """The files a config's source reads (the store, series file or trace
    folder it names), known before anything is made: no output of the run
    may be one of them."""
    config_dir = Path(config_dir)
    paths = [_relative(source.path, config_dir)] if getattr(source, "path", None) else []
    if getattr(source, "store", None):
        paths.append(_relative(source.store, config_dir))
    return paths


def resolve_store(source, config_dir: Path, progress: Progress = no_progress, config_path=None) -> Path:
    """Path of the store a config's source denotes, made (and cached) when
    missing. Library errors name the config's keys (and the config file,
    ``config_path``)."""
    with parameters_as(_SOURCE_KEYS, prefix=f"{config_path}: " if config_path is not None else ""):
        return _resolve(source, Path(config_dir), progress)


def _resolve(source, config_dir: Path, progress: Progress) -> Path:
    if source.kind == "store":
        p = _relative(source.path, config_dir)
        if not p.exists():
            raise InputError(f"{p}: store file not found (source.path)")
        return p
    if source.kind == "synthetic":
        p = synthetic_store_path(source, config_dir)
        if not p.exists():
            generate_synthetic_store(p, n_tasks=source.tasks, n_realizations=source.realizations,
                                     seed=source.seed, sampling=source.sampling,
                                     daily_amplitude=source.daily_amplitude, progress=progress,
                                     memory=getattr(source, "memory", False))
        else:
            want = {"kind": "synthetic", "model_version": MODEL_VERSION, "tasks": source.tasks,
                    "realizations": source.realizations, "seed": source.seed, "sampling": source.sampling,
                    "daily_amplitude": source.daily_amplitude}
            if getattr(source, "memory", False):
                want.update(memory=True, memory_version=MEMORY_VERSION)
            _check_store(p, want, lambda s: {
                **_store_shape(s), "kind": _made(s, "kind"), "model_version": _made(s, "model_version"),
                "daily_amplitude": _made(s, "daily_amplitude") or 0.0, "memory": s.has_memory,
                "memory_version": _made(s, "memory_version")})
        return p
    given = _relative(source.path, config_dir)
    identity = input_identity(given)
    series = given if source.kind == "series" else _ingested_series(source, given, identity, progress)
    return _derived_store(source, config_dir, series, identity, progress)


def planned_store(source, config_dir: Path) -> tuple[Path, bool, list[str]]:
    """Where the store of a config's source is, or would be made, without
    making anything: ``(path, exists, steps)``, ``steps`` being what a sweep
    would do first to make it (ingest, realize)."""
    config_dir = Path(config_dir)
    if source.kind == "store":
        p = _relative(source.path, config_dir)
        if not p.exists():
            raise InputError(f"{p}: store file not found (source.path)")
        return p, True, []
    if source.kind == "synthetic":
        p = synthetic_store_path(source, config_dir)
        return p, p.exists(), ([] if p.exists() else ["realize the built-in population"])
    given = _relative(source.path, config_dir)
    identity = input_identity(given)
    p = _derived_store_path(source, config_dir, identity)
    steps = []
    if not p.exists():
        if source.kind != "series" and not _series_path(source, identity).exists():
            steps.append(f"ingest {given} ({source.kind})")
        steps.append("realize the series into a store")
    return p, p.exists(), steps
