"""The two-resource packing kernel: CPU and memory together
(docs/memory.md).

Every task has a CPU state ``v_i`` (a row of ``V``) and a memory state
``w_i`` (a row of ``W``), each of the forms of
:mod:`colosim.kernels.vector_packing` (``GAUSS``, ``EMP``, ``NSIGMA``,
``EFFSIZE``), with their own load functions ``L_c`` and ``L_m``. A bin of
machine type t has packing capacities ``c_t`` (CPU, headroom applied) and
``M_t`` (memory). Task i **fits** bin B iff ``L_c(B + i) <= c_t`` and
``L_m(B + i) <= M_t``.

First Fit takes the lowest-numbered bin that fits. Best Fit takes the bin
with the lowest score among those that fit (ties: the lowest number), by
one of three rules:

=====  =================================================================
rule   score of bin B for task i
=====  =================================================================
CPU    ``c_t - L_c(B + i)``: the CPU room left (SPEC §4's rule; memory
       only constrains)
L2     ``sqrt(rc^2 + rm^2)`` with ``rc = (c_t - L_c(B + i)) / c_t`` and
       ``rm = (M_t - L_m(B + i)) / M_t``: the norm of the normalized
       room left (Panigrahy et al. 2011, "norm-based greedy")
DOT    ``-(dc * ec + dm * em)`` with the normalized demands
       ``dc = (L_c(B + i) - L_c(B)) / c_t``, ``dm`` likewise, and the
       normalized rooms before placing, ``ec = (c_t - L_c(B)) / c_t``,
       ``em`` likewise: the largest dot product of demand and room
       (Panigrahy et al. 2011, "dot product")
=====  =================================================================

A new bin takes, as in the vector kernel, the type of lowest ``opened /
share`` (ties: the first), but among the types whose memory holds the task
alone (all types when none does). The decreasing orders
sort by the standalone CPU load. Rebalancing is SPEC §4's with the memory
test added: a task is movable when it fits the last bin on both resources
and ``L_c(last + i) <= L_c(D - i)`` (relative to the capacities when the
types' CPU capacities differ); donors in decreasing CPU load. With a memory
capacity no task's memory ever comes near, and rule CPU, the packing is the
vector kernel's, bin for bin.

:func:`pack_two` is the one entry.
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
from .vector_packing import _members_load, _new_bin_type, _standalone_loads, _state_load, _try_add

__all__ = ["RULE_CPU", "RULE_L2", "RULE_DOT", "pack_two"]

RULE_CPU = 0
RULE_L2 = 1
RULE_DOT = 2


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
def _online(V, kind, params, W, kind_m, params_m, type_caps, type_mems, shares, best_fit, rule, alone_m):
    """First Fit or Best Fit in row order on both resources: ``assign``, the
    number of bins and ``bin_type`` (valid for the first n_bins entries)."""
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
    need_m = best_fit and rule != RULE_CPU
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
            fits, lm = _try_add(state_m[j], W[i], kind_m, params_m, mem, tmp_m, need_m)
            if not fits:
                continue
            if not best_fit:
                chosen = j
                break
            if rule == RULE_CPU:
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
            t_new = _new_type(opened, shares, type_mems, alone_m[i])
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
        if rule == RULE_DOT:
            load_c[chosen] = _load_of(state[chosen], kind, params, tmp)
            load_m[chosen] = _load_of(state_m[chosen], kind_m, params_m, tmp_m)
        assign[i] = chosen
    return assign, n_bins, bin_type


@jit
def _rebalance(assign, n_bins, bin_type, V, kind, params, W, kind_m, params_m, type_caps, type_mems, standalone):
    """SPEC §4 rebalancing on both resources (see the module text).

    Returns the new ``assign``, bin count, moves and ``bin_type``
    (renumbered)."""
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
                if _members_load(last_members, last_size, W, kind_m, params_m, -1, i, tmp_m) > mem_last:
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
def _fills(assign, n_bins, bin_type, V, kind, params, W, kind_m, params_m, type_caps, type_mems):
    """Each bin's loads relative to its packing capacities, ``(n_bins, 2)``:
    ``L_c(B) / c_t`` and ``L_m(B) / M_t``, loads summed in ascending
    position."""
    members, start = bin_members(assign, n_bins)
    out = np.empty((n_bins, 2))
    tmp = np.empty(V.shape[1])
    tmp_m = np.empty(W.shape[1])
    for j in range(n_bins):
        size = start[j + 1] - start[j]
        seg = members[start[j] :]
        out[j, 0] = _members_load(seg, size, V, kind, params, -1, -1, tmp) / type_caps[bin_type[j]]
        out[j, 1] = _members_load(seg, size, W, kind_m, params_m, -1, -1, tmp_m) / type_mems[bin_type[j]]
    return out


@jit
def pack_two(V, kind, params, W, kind_m, params_m, type_caps, type_mems, shares, algorithm, rebalance, rule):
    """Pack tasks of CPU states ``V`` (n, D) and memory states ``W`` (n,
    Dm), with their load kinds and parameters, into bins of packing
    capacities ``type_caps`` (CPU) and ``type_mems`` (memory), one per
    machine type in the proportions ``shares``, by ``algorithm`` (a code of
    ``colosim.kernels``) and Best Fit ``rule``; then rebalance when asked.

    Returns ``(assign, n_bins, moves, bin_type, standalone, standalone_m,
    fills)``: the assignment in instance order (bins in opening order),
    each bin's machine type, every task's standalone CPU and memory loads,
    and each bin's fill of both resources (:func:`_fills`).
    """
    standalone = _standalone_loads(V, kind, params)
    standalone_m = _standalone_loads(W, kind_m, params_m)
    if algorithm & DECREASING:
        order = decreasing_order(standalone)
        Vp = V[order]
        Wp = W[order]
        standalone_p = standalone[order]
        standalone_mp = standalone_m[order]
    else:
        order = np.arange(V.shape[0])
        Vp = V
        Wp = W
        standalone_p = standalone
        standalone_mp = standalone_m
    assign, n_bins, bin_type = _online(Vp, kind, params, Wp, kind_m, params_m, type_caps, type_mems, shares,
                                       algorithm & BEST_FIT, rule, standalone_mp)
    if rebalance:
        assign, n_bins, moves, bin_type = _rebalance(assign, n_bins, bin_type, Vp, kind, params, Wp, kind_m,
                                                     params_m, type_caps, type_mems, standalone_p)
    else:
        moves = 0
        bin_type = bin_type[:n_bins].copy()
    fills = _fills(assign, n_bins, bin_type, Vp, kind, params, Wp, kind_m, params_m, type_caps, type_mems)
    if algorithm & DECREASING:
        assign = in_instance_order(assign, order)
    return assign, n_bins, moves, bin_type, standalone, standalone_m, fills
