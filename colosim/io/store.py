"""Realization stores (SPEC §10): ``x`` and ``y`` float32 (N, R), contiguous,
memory-mapped on read so that a store larger than memory works and an
instance reads only its own rows."""

from __future__ import annotations

import contextlib
import json
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from .._version import __version__
from ..errors import InputError
from ._checks import usage_problem
from ._hdf5 import MappedFile, attr_json, attr_str, create_contiguous, memmap_dataset, open_h5
from .atomic import atomic_path
from .outputs import hdf5_kind

STORE_FORMAT = "colosim-store"
#: What ``--force`` may replace with a new store (:mod:`colosim.io.outputs`).
STORE_KIND = hdf5_kind(STORE_FORMAT, "colosim store (HDF5)")
USAGE_DTYPE = np.dtype("<f4")


@dataclass
class Store(MappedFile):
    """An open, read-only realization store.

    ``x`` and ``y`` are ``numpy.memmap`` views of the file; use
    :meth:`rows` to read (and check) the rows of an instance. Closing does
    not unmap them: an array taken from the store stays valid (the map goes
    with the last array that uses it), and :meth:`rows` of a closed store is
    an error naming it.
    """

    path: Path
    x: np.ndarray
    y: np.ndarray
    task_id: np.ndarray
    attrs: dict = field(default_factory=dict)
    #: memory realizations (format version 2, docs/memory.md), None for CPU only
    memory: np.ndarray | None = None

    @property
    def has_memory(self) -> bool:
        return self.memory is not None

    @property
    def n_tasks(self) -> int:
        return self.x.shape[0]

    @property
    def n_realizations(self) -> int:
        return self.x.shape[1]

    @property
    def seed(self):
        return self.attrs.get("seed")

    def rows(self, index, which: str = "x") -> np.ndarray:
        """Rows ``index`` of ``x``, ``y`` or ``memory`` as an in-memory
        float32 array, checked for NaN, infinite and negative values (SPEC §10)."""
        if self.closed:
            raise InputError(f"{self.path}: the store is closed")
        if which not in ("x", "y", "memory"):
            raise InputError(f"which must be 'x', 'y' or 'memory', not {which!r}")
        if which == "memory" and self.memory is None:
            raise InputError(f"{self.path}: the store has no memory realizations (a CPU-only store)")
        source = {"x": self.x, "y": self.y, "memory": self.memory}[which]
        given = np.asarray(index)
        if given.ndim != 1 or (given.size and given.dtype.kind not in "iu"):
            raise InputError(f"{self.path}: rows must be a 1-D array of integer row numbers, not "
                             f"{given.ndim}-D of dtype {given.dtype}")
        index = given.astype(np.int64)
        if index.size and (index.min() < 0 or index.max() >= source.shape[0]):
            raise InputError(f"{self.path}: row index out of range for a store of {source.shape[0]} tasks "
                             f"(0..{source.shape[0] - 1})")
        # Reading rows in increasing file order is kinder to the page cache;
        # the result keeps the caller's order.
        order = np.argsort(index, kind="stable")
        block = np.empty((index.size, source.shape[1]), dtype=USAGE_DTYPE)
        if isinstance(source, np.memmap) and hasattr(os, "preadv"):
            _read_rows(self.path, source, index, order, block)
        else:
            with _random_access_view(self.path, source) as view:
                block[order] = view[index[order]]
        if usage_problem(block):  # one pass; where, only when there is a bad value
            r, t = np.argwhere(~np.isfinite(block) | (block < 0))[0]
            raise InputError(
                f"{self.path}: dataset {which!r} row {int(index[r])} column {int(t)} "
                f"holds {block[r, t]!r} (usage must be finite and >= 0)"
            )
        return block



def _read_rows(path: Path, source: np.memmap, index, order, block) -> None:
    """Read rows ``index`` of the dataset mapped by ``source`` straight into
    ``block`` with one ``preadv`` each, in increasing file order: only those
    rows' bytes are read, nothing is mapped into the process, and it is
    several times faster than faulting the rows' pages in."""
    row_bytes = source.shape[1] * source.dtype.itemsize
    fd = os.open(path, os.O_RDONLY)
    try:
        for pos in order:
            offset = source.offset + int(index[pos]) * row_bytes
            if os.preadv(fd, [memoryview(block[pos]).cast("B")], offset) != row_bytes:
                raise InputError(f"{path}: truncated (row {int(index[pos])} is incomplete)")
    finally:
        os.close(fd)


