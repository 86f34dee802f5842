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
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..progress import Progress
from ._google2019_series import build_series, file_names

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


_NUMBERS = "('UBIGINT', 'BIGINT', 'DOUBLE')"
#: integer fields (ids, times): exact integers >= 0 (machine_id may be absent)
_INTEGERS = ("start_time", "collection_id", "instance_index", "machine_id")
#: nested usage fields: (output column, field, key)
_NESTED = (("avg", "average_usage", "cpus"), ("inst", "random_sample_usage", "cpus"),
           ("mem_avg", "average_usage", "memory"), ("mem_max", "maximum_usage", "memory"))
_ARRAYS = (("d", "cpu_usage_distribution", 11), ("t", "tail_cpu_usage_distribution", 9))
_FIELDS = ("start_time", "end_time", "collection_id", "instance_index", "machine_id", "average_usage",
           "maximum_usage", "random_sample_usage", "cpu_usage_distribution", "tail_cpu_usage_distribution")


def _files_list(files: list[Path]) -> str:
    return "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"


def _scan(files: list[Path], fields, kind: str, on_bad_lines: str) -> str:
    """A DuckDB table function over ``files``; JSON fields are read as JSON
    values, typed (and checked) by the query, so that a value of the wrong
    type is a bad record of its own line, not an error of the whole file."""
    names = _files_list(files)
    if kind == "parquet":
        return f"read_parquet({names}, filename = true, file_row_number = true, union_by_name = true)"
    cols = "{" + ", ".join(f"'{k}': 'JSON'" for k in fields) + "}"
    ignore = ", ignore_errors = true" if on_bad_lines == "skip" else ""
    return f"read_json({names}, format = 'newline_delimited', columns = {cols}, filename = true{ignore})"


def _show(expr: str) -> str:
    """SQL: the offending value, as written, cut to 40 characters."""
    return f"left(CAST({expr} AS VARCHAR), 40)"


def _json_number(v: str) -> tuple[str, str]:
    """(value, problem) SQL of a JSON value that must be a number (or a
    numeric string, as BigQuery writes INT64) or absent."""
    ok = (f"({v} IS NULL OR json_type({v}) = 'NULL' OR json_type({v}) IN {_NUMBERS} "
          f"OR (json_type({v}) = 'VARCHAR' AND TRY_CAST({v} AS DOUBLE) IS NOT NULL))")
    return f"CASE WHEN json_type({v}) = 'BOOLEAN' THEN NULL ELSE TRY_CAST({v} AS DOUBLE) END", ok


def _usage_select(kind: str) -> tuple[str, str]:
    """(columns, problem) SQL of the instance_usage query."""
    cols, checks = [], []
    if kind == "parquet":
        for name in _INTEGERS:
            cols.append(f"TRY_CAST({name} AS DOUBLE) AS {name}")
            checks.append((f"{name} IS NOT NULL AND TRY_CAST({name} AS DOUBLE) IS NULL",
                           f"'{name} holds ' || {_show(name)} || ', not a number'"))
        for out, field, key in _NESTED:
            cols.append(f"TRY_CAST({field}.{key} AS DOUBLE) AS {out}")
            checks.append((f"{field}.{key} IS NOT NULL AND TRY_CAST({field}.{key} AS DOUBLE) IS NULL",
                           f"'{field}.{key} holds ' || {_show(f'{field}.{key}')} || ', not a number'"))
        for prefix, field, n in _ARRAYS:
            arr = f"TRY_CAST({field} AS DOUBLE[])"
            cols.append(f"len({field}) AS n_{prefix}")
            cols += [f"{arr}[{k}] AS {prefix}{k}" for k in range(1, n + 1)]
            checks.append((f"{field} IS NOT NULL AND {arr} IS NULL",
                           f"'{field} holds ' || {_show(field)} || ', not an array of numbers'"))
    else:
        for name in _INTEGERS:
            value, ok = _json_number(name)
            cols.append(f"{value} AS {name}")
            checks.append((f"NOT {ok}", f"'{name} holds ' || {_show(name)} || ', not an integer'"))
        for out, field, key in _NESTED:
            checks.append((f"NOT ({field} IS NULL OR json_type({field}) IN ('OBJECT', 'NULL'))",
                           f"'{field} holds ' || {_show(field)} || ', not an object'"))
            v = f"json_extract({field}, '$.{key}')"
            value, ok = _json_number(v)
            cols.append(f"{value} AS {out}")
            checks.append((f"NOT {ok}", f"'{field}.{key} holds ' || {_show(v)} || ', not a number'"))
        for prefix, field, n in _ARRAYS:
            present = f"({field} IS NOT NULL AND json_type({field}) <> 'NULL')"
            arr = f"TRY_CAST({field} AS DOUBLE[])"
            cols.append(f"CASE WHEN {present} THEN json_array_length({field}) END AS n_{prefix}")
            cols += [f"{arr}[{k}] AS {prefix}{k}" for k in range(1, n + 1)]
            numeric = ", ".join(f"'[\"{t}\"]'" for t in ("DOUBLE", "UBIGINT", "BIGINT", "NULL"))
            checks.append((f"{present} AND NOT (json_type({field}) = 'ARRAY' AND json_structure({field}) IN "
                           f"({numeric}))", f"'{field} holds ' || {_show(field)} || ', not an array of numbers'"))
    problem = "CASE " + " ".join(f"WHEN {c} THEN {m}" for c, m in checks) + " END"
    return ", ".join(cols), problem


