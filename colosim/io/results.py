"""Results tables (SPEC §5): the grid keys and their defaults, the column
schema, the CSV writer, the typed reader with its row checks, and the
sidecar metadata file with the fingerprint of what made the results.

A results table has a header row and one row per instance × grid point:
``instance``, the grid keys (:data:`GRID_KEYS`, in this order), the metrics
(:data:`METRICS`), the interval of q (:data:`INTERVALS`), the sizes R and
|E| (:data:`SIZES`), then the extra columns (:data:`EXTRA_COLUMNS`): every
column in every table, empty in a row it does not apply to. Beside ``NAME.csv``,
``NAME.csv.json`` records the fingerprint, provenance and versions.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import operator
import os
import re
import stat
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import InputError, printable
from .atomic import write_text_atomic
from .outputs import csv_kind, json_kind

RESULTS_FORMAT = "colosim-results"
#: The version of the table's columns; a sweep's fingerprint includes it, so
#: results of another version are never taken as up to date.
RESULTS_SCHEMA = 4

#: The grid keys in column order (SPEC §5), each with its default: the one
#: place they are declared. The defaults are the paper's base case.
GRID_KEYS: dict[str, object] = {
    "estimator": "gpa:0.01",
    "algorithm": "best-fit",
    "capacity": 1.0,
    "clairvoyance": 1.0,
    "data": "inst",
    "rebalance": True,
    "headroom": 1.0,
    # colosim's further keys (alphabetical, SPEC §5): two resources
    # (docs/memory.md); no memory capacity means CPU alone
    "fit_rule": "cpu",
    "memory_capacity": None,
    "memory_estimator": "max",
}

#: The paper's base case (Section 5.1): every grid key but the estimator at
#: its default.
BASE_CASE = {k: v for k, v in GRID_KEYS.items() if k != "estimator"}

#: The metrics of every row (SPEC §5), in column order.
METRICS = ("m_abs", "m_norm", "m", "q", "q_max", "severity", "oversize")

#: The 95% interval of each row's q from its evaluation columns
#: (:func:`colosim.model.intervals.row_q_interval`), after the metrics.
INTERVALS = ("q_ci_low", "q_ci_high")

#: Columns after the intervals, present when a grid point reports them
#: (docs/estimators.md): the rho a calibrated estimator chose (empty for
#: other rows); bins and violation frequency per machine type of a fleet
#: (``;``-separated, in the fleet's order; empty for other rows); with a
#: memory capacity, memory's violation frequency, its worst machine and the
#: share of machines memory fills more than CPU (docs/memory.md; empty for
#: CPU alone).
EXTRA_COLUMNS = ("calibrated_rho", "m_abs_by_type", "q_by_type", "q_memory", "q_memory_max", "memory_bound")

#: The store's R and the row's evaluation columns |E| (SPEC §2), after the
#: intervals: what the row's q is a frequency over.
SIZES = ("realizations", "evaluated")

#: Every table has every column (schema 3 on): the extra columns are empty
#: in the rows they do not apply to.
COLUMNS = ("instance", *GRID_KEYS, *METRICS, *INTERVALS, *SIZES, *EXTRA_COLUMNS)

#: The leading columns of the tables of earlier colosims (schemas 1 and 2).
_PAPER_KEYS = ("estimator", "algorithm", "capacity", "clairvoyance", "data", "rebalance", "headroom")
_EARLIER = {1: ("instance", *_PAPER_KEYS, *METRICS), 2: ("instance", *_PAPER_KEYS, *METRICS, *INTERVALS),
            3: ("instance", *_PAPER_KEYS, *METRICS, *INTERVALS, *SIZES, "calibrated_rho", "m_abs_by_type",
                "q_by_type")}

#: What ``--force`` may replace at a sweep's outputs (:mod:`colosim.io.outputs`):
#: a results table, its sidecar, its summary.
RESULTS_KIND = csv_kind(",".join(COLUMNS[:3]) + ",", "colosim results table (CSV)")
META_KIND = json_kind(RESULTS_FORMAT, "colosim results sidecar (JSON)")
SUMMARY_KIND = csv_kind(",".join(GRID_KEYS) + ",instances,", "colosim results summary (CSV)")

_INTS = ("instance", "m_abs", "m_norm", "oversize", *SIZES)
_FLOATS = ("m", "q", "q_max", "severity", *INTERVALS)
_GRID_AT = tuple(COLUMNS.index(k) for k in GRID_KEYS)
_FINITE = ("m", "q", "q_max", "severity", *INTERVALS)
_SPEC = re.compile(r"^\s*[A-Za-z][A-Za-z-]*\s*(:\s*\S+?\s*)?$")


def header() -> tuple[str, ...]:
    """The header of every results table: :data:`COLUMNS`."""
    return COLUMNS


def format_value(v) -> str:
    """SPEC §5: floats as ``repr``, booleans as ``true``/``false``, None as
    an empty cell, a tuple as its values joined by ``;``."""
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, tuple):
        return ";".join(format_value(x) for x in v)
    return str(v)


def csv_text(rows, columns: tuple[str, ...] = COLUMNS, *, with_header: bool = True) -> str:
    """Rows (tuples in column order) as CSV text."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if with_header:
        w.writerow(columns)
    for r in rows:
        if len(r) != len(columns):
            raise ValueError(f"a row has {len(r)} values for {len(columns)} columns")
        w.writerow([format_value(v) for v in r])
    return buf.getvalue()


