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


# ------------------------------------------------------- beyond the paper
# (docs/beyond.md) loads from a bin's summed state, fleets, sorted orders

def bin_state(tasks, V):
    """sum of rows V[i] over the bin's tasks, float64, ascending position."""
    S = np.zeros(V.shape[1])
    for i in sorted(tasks):
        S = S + np.asarray(V[i], dtype=np.float64)
    return S


def emp_allowance(rho, k):
    from fractions import Fraction

    return math.floor(Fraction(repr(float(rho))) * k)


def seq_sum(values):
    s = 0.0
    for v in values:
        s += v
    return s


def state_load(S, name, param, extra=None):
    """L of a summed state for emp / nsigma / effsize / gauss."""
    if name == "emp":
        r = emp_allowance(param, len(S))
        return np.sort(S)[::-1][r]  # the (r+1)-th largest
    if name == "nsigma":
        mu = seq_sum(S) / len(S)
        return mu + param * math.sqrt(seq_sum([(v - mu) * (v - mu) for v in S]) / len(S))
    if name == "effsize":
        gamma, s = extra
        return min((S[g] + gamma) / s[g] for g in range(len(S)))
    if name == "gauss":
        return S[0] + param * math.sqrt(S[1])
    raise ValueError(name)


def pack_fleet(load, fits, n, caps, shares, algorithm, rebalance):
    """SPEC §4 with any load function load(tasks), a fit test fits(tasks, cap)
    and machine types (caps[t] = packing capacity, shares[t]). Returns
    (assign, bin_types)."""
    bins, types, opened = [], [], [0] * len(caps)
    for i in range(n):
        ok = [j for j, B in enumerate(bins) if fits(B + [i], caps[types[j]])]
        if not ok:
            t = min(range(len(caps)), key=lambda t: (opened[t] / shares[t], t))
            opened[t] += 1
            bins.append([i])
            types.append(t)
            continue
        if algorithm == "first-fit":
            chosen = ok[0]
        else:
            chosen = min(ok, key=lambda j: (caps[types[j]] - load(bins[j] + [i]), j))
        bins[chosen].append(i)
    if rebalance and len(bins) >= 2:
        hetero = len({caps[t] for t in types}) > 1
        rel = (lambda L, j: L / caps[types[j]]) if hetero else (lambda L, j: L)
        last, cl = bins[-1], len(bins) - 1
        while True:
            donors = sorted(range(len(bins) - 1), key=lambda j: (-rel(load(bins[j]), j) if bins[j] else np.inf, j))
            for d in donors:
                movable = [
                    i for i in bins[d]
                    if fits(last + [i], caps[types[cl]])
                    and rel(load(last + [i]), cl) <= rel(load([t for t in bins[d] if t != i]), d)
                ]
                if movable:
                    i = min(movable, key=lambda t: (-load([t]), t))
                    bins[d].remove(i)
                    last.append(i)
                    break
            else:
                break
        types = [t for B, t in zip(bins, types) if B]
        bins = [B for B in bins if B]
    assign = np.empty(n, dtype=np.int64)
    for j, B in enumerate(bins):
        assign[B] = j
    return assign, np.array(types, dtype=np.int64)


def sorted_order(standalone):
    """Decreasing standalone load, ties by position."""
    return sorted(range(len(standalone)), key=lambda i: (-standalone[i], i))


def violations_per_bin(evaluated, assign, bin_caps):
    e = np.asarray(evaluated, dtype=np.float64)
    m = assign.max() + 1
    counts = np.zeros(m, dtype=np.int64)
    excess = []
    for j in range(m):
        s = np.zeros(e.shape[1])
        for i in np.flatnonzero(assign == j):  # ascending position
            s = s + e[i]
        c = bin_caps[j]
        counts[j] = np.count_nonzero(s > c)
        excess.extend(((s[s > c] - c) / c).tolist())
    return counts, excess


EFFSIZE_EXPONENTS = np.arange(-8, 13) / 2.0


def log_mgf(o, s):
    """ln mean_t exp(s x_t) per row, shifted by the row maximum."""
    out = np.empty((len(o), len(s)))
    for i, row in enumerate(np.asarray(o, dtype=np.float64)):
        mx = row.max()
        for g, sg in enumerate(s):
            out[i, g] = sg * mx + math.log(seq_sum([math.exp(sg * (v - mx)) for v in row]) / len(row))
    return out


