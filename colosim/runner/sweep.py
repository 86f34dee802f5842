"""Sweeps: every grid point on every instance (SPEC §5–6), results as CSV.

Rows are ordered by instance, then by the grid's product order; the same
inputs give the same bytes, whatever the backend or thread count.

The unit of work is one instance (all grid points: statistics, items and
evaluations are shared between them). Each finished unit is checkpointed at
once (:mod:`colosim.io.checkpoints`), so an interrupted sweep — Ctrl-C or a
killed process — resumes where it stopped when the same command is run
again; the parts are assembled into the results table at the end
(:mod:`colosim.io.results`), whose sidecar records the fingerprint of the
config and the store. Rerunning a finished sweep recomputes nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import numbers
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import streams
from .._version import __version__
from ..analysis.summary import summarize, summary_text
from ..config import CONFIG_SCHEMA, SweepConfig, load_config, packs_memory
from ..engine import instance_metrics
from ..errors import InputError
from ..io import checkpoints, outputs, results
from ..io.atomic import atomic_path, write_text_atomic
from ..io.results import GRID_KEYS, METRICS
from ..io.store import Store, open_store
from ..model.grid import GridPoint, check_row, evaluation_columns, extra_columns, observation_split
from ..progress import Progress, no_progress
from ..resources import check_memory
from ..sources.resolve import resolve_store, source_inputs
from . import backends


@dataclass
class SweepResult:
    """A sweep's rows, where they are, how long they took (0 when nothing
    was computed), and their summary per grid point with 95% intervals
    (:func:`colosim.analysis.summary.summarize`), written beside them."""

    rows: list[dict]
    out: Path
    elapsed: float
    computed: bool
    summary: list[dict]
    realizations: int
    #: instances whose checkpoint did not match its record, computed again
    discarded: list[int] = dataclasses.field(default_factory=list)


class Interrupted(Exception):
    """A sweep stopped by Ctrl-C; its finished instances are checkpointed."""

    def __init__(self, done: int, total: int, parts: Path):
        super().__init__(f"interrupted after {done} of {total} instances (checkpoints in {parts})")
        self.done, self.total, self.parts = done, total, parts


def instance_rows(seed: int, k: int, n_store: int, n_tasks: int) -> np.ndarray:
    """Store rows of instance k (SPEC §6), in the order drawn."""
    return streams.instance(seed, k).choice(n_store, n_tasks, replace=False)


@functools.lru_cache(maxsize=8)
def _points(config: SweepConfig) -> tuple[list[GridPoint], tuple[str, ...]]:
    points = config.points
    return points, extra_columns(points)


@functools.lru_cache(maxsize=8)
def _keys(config: SweepConfig) -> list[tuple]:
    """Each grid point's keys as the results table holds them."""
    return [p.keys() for p in _points(config)[0]]


def instance_results(config: SweepConfig, store: Store, k: int) -> list[tuple]:
    """The results rows of instance k: every grid point, in product order."""
    points, _ = _points(config)
    index = instance_rows(config.instances.seed, k, store.n_tasks, config.instances.tasks)
    x = store.rows(index, "x")
    y = store.rows(index, "y") if any(p.data == "avg" for p in points) else None
    memory = store.rows(index, "memory") if any(p.memory for p in points) else None
    r = store.n_realizations
    return [(k, *keys, *met.row(), r, evaluation_columns(p.clairvoyance, r), *met.extras(results.EXTRA_COLUMNS))
            for p, keys, met in zip(points, _keys(config), instance_metrics(x, y, points, memory=memory))]


@functools.lru_cache(maxsize=4)
def _store_at(path: str) -> Store:
    return open_store(path)


def compute_instance(config: SweepConfig, store_path, k: int) -> list[tuple]:
    """:func:`instance_results` with the store opened by path (once per
    process): the unit of work sent to other processes."""
    return instance_results(config, _store_at(str(store_path)), k)


def columns(config: SweepConfig) -> tuple[str, ...]:
    """The header of a config's results."""
    return results.header()


def check_against_store(config: SweepConfig, store: Store) -> None:
    """Errors that need the store's shape: instance size, clairvoyance."""
    if config.instances.tasks > store.n_tasks:
        raise InputError(
            f"{config.path}: instances.tasks = {config.instances.tasks} is more than the "
            f"{store.n_tasks} tasks of store {store.path}"
        )
    for cl in dict(config.grid)["clairvoyance"]:
        try:
            observation_split(cl, store.n_realizations)
        except InputError as exc:
            raise InputError(f"{config.path}: grid.{exc}") from None
    if packs_memory(config.grid) and not getattr(store, "has_memory", False):
        raise InputError(f"{config.path}: the grid packs memory (grid.memory_capacity or machine shapes in "
                         f"grid.capacity) but store {store.path} has no memory realizations")


