"""Ingest of the Google 2011 cluster trace (clusterdata-2011-2) into a series
file, applying SPEC §7 (the filters of the paper's Section 3.1).

Input: ``task_events`` and ``task_usage`` shards, CSV without a header, gzip'd
or plain. The work runs in an embedded DuckDB database kept in a temporary
folder, so the whole trace (500 usage shards, about 40 GB compressed) goes
through in bounded memory: DuckDB spills to disk past ``memory_limit``, and
the result is streamed to the series file in blocks.

Order of work
-------------
1. Every ``task_events`` shard is read; the tasks with an EVICT (2), FAIL (3),
   KILL (5) or LOST (6) event form the failing set.
2. The ``task_usage`` shards are read, as many at a time as DuckDB has
   threads (a gzip stream is decompressed on one thread); per task, its number of
   records and of complete records (columns 6 and 20 present) are summed, and
   the complete records of non-failing tasks are kept, with an average above 1
   replaced by the record's instantaneous value.
3. Per task over the kept records: zero-usage tasks (every instantaneous value
   0) and short tasks (fewer than ``min_records`` records, counted after
   step 2) are dropped; the rest are sorted by (job ID, task index), their
   records by (start time, end time, machine ID), and written.

A *bad line* (wrong column count, a field that is not a number, a missing job
ID, task index, event type or time, a NaN, infinite or negative CPU value) is
an :class:`~colosim.errors.InputError` naming the file and line, or, with
``on_bad_lines="skip"``, skipped and counted in the report. A shard that cannot
be read to its end (truncated or corrupt gzip) is always an error: skipping it
would silently drop part of many tasks' series.

Every argument and the output (:func:`~colosim.sources.ingest.claim_series`)
are checked before DuckDB starts. DuckDB's folder is named as the other
temporaries (``.colosim-ingest.PID-TOKEN.colosim-tmp``, in ``tmp_dir``), so
a later ingest removes the one a killed run left. Ctrl-C inside a DuckDB
query is a :class:`KeyboardInterrupt`, as anywhere else.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..io.outputs import remove_stale, temp_path
from ..io.series import SeriesWriter
from ..progress import Progress, no_progress
from ._shards import find_shards, first_bad_line, iter_lines
from .ingest import MIN_RECORDS, IngestReport, check_arguments, claim_series, writing

FAILING_EVENTS = (2, 3, 5, 6)  # EVICT, FAIL, KILL, LOST (SPEC §7 step 1)
MAX_BATCH = 8  # shards per read: bounds the per-batch table (~2.4 M rows per official shard)

# Column types (1-based column k is "ck"). Every column is typed, so that a
# field that is not a number is a bad line wherever it is.
USAGE_COLUMNS = {f"c{k}": ("BIGINT" if k <= 5 else "DOUBLE") for k in range(1, 21)}
EVENTS_COLUMNS = {
    **{f"c{k}": "BIGINT" for k in range(1, 7)},
    "c7": "VARCHAR",
    "c8": "BIGINT",
    "c9": "BIGINT",
    "c10": "DOUBLE",
    "c11": "DOUBLE",
    "c12": "DOUBLE",
    "c13": "BIGINT",
}
_READ_OPTIONS = (
    "header = false, delim = ',', quote = '', escape = '', new_line = '\\n', "
    "auto_detect = false, compression = 'auto', store_rejects = true, "
    "rejects_table = 'csv_rejects', rejects_scan = 'csv_scans'"
)
#: the name of DuckDB's temporary folder: ``.colosim-ingest.PID-TOKEN.colosim-tmp``
TMP_NAME = "colosim-ingest"
_TMP_FOLDER = re.compile(r"\." + re.escape(TMP_NAME) + r"\.\d+-[0-9a-f]{8}\.colosim-tmp")


def _usage_line_problem(line: str) -> str | None:
    """Why a task_usage line is bad (None when good); mirrors the SQL checks."""
    fields = line.split(",")
    if len(fields) != 20:
        return f"expected 20 columns, found {len(fields)}"
    return _numeric_problem(fields, int_cols=range(0, 5), required=(0, 1, 2, 3), usage_cols=(5, 6, 10, 19))


def _events_line_problem(line: str) -> str | None:
    fields = line.split(",")
    if len(fields) != 13:
        return f"expected 13 columns, found {len(fields)}"
    ints = [0, 1, 2, 3, 4, 5, 7, 8, 12]
    return _numeric_problem(fields, int_cols=ints, required=(0, 2, 3, 5), usage_cols=(), skip=(6,))


def _numeric_problem(fields, *, int_cols, required, usage_cols, skip=()) -> str | None:
    int_cols = set(int_cols)
    for k, text in enumerate(fields):
        if k in skip:
            continue
        text = text.strip()
        if text == "":
            if k in required:
                return f"column {k + 1} is empty"
            continue
        try:
            value = int(text) if k in int_cols else float(text)
        except ValueError:
            return f"column {k + 1} is not a number ({text[:20]!r})"
        if k in int_cols and not -(2**63) <= value < 2**63:
            return f"column {k + 1} is outside the 64-bit integer range"
        if k in usage_cols and not (math.isfinite(value) and value >= 0):
            return f"column {k + 1} holds {text[:20]!r} (usage must be finite and >= 0)"
    return None


def check_database_arguments(threads, memory_limit, tmp_dir) -> None:
    """:class:`InputError` naming ``--threads``, ``--memory-limit`` or
    ``--tmp-dir``; nothing is created (the memory limit is tried on an
    in-memory database)."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise InputError(f"--threads must be an integer >= 1, not {threads!r}")
    if tmp_dir is not None and (os.fspath(tmp_dir) == "" or not Path(tmp_dir).is_dir()):
        raise InputError(f"--tmp-dir {tmp_dir}: temporary directory not found")
    if memory_limit is not None:
        import duckdb

        if not isinstance(memory_limit, str) or not memory_limit.strip():
            raise InputError(f"--memory-limit {memory_limit!r}: expected a size such as 4GB")
        con = duckdb.connect(":memory:")
        try:
            con.execute("SET memory_limit = ?", [memory_limit])
        except duckdb.Error as exc:
            raise InputError(f"--memory-limit {memory_limit!r}: {_first_line(exc)}") from None
        finally:
            con.close()


