"""Sweeps: every grid point on every instance (SPEC §5–6), results as CSV.

Rows are ordered by instance, then by the grid's product order; the same
inputs give the same bytes. Next to ``results.csv`` a ``results.csv.json``
records the config's fingerprint, the store's provenance and the versions;
rerunning a finished sweep with the same config recomputes nothing.
"""

from __future__ import annotations

import csv
import io
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._version import __version__
from .config import SweepConfig
from .errors import InputError
from .experiment import METRICS, GridPoint, instance_metrics, observation_split
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
    if isinstance(v, float):
        return repr(v)
    return str(v)


def point_keys(p: GridPoint) -> tuple:
    return (p.estimator.spec, p.algorithm, p.capacity, p.clairvoyance, p.data, p.rebalance, p.headroom)


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


def run_sweep(config: SweepConfig, store: Store, progress=None) -> list[tuple]:
    """All rows of the results table (SPEC §5)."""
    check_against_store(config, store)
    points = config.points()
    needs_y = any(p.data == "avg" for p in points)
    rows = []
    for k in range(config.instances.count):
        index = instance_rows(config.instances.seed, k, store.n_tasks, config.instances.tasks)
        x = store.rows(index, "x")
        y = store.rows(index, "y") if needs_y else None
        for p, met in zip(points, instance_metrics(x, y, points)):
            rows.append((k,) + point_keys(p) + met.row())
        if progress is not None:
            progress(1)
    return rows


def rows_to_csv(rows: list[tuple]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
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
    for key in ("capacity", "clairvoyance", "headroom", "m", "q", "q_max", "severity"):
        out[key] = float(rec[key])
    if rec["rebalance"] not in ("true", "false"):
        raise ValueError(rec["rebalance"])
    out["rebalance"] = rec["rebalance"] == "true"
    return out


def meta_path(out: Path) -> Path:
    return out.with_name(out.name + ".json")


def finished(config: SweepConfig, out: Path) -> bool:
    """Whether ``out`` already holds this config's complete results."""
    mp = meta_path(out)
    if not out.exists() or not mp.exists():
        return False
    try:
        meta = json.loads(mp.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return meta.get("fingerprint") == config.fingerprint() and meta.get("complete") is True


def write_results(config: SweepConfig, store: Store, out: Path, rows: list[tuple], elapsed: float) -> None:
    """Write the CSV, then its metadata, each atomically."""
    write_text_atomic(out, rows_to_csv(rows))
    meta = {
        "format": "colosim-results",
        "complete": True,
        "config": str(config.path),
        "fingerprint": config.fingerprint(),
        "store": str(store.path),
        "store_attrs": store.attrs,
        "rows": len(rows),
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


def sweep(config: SweepConfig, store_path: Path, out: Path, *, force: bool = False,
          progress_factory=None) -> SweepResult:
    """Run (or reuse) a sweep and write its results.

    ``progress_factory(description, total)``, if given, returns a callback
    advanced once per instance; it is called only after every input check.
    """
    if finished(config, out) and not force:
        return SweepResult(read_results(out), 0.0, computed=False)
    if out.exists() and not force:
        raise InputError(
            f"{out}: holds results of another config or an unfinished run; "
            "pass --force to replace them, or choose another --out"
        )
    store = open_store(store_path)
    try:
        check_against_store(config, store)
        progress = progress_factory(f"sweep {config.path.name}", config.instances.count) if progress_factory else None
        t0 = time.perf_counter()
        rows = run_sweep(config, store, progress)
        elapsed = time.perf_counter() - t0
        write_results(config, store, out, rows, elapsed)
    finally:
        store.close()
    return SweepResult(rows_as_dicts(rows), elapsed, computed=True)
