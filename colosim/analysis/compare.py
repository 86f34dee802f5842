"""Two results tables of one grid compared, grid point by grid point: "did
this change help?" (``colosim compare A.csv B.csv``).

Rows are paired on instance and grid point, so that each difference B − A
is taken on the same instance; per grid point the mean of the paired
differences of m, m_abs and q gets Student's t 95% interval
(:func:`~colosim.model.intervals.mean_difference_interval`). Lower is better
for all three: a difference whose whole interval lies below 0 says B is
better, above 0 that A is.

Two tables are comparable when they hold the same grid points, each on the
same instances, made from the same store: when both sidecars are there,
their ``store_attrs`` and ``realizations`` must agree (a table without a
sidecar is taken as it is).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..io.outputs import csv_kind
from ..io.results import GRID_KEYS, csv_text, format_value, meta_path, read_meta, read_results
from ..model.grid import check_row
from ..model.intervals import mean_difference_interval
from .summary import group_rows, trials

#: The differences B − A compared, each as ``d<NAME>_mean``, ``_ci_low``,
#: ``_ci_high``: (column prefix, metric of the rows).
DIFFERENCES = (("dm", "m"), ("dm_abs", "m_abs"), ("dq", "q"))

#: The columns of a comparison (``colosim compare --out``).
COMPARE_COLUMNS = (*GRID_KEYS, "instances",
                   "m_a", "m_b", "dm_mean", "dm_ci_low", "dm_ci_high", "m_verdict",
                   "m_abs_a", "m_abs_b", "dm_abs_mean", "dm_abs_ci_low", "dm_abs_ci_high",
                   "q_a", "q_b", "dq_mean", "dq_ci_low", "dq_ci_high", "q_verdict",
                   "q_resolution")

#: What ``compare --out --force`` may replace: an earlier comparison.
COMPARISON_KIND = csv_kind(",".join(COMPARE_COLUMNS[:3]) + ",", "colosim comparison (CSV)")

B_BETTER, A_BETTER, NO_DIFFERENCE = "B better", "A better", "no difference at 95%"
#: the verdict with fewer than two instances (no interval)
UNDECIDED = "no interval (n < 2)"


def verdict(low: float, high: float) -> str:
    """What the 95% interval [low, high] of a difference B − A of a
    lower-is-better metric says."""
    if math.isnan(low) or math.isnan(high):
        return UNDECIDED
    if high < 0:
        return B_BETTER
    if low > 0:
        return A_BETTER
    return NO_DIFFERENCE


def point_text(point: tuple) -> str:
    """A grid point as ``key=value, ...`` (values as in a results table)."""
    return ", ".join(f"{k}={format_value(v)}" for k, v in zip(GRID_KEYS, point))


def _ids(values) -> str:
    values = sorted(values)
    shown = ", ".join(str(v) for v in values[:10])
    return shown + (f" and {len(values) - 10} more" if len(values) > 10 else "")


def _by_instance(rs: list[dict], name: str, point: tuple) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for r in rs:
        if r["instance"] in out:
            raise InputError(f"{name}: instance {r['instance']} appears twice at grid point {point_text(point)}")
        out[r["instance"]] = r
    return out


def compare(rows_a: list[dict], rows_b: list[dict], realizations: int | None = None,
            names: tuple[str, str] = ("A", "B")) -> list[dict]:
    """Per grid point of ``rows_a`` (in its order), the paired comparison of
    ``rows_b`` with ``rows_a``: ``instances``; the means ``m_a``, ``m_b``,
    ``m_abs_a``, ``m_abs_b``, ``q_a``, ``q_b``; the mean of the
    differences B − A of m, m_abs and q with its Student's t 95% interval
    (``dm_*``, ``dm_abs_*``, ``dq_*``, NaN bounds with one instance); the
    verdicts ``m_verdict`` and ``q_verdict`` (:func:`verdict`); and
    ``q_resolution``, the resolution of A's q at this point (1 / sum of
    m_abs × |E|) when the store's ``realizations`` is given, else NaN.

    Tables whose grid points or instances differ are an
    :class:`InputError` naming the table (``names``) and one culprit.
    """
    name_a, name_b = names
    groups_a, groups_b = group_rows(rows_a), group_rows(rows_b)
    for (name, mine), (other, theirs) in (((name_a, groups_a), (name_b, groups_b)),
                                          ((name_b, groups_b), (name_a, groups_a))):
        extra = [p for p in mine if p not in theirs]
        if extra:
            more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
            raise InputError(f"{name}: grid point {point_text(extra[0])} is not in {other}{more}; "
                             "the tables' grids differ")
    inst_a = {r["instance"] for r in rows_a}
    inst_b = {r["instance"] for r in rows_b}
    if inst_a != inst_b:
        parts = [f"only in {n}: {_ids(s)}" for n, s in ((name_a, inst_a - inst_b), (name_b, inst_b - inst_a)) if s]
        raise InputError(f"{name_a} and {name_b}: the tables' instances differ ({'; '.join(parts)})")
    out = []
    for point, rs_a in groups_a.items():
        a = _by_instance(rs_a, name_a, point)
        b = _by_instance(groups_b[point], name_b, point)
        for name, mine, theirs in ((name_a, a, b), (name_b, b, a)):
            missing = theirs.keys() - mine.keys()
            if missing:
                raise InputError(f"{name}: grid point {point_text(point)} lacks instances {_ids(missing)}")
        order = sorted(a)
        entry: dict = dict(zip(GRID_KEYS, point))
        entry["instances"] = len(order)
        for prefix, metric in DIFFERENCES:
            va = np.array([a[k][metric] for k in order], dtype=np.float64)
            vb = np.array([b[k][metric] for k in order], dtype=np.float64)
            entry[f"{metric}_a"], entry[f"{metric}_b"] = float(va.mean()), float(vb.mean())
            entry[f"{prefix}_mean"], entry[f"{prefix}_ci_low"], entry[f"{prefix}_ci_high"] = \
                mean_difference_interval(va, vb)
        entry["m_verdict"] = verdict(entry["dm_ci_low"], entry["dm_ci_high"])
        entry["q_verdict"] = verdict(entry["dq_ci_low"], entry["dq_ci_high"])
        entry["q_resolution"] = math.nan if realizations is None else 1.0 / trials(rs_a, realizations)
        out.append(entry)
    return out


def comparison_text(comparison: list[dict]) -> str:
    """A comparison as CSV text (:data:`COMPARE_COLUMNS`; grid keys written
    as in a results table, an undefined value as an empty cell)."""
    def cell(v):
        return None if isinstance(v, float) and math.isnan(v) else v

    return csv_text([tuple(cell(c[k]) for k in COMPARE_COLUMNS) for c in comparison], COMPARE_COLUMNS)


def _first_difference(a, b, where: str = "") -> str | None:
    """The first key path at which two JSON values differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            found = _first_difference(a.get(k), b.get(k), f"{where}.{k}" if where else str(k))
            if found:
                return found
        return None
    return None if a == b else f"{where or 'value'}: {a!r} vs {b!r}"