def check_outside_temporaries(paths, tmp_dir) -> None:
    """An :class:`InputError` for a path (an input, or the output) inside
    a folder named as DuckDB's temporary one in ``tmp_dir``: an ingest removes
    such a folder, with what is in it, once its process has ended."""
    base = Path(os.path.realpath(tmp_dir if tmp_dir is not None else tempfile.gettempdir()))
    for path in paths:
        real = Path(os.path.realpath(path))
        for folder in (real, *real.parents):
            if folder.parent == base and _TMP_FOLDER.fullmatch(folder.name):
                raise InputError(f"{path}: inside {folder}, a temporary folder of colosim ingest that "
                                 "an ingest removes; move it out of there first")


class _Database:
    """A DuckDB connection on a database file in a temporary folder
    (``tmp_dir``/``.colosim-ingest.PID-TOKEN.colosim-tmp``, removed by
    :meth:`close`, or by a later ingest when this process was killed)."""

    def __init__(self, threads: int | None, memory_limit: str | None, tmp_dir):
        import duckdb

        self.duckdb = duckdb
        check_database_arguments(threads, memory_limit, tmp_dir)
        base = Path(tmp_dir) if tmp_dir is not None else Path(tempfile.gettempdir())
        remove_stale(base, TMP_NAME)  # left by a killed ingest
        self.dir = temp_path(base / TMP_NAME)
        try:
            os.mkdir(self.dir, 0o700)
        except OSError as exc:
            raise InputError(f"--tmp-dir {base}: cannot make a temporary folder in it "
                             f"({exc.strerror or exc})") from None
        self.con = None
        try:
            self.con = duckdb.connect(str(self.dir / "ingest.duckdb"))
            self.con.execute("SET temp_directory = ?", [str(self.dir / "spill")])
            self.con.execute("SET preserve_insertion_order = true")
            self.con.execute("SET enable_progress_bar = false")
            if threads is not None:
                self.con.execute(f"SET threads = {int(threads)}")
            if memory_limit is not None:
                try:
                    self.con.execute("SET memory_limit = ?", [str(memory_limit)])
                except duckdb.InterruptException:
                    raise KeyboardInterrupt from None
                except duckdb.Error as exc:
                    raise InputError(f"--memory-limit {memory_limit!r}: {_first_line(exc)}") from None
        except BaseException:
            self.close()
            raise

    def close(self):
        try:
            if self.con is not None:
                self.con.close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def batch_size(self) -> int:
        """Shards read per call: DuckDB decompresses a gzip'd file on one
        thread, so several files at once keep every thread busy."""
        threads = int(self.con.execute("SELECT current_setting('threads')").fetchone()[0])
        return max(1, min(threads, MAX_BATCH))

    def read_shards(
        self, paths: list[Path], columns: dict, select: str, table: str, on_bad_lines: str, line_problem
    ) -> int:
        """Read shards into temporary table ``table`` (``select`` over the
        CSV's columns, plus ``filename``); return the number of bad lines
        skipped.

        In ``error`` mode the first bad line (first file in ``paths`` order,
        first line in it) raises an InputError naming file and line.
        """
        con = self.con
        con.execute("DROP TABLE IF EXISTS csv_rejects; DROP TABLE IF EXISTS csv_scans")
        try:
            con.execute(
                f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT {select}, filename "
                f"FROM read_csv(?, columns = ?, filename = true, {_READ_OPTIONS})",
                [[str(p) for p in paths], columns],
            )
            n_rejected = int(con.execute(
                "SELECT count(*) FROM (SELECT DISTINCT scan_id, file_id, line FROM csv_rejects)"
            ).fetchone()[0])
        except self.duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except self.duckdb.Error as exc:
            # Not a bad line but a bad file (truncated gzip, I/O error, ...):
            # find which one and how far it reads, then name it.
            for path in paths:
                for _ in iter_lines(path):
                    pass
            names = ", ".join(str(p) for p in paths)
            raise InputError(f"{names}: cannot be read ({_first_line(exc)})") from None
        # Lines that parse but break a rule the CSV reader cannot express.
        n_invalid = int(con.execute(f"SELECT count(*) FROM {table} WHERE invalid").fetchone()[0])
        if on_bad_lines == "error" and (n_rejected or n_invalid):
            culprits = {
                r[0] for r in con.execute(
                    "SELECT DISTINCT s.file_path FROM csv_rejects r JOIN csv_scans s USING (scan_id, file_id)"
                ).fetchall()
            } | {r[0] for r in con.execute(f"SELECT DISTINCT filename FROM {table} WHERE invalid").fetchall()}
            path = next(p for p in paths if str(p) in culprits)
            found = first_bad_line(path, line_problem)
            if found is None:  # the reader and the checker disagree: name the reader's line
                row = con.execute(
                    "SELECT r.line, r.error_message FROM csv_rejects r JOIN csv_scans s USING (scan_id, file_id) "
                    "WHERE s.file_path = ? ORDER BY r.line LIMIT 1", [str(path)]
                ).fetchone() or (0, "invalid value")
                raise InputError(f"{path}: line {int(row[0])}: {_first_line(row[1])}")
            line, reason = found
            raise InputError(f"{path}: line {line}: {reason}")
        if n_invalid:
            con.execute(f"DELETE FROM {table} WHERE invalid")
        return n_rejected + n_invalid


