"""Sweeps: every grid point on every instance (SPEC §5–6), results as CSV.

Rows are ordered by instance, then by the grid's product order; the same
inputs give the same bytes, whatever the backend or thread count.

The unit of work is one instance (all grid points: statistics, items and
evaluations are shared between them). Each finished unit is checkpointed at
once in ``results.csv.parts/`` (one file per instance, written atomically),
so an interrupted sweep — Ctrl-C or a killed process — resumes where it
stopped when the same command is run again; the parts are assembled into
``results.csv`` at the end and removed. Next to ``results.csv`` a
``results.csv.json`` records the config's fingerprint, the store's
provenance and the versions;
rerunning a finished sweep with the same config recomputes nothing.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import io
import json
import shutil
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._version import __version__
from .config import SweepConfig
from .errors import InputError
from .beyond import extra_columns, extra_values
from .experiment import METRICS, GridPoint, instance_metrics, observation_split
from .fleet import parse_fleet
from .io.atomic import write_text_atomic
from .io.store import Store, open_store

COLUMNS = ("instance", "estimator", "algorithm", "capacity", "clairvoyance", "data", "rebalance",
           "headroom") + METRICS


def instance_rows(seed: int, k: int, n_store: int, n_tasks: int) -> np.ndarray:
    """Store rows of instance k (SPEC §6), in the order drawn."""
    return np.random.default_rng([seed, k]).choice(n_store, n_tasks, replace=False)


def format_value(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, np.integer):
        return str(int(v))
    return str(v)


def point_keys(p: GridPoint) -> tuple:
    capacity = p.capacity if isinstance(p.capacity, float) else str(p.capacity)  # a fleet's spec
    return (p.estimator.spec, p.algorithm, capacity, p.clairvoyance, p.data, p.rebalance, p.headroom)


@dataclass
class SweepResult:
    rows: list[tuple]
    elapsed: float
    computed: bool


def check_against_store(config: SweepConfig, store: Store) -> None:
    """Errors that need the store's shape: instance size, clairvoyance."""
    if config.instances.tasks > store.n_tasks:
        raise InputError(
            f"{config.path}: instances.tasks = {config.instances.tasks} is more than the "
            f"{store.n_tasks} tasks of store {store.path}"
        )
    for cl in dict(config.grid)["clairvoyance"]:
        try:
            observation_split(float(cl), store.n_realizations)
        except InputError as exc:
            raise InputError(f"{config.path}: grid.{exc}") from None


_OPEN_STORES: dict[str, Store] = {}


def _store(path) -> Store:
    """A per-process cache of open stores (workers open the store by path)."""
    key = str(path)
    if key not in _OPEN_STORES:
        _OPEN_STORES[key] = open_store(path)
    return _OPEN_STORES[key]


@functools.lru_cache(maxsize=8)
def _points(config: SweepConfig) -> list:
    return config.points()


def compute_instance(config: SweepConfig, store_path, k: int) -> list[tuple]:
    """The results rows of instance k: every grid point, in product order."""
    store = _store(store_path)
    points = _points(config)
    index = instance_rows(config.instances.seed, k, store.n_tasks, config.instances.tasks)
    x = store.rows(index, "x")
    y = store.rows(index, "y") if any(p.data == "avg" for p in points) else None
    extra = extra_columns(points)
    return [(k,) + point_keys(p) + met.row() + extra_values(met, extra)
            for p, met in zip(points, instance_metrics(x, y, points))]


def run_sweep(config: SweepConfig, store: Store, progress=None) -> list[tuple]:
    """All rows of the results table (SPEC §5), in memory, no checkpoints."""
    check_against_store(config, store)
    _OPEN_STORES[str(store.path)] = store
    rows = []
    for k in range(config.instances.count):
        rows.extend(compute_instance(config, store.path, k))
        if progress is not None:
            progress(1)
    return rows


def columns(config: SweepConfig | None = None) -> tuple[str, ...]:
    """The header of a config's results: SPEC §5's columns, then the extra
    columns of docs/beyond.md when its grid needs them."""
    return COLUMNS + (extra_columns(config.points()) if config is not None else ())


def rows_to_csv(rows: list[tuple], header: tuple[str, ...] = COLUMNS) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow([format_value(v) for v in r])
    return buf.getvalue()


