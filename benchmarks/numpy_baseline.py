"""A straightforward, vectorized NumPy implementation of one grid point
(SPEC §2–5): the baseline colosim's speed is measured against.

Statistics with NumPy, bin loads kept as arrays, fit tests vectorized over
bins, per-bin sums by row gathers. It follows the same rules as colosim and
is checked against it in ``bench_grid.py`` (same m_abs and q).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri


def items(observed, spec):
    o = np.asarray(observed, dtype=np.float64)
    name, _, param = spec.partition(":")
    zeros = np.zeros(len(o))
    if name == "av":
        return float(param) * o.mean(axis=1), zeros, 0.0
    if name == "perc":
        return np.percentile(o, float(param), axis=1), zeros, 0.0
    if name == "max":
        return o.max(axis=1), zeros, 0.0
    if name == "cantelli":
        return o.mean(axis=1) + float(param) * o.std(axis=1), zeros, 0.0
    return o.mean(axis=1), o.var(axis=1), float(ndtri(1 - float(param)))  # gpa


def pack(a, b, z, cap, algorithm, rebalance):
    n = len(a)
    load_a = np.zeros(n)
    load_b = np.zeros(n)
    assign = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        loads = (load_a[:m] + a[i]) + z * np.sqrt(load_b[:m] + b[i])
        fits = loads <= cap
        if not fits.any():
            j = m
            m += 1
        elif algorithm == "first-fit":
            j = int(np.argmax(fits))
        else:
            j = int(np.argmin(np.where(fits, cap - loads, np.inf)))
        load_a[j] += a[i]
        load_b[j] += b[i]
        assign[i] = j
    if rebalance and m >= 2:
        assign, m = _rebalance(assign, m, a, b, z, cap)
    return assign, m


def _load(tasks, a, b, z):
    tasks = np.sort(tasks)
    sa = 0.0
    sb = 0.0
    for i in tasks:  # ascending position, as SPEC §3 fixes the order
        sa += a[i]
        sb += b[i]
    return sa + z * math.sqrt(sb)


def _rebalance(assign, m, a, b, z, cap):
    last = m - 1
    members = [list(np.flatnonzero(assign == j)) for j in range(m)]
    while True:
        loads = np.array([_load(members[j], a, b, z) if members[j] else -np.inf for j in range(last)])
        moved = False
        for d in np.argsort(-loads, kind="stable"):
            cand = [(i, _load(members[last] + [i], a, b, z)) for i in members[d]]
            movable = [i for i, with_i in cand
                       if with_i <= cap and with_i <= _load([t for t in members[d] if t != i], a, b, z)]
            if movable:
                standalone = a[movable] + z * np.sqrt(b[movable])
                i = movable[int(np.argmax(standalone))]
                members[d].remove(i)
                members[last].append(i)
                moved = True
                break
        if not moved:
            break
    keep = [j for j in range(m) if members[j]]
    out = np.empty(len(a), dtype=np.int64)
    for new, j in enumerate(keep):
        out[members[j]] = new
    return out, len(keep)


def grid_point(x, y, spec, capacity=1.0, algorithm="best-fit", clairvoyance=1.0, data="inst",
               rebalance=True, headroom=1.0):
    """m_abs, m_norm and q of one grid point on one instance."""
    R = x.shape[1]
    k = R if clairvoyance == 1.0 else max(1, math.floor(clairvoyance * R + 0.5))
    first = 0 if clairvoyance == 1.0 else k
    a, b, z = items((x if data == "inst" else y)[:, :k], spec)
    assign, m = pack(a, b, z, headroom * capacity, algorithm, rebalance)
    violations = 0
    for j in range(m):
        sums = x[assign == j, first:].astype(np.float64).sum(axis=0)
        violations += int(np.count_nonzero(sums > capacity))
    m_norm = max(1, math.ceil(math.fsum(x.astype(np.float64).mean(axis=1)) / capacity))
    return m, m_norm, violations / (m * (R - first))