class _PhaseClock:
    """Wall and CPU seconds (all threads of the process) per phase."""

    def __init__(self, timings: dict):
        self.timings = timings
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def __call__(self, phase: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.timings[phase] = {"wall": wall - self.wall, "cpu": cpu - self.cpu}
        self.wall, self.cpu = wall, cpu


@contextlib.contextmanager
def _interrupts():
    """Ctrl-C as a :class:`KeyboardInterrupt`. Inside a query DuckDB turns
    the interrupt into its own exception (``RuntimeError: Query interrupted``
    in DuckDB 2.0, :class:`duckdb.InterruptException` in others), which the
    command line would take for a failure (exit 1, not 130). A SIGINT seen
    here, or one of those exceptions, becomes a KeyboardInterrupt again."""
    import duckdb

    seen = []
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGINT)
        if callable(previous):
            def note(signum, frame):
                seen.append(signum)
                previous(signum, frame)

            signal.signal(signal.SIGINT, note)
        else:
            previous = None
    try:
        yield
    except KeyboardInterrupt:
        raise
    except Exception as exc:
        if seen or isinstance(exc, duckdb.InterruptException) or (
            isinstance(exc, RuntimeError) and "interrupted" in str(exc).lower()
        ):
            raise KeyboardInterrupt from None
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _in_batches(db: _Database, shards: list[Path], kind: str, progress: Progress):
    """The shards in batches of ``db.batch_size()``; each batch's bytes are
    reported to ``progress`` once the caller has processed it."""
    advance = progress(f"{kind} ({len(shards)} shards)", sum(p.stat().st_size for p in shards), unit="B")
    step = db.batch_size()
    for first in range(0, len(shards), step):
        batch = shards[first : first + step]
        yield batch
        advance(sum(p.stat().st_size for p in batch))


