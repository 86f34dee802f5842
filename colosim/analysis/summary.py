"""Summaries of a results table over instances, per grid point, with 95%
confidence intervals of the means (:mod:`colosim.model.intervals`)."""

from __future__ import annotations

import numpy as np

from ..io.results import GRID_KEYS, csv_text
from ..model.estimators import family
from ..model.grid import evaluation_columns
from ..model.intervals import mean_interval, mean_q_interval

#: The summarized metrics, each as ``_mean``, ``_ci_low``, ``_ci_high``;
#: memory's (docs/memory.md) empty for points of CPU alone.
SUMMARY_METRICS = ("m_abs", "m", "q", "q_max", "q_memory", "memory_bound")

#: The columns of a summary table (``RESULTS.csv.summary.csv``).
SUMMARY_COLUMNS = (*GRID_KEYS, "instances",
                   *(f"{m}_{s}" for m in SUMMARY_METRICS for s in ("mean", "ci_low", "ci_high")),
                   "q_resolution")

_BOUNDS = {"m_abs": (1.0, np.inf), "m": (0.0, np.inf), "memory_bound": (0.0, 1.0)}


def group_rows(rows: list[dict]) -> dict[tuple, list[dict]]:
    """Rows per grid point (the grid keys' values), in the order the grid
    points first appear."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in GRID_KEYS), []).append(r)
    return groups


def trials(rows: list[dict], realizations: int) -> int:
    """``sum over rows of m_abs × |E|``: the bin × column trials behind the
    rows' q (its inverse is the resolution of SPEC §12)."""
    return sum(r["m_abs"] * evaluation_columns(r["clairvoyance"], realizations) for r in rows)


def summarize_point(rs: list[dict], realizations: int) -> dict:
    """Mean and 95% interval over instances of m_abs, m, q and q_max (and
    q_memory and memory_bound when memory is packed) for the
    rows of one grid point; the intervals of q and q_memory (over ``m_abs × |E|`` trials
    per instance) and of q_max (one machine's ``|E|`` trials per instance)
    by :func:`~colosim.model.intervals.mean_q_interval`, the others by
    Student's t. Intervals are NaN with fewer than two instances."""
    entry = {k: rs[0][k] for k in GRID_KEYS}
    entry["instances"] = len(rs)
    # the rows of a point share its clairvoyance, hence |E|: trials(rs) and
    # the summed |E| in exact integers
    per_row = evaluation_columns(rs[0]["clairvoyance"], realizations)
    n_trials = per_row * sum(r["m_abs"] for r in rs)
    columns = per_row * len(rs)
    for metric in SUMMARY_METRICS:
        if any(r.get(metric) is None for r in rs):  # memory's, at a point of CPU alone
            entry[metric + "_mean"] = entry[metric + "_ci_low"] = entry[metric + "_ci_high"] = None
            continue
        v = np.array([r[metric] for r in rs], dtype=np.float64)
        if metric in ("q", "q_memory"):
            low, high = mean_q_interval(v, n_trials)
        elif metric == "q_max":  # one machine's frequency over |E| columns per instance
            low, high = mean_q_interval(v, columns)
        else:
            low, high = mean_interval(v, bounds=_BOUNDS[metric])
        entry[metric + "_mean"] = float(v.mean())
        entry[metric + "_ci_low"], entry[metric + "_ci_high"] = low, high
    entry["q_resolution"] = 1.0 / n_trials
    return entry


def summarize(rows: list[dict], realizations: int) -> list[dict]:
    """:func:`summarize_point` for every grid point of a results table of a
    store with ``realizations`` columns, in the order the points first
    appear."""
    return [summarize_point(rs, realizations) for rs in group_rows(rows).values()]


def summary_text(summary: list[dict]) -> str:
    """A summary as CSV text (:data:`SUMMARY_COLUMNS`; grid keys written as
    in the results table, an undefined interval as an empty cell)."""
    def cell(v):
        return None if isinstance(v, float) and np.isnan(v) else v

    return csv_text([tuple(cell(s[c]) for c in SUMMARY_COLUMNS) for s in summary], SUMMARY_COLUMNS)


def rebalancing_gains(rows: list[dict]) -> dict[tuple, np.ndarray]:
    """Relative gain of rebalancing per instance, ``(q_off - q_on) / q_off``
    (paper Figure 13), keyed by (estimator, algorithm); runs are paired on
    instance and every other grid key. Pairs with ``q_off = 0`` are omitted
    (the paper omits zero-q baselines); perc and max are omitted as in the
    paper. A key without a single usable pair is absent from the result."""
    off, on = {}, {}
    for r in rows:
        if family(r["estimator"]) in ("perc", "max"):
            continue
        key = (r["instance"],) + tuple(r[k] for k in GRID_KEYS if k != "rebalance")
        (on if r["rebalance"] else off)[key] = r["q"]
    gains: dict[tuple, list] = {}
    for key, q_off in sorted(off.items()):  # instance order, whatever the rows' order
        if key in on and q_off > 0:
            gains.setdefault((key[1], key[2]), []).append((q_off - on[key]) / q_off)
    return {k: np.asarray(v) for k, v in gains.items()}
