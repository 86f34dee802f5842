"""Google 2019 (Borg v3) trace tables in their own nested shape, as exported
from the public tables: ``instance_usage*.json``, ``*.json.gz`` (JSON lines)
or ``*.parquet``, and optional ``instance_events*`` files of the same kinds
(docs/ingest.md, "Google 2019 tables").

DuckDB reads the files (the format is told by each file's name); the fields
used, by their v3 schema names: ``start_time``, ``end_time``,
``collection_id``, ``instance_index``, ``machine_id``, ``average_usage.cpus``
and ``.memory``, ``maximum_usage.memory``, ``random_sample_usage.cpus``,
``cpu_usage_distribution`` (11 values, p0 to p100 by 10) and
``tail_cpu_usage_distribution`` (p91 to p99). Events of ``type`` 4 EVICT,
5 FAIL, 7 KILL or 8 LOST (codes or names) make a task failing (SPEC §7 step
1); then steps 2-5 as for the per-task CSVs.
"""

from __future__ import annotations

import glob
import gzip
import os
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..progress import Progress
from ._google2019_series import build_series

SUFFIXES = (".json", ".json.gz", ".parquet")
#: v3 event types that make a task failing, as codes and as names
FAILING_TYPES = ("4", "5", "7", "8", "EVICT", "FAIL", "KILL", "LOST")
_REQUIRED = ("start_time", "collection_id", "instance_index")


