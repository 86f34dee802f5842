"""A short, obviously correct reference of SPEC §2–5 in plain NumPy/Python.

Slow on purpose: every load is summed from scratch over the bin's tasks in
ascending instance position, exactly as SPEC §3 words it.
"""

import math

import numpy as np
from scipy.special import ndtri


def items(observed, spec):
    """(a, b, z) of every task for an estimator spec."""
    o = np.asarray(observed, dtype=np.float64)
    name, _, param = spec.partition(":")
    mean, var = o.mean(axis=1), o.var(axis=1)
    zeros = np.zeros(len(o))
    if name == "av":
        return float(param) * mean, zeros, 0.0
    if name == "perc":
        return np.percentile(o, float(param), axis=1), zeros, 0.0
    if name == "max":
        return o.max(axis=1), zeros, 0.0
    if name == "cantelli":
        return mean + float(param) * np.sqrt(var), zeros, 0.0
    if name == "gpa":
        return mean, var, float(ndtri(1 - float(param)))
    raise ValueError(spec)


def load(tasks, a, b, z):
    """L(B): float64 sums in ascending instance position."""
    sa = sb = 0.0
    for i in sorted(tasks):
        sa += a[i]
        sb += b[i]
    return sa + z * math.sqrt(sb)


def pack(a, b, z, cap, algorithm, rebalance):
    bins = []  # lists of task positions
    for i in range(len(a)):
        fits = [j for j, B in enumerate(bins) if load(B + [i], a, b, z) <= cap]
        if not fits:
            bins.append([i])
            continue
        if algorithm == "first-fit":
            chosen = fits[0]
        else:
            chosen = min(fits, key=lambda j: (cap - load(bins[j] + [i], a, b, z), j))
        bins[chosen].append(i)
    if rebalance and len(bins) >= 2:
        last = bins[-1]
        while True:
            donors = sorted(range(len(bins) - 1), key=lambda j: (-load(bins[j], a, b, z), j))
            for d in donors:
                movable = [
                    i for i in bins[d]
                    if load(last + [i], a, b, z) <= cap
                    and load(last + [i], a, b, z) <= load([t for t in bins[d] if t != i], a, b, z)
                ]
                if movable:
                    i = min(movable, key=lambda t: (-load([t], a, b, z), t))
                    bins[d].remove(i)
                    last.append(i)
                    break
            else:
                break
        bins = [B for B in bins if B]
    assign = np.empty(len(a), dtype=np.int64)
    for j, B in enumerate(bins):
        assign[B] = j
    return assign


def violations(evaluated, assign, capacity):
    e = np.asarray(evaluated, dtype=np.float64)
    m = assign.max() + 1
    counts = np.zeros(m, dtype=np.int64)
    excess = []
    for j in range(m):
        s = e[assign == j].sum(axis=0)
        counts[j] = np.count_nonzero(s > capacity)
        excess.extend(((s[s > capacity] - capacity) / capacity).tolist())
    return counts, excess


def run(x, y, spec, capacity=1.0, algorithm="best-fit", clairvoyance=1.0, data="inst",
        rebalance=True, headroom=1.0):
    R = x.shape[1]
    if clairvoyance == 1.0:
        k, first = R, 0
    else:
        k = max(1, math.floor(clairvoyance * R + 0.5))
        first = k
    source = x if data == "inst" else y
    a, b, z = items(source[:, :k], spec)
    cap = headroom * capacity
    assign = pack(a, b, z, cap, algorithm, rebalance)
    counts, excess = violations(x[:, first:], assign, capacity)
    m_abs = int(assign.max()) + 1
    m_norm = max(1, math.ceil(math.fsum(np.asarray(x, np.float64).mean(axis=1).tolist()) / capacity))
    return dict(
        assign=assign, counts=counts, m_abs=m_abs, m_norm=m_norm, m=m_abs / m_norm,
        q=counts.sum() / (m_abs * (R - first)), q_max=counts.max() / (R - first),
        severity=float(np.mean(excess)) if excess else 0.0,
        oversize=int(np.count_nonzero(a + z * np.sqrt(b) > cap)),
    )
