"""``colosim info``: what a store, series or results file is, and whether it
is intact (shapes, recorded source checksum, NaN/infinite/negative values).

What a file records is data, never something to act on: the path of a
store's source is printed with its recorded checksum and opened only when
asked (``check_source``, ``colosim info --check-source``), and then only
when it is a regular file. Every value read from a file is printed with its
control characters escaped (:func:`printable`), so that a file cannot drive
the terminal it is described on.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import h5py
import numpy as np

from .errors import InputError, printable
from .io.results import GRID_KEYS, read_results, read_sidecar, regular_fd
from .io.series import open_series
from .io.store import open_store
from .model.grid import check_row


def _scan(name: str, arr: np.ndarray, block_rows: int) -> list[str]:
    """Problems found by a full scan of ``arr`` for NaN/inf/negative values."""
    for start in range(0, arr.shape[0], block_rows):
        block = np.asarray(arr[start : start + block_rows])
        bad = ~np.isfinite(block) | (block < 0)
        if bad.any():
            where = np.argwhere(bad)[0]
            return [f"{name}{tuple(int(w) + (start if d == 0 else 0) for d, w in enumerate(where))} "
                    f"holds {block[tuple(where)]!r}"]
    return []


def _sha256_fd(fd: int, block: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(block):
            h.update(chunk)
    return h.hexdigest()


def _check_source(source, check_source: bool) -> tuple[list[str], list[str]]:
    """The recorded source checksum; compared with the file the source
    names only with ``check_source``, and only when that is a regular
    file."""
    if not (isinstance(source, dict) and source.get("sha256") and source.get("series")):
        return [], []
    recorded, named = str(source["sha256"]), source["series"]
    if not check_source:
        return [f"source checksum: recorded {recorded} (of {named}); not compared "
                "(pass --check-source to compare it with that file)"], []
    if not isinstance(named, str) or not named or "\0" in named:
        return [f"source checksum: recorded {recorded}; not compared (the recorded source {named!r} "
                "is not a file path)"], []
    p = Path(named)
    try:
        fd = regular_fd(p)
    except FileNotFoundError:
        return [f"source checksum: recorded {recorded[:16]}… (source file {p} not here to compare)"], []
    except OSError as exc:
        return [f"source checksum: recorded {recorded[:16]}…; not compared ({p}: {exc.strerror or exc})"], []
    if fd is None:
        return [f"source checksum: recorded {recorded[:16]}…; not compared ({p} is not a regular file)"], []
    try:
        ok = _sha256_fd(fd) == recorded
    except OSError as exc:
        return [f"source checksum: recorded {recorded[:16]}…; not compared ({p}: {exc.strerror or exc})"], []
    lines = [f"source checksum: {'matches' if ok else 'DIFFERS'} ({p})"]
    return lines, [] if ok else [f"source {p} changed since the file was made (SHA-256 differs)"]


def describe(path, verify: bool = True, *, check_source: bool = False) -> tuple[list[str], list[str]]:
    """``(lines, problems)`` describing the file at ``path``, every
    character that is not printable escaped. ``verify`` scans every value;
    ``check_source`` compares a store's recorded source checksum with the
    file it names (never opened otherwise). A file that is not a colosim
    store, series or results table is an :class:`InputError` naming it."""
    try:
        lines, problems = _describe(Path(path), verify, check_source)
    except InputError as exc:
        raise InputError(printable(exc)) from None
    return [printable(line) for line in lines], [printable(p) for p in problems]


def _describe(path: Path, verify: bool, check_source: bool):
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{path}: is a directory, not a store, series or results file")
    if not stat.S_ISREG(mode):
        raise InputError(f"{path}: not a regular file (a device, FIFO or socket), not a store, series or "
                         "results file")
    try:
        hdf5 = h5py.is_hdf5(path)
        if hdf5:
            with h5py.File(path, "r") as f:
                fmt = f.attrs.get("format")
            fmt = fmt.decode(errors="replace") if isinstance(fmt, bytes) else fmt
            if fmt is not None and not isinstance(fmt, str):  # an array, a number: not ours
                fmt = repr(fmt)
    except OSError as exc:
        raise InputError(f"{path}: a damaged or truncated HDF5 file ({_first_line(exc)})") from None
    if not hdf5:
        return _describe_results(path, verify)
    try:
        if fmt == "colosim-store":
            return _describe_store(path, verify, check_source)
        if fmt == "colosim-series":
            return _describe_series(path, verify)
    except (OSError, KeyError, RuntimeError) as exc:  # h5py on damaged metadata
        raise InputError(f"{path}: a damaged or truncated HDF5 file ({_first_line(exc)})") from None
    raise InputError(f"{path}: an HDF5 file but not a colosim store or series (format {fmt!r})")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _describe_store(path: Path, verify: bool, check_source: bool):
    with open_store(path) as s:
        n, R = s.n_tasks, s.n_realizations
        if n < 1 or R < 1:
            raise InputError(f"{path}: a store needs at least one task and one realization "
                             f"(has N = {n}, R = {R})")
        lines = [
            f"{path}: colosim store, format version 1",
            f"tasks N = {n}, realizations R = {R} (x and y float32, "
            f"{2 * s.x.nbytes / 1e9:.2f} GB)",
            f"seed: {s.attrs['seed']}, sampling: {s.attrs['sampling']}",
            f"source: {json.dumps(s.attrs['source'], sort_keys=True)}",
            f"made by colosim {s.attrs['colosim_version']}, numpy {s.attrs['numpy_version']}",
        ]
        more, problems = _check_source(s.attrs["source"], check_source)
        lines += more
        if verify:
            rows = max(1, (64 << 20) // (4 * R))
            found = _scan("x", s.x, rows) + _scan("y", s.y, rows)
            problems += found
            lines.append("values: " + ("all finite and >= 0" if not found else "PROBLEMS"))
    return lines, problems


def _describe_series(path: Path, verify: bool):
    with open_series(path) as s:
        return _series_lines(path, s, verify)


def _series_lines(path: Path, s, verify: bool):
    lengths = s.lengths()
    lines = [
        f"{path}: colosim series, format version 1",
        f"tasks = {s.n_tasks}, records = {s.n_records}"
        + (f" (per task {lengths.min()} to {lengths.max()}, median {int(np.median(lengths))})" if s.n_tasks else ""),
        f"source: {json.dumps(s.attrs['source'], sort_keys=True)}",
        f"filters: {json.dumps(s.attrs['filters'], sort_keys=True)}",
        f"made by colosim {s.attrs['colosim_version']}",
    ]
    problems = []
    if verify:
        problems = _scan("inst", s.inst, 1 << 24) + _scan("avg", s.avg, 1 << 24)
        lines.append("values: " + ("all finite and >= 0" if not problems else "PROBLEMS"))
    return lines, problems


def _describe_results(path: Path, verify: bool):
    rows = read_results(path, check_point=check_row)
    lines = [f"{path}: colosim results table, {len(rows)} rows"]
    if rows:
        instances = sorted({r["instance"] for r in rows})
        points = len(rows) // max(1, len(instances))
        lines.append(f"instances: {len(instances)}, grid points: {points}")
        for key in GRID_KEYS:
            values = list(dict.fromkeys(str(r[key]) for r in rows))
            lines.append(f"  {key}: {', '.join(values)}")
    problems = []
    meta, problem = read_sidecar(path)
    if meta is not None:
        store_attrs = meta.get("store_attrs")
        seed = store_attrs.get("seed") if isinstance(store_attrs, dict) else None
        lines.append(f"config: {meta.get('config')} (fingerprint {str(meta.get('fingerprint'))[:16]}…)")
        lines.append(f"store: {meta.get('store')}, seed {seed}")
        lines.append(f"made by colosim {meta.get('colosim_version')}, numpy {meta.get('numpy_version')}, "
                     f"in {meta.get('elapsed_seconds')} s")
        if verify and meta.get("rows") != len(rows):
            problems.append(f"{path} has {len(rows)} rows but its metadata records {meta.get('rows')!r}")
    elif problem is not None:
        lines.append("metadata: PROBLEM (provenance unknown)")
        problems.append(problem)
    else:
        lines.append("no metadata file beside it (provenance unknown)")
    if verify:
        for r in rows:
            for key in ("m", "q", "q_max", "severity"):
                if not np.isfinite(r[key]) or r[key] < 0:
                    problems.append(f"instance {r['instance']} {r['estimator']}: {key} = {r[key]!r}")
                    break
            else:
                continue
            break
    return lines, problems
