"""Series files (SPEC §10): per-task record series after the ingest filters.

Records are stored task after task; ``offsets[k] : offsets[k + 1]`` are task
k's records. ``inst`` is the instantaneous usage (Google 2011 column 20),
``avg`` the 5-minute average (column 6).
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
from ._hdf5 import attr_json, attr_str, create_contiguous, memmap_dataset, open_h5
from .atomic import atomic_path

SERIES_FORMAT = "colosim-series"
USAGE_DTYPE = np.dtype("<f4")


@dataclass
class Series:
    """An open, read-only series file (arrays memory-mapped)."""

    path: Path | None
    task_id: np.ndarray
    offsets: np.ndarray
    inst: np.ndarray
    avg: np.ndarray
    start_time: np.ndarray
    attrs: dict = field(default_factory=dict)

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
    with open_h5(path, SERIES_FORMAT, "colosim series") as f:
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
    validate_series_arrays(path, task_id, offsets, inst, avg, start_time)
    return Series(path, task_id, offsets, inst, avg, start_time, attrs)


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
) -> None:
    """Write a series file atomically, after checking shapes and values."""
    path = Path(path)
    task_id = np.asarray(task_id, dtype=np.int64).reshape(-1, 2)
    offsets = np.asarray(offsets, dtype=np.int64)
    inst = np.asarray(inst, dtype=USAGE_DTYPE)
    avg = np.asarray(avg, dtype=USAGE_DTYPE)
    start_time = np.asarray(start_time, dtype=np.int64)
    validate_series_arrays(path, task_id, offsets, inst, avg, start_time)
    scan_usage(path, "inst", inst)
    scan_usage(path, "avg", avg)
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.create_dataset("task_id", data=task_id)
            f.create_dataset("offsets", data=offsets)
            for name, arr in (("inst", inst), ("avg", avg), ("start_time", start_time)):
                create_contiguous(f, name, arr.shape, arr.dtype)
                f[name][...] = arr
            f.attrs["format"] = SERIES_FORMAT
            f.attrs["format_version"] = 1
            f.attrs["source"] = json.dumps(source, sort_keys=True)
            f.attrs["filters"] = json.dumps(filters, sort_keys=True)
            f.attrs["colosim_version"] = __version__
            f.attrs["numpy_version"] = np.__version__
