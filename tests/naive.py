"""A short, obviously correct reference of what colosim computes, in plain
NumPy/Python: the SPEC's words written out, slow on purpose.

- Estimators (SPEC §3, docs/estimators.md): :data:`MODELS`, one plain entry
  per estimator of ``colosim.ESTIMATORS``.
- Packing (SPEC §4, fleets and decreasing orders): :func:`pack_fleet`, every
  load summed from scratch over the bin's tasks in ascending position.
- Two resources (docs/memory.md): :func:`pack_two`, :func:`run` with
  ``memory``.
- Violations and metrics (SPEC §5): :func:`violations_per_bin`, :func:`run`.
- Realization (SPEC §8, time-aligned): :func:`store`, :func:`aligned_store`.
- Characterization kernels: :func:`nested_sums` (Table 1), :func:`phases`
  (the built-in population's windows).
"""

import math
from fractions import Fraction

import numpy as np
import scipy.stats
from scipy.special import ndtri

WINDOW_US = 300_000_000


def split(clairvoyance, R):
    """(k, first) of SPEC §2."""
    if clairvoyance == 1.0:
        return R, 0
    k = max(1, math.floor(clairvoyance * R + 0.5))
    return k, k


def seq_sum(values):
    s = 0.0
    for v in values:
        s += v
    return s


# ---------------------------------------------------------------- estimators

def load(tasks, a, b, z):
    """L(B) of a scalar item form: float64 sums in ascending position."""
    sa = sb = 0.0
    for i in sorted(tasks):
        sa += a[i]
        sb += b[i]
    return sa + z * math.sqrt(sb)


def bin_state(tasks, V):
    """sum of rows V[i] over the bin's tasks, float64, ascending position."""
    S = np.zeros(V.shape[1])
    for i in sorted(tasks):
        S = S + np.asarray(V[i], dtype=np.float64)
    return S


def emp_allowance(rho, k):
    return math.floor(Fraction(repr(float(rho))) * k)


EFFSIZE_EXPONENTS = np.arange(-8, 13) / 2.0


def log_mgf(o, s):
    """ln mean_t exp(s x_t) per row, shifted by the row maximum."""
    out = np.empty((len(o), len(s)))
    for i, row in enumerate(np.asarray(o, dtype=np.float64)):
        mx = row.max()
        for g, sg in enumerate(s):
            out[i, g] = sg * mx + math.log(seq_sum([math.exp(sg * (v - mx)) for v in row]) / len(row))
    return out


def _gaussian(a, b, z):
    """(V, load, fits) of a scalar item form (a, b, z)."""
    return np.stack([a, b], axis=1), lambda S: S[0] + z * math.sqrt(S[1]), None


def _additive(size):
    return _gaussian(size, np.zeros(len(size)), 0.0)


def _emp(o, rho, cap_ref):
    r = emp_allowance(rho, o.shape[1])
    return o, lambda S: np.sort(S)[::-1][r], lambda S, c: np.count_nonzero(S > c) <= r


def _nsigma(o, n, cap_ref):
    def load_(S):
        mu = seq_sum(S) / len(S)
        return mu + n * math.sqrt(seq_sum([(v - mu) * (v - mu) for v in S]) / len(S))
    return o, load_, None


def _effsize(o, rho, cap_ref):
    gamma = math.log(1 / rho)
    s = (gamma / cap_ref) * np.exp2(EFFSIZE_EXPONENTS)
    return log_mgf(o, s), lambda S: min((S[g] + gamma) / s[g] for g in range(len(S))), None


def _gpa(o, rho, cap_ref):
    return _gaussian(o.mean(1), o.var(1), float(ndtri(1 - rho)))


#: One plain reference per estimator of ``colosim.ESTIMATORS``: name ->
#: (model, the parameters the tests run it at). ``model(observed float64
#: (n, k), parameter, cap_ref)`` gives ``(V, load(S), fits(S, c))``: task
#: states, the load of a summed state, and the fit test (None: "load <=
#: c"). gpa-cal's model is GPA's, its rho found by :func:`calibrate`.
MODELS = {
    "gpa": (_gpa, (0.1, 0.01, 0.001, 0.5)),
    "av": (lambda o, f, c: _additive(f * o.mean(1)), (1, 1.25, 2)),
    "perc": (lambda o, p, c: _additive(np.percentile(o, p, axis=1)), (50, 90, 99, 100)),
    "cantelli": (lambda o, b, c: _additive(o.mean(1) + b * np.sqrt(o.var(1))), (1, 1.7)),
    "max": (lambda o, _, c: _additive(o.max(1)), ()),
    "emp": (_emp, (0, 0.05, 0.2)),
    "effsize": (_effsize, (0.1, 0.001)),
    "hoeffding": (lambda o, rho, c: _gaussian(o.mean(1), (o.max(1) - o.min(1)) ** 2,
                                              math.sqrt(math.log(1 / rho) / 2)), (0.05, 0.5)),
    "nsigma": (_nsigma, (0, 1.5, 3)),
    "gpa-cal": (_gpa, (0, 0.01, 0.05)),
}