def table_files(paths) -> tuple[list[Path], list[Path]] | None:
    """``(usage, events)`` files when ``paths`` name trace tables (a folder
    holding ``instance_usage*`` JSON or parquet files, or such files), else
    None (per-task CSVs)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    usage, events, other = [], [], 0
    for spec in paths:
        p = Path(spec)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.is_file())
        elif glob.has_magic(str(spec)):
            found = sorted(Path(q) for q in glob.glob(str(spec)) if Path(q).is_file())
        else:
            found = [p] if p.is_file() else []
        for q in found:
            if not q.name.endswith(SUFFIXES):
                other += q.name.endswith((".csv", ".csv.gz"))
                continue
            if q.name.startswith("instance_events"):
                events.append(q)
            elif q.name.startswith("instance_usage") or not p.is_dir():
                usage.append(q)
    if not usage and not events:
        return None
    if other:
        raise InputError("the paths hold both per-task CSVs and trace tables (JSON or parquet): ingest them apart")
    if not usage:
        raise InputError("instance_events files but no instance_usage files (instance_usage*.json, "
                         "*.json.gz or *.parquet) among the paths")
    return usage, events


def _kind(files: list[Path], what: str) -> str:
    kinds = {"parquet" if f.name.endswith(".parquet") else "json" for f in files}
    if len(kinds) > 1:
        raise InputError(f"{what} files are both JSON and parquet: convert them to one format")
    return kinds.pop()


def _scan(files: list[Path], columns: dict, kind: str, on_bad_lines: str) -> str:
    names = "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"
    if kind == "parquet":
        return f"read_parquet({names}, filename = true, file_row_number = true, union_by_name = true)"
    cols = "{" + ", ".join(f"'{k}': '{v}'" for k, v in columns.items()) + "}"
    ignore = ", ignore_errors = true" if on_bad_lines == "skip" else ""
    return f"read_json({names}, format = 'newline_delimited', columns = {cols}, filename = true{ignore})"


USAGE_COLUMNS = {
    "start_time": "BIGINT", "end_time": "BIGINT", "collection_id": "BIGINT", "instance_index": "BIGINT",
    "machine_id": "BIGINT", "average_usage": "STRUCT(cpus DOUBLE, memory DOUBLE)",
    "maximum_usage": "STRUCT(cpus DOUBLE, memory DOUBLE)", "random_sample_usage": "STRUCT(cpus DOUBLE)",
    "cpu_usage_distribution": "DOUBLE[]", "tail_cpu_usage_distribution": "DOUBLE[]",
}


def _duckdb_error(exc, what: str) -> InputError:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return InputError(f"{what}: {text}")


def read_failing(files: list[Path], on_bad_lines: str) -> tuple[set, dict]:
    """Tasks (collection, index) with a failing event, and counts."""
    import duckdb

    if not files:
        return set(), {}
    kind = _kind(files, "instance_events")
    scan = _scan(files, {"collection_id": "BIGINT", "instance_index": "BIGINT", "type": "VARCHAR"}, kind,
                 on_bad_lines)
    types = ", ".join(f"'{t}'" for t in FAILING_TYPES)
    con = duckdb.connect()
    try:
        rows = con.execute(
            f"SELECT collection_id, instance_index, bool_or(upper(CAST(type AS VARCHAR)) IN ({types})) "
            f"FROM {scan} WHERE collection_id IS NOT NULL AND instance_index IS NOT NULL GROUP BY ALL"
        ).fetchall()
    except duckdb.Error as exc:
        raise _duckdb_error(exc, ", ".join(str(f) for f in files[:3])) from None
    finally:
        con.close()
    failing = {(int(c), int(i)) for c, i, bad in rows if bad}
    return failing, dict(event_tasks=len(rows), event_failing_tasks=len(failing), event_files=len(files))


def read_usage(files: list[Path], on_bad_lines: str, progress: Progress):
    """``(tasks, counts)`` of the records in ``files``, for :func:`build_series`."""
    import duckdb

    kind = _kind(files, "instance_usage")
    scan = _scan(files, USAGE_COLUMNS, kind, on_bad_lines)
    dist = ", ".join(f"cpu_usage_distribution[{k}] AS d{k}" for k in range(1, 12))
    tail = ", ".join(f"tail_cpu_usage_distribution[{k}] AS t{k}" for k in range(1, 10))
    row = "file_row_number" if kind == "parquet" else "NULL::BIGINT"
    query = (
        f"SELECT filename, {row} AS row_number, start_time, collection_id, instance_index, machine_id, "
        "average_usage.cpus AS avg, random_sample_usage.cpus AS inst, average_usage.memory AS mem_avg, "
        "maximum_usage.memory AS mem_max, len(cpu_usage_distribution) AS n_dist, "
        f"len(tail_cpu_usage_distribution) AS n_tail, {dist}, {tail} FROM {scan}"
    )
    advance = progress(f"instance_usage ({len(files)} files)", len(files))
    con = duckdb.connect()
    try:
        try:
            got = con.execute(query).fetchnumpy()
        except duckdb.BinderException as exc:
            raise InputError(f"{files[0]}: lacks a field of the v3 instance_usage schema "
                             f"({str(exc).splitlines()[0]})") from None
        except duckdb.Error as exc:
            raise _duckdb_error(exc, ", ".join(str(f) for f in files[:3])) from None
    finally:
        con.close()
    advance(len(files))
    cols = {k: np.ma.filled(np.ma.asarray(v).astype(np.float64) if k not in ("filename",) else np.ma.asarray(v),
                            np.nan if k != "filename" else "") for k, v in got.items()}
    n = len(cols["start_time"])
    absent = _absent(cols)
    knots = _knots(cols)
    problem = check_records(cols, absent, knots)
    counts = {"bad_lines": 0, "distribution_absent": 0, "max_below_p99": 0}
    bad = np.array([p is not None for p in problem], dtype=bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        if on_bad_lines == "error":
            raise InputError(f"{_where(cols, i, kind)}: {problem[i]}")
        counts["bad_lines"] = int(bad.sum())
    counts["distribution_absent"] = int((absent & ~bad).sum())
    knots[absent] = cols["inst"][absent, None]
    tasks: dict = {}
    memory = not (np.isnan(cols["mem_avg"]).all() and np.isnan(cols["mem_max"]).all())
    for i in range(n):
        if bad[i]:
            continue
        key = (int(cols["collection_id"][i]), int(cols["instance_index"][i]))
        machine = -1 if np.isnan(cols["machine_id"][i]) else int(cols["machine_id"][i])
        mem = (cols["mem_avg"][i], cols["mem_max"][i]) if memory else ()
        tasks.setdefault(key, []).append(
            (int(cols["start_time"][i]), machine, cols["inst"][i], cols["avg"][i], *mem, tuple(knots[i])))
    return tasks, counts


def _absent(cols) -> np.ndarray:
    """Records whose window distribution is absent: no array, an empty one,
    or -1 in every percentile."""
    d = np.column_stack([cols[f"d{k}"] for k in range(1, 12)])
    t = np.column_stack([cols[f"t{k}"] for k in range(1, 10)])
    none = np.isnan(cols["n_dist"]) | (cols["n_dist"] == 0)
    minus = (np.nan_to_num(d, nan=-1) == -1).all(axis=1) & (np.nan_to_num(t, nan=-1) == -1).all(axis=1)
    return none | minus


def _knots(cols) -> np.ndarray:
    """Records x 20 knots p0 ... p90, p91 ... p99, p100 (docs/spec.md)."""
    return np.column_stack([cols[f"d{k}"] for k in range(1, 11)] + [cols[f"t{k}"] for k in range(1, 10)]
                           + [cols["d11"]])


def check_records(cols, absent: np.ndarray, knots: np.ndarray) -> list:
    """Per record, None or what is wrong with it (one line); ``absent`` and
    ``knots`` as from :func:`_absent` and :func:`_knots`."""
    n = len(cols["start_time"])
    out: list = [None] * n
    for i in range(n):
        for name in _REQUIRED:
            if np.isnan(cols[name][i]):
                out[i] = f"the record lacks {name}"
                break
        if out[i] is not None or absent[i]:
            continue
        if cols["n_dist"][i] != 11:
            out[i] = f"cpu_usage_distribution has {int(cols['n_dist'][i])} values, expected 11 (p0 to p100 by 10)"
        elif np.isnan(cols["n_tail"][i]) or cols["n_tail"][i] != 9:
            got = "none" if np.isnan(cols["n_tail"][i]) else int(cols["n_tail"][i])
            out[i] = f"tail_cpu_usage_distribution has {got} values, expected 9 (p91 to p99)"
        elif not ((knots[i] >= 0) & (knots[i] <= 1)).all():
            out[i] = "a percentile of cpu_usage_distribution or tail_cpu_usage_distribution lies outside [0, 1]"
        elif (np.diff(knots[i]) < 0).any():
            out[i] = "percentiles out of order (p0 ... p90, p91 ... p99, p100 must not decrease)"
        else:
            for name in ("avg", "inst", "mem_avg", "mem_max"):
                v = cols[name][i]
                if not np.isnan(v) and not (np.isfinite(v) and v >= 0):
                    field = {"avg": "average_usage.cpus", "inst": "random_sample_usage.cpus",
                             "mem_avg": "average_usage.memory", "mem_max": "maximum_usage.memory"}[name]
                    out[i] = f"{field} holds {v!r} (usage must be finite and >= 0)"
                    break
    return out


def _where(cols, i: int, kind: str) -> str:
    """``file: line N`` (JSON lines) or ``file: row N`` (parquet) of record i."""
    name = str(cols["filename"][i])
    if kind == "parquet":
        return f"{name}: row {int(cols['row_number'][i]) + 1}"
    k = int((cols["filename"][: i + 1] == cols["filename"][i]).sum())  # the k-th record of its file
    opener = gzip.open if name.endswith(".gz") else open
    seen = 0
    with opener(name, "rt") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                seen += 1
                if seen == k:
                    return f"{name}: line {lineno}"
    return name


def ingest_tables(usage: list[Path], events: list[Path], output, min_records: int, on_bad_lines: str,
                  progress: Progress):
    failing, event_counts = read_failing(events, on_bad_lines)
    tasks, counts = read_usage(usage, on_bad_lines, progress)
    return build_series(tasks, counts, output, [*usage, *events], min_records, on_bad_lines,
                        fmt="google2019-tables", failing=failing if events else None, event_counts=event_counts)

