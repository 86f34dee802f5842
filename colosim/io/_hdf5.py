"""Shared HDF5 plumbing: contiguous datasets that can be memory-mapped,
format checks that name the file, attribute helpers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import h5py
import numpy as np

from ..errors import InputError


class MappedFile:
    """An open file whose datasets are memory-mapped (a context manager).

    :meth:`close` marks the file closed but does not unmap: arrays handed
    out stay valid (a map goes with the last array that uses it), so using
    one after close can never crash the interpreter."""

    def close(self) -> None:
        self.__dict__["_closed"] = True

    @property
    def closed(self) -> bool:
        return self.__dict__.get("_closed", False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def create_contiguous(f: h5py.File, name: str, shape: tuple[int, ...], dtype) -> None:
    """Create a contiguous, early-allocated, never-filled dataset.

    No object times are recorded (the same inputs give the same bytes).
    Early allocation fixes the dataset's file offset at creation, so the data
    can then be written (and later read) through ``numpy.memmap`` at that
    offset, without h5py in the hot path and without first writing zeros.
    """
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.CONTIGUOUS)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    dcpl.set_obj_track_times(False)  # the same inputs give the same bytes
    space = h5py.h5s.create_simple(tuple(int(s) for s in shape))
    tid = h5py.h5t.py_create(np.dtype(dtype))
    h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl).close()


def dataset_offset(dset: h5py.Dataset) -> int | None:
    """File offset of a contiguous dataset's bytes (None when it has none)."""
    if dset.chunks is not None or dset.compression is not None:
        return None
    if dset.size == 0:
        return 0
    return dset.id.get_offset()


def open_h5(path: str | os.PathLike, expected_format: str, what: str, versions=(1, 2)) -> h5py.File:
    """Open ``path`` read-only and check its ``format`` attribute and that
    its ``format_version`` is one of ``versions``."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: {what} file not found")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a {what} file")
    if not path.is_file():  # a FIFO would block the open for good, a device be read
        raise InputError(f"{path}: not a regular file (a device, FIFO or socket), not a {what} file")
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise InputError(f"{path}: not a readable HDF5 {what} file ({_first_line(exc)})") from None
    fmt = f.attrs.get("format")
    if isinstance(fmt, bytes):
        fmt = fmt.decode()
    if fmt != expected_format:
        f.close()
        raise InputError(f"{path}: not a {what} file (format attribute is {fmt!r}, expected {expected_format!r})")
    version = f.attrs.get("format_version")
    if version not in versions:  # 2: with memory (docs/memory.md); 1: CPU only; series 3: window quantiles
        f.close()
        expected = ", ".join(str(v) for v in versions[:-1]) + f" or {versions[-1]}"
        raise InputError(f"{path}: unsupported {what} format_version {version!r} (expected {expected})")
    return f


def memmap_dataset(path: Path, f: h5py.File, name: str, dtype, ndim: int, what: str) -> np.ndarray:
    """Memory-map dataset ``name`` of an open file after checking its layout,
    dtype, rank and that the file holds all of its bytes."""
    if name not in f:
        raise InputError(f"{path}: {what} file has no dataset {name!r}")
    dset = f[name]
    dtype = np.dtype(dtype)
    if dset.dtype != dtype:
        raise InputError(f"{path}: dataset {name!r} has dtype {dset.dtype}, expected {dtype.str}")
    if dset.ndim != ndim:
        raise InputError(f"{path}: dataset {name!r} has {dset.ndim} dimensions, expected {ndim}")
    offset = dataset_offset(dset)
    if offset is None:
        raise InputError(f"{path}: dataset {name!r} is chunked or compressed; it must be contiguous")
    if dset.size == 0:
        return np.zeros(dset.shape, dtype=dtype)
    end = offset + dset.size * dtype.itemsize
    size = path.stat().st_size
    if end > size:
        raise InputError(f"{path}: truncated (dataset {name!r} needs {end} bytes, file has {size})")
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=dset.shape)


def attr_str(f: h5py.File, name: str, default: str = "") -> str:
    value = f.attrs.get(name, default)
    if isinstance(value, bytes):
        value = value.decode()
    return str(value)


def attr_json(f: h5py.File, name: str):
    text = attr_str(f, name, "null")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def sha256_file(path: str | os.PathLike, block: int = 1 << 22) -> str:
    """SHA-256 of a file's bytes, hex."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(block):
            h.update(chunk)
    return h.hexdigest()
