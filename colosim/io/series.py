"""Series files (SPEC §10): per-task record series after the ingest filters.

Records are stored task after task; ``offsets[k] : offsets[k + 1]`` are task
k's records. ``inst`` is the instantaneous usage (Google 2011 column 20),
``avg`` the 5-minute average (column 6). Format version 2 adds memory:
``mem_avg``, the window's mean memory usage (column 7), and ``mem_max``, its
maximum (column 11) (docs/memory.md); a version-1 file is CPU only.
Format version 3 adds ``cpu_quantiles`` (records x 21, float32): the
window's per-second CPU usage at the levels :data:`QUANTILE_LEVELS` (Google
2019's ``cpu_usage_distribution`` and ``tail_cpu_usage_distribution``), the
source of ``window-quantiles`` realization (docs/spec.md).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from .._version import __version__
from ..errors import InputError
from ._hdf5 import MappedFile, attr_json, attr_str, create_contiguous, memmap_dataset, open_h5
from .atomic import atomic_path
from .outputs import hdf5_kind

SERIES_FORMAT = "colosim-series"
#: What ``--force`` may replace with a new series file (:mod:`colosim.io.outputs`).
SERIES_KIND = hdf5_kind(SERIES_FORMAT, "colosim series file (HDF5)")
USAGE_DTYPE = np.dtype("<f4")

#: length of one record's window (Google 2011 and 2019: 5 minutes), in the
#: traces' time unit (microseconds)
WINDOW_US = 300_000_000

#: probability levels of a record's ``cpu_quantiles``: 0, 0.1, ..., 0.9
#: (``cpu_usage_distribution``), 0.91, ..., 0.99 (``tail_cpu_usage_distribution``)
#: and 1 (the window's maximum second)
QUANTILE_LEVELS = np.array([k / 10 for k in range(10)] + [k / 100 for k in range(91, 100)] + [1.0])
N_QUANTILES = len(QUANTILE_LEVELS)
SERIES_VERSIONS = (1, 2, 3)


@dataclass
class Series(MappedFile):
    """An open, read-only series file (arrays memory-mapped)."""

    path: Path | None
    task_id: np.ndarray
    offsets: np.ndarray
    inst: np.ndarray
    avg: np.ndarray
    start_time: np.ndarray
    attrs: dict = field(default_factory=dict)
    mem_avg: np.ndarray | None = None
    mem_max: np.ndarray | None = None
    cpu_quantiles: np.ndarray | None = None

    @property
    def has_memory(self) -> bool:
        return self.mem_max is not None

    @property
    def has_quantiles(self) -> bool:
        """Whether records carry the window's CPU distribution (format 3)."""
        return self.cpu_quantiles is not None

    def quantiles(self, k: int) -> np.ndarray:
        """Task k's ``cpu_quantiles``, records x :data:`N_QUANTILES`."""
        if not self.has_quantiles:
            raise InputError(f"{self.path or 'series'}: the series has no per-window CPU distributions "
                             "(only Google 2019 data with percentiles has them)")
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        return np.asarray(self.cpu_quantiles[a:b])

    def memory(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(mem_avg, mem_max) records of task k."""
        if not self.has_memory:
            raise InputError(f"{self.path or 'series'}: the series has no memory (a CPU-only series)")
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        return np.asarray(self.mem_avg[a:b]), np.asarray(self.mem_max[a:b])

    @property
    def n_tasks(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_records(self) -> int:
        return int(self.offsets[-1])

    def lengths(self) -> np.ndarray:
        """Records per task, T_i."""
        return np.diff(self.offsets)

    def task(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(inst, avg) records of task k."""
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        return np.asarray(self.inst[a:b]), np.asarray(self.avg[a:b])

    def records(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(inst, avg, start_time) records of task k."""
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        return np.asarray(self.inst[a:b]), np.asarray(self.avg[a:b]), np.asarray(self.start_time[a:b])

    def time_range(self) -> tuple[int, int]:
        """``(T0, T1)``: the earliest record start and the latest record
        start plus one window (records are sorted by start time, SPEC §7)."""
        offsets = np.asarray(self.offsets, dtype=np.int64)
        nonempty = offsets[1:] > offsets[:-1]
        if not nonempty.any():
            raise InputError(f"{self.path or 'series'}: the series has no records")
        firsts = np.asarray(self.start_time)[offsets[:-1][nonempty]]
        lasts = np.asarray(self.start_time)[offsets[1:][nonempty] - 1]
        return int(firsts.min()), int(lasts.max()) + WINDOW_US

    def reader(self) -> "SeriesReader":
        """A reader of single tasks for a pass over many of them (a context
        manager; see :class:`SeriesReader`)."""
        return SeriesReader(self)


class SeriesReader:
    """Reads tasks of a series file with ``pread`` rather than through its
    memory maps: the pages of a map would count toward the resident set, and
    a store drawn from a large series would then hold much of it in memory.
    For a series held in memory, reads its arrays."""

    def __init__(self, series: Series):
        self.series = series
        arrays = (series.inst, series.avg, series.start_time)
        mapped = all(isinstance(a, np.memmap) and a.filename for a in arrays) and hasattr(os, "preadv")
        self._fd = os.open(series.inst.filename, os.O_RDONLY) if mapped else None

    def _read(self, arr, k: int) -> np.ndarray:
        a, b = int(self.series.offsets[k]), int(self.series.offsets[k + 1])
        if self._fd is None:
            return np.asarray(arr[a:b])
        buf = np.empty((b - a, *arr.shape[1:]), dtype=arr.dtype)
        view = memoryview(buf).cast("B")
        base = int(arr.offset) + a * arr.dtype.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64))
        got = 0
        while got < len(view):
            n = os.preadv(self._fd, [view[got:]], base + got)
            if n == 0:
                raise InputError(f"{self.series.path}: truncated (task {k})")
            got += n
        return buf

    def task(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self._read(self.series.inst, k), self._read(self.series.avg, k)

    def records(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (*self.task(k), self._read(self.series.start_time, k))

    @property
    def has_memory(self) -> bool:
        return self.series.has_memory

    def memory(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        if not self.series.has_memory:
            return self.series.memory(k)  # the error
        return self._read(self.series.mem_avg, k), self._read(self.series.mem_max, k)

    @property
    def has_quantiles(self) -> bool:
        return self.series.has_quantiles

    def quantiles(self, k: int) -> np.ndarray:
        if not self.series.has_quantiles:
            return self.series.quantiles(k)  # the error
        return self._read(self.series.cpu_quantiles, k)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def validate_series_arrays(where, task_id, offsets, inst, avg, start_time) -> None:
    """Raise :class:`InputError` unless the arrays form a valid series."""
    n = len(offsets) - 1
    if n < 0 or (len(offsets) and offsets[0] != 0):
        raise InputError(f"{where}: 'offsets' must start at 0")
    if task_id.shape != (n, 2):
        raise InputError(f"{where}: 'task_id' has shape {task_id.shape}, expected {(n, 2)}")
    if np.any(np.diff(offsets) < 0):
        raise InputError(f"{where}: 'offsets' must be non-decreasing")
    total = int(offsets[-1]) if len(offsets) else 0
    for name, arr in (("inst", inst), ("avg", avg), ("start_time", start_time)):
        if arr.shape != (total,):
            raise InputError(f"{where}: {name!r} has shape {arr.shape}, expected {(total,)}")


def scan_usage(where, name: str, values: np.ndarray, block: int = 1 << 24) -> None:
    """Raise :class:`InputError` at the first NaN, infinite or negative value."""
    for start in range(0, len(values), block):
        chunk = np.asarray(values[start : start + block])
        bad = ~np.isfinite(chunk) | (chunk < 0)
        if bad.any():
            i = start + int(np.flatnonzero(bad)[0])
            raise InputError(f"{where}: {name!r} record {i} holds {values[i]!r} (usage must be finite and >= 0)")


def open_series(path: str | os.PathLike) -> Series:
    """Open a series file for reading (arrays memory-mapped)."""
    path = Path(path)
    with open_h5(path, SERIES_FORMAT, "colosim series", SERIES_VERSIONS) as f:
        for name in ("task_id", "offsets"):
            if name not in f:
                raise InputError(f"{path}: series file has no dataset {name!r}")
        task_id = np.asarray(f["task_id"][...], dtype=np.int64)
        offsets = np.asarray(f["offsets"][...], dtype=np.int64)
        inst = memmap_dataset(path, f, "inst", USAGE_DTYPE, 1, "series")
        avg = memmap_dataset(path, f, "avg", USAGE_DTYPE, 1, "series")
        start_time = memmap_dataset(path, f, "start_time", np.dtype("<i8"), 1, "series")
        attrs = {
            "source": attr_json(f, "source"),
            "filters": attr_json(f, "filters"),
            "colosim_version": attr_str(f, "colosim_version"),
        }
        mem_avg = mem_max = None
        if "mem_max" in f or "mem_avg" in f:
            mem_avg = memmap_dataset(path, f, "mem_avg", USAGE_DTYPE, 1, "series")
            mem_max = memmap_dataset(path, f, "mem_max", USAGE_DTYPE, 1, "series")
        cpu_quantiles = None
        if "cpu_quantiles" in f:
            cpu_quantiles = memmap_dataset(path, f, "cpu_quantiles", USAGE_DTYPE, 2, "series")
    validate_series_arrays(path, task_id, offsets, inst, avg, start_time)
    if mem_max is not None:
        for name, arr in (("mem_avg", mem_avg), ("mem_max", mem_max)):
            if arr.shape != inst.shape:
                raise InputError(f"{path}: {name!r} has shape {arr.shape}, expected {inst.shape}")
    if cpu_quantiles is not None and cpu_quantiles.shape != (len(inst), N_QUANTILES):
        raise InputError(f"{path}: 'cpu_quantiles' has shape {cpu_quantiles.shape}, "
                         f"expected {(len(inst), N_QUANTILES)}")
    return Series(path, task_id, offsets, inst, avg, start_time, attrs, mem_avg, mem_max, cpu_quantiles)


def write_series(
    path: str | os.PathLike,
    *,
    task_id: np.ndarray,
    offsets: np.ndarray,
    inst: np.ndarray,
    avg: np.ndarray,
    start_time: np.ndarray,
    source,
    filters,
    mem_avg: np.ndarray | None = None,
    mem_max: np.ndarray | None = None,
) -> None:
    """Write a series file atomically, after checking shapes and values;
    with ``mem_avg`` and ``mem_max``, format version 2 (memory)."""
    path = Path(path)
    task_id = np.asarray(task_id, dtype=np.int64).reshape(-1, 2)
    offsets = np.asarray(offsets, dtype=np.int64)
    inst = np.asarray(inst, dtype=USAGE_DTYPE)
    avg = np.asarray(avg, dtype=USAGE_DTYPE)
    start_time = np.asarray(start_time, dtype=np.int64)
    validate_series_arrays(path, task_id, offsets, inst, avg, start_time)
    scan_usage(path, "inst", inst)
    scan_usage(path, "avg", avg)
    arrays = [("inst", inst), ("avg", avg), ("start_time", start_time)]
    if (mem_avg is None) != (mem_max is None):
        raise InputError(f"{path}: memory needs both mem_avg and mem_max")
    if mem_avg is not None:
        for name, arr in (("mem_avg", mem_avg), ("mem_max", mem_max)):
            arr = np.asarray(arr, dtype=USAGE_DTYPE)
            if arr.shape != inst.shape:
                raise InputError(f"{path}: {name!r} has shape {arr.shape}, expected {inst.shape}")
            scan_usage(path, name, arr)
            arrays.append((name, arr))
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.create_dataset("task_id", data=task_id, track_times=False)
            f.create_dataset("offsets", data=offsets, track_times=False)
            for name, arr in arrays:
                create_contiguous(f, name, arr.shape, arr.dtype)
                f[name][...] = arr
            f.attrs["format"] = SERIES_FORMAT
            f.attrs["format_version"] = 2 if mem_avg is not None else 1
            f.attrs["source"] = json.dumps(source, sort_keys=True)
            f.attrs["filters"] = json.dumps(filters, sort_keys=True)
            f.attrs["colosim_version"] = __version__
            f.attrs["numpy_version"] = np.__version__


class SeriesWriter:
    """Write a series file atomically, records streamed block by block, so
    that a series larger than memory can be written (SPEC §10).

    The task table (``task_id``, ``offsets``) is known up front; records are
    then written in file order with :meth:`write_records`:

    >>> with SeriesWriter(path, task_id=ids, offsets=offs, source=..., filters=...) as w:
    ...     w.write_records(0, inst, avg, start_time)

    Values are checked as they arrive (finite, non-negative); the file appears
    under ``path`` only when every record has been written and the block exits
    without error.
    """

    def __init__(self, path, *, task_id, offsets, source, filters, memory: bool = False, quantiles: bool = False):
        self.path = Path(path)
        self.memory = bool(memory)
        self.quantiles = bool(quantiles)
        self.task_id = np.asarray(task_id, dtype=np.int64).reshape(-1, 2)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.n_records = int(self.offsets[-1]) if len(self.offsets) else 0
        if len(self.offsets) == 0 or self.offsets[0] != 0:
            raise InputError(f"{self.path}: 'offsets' must start at 0")
        if self.task_id.shape != (len(self.offsets) - 1, 2):
            raise InputError(
                f"{self.path}: 'task_id' has shape {self.task_id.shape}, expected {(len(self.offsets) - 1, 2)}"
            )
        if np.any(np.diff(self.offsets) < 0):
            raise InputError(f"{self.path}: 'offsets' must be non-decreasing")
        self._meta = dict(source=source, filters=filters)
        self._next = 0

    def __enter__(self):
        self._ctx = atomic_path(self.path)
        self.tmp = self._ctx.__enter__()
        try:
            self._file = h5py.File(self.tmp, "w")
            f = self._file
            f.create_dataset("task_id", data=self.task_id, track_times=False)
            f.create_dataset("offsets", data=self.offsets, track_times=False)
            create_contiguous(f, "inst", (self.n_records,), USAGE_DTYPE)
            create_contiguous(f, "avg", (self.n_records,), USAGE_DTYPE)
            create_contiguous(f, "start_time", (self.n_records,), np.dtype("<i8"))
            if self.memory:
                create_contiguous(f, "mem_avg", (self.n_records,), USAGE_DTYPE)
                create_contiguous(f, "mem_max", (self.n_records,), USAGE_DTYPE)
            if self.quantiles:
                create_contiguous(f, "cpu_quantiles", (self.n_records, N_QUANTILES), USAGE_DTYPE)
                f["cpu_quantiles"].attrs["levels"] = QUANTILE_LEVELS
            f.attrs["format"] = SERIES_FORMAT
            f.attrs["format_version"] = 3 if self.quantiles else 2 if self.memory else 1
            f.attrs["source"] = json.dumps(self._meta["source"], sort_keys=True)
            f.attrs["filters"] = json.dumps(self._meta["filters"], sort_keys=True)
            f.attrs["colosim_version"] = __version__
            f.attrs["numpy_version"] = np.__version__
        except BaseException as exc:
            self._ctx.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def write_records(self, start: int, inst, avg, start_time, mem_avg=None, mem_max=None,
                      cpu_quantiles=None) -> None:
        """Write records ``start : start + len(inst)``; blocks must arrive in
        file order, without gaps; ``mem_avg`` and ``mem_max`` exactly when the
        file holds memory, ``cpu_quantiles`` (n x :data:`N_QUANTILES`,
        non-decreasing along each record) exactly when it holds quantiles."""
        inst = np.asarray(inst, dtype=USAGE_DTYPE)
        avg = np.asarray(avg, dtype=USAGE_DTYPE)
        start_time = np.asarray(start_time, dtype=np.int64)
        n = len(inst)
        if start != self._next:
            raise ValueError(f"records must be written in order: expected start {self._next}, got {start}")
        if avg.shape != (n,) or start_time.shape != (n,):
            raise ValueError("inst, avg and start_time blocks differ in length")
        if start + n > self.n_records:
            raise ValueError(f"block ends at record {start + n}, beyond the {self.n_records} records")
        usage = [("inst", inst), ("avg", avg)]
        if (mem_avg is not None or mem_max is not None) != self.memory or (self.memory and mem_max is None):
            raise ValueError("mem_avg and mem_max blocks are needed exactly when the series holds memory")
        if self.memory:
            mem_avg = np.asarray(mem_avg, dtype=USAGE_DTYPE)
            mem_max = np.asarray(mem_max, dtype=USAGE_DTYPE)
            if mem_avg.shape != (n,) or mem_max.shape != (n,):
                raise ValueError("memory blocks differ in length from inst")
            usage += [("mem_avg", mem_avg), ("mem_max", mem_max)]
        if (cpu_quantiles is not None) != self.quantiles:
            raise ValueError("cpu_quantiles blocks are needed exactly when the series holds quantiles")
        if self.quantiles:
            cpu_quantiles = np.asarray(cpu_quantiles, dtype=USAGE_DTYPE)
            if cpu_quantiles.shape != (n, N_QUANTILES):
                raise ValueError(f"cpu_quantiles block has shape {cpu_quantiles.shape}, expected {(n, N_QUANTILES)}")
            usage.append(("cpu_quantiles", cpu_quantiles))
            unordered = (np.diff(cpu_quantiles, axis=1) < 0).any(axis=1)
            if unordered.any():
                i = int(np.flatnonzero(unordered)[0])
                raise InputError(f"{self.path}: 'cpu_quantiles' record {start + i} would not be in increasing order")
        for name, arr in usage:
            bad = ~np.isfinite(arr) | (arr < 0)
            if bad.ndim > 1:
                bad = bad.any(axis=1)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(
                    f"{self.path}: {name!r} record {start + i} would hold {arr[i]!r} "
                    "(usage must be finite and >= 0)"
                )
        if n:
            self._file["inst"][start : start + n] = inst
            self._file["avg"][start : start + n] = avg
            self._file["start_time"][start : start + n] = start_time
            if self.memory:
                self._file["mem_avg"][start : start + n] = mem_avg
                self._file["mem_max"][start : start + n] = mem_max
            if self.quantiles:
                self._file["cpu_quantiles"][start : start + n] = cpu_quantiles
        self._next = start + n

    def __exit__(self, exc_type, exc, tb):
        try:
            self._file.close()
            if exc_type is None and self._next != self.n_records:
                raise RuntimeError(f"{self.path}: only {self._next} of {self.n_records} records were written")
        except BaseException as err:
            self._ctx.__exit__(type(err), err, err.__traceback__)
            raise
        return self._ctx.__exit__(exc_type, exc, tb)
