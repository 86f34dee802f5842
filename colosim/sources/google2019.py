"""Ingest of Google 2019 (Borg v3) per-task ``instance_usage`` series into a
series file: SPEC §7 steps 2-5, with ``random_sample_cpu_usage`` as the
instantaneous and ``avg_cpu_usage`` as the average usage.

Input: CSV files with a header row (gzip'd or plain), one task per file as
exported per task; a task is keyed by (``collection_id``,
``instance_index``), so records of one task spread over several files are
merged. Records are sorted by (``time``, ``machine_id``): the 2019 rows carry
one timestamp, the window start, and no end time.

There are no task events here, so step 1 (failing tasks) does not apply.
The files are small (one task each), so they are read with the standard
library, which names every bad line exactly.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Iterable

from ..errors import InputError
from ..io.series import N_QUANTILES
from ..progress import Progress, no_progress
from ._google2019_series import build_series
from ._shards import find_shards, open_text
from .google2019_tables import ingest_tables, table_files
from .ingest import MIN_RECORDS, IngestReport, check_arguments, claim_series, writing

REQUIRED = ("time", "collection_id", "instance_index", "avg_cpu_usage", "random_sample_cpu_usage")
OPTIONAL = ("machine_id", "avg_memory_usage", "max_memory_usage")
#: the memory columns, read when the header has both (docs/memory.md)
MEMORY = ("avg_memory_usage", "max_memory_usage")
#: the window's CPU percentiles p0, p10, ..., p90, p91, ..., p99, read when the
#: header has all of them and ``max_cpu_usage`` (the window's maximum, p100)
PERCENTILES = tuple(f"p{k}_cpu_usage" for k in (*range(0, 100, 10), *range(91, 100)))


def _read_file(path: Path, on_bad_lines: str, tasks: dict, counts: dict) -> None:
    """Append the rows of one CSV file to ``tasks[(collection, index)]``."""
    import gzip
    import zlib

    lineno = 0
    try:
        with open_text(path) as fh:
            reader = csv.reader(fh)
            try:
                header = next(reader)
            except StopIteration:
                raise InputError(f"{path}: empty file (no header row)") from None
            lineno = 1
            header = [h.strip() for h in header]
            _check_header(path, header)
            wanted = REQUIRED + OPTIONAL + PERCENTILES + ("max_cpu_usage",)
            col = {name: header.index(name) for name in wanted if name in header}
            width = len(header)
            for lineno, row in enumerate(reader, start=2):
                if not row:
                    continue
                problem, record = _parse_row(row, width, col)
                if problem is not None:
                    if on_bad_lines == "error":
                        raise InputError(f"{path}: line {lineno}: {problem}")
                    counts["bad_lines"] += 1
                    continue
                key, values, note = record
                if note is not None:
                    counts[note] += 1
                tasks.setdefault(key, []).append(values)
    except (EOFError, gzip.BadGzipFile, zlib.error, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(
            f"{path}: unreadable after line {lineno} ({type(exc).__name__}: {str(exc) or 'truncated'})"
        ) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _check_header(path: Path, header: list[str]) -> None:
    """An :class:`InputError` naming ``path`` and the column when a column
    is named twice (which one would be read?) or a required one is missing."""
    first: dict[str, int] = {}
    for k, name in enumerate(header, start=1):
        if name in first:
            raise InputError(f"{path}: line 1: the header names column {name!r} twice "
                             f"(columns {first[name]} and {k})")
        first[name] = k
    missing = [c for c in REQUIRED if c not in first]
    if missing:
        raise InputError(f"{path}: line 1: header lacks column(s) {', '.join(missing)}")


def _parse_row(row, width, col):
    if len(row) != width:
        return f"expected {width} columns, found {len(row)}", None
    try:
        time = int(row[col["time"]])
        collection = int(row[col["collection_id"]])
        index = int(row[col["instance_index"]])
        machine = int(row[col["machine_id"]]) if "machine_id" in col and row[col["machine_id"]].strip() else -1
    except ValueError:
        return "time, collection_id, instance_index or machine_id is not an integer", None
    if not all(-(2**63) <= v < 2**63 for v in (time, collection, index, machine)):
        return "time, collection_id, instance_index or machine_id is outside the 64-bit range", None
    # a missing CPU value is dropped by step 2, a missing memory value taken
    # from the other memory column (docs/ingest.md): NaN here, not a bad line
    names = [("random_sample_cpu_usage", "CPU"), ("avg_cpu_usage", "CPU")]
    if all(m in col for m in MEMORY):
        names += [(m, "memory") for m in MEMORY]
    values = []
    for name, what in names:
        text = row[col[name]].strip()
        try:
            value = float(text) if text else math.nan
        except ValueError:
            return f"{name} is not a number ({text[:20]!r})", None
        if text and not (math.isfinite(value) and value >= 0):
            return f"{name} holds {text[:20]!r} ({what} usage must be finite and >= 0)", None
        values.append(value)
    quantiles = note = None
    if all(p in col for p in PERCENTILES) and "max_cpu_usage" in col:
        problem, quantiles, note = _parse_percentiles(row, col, values[0])
        if problem is not None:
            return problem, None
    return None, ((collection, index), (time, machine, *values, quantiles), note)


def _parse_percentiles(row, col, sample):
    """``(problem, knots, note)``: the 20 knots p0 ... p99, p100 of
    docs/spec.md, with ``max_cpu_usage`` as p100, raised to p99 where it is
    below (note ``max_below_p99``); an absent distribution (-1 in every
    percentile) gives ``sample`` in every knot (note ``distribution_absent``)."""
    knots = []
    for name in PERCENTILES:
        text = row[col[name]].strip()
        try:
            knots.append(float(text))
        except ValueError:
            return f"{name} is not a number ({text[:20]!r})", None, None
    if all(v == -1 for v in knots):
        return None, (sample,) * N_QUANTILES, "distribution_absent"
    for name, v in zip(PERCENTILES, knots):
        if not (0 <= v <= 1):
            return (f"{name} holds {v!r} (a percentile of CPU usage must lie in [0, 1], "
                    "or be -1 in all of them)"), None, None
    for a, b, name in zip(knots, knots[1:], PERCENTILES[1:]):
        if b < a:
            return f"percentiles out of order ({name} {b!r} is below the one before it, {a!r})", None, None
    text = row[col["max_cpu_usage"]].strip()
    try:
        top = float(text) if text else knots[-1]
    except ValueError:
        return f"max_cpu_usage is not a number ({text[:20]!r})", None, None
    if not (math.isfinite(top) and top >= 0):
        return f"max_cpu_usage holds {text[:20]!r} (CPU usage must be finite and >= 0)", None, None
    return None, (*knots, max(top, knots[-1])), "max_below_p99" if top < knots[-1] else None


def collect_files(paths: Iterable) -> list[Path]:
    """Every CSV file named by ``paths`` (files, folders searched
    recursively, globs), without repeats, in a stable order."""
    if isinstance(paths, (str, os.PathLike)):  # one path, not its characters
        paths = [paths]
    files: list[Path] = []
    for spec in paths:
        p = Path(spec)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if q.is_file() and q.name.endswith((".csv", ".csv.gz")))
            if not found:
                raise InputError(f"{p}: no instance_usage files (*.csv, *.csv.gz, instance_usage*.json, *.json.gz "
                                 "or *.parquet) under this directory")
            files.extend(found)
        else:
            files.extend(find_shards(spec, "instance_usage"))
    seen, unique = set(), []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    if not unique:
        raise InputError("no instance_usage files given")
    return unique


def ingest_google2019(
    paths: Iterable,
    out: str | os.PathLike,
    *,
    min_records: int = MIN_RECORDS,
    on_bad_lines: str = "error",
    progress: Progress = no_progress,
    force: bool = False,
) -> IngestReport:
    """Ingest per-task Google 2019 ``instance_usage`` CSVs into ``out``.

    ``paths``: files, folders (searched recursively) or globs: per-task CSVs,
    or the trace's own tables (``instance_usage*`` and ``instance_events*``
    as JSON lines or parquet; :mod:`colosim.sources.google2019_tables`).
    Parameters are as for :func:`~colosim.sources.google2011.ingest_google2011`;
    the report has a ``failing`` step only when events are given.
    """
    check_arguments(min_records, on_bad_lines)
    spec_list = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    tables = table_files(spec_list)
    if tables is not None:  # the trace's own tables (JSON lines or parquet)
        usage, events = tables
        folders = [Path(p) for p in spec_list if Path(p).is_dir()]
        output = claim_series(out, inputs=[*usage, *events, *folders], force=force)
        with writing(output):
            return ingest_tables(usage, events, output, min_records, on_bad_lines, progress)
    files = collect_files(spec_list)
    folders = [Path(p) for p in spec_list if Path(p).is_dir()]
    output = claim_series(out, inputs=[*files, *folders], force=force)
    with writing(output):
        return _ingest(files, output, min_records, on_bad_lines, progress)


def _ingest(files: list[Path], output, min_records: int, on_bad_lines: str, progress: Progress) -> IngestReport:
    tasks: dict = {}
    counts = {"bad_lines": 0, "distribution_absent": 0, "max_below_p99": 0}
    advance = progress(f"instance_usage ({len(files)} files)", sum(p.stat().st_size for p in files), unit="B")
    for path in files:
        _read_file(path, on_bad_lines, tasks, counts)
        advance(path.stat().st_size)
    return build_series(tasks, counts, output, files, min_records, on_bad_lines, fmt="google2019")