def read_failing_tasks(db: _Database, shards: list[Path], on_bad_lines: str, progress: Progress):
    """Fill table ``failing`` (job, idx) from task_events; return counts."""
    con = db.con
    con.execute("CREATE TABLE event_tasks (job BIGINT, idx BIGINT, failing BOOLEAN)")
    select = (
        "c3 AS job, c4 AS idx, c6 AS event_type, "
        "greatest(c2, c5, c8, c9, c10, c11, c12, c13) AS other_columns, "
        "(c1 IS NULL OR c3 IS NULL OR c4 IS NULL OR c6 IS NULL) AS invalid"
    )
    bad = 0
    for batch in _in_batches(db, shards, "task_events", progress):
        bad += db.read_shards(batch, EVENTS_COLUMNS, select, "events_shard", on_bad_lines, _events_line_problem)
        con.execute(
            f"INSERT INTO event_tasks SELECT job, idx, bool_or(event_type IN ({', '.join(map(str, FAILING_EVENTS))})) "
            "FROM events_shard GROUP BY job, idx"
        )
    con.execute("DROP TABLE IF EXISTS events_shard")
    con.execute(
        "CREATE TABLE failing AS SELECT job, idx FROM event_tasks GROUP BY job, idx HAVING bool_or(failing)"
    )
    n_tasks = con.execute("SELECT count(*) FROM (SELECT DISTINCT job, idx FROM event_tasks)").fetchone()[0]
    n_failing = con.execute("SELECT count(*) FROM failing").fetchone()[0]
    con.execute("DROP TABLE event_tasks")
    return dict(event_tasks=int(n_tasks), event_failing_tasks=int(n_failing), event_bad_lines=int(bad))