@contextlib.contextmanager
def _random_access_view(path: Path, source: np.ndarray):
    """A short-lived memory map of ``source``'s bytes, advised for random
    access: an instance touches only its rows' pages (no read-ahead of the
    neighbouring rows), and the pages leave the process when the map closes,
    so memory stays flat however many instances a sweep reads."""
    if not isinstance(source, np.memmap) or not hasattr(mmap, "MADV_RANDOM"):
        yield source
        return
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        mm.madvise(mmap.MADV_RANDOM)
        view = np.ndarray(source.shape, dtype=source.dtype, buffer=mm, offset=source.offset)
        yield view
        del view
    finally:
        mm.close()


def open_store(path: str | os.PathLike) -> Store:
    """Open a store for reading; any format problem is an :class:`InputError`
    naming the file."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise InputError(f"store path must be a file path, not {path!r}")
    path = Path(path)
    with open_h5(path, STORE_FORMAT, "colosim store") as f:
        x = memmap_dataset(path, f, "x", USAGE_DTYPE, 2, "store")
        y = memmap_dataset(path, f, "y", USAGE_DTYPE, 2, "store")
        if x.shape != y.shape:
            raise InputError(f"{path}: datasets 'x' {x.shape} and 'y' {y.shape} differ in shape")
        if "task_id" in f:
            task_id = np.asarray(f["task_id"][...], dtype=np.int64)
        else:
            raise InputError(f"{path}: store has no dataset 'task_id'")
        if task_id.shape != (x.shape[0], 2):
            raise InputError(f"{path}: dataset 'task_id' has shape {task_id.shape}, expected {(x.shape[0], 2)}")
        attrs = {
            "seed": attr_json(f, "seed"),
            "sampling": attr_str(f, "sampling"),
            "source": attr_json(f, "source"),
            "colosim_version": attr_str(f, "colosim_version"),
            "numpy_version": attr_str(f, "numpy_version"),
        }
        memory = None
        if "memory" in f:
            memory = memmap_dataset(path, f, "memory", USAGE_DTYPE, 2, "store")
            if memory.shape != x.shape:
                raise InputError(f"{path}: datasets 'x' {x.shape} and 'memory' {memory.shape} differ in shape")
            attrs["memory"] = True
    return Store(path=path, x=x, y=y, task_id=task_id, attrs=attrs, memory=memory)


class StoreWriter:
    """Write a store atomically, block of rows after block of rows.

    >>> with StoreWriter(path, n_tasks=N, n_realizations=R, seed=1,
    ...                  sampling="independent", source={...}) as w:
    ...     w.write_rows(0, x_block, y_block)

    The file appears under ``path`` only when the block exits without error;
    every row must have been written by then.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        n_tasks: int,
        n_realizations: int,
        seed,
        sampling: str,
        source,
        task_id: np.ndarray | None = None,
        memory: bool = False,
    ):
        self.path = Path(path)
        self.memory = bool(memory)
        self.n_tasks = int(n_tasks)
        self.n_realizations = int(n_realizations)
        if self.n_tasks < 1 or self.n_realizations < 1:
            raise InputError(f"{self.path}: a store needs at least one task and one realization")
        self._meta = dict(seed=seed, sampling=sampling, source=source)
        self._task_id = (
            np.zeros((self.n_tasks, 2), dtype=np.int64)
            if task_id is None
            else np.asarray(task_id, dtype=np.int64).reshape(self.n_tasks, 2)
        )
        self._written = np.zeros(self.n_tasks, dtype=bool)

    def __enter__(self):
        self._ctx = atomic_path(self.path)
        self.tmp = self._ctx.__enter__()
        try:
            shape = (self.n_tasks, self.n_realizations)
            with h5py.File(self.tmp, "w") as f:
                create_contiguous(f, "x", shape, USAGE_DTYPE)
                create_contiguous(f, "y", shape, USAGE_DTYPE)
                if self.memory:  # after x and y: their place in the file does not change
                    create_contiguous(f, "memory", shape, USAGE_DTYPE)
                f.create_dataset("task_id", data=self._task_id, track_times=False)
                f.attrs["format"] = STORE_FORMAT
                f.attrs["format_version"] = 2 if self.memory else 1
                f.attrs["seed"] = json.dumps(self._meta["seed"])
                f.attrs["sampling"] = str(self._meta["sampling"])
                f.attrs["source"] = json.dumps(self._meta["source"], sort_keys=True)
                f.attrs["colosim_version"] = __version__
                f.attrs["numpy_version"] = np.__version__
                offsets = (f["x"].id.get_offset(), f["y"].id.get_offset())
                if self.memory:
                    offsets += (f["memory"].id.get_offset(),)
            self.x = np.memmap(self.tmp, dtype=USAGE_DTYPE, mode="r+", offset=offsets[0], shape=shape)
            self.y = np.memmap(self.tmp, dtype=USAGE_DTYPE, mode="r+", offset=offsets[1], shape=shape)
            # Rows are written with pwrite rather than through the maps: written
            # pages then live in the page cache only, not in this process's
            # resident set, so an 8 GB store is written in bounded memory.
            self._offsets = offsets
            self._fd = os.open(self.tmp, os.O_RDWR)
        except BaseException as exc:
            self._ctx.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def write_rows(
        self, start: int, x_block: np.ndarray, y_block: np.ndarray, task_id=None, *, check: bool = True,
        memory_block: np.ndarray | None = None,
    ) -> None:
        """Write rows ``start : start + len(x_block)`` after checking values
        (``check=False``: the caller has checked them, e.g. on the records the
        values were drawn from); ``memory_block`` exactly when the store
        holds memory."""
        n = len(x_block)
        if start < 0 or start + n > self.n_tasks:
            raise ValueError(f"rows {start}:{start + n} are outside the store's {self.n_tasks} rows")
        if (memory_block is not None) != self.memory:
            raise ValueError("a memory block is needed exactly when the store holds memory")
        blocks = (("x", x_block), ("y", y_block)) + ((("memory", memory_block),) if self.memory else ())
        for name, block in blocks:
            if block.shape != (n, self.n_realizations):
                raise ValueError(f"{name} block has shape {block.shape}, expected {(n, self.n_realizations)}")
            if not check:
                continue
            bad = ~np.isfinite(block) | (block < 0)
            if bad.any():
                r, t = np.argwhere(bad)[0]
                raise InputError(
                    f"{self.path}: row {start + r} of {name!r} would hold {block[r, t]!r} "
                    "(usage must be finite and >= 0)"
                )
        row_bytes = self.n_realizations * USAGE_DTYPE.itemsize
        for offset, (_, block) in zip(self._offsets, blocks):
            _pwrite_all(self._fd, np.ascontiguousarray(block, dtype=USAGE_DTYPE), offset + start * row_bytes)
        if task_id is not None:
            self._task_id[start : start + n] = task_id
        self._written[start : start + n] = True

    def __exit__(self, exc_type, exc, tb):
        try:
            fd = self.__dict__.pop("_fd", None)
            if fd is not None:
                os.close(fd)
            if exc_type is None:
                if not self._written.all():
                    missing = int(np.flatnonzero(~self._written)[0])
                    raise RuntimeError(f"{self.path}: row {missing} was never written")
                self.x.flush()
                self.y.flush()
                del self.x, self.y
                with h5py.File(self.tmp, "r+") as f:
                    f["task_id"][...] = self._task_id
            else:
                self.__dict__.pop("x", None)
                self.__dict__.pop("y", None)
        except BaseException as err:
            self._ctx.__exit__(type(err), err, err.__traceback__)
            raise
        return self._ctx.__exit__(exc_type, exc, tb)


def _pwrite_all(fd: int, block: np.ndarray, offset: int) -> None:
    """Write all of ``block``'s bytes at ``offset`` (pwrite may write less)."""
    view = memoryview(block).cast("B")
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], offset + done)
