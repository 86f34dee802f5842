"""The scalar packing kernel: First Fit and Best Fit, in instance order or
by decreasing standalone load, and rebalancing (SPEC §4), for items
``(a_i, b_i)`` with bin load ``L(B) = sum a + z * sqrt(sum b)``.

Loads are float64 sums in ascending position of the bin's tasks (positions
in the order the tasks are packed). During the online pass every new task
has the largest position so far, so a bin's running sums are exactly those
ordered sums. Rebalancing moves tasks into the last bin out of order, so
there each load is recomputed from the bin's member list, kept sorted.

:func:`pack_many` is the one entry: every grid point of an instance whose
estimator has a scalar item form and whose capacity is a single number.
"""

import math

import numpy as np
from numba import prange

from .._jit import jit, pjit
from ._bins import (
    BEST_FIT,
    DECREASING,
    bin_members,
    choose,
    decreasing_order,
    drop_empty_bins,
    in_instance_order,
    move_to_last,
)

__all__ = ["pack_many"]


@jit
def _online(a, b, z, cap, best_fit):
    """First Fit (or Best Fit) in position order: ``assign`` (bins numbered
    in opening order) and the number of bins."""
    n = a.shape[0]
    assign = np.empty(n, dtype=np.int64)
    sum_a = np.empty(n)
    sum_b = np.empty(n)
    n_bins = 0
    # with z = 0, (sum_a + a) + 0 * sqrt(sum_b + b) is sum_a + a exactly (the
    # b are finite and >= 0, as every estimator's item form gives): no root
    linear = z == 0.0
    for i in range(n):
        chosen = -1
        best_room = np.inf
        for j in range(n_bins):
            if linear:
                load = sum_a[j] + a[i]
            else:
                load = (sum_a[j] + a[i]) + z * math.sqrt(sum_b[j] + b[i])
            chosen, best_room, done = choose(best_fit, j, load <= cap, cap - load, chosen, best_room)
            if done:
                break
        if chosen < 0:
            chosen = n_bins
            sum_a[chosen] = 0.0
            sum_b[chosen] = 0.0
            n_bins += 1
        sum_a[chosen] += a[i]
        sum_b[chosen] += b[i]
        assign[i] = chosen
    return assign, n_bins


@jit
def _load(members, size, a, b, z, skip, extra):
    """L of ``members[:size]`` (sorted positions) without task ``skip`` and
    with task ``extra`` (-1 for none), summed in ascending position."""
    sa = 0.0
    sb = 0.0
    inserted = extra < 0
    for s in range(size):
        i = members[s]
        if not inserted and extra < i:
            sa += a[extra]
            sb += b[extra]
            inserted = True
        if i != skip:
            sa += a[i]
            sb += b[i]
    if not inserted:
        sa += a[extra]
        sb += b[extra]
    return sa + z * math.sqrt(sb)


@jit
def _standalone(a, b, z):
    out = np.empty(a.shape[0])
    for i in range(a.shape[0]):
        out[i] = a[i] + z * math.sqrt(b[i])
    return out


@jit
def _rebalance(assign, n_bins, a, b, z, cap):
    """Move tasks into the last-opened bin while any is movable (SPEC §4).

    A task i of bin D is movable when ``L(last + i) <= cap`` and
    ``L(last + i) <= L(D - i)``. Donors are visited in decreasing ``L(D)``
    (ties: lowest number); the first donor with a movable task gives the one
    with the largest standalone load (ties: lowest position). Empty bins are
    deleted and the rest renumbered in opening order.

    Returns the new ``assign``, the number of bins and the number of moves.
    """
    n = assign.shape[0]
    assign = assign.copy()
    if n_bins < 2:
        return assign, n_bins, 0
    last = n_bins - 1
    # Member lists, sorted by position: bins other than last only shrink, so
    # they live in CSR segments of their initial size; last can grow to n.
    members, start = bin_members(assign, n_bins)
    size = start[1:] - start[:-1]
    last_members = np.empty(n, dtype=np.int64)
    last_size = size[last]
    last_members[:last_size] = members[start[last] : start[last] + last_size]

    standalone = _standalone(a, b, z)
    loads = np.empty(last)
    for j in range(last):
        loads[j] = _load(members[start[j] :], size[j], a, b, z, -1, -1)

    moves = 0
    eps = np.finfo(np.float64).eps
    # donors in decreasing load, ties by lowest number (stable sort of -L),
    # kept so as a donor's load changes
    order = np.argsort(-loads, kind="mergesort")
    while True:
        # last's sums, to reject a task that cannot fit without the exact,
        # ordered L(last + i): (sa + a_i) + z sqrt(sb + b_i) differs from it
        # by rounding only, at most (2k + 4) eps of its magnitude for k
        # summed terms; the margin doubles that
        sa = 0.0
        sb = 0.0
        for s in range(last_size):
            sa += a[last_members[s]]
            sb += b[last_members[s]]
        rel = (4.0 * (last_size + 1) + 8.0) * eps
        moved = False
        for d in order:
            seg = members[start[d] :]
            best = -1
            for s in range(size[d]):
                i = seg[s]
                root = math.sqrt(sb + b[i])
                if (sa + a[i]) + z * root - cap > rel * ((sa + a[i]) + abs(z) * root):
                    continue  # L(last + i) > cap for certain
                with_i = _load(last_members, last_size, a, b, z, -1, i)
                if with_i <= cap and with_i <= _load(seg, size[d], a, b, z, i, -1):
                    if best < 0 or standalone[i] > standalone[best]:
                        best = i
            if best < 0:
                continue
            size[d], last_size = move_to_last(seg, size[d], last_members, last_size, best)
            assign[best] = last
            loads[d] = _load(seg, size[d], a, b, z, -1, -1) if size[d] > 0 else -np.inf
            _reorder(order, loads, d)
            moves += 1
            moved = True
            break
        if not moved:
            break
    _, count = drop_empty_bins(assign, size, last, last_size)
    return assign, count, moves


