"""The vector packing kernel: bins with vector states and per-bin
capacities (SPEC §4 generalized; docs/estimators.md).

The scalar kernel (:mod:`colosim.kernels.packing`) keeps two running sums
per bin. Some estimators need more: the bin's summed usage on every
observation column (``emp``, ``nsigma``) or the summed log moment
generating function on a grid of ``s`` values (``effsize``); and a fleet of
machine types needs a capacity per bin. Here every task is a row ``v_i`` of
a matrix ``V`` (n, D), a bin's state is ``S(B) = sum_{i in B} v_i``
(float64, summed in ascending position, like every load of SPEC §3) and its
load is a function of the state alone:

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

A new bin takes the machine type whose count of opened bins divided by its
share is the lowest (ties: the type listed first). Every fit test uses the
bin's own capacity. GAUSS with a single type gives the same packings, bit
for bit, as the scalar kernel.

:func:`pack_vector` is the one entry.
"""

import math

import numpy as np

from .._jit import jit
from ._bins import (
    BEST_FIT,
    DECREASING,
    bin_members,
    decreasing_order,
    drop_empty_bins,
    in_instance_order,
    move_to_last,
)

__all__ = ["GAUSS", "EMP", "NSIGMA", "EFFSIZE", "RULE_CPU", "RULE_L2", "RULE_DOT", "pack_vector"]

GAUSS = 0
EMP = 1
NSIGMA = 2
EFFSIZE = 3

#: Best Fit's score with a second resource (:mod:`colosim.kernels.two_resource`)
RULE_CPU = 0
RULE_L2 = 1
RULE_DOT = 2


@jit
def _state_load(S, kind, params):
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
            return True, _state_load(tmp, kind, params)
        return True, 0.0
    for t in range(D):
        tmp[t] = state_j[t] + np.float64(v_i[t])
    load = _state_load(tmp, kind, params)
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
    return _state_load(tmp, kind, params)


@jit
def _standalone_loads(V, kind, params):
    """``L({i})`` of every task."""
    n, D = V.shape
    out = np.empty(n)
    tmp = np.empty(D)
    for i in range(n):
        for t in range(D):
            tmp[t] = 0.0 + np.float64(V[i, t])
        out[i] = _state_load(tmp, kind, params)
    return out


@jit
def _load_of(state, kind, params, tmp):
    """``L`` of a bin of this summed state (the state left as it is)."""
    for t in range(tmp.shape[0]):
        tmp[t] = state[t]
    return _state_load(tmp, kind, params)


@jit
def _new_type(opened, shares, type_mems, alone_m):
    """The type of a new bin for a task whose standalone memory load is
    ``alone_m``: the lowest ``opened / share`` among the types whose memory
    holds the task alone (ties: first); among all types when none does."""
    best = -1
    best_ratio = np.inf
    for t in range(shares.shape[0]):
        ratio = opened[t] / shares[t]
        if alone_m <= type_mems[t] and ratio < best_ratio:
            best_ratio = ratio
            best = t
    if best < 0:
        return _new_bin_type(opened, shares)
    return best


