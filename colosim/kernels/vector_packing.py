"""Packing with vector bin states and per-bin capacities (beyond SPEC §4).

The kernels of :mod:`colosim.kernels.packing` keep two running sums per bin
(``sum a``, ``sum b``). The estimators of ``docs/beyond.md`` need more: the
bin's summed usage on every observation column (``emp``, ``nsigma``) or the
summed log moment generating function on a grid of ``s`` values
(``effsize``). Here every task is a row ``v_i`` of a matrix ``V`` (n, D), a
bin's state is ``S(B) = sum_{i in B} v_i`` (float64, summed in ascending
position, like every load of SPEC §3) and its load is a function of the
state alone:

==========  =================================  ==============================
kind        ``v_i``                            ``L(B) = f(S)``
==========  =================================  ==============================
GAUSS       ``(a_i, b_i)``                     ``S_0 + z sqrt(S_1)`` (SPEC §3)
EMP         usage on the k observation columns the (r+1)-th largest ``S_t``
NSIGMA      usage on the k observation columns ``mean(S) + N std(S)``
EFFSIZE     ``ln E[exp(s_g X_i)]``, g < G      ``min_g (S_g + gamma) / s_g``
==========  =================================  ==============================

With ``r = floor(RHO k)``, EMP's load makes "fits iff ``L <= cap``" the same
test as "the share of columns with ``S_t > cap`` is at most RHO".

Bins may have different capacities (a *fleet* of machine types): a new bin
takes the type whose count of opened bins divided by its share is the
lowest (ties: the type listed first). Every fit test uses the bin's own
capacity. GAUSS with a single type gives the same packings, bit for bit, as
:func:`colosim.kernels.packing.pack_items`.
"""

import math

import numpy as np
from numba import prange

from .._jit import jit, pjit
from .evaluate import bin_members
from .packing import drop_empty_bins, move_to_last

GAUSS = 0
EMP = 1
NSIGMA = 2
EFFSIZE = 3

FIRST_FIT = 0
BEST_FIT = 1


@jit
def state_load(S, kind, params):
    """``L`` of a bin whose summed state is ``S`` (see the module table).

    ``S`` may be reordered in place (EMP selects its order statistic)."""
    if kind == GAUSS:
        return S[0] + params[0] * math.sqrt(S[1])
    if kind == EMP:
        k = S.shape[0]
        rank = k - 1 - int(params[0])  # (r+1)-th largest = rank-th smallest (0-based)
        return np.partition(S, rank)[rank]
    if kind == NSIGMA:
        k = S.shape[0]
        s = 0.0
        for t in range(k):
            s += S[t]
        mu = s / k
        ss = 0.0
        for t in range(k):
            d = S[t] - mu
            ss += d * d
        return mu + params[0] * math.sqrt(ss / k)
    # EFFSIZE: params = [gamma, s_0, ..., s_{G-1}]
    gamma = params[0]
    best = np.inf
    for g in range(S.shape[0]):
        value = (S[g] + gamma) / params[1 + g]
        if value < best:
            best = value
    return best


@jit
def _try_add(state_j, v_i, kind, params, cap, tmp, need_load):
    """Whether task ``v_i`` fits the bin of state ``state_j`` (capacity
    ``cap``), and the load with it when ``need_load`` (else 0)."""
    D = tmp.shape[0]
    if kind == EMP:
        # exact count of columns above the capacity, stopping early once the
        # allowance r is exceeded; the order statistic only when needed
        r = int(params[0])
        over = 0
        for t in range(D):
            s = state_j[t] + np.float64(v_i[t])
            tmp[t] = s
            if s > cap:
                over += 1
                if over > r:
                    return False, np.inf
        if need_load:
            return True, state_load(tmp, kind, params)
        return True, 0.0
    for t in range(D):
        tmp[t] = state_j[t] + np.float64(v_i[t])
    load = state_load(tmp, kind, params)
    return load <= cap, load


@jit
def _new_bin_type(opened, shares):
    """The type of the next bin: lowest ``opened / share``, ties: first."""
    best = 0
    best_ratio = opened[0] / shares[0]
    for t in range(1, shares.shape[0]):
        ratio = opened[t] / shares[t]
        if ratio < best_ratio:
            best_ratio = ratio
            best = t
    return best