def specs(name):
    """The specs the tests run estimator ``name`` at."""
    parameters = MODELS[name][1]
    return [f"{name}:{p}" for p in parameters] if parameters else [name]


def model(observed, spec, cap_ref):
    """(V, load, fits) of an estimator spec on the observation columns."""
    name, _, param = spec.partition(":")
    return MODELS[name][0](np.asarray(observed, dtype=np.float64), float(param) if param else None, cap_ref)


# ---------------------------------------------------------------- packing

def pack_fleet(load_, fits, n, caps, shares, algorithm, rebalance):
    """SPEC §4 with any load function load_(tasks), a fit test fits(tasks, cap)
    and machine types (caps[t] = packing capacity, shares[t]): two-resource
    packing whose memory always fits. Returns (assign, bin_types)."""
    return pack_two((load_, fits), (lambda B: 0.0, lambda B, c: True), n, caps, [math.inf] * len(caps), shares,
                    algorithm, rebalance)


def pack(a, b, z, cap, algorithm, rebalance):
    """SPEC §4 for a scalar item form at one capacity (instance order)."""
    V, load_state, _ = _gaussian(np.asarray(a), np.asarray(b), z)
    return pack_fleet(lambda B: load_state(bin_state(B, V)), lambda B, c: load_state(bin_state(B, V)) <= c,
                      len(a), [cap], [1.0], algorithm, rebalance)[0]


def pack_two(cpu, mem, n, caps, mems, shares, algorithm, rebalance, rule="cpu"):
    """docs/memory.md written out: ``cpu`` and ``mem`` are (load(tasks),
    fits(tasks, cap)) pairs; a task fits where both fit; Best Fit scores by
    ``rule``; rebalancing adds the memory test. Returns (assign, types)."""
    load_c, fits_c = cpu
    load_m, fits_m = mem
    bins, types, opened = [], [], [0] * len(caps)

    def score(j, i):
        c, M = caps[types[j]], mems[types[j]]
        with_c, with_m = load_c(bins[j] + [i]), load_m(bins[j] + [i])
        if rule == "cpu":
            return c - with_c
        if rule == "l2":
            return math.sqrt(((c - with_c) / c) ** 2 + ((M - with_m) / M) ** 2)
        now_c, now_m = load_c(bins[j]), load_m(bins[j])
        return -(((with_c - now_c) / c) * ((c - now_c) / c) + ((with_m - now_m) / M) * ((M - now_m) / M))

    for i in range(n):
        ok = [j for j, B in enumerate(bins) if fits_c(B + [i], caps[types[j]]) and fits_m(B + [i], mems[types[j]])]
        if not ok:  # a new machine whose memory holds i alone, when there is such a type
            holding = [t for t in range(len(caps)) if fits_m([i], mems[t])] or list(range(len(caps)))
            t = min(holding, key=lambda t: (opened[t] / shares[t], t))
            opened[t] += 1
            bins.append([i])
            types.append(t)
            continue
        chosen = ok[0] if algorithm == "first-fit" else min(ok, key=lambda j: (score(j, i), j))
        bins[chosen].append(i)
    if rebalance and len(bins) >= 2:
        hetero = len({caps[t] for t in types}) > 1
        rel = (lambda L, j: L / caps[types[j]]) if hetero else (lambda L, j: L)
        last, cl = bins[-1], len(bins) - 1
        while True:
            donors = sorted(range(len(bins) - 1), key=lambda j: (-rel(load_c(bins[j]), j) if bins[j] else np.inf, j))
            for d in donors:
                movable = [
                    i for i in bins[d]
                    if fits_c(last + [i], caps[types[cl]]) and fits_m(last + [i], mems[types[cl]])
                    and rel(load_c(last + [i]), cl) <= rel(load_c([t for t in bins[d] if t != i]), d)
                ]
                if movable:
                    i = min(movable, key=lambda t: (-load_c([t]), t))
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


def pack_model(V, load_state, fits_state, caps, shares, algorithm, rebalance):
    """Pack rows of V (online or decreasing order); assign, bin types and
    standalone loads in instance order."""
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


# ---------------------------------------------------------------- violations

def violations_per_bin(evaluated, assign, bin_caps):
    """q_j of every bin against its own capacity (float64 sums in ascending
    position, S > c strictly) and the list of (S - c) / c over violations."""
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