@jit
def _reorder(order, loads, d):
    """Put donor ``d``, whose load changed, back in its place in ``order``
    (decreasing load, ties by lowest number): what a stable sort of
    ``-loads`` gives."""
    m = order.shape[0]
    at = 0
    while order[at] != d:
        at += 1
    for s in range(at, m - 1):  # out
        order[s] = order[s + 1]
    place = 0  # before the first donor that comes after d
    while place < m - 1:
        e = order[place]
        if loads[e] < loads[d] or (loads[e] == loads[d] and e > d):
            break
        place += 1
    for s in range(m - 1, place, -1):
        order[s] = order[s - 1]
    order[place] = d


@jit
def _packing_order(a, b, z, algorithm):
    """The order tasks are packed in: instance order, or decreasing
    standalone load for the decreasing algorithms."""
    if algorithm & DECREASING:
        return decreasing_order(_standalone(a, b, z))
    return np.arange(a.shape[0])


@pjit
def pack_many(a_all, b_all, z_all, item_of, caps, algorithms, rebalances, sources, online_of):
    """Pack every scalar grid point of one instance in one call.

    Point p packs the items of row ``item_of[p]`` of ``a_all``/``b_all``
    (with ``z_all[item_of[p]]``) at packing capacity ``caps[p]`` with
    ``algorithms[p]`` (an algorithm code of ``colosim.kernels``),
    rebalanced when ``rebalances[p]``. Its online packing is that of point
    ``sources[online_of[p]]``, computed once: points that differ only in
    rebalancing share it. Points are independent, so the ``prange`` loops
    give the same packings whatever the thread count.

    Returns ``assigns`` (P, n) in instance order, ``n_bins`` (P,) and
    ``moves`` (P,).
    """
    P = item_of.shape[0]
    n = a_all.shape[1]
    S = sources.shape[0]
    online = np.empty((S, n), dtype=np.int64)
    online_bins = np.empty(S, dtype=np.int64)
    orders = np.empty((S, n), dtype=np.int64)
    for k in prange(S):
        p = sources[k]
        e = item_of[p]
        order = _packing_order(a_all[e], b_all[e], z_all[e], algorithms[p])
        orders[k] = order
        online[k], online_bins[k] = _online(a_all[e][order], b_all[e][order], z_all[e], caps[p],
                                            algorithms[p] & BEST_FIT)
    assigns = np.empty((P, n), dtype=np.int64)
    n_bins = np.empty(P, dtype=np.int64)
    moves = np.zeros(P, dtype=np.int64)
    for p in prange(P):
        k = online_of[p]
        if rebalances[p]:
            e = item_of[p]
            order = orders[k]
            assign, n_bins[p], moves[p] = _rebalance(online[k], online_bins[k], a_all[e][order], b_all[e][order],
                                                     z_all[e], caps[p])
        else:
            assign = online[k]
            n_bins[p] = online_bins[k]
        if algorithms[p] & DECREASING:
            assigns[p] = in_instance_order(assign, orders[k])
        else:
            assigns[p] = assign
    return assigns, n_bins, moves
