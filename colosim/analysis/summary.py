"""Summaries of a results table over instances, per grid point."""

from __future__ import annotations

import numpy as np

from ..io.results import GRID_KEYS
from ..model.estimators import family


def summarize(rows: list[dict]) -> list[dict]:
    """Mean and quartiles (NumPy's linear percentiles) of m_abs, m and q over
    instances, per grid point, in the order the grid points first appear."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in GRID_KEYS), []).append(r)
    out = []
    for key, rs in groups.items():
        entry = dict(zip(GRID_KEYS, key))
        entry["instances"] = len(rs)
        for metric in ("m_abs", "m", "q"):
            v = np.array([r[metric] for r in rs], dtype=np.float64)
            entry[metric + "_mean"] = float(v.mean())
            entry[metric + "_q1"], entry[metric + "_median"], entry[metric + "_q3"] = (
                float(x) for x in np.percentile(v, [25, 50, 75])
            )
        out.append(entry)
    return out


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
