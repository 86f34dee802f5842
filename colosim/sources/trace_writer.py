"""Synthetic traces in the Google 2011 file format, with known contents.

``write_synthetic_trace`` writes ``task_events/`` and ``task_usage/`` shards
(gzip'd CSV, no header, the official columns) for the built-in population of
:mod:`colosim.sources.population`, cut to a trace of ``days`` days, and plants
what the ingest filters (SPEC §7) must remove or repair:

- *failing* tasks: extra tasks with an EVICT, FAIL, KILL or LOST event;
- *zero-usage* tasks: extra tasks whose sampled usage (column 20) is 0 in
  every record;
- *short* tasks: extra tasks with 1 to 23 records (and population tasks that
  the trace's end cuts below 24 records);
- *incomplete* records: in some long tasks, an extra record with an empty
  column 6 or 20;
- *averages above 1*: in some long tasks, the first record's column 6 is 1.5.

So that the whole pipeline runs on a machine without the real trace, and a
test can check that ingest recovers exactly what was planted: the expected
count of every step and the list of long tasks are written to
``planted.json`` beside the two folders.

Layout: shard s holds the windows of day s (288 five-minute windows), in
time order; a task of the population keeps its records that fall inside the
trace. Usage values are written with 4 significant digits, as in the
official files; columns 7 and 11 of a population task's records are the
population's memory (mean and maximum of the window, docs/population.md),
so that the ingested series holds it (format 2); the other columns are
plausible random values. Output is written to a temporary folder that is
renamed into place at the end.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import numpy as np

from .. import streams
from ..errors import InputError
from ..io import outputs
from ..io.outputs import claim_dir
from ..io.series import WINDOW_US
from ..progress import Progress, no_progress
from ..resources import MAX_TASKS, check_memory
from .ingest import MIN_RECORDS
from .population import TRACE_START_US, PopulationModel, SyntheticPopulation

WINDOWS_PER_DAY = 288
_EXTRA_JOB_BASE = 7_000_000_000  # jobs of the planted extra tasks (population: 6e9 + ...)
FAILING_TYPES = (2, 3, 5, 6)
_TAG_MIDDLE = 4011
_POOL = 4096
_USER = "70s3v5qRyCO/1PCdI6fVXnrW8FU/w+5CKRSa72xgcIo="


def _middle_pool(seed: int) -> tuple[list[str], list[str], list[str]]:
    """Columns 7-19 of a usage record (memory, page cache, I/O, max CPU, CPI,
    ...): a pool of plausible random rows, so that the files compress about
    as well as the official ones. Returned in three parts around the two
    memory columns that colosim reads, 7 and 11: the pool's rows as whole
    (for the planted tasks, dropped by ingest), columns 8-10 and columns
    12-19 (around a population task's own memory)."""
    g = np.random.default_rng([seed, _TAG_MIDDLE])
    scales = np.array([0.1, 0.1, 0.002, 0.003, 0.1, 1e-5, 5e-4, 0.2, 1e-3, 4.0, 0.02])
    values = g.random((_POOL, len(scales))) * scales
    cells = [["%.4g" % v for v in row] + ["0", "1"] for row in values.tolist()]
    return ([",".join(c) for c in cells], [",".join(c[1:4]) for c in cells], [",".join(c[5:]) for c in cells])


def _fmt(values: np.ndarray) -> list[str]:
    """Usage values as the trace writes them: 4 significant digits."""
    return ["%.4g" % v for v in values.tolist()]


class _ShardWriter:
    """One gzip stream per day, for task_usage or task_events."""

    def __init__(self, folder: Path, n_shards: int):
        folder.mkdir(parents=True)
        self.files = [
            gzip.open(folder / f"part-{s:05d}-of-{n_shards:05d}.csv.gz", "wt", compresslevel=6, newline="")
            for s in range(n_shards)
        ]

    def write(self, shard_of_row: np.ndarray, time_of_row: np.ndarray, lines: list[str]) -> None:
        """Append lines, each to its shard, in time order (stable)."""
        order = np.lexsort((time_of_row, shard_of_row))
        shards = shard_of_row[order]
        bounds = np.flatnonzero(np.diff(shards)) + 1
        for part in np.split(order, bounds):
            if len(part):
                self.files[int(shard_of_row[part[0]])].write("".join(lines[i] for i in part.tolist()))

    def close(self) -> None:
        for f in self.files:
            f.close()


def write_synthetic_trace(
    out_dir: str | os.PathLike,
    *,
    n_tasks: int,
    days: int,
    seed: int,
    model: PopulationModel = PopulationModel(),
    failing_share: float = 0.05,
    zero_share: float = 0.02,
    short_share: float = 0.2,
    plant_every: int = 50,
    chunk_tasks: int = 256,
    progress: Progress = no_progress,
) -> dict:
    """Write a synthetic Google 2011 trace to ``out_dir`` (which must not
    exist or be empty) and return the planted facts (also in
    ``out_dir/planted.json``).

    Parameters
    ----------
    n_tasks
        Tasks of the population (the long-task candidates).
    days
        Length of the trace; one shard per day. Population tasks that run
        past the end are cut.
    seed
        Seed of the population and of the planted tasks.
    failing_share, zero_share, short_share
        Extra failing, zero-usage and short tasks, as shares of ``n_tasks``.
    plant_every
        Every ``plant_every``-th long task gets an average of 1.5 in its first
        record, and (offset by half) two incomplete extra records.
    progress
        The progress protocol (:mod:`colosim.progress`), in tasks written.
    """
    if not isinstance(n_tasks, (int, np.integer)) or n_tasks < 1:
        raise InputError(f"n_tasks must be a positive integer, not {n_tasks!r}", param="n_tasks")
    if not isinstance(days, (int, np.integer)) or days < 1:
        raise InputError(f"days must be a positive integer, not {days!r}", param="days")
    for name, v in (("failing_share", failing_share), ("zero_share", zero_share), ("short_share", short_share)):
        if not 0 <= v <= 10:
            raise InputError(f"{name} must be in [0, 10], not {v!r}")
    if n_tasks > MAX_TASKS:
        raise InputError(f"n_tasks must be <= {MAX_TASKS}, not {n_tasks}", param="n_tasks")
    most_days = max_days()
    if days > most_days:
        raise InputError(f"days must be <= {most_days} (one open file per day and table, within this "
                         f"process's limit of open files), not {days}", param="days")
    check_memory(64.0 * n_tasks, f"a synthetic trace of {n_tasks} tasks")
    out_dir = outputs.named(claim_dir(out_dir))
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise InputError(f"{out_dir}: exists and is not an empty directory (will not overwrite)")
    population = SyntheticPopulation(int(n_tasks), seed, model)  # checks the seed
    n_windows = int(days) * WINDOWS_PER_DAY
    parent = out_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    outputs.remove_stale(parent, out_dir.name)  # those of a killed run
    tmp = outputs.temp_path(out_dir)
    tmp.mkdir()
    try:
        advance = progress(f"synth-trace {out_dir.name}", total_tasks(n_tasks, failing_share, zero_share,
                                                                      short_share))
        planted = _write(tmp, population, n_windows, int(days), seed, failing_share, zero_share,
                         short_share, plant_every, chunk_tasks, advance)
        (tmp / "planted.json").write_text(json.dumps(planted, indent=1) + "\n", encoding="utf-8")
        if out_dir.exists():
            out_dir.rmdir()
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return planted


def max_days() -> int:
    """The most days a trace may have: two shards (task_events,
    task_usage) are open per day, within this process's soft limit of open
    files, less some for everything else."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY or soft < 0:
            soft = 1 << 16
    except (ImportError, OSError, ValueError):  # no such limit here
        soft = 1024
    return max(1, (min(soft, 1 << 16) - 64) // 2)


def total_tasks(n_tasks: int, failing_share=0.05, zero_share=0.02, short_share=0.2) -> int:
    """Population plus planted extra tasks (what ``progress`` counts up to)."""
    return int(n_tasks) + sum(int(round(v * n_tasks)) for v in (failing_share, zero_share, short_share))


def _extra_tasks(seed: int, n_tasks: int, n_windows: int, failing_share, zero_share, short_share):
    """The planted extra tasks: (kind, job, idx, first window, inst, avg, event type)."""
    g = streams.planted_tasks(seed)
    kinds = (["failing"] * int(round(failing_share * n_tasks)) + ["zero"] * int(round(zero_share * n_tasks))
             + ["short"] * int(round(short_share * n_tasks)))
    extra = []
    for i, kind in enumerate(kinds):
        job, idx = _EXTRA_JOB_BASE + 41 * (i // 10), i % 10
        if kind == "short":
            length = int(g.integers(1, MIN_RECORDS))
        else:
            length = int(g.integers(MIN_RECORDS, 200))
        length = min(length, n_windows)
        first = int(g.integers(0, n_windows - length + 1))
        inst = g.gamma(0.7, 0.02, length).astype(np.float32)
        avg = (inst * g.uniform(0.6, 1.4, length)).astype(np.float32)
        if kind == "zero":
            inst[:] = 0
        else:
            inst[int(g.integers(0, length))] = max(inst.max(), 0.01)  # surely non-zero after formatting
        event = FAILING_TYPES[i % 4] if kind == "failing" else 4
        extra.append((kind, job, idx, first, inst, avg, event))
    return extra


def _write(tmp, population, n_windows, days, seed, failing_share, zero_share, short_share,
           plant_every, chunk_tasks, advance) -> dict:
    usage = _ShardWriter(tmp / "task_usage", days)
    events = _ShardWriter(tmp / "task_events", days)
    counts = {k: [0, 0] for k in ("input", "failing", "missing", "zero_usage", "short", "long")}
    long_tasks = []
    middle, middle_8_10, middle_12_19 = _middle_pool(seed)
    n_long = 0
    above_1 = 0
    above_1_tasks = []
    try:
        # (kind, job, idx, first window, inst, avg, event) for every task, the
        # population first, in chunks
        def population_tasks(ks):
            params = population.params
            for k in ks:
                inst, avg = population.task(int(k))
                first = int(params.start[k])
                keep = max(0, min(len(inst), n_windows - first))
                if keep == 0:
                    continue
                job, idx = (int(v) for v in population.task_id[k])
                mem_avg, mem_max = population.memory(int(k))
                yield ("population", job, idx, first, inst[:keep], avg[:keep], 4, mem_avg[:keep], mem_max[:keep])

        extra = _extra_tasks(seed, population.n_tasks, n_windows, failing_share, zero_share, short_share)
        n_total = population.n_tasks + len(extra)
        for start in range(0, n_total, chunk_tasks):
            stop = min(n_total, start + chunk_tasks)
            ks = range(start, min(stop, population.n_tasks))
            chunk = (list(population_tasks(ks))
                     + extra[max(0, start - population.n_tasks) : max(0, stop - population.n_tasks)])
            u_lines, u_time, e_lines, e_time = [], [], [], []
            for kind, job, idx, first, inst, avg, event, *memory in chunk:
                inst_s, avg_s = _fmt(inst), _fmt(avg)
                n = len(inst_s)
                zero = all(s == "0" for s in inst_s)
                if kind == "failing":
                    cls = "failing"
                elif zero:
                    cls = "zero_usage"
                elif n < MIN_RECORDS:
                    cls = "short"
                else:
                    cls = "long"
                machine = 100_000 + (job * 31 + idx * 7) % 900_000
                extra_rows = []
                if cls == "long":
                    n_long += 1
                    if n_long % plant_every == 0:
                        avg_s[0] = "1.5"
                        above_1 += 1
                        above_1_tasks.append([job, idx])
                    if n_long % plant_every == plant_every // 2:
                        extra_rows = [(0, "", inst_s[0]), (0, avg_s[0], "")]
                    long_tasks.append([job, idx, n])
                t0 = TRACE_START_US + first * WINDOW_US
                times = [t0 + WINDOW_US * i for i in range(n)]
                pick = np.random.default_rng([seed, _TAG_MIDDLE, job, idx]).integers(0, _POOL, n).tolist()
                if memory:  # a population task: its own memory in columns 7 and 11
                    mid = [f"{ma},{middle_8_10[m]},{mx},{middle_12_19[m]}"
                           for ma, mx, m in zip(_fmt(memory[0]), _fmt(memory[1]), pick)]
                else:
                    mid = [middle[m] for m in pick]
                rows = [f"{t},{t + WINDOW_US},{job},{idx},{machine},{a},{c},{x}\n"
                        for t, a, x, c in zip(times, avg_s, inst_s, mid)]
                for i, a, x in extra_rows:
                    rows.append(f"{times[i]},{times[i] + WINDOW_US},{job},{idx},{machine + 1},{a},{middle[0]},{x}\n")
                    times.append(times[i])
                counts["input"][0] += 1
                counts["input"][1] += len(rows)
                counts["missing"][1] += len(extra_rows)
                if cls != "long":
                    counts[cls][0] += 1
                    counts[cls][1] += n
                else:
                    counts["long"][0] += 1
                    counts["long"][1] += n
                u_lines += rows
                u_time += times
                end = times[n - 1] + WINDOW_US
                for t, etype in ((t0 - 1_000_000, 0), (t0, 1), (end, event)):
                    e_lines.append(f"{t},,{job},{idx},{machine},{etype},{_USER},2,9,0.0625,0.03198,0.0003862,0\n")
                    e_time.append(t)
            u_time_a = np.asarray(u_time, dtype=np.int64)
            e_time_a = np.asarray(e_time, dtype=np.int64)
            usage.write(_day(u_time_a, days), u_time_a, u_lines)
            events.write(_day(e_time_a, days), e_time_a, e_lines)
            advance(stop - start)
    finally:
        usage.close()
        events.close()

    def step(name, what_tasks, what_records, prev):
        tasks, records = prev["tasks"] - what_tasks, prev["records"] - what_records
        return dict(step=name, tasks=tasks, records=records, tasks_dropped=what_tasks, records_dropped=what_records)

    s0 = dict(step="input", tasks=counts["input"][0], records=counts["input"][1],
              tasks_dropped=None, records_dropped=None)
    s1 = step("failing", *counts["failing"], s0)
    s2 = step("missing", 0, counts["missing"][1], s1)
    s3 = step("above_1", 0, 0, s2)
    s4 = step("zero_usage", *counts["zero_usage"], s3)
    s5 = step("short", *counts["short"], s4)
    assert (s5["tasks"], s5["records"]) == tuple(counts["long"])
    return {
        "format": "google2011-synthetic",
        "population": population.source,
        "days": days,
        "min_records": MIN_RECORDS,
        "steps": [s0, s1, s2, s3, s4, s5],
        "avg_above_1_replaced": above_1,
        "avg_above_1_tasks": above_1_tasks,
        "failing_tasks": counts["failing"][0],
        "long_tasks": long_tasks,
    }


def _day(times: np.ndarray, days: int) -> np.ndarray:
    """Shard (day) of each timestamp; events before the first window go to
    shard 0, after the last to the last shard."""
    day = (times - TRACE_START_US) // (WINDOW_US * WINDOWS_PER_DAY)
    return np.clip(day, 0, days - 1)