def _now() -> str:
    """The time now, ISO 8601 in UTC, to the second."""
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _store_identity(store: Store) -> dict:
    return {"shape": list(store.x.shape), "attrs": {k: v for k, v in store.attrs.items() if k != "colosim_version"}}


def store_fingerprint(store: Store) -> str:
    """SHA-256 of the store's identity: shape, seed, sampling, source with its checksum."""
    return results.fingerprint(_store_identity(store))


def fingerprint(config: SweepConfig, store: Store) -> str:
    """What determines the results: the config (not its output path) and the
    store's identity (shape, seed, sampling, source with its checksum)."""
    identity = _store_identity(store)
    return results.fingerprint({"config": config.fingerprint(), "store": identity,
                                "results_schema": results.RESULTS_SCHEMA})


def read_results(path) -> list[dict]:
    """A results table's typed rows, every grid key checked."""
    return results.read_results(path, check_point=check_row)


def default_output(config: SweepConfig) -> Path:
    """``[output] path``, relative to the config's folder like every path of a
    config; without it ``results/CONFIG.csv`` in the working directory."""
    if config.output:
        return config.path.parent / Path(config.output).expanduser()
    return Path("results") / f"{config.path.stem}.csv"


@contextlib.contextmanager
def deferred_interrupt():
    """While a sweep runs, the first Ctrl-C (or SIGTERM) only asks it to stop after the
    instance in progress (whose checkpoint is then written); a second one
    stops at once. A signal never lands inside a compiled kernel, where it
    would surface as an error instead of an interruption."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)


def _refusal(out: Path, state: str) -> InputError:
    meta = results.read_meta(out)
    why = "holds results of another config or store, or of an unfinished run"
    if state == "damaged":
        why = ("does not match the row count and checksum its sidecar records (cut or edited since the sweep "
               "wrote it)")
    elif meta is not None and meta.get("config_schema") != CONFIG_SCHEMA:
        why = f"holds results of an earlier colosim (config schema {meta.get('config_schema', 1)})"
    elif meta is not None and meta.get("results_schema", 1) != results.RESULTS_SCHEMA:
        why = f"holds results of an earlier colosim (results schema {meta.get('results_schema', 1)})"
    elif meta is not None and "sha256" not in meta:
        why = "holds results of an earlier colosim (no checksum in its sidecar)"
    elif not out.exists():
        why = "has no results beside its sidecar or summary"
    return InputError(f"{out}: {why}; pass --force to replace them, or choose another --out")


def claim_outputs(out, inputs: list) -> Path:
    """Check every file a sweep writes before any work
    (:func:`colosim.io.outputs.claim`): the results, their sidecar and
    summary, and the checkpoint folder. None may be an input of the sweep
    (``inputs``: the config, the store, what the store is made from), a
    directory, or a file of another kind."""
    out = outputs.claim(out, kind=results.RESULTS_KIND, inputs=inputs, force=True)
    outputs.claim(results.meta_path(out), kind=results.META_KIND, inputs=inputs, force=True)
    outputs.claim(results.summary_path(out), kind=results.SUMMARY_KIND, inputs=inputs, force=True)
    for given in inputs:
        if _inside(given, checkpoints.parts_dir(out)):
            raise InputError(f"--out {out}: its checkpoint folder holds the input {given}; choose another --out")
    checkpoints.check(out)
    return out


def _inside(path, folder: Path) -> bool:
    try:
        return Path(path).resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def check_resources(config: SweepConfig, store: Store) -> None:
    """The rows of a sweep are held in memory at its end: refuse a grid
    that would not fit (about 1 kB a row), before any work."""
    rows = config.instances.count * len(config.points)
    check_memory(rows * 1024, f"{config.path}: {config.instances.count} instances x {len(config.points)} "
                              f"grid points ({rows:_} rows)")
    n = config.instances.tasks * store.n_realizations * 4 * (3 if packs_memory(config.grid) else 2)
    check_memory(n, f"{config.path}: an instance of {config.instances.tasks} tasks x {store.n_realizations} "
                    "realizations")


def sweep(config: SweepConfig, store_path: Path, out: Path, *, force: bool = False,
          progress: Progress = no_progress, backend: str = "local", scheduler: str | None = None,
          workers: int = 2, wait: bool = False) -> SweepResult:
    """Run (or resume, or reuse) a sweep and write its results.

    ``progress`` (:mod:`colosim.progress`) is started once every input has
    been checked, in instances. ``backend`` is ``"local"`` (this process,
    Numba threads) or ``"dask"`` (``scheduler`` address, or a local cluster
    of ``workers`` processes when None). Another run writing ``out`` is an
    error, or with ``wait`` waited for.
    """
    backends.check_backend(backend, scheduler)
    out = claim_outputs(out, [config.path, Path(store_path)])
    with open_store(store_path) as store:
        fp = fingerprint(config, store)
        check_against_store(config, store)
        check_resources(config, store)
        with outputs.lock(out, wait=wait):
            return _sweep(config, store, out, fp, force, progress, backend, scheduler, workers)


def _finite(rows) -> bool:
    first = len(GRID_KEYS) + 1
    return all(all(isinstance(v, numbers.Real) and math.isfinite(v) for v in r[first:first + len(METRICS)])
               for r in rows)


def _sweep(config, store, out, fp, force, progress, backend, scheduler, workers) -> SweepResult:
    state = results.status(out, fp)
    if state == "finished" and not force:
        rows = read_results(out)
        return SweepResult(rows, out, 0.0, False, _write_summary(out, rows, store.n_realizations),
                           store.n_realizations, [])
    taken = [p for p in (out, results.meta_path(out), results.summary_path(out)) if p.exists()]
    if taken and not force:
        raise _refusal(out, state)
    parts, created = checkpoints.prepare(out, fp, force=force)
    total = config.instances.count
    per_instance = len(config.points)
    todo, discarded = checkpoints.missing(parts, total, fp, per_instance)
    written: list[int] = []
    advance = progress(f"sweep {config.path.name}", total)
    if total > len(todo):
        advance(total - len(todo))
    t0 = time.perf_counter()
    started = _now()
    done = total - len(todo)

    def finish(k, rows):
        nonlocal done
        if len(rows) != per_instance or not _finite(rows):
            raise InputError(f"{store.path}: instance {k} gives metrics that are not finite numbers "
                             "(does the store hold NaN or infinite values? `colosim info` scans it)")
        checkpoints.write_part(parts, k, results.csv_text(rows, columns(config), with_header=False), fp)
        written.append(k)
        done += 1
        advance(1)
        if stop.is_set():
            raise KeyboardInterrupt

    if backend == "local":
        work = functools.partial(instance_results, config, store)
    else:
        work = functools.partial(compute_instance, config, str(store.path))
    try:
        with deferred_interrupt() as stop:
            backends.run(backend, work, todo, finish, scheduler=scheduler, workers=workers)
    except KeyboardInterrupt:
        raise Interrupted(done, total, parts) from None
    except InputError:
        # exit 2 means nothing was created: drop what this run added
        if created:
            checkpoints.remove(parts)
        else:
            for k in written:
                checkpoints.discard(parts, k)
        raise
    elapsed = time.perf_counter() - t0
    header = results.csv_text([], columns(config))
    text = header + checkpoints.joined(parts, total, fp, per_instance)
    with atomic_path(out) as tmp:
        tmp.write_text(text, encoding="utf-8")
        try:
            rows = read_results(tmp)
        except InputError as exc:
            raise InputError(f"{out}: the joined checkpoints are not a valid results table "
                             f"({str(exc).removeprefix(str(tmp) + ': ')})") from None
        digest = results.sha256_text_file(tmp)
    results.write_meta(out, {
        **results.provenance(),
        "started": started,
        "finished": _now(),
        "complete": True,
        "config": {"path": str(config.path), "fingerprint": config.fingerprint(), "parsed": config.effective()},
        "config_schema": CONFIG_SCHEMA,
        "config_fingerprint": config.fingerprint(),
        "results_schema": results.RESULTS_SCHEMA,
        "fingerprint": fp,
        "store": {"path": str(store.path), "fingerprint": store_fingerprint(store)},
        "store_attrs": store.attrs,
        "rows": len(rows),
        "sha256": digest,
        "realizations": store.n_realizations,
        "instances": dataclasses.asdict(config.instances),
        "elapsed_seconds": round(elapsed, 3),
        "colosim_version": __version__,
        "numpy_version": np.__version__,
    })
    checkpoints.remove(parts)
    summary = _write_summary(out, rows, store.n_realizations)
    return SweepResult(rows, out, elapsed, True, summary, store.n_realizations, discarded)


def _write_summary(out: Path, rows: list[dict], realizations: int) -> list[dict]:
    """The summary per grid point, written to ``OUT.summary.csv`` (a pure
    function of the rows, so rewriting it is always safe)."""
    summary = summarize(rows, realizations)
    write_text_atomic(results.summary_path(out), summary_text(summary))
    return summary


def sweep_file(config_path, *, out=None, force: bool = False, progress: Progress = no_progress,
               backend: str = "local", scheduler: str | None = None, workers: int = 2,
               wait: bool = False) -> SweepResult:
    """Load a config, make (or reuse) its store, and :func:`sweep` it into
    ``out`` (default: the config's ``[output] path``, else
    ``results/CONFIG.csv``)."""
    backends.check_backend(backend, scheduler)
    config = load_config(config_path)
    out = Path(out) if out is not None else default_output(config)
    claim_outputs(out, [config.path, *source_inputs(config.source, config.path.parent)])  # before any store is made
    store_path = resolve_store(config.source, config.path.parent, progress, config_path=config.path)
    return sweep(config, store_path, out, force=force, progress=progress, backend=backend,
                 scheduler=scheduler, workers=workers, wait=wait)