def read_usage(db: _Database, shards: list[Path], on_bad_lines: str, progress: Progress) -> dict:
    """Fill ``task_counts`` (per shard and task: records, complete records)
    and ``records`` (complete records of non-failing tasks, step 3 applied)."""
    con = db.con
    con.execute("CREATE TABLE task_counts (job BIGINT, idx BIGINT, n BIGINT, n_complete BIGINT)")
    con.execute(
        "CREATE TABLE records (job BIGINT, idx BIGINT, start_time BIGINT, end_time BIGINT, "
        "machine BIGINT, inst FLOAT, avg FLOAT, mem_avg FLOAT, mem_max FLOAT)"
    )
    select = (
        "c1 AS start_time, c2 AS end_time, c3 AS job, c4 AS idx, c5 AS machine, "
        "c6 AS avg, c20 AS inst, c7 AS mem_avg, c11 AS mem_max, "
        # Unused columns are still parsed (the reader only converts the
        # columns a query reads), so that a bad field anywhere is a bad line.
        "greatest(c8, c9, c10, c12, c13, c14, c15, c16, c17, c18, c19) AS other_columns, "
        "(c1 IS NULL OR c2 IS NULL OR c3 IS NULL OR c4 IS NULL "
        " OR (c6 IS NOT NULL AND (isnan(c6) OR isinf(c6) OR c6 < 0)) "
        " OR (c7 IS NOT NULL AND (isnan(c7) OR isinf(c7) OR c7 < 0)) "
        " OR (c11 IS NOT NULL AND (isnan(c11) OR isinf(c11) OR c11 < 0)) "
        " OR (c20 IS NOT NULL AND (isnan(c20) OR isinf(c20) OR c20 < 0))) AS invalid"
    )
    bad = 0
    above = np.zeros(4, dtype=np.int64)
    for batch in _in_batches(db, shards, "task_usage", progress):
        bad += db.read_shards(batch, USAGE_COLUMNS, select, "usage_shard", on_bad_lines, _usage_line_problem)
        con.execute(
            "INSERT INTO task_counts SELECT job, idx, count(*), "
            "count(*) FILTER (WHERE avg IS NOT NULL AND inst IS NOT NULL) "
            "FROM usage_shard GROUP BY job, idx"
        )
        con.execute(
            "CREATE OR REPLACE TEMP TABLE usage_kept AS SELECT * FROM usage_shard "
            "ANTI JOIN failing USING (job, idx) WHERE avg IS NOT NULL AND inst IS NOT NULL"
        )
        above += con.execute(
            "SELECT count(*) FILTER (WHERE avg > 1), count(*) FILTER (WHERE inst > 1), "
            "count(*) FILTER (WHERE (mem_avg IS NULL) <> (mem_max IS NULL)), "
            "count(*) FILTER (WHERE mem_avg IS NULL AND mem_max IS NULL) FROM usage_kept"
        ).fetchone()
        # memory (docs/ingest.md): a missing mean or maximum is taken from the
        # other; a record with neither keeps its CPU and records memory 0
        con.execute(
            "INSERT INTO records SELECT job, idx, start_time, end_time, machine, "
            "CAST(inst AS FLOAT), CAST(CASE WHEN avg > 1 THEN inst ELSE avg END AS FLOAT), "
            "CAST(coalesce(mem_avg, mem_max, 0) AS FLOAT), CAST(coalesce(mem_max, mem_avg, 0) AS FLOAT) "
            "FROM usage_kept"
        )
    con.execute("DROP TABLE IF EXISTS usage_shard; DROP TABLE IF EXISTS usage_kept")
    return dict(usage_bad_lines=int(bad), avg_above_1_replaced=int(above[0]), inst_above_1=int(above[1]),
                memory_filled_in=int(above[2]), memory_missing=int(above[3]))