def beyond_model(observed, spec, cap_ref):
    """(V, load(S), fits(S, cap)) of a spec on the observation columns."""
    o = np.asarray(observed, dtype=np.float64)
    name, _, param = spec.partition(":")
    if name in ("emp", "nsigma"):
        p = float(param)
        if name == "emp":
            r = emp_allowance(p, o.shape[1])
            return observed, lambda S: state_load(S, "emp", p), lambda S, c: np.count_nonzero(S > c) <= r
        return observed, lambda S: state_load(S, "nsigma", p), None
    if name == "effsize":
        rho = float(param)
        gamma = math.log(1 / rho)
        s = (gamma / cap_ref) * np.exp2(EFFSIZE_EXPONENTS)
        return log_mgf(o, s), lambda S: state_load(S, "effsize", None, (gamma, s)), None
    if name == "hoeffding":
        rho = float(param)
        a, b, z = o.mean(axis=1), (o.max(axis=1) - o.min(axis=1)) ** 2, math.sqrt(math.log(1 / rho) / 2)
    elif name.startswith("gpa-cal"):
        raise ValueError("use calibrate")
    else:
        a, b, z = items(observed, spec)
    return np.stack([a, b], axis=1), lambda S: state_load(S, "gauss", z), None


def pack_beyond(V, load_state, fits_state, caps, shares, algorithm, rebalance):
    """Pack rows of V (online or sorted order); assign and bin types in
    instance order."""
    n = len(V)
    if fits_state is None:
        fits_state = lambda S, c: load_state(S) <= c  # noqa: E731
    standalone = [load_state(bin_state([i], V)) for i in range(n)]
    order = sorted_order(standalone) if algorithm.endswith("-decreasing") else list(range(n))
    Vs = np.asarray(V)[order]
    online = algorithm.replace("-decreasing", "")
    a_s, types = pack_fleet(lambda B: load_state(bin_state(B, Vs)), lambda B, c: fits_state(bin_state(B, Vs), c),
                            n, caps, shares, online, rebalance)
    assign = np.empty(n, dtype=np.int64)
    assign[order] = a_s
    return assign, types, np.array(standalone)


def calibrate(observed, target, caps, shares, algorithm, rebalance, headroom,
              rho_min=1e-9, rho_max=0.5, steps=24):
    """gpa-cal: bisection on log(rho) for the largest rho whose GPA packing
    has violation frequency <= target on the observation columns."""
    o = np.asarray(observed, dtype=np.float64)
    mean, var = o.mean(axis=1), o.var(axis=1)

    def attempt(rho):
        z = float(ndtri(1 - rho))
        assign, types, _ = pack_beyond(np.stack([mean, var], 1), lambda S: state_load(S, "gauss", z), None,
                                       [headroom * c for c in caps], shares, algorithm, rebalance)
        counts, _ = violations_per_bin(observed, assign, [caps[t] for t in types])
        return counts.sum() / ((assign.max() + 1) * o.shape[1]) <= target, assign

    ok, assign = attempt(rho_max)
    if ok:
        return rho_max, assign
    ok, assign = attempt(rho_min)
    if not ok:
        return rho_min, assign
    lo, hi, best = math.log(rho_min), math.log(rho_max), (rho_min, assign)
    for _ in range(steps):
        mid = (lo + hi) / 2
        ok, a = attempt(math.exp(mid))
        if ok:
            lo, best = mid, (math.exp(mid), a)
        else:
            hi = mid
    return best


def run_beyond(x, y, spec, caps, shares, algorithm="best-fit", clairvoyance=1.0, data="inst",
               rebalance=True, headroom=1.0):
    """Metrics of one point with machine types caps/shares (one type for a
    plain capacity)."""
    R = x.shape[1]
    if clairvoyance == 1.0:
        k, first = R, 0
    else:
        k = max(1, math.floor(clairvoyance * R + 0.5))
        first = k
    source = x if data == "inst" else y
    observed = source[:, :k]
    rho = None
    if spec.startswith("gpa-cal:"):
        rho, assign = calibrate(observed, float(spec.split(":")[1]), caps, shares, algorithm, rebalance, headroom)
        o = np.asarray(observed, dtype=np.float64)
        z = float(ndtri(1 - rho))
        V = np.stack([o.mean(axis=1), o.var(axis=1)], 1)
        load_state = lambda S: state_load(S, "gauss", z)  # noqa: E731
        _, types, standalone = pack_beyond(V, load_state, None, [headroom * c for c in caps], shares, algorithm,
                                           rebalance)
    else:
        V, load_state, fits_state = beyond_model(observed, spec, headroom * min(caps))
        assign, types, standalone = pack_beyond(V, load_state, fits_state, [headroom * c for c in caps], shares,
                                                algorithm, rebalance)
    bin_caps = [caps[t] for t in types]
    counts, excess = violations_per_bin(x[:, first:], assign, bin_caps)
    m_abs = int(assign.max()) + 1
    cbar = math.fsum(s * c for s, c in zip(shares, caps)) / math.fsum(shares)
    m_norm = max(1, math.ceil(math.fsum(np.asarray(x, np.float64).mean(axis=1).tolist()) / cbar))
    return dict(
        assign=assign, counts=counts, m_abs=m_abs, m_norm=m_norm, m=m_abs / m_norm, types=types,
        q=counts.sum() / (m_abs * (R - first)), q_max=counts.max() / (R - first),
        severity=float(np.mean(excess)) if excess else 0.0, rho=rho,
        oversize=int(np.count_nonzero(standalone > headroom * np.array(bin_caps)[assign])),
    )
