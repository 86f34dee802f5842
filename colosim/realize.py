"""Realization (SPEC §8): from per-task record series to a store of R draws
per task, streamed to disk block by block.

The recipe fixes every random number, so the same seed gives the same bytes
anywhere:

- rows: ``default_rng([seed, 0]).choice(n_series, N, replace=False)``, stored
  in the order drawn;
- stored row j (task with T_j records): ``g = default_rng([seed, 1, j])``;
  x indices ``g.integers(0, T_j, R)``; then y indices ``g.integers(0, T_j, R)``
  (``independent``, the paper's Section 3.1) or the x indices (``paired``).

``time-aligned`` (docs/beyond.md; not in the paper, whose Monte Carlo treats
tasks as independent) keeps the cross-task correlation of the trace: all
rows share R trace times ``tau_t = default_rng([seed, 2]).integers(T0, T1,
R)``, with ``T0`` the earliest record start of the source and ``T1`` the
latest plus one window (``WINDOW_US``). Row j takes, at realization t, the
record of its task that covers ``tau_t`` (the last record with ``start <=
tau_t < start + WINDOW_US``); where none does, the record
``g.integers(0, T_j, R)[t]`` with ``g = default_rng([seed, 1, j])`` (the
paired draw). x and y come from the same record.
"""

from __future__ import annotations

import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np

from .errors import InputError
from .io.store import StoreWriter

SAMPLINGS = ("independent", "paired", "time-aligned")

#: length of one record's window (Google 2011 and 2019: 5 minutes, in µs)
WINDOW_US = 300_000_000


class SeriesSource(Protocol):
    """What realization needs of a series: a file's :class:`~colosim.io.Series`
    or a synthetic population generated on demand."""

    task_id: np.ndarray

    @property
    def n_tasks(self) -> int: ...

    def task(self, k: int) -> tuple[np.ndarray, np.ndarray]: ...


def select_rows(n_series: int, n_tasks: int, seed: int) -> np.ndarray:
    """The series rows that become the store's rows, in stored order."""
    if n_tasks > n_series:
        raise InputError(f"--tasks {n_tasks} is more than the {n_series} tasks of the series")
    return np.random.default_rng([seed, 0]).choice(n_series, n_tasks, replace=False)


def draw_indices(seed: int, j: int, length: int, n_realizations: int, sampling: str):
    """Record indices (x, y) of stored row j."""
    g = np.random.default_rng([seed, 1, j])
    ix = g.integers(0, length, n_realizations)
    iy = ix if sampling == "paired" else g.integers(0, length, n_realizations)
    return ix, iy


def time_range(series) -> tuple[int, int]:
    """``(T0, T1)``: earliest record start of the source and latest record
    start plus one window, in the source's time unit (µs).

    Uses the source's own ``time_range()`` when it has one (a synthetic
    population knows it without generating records), else the first and
    last start time of every task of a series file (records are sorted by
    start time, SPEC §7).
    """
    if hasattr(series, "time_range"):
        lo, hi = series.time_range()
        return int(lo), int(hi)
    start = getattr(series, "start_time", None)
    offsets = getattr(series, "offsets", None)
    if start is None or offsets is None:
        raise InputError("sampling 'time-aligned' needs record start times, and this source has none")
    offsets = np.asarray(offsets, dtype=np.int64)
    nonempty = offsets[1:] > offsets[:-1]
    if not nonempty.any():
        raise InputError("sampling 'time-aligned': the source has no records")
    firsts = np.asarray(start)[offsets[:-1][nonempty]]
    lasts = np.asarray(start)[offsets[1:][nonempty] - 1]
    return int(firsts.min()), int(lasts.max()) + WINDOW_US


def shared_times(seed: int, n_realizations: int, t0: int, t1: int) -> np.ndarray:
    """The trace times ``tau_t`` shared by every row (time-aligned)."""
    return np.random.default_rng([seed, 2]).integers(t0, t1, n_realizations)