def store_realizations(path_a: Path, path_b: Path) -> int | None:
    """The realization count of the store both tables were made from, from
    their sidecars (None when neither records it). Both sidecars present
    with different ``store_attrs`` or ``realizations`` are an
    :class:`InputError`; a missing sidecar says nothing about the store."""
    meta_a, meta_b = read_meta(path_a), read_meta(path_b)
    for path, meta in ((path_a, meta_a), (path_b, meta_b)):
        r = None if meta is None else meta.get("realizations")
        if r is not None and (isinstance(r, bool) or not isinstance(r, int) or r < 1):
            raise InputError(f"{meta_path(path)}: realizations {r!r} is not a positive integer")
    if meta_a is not None and meta_b is not None:
        ra, rb = meta_a.get("realizations"), meta_b.get("realizations")
        if ra is not None and rb is not None and ra != rb:
            raise InputError(f"{meta_path(path_b)}: made from a store of {rb} realizations, "
                             f"{meta_path(path_a)} from one of {ra}; the tables' stores differ")
        sa, sb = meta_a.get("store_attrs"), meta_b.get("store_attrs")
        if sa is not None and sb is not None and sa != sb:
            raise InputError(f"{meta_path(path_b)}: its store differs from {meta_path(path_a)}'s "
                             f"(store_attrs {_first_difference(sa, sb)})")
        ia, ib = meta_a.get("instances"), meta_b.get("instances")
        for path, inst in ((path_a, ia), (path_b, ib)):
            if inst is not None and not isinstance(inst, dict):
                raise InputError(f"{meta_path(path)}: instances {inst!r} is not a table of count, tasks and seed")
        if ia is not None and ib is not None and (ia.get("seed"), ia.get("tasks")) != (ib.get("seed"), ib.get("tasks")):
            raise InputError(f"{meta_path(path_b)}: its instances (seed {ib.get('seed')!r}, {ib.get('tasks')!r} tasks) "
                             f"are not {meta_path(path_a)}'s (seed {ia.get('seed')!r}, {ia.get('tasks')!r} tasks): "
                             "rows of the same instance number would not be the same tasks")
    for meta in (meta_a, meta_b):
        if meta is not None and meta.get("realizations") is not None:
            return meta["realizations"]
    return None


def compare_files(path_a, path_b) -> list[dict]:
    """:func:`compare` of the results tables at ``path_a`` and ``path_b``
    (rows checked as ``colosim plot`` reads them), their stores checked by
    :func:`store_realizations`."""
    path_a, path_b = Path(path_a), Path(path_b)
    rows = []
    for path in (path_a, path_b):
        rs = read_results(path, check_point=check_row)
        if not rs:
            raise InputError(f"{path}: results table has a header but no rows")
        rows.append(rs)
    realizations = store_realizations(path_a, path_b)
    return compare(rows[0], rows[1], realizations, names=(str(path_a), str(path_b)))