@jit
def online_pack_vector(V, kind, params, type_caps, shares, algorithm):
    """First Fit or Best Fit in row order (SPEC §4 with vector states and
    per-bin capacities ``type_caps[bin_type[j]]``).

    Returns ``assign``, the number of bins and ``bin_type`` (n,) (valid for
    the first n_bins entries).
    """
    n, D = V.shape
    assign = np.empty(n, dtype=np.int64)
    bin_type = np.empty(n, dtype=np.int64)
    opened = np.zeros(shares.shape[0], dtype=np.int64)
    rows = 8
    state = np.zeros((rows, D))
    tmp = np.empty(D)
    n_bins = 0
    need_load = algorithm == BEST_FIT
    for i in range(n):
        chosen = -1
        best_room = np.inf
        for j in range(n_bins):
            cap = type_caps[bin_type[j]]
            fits, load = _try_add(state[j], V[i], kind, params, cap, tmp, need_load)
            if fits:
                if algorithm == FIRST_FIT:
                    chosen = j
                    break
                room = cap - load
                if room < best_room:
                    best_room = room
                    chosen = j
        if chosen < 0:
            if n_bins == rows:  # grow the state table
                rows *= 2
                grown = np.zeros((rows, D))
                grown[:n_bins] = state[:n_bins]
                state = grown
            t_new = _new_bin_type(opened, shares)
            opened[t_new] += 1
            bin_type[n_bins] = t_new
            for t in range(D):
                state[n_bins, t] = 0.0
            chosen = n_bins
            n_bins += 1
        for t in range(D):
            state[chosen, t] += np.float64(V[i, t])
        assign[i] = chosen
    return assign, n_bins, bin_type


@jit
def _members_load(members, size, V, kind, params, skip, extra, tmp):
    """L of ``members[:size]`` (sorted positions) without task ``skip`` and
    with task ``extra`` (-1 for none), the state summed in ascending
    position from zero."""
    D = tmp.shape[0]
    for t in range(D):
        tmp[t] = 0.0
    inserted = extra < 0
    for s in range(size):
        i = members[s]
        if not inserted and extra < i:
            for t in range(D):
                tmp[t] += np.float64(V[extra, t])
            inserted = True
        if i != skip:
            for t in range(D):
                tmp[t] += np.float64(V[i, t])
    if not inserted:
        for t in range(D):
            tmp[t] += np.float64(V[extra, t])
    return state_load(tmp, kind, params)


@jit
def standalone_loads(V, kind, params):
    """``L({i})`` of every task."""
    n, D = V.shape
    out = np.empty(n)
    tmp = np.empty(D)
    for i in range(n):
        for t in range(D):
            tmp[t] = 0.0 + np.float64(V[i, t])
        out[i] = state_load(tmp, kind, params)
    return out