def violations_per_column(evaluated, assign, bin_caps):
    """V_t: the number of bins violating their capacity in each column."""
    e = np.asarray(evaluated, dtype=np.float64)
    per_column = np.zeros(e.shape[1], dtype=np.int64)
    for j in range(assign.max() + 1):
        s = np.zeros(e.shape[1])
        for i in np.flatnonzero(assign == j):
            s = s + e[i]
        per_column += s > bin_caps[j]
    return per_column


def violations(evaluated, assign, capacity):
    return violations_per_bin(evaluated, assign, [capacity] * (int(assign.max()) + 1))


def calibrate(observed, target, caps, shares, algorithm, rebalance, headroom,
              rho_min=1e-9, rho_max=0.5, steps=24):
    """gpa-cal: bisection on log(rho) for the largest rho whose GPA packing
    has violation frequency <= target on the observation columns."""

    def attempt(rho):
        assign, types, _ = pack_model(*model(observed, f"gpa:{rho!r}", None), [headroom * c for c in caps], shares,
                                      algorithm, rebalance)
        counts, _ = violations_per_bin(observed, assign, [caps[t] for t in types])
        return counts.sum() / ((assign.max() + 1) * observed.shape[1]) <= target

    if attempt(rho_max):
        return rho_max
    if not attempt(rho_min):
        return rho_min
    lo, hi, best = math.log(rho_min), math.log(rho_max), rho_min
    for _ in range(steps):
        mid = (lo + hi) / 2
        if attempt(math.exp(mid)):
            lo, best = mid, math.exp(mid)
        else:
            hi = mid
    return best


def machine_types(capacity):
    """(capacities, shares) of a number or a fleet spec "C:S,..."."""
    if isinstance(capacity, str):
        pairs = [p.split(":") for p in capacity.split(",")]
        return [float(c) for c, _ in pairs], [float(s) for _, s in pairs]
    return [float(capacity)], [1.0]


