"""From a config's ``[source]`` to a store file on disk.

A synthetic source is realized once into a cached store and reused after;
the cache folder is ``$COLOSIM_CACHE`` or ``~/.cache/colosim``, unless the
config names the store's path (``source.store``, relative to the config
file's folder).
"""

from __future__ import annotations

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
    raise InputError(f"unknown source kind {source.kind!r}")  # pragma: no cover (config validates)