@jit
def rebalance_vector(assign, n_bins, bin_type, V, kind, params, type_caps):
    """SPEC §4 rebalancing with vector states and per-bin capacities.

    With a single capacity this is the rule of
    :func:`colosim.kernels.packing.rebalance`. With several, loads are
    compared relative to each bin's capacity: donors are visited in
    decreasing ``L(D) / c_D`` and a task is movable when ``L(last + i) <=
    h c_last`` and ``L(last + i) / c_last <= L(D - i) / c_D``.

    Returns the new ``assign``, bin count, moves and ``bin_type`` (renumbered).
    """
    n, D = V.shape
    assign = assign.copy()
    types = bin_type[:n_bins].copy()
    if n_bins < 2:
        return assign, n_bins, 0, types
    hetero = False
    for j in range(n_bins):
        if type_caps[types[j]] != type_caps[types[0]]:
            hetero = True
    last = n_bins - 1
    cap_last = type_caps[types[last]]
    tmp = np.empty(D)
    size = np.zeros(n_bins, dtype=np.int64)
    for i in range(n):
        size[assign[i]] += 1
    start = np.zeros(n_bins + 1, dtype=np.int64)
    for j in range(n_bins):
        start[j + 1] = start[j] + size[j]
    members = np.empty(n, dtype=np.int64)
    fill = start[:-1].copy()
    for i in range(n):
        j = assign[i]
        members[fill[j]] = i
        fill[j] += 1
    last_members = np.empty(n, dtype=np.int64)
    last_size = size[last]
    last_members[:last_size] = members[start[last] : start[last] + last_size]

    standalone = standalone_loads(V, kind, params)
    loads = np.empty(last)  # relative when hetero
    for j in range(last):
        L = _members_load(members[start[j] :], size[j], V, kind, params, -1, -1, tmp)
        loads[j] = L / type_caps[types[j]] if hetero else L

    moves = 0
    while True:
        order = np.argsort(-loads, kind="mergesort")
        moved = False
        for d in order:
            seg = members[start[d] :]
            cap_d = type_caps[types[d]]
            best = -1
            for s in range(size[d]):
                i = seg[s]
                with_i = _members_load(last_members, last_size, V, kind, params, -1, i, tmp)
                if with_i <= cap_last:
                    without = _members_load(seg, size[d], V, kind, params, i, -1, tmp)
                    ok = (with_i / cap_last <= without / cap_d) if hetero else (with_i <= without)
                    if ok and (best < 0 or standalone[i] > standalone[best]):
                        best = i
            if best < 0:
                continue
            size[d], last_size = move_to_last(seg, size[d], last_members, last_size, best)
            assign[best] = last
            if size[d] > 0:
                L = _members_load(seg, size[d], V, kind, params, -1, -1, tmp)
                loads[d] = L / cap_d if hetero else L
            else:
                loads[d] = -np.inf
            moves += 1
            moved = True
            break
        if not moved:
            break
    new_number, count = drop_empty_bins(assign, size, last, last_size)
    new_types = np.empty(count, dtype=np.int64)
    for j in range(n_bins):
        if new_number[j] >= 0:
            new_types[new_number[j]] = types[j]
    return assign, count, moves, new_types


@jit
def pack_vector(V, kind, params, type_caps, shares, algorithm, do_rebalance):
    """Online packing, then rebalancing when asked; returns ``(assign,
    n_bins, moves, bin_type)``."""
    assign, n_bins, bin_type = online_pack_vector(V, kind, params, type_caps, shares, algorithm)
    if do_rebalance:
        return rebalance_vector(assign, n_bins, bin_type, V, kind, params, type_caps)
    return assign, n_bins, 0, bin_type[:n_bins].copy()


@pjit
def violations_per_bin_capacity(x, first, stop, assign, n_bins, bin_caps):
    """``q_j`` and the sum of ``(S - c_j) / c_j`` over violations of every
    bin j on columns ``[first, stop)``, each bin against its own capacity.

    Sums are float64 in ascending position (SPEC §5); bins are independent,
    so the ``prange`` over them gives the same bits whatever the thread
    count.
    """
    members, start = bin_members(assign, n_bins)
    width = stop - first
    counts = np.zeros(n_bins, dtype=np.int64)
    severity = np.zeros(n_bins)
    for j in prange(n_bins):
        acc = np.zeros(width)
        for s in range(start[j], start[j + 1]):
            i = members[s]
            for t in range(width):
                acc[t] += np.float64(x[i, first + t])
        c = bin_caps[j]
        count = 0
        sev = 0.0
        for t in range(width):
            if acc[t] > c:
                count += 1
                sev += (acc[t] - c) / c
        counts[j] = count
        severity[j] = sev
    return counts, severity


@pjit
def log_mgf(observed, s_grid):
    """``ln mean_t exp(s_g x_t)`` of every row (float64) at every ``s_g``,
    computed as ``s_g max + ln mean exp(s_g (x_t - max))`` so that it never
    overflows. Rows are independent (``prange``)."""
    n, k = observed.shape
    G = s_grid.shape[0]
    out = np.empty((n, G))
    for i in prange(n):
        mx = -np.inf
        for t in range(k):
            v = np.float64(observed[i, t])
            if v > mx:
                mx = v
        for g in range(G):
            s = s_grid[g]
            acc = 0.0
            for t in range(k):
                acc += math.exp(s * (np.float64(observed[i, t]) - mx))
            out[i, g] = s * mx + math.log(acc / k)
    return out
