"""Realization (SPEC §8): from per-task record series to a store of R draws
per task, streamed to disk block by block.

The recipe fixes every random number, so the same seed gives the same bytes
anywhere:

- rows: ``default_rng([seed, 0]).choice(n_series, N, replace=False)``, stored
  in the order drawn;
- stored row j (task with T_j records): ``g = default_rng([seed, 1, j])``;
  x indices ``g.integers(0, T_j, R)``; then y indices ``g.integers(0, T_j, R)``
  (``independent``, the paper's Section 3.1) or the x indices (``paired``).
"""

from __future__ import annotations

import os
from typing import Protocol

import numpy as np

from .errors import InputError
from .io.store import StoreWriter

SAMPLINGS = ("independent", "paired")


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


def realize(
    series: SeriesSource,
    out: str | os.PathLike,
    *,
    n_tasks: int,
    n_realizations: int,
    seed: int,
    sampling: str = "independent",
    source=None,
    block_rows: int = 256,
    progress=None,
) -> None:
    """Write a store of ``n_tasks`` × ``n_realizations`` realizations drawn
    from ``series`` (SPEC §8), atomically.

    ``progress``, if given, is called with the number of rows just written.
    """
    if sampling not in SAMPLINGS:
        raise InputError(f"sampling must be one of {', '.join(SAMPLINGS)}, not {sampling!r}")
    if n_tasks < 1:
        raise InputError(f"--tasks must be >= 1, not {n_tasks}")
    if n_realizations < 1:
        raise InputError(f"--realizations must be >= 1, not {n_realizations}")
    rows = select_rows(series.n_tasks, n_tasks, seed)
    task_id = np.asarray(series.task_id)[rows]
    with StoreWriter(
        out,
        n_tasks=n_tasks,
        n_realizations=n_realizations,
        seed=seed,
        sampling=sampling,
        source=source,
        task_id=task_id,
    ) as writer:
        for start in range(0, n_tasks, block_rows):
            stop = min(n_tasks, start + block_rows)
            xb = np.empty((stop - start, n_realizations), dtype=np.float32)
            yb = np.empty_like(xb)
            for j in range(start, stop):
                inst, avg = series.task(int(rows[j]))
                if len(inst) == 0:
                    raise InputError(f"series task {int(rows[j])} has no records")
                ix, iy = draw_indices(seed, j, len(inst), n_realizations, sampling)
                xb[j - start] = inst[ix]
                yb[j - start] = avg[iy]
            writer.write_rows(start, xb, yb)
            if progress is not None:
                progress(stop - start)