def _duckdb_error(exc, files: list[Path], kind: str) -> InputError:
    """An InputError for a DuckDB read error: for JSON lines, the first line
    that is not one JSON object, found here (DuckDB's own line numbers can be
    off); else DuckDB's first line of text."""
    if kind == "json":
        where = _first_unreadable_line(files)
        if where:
            return InputError(where)
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return InputError(f"{file_names(files)}: {text}")


def _lines(path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of the non-blank lines of a JSON-lines file."""
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.strip():
                yield lineno, line


def _is_count(v: float) -> bool:
    """Whether ``v`` is an integer >= 0 that fits int64 (ids and times)."""
    return bool(np.isfinite(v) and 0 <= v < 2.0 ** 63 and v == np.floor(v))


def _first_unreadable_line(files: list[Path]) -> str | None:
    import json

    for f in files:
        try:
            for lineno, line in _lines(f):
                try:
                    obj = json.loads(line)
                except ValueError as exc:
                    return f"{f}: line {lineno}: not valid JSON ({exc.args[0].split(':')[0]})"
                if not isinstance(obj, dict):
                    return (f"{f}: line {lineno}: a JSON {type(obj).__name__}, not an object "
                            "(JSON lines: one record per line)")
        except (OSError, EOFError) as exc:
            return f"{f}: cannot be read ({exc})"
    return None


def read_failing(files: list[Path], on_bad_lines: str) -> tuple[set, dict]:
    """Tasks (collection, index) with a failing event, and counts. An event
    lacking its task or type, or with ids that are not integers >= 0, is a
    bad line."""
    import duckdb

    if not files:
        return set(), {}
    kind = _kind(files, "instance_events")
    scan = _scan(files, ("collection_id", "instance_index", "type"), kind, on_bad_lines)
    names = ", ".join(f"'{t}'" for t in FAILING_TYPES if not t.isdigit())
    codes = ", ".join(t for t in FAILING_TYPES if t.isdigit())
    if kind == "parquet":
        coll, index = "TRY_CAST(collection_id AS DOUBLE)", "TRY_CAST(instance_index AS DOUBLE)"
        text = "upper(CAST(type AS VARCHAR))"
    else:
        coll, _ = _json_number("collection_id")
        index, _ = _json_number("instance_index")
        text = "upper(type ->> '$')"
    good = " AND ".join(f"({v}) >= 0 AND ({v}) < 9.2e18 AND ({v}) = floor({v})" for v in (coll, index))
    good += " AND type IS NOT NULL"
    failing_type = f"({text} IN ({names}) OR TRY_CAST({text} AS DOUBLE) IN ({codes}))"
    con = duckdb.connect()
    try:
        rows = con.execute(
            f"SELECT CAST({coll} AS BIGINT), CAST({index} AS BIGINT), bool_or({failing_type}) "
            f"FROM {scan} WHERE {good} GROUP BY ALL"
        ).fetchall()
        bad = con.execute(f"SELECT count(*) FROM {scan} WHERE NOT coalesce({good}, false)").fetchone()[0]
    except duckdb.Error as exc:
        raise _duckdb_error(exc, files, kind) from None
    finally:
        con.close()
    if bad and on_bad_lines == "error":
        raise InputError(_first_bad_event(files, kind) or
                         f"{files[0]}: {bad} events lack collection_id, instance_index or type, or hold ids "
                         "that are not integers >= 0")
    failing = {(int(c), int(i)) for c, i, is_failing in rows if is_failing}
    return failing, dict(event_tasks=len(rows), event_failing_tasks=len(failing), event_files=len(files),
                         event_bad_lines=int(bad))


def _first_bad_event(files: list[Path], kind: str) -> str | None:
    """``file: line N: what`` of the first bad event of JSON-lines files."""
    import json

    if kind != "json":
        return None
    for f in files:
        for lineno, line in _lines(f):
            rec = json.loads(line)
            for key in ("collection_id", "instance_index", "type"):
                v = rec.get(key)
                if v is None:
                    return f"{f}: line {lineno}: the event lacks {key}"
                if key != "type":
                    try:
                        ok = not isinstance(v, bool) and _is_count(float(v))
                    except (TypeError, ValueError, OverflowError):
                        ok = False
                    if not ok:
                        return f"{f}: line {lineno}: {key} holds {json.dumps(v)[:40]}, not an integer >= 0"
    return None


def read_usage(files: list[Path], on_bad_lines: str, progress: Progress):
    """``(tasks, counts)`` of the records in ``files``, for :func:`build_series`."""
    import duckdb

    kind = _kind(files, "instance_usage")
    scan = _scan(files, _FIELDS, kind, on_bad_lines)
    columns, problem = _usage_select(kind)
    row = "file_row_number" if kind == "parquet" else "NULL::BIGINT"
    query = f"SELECT filename, {row} AS row_number, {columns}, {problem} AS problem FROM {scan}"
    advance = progress(f"instance_usage ({len(files)} files)", len(files))
    con = duckdb.connect()
    try:
        try:
            got = con.execute(query).fetchnumpy()
        except duckdb.BinderException as exc:
            raise InputError(f"{files[0]}: lacks a field of the v3 instance_usage schema "
                             f"({str(exc).splitlines()[0]})") from None
        except duckdb.Error as exc:
            raise _duckdb_error(exc, files, kind) from None
    finally:
        con.close()
    advance(len(files))
    text = ("filename", "problem")
    cols = {k: _text(v) if k in text else np.ma.filled(np.ma.asarray(v).astype(np.float64), np.nan)
            for k, v in got.items()}
    n = len(cols["start_time"])
    if n == 0:
        raise InputError(f"{file_names(files)}: no instance_usage records")
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


def _number(v: float) -> str:
    """``v`` as written in a message: an integer without ``.0``."""
    v = float(v)
    return str(int(v)) if np.isfinite(v) and v == np.floor(v) and abs(v) < 2.0 ** 63 else repr(v)


def _text(values) -> np.ndarray:
    """An object array of str or None from a DuckDB text column."""
    arr = np.ma.asarray(values)
    out = np.asarray(arr.data, dtype=object).copy()
    out[np.ma.getmaskarray(arr)] = None
    return out


def _absent(cols) -> np.ndarray:
    """Records whose window distribution is absent: no array, an empty one,
    or -1 in every percentile."""
    d = np.column_stack([cols[f"d{k}"] for k in range(1, 12)])
    t = np.column_stack([cols[f"t{k}"] for k in range(1, 10)])
    none = np.isnan(cols["n_d"]) | (cols["n_d"] == 0)
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
        if cols["problem"][i] is not None:  # a value of the wrong type (JSON), found by the query
            out[i] = str(cols["problem"][i])
            continue
        for name in _REQUIRED:
            if np.isnan(cols[name][i]):
                out[i] = f"the record lacks {name}"
                break
        for name in _INTEGERS:
            v = cols[name][i]
            if out[i] is None and not np.isnan(v) and not _is_count(v):
                out[i] = f"{name} holds {_number(v)}, not an integer >= 0"
        if out[i] is not None or absent[i]:
            continue
        if cols["n_d"][i] != 11:
            out[i] = f"cpu_usage_distribution has {int(cols['n_d'][i])} values, expected 11 (p0 to p100 by 10)"
        elif np.isnan(cols["n_t"][i]) or cols["n_t"][i] != 9:
            got = "none" if np.isnan(cols["n_t"][i]) else int(cols["n_t"][i])
            out[i] = f"tail_cpu_usage_distribution has {got} values, expected 9 (p91 to p99)"
        elif not ((knots[i] >= 0) & (knots[i] <= 1)).all():
            out[i] = ("a percentile of cpu_usage_distribution or tail_cpu_usage_distribution is null or lies "
                      "outside [0, 1]")
        elif (np.diff(knots[i]) < 0).any():
            out[i] = "percentiles out of order (p0 ... p90, p91 ... p99, p100 must not decrease)"
        else:
            for name in ("avg", "inst", "mem_avg", "mem_max"):
                v = cols[name][i]
                if not np.isnan(v) and not (np.isfinite(v) and v >= 0):
                    field = {"avg": "average_usage.cpus", "inst": "random_sample_usage.cpus",
                             "mem_avg": "average_usage.memory", "mem_max": "maximum_usage.memory"}[name]
                    out[i] = f"{field} holds {_number(v)} (usage must be finite and >= 0)"
                    break
    return out


def _where(cols, i: int, kind: str) -> str:
    """``file: line N`` (JSON lines) or ``file: row N`` (parquet) of record i."""
    name = str(cols["filename"][i])
    if kind == "parquet":
        return f"{name}: row {int(cols['row_number'][i]) + 1}"
    k = int((cols["filename"][: i + 1] == cols["filename"][i]).sum())  # the k-th record of its file
    for seen, (lineno, _line) in enumerate(_lines(name), start=1):
        if seen == k:
            return f"{name}: line {lineno}"
    return name


def ingest_tables(usage: list[Path], events: list[Path], output, min_records: int, on_bad_lines: str,
                  progress: Progress):
    failing, event_counts = read_failing(events, on_bad_lines)
    tasks, counts = read_usage(usage, on_bad_lines, progress)
    return build_series(tasks, counts, output, [*usage, *events], min_records, on_bad_lines,
                        fmt="google2019-tables", failing=failing if events else None, event_counts=event_counts)

