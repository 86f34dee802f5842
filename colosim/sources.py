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

from .config import Source
from .errors import InputError


def cache_dir() -> Path:
    env = os.environ.get("COLOSIM_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "colosim"


def synthetic_store_path(source: Source, config_dir: Path) -> Path:
    if source.path is not None:
        p = Path(source.path)
        return p if p.is_absolute() else config_dir / p
    from .trace.synthetic import MODEL_VERSION

    daily = f"-daily{source.daily_amplitude!r}" if source.daily_amplitude else ""
    name = (
        f"synthetic-v{MODEL_VERSION}-n{source.tasks}-r{source.realizations}"
        f"-s{source.seed}-{source.sampling}{daily}.h5"
    )
    return cache_dir() / name


def generate_synthetic_store(out, *, n_tasks: int, n_realizations: int, seed: int,
                             sampling: str = "independent", progress=None, daily_amplitude: float = 0.0) -> None:
    """Realize ``n_tasks`` tasks of the built-in population into a store
    (with a common daily pattern of that amplitude when > 0)."""
    from .realize import realize
    from .trace.synthetic import MODEL_VERSION, PopulationModel, SyntheticPopulation

    population = SyntheticPopulation(n_tasks, seed, PopulationModel(daily_amplitude=daily_amplitude))
    source = {"kind": "synthetic", "model_version": MODEL_VERSION, "population_tasks": n_tasks, "seed": seed}
    if daily_amplitude:
        source["daily_amplitude"] = daily_amplitude
    realize(population, out, n_tasks=n_tasks, n_realizations=n_realizations, seed=seed,
            sampling=sampling, source=source, progress=progress)


def check_synthetic_store(path: Path, source: Source) -> None:
    """An existing store is reused only if it is what ``source`` describes."""
    from .io.store import open_store
    from .trace.synthetic import MODEL_VERSION

    with open_store(path) as store:
        made = store.attrs.get("source") or {}
        found = {
            "kind": made.get("kind") if isinstance(made, dict) else None,
            "model_version": made.get("model_version") if isinstance(made, dict) else None,
            "tasks": store.n_tasks, "realizations": store.n_realizations,
            "seed": store.seed, "sampling": store.attrs.get("sampling"),
            "daily_amplitude": made.get("daily_amplitude", 0.0) if isinstance(made, dict) else None,
        }
    want = {"kind": "synthetic", "model_version": MODEL_VERSION, "tasks": source.tasks,
            "realizations": source.realizations, "seed": source.seed, "sampling": source.sampling,
            "daily_amplitude": source.daily_amplitude}
    differ = [f"{k} {found[k]!r} (config: {want[k]!r})" for k in want if found[k] != want[k]]
    if differ:
        raise InputError(f"{path}: exists but is not the store this source describes: "
                         + ", ".join(differ) + "; delete it or name another source.store")


def input_identity(path: Path) -> str:
    """A short digest of a file's or folder's (recursive) names, sizes and
    modification times: it changes when any input changes."""
    path = path.resolve()
    if not path.exists():
        raise InputError(f"{path}: source.path not found")
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    listing = [[str(p.relative_to(path.parent)), p.stat().st_size, p.stat().st_mtime_ns] for p in files]
    return hashlib.sha256(json.dumps([str(path), listing]).encode()).hexdigest()[:16]


def _derived_store(source: Source, config_dir: Path, series_path: Path, identity: str, progress_factory) -> Path:
    """The store realized from a series file (created when missing)."""
    from .io import open_series
    from .io._hdf5 import sha256_file
    from .realize import realize

    if source.path is not None:
        out = Path(source.path) if Path(source.path).is_absolute() else config_dir / source.path
    else:
        out = cache_dir() / (f"{source.kind}-{identity}-n{source.tasks}-r{source.realizations}"
                             f"-s{source.seed}-{source.sampling}.h5")
    made_from = {"kind": source.kind, "identity": identity}
    if out.exists():
        from .io.store import open_store

        with open_store(out) as store:
            made = store.attrs.get("source") or {}
            found = {"tasks": store.n_tasks, "realizations": store.n_realizations, "seed": store.seed,
                     "sampling": store.attrs.get("sampling"),
                     "identity": made.get("identity") if isinstance(made, dict) else None}
        want = {"tasks": source.tasks, "realizations": source.realizations, "seed": source.seed,
                "sampling": source.sampling, "identity": identity}
        differ = [f"{k} {found[k]!r} (config: {want[k]!r})" for k in want if found[k] != want[k]]
        if differ:
            raise InputError(f"{out}: exists but is not the store this source describes: "
                             + ", ".join(differ) + "; delete it or name another source.store")
        return out
    series = open_series(series_path)
    made_from.update(series=str(series_path), sha256=sha256_file(series_path))
    progress = progress_factory(f"realizing {out.name}", source.tasks) if progress_factory else None
    realize(series, out, n_tasks=source.tasks, n_realizations=source.realizations, seed=source.seed,
            sampling=source.sampling, source=made_from, progress=progress)
    return out


def _ingested_series(source: Source, trace: Path, identity: str) -> Path:
    """The series file ingested from a trace folder (created when missing)."""
    out = cache_dir() / f"series-{source.kind}-{identity}-m{source.min_records}.h5"
    if not out.exists():
        if source.kind == "google2011":
            from .trace.google2011 import ingest_google2011

            ingest_google2011(trace, out, min_records=source.min_records)
        else:
            from .trace.google2019 import ingest_google2019

            ingest_google2019([trace], out, min_records=source.min_records)
    return out


def resolve_store(source: Source, config_dir: Path, progress_factory=None) -> Path:
    """Path of the store a source denotes, creating a synthetic one when
    missing."""
    if source.kind == "store":
        p = Path(source.path)
        p = p if p.is_absolute() else config_dir / p
        if not p.exists():
            raise InputError(f"{p}: store file not found (source.path)")
        return p
    if source.kind == "synthetic":
        p = synthetic_store_path(source, config_dir)
        if not p.exists():
            progress = progress_factory(f"generating {p.name}", source.tasks) if progress_factory else None
            generate_synthetic_store(p, n_tasks=source.tasks, n_realizations=source.realizations,
                                     seed=source.seed, sampling=source.sampling,
                                     daily_amplitude=source.daily_amplitude,
                                     progress=progress)
        else:
            check_synthetic_store(p, source)
        return p
    if source.kind in ("series", "google2011", "google2019"):
        given = Path(source.input)
        given = given if given.is_absolute() else config_dir / given
        identity = input_identity(given)
        series = given if source.kind == "series" else _ingested_series(source, given, identity)
        return _derived_store(source, config_dir, series, identity, progress_factory)
    raise InputError(f"unknown source kind {source.kind!r}")  # pragma: no cover (config validates)
