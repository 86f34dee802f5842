"""Realization (SPEC §8): from per-task record series to a store of R draws
per task, streamed to disk block by block.

The recipe fixes every random number, so the same seed gives the same bytes
anywhere:

- rows: ``default_rng([seed, 0]).choice(n_series, N, replace=False)``, stored
  in the order drawn;
- stored row j (task with T_j records): ``g = default_rng([seed, 1, j])``;
  x indices ``g.integers(0, T_j, R)``; then y indices ``g.integers(0, T_j, R)``
  (``independent``, the paper's Section 3.1) or the x indices (``paired``).

``time-aligned`` (docs/estimators.md; not in the paper, whose Monte Carlo treats
tasks as independent) keeps the cross-task correlation of the trace: all
rows share R trace times ``tau_t = default_rng([seed, 2]).integers(T0, T1,
R)``, with ``T0`` the earliest record start of the source and ``T1`` the
latest plus one window (``WINDOW_US``). Row j takes, at realization t, the
record of its task that covers ``tau_t`` (the last record with ``start <=
tau_t < start + WINDOW_US``); where none does, the record
``g.integers(0, T_j, R)[t]`` with ``g = default_rng([seed, 1, j])`` (the
paired draw). x and y come from the same record.

``window-quantiles`` (docs/spec.md, beside §8; for series with the window's
CPU percentiles, Google 2019) draws the record indices as ``independent``,
then ``u = g.random(R)`` from the same generator; x at realization t is the
record ``ix[t]``'s quantile function at ``u[t]``, linear between its knots
at :data:`~colosim.io.series.QUANTILE_LEVELS` (p0, the window's least
second, to p100, its greatest), in float64 then rounded to float32.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

import numpy as np

from .. import streams
from ..errors import InputError
from ..io._hdf5 import sha256_file
from ..io.outputs import claim, lock
from ..io.series import QUANTILE_LEVELS, WINDOW_US, open_series
from ..io.store import STORE_KIND, StoreWriter
from ..progress import Progress, no_progress
from ..resources import check_disk, check_memory

SAMPLINGS = ("independent", "paired", "time-aligned", "window-quantiles")


class SeriesSource(Protocol):
    """What realization needs of a series: a file's :class:`~colosim.io.Series`
    or a synthetic population generated on demand. ``task(k)`` gives task
    k's (inst, avg) records; for time-aligned realization ``records(k)``
    gives them with their start times and ``time_range()`` the span of the
    whole source. A source may offer ``reader()``, a context manager whose
    value reads single tasks faster for a pass over many of them (a series
    file reads them with ``pread``)."""

    task_id: np.ndarray

    @property
    def n_tasks(self) -> int: ...

    def task(self, k: int) -> tuple[np.ndarray, np.ndarray]: ...


def select_rows(n_series: int, n_tasks: int, seed: int) -> np.ndarray:
    """The series rows that become the store's rows, in stored order."""
    if n_tasks > n_series:
        raise InputError(f"n_tasks {n_tasks} is more than the {n_series} tasks of the series", param="n_tasks")
    return streams.store_rows(seed).choice(n_series, n_tasks, replace=False)


def draw_indices(seed: int, j: int, length: int, n_realizations: int, sampling: str):
    """Record indices (x, y) of stored row j."""
    g = streams.row_draws(seed, j)
    ix = g.integers(0, length, n_realizations)
    iy = ix if sampling == "paired" else g.integers(0, length, n_realizations)
    return ix, iy


def quantile_draws(seed: int, j: int, length: int, n_realizations: int):
    """Record indices (x, y) of stored row j and the levels ``u`` of its x
    draws (``window-quantiles``): the indices are the ``independent`` ones."""
    g = streams.row_draws(seed, j)
    ix = g.integers(0, length, n_realizations)
    iy = g.integers(0, length, n_realizations)
    return ix, iy, g.random(n_realizations)