def aligned_indices(seed: int, j: int, start_time: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Record index of stored row j at every shared time (time-aligned):
    the record covering ``tau_t``, else the row's own paired draw."""
    length = len(start_time)
    order = None
    if length > 1 and np.any(np.diff(start_time) < 0):
        order = np.argsort(start_time, kind="stable")
        start_time = start_time[order]
    idx = np.searchsorted(start_time, tau, side="right") - 1
    safe = np.maximum(idx, 0)
    covered = (idx >= 0) & (tau < start_time[safe] + WINDOW_US)
    own, _ = draw_indices(seed, j, length, len(tau), "paired")
    return np.where(covered, safe if order is None else order[safe], own)


def _timed_loader(series):
    """A function k -> (inst, avg, start_time) of series task k."""
    if hasattr(series, "records"):
        return series.records
    if getattr(series, "start_time", None) is None:
        raise InputError("sampling 'time-aligned' needs record start times, and this source has none")

    def load(k: int):
        inst, avg = series.task(k)
        a, b = int(series.offsets[k]), int(series.offsets[k + 1])
        return inst, avg, np.asarray(series.start_time[a:b], dtype=np.int64)

    return load


def _task_loader(series: SeriesSource):
    """A function k -> (inst, avg) of series task k.

    For a series file (memory-mapped arrays) the records are read with
    ``pread``: pages of a map would count toward the resident set, and a
    store drawn from a large series would then hold much of it in memory.
    """
    inst, avg = getattr(series, "inst", None), getattr(series, "avg", None)
    offsets = getattr(series, "offsets", None)
    if isinstance(inst, np.memmap) and isinstance(avg, np.memmap) and offsets is not None and inst.filename:
        offsets = np.asarray(offsets, dtype=np.int64)
        fd = os.open(inst.filename, os.O_RDONLY)
        parts = ((inst, int(inst.offset)), (avg, int(avg.offset)))

        def load(k: int):
            a, b = int(offsets[k]), int(offsets[k + 1])
            out = []
            for arr, base in parts:
                buf = np.empty(b - a, dtype=arr.dtype)
                view = memoryview(buf).cast("B")
                got = 0
                while got < len(view):
                    n = os.preadv(fd, [view[got:]], base + a * arr.dtype.itemsize + got)
                    if n == 0:
                        raise InputError(f"{inst.filename}: truncated (task {k})")
                    got += n
                out.append(buf)
            return out[0], out[1]

        load.close = lambda: os.close(fd)
        return load

    def load(k: int):
        i, a = series.task(k)
        return np.asarray(i, dtype=np.float32), np.asarray(a, dtype=np.float32)

    load.close = lambda: None
    return load


def _fill_block(load, rows, seed, start, stop, n_realizations, sampling, xb, yb, tau=None):
    """Rows ``start:stop`` of the store into ``xb``, ``yb`` (SPEC §8 recipe).

    Runs in a worker thread: NumPy's generators and ``take`` release the GIL,
    and each row's numbers depend on its index j alone, so the bytes do not
    depend on how rows are spread over threads.
    """
    for j in range(start, stop):
        k = int(rows[j])
        if tau is not None:
            inst, avg, start_time = load(k)
            start_time = np.asarray(start_time, dtype=np.int64)
            if len(start_time) != len(inst):
                raise InputError(f"series task {k}: {len(inst)} records but {len(start_time)} start times")
        else:
            inst, avg = load(k)
        if len(inst) == 0:
            raise InputError(f"series task {k} has no records")
        if len(avg) != len(inst):
            raise InputError(f"series task {k}: {len(inst)} instantaneous but {len(avg)} average records")
        for name, values in (("inst", inst), ("avg", avg)):
            if not (np.isfinite(values).all() and (values >= 0).all()):
                raise InputError(f"series task {k}: {name!r} holds NaN, infinite or negative usage")
        if tau is not None:
            ix = iy = aligned_indices(seed, j, start_time, tau)
        else:
            ix, iy = draw_indices(seed, j, len(inst), n_realizations, sampling)
        np.take(inst, ix, out=xb[j - start])
        np.take(avg, iy, out=yb[j - start])


def default_threads() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


def realize(
    series: SeriesSource,
    out: str | os.PathLike,
    *,
    n_tasks: int,
    n_realizations: int,
    seed: int,
    sampling: str = "independent",
    source=None,
    block_rows: int | None = None,
    threads: int | None = None,
    progress=None,
) -> None:
    """Write a store of ``n_tasks`` × ``n_realizations`` realizations drawn
    from ``series`` (SPEC §8), atomically.

    Rows are drawn in blocks by ``threads`` worker threads and written in
    order; at most ``threads + 2`` blocks (of ``block_rows`` rows, by default
    about 8 MB per matrix) are in memory at once, whatever N and R. The bytes
    written do not depend on ``threads`` or ``block_rows``.

    ``progress``, if given, is called with the number of rows just written.
    """
    if sampling not in SAMPLINGS:
        raise InputError(f"sampling must be one of {', '.join(SAMPLINGS)}, not {sampling!r}")
    if n_tasks < 1:
        raise InputError(f"--tasks must be >= 1, not {n_tasks}")
    if n_realizations < 1:
        raise InputError(f"--realizations must be >= 1, not {n_realizations}")
    threads = default_threads() if threads is None else int(threads)
    if threads < 1:
        raise InputError(f"--threads must be >= 1, not {threads}")
    if block_rows is None:
        block_rows = max(1, (8 << 20) // (4 * n_realizations))
    block_rows = max(1, int(block_rows))
    rows = select_rows(series.n_tasks, n_tasks, seed)
    task_id = np.asarray(series.task_id)[rows]
    tau = None
    if sampling == "time-aligned":
        tau = shared_times(seed, n_realizations, *time_range(series))
        timed = _timed_loader(series)
        load = lambda k: timed(k)  # noqa: E731
        load.close = lambda: None
    else:
        load = _task_loader(series)
    n_buffers = threads + 2
    buffers = [
        (np.empty((block_rows, n_realizations), dtype=np.float32), np.empty((block_rows, n_realizations), dtype=np.float32))
        for _ in range(min(n_buffers, -(-n_tasks // block_rows)))
    ]
    starts = list(range(0, n_tasks, block_rows))
    try:
        with StoreWriter(
            out,
            n_tasks=n_tasks,
            n_realizations=n_realizations,
            seed=seed,
            sampling=sampling,
            source=source,
            task_id=task_id,
        ) as writer, ThreadPoolExecutor(max_workers=threads) as pool:
            pending: deque = deque()
            free = deque(range(len(buffers)))
            next_block = 0
            try:
                while next_block < len(starts) or pending:
                    while free and next_block < len(starts):
                        b = free.popleft()
                        start = starts[next_block]
                        stop = min(n_tasks, start + block_rows)
                        xb, yb = buffers[b][0][: stop - start], buffers[b][1][: stop - start]
                        fut = pool.submit(_fill_block, load, rows, seed, start, stop, n_realizations, sampling,
                                          xb, yb, tau)
                        pending.append((fut, b, start, stop))
                        next_block += 1
                    fut, b, start, stop = pending.popleft()
                    fut.result()
                    xb, yb = buffers[b][0][: stop - start], buffers[b][1][: stop - start]
                    writer.write_rows(start, xb, yb, check=False)
                    free.append(b)
                    if progress is not None:
                        progress(stop - start)
            except BaseException:
                for fut, *_ in pending:
                    fut.cancel()
                raise
    finally:
        load.close()