@jit
def _online(V, kind, params, type_caps, shares, best_fit, W, kind_m, params_m, type_mems, rule, alone_m, two):
    """First Fit or Best Fit in row order with per-bin capacities
    ``type_caps[bin_type[j]]``: ``assign``, the number of bins and
    ``bin_type`` (valid for the first n_bins entries). With ``two``, memory
    too (:mod:`colosim.kernels.two_resource`): states ``W``, capacities
    ``type_mems``, Best Fit ``rule``, standalone memory loads ``alone_m``;
    without, those are not read."""
    n, D = V.shape
    Dm = W.shape[1]
    assign = np.empty(n, dtype=np.int64)
    bin_type = np.empty(n, dtype=np.int64)
    opened = np.zeros(shares.shape[0], dtype=np.int64)
    rows = 8
    state = np.zeros((rows, D))
    state_m = np.zeros((rows, Dm))
    load_c = np.zeros(rows)  # L_c(B), L_m(B): kept for the DOT rule
    load_m = np.zeros(rows)
    tmp = np.empty(D)
    tmp_m = np.empty(Dm)
    need_c = best_fit
    need_m = two and best_fit and rule != RULE_CPU
    n_bins = 0
    for i in range(n):
        chosen = -1
        best_score = np.inf
        for j in range(n_bins):
            t = bin_type[j]
            cap = type_caps[t]
            mem = type_mems[t]
            fits, lc = _try_add(state[j], V[i], kind, params, cap, tmp, need_c)
            if not fits:
                continue
            lm = 0.0
            if two:
                fits, lm = _try_add(state_m[j], W[i], kind_m, params_m, mem, tmp_m, need_m)
                if not fits:
                    continue
            if not best_fit:
                chosen = j
                break
            if rule == RULE_CPU or not two:
                score = cap - lc
            elif rule == RULE_L2:
                rc = (cap - lc) / cap
                rm = (mem - lm) / mem
                score = math.sqrt(rc * rc + rm * rm)
            else:
                score = -(((lc - load_c[j]) / cap) * ((cap - load_c[j]) / cap)
                          + ((lm - load_m[j]) / mem) * ((mem - load_m[j]) / mem))
            if score < best_score:
                chosen = j
                best_score = score
        if chosen < 0:
            if n_bins == rows:  # grow the state tables
                rows *= 2
                grown = np.zeros((rows, D))
                grown[:n_bins] = state[:n_bins]
                state = grown
                grown_m = np.zeros((rows, Dm))
                grown_m[:n_bins] = state_m[:n_bins]
                state_m = grown_m
                grown_c = np.zeros(rows)
                grown_c[:n_bins] = load_c[:n_bins]
                load_c = grown_c
                grown_l = np.zeros(rows)
                grown_l[:n_bins] = load_m[:n_bins]
                load_m = grown_l
            t_new = _new_type(opened, shares, type_mems, alone_m[i]) if two else _new_bin_type(opened, shares)
            opened[t_new] += 1
            bin_type[n_bins] = t_new
            for t in range(D):
                state[n_bins, t] = 0.0
            for t in range(Dm):
                state_m[n_bins, t] = 0.0
            chosen = n_bins
            n_bins += 1
        for t in range(D):
            state[chosen, t] += np.float64(V[i, t])
        for t in range(Dm):
            state_m[chosen, t] += np.float64(W[i, t])
        if two and rule == RULE_DOT:
            load_c[chosen] = _load_of(state[chosen], kind, params, tmp)
            load_m[chosen] = _load_of(state_m[chosen], kind_m, params_m, tmp_m)
        assign[i] = chosen
    return assign, n_bins, bin_type


@jit
def _rebalance(assign, n_bins, bin_type, V, kind, params, type_caps, standalone, W, kind_m, params_m, type_mems,
               two):
    """SPEC §4 rebalancing with vector states and per-bin capacities.

    With a single capacity this is the scalar kernel's rule. With several,
    loads are compared relative to each bin's capacity: donors are visited
    in decreasing ``L(D) / c_D`` and a task is movable when ``L(last + i) <=
    h c_last`` and ``L(last + i) / c_last <= L(D - i) / c_D``. With ``two``,
    a movable task must also fit the last bin's memory.

    Returns the new ``assign``, bin count, moves and ``bin_type`` (renumbered).
    """
    n, D = V.shape
    Dm = W.shape[1]
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
    mem_last = type_mems[types[last]]
    tmp = np.empty(D)
    tmp_m = np.empty(Dm)
    members, start = bin_members(assign, n_bins)
    size = start[1:] - start[:-1]
    last_members = np.empty(n, dtype=np.int64)
    last_size = size[last]
    last_members[:last_size] = members[start[last] : start[last] + last_size]

    loads = np.empty(last)  # CPU, relative when hetero
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
                if with_i > cap_last:
                    continue
                if two and _members_load(last_members, last_size, W, kind_m, params_m, -1, i, tmp_m) > mem_last:
                    continue
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
def pack_vector(V, kind, params, type_caps, shares, algorithm, rebalance):
    """Pack the tasks of states ``V`` (n, D) with load ``kind`` and its
    ``params`` into bins of packing capacities ``type_caps`` (one per
    machine type, in the proportions ``shares``), by ``algorithm`` (an
    algorithm code of ``colosim.kernels``), then rebalance when asked.

    Returns ``(assign, n_bins, moves, bin_type, standalone)``: the
    assignment in instance order, bins numbered in opening order, each
    bin's machine type, and every task's standalone load ``L({i})``.
    """
    standalone = _standalone_loads(V, kind, params)
    if algorithm & DECREASING:
        order = decreasing_order(standalone)
        Vp = V[order]
        standalone_p = standalone[order]
    else:
        order = np.arange(V.shape[0])
        Vp = V
        standalone_p = standalone
    # no memory: its arguments are placeholders that are never read
    W = np.zeros((1, 1))
    none = np.zeros(1)
    assign, n_bins, bin_type = _online(Vp, kind, params, type_caps, shares, algorithm & BEST_FIT, W, kind, params,
                                       none, RULE_CPU, none, False)
    if rebalance:
        assign, n_bins, moves, bin_type = _rebalance(assign, n_bins, bin_type, Vp, kind, params, type_caps,
                                                     standalone_p, W, kind, params, none, False)
    else:
        moves = 0
        bin_type = bin_type[:n_bins].copy()
    if algorithm & DECREASING:
        assign = in_instance_order(assign, order)
    return assign, n_bins, moves, bin_type, standalone