def interpolate_quantiles(knots: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The quantile functions of ``knots`` (draws x levels, the knot values
    of each draw's record at :data:`QUANTILE_LEVELS`) at ``u`` (one level per
    draw, in [0, 1)): linear between the two knots around ``u``, in float64."""
    levels = QUANTILE_LEVELS
    k = np.clip(np.searchsorted(levels, u, side="right") - 1, 0, len(levels) - 2)
    w = (u - levels[k]) / (levels[k + 1] - levels[k])
    rows = np.arange(len(u))
    lo = knots[rows, k].astype(np.float64)
    hi = knots[rows, k + 1].astype(np.float64)
    return lo + w * (hi - lo)


def window_knots(reader, k: int, length: int) -> np.ndarray:
    """Task k's ``cpu_quantiles`` (records x levels, float32), checked:
    one row per record, finite, non-negative and non-decreasing."""
    knots = np.asarray(reader.quantiles(k), dtype=np.float32)
    if knots.shape != (length, len(QUANTILE_LEVELS)):
        raise InputError(f"series task {k}: quantiles of shape {knots.shape}, expected "
                         f"{(length, len(QUANTILE_LEVELS))}")
    if not (np.isfinite(knots).all() and (knots >= 0).all() and (np.diff(knots, axis=1) >= 0).all()):
        raise InputError(f"series task {k}: 'cpu_quantiles' holds NaN, negative or unordered values")
    return knots


def shared_times(seed: int, n_realizations: int, t0: int, t1: int) -> np.ndarray:
    """The trace times ``tau_t`` shared by every row (time-aligned)."""
    return streams.shared_times(seed).integers(t0, t1, n_realizations)


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


def _fill_block(reader, rows, seed, start, stop, n_realizations, sampling, xb, yb, tau=None, mb=None):
    """Rows ``start:stop`` of the store into ``xb``, ``yb`` (SPEC §8 recipe),
    and the memory realizations into ``mb`` when given: each column the
    window maximum ``mem_max`` of the record x's value of that column was
    drawn from (docs/spec.md, "Memory realizations").

    Runs in a worker thread: NumPy's generators and ``take`` release the GIL,
    and each row's numbers depend on its index j alone, so the bytes do not
    depend on how rows are spread over threads.
    """
    for j in range(start, stop):
        k = int(rows[j])
        if tau is not None:
            inst, avg, start_time = reader.records(k)
            start_time = np.asarray(start_time, dtype=np.int64)
            if len(start_time) != len(inst):
                raise InputError(f"series task {k}: {len(inst)} records but {len(start_time)} start times")
        else:
            inst, avg = reader.task(k)
        inst, avg = np.asarray(inst, dtype=np.float32), np.asarray(avg, dtype=np.float32)
        if len(inst) == 0:
            raise InputError(f"series task {k} has no records")
        if len(avg) != len(inst):
            raise InputError(f"series task {k}: {len(inst)} instantaneous but {len(avg)} average records")
        for name, values in (("inst", inst), ("avg", avg)):
            if not (np.isfinite(values).all() and (values >= 0).all()):
                raise InputError(f"series task {k}: {name!r} holds NaN, infinite or negative usage")
        if tau is not None:
            ix = iy = aligned_indices(seed, j, start_time, tau)
        elif sampling == "window-quantiles":
            ix, iy, u = quantile_draws(seed, j, len(inst), n_realizations)
        else:
            ix, iy = draw_indices(seed, j, len(inst), n_realizations, sampling)
        if sampling == "window-quantiles":
            xb[j - start] = interpolate_quantiles(window_knots(reader, k, len(inst))[ix], u)
        else:
            np.take(inst, ix, out=xb[j - start])
        np.take(avg, iy, out=yb[j - start])
        if mb is not None:
            _, mem_max = reader.memory(k)
            mem_max = np.asarray(mem_max, dtype=np.float32)
            if len(mem_max) != len(inst):
                raise InputError(f"series task {k}: {len(inst)} CPU but {len(mem_max)} memory records")
            if not (np.isfinite(mem_max).all() and (mem_max >= 0).all()):
                raise InputError(f"series task {k}: 'mem_max' holds NaN, infinite or negative usage")
            np.take(mem_max, ix, out=mb[j - start])


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
    progress: Progress = no_progress,
    memory: bool = False,
) -> None:
    """Write a store of ``n_tasks`` × ``n_realizations`` realizations drawn
    from ``series`` (SPEC §8), atomically; with ``memory``, the memory
    realizations too, from the same records as x (the series must hold
    memory).

    Rows are drawn in blocks by ``threads`` worker threads and written in
    order; at most ``threads + 2`` blocks (of ``block_rows`` rows, by default
    about 8 MB per matrix) are in memory at once, whatever N and R. The bytes
    written do not depend on ``threads`` or ``block_rows``.

    ``progress`` follows :mod:`colosim.progress`, in rows written.
    """
    if sampling not in SAMPLINGS:
        raise InputError(f"sampling must be one of {', '.join(SAMPLINGS)}, not {sampling!r}", param="sampling")
    if n_tasks < 1:
        raise InputError(f"n_tasks must be >= 1, not {n_tasks}", param="n_tasks")
    if n_realizations < 1:
        raise InputError(f"n_realizations must be >= 1, not {n_realizations}", param="n_realizations")
    threads = default_threads() if threads is None else int(threads)
    if threads < 1:
        raise InputError(f"threads must be >= 1, not {threads}", param="threads")
    if block_rows is None:
        block_rows = max(1, (8 << 20) // (4 * n_realizations))
    block_rows = max(1, int(block_rows))
    if memory and not getattr(series, "has_memory", False):
        name = getattr(series, "path", None) or "the series"
        raise InputError(f"memory realizations asked for, but {name} has no memory (a CPU-only series: "
                         "ingest it again to read memory)", param="memory")
    rows = select_rows(series.n_tasks, n_tasks, seed)
    task_id = np.asarray(series.task_id)[rows]
    tau = None
    if sampling == "time-aligned":
        time_range = getattr(series, "time_range", None)
        if time_range is None or not hasattr(series, "records"):
            raise InputError("sampling 'time-aligned' needs record start times, and this source has none",
                             param="sampling")
        tau = shared_times(seed, n_realizations, *time_range())
    if sampling == "window-quantiles" and not getattr(series, "has_quantiles", False):
        name = getattr(series, "path", None) or "this source"
        raise InputError(f"sampling 'window-quantiles' needs each window's CPU percentiles, and {name} has none "
                         "(ingest Google 2019 data that has them)", param="sampling")
    n_buffers = threads + 2
    buffers = [
        (np.empty((block_rows, n_realizations), dtype=np.float32),
         np.empty((block_rows, n_realizations), dtype=np.float32),
         np.empty((block_rows, n_realizations), dtype=np.float32) if memory else None)
        for _ in range(min(n_buffers, -(-n_tasks // block_rows)))
    ]
    starts = list(range(0, n_tasks, block_rows))
    advance = progress(f"realizing {Path(out).name}", n_tasks)
    reader = series.reader() if hasattr(series, "reader") else contextlib.nullcontext(series)
    with reader as reader, StoreWriter(
        out, n_tasks=n_tasks, n_realizations=n_realizations, seed=seed, sampling=sampling, source=source,
        task_id=task_id, memory=memory,
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
                    mb = None if buffers[b][2] is None else buffers[b][2][: stop - start]
                    fut = pool.submit(_fill_block, reader, rows, seed, start, stop, n_realizations, sampling,
                                      xb, yb, tau, mb)
                    pending.append((fut, b, start, stop))
                    next_block += 1
                fut, b, start, stop = pending.popleft()
                try:
                    fut.result()
                except InputError as exc:  # a bad record: name the series file it is in
                    where = getattr(series, "path", None)
                    if where is None or str(exc).startswith(str(where)):
                        raise
                    raise InputError(f"{where}: {exc}") from None
                xb, yb = buffers[b][0][: stop - start], buffers[b][1][: stop - start]
                mb = None if buffers[b][2] is None else buffers[b][2][: stop - start]
                writer.write_rows(start, xb, yb, check=False, memory_block=mb)
                free.append(b)
                advance(stop - start)
        except BaseException:
            for fut, *_ in pending:
                fut.cancel()
            raise


def check_store_size(out, n_tasks: int, n_realizations: int, memory: bool = False) -> None:
    """A store of this shape must fit on the disk of ``out`` (x and y, and
    memory when asked, 4 bytes a value) and its bookkeeping in memory,
    before any work."""
    n_tasks, n_realizations = int(n_tasks), int(n_realizations)
    what = f"a store of {n_tasks:_} tasks x {n_realizations:_} realizations"
    check_disk(Path(out).parent, (12 if memory else 8) * n_tasks * n_realizations + 17 * n_tasks, what)
    check_memory(64 * n_tasks, what)


def realize_file(series_path, out, *, n_tasks: int, n_realizations: int, seed: int,
                 sampling: str = "independent", threads: int | None = None,
                 progress: Progress = no_progress, force: bool = False, memory: bool = False) -> None:
    """:func:`realize` from a series file, with the file's path and SHA-256
    as the store's ``source``. An existing ``out`` is replaced only with
    ``force``, only when it is a store, and never when it is the series."""
    with open_series(series_path) as series:  # the input first, then the output
        claim(out, kind=STORE_KIND, inputs=[series_path], force=force)
        if isinstance(n_tasks, int) and isinstance(n_realizations, int) and n_tasks >= 1 and n_realizations >= 1:
            check_store_size(out, n_tasks, n_realizations, memory)
        with lock(out, can_wait=False):
            claim(out, kind=STORE_KIND, inputs=[series_path], force=force)
            realize(series, out, n_tasks=n_tasks, n_realizations=n_realizations, seed=seed, sampling=sampling,
                    source={"series": str(series_path), "sha256": sha256_file(series_path)}, threads=threads,
                    progress=progress, memory=memory)
