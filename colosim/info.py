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
from .io.results import GRID_KEYS, meta_path, read_results, read_sidecar, regular_fd
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


def describe(path, verify: bool = False, *, check_source: bool = False) -> tuple[list[str], list[str]]:
    """``(lines, problems)`` describing the file at ``path``, every
    character that is not printable escaped. ``verify`` scans every value
    (off by default: a paper-scale store is 8 GB);
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
        return _describe_text(path, verify)
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
        matrices = "x, y and memory" if s.has_memory else "x and y"
        lines = [
            f"{path}: colosim store, format version {2 if s.has_memory else 1}"
            + (" (with memory, docs/memory.md)" if s.has_memory else " (CPU only)"),
            f"tasks N = {n}, realizations R = {R} ({matrices} float32, "
            f"{(3 if s.has_memory else 2) * s.x.nbytes / 1e9:.2f} GB)",
            f"seed: {s.attrs['seed']}, sampling: {s.attrs['sampling']}",
            f"source: {json.dumps(s.attrs['source'], sort_keys=True)}",
            f"made by colosim {s.attrs['colosim_version']}, numpy {s.attrs['numpy_version']}",
        ]
        more, problems = _check_source(s.attrs["source"], check_source)
        lines += more
        if verify:
            rows = max(1, (64 << 20) // (4 * R))
            found = _scan("x", s.x, rows) + _scan("y", s.y, rows)
            if s.has_memory:
                found += _scan("memory", s.memory, rows)
            problems += found
            lines.append("values: " + ("all finite and >= 0" if not found else "PROBLEMS"))
    return lines, problems


def _describe_series(path: Path, verify: bool):
    with open_series(path) as s:
        return _series_lines(path, s, verify)


def _series_lines(path: Path, s, verify: bool):
    lengths = s.lengths()
    lines = [
        f"{path}: colosim series, format version {2 if s.has_memory else 1}"
        + (" (with memory: mem_avg, mem_max)" if s.has_memory else " (CPU only)"),
        f"tasks = {s.n_tasks}, records = {s.n_records}"
        + (f" (per task {lengths.min()} to {lengths.max()}, median {int(np.median(lengths))})" if s.n_tasks else ""),
        f"source: {json.dumps(s.attrs['source'], sort_keys=True)}",
        "filters:", *_nested_lines(s.attrs["filters"], "  "),
        f"made by colosim {s.attrs['colosim_version']}",
    ]
    problems = []
    if verify:
        problems = _scan("inst", s.inst, 1 << 24) + _scan("avg", s.avg, 1 << 24)
        if s.has_memory:
            problems += _scan("mem_avg", s.mem_avg, 1 << 24) + _scan("mem_max", s.mem_max, 1 << 24)
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
        lines += _sidecar_lines(meta, brief=True)
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


def _nested_lines(value, indent: str) -> list[str]:
    """A JSON-like value as lines, one key per line (nested keys indented)."""
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            if isinstance(v, dict) and v:
                out.append(f"{indent}{k}:")
                out += _nested_lines(v, indent + "  ")
            else:
                out.append(f"{indent}{k}: {json.dumps(v, sort_keys=True, default=str)}")
        return out
    return [f"{indent}{json.dumps(value, sort_keys=True, default=str)}"]


def _sidecar_lines(meta: dict, brief: bool = False) -> list[str]:
    """What a results sidecar records: what made the results and how."""
    config, store = meta.get("config"), meta.get("store")
    path = config.get("path") if isinstance(config, dict) else config
    store_path = store.get("path") if isinstance(store, dict) else store
    attrs = meta.get("store_attrs")
    seed = attrs.get("seed") if isinstance(attrs, dict) else None
    versions = meta.get("versions")
    if not isinstance(versions, dict):
        versions = {"colosim": meta.get("colosim_version"), "numpy": meta.get("numpy_version")}
    commit = meta.get("commit")
    lines = [
        f"config: {path} (fingerprint {str(meta.get('fingerprint'))[:16]}…)",
        f"store: {store_path}, seed {seed}, R = {meta.get('realizations')}"
        + (f" (fingerprint {str(store.get('fingerprint'))[:16]}…)" if isinstance(store, dict) else ""),
        f"made by colosim {versions.get('colosim')}, in {meta.get('elapsed_seconds')} s",
    ]
    if meta.get("started"):
        lines.append(f"ran: {meta.get('started')} to {meta.get('finished')} on {meta.get('host')}")
    if meta.get("command"):
        lines.append(f"command: {meta.get('command')}")
    if brief:
        return lines
    lines.append("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    if isinstance(commit, dict):
        lines.append(f"commit: {commit.get('id')}" + (" (with uncommitted changes)" if commit.get("dirty") else ""))
    if isinstance(config, dict) and isinstance(config.get("parsed"), dict):
        lines.append("effective config:")
        lines += _nested_lines(config["parsed"], "  ")
    lines.append(f"rows: {meta.get('rows')}, complete: {meta.get('complete')}, sha256 {str(meta.get('sha256'))[:16]}…")
    return lines


def _describe_text(path: Path, verify: bool):
    """A text file colosim writes: a results table, its sidecar or summary,
    or a characterization's tables and report."""
    name = path.name
    if name.endswith(".csv.json"):
        results = path.with_name(name[: -len(".json")])
        meta, problem = read_sidecar(results)
        if meta is None:
            raise InputError(problem or f"{path}: not a colosim results sidecar")
        return [f"{path}: colosim results sidecar (of {results.name})", *_sidecar_lines(meta)], []
    if name.endswith(".summary.csv"):
        return _describe_summary(path)
    if name.endswith(".csv"):
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            first = fh.readline().strip()
        if first.startswith("instance,"):
            return _describe_results(path, verify)
        if (path.parent / "report.md").is_file():
            return _describe_table(path, "colosim characterize table")
    if name == "report.md":
        lines = [f"{path}: colosim characterize report"]
        lines += [f"  {line.lstrip('# ')}" for line in path.read_text(encoding="utf-8", errors="replace")
                  .splitlines() if line.startswith("#")][:30]
        return lines, []
    if name.endswith(".csv"):
        return _describe_results(path, verify)  # its own clear error when it is not a results table
    raise InputError(f"{path}: not a store, series, results table, sidecar, summary or characterize output")


def _describe_summary(path: Path):
    import csv

    from .analysis.summary import SUMMARY_COLUMNS

    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    if not rows or tuple(rows[0]) != SUMMARY_COLUMNS:
        raise InputError(f"{path}: not a colosim results summary (unexpected header)")
    body = [dict(zip(rows[0], r)) for r in rows[1:]]
    lines = [f"{path}: colosim results summary, {len(body)} grid points"]
    if body:
        lines.append(f"instances per point: {', '.join(sorted({r['instances'] for r in body}))}")
        for key in GRID_KEYS:
            lines.append(f"  {key}: {', '.join(dict.fromkeys(r[key] for r in body))}")
        lines.append("columns: " + ", ".join(rows[0][len(GRID_KEYS):]))
    results = path.with_name(path.name[: -len(".summary.csv")])
    if meta_path(results).exists():
        meta, problem = read_sidecar(results)
        if meta is not None:
            lines += _sidecar_lines(meta, brief=True)
    return lines, []


def _describe_table(path: Path, kind: str):
    import csv

    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise InputError(f"{path}: an empty file, not a {kind}")
    return [f"{path}: {kind}, {len(rows) - 1} rows", "columns: " + ", ".join(rows[0])], []