def read_results(path, check_point: Callable[[dict], None] | None = None) -> list[dict]:
    """The rows of a results table as dicts of typed values.

    Every row is checked against the schema (types, and the domains of
    SPEC §5: ``q`` and ``q_max`` in [0, 1], ``m_abs`` and ``m_norm`` >= 1,
    finite numbers, ...); ``check_point(row)``, when given, checks the grid
    keys' meaning (for example that the estimator is known) and raises
    :class:`InputError`; it may put their values in canonical form. It is
    called at the first row of each grid point only (the rows after it with
    the same cells get the same canonical values). The
    first bad row is an :class:`InputError`
    naming the file and line (the header is line 1); so is a row that
    repeats an earlier one's instance and grid point.
    """
    path = Path(path)
    try:
        fd = regular_fd(path)
        if fd is None:
            kind = "a directory" if path.is_dir() else "not a regular file"
            raise InputError(f"{path}: {kind}, not a results file")
        with open(fd, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            names = next(reader, None)
            if names is not None and tuple(names) != COLUMNS:
                for schema, lead in sorted(_EARLIER.items(), reverse=True):
                    rest = tuple(names[len(lead):])
                    if tuple(names[: len(lead)]) == lead and set(rest) <= set(COLUMNS):
                        raise InputError(f"{path}: a results table of an earlier colosim (schema {schema}, "
                                         f"without the columns of schema {RESULTS_SCHEMA}: "
                                         f"{', '.join(c for c in COLUMNS if c not in names)}); "
                                         "run its sweep again with --force")
            if names is None or tuple(names) != COLUMNS:
                unknown = [c for c in names or () if c not in COLUMNS]
                missing = [c for c in COLUMNS if c not in (names or ())]
                what = "; ".join(part for part in (
                    f"unknown columns {printable(', '.join(unknown))}" if unknown else "",
                    f"missing {', '.join(missing)}" if missing and names else "",
                    "columns out of order" if names and not unknown and not missing else "") if part)
                raise InputError(f"{path}: not a colosim results table (unexpected header"
                                 + (f": {what}" if what else "") + ")")
            out, seen = [], {}
            # a grid point's cells repeat on every instance: typed, checked and
            # put in canonical form once, at their first row
            points: dict[tuple, tuple[dict, dict, tuple]] = {}
            cells_of = operator.itemgetter(*_GRID_AT)
            for line, values in enumerate(reader, start=2):
                if len(values) != len(names):
                    raise InputError(f"{path}: line {line}: {len(values)} values for {len(names)} columns")
                rec = dict(zip(names, values))
                cells = cells_of(values)
                point = points.get(cells)
                try:
                    typed = _typed_point(rec) if point is None else point[0]
                    row = {**rec, **typed, **_typed_rest(rec)}
                except (ValueError, TypeError):
                    raise InputError(f"{path}: line {line}: malformed row") from None
                # a later row of a point: its cells passed at the first row
                problem = _row_problem(row) if point is None else _metrics_problem(row)
                if problem:
                    raise InputError(f"{path}: line {line}: {problem}")
                if point is None:
                    if check_point is not None:
                        try:
                            check_point(row)
                        except InputError as exc:
                            raise InputError(f"{path}: line {line}: {exc}") from None
                    canonical = {k: row[k] for k in GRID_KEYS}
                    point = points[cells] = (typed, canonical, tuple(format_value(v) for v in canonical.values()))
                else:
                    row.update(point[1])
                key = (row["instance"], *point[2])
                if key in seen:
                    raise InputError(f"{path}: line {line}: instance {row['instance']} at this grid point again "
                                     f"(first on line {seen[key]})")
                seen[key] = line
                out.append(row)
            return out
    except FileNotFoundError:
        raise InputError(f"{path}: results file not found") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a results file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    except csv.Error as exc:
        raise InputError(f"{path}: not a CSV results table ({exc})") from None
    except OSError as exc:  # a path through a file, no permission, an I/O error
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _typed_point(rec: dict) -> dict:
    """The typed values of a row's grid keys that are not text."""
    out = {key: float(rec[key]) for key in ("clairvoyance", "headroom")}
    # a number, or a fleet spec "C:SHARE,..." (docs/estimators.md)
    out["capacity"] = rec["capacity"] if ":" in rec["capacity"] else float(rec["capacity"])
    if rec["rebalance"] not in ("true", "false"):
        raise ValueError(rec["rebalance"])
    out["rebalance"] = rec["rebalance"] == "true"
    out["memory_capacity"] = float(rec["memory_capacity"]) if rec["memory_capacity"] else None
    return out


def _typed_rest(rec: dict) -> dict:
    """The typed values of a row's other columns."""
    out = {key: int(rec[key]) for key in _INTS}
    for key in _FLOATS:
        out[key] = float(rec[key])
    out["calibrated_rho"] = float(rec["calibrated_rho"]) if rec["calibrated_rho"] else None
    for key in ("q_memory", "q_memory_max", "memory_bound"):
        out[key] = float(rec[key]) if rec[key] else None
    text = rec["m_abs_by_type"]
    out["m_abs_by_type"] = tuple(int(v) for v in text.split(";")) if text else ()
    text = rec["q_by_type"]
    out["q_by_type"] = tuple(float(v) for v in text.split(";")) if text else ()
    return out


def _row_problem(r: dict) -> str | None:
    """What is wrong with a typed row, or None."""
    if not _SPEC.match(r["estimator"]):
        return f"estimator {r['estimator']!r} is not an estimator spec (NAME or NAME:PARAM)"
    for key in ("clairvoyance", "headroom", *_FINITE):
        if not math.isfinite(r[key]):
            return f"{key} is not a finite number"
    if isinstance(r["capacity"], float) and not (math.isfinite(r["capacity"]) and r["capacity"] > 0):
        return "capacity must be a finite number > 0 or a fleet spec"
    if not (0.0 < r["clairvoyance"] <= 1.0 and 0.0 < r["headroom"] <= 1.0):
        return "clairvoyance and headroom must lie in (0, 1]"
    return _metrics_problem(r, finite_checked=True)


def _metrics_problem(r: dict, finite_checked: bool = False) -> str | None:
    """What :func:`_row_problem` finds wrong with a row whose grid cells are
    known to pass (those of an earlier row of its point), or None."""
    if not finite_checked:
        for key in _FINITE:
            if not math.isfinite(r[key]):
                return f"{key} is not a finite number"
    if not (0.0 <= r["q"] <= 1.0 and 0.0 <= r["q_max"] <= 1.0):
        return "q and q_max must lie in [0, 1]"
    if not (0.0 <= r["q_ci_low"] <= r["q"] <= r["q_ci_high"] <= 1.0):
        return "q_ci_low <= q <= q_ci_high must hold, within [0, 1]"
    if r["m_abs"] < 1 or r["m_norm"] < 1 or r["instance"] < 0:
        return "m_abs and m_norm must be >= 1, instance >= 0"
    if r["severity"] < 0 or r["oversize"] < 0:
        return "severity and oversize must be >= 0"
    if not 1 <= r["evaluated"] <= r["realizations"]:
        return "evaluated must lie in [1, realizations]"
    rho = r.get("calibrated_rho")
    if rho is not None and not (math.isfinite(rho) and 0 < rho < 1):
        return "calibrated_rho must lie in (0, 1)"
    for key in ("q_memory", "q_memory_max", "memory_bound"):
        if r[key] is not None and not (math.isfinite(r[key]) and 0 <= r[key] <= 1):
            return f"{key} must lie in [0, 1]"
    # the fleet columns (empty for a single capacity)
    if len(r["q_by_type"]) != len(r["m_abs_by_type"]):
        return "m_abs_by_type and q_by_type differ in length"
    if not all(math.isfinite(v) and 0 <= v <= 1 for v in r["q_by_type"]):
        return "q_by_type values must lie in [0, 1]"
    if r["m_abs_by_type"] and sum(r["m_abs_by_type"]) != r["m_abs"]:
        return "m_abs_by_type does not add up to m_abs"
    return None


# ---------------------------------------------------------------- sidecar


def _named(results) -> Path:
    """``results`` as a path with a last component (``.`` made absolute)."""
    results = Path(results)
    if not results.name:
        results = Path(os.path.abspath(results))
    if not results.name:
        raise InputError(f"{results}: a folder, not a results file")
    return results


def meta_path(results: Path) -> Path:
    """``NAME.csv.json`` beside ``NAME.csv``."""
    results = _named(results)
    return results.with_name(results.name + ".json")


def summary_path(results: Path) -> Path:
    """``NAME.csv.summary.csv`` beside ``NAME.csv``: one row per grid point."""
    results = _named(results)
    return results.with_name(results.name + ".summary.csv")


def fingerprint(payload) -> str:
    """SHA-256 of a JSON-serializable description of what determines the
    results (sorted keys, so that the order of a dict does not matter)."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def write_meta(results: Path, meta: dict) -> None:
    """Write the sidecar of ``results`` atomically (``format`` added)."""
    text = json.dumps({"format": RESULTS_FORMAT, **meta}, indent=2, sort_keys=True) + "\n"
    write_text_atomic(meta_path(results), text)


#: the largest results sidecar read (a colosim sidecar is a few kB)
SIDECAR_LIMIT = 1 << 24


def regular_fd(path: Path) -> int | None:
    """A read-only descriptor of ``path`` when it is a regular file (links
    followed), else None; never blocks (a FIFO is refused, not opened for
    good) and never opens a device. OSError when it cannot be read."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        return None
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced meanwhile
            os.close(fd)
            return None
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_sidecar(results) -> tuple[dict | None, str | None]:
    """``(meta, problem)`` of the sidecar ``NAME.csv.json`` of the results
    table ``results``: ``(None, None)`` when there is none, ``(dict, None)``
    for a colosim results sidecar, else ``(None, what is wrong)``. Only a
    regular file is read (never a FIFO or device), at most
    :data:`SIDECAR_LIMIT` bytes."""
    mp = meta_path(Path(results))
    if not os.path.lexists(mp):
        return None, None
    try:
        fd = regular_fd(mp)
        if fd is None:
            return None, f"{mp}: not a regular file, not a results sidecar"
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(SIDECAR_LIMIT + 1)
    except FileNotFoundError:
        return None, f"{mp}: a broken link, not a results sidecar"
    except OSError as exc:
        return None, f"{mp}: cannot be read ({exc.strerror or exc})"
    if len(data) > SIDECAR_LIMIT:
        return None, f"{mp}: over {SIDECAR_LIMIT >> 20} MiB, not a results sidecar"
    try:
        meta = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, f"{mp}: not a JSON file, not a results sidecar"
    if not isinstance(meta, dict):
        return None, f"{mp}: a JSON {type(meta).__name__}, not a results sidecar (a JSON object)"
    if meta.get("format") != RESULTS_FORMAT:
        return None, f"{mp}: format {meta.get('format')!r}, not a results sidecar ({RESULTS_FORMAT!r})"
    return meta, None


def read_meta(results: Path) -> dict | None:
    """The sidecar of ``results`` as a dict; None when there is none or it
    is not a colosim results sidecar (:func:`read_sidecar` says why)."""
    return read_sidecar(results)[0]


def sha256_text_file(path) -> str:
    """SHA-256 of a file's bytes, hex."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def status(results: Path, fingerprint_: str) -> str:
    """What ``results`` holds for this fingerprint: ``"absent"`` (no file),
    ``"finished"`` (the complete results, matching the row count and
    checksum its sidecar records), ``"damaged"`` (its sidecar says they are
    this fingerprint's, but the file no longer matches it: cut, edited) or
    ``"other"`` (anything else: another config or store, an earlier
    colosim, no sidecar)."""
    results = Path(results)
    if not results.is_file():
        return "absent"
    meta = read_meta(results)
    if meta is None or meta.get("fingerprint") != fingerprint_ or meta.get("complete") is not True:
        return "other"
    if "sha256" not in meta:
        return "other"  # an earlier colosim's, without a checksum
    return "finished" if meta.get("sha256") == sha256_text_file(results) else "damaged"


def finished(results: Path, fingerprint_: str) -> bool:
    """Whether ``results`` holds the complete results of this fingerprint,
    matching the checksum its sidecar records."""
    return status(results, fingerprint_) == "finished"


def sidecar_config_path(meta) -> str | None:
    """The config file a sidecar names: ``config.path`` (schema 3), or the
    ``config`` string of earlier sidecars; None when it names none."""
    if not isinstance(meta, dict):
        return None
    config = meta.get("config")
    if isinstance(config, dict):
        config = config.get("path")
    return config if isinstance(config, str) else None


def provenance() -> dict:
    """What ran: the command line, the host, the versions and, when colosim
    runs from a git checkout, its commit (and whether the tree had
    uncommitted changes). Never part of a fingerprint."""
    import platform
    import shlex
    import socket
    import subprocess
    import sys

    import h5py
    import numba

    from .._version import __version__

    versions = {"colosim": __version__, "python": platform.python_version(), "numpy": np.__version__,
                "numba": numba.__version__, "h5py": h5py.__version__}
    commit = None
    source = Path(__file__).resolve().parents[2]
    if (source / ".git").exists():
        try:
            def git(*args):
                return subprocess.run(["git", "-C", str(source), *args], capture_output=True, text=True,
                                      timeout=5, check=True).stdout.strip()
            commit = {"id": git("rev-parse", "HEAD"),
                      "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
        except (OSError, subprocess.SubprocessError):
            commit = None
    return {"command": shlex.join(sys.argv), "host": socket.gethostname(), "versions": versions, "commit": commit}