def run(x, y, spec, capacity=1.0, algorithm="best-fit", clairvoyance=1.0, data="inst", rebalance=True,
        headroom=1.0):
    """The metrics of one grid point (SPEC §2–5) for any estimator and a
    capacity that is a number or a fleet spec."""
    caps, shares = machine_types(capacity)
    R = x.shape[1]
    k, first = split(clairvoyance, R)
    observed = (x if data == "inst" else y)[:, :k]
    rho = None
    if spec.startswith("gpa-cal:"):
        rho = calibrate(observed, float(spec.split(":")[1]), caps, shares, algorithm, rebalance, headroom)
        spec = f"gpa:{rho!r}"
    V, load_state, fits_state = model(observed, spec, headroom * min(caps))
    assign, types, standalone = pack_model(V, load_state, fits_state, [headroom * c for c in caps], shares,
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


# ---------------------------------------------------------------- realization

def store(series, n_tasks, n_realizations, seed, sampling):
    """SPEC §8 written out line by line: (x, y, task_id)."""
    rows = np.random.default_rng([seed, 0]).choice(series.n_tasks, n_tasks, replace=False)
    x = np.empty((n_tasks, n_realizations), dtype=np.float32)
    y = np.empty_like(x)
    for j, k in enumerate(rows):
        inst, avg = series.task(int(k))
        g = np.random.default_rng([seed, 1, j])
        ix = g.integers(0, len(inst), n_realizations)
        iy = ix if sampling == "paired" else g.integers(0, len(inst), n_realizations)
        x[j] = inst[ix]
        y[j] = avg[iy]
    return x, y, series.task_id[rows]


def aligned_store(series, n_tasks, R, seed):
    """The time-aligned recipe (docs/estimators.md), one realization at a
    time: (x, y)."""
    rows = np.random.default_rng([seed, 0]).choice(series.n_tasks, n_tasks, replace=False)
    starts = [np.asarray(series.start_time[series.offsets[k]:series.offsets[k + 1]]) for k in range(series.n_tasks)]
    t0 = min(int(s.min()) for s in starts if len(s))
    t1 = max(int(s.max()) for s in starts if len(s)) + WINDOW_US
    tau = np.random.default_rng([seed, 2]).integers(t0, t1, R)
    x = np.empty((n_tasks, R), dtype=np.float32)
    y = np.empty_like(x)
    for j, k in enumerate(rows):
        inst, avg = series.task(int(k))
        s = starts[k]
        own = np.random.default_rng([seed, 1, j]).integers(0, len(inst), R)
        for t in range(R):
            covering = [r for r in range(len(s)) if s[r] <= tau[t] < s[r] + WINDOW_US]
            # the last covering record in start-time order (stable for ties)
            r = max(covering, key=lambda r: (s[r], r)) if covering else own[t]
            x[j, t], y[j, t] = inst[r], avg[r]
    return x, y


# ---------------------------------------------------------------- characterization

def anderson_darling(values) -> float:
    """SciPy's A^2 for normality with estimated mean and std."""
    return float(scipy.stats.anderson(np.asarray(values, dtype=np.float64), dist="norm",
                                      method="interpolate").statistic)


def nested_sums(x, samples, sizes):
    """A^2 and mean of the float64 sums (in row order) of nested samples."""
    a2 = np.empty((len(samples), len(sizes)))
    mean = np.empty_like(a2)
    for r, rows in enumerate(samples):
        for s, n in enumerate(sizes):
            total = np.zeros(x.shape[1])
            for row in rows[:n]:
                total += x[row]
            a2[r, s] = anderson_darling(total)
            mean[r, s] = total.mean()
    return a2, mean


def phases(u, level, n_phases, a, b, p, pi):
    """The built-in population's window kernel: (inst, avg) per window."""
    v = u.reshape(-1, n_phases)
    f = np.where(v < pi, a + b * np.power(v / pi, p), 0.0)
    x = np.minimum(level[:, None] * f, 1.0)
    return x[:, 0], x.sum(axis=1) / n_phases


# ---------------------------------------------------------------- two resources

def shapes(capacity, memory_capacity):
    """(caps, mems, shares) of a number or fleet spec with a memory capacity,
    or of machine shapes "CxM:S,..."."""
    if isinstance(capacity, str) and "x" in capacity:
        parts = [p.split(":") for p in capacity.split(",")]
        cms = [shape.split("x") for shape, _ in parts]
        return [float(c) for c, _ in cms], [float(m) for _, m in cms], [float(s) for _, s in parts]
    caps, shares = machine_types(capacity)
    return caps, [float(memory_capacity)] * len(caps), shares


def run_two(x, memory, spec, capacity=1.0, memory_capacity=None, memory_estimator="max", algorithm="best-fit",
            clairvoyance=1.0, rebalance=True, headroom=1.0, fit_rule="cpu"):
    """docs/memory.md for one grid point (data = inst, no calibration): the
    metrics with memory's."""
    caps, mems, shares = shapes(capacity, memory_capacity)
    R = x.shape[1]
    k, first = split(clairvoyance, R)
    V, load_c, fits_c = model(x[:, :k], spec, headroom * min(caps))
    W, load_m, fits_m = model(memory[:, :k], memory_estimator, min(mems))
    fits_c = fits_c or (lambda S, c: load_c(S) <= c)
    fits_m = fits_m or (lambda S, c: load_m(S) <= c)
    n = len(x)
    standalone = [load_c(bin_state([i], V)) for i in range(n)]
    standalone_m = [load_m(bin_state([i], W)) for i in range(n)]
    order = sorted_order(standalone) if algorithm.endswith("-decreasing") else list(range(n))
    Vs, Ws = np.asarray(V)[order], np.asarray(W)[order]
    a_s, types = pack_two((lambda B: load_c(bin_state(B, Vs)), lambda B, c: fits_c(bin_state(B, Vs), c)),
                          (lambda B: load_m(bin_state(B, Ws)), lambda B, c: fits_m(bin_state(B, Ws), c)),
                          n, [headroom * c for c in caps], mems, shares, algorithm.replace("-decreasing", ""),
                          rebalance, fit_rule)
    assign = np.empty(n, dtype=np.int64)
    assign[order] = a_s
    m_abs = int(assign.max()) + 1
    counts, excess = violations_per_bin(x[:, first:], assign, [caps[t] for t in types])
    counts_m, _ = violations_per_bin(memory[:, first:], assign, [mems[t] for t in types])
    fills = []
    for j in range(m_abs):
        B = sorted(np.flatnonzero(assign == j).tolist())
        fills.append((load_c(bin_state(B, V)) / (headroom * caps[types[j]]), load_m(bin_state(B, W)) / mems[types[j]]))
    cbar = math.fsum(s * c for s, c in zip(shares, caps)) / math.fsum(shares)
    mbar = math.fsum(s * m for s, m in zip(shares, mems)) / math.fsum(shares)
    m_norm = max(1, math.ceil(math.fsum(np.asarray(x, np.float64).mean(axis=1).tolist()) / cbar),
                 math.ceil(math.fsum(np.asarray(memory, np.float64).mean(axis=1).tolist()) / mbar))
    E = R - first
    over = [standalone[i] > headroom * caps[types[assign[i]]] or standalone_m[i] > mems[types[assign[i]]]
            for i in range(n)]
    return dict(
        assign=assign, counts=counts, counts_memory=counts_m, m_abs=m_abs, m_norm=m_norm, m=m_abs / m_norm,
        types=types, q=counts.sum() / (m_abs * E), q_max=counts.max() / E, q_memory=counts_m.sum() / (m_abs * E),
        q_memory_max=counts_m.max() / E, memory_bound=sum(fm > fc for fc, fm in fills) / m_abs,
        severity=float(np.mean(excess)) if excess else 0.0, oversize=int(sum(over)),
    )