def apply_filters(db: _Database, min_records: int, report: IngestReport) -> None:
    """Steps 1-5 counts from the tables; leaves table ``kept`` (job, idx, n)
    sorted by (job, idx)."""
    con = db.con
    con.execute(
        "CREATE TABLE tasks AS SELECT t.job, t.idx, sum(t.n) AS n, sum(t.n_complete) AS n_complete, "
        "(f.job IS NOT NULL) AS failing "
        "FROM task_counts t LEFT JOIN failing f ON t.job = f.job AND t.idx = f.idx GROUP BY t.job, t.idx, f.job"
    )
    con.execute("DROP TABLE task_counts")

    def q(sql):
        row = con.execute(sql).fetchone()
        return tuple(int(v or 0) for v in row)

    tasks0, records0 = q("SELECT count(*), sum(n) FROM tasks")
    report.add_step("input", "task_usage records read", tasks0, records0)
    fail_t, fail_r = q("SELECT count(*), sum(n) FROM tasks WHERE failing")
    tasks1, records1 = tasks0 - fail_t, records0 - fail_r
    report.add_step("failing", "tasks with an EVICT, FAIL, KILL or LOST event dropped",
                    tasks1, records1, fail_t, fail_r)
    incomplete_r, emptied_t = q(
        "SELECT sum(n - n_complete), count(*) FILTER (WHERE n_complete = 0) FROM tasks WHERE NOT failing"
    )
    tasks2, records2 = tasks1 - emptied_t, records1 - incomplete_r
    report.add_step(
        "missing", "records missing column 6 or 20 dropped (tasks left with none)",
        tasks2, records2, emptied_t, incomplete_r,
    )
    con.execute(
        "CREATE TABLE task_stats AS SELECT job, idx, count(*) AS n, max(inst) AS max_inst "
        "FROM records GROUP BY job, idx"
    )
    check = q("SELECT count(*), sum(n) FROM task_stats")
    if check != (tasks2, records2):  # pragma: no cover - an internal invariant
        raise RuntimeError(f"ingest bookkeeping disagrees: {check} vs {(tasks2, records2)}")
    report.add_step(
        "above_1", "averages above 1 replaced by the instantaneous value", tasks2, records2, 0, 0
    )
    zero_t, zero_r = q("SELECT count(*), sum(n) FROM task_stats WHERE max_inst = 0")
    tasks4, records4 = tasks2 - zero_t, records2 - zero_r
    report.add_step("zero_usage", "tasks with zero instantaneous usage in every record dropped",
                    tasks4, records4, zero_t, zero_r)
    short_t, short_r = q(f"SELECT count(*), sum(n) FROM task_stats WHERE max_inst > 0 AND n < {int(min_records)}")
    tasks5, records5 = tasks4 - short_t, records4 - short_r
    report.add_step(
        "short", f"short tasks (fewer than {min_records} records after step 2) dropped",
        tasks5, records5, short_t, short_r,
    )
    con.execute(
        f"CREATE TABLE kept AS SELECT job, idx, n FROM task_stats WHERE max_inst > 0 AND n >= {int(min_records)} "
        "ORDER BY job, idx"
    )
    con.execute("DROP TABLE task_stats")


def write_output(db: _Database, out: Path, report: IngestReport, source: dict, block: int = 1 << 22,
                 check=None) -> None:
    """Sort the kept records and stream them to the series file (``check``,
    when given, is called just before the file is started)."""
    con = db.con
    kept = con.execute("SELECT job, idx, n FROM kept ORDER BY job, idx").fetchnumpy()
    task_id = (np.stack([kept["job"], kept["idx"]], axis=1).astype(np.int64) if len(kept["job"])
               else np.zeros((0, 2), np.int64))
    offsets = np.zeros(len(task_id) + 1, dtype=np.int64)
    np.cumsum(np.asarray(kept["n"], dtype=np.int64), out=offsets[1:])
    con.execute(
        "CREATE TABLE sorted AS SELECT r.job, r.idx, r.start_time, r.end_time, r.machine, r.inst, r.avg, "
        "r.mem_avg, r.mem_max "
        "FROM records r SEMI JOIN kept USING (job, idx) "
        "ORDER BY r.job, r.idx, r.start_time, r.end_time, r.machine NULLS FIRST"
    )
    con.execute("DROP TABLE records")
    dup = con.execute(
        "SELECT coalesce(sum(c - 1), 0) FROM (SELECT count(*) AS c FROM sorted "
        "GROUP BY job, idx, start_time, end_time, machine HAVING count(*) > 1)"
    ).fetchone()[0]
    report.counts["duplicates"] = int(dup)
    n_records = int(offsets[-1])
    if check is not None:
        check()
    with SeriesWriter(out, task_id=task_id, offsets=offsets, source=source, filters=report.to_dict(),
                      memory=True) as writer:
        for start in range(0, n_records, block):
            part = con.execute(
                "SELECT start_time, inst, avg, mem_avg, mem_max FROM sorted WHERE rowid >= ? AND rowid < ?",
                [start, start + block],
            ).fetchnumpy()
            writer.write_records(start, part["inst"], part["avg"], part["start_time"], part["mem_avg"],
                                 part["mem_max"])