def read_results(path) -> list[dict]:
    """Rows of a results CSV as dicts of typed values."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None or list(reader.fieldnames[: len(COLUMNS) - len(METRICS)]) != list(
                COLUMNS[: len(COLUMNS) - len(METRICS)]
            ):
                raise InputError(f"{path}: not a colosim results table (unexpected header)")
            out = []
            for line, rec in enumerate(reader, start=2):
                try:
                    out.append(_typed(rec))
                except (KeyError, ValueError, TypeError):
                    raise InputError(f"{path}: line {line}: malformed row") from None
            return out
    except FileNotFoundError:
        raise InputError(f"{path}: results file not found") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None


def _typed(rec: dict) -> dict:
    out = dict(rec)
    for key in ("instance", "m_abs", "m_norm", "oversize"):
        out[key] = int(rec[key])
    for key in ("clairvoyance", "headroom", "m", "q", "q_max", "severity"):
        out[key] = float(rec[key])
    # a number, or a fleet spec "C:SHARE,..." (docs/beyond.md)
    out["capacity"] = str(parse_fleet(rec["capacity"])) if ":" in rec["capacity"] else float(rec["capacity"])
    if "calibrated_rho" in rec:
        out["calibrated_rho"] = float(rec["calibrated_rho"]) if rec["calibrated_rho"] else None
    if "m_abs_by_type" in rec:
        text = rec["m_abs_by_type"]
        out["m_abs_by_type"] = tuple(int(v) for v in text.split(";")) if text else ()
        text = rec["q_by_type"]
        out["q_by_type"] = tuple(float(v) for v in text.split(";")) if text else ()
    if rec["rebalance"] not in ("true", "false"):
        raise ValueError(rec["rebalance"])
    out["rebalance"] = rec["rebalance"] == "true"
    return out


def meta_path(out: Path) -> Path:
    return out.with_name(out.name + ".json")


def fingerprint(config: SweepConfig, store: Store) -> str:
    """What determines the results: the config (not its output path) and the
    store's identity (shape, seed, sampling, source with its checksum)."""
    identity = {"shape": list(store.x.shape), "attrs": {k: v for k, v in store.attrs.items()
                                                         if k not in ("colosim_version",)}}
    text = config.fingerprint() + json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def finished(config: SweepConfig, out: Path, store_fingerprint: str | None = None) -> bool:
    """Whether ``out`` already holds this config's complete results."""
    mp = meta_path(out)
    if not out.exists() or not mp.exists():
        return False
    try:
        meta = json.loads(mp.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    want = store_fingerprint if store_fingerprint is not None else config.fingerprint()
    return meta.get("fingerprint") == want and meta.get("complete") is True


def write_results(config: SweepConfig, store: Store, out: Path, rows: list[tuple], elapsed: float) -> None:
    """Write the CSV, then its metadata, each atomically."""
    write_text_atomic(out, rows_to_csv(rows, columns(config)))
    _write_meta(config, store, out, len(rows), elapsed)


def _write_meta(config: SweepConfig, store: Store, out: Path, n_rows: int, elapsed: float) -> None:
    meta = {
        "format": "colosim-results",
        "complete": True,
        "config": str(config.path),
        "fingerprint": fingerprint(config, store),
        "store": str(store.path),
        "store_attrs": store.attrs,
        "rows": n_rows,
        "elapsed_seconds": round(elapsed, 3),
        "colosim_version": __version__,
        "numpy_version": np.__version__,
    }
    write_text_atomic(meta_path(out), json.dumps(meta, indent=2, sort_keys=True) + "\n")


def summarize(rows: list[dict]) -> list[dict]:
    """Mean and quartiles of m and q over instances, per grid point (in the
    order the grid points first appear)."""
    groups: dict[tuple, list[dict]] = {}
    keys = COLUMNS[1:8]
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    out = []
    for key, rs in groups.items():
        entry = dict(zip(keys, key))
        entry["instances"] = len(rs)
        for metric in ("m_abs", "m", "q"):
            v = np.array([r[metric] for r in rs], dtype=np.float64)
            entry[metric + "_mean"] = float(v.mean())
            entry[metric + "_q1"], entry[metric + "_median"], entry[metric + "_q3"] = (
                float(x) for x in np.percentile(v, [25, 50, 75])
            )
        out.append(entry)
    return out


def rows_as_dicts(rows: list[tuple]) -> list[dict]:
    return [dict(zip(COLUMNS, r)) for r in rows]


def default_output(config: SweepConfig) -> Path:
    return Path(config.output) if config.output else Path("results") / f"{config.path.stem}.csv"


def _overlap_safe() -> bool:
    """Whether two instances may run their parallel kernels at once: Numba's
    OpenMP and TBB threading layers allow it, its fallback layer does not."""
    import numba

    from .kernels.stats import row_means

    if numba.get_num_threads() < 2:
        return False  # one thread was asked for: keep to one
    row_means(np.zeros((2, 2), dtype=np.float32))  # starts the threading layer
    try:
        return numba.threading_layer() in ("omp", "tbb")
    except ValueError:
        return False


def _run_local(config: SweepConfig, store_path, todo: list[int], finish) -> None:
    """Instances in this process, in order. Where the threading layer allows
    it, the next instance is computed while the current one's serial steps
    (deduplication, result rows, checkpoint) run, so that the cores stay
    busy; each instance's results do not depend on it."""
    if len(todo) < 2 or not _overlap_safe():
        for k in todo:
            finish(k, compute_instance(config, store_path, k))
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=2) as pool:
        queue = deque((k, pool.submit(compute_instance, config, store_path, k)) for k in todo[:2])
        rest = iter(todo[2:])
        try:
            while queue:
                k, future = queue.popleft()
                rows = future.result()
                nxt = next(rest, None)
                if nxt is not None:
                    queue.append((nxt, pool.submit(compute_instance, config, store_path, nxt)))
                finish(k, rows)
        finally:
            for _, future in queue:
                future.cancel()


