"""``colosim sweep CONFIG --dry-run``: what a sweep would do, and roughly
how long it would take, without doing any of it (nothing is read beyond the
config and the files' metadata, nothing is written).

The time is a rough estimate from this project's benchmarks on a 2-core
machine (README, "Performance"): an instance of 1,000 tasks at R = 10,000
on the 4,480 points of the full paper grid takes about 1.9 s, and the time
grows as (grid points)^0.66, tasks^1.08 and R^0.74 (the growth benchmark's
fits), plus about 0.02 s per instance of fixed cost, plus reading the
instances' rows from disk; a store is written at about 235 MB/s and read
back at least as fast; the first run compiles the kernels.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..config import load_config
from ..resources import _human
from ..sources.resolve import planned_store, source_inputs
from ..terminal import COMPILE_SECONDS
from .sweep import claim_outputs, default_output

#: The growth benchmark's fits (README, "Performance"), on 2 cores.
_INSTANCE_SECONDS = 1.92  # 1,000 tasks, R = 10,000, 4,480 grid points
_POINTS, _TASKS, _R = 4480, 1000, 10_000
_EXPONENTS = {"points": 0.66, "tasks": 1.08, "realizations": 0.74}
_FIXED_SECONDS = 0.02  # per instance, measured on the quickstart
_WRITE_BYTES_PER_S = 235e6
_READ_BYTES_PER_S = 235e6  # the same disk, read back (a lower bound on its speed)


@dataclass(frozen=True)
class DryRun:
    """What ``colosim sweep`` would do for one config."""

    config: Path
    out: Path
    points: int
    instances: int
    tasks: int
    realizations: int
    store: Path
    store_exists: bool
    store_steps: list
    store_bytes: int
    free_disk: int
    uncompiled: int | None
    seconds: float

    def lines(self) -> list[str]:
        store = ("exists" if self.store_exists else
                 f"would be made ({'; '.join(self.store_steps)}): {self.store_bytes_text}, "
                 f"{_human(self.free_disk)} free there")
        kernels = ("unknown whether kernels need compiling" if self.uncompiled is None else
                   f"{self.uncompiled} kernels not yet compiled (compiled on first use, then cached)"
                   if self.uncompiled else "every kernel compiled (in Numba's cache)")
        return [
            f"config: {self.config}",
            f"grid: {self.points:,} points x {self.instances:,} instances of {self.tasks:,} tasks "
            f"= {self.points * self.instances:,} packings and evaluations",
            f"store: {self.store} ({self.realizations:,} realizations per task), {store}",
            f"kernels: {kernels}",
            f"results: {self.out}",
            f"estimated time: about {_duration(self.seconds)} on 2 cores (rough: from the benchmarks' growth fits)"
            + (f", plus up to {COMPILE_SECONDS} s if the sweep needs kernels not yet compiled"
               if self.uncompiled else ""),
            "nothing was written (--dry-run)",
        ]

    @property
    def store_bytes_text(self) -> str:
        return _human(self.store_bytes)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_seconds(points: int, instances: int, tasks: int, realizations: int) -> float:
    """A sweep's rough time on 2 cores, warm (see the module's text)."""
    scale = ((points / _POINTS) ** _EXPONENTS["points"] * (tasks / _TASKS) ** _EXPONENTS["tasks"]
             * (realizations / _R) ** _EXPONENTS["realizations"])
    return instances * (_FIXED_SECONDS + _INSTANCE_SECONDS * scale)


def dry_run(config_path, *, out=None) -> DryRun:
    """What ``sweep_file(config_path, out=out)`` would do; checks the config
    and the output exactly as a sweep does, writes nothing."""
    config = load_config(config_path)
    out = Path(out) if out is not None else default_output(config)
    claim_outputs(out, [config.path, *source_inputs(config.source, config.path.parent)])
    store, exists, steps = planned_store(config.source, config.path.parent)
    if exists:
        from ..io.store import open_store

        n_tasks, n_realizations = (int(v) for v in open_store(store).x.shape)
    else:
        n_tasks, n_realizations = config.source.tasks, config.source.realizations
    memory = bool(getattr(config.source, "memory", False))
    nbytes = (3 if memory else 2) * 4 * n_tasks * n_realizations  # x, y (and memory), float32
    folder = store.parent
    while not folder.exists():
        folder = folder.parent
    uncompiled = uncompiled_kernels()
    seconds = estimate_seconds(len(config.points), config.instances.count, config.instances.tasks, n_realizations)
    # reading each instance's rows from disk (less when the store is in the page cache)
    avg = any(p.data == "avg" for p in config.points)
    read = 1 + avg + any(p.memory for p in config.points)
    seconds += config.instances.count * config.instances.tasks * n_realizations * 4 * read / _READ_BYTES_PER_S
    if not exists:
        seconds += nbytes / _WRITE_BYTES_PER_S
    return DryRun(config=config.path, out=out, points=len(config.points), instances=config.instances.count,
                  tasks=config.instances.tasks, realizations=n_realizations, store=store, store_exists=exists,
                  store_steps=steps, store_bytes=nbytes, free_disk=shutil.disk_usage(folder).free,
                  uncompiled=uncompiled, seconds=seconds)


def uncompiled_kernels() -> int | None:
    """How many of colosim's kernels have no compiled code in Numba's cache
    yet (each is compiled on its first call, then loaded from the cache);
    ``None`` when Numba's cache cannot be inspected."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    from .. import kernels

    missing = 0
    try:
        for info in pkgutil.iter_modules(kernels.__path__):
            module = importlib.import_module(f"{kernels.__name__}.{info.name}")
            for value in vars(module).values():
                if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__:
                    cache = getattr(value, "_cache", None)
                    if cache is None or not cache._cache_file._load_index():
                        missing += 1
    except Exception:  # numba's cache layout is not public: an unknown answer, never an error
        return None
    return missing