def ingest_google2011(
    trace_dir: str | os.PathLike | None,
    out: str | os.PathLike,
    *,
    task_events=None,
    task_usage=None,
    min_records: int = MIN_RECORDS,
    threads: int | None = None,
    memory_limit: str | None = None,
    on_bad_lines: str = "error",
    tmp_dir=None,
    progress: Progress = no_progress,
    force: bool = False,
) -> IngestReport:
    """Ingest Google 2011 shards into the series file ``out`` (SPEC §7).

    Parameters
    ----------
    trace_dir
        Folder holding ``task_events/`` and ``task_usage/``; either may be
        given instead (or overridden) by ``task_events`` / ``task_usage``: a
        folder, a glob or a file.
    out
        Series file to write (atomically: an existing file is replaced only on
        success, and only with ``force``). It must not be an input.
    min_records
        Tasks with fewer records (after step 2) are short (SPEC §7 step 5).
    threads, memory_limit
        DuckDB's worker threads and memory limit (e.g. ``"4GB"``); past the
        limit it spills to ``tmp_dir``.
    on_bad_lines
        ``"error"``: the first bad line is an InputError naming file and line;
        ``"skip"``: bad lines are dropped and counted in the report.
    tmp_dir
        Folder for DuckDB's database and spill files (default: the system's
        temporary folder); needs room for about the size of the kept records.
    progress
        The progress protocol (:mod:`colosim.progress`), in bytes of shards.
    force
        Replace an existing ``out``; only a series file is replaced.

    Returns
    -------
    IngestReport
        The counts, also stored in the series' ``filters`` attribute.
    """
    # Every check before any work: nothing is made for a run that fails them.
    check_arguments(min_records, on_bad_lines)
    check_database_arguments(threads, memory_limit, tmp_dir)
    if trace_dir is not None:
        trace_dir = Path(trace_dir)
        if not trace_dir.is_dir():
            raise InputError(f"{trace_dir}: trace directory not found")
    events_spec = task_events if task_events is not None else (trace_dir / "task_events" if trace_dir else None)
    usage_spec = task_usage if task_usage is not None else (trace_dir / "task_usage" if trace_dir else None)
    if events_spec is None or usage_spec is None:
        raise InputError("give a trace directory, or both task_events and task_usage shards")
    events = find_shards(events_spec, "task_events")
    usage = find_shards(usage_spec, "task_usage")
    folders = [p for p in (trace_dir, events_spec, usage_spec) if p is not None and Path(p).is_dir()]
    output = claim_series(out, inputs=[*events, *usage, *folders], force=force)
    check_outside_temporaries([*events, *usage, output.path], tmp_dir)
    with writing(output), _interrupts():
        return _ingest(output, events, usage, min_records, threads, memory_limit, on_bad_lines, tmp_dir, progress)


def _ingest(output, events, usage, min_records, threads, memory_limit, on_bad_lines, tmp_dir, progress):
    report = IngestReport()
    t0 = time.perf_counter()
    db = _Database(threads, memory_limit, tmp_dir)
    try:
        clock = _PhaseClock(report.timings)
        report.counts.update(read_failing_tasks(db, events, on_bad_lines, progress))
        clock("task_events")
        report.counts.update(read_usage(db, usage, on_bad_lines, progress))
        clock("task_usage")
        apply_filters(db, int(min_records), report)
        clock("filters")
        report.counts.update(
            min_records=int(min_records),
            on_bad_lines=on_bad_lines,
            bad_lines=report.counts["event_bad_lines"] + report.counts["usage_bad_lines"],
            task_events_shards=len(events),
            task_usage_shards=len(usage),
        )
        source = dict(
            format="google2011",
            task_events=([str(p) for p in events] if len(events) <= 20
                         else f"{len(events)} shards from {events[0].parent}"),
            task_usage=[str(p) for p in usage] if len(usage) <= 20 else f"{len(usage)} shards from {usage[0].parent}",
        )
        write_output(db, output.path, report, source, check=output.check)
        clock("sort_and_write")
    finally:
        db.close()
    report.seconds = time.perf_counter() - t0
    return report
