"""``colosim info``: what a store, series or results file is, and whether it
is intact (shapes, recorded source checksum, NaN/infinite/negative values)."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from .errors import InputError
from .io._hdf5 import sha256_file
from .io.results import GRID_KEYS, read_meta, read_results
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


def _check_source(source) -> tuple[list[str], list[str]]:
    lines, problems = [], []
    if isinstance(source, dict) and source.get("sha256") and source.get("series"):
        p = Path(source["series"])
        if p.exists():
            ok = sha256_file(p) == source["sha256"]
            lines.append(f"source checksum: {'matches' if ok else 'DIFFERS'} ({p})")
            if not ok:
                problems.append(f"source {p} changed since the file was made (SHA-256 differs)")
        else:
            lines.append(f"source checksum: {source['sha256'][:16]}… (source file {p} not here to compare)")
    return lines, problems


def describe(path, verify: bool = True) -> tuple[list[str], list[str]]:
    """``(lines, problems)`` describing the file at ``path``."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    if h5py.is_hdf5(path):
        with h5py.File(path, "r") as f:
            fmt = f.attrs.get("format")
        fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
        if fmt == "colosim-store":
            return _describe_store(path, verify)
        if fmt == "colosim-series":
            return _describe_series(path, verify)
        raise InputError(f"{path}: an HDF5 file but not a colosim store or series (format {fmt!r})")
    return _describe_results(path, verify)


def _describe_store(path: Path, verify: bool):
    with open_store(path) as s:
        lines = [
            f"{path}: colosim store, format version 1",
            f"tasks N = {s.n_tasks}, realizations R = {s.n_realizations} (x and y float32, "
            f"{2 * s.x.nbytes / 1e9:.2f} GB)",
            f"seed: {s.attrs['seed']}, sampling: {s.attrs['sampling']}",
            f"source: {json.dumps(s.attrs['source'], sort_keys=True)}",
            f"made by colosim {s.attrs['colosim_version']}, numpy {s.attrs['numpy_version']}",
        ]
        problems = []
        if verify:
            more, problems = _check_source(s.attrs["source"])
            lines += more
            rows = max(1, (64 << 20) // (4 * s.n_realizations))
            problems += _scan("x", s.x, rows) + _scan("y", s.y, rows)
            lines.append("values: " + ("all finite and >= 0" if not problems else "PROBLEMS"))
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
    meta = read_meta(path)
    if meta is not None:
        lines.append(f"config: {meta.get('config')} (fingerprint {str(meta.get('fingerprint'))[:16]}…)")
        lines.append(f"store: {meta.get('store')}, seed {meta.get('store_attrs', {}).get('seed')}")
        lines.append(f"made by colosim {meta.get('colosim_version')}, numpy {meta.get('numpy_version')}, "
                     f"in {meta.get('elapsed_seconds')} s")
        if verify and meta.get("rows") != len(rows):
            problems.append(f"{path} has {len(rows)} rows but its metadata records {meta.get('rows')}")
    else:
        lines.append("no metadata file beside it (provenance unknown)")
    if verify:
        for r in rows:
            for key in ("m", "q", "q_max", "severity"):
                if not np.isfinite(r[key]) or r[key] < 0:
                    problems.append(f"instance {r['instance']} {r['estimator']}: {key} = {r[key]!r}")
                    break
            if problems:
                break
    return lines, problems