class _Stop:
    requested = False


@contextlib.contextmanager
def _deferred_interrupt():
    """While a sweep runs, the first Ctrl-C only asks it to stop after the
    instance in progress (whose checkpoint is then written); a second one
    stops at once. A signal never lands inside a compiled kernel, where it
    would surface as an error instead of an interruption."""
    stop = _Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handler(signum, frame):
        if stop.requested:
            raise KeyboardInterrupt
        stop.requested = True

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


class Interrupted(Exception):
    """A sweep stopped by Ctrl-C; its finished instances are checkpointed."""

    def __init__(self, done: int, total: int, parts: Path):
        super().__init__(f"interrupted after {done} of {total} instances (checkpoints in {parts})")
        self.done, self.total, self.parts = done, total, parts


def parts_dir(out: Path) -> Path:
    return out.with_name(out.name + ".parts")


def _part_path(parts: Path, k: int) -> Path:
    return parts / f"instance-{k:06d}.csv"


def _prepare_parts(out: Path, force: bool, fingerprint: str) -> Path:
    """The checkpoint folder for this config and store, reusing a matching one."""
    parts = parts_dir(out)
    stamp = parts / "fingerprint"
    if parts.exists():
        same = stamp.exists() and stamp.read_text().strip() == fingerprint
        if not same:
            if not force:
                raise InputError(
                    f"{parts}: holds checkpoints of another config; pass --force to discard them, "
                    "or choose another --out"
                )
            shutil.rmtree(parts)
    if not parts.exists():
        parts.mkdir(parents=True)
        write_text_atomic(stamp, fingerprint + "\n")
    return parts


def _rows_text(rows: list[tuple]) -> str:
    return rows_to_csv(rows).split("\n", 1)[1]


def sweep(config: SweepConfig, store_path: Path, out: Path, *, force: bool = False,
          progress_factory=None, backend: str = "local", scheduler: str | None = None,
          workers: int = 2) -> SweepResult:
    """Run (or resume, or reuse) a sweep and write its results.

    ``progress_factory(description, total)``, if given, returns a callback
    advanced once per instance; it is called only after every input check.
    ``backend`` is ``"local"`` (this process, Numba threads) or ``"dask"``
    (``scheduler`` address, or a local cluster of ``workers`` processes when
    None).
    """
    store = open_store(store_path)
    try:
        fp = fingerprint(config, store)
        if finished(config, out, fp) and not force:
            return SweepResult(read_results(out), 0.0, computed=False)
        if out.exists() and not force:
            raise InputError(
                f"{out}: holds results of another config or store, or of an unfinished run; "
                "pass --force to replace them, or choose another --out"
            )
        check_against_store(config, store)
        _OPEN_STORES[str(store.path)] = store
        parts = _prepare_parts(out, force, fp)
        total = config.instances.count
        todo = [k for k in range(total) if not _part_path(parts, k).exists()]
        progress = progress_factory(f"sweep {config.path.name}", total) if progress_factory else None
        if progress is not None and total > len(todo):
            progress(total - len(todo))
        t0 = time.perf_counter()
        done = total - len(todo)

        def finish(k, rows):
            nonlocal done
            write_text_atomic(_part_path(parts, k), _rows_text(rows))
            done += 1
            if progress is not None:
                progress(1)
            if stop.requested:
                raise KeyboardInterrupt

        try:
            with _deferred_interrupt() as stop:
                if backend == "local":
                    _run_local(config, store.path, todo, finish)
                elif backend == "dask":
                    from .backends import run_dask

                    run_dask(config, store.path, todo, finish, scheduler, n_workers=workers)
                else:
                    raise InputError(f"backend must be 'local' or 'dask', not {backend!r}")
        except KeyboardInterrupt:
            raise Interrupted(done, total, parts) from None
        elapsed = time.perf_counter() - t0
        text = rows_to_csv([], columns(config)) + "".join(_part_path(parts, k).read_text() for k in range(total))
        write_text_atomic(out, text)
        rows = read_results(out)
        _write_meta(config, store, out, len(rows), elapsed)
        shutil.rmtree(parts)
    finally:
        _OPEN_STORES.pop(str(store.path), None)
        store.close()
    return SweepResult(rows, elapsed, computed=True)
