"""Online bin packing (First Fit, Best Fit) and rebalancing (SPEC §4).

Items are ``(a_i, b_i)`` with bin load ``L(B) = sum a + z * sqrt(sum b)``
(see ``colosim.estimators``). Loads are float64 sums in ascending instance
position of the bin's tasks; during the online pass every new task has the
largest position so far, so a bin's running sums are exactly those ordered
sums. Rebalancing moves tasks into the last bin out of order, so there each
load is recomputed from the bin's member list, kept sorted.
"""

import math

import numpy as np
from numba import prange

from .._jit import jit, pjit
from .evaluate import bin_members

FIRST_FIT = 0
BEST_FIT = 1


@jit
def online_pack(a, b, z, cap, algorithm):
    """First Fit or Best Fit in instance order.

    Returns ``assign`` (bin of each task, bins numbered in opening order) and
    the number of bins.
    """
    n = a.shape[0]
    assign = np.empty(n, dtype=np.int64)
    sum_a = np.empty(n)
    sum_b = np.empty(n)
    n_bins = 0
    for i in range(n):
        chosen = -1
        best_room = np.inf
        for j in range(n_bins):
            load = (sum_a[j] + a[i]) + z * math.sqrt(sum_b[j] + b[i])
            if load <= cap:
                if algorithm == FIRST_FIT:
                    chosen = j
                    break
                room = cap - load
                if room < best_room:
                    best_room = room
                    chosen = j
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
def move_to_last(seg, size, last_members, last_size, task):
    """Remove ``task`` from the sorted member list ``seg[:size]`` and insert
    it into the sorted ``last_members[:last_size]``; the new sizes."""
    w = 0
    for s in range(size):
        if seg[s] != task:
            seg[w] = seg[s]
            w += 1
    pos = last_size
    while pos > 0 and last_members[pos - 1] > task:
        last_members[pos] = last_members[pos - 1]
        pos -= 1
    last_members[pos] = task
    return w, last_size + 1


@jit
def drop_empty_bins(assign, size, last, last_size):
    """Renumber ``assign`` in place without the bins left empty, keeping the
    opening order; returns the old-to-new numbers and the bin count."""
    n_bins = size.shape[0]
    new_number = np.full(n_bins, -1, dtype=np.int64)
    count = 0
    for j in range(n_bins):
        if (j == last and last_size > 0) or (j != last and size[j] > 0):
            new_number[j] = count
            count += 1
    for i in range(assign.shape[0]):
        assign[i] = new_number[assign[i]]
    return new_number, count


@jit
def rebalance(assign, n_bins, a, b, z, cap):
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

    standalone = np.empty(n)
    for i in range(n):
        standalone[i] = a[i] + z * math.sqrt(b[i])
    loads = np.empty(last)
    for j in range(last):
        loads[j] = _load(members[start[j] :], size[j], a, b, z, -1, -1)

    moves = 0
    eps = np.finfo(np.float64).eps
    while True:
        # donors in decreasing load, ties by lowest number (stable sort of -L)
        order = np.argsort(-loads, kind="mergesort")
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
            moves += 1
            moved = True
            break
        if not moved:
            break
    _, count = drop_empty_bins(assign, size, last, last_size)
    return assign, count, moves


@jit
def pack_items(a, b, z, cap, algorithm, do_rebalance):
    """Online packing, then rebalancing when asked; returns
    ``(assign, n_bins, moves)``."""
    assign, n_bins = online_pack(a, b, z, cap, algorithm)
    if do_rebalance:
        return rebalance(assign, n_bins, a, b, z, cap)
    return assign, n_bins, 0


def shared_online(item_of, caps, algorithms):
    """Points that differ only in rebalancing share one online packing:
    ``sources`` (the first point of each distinct (items, capacity,
    algorithm)) and ``online_of`` (each point's index into ``sources``)."""
    keys = np.stack([np.asarray(item_of, dtype=np.int64),
                     np.asarray(caps, dtype=np.float64).view(np.int64),
                     np.asarray(algorithms, dtype=np.int64)], axis=1)
    _, sources, online_of = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return sources.astype(np.int64), online_of.ravel().astype(np.int64)


@pjit
def pack_many(a_all, b_all, z_all, item_of, caps, algorithms, rebalances, sources, online_of):
    """Pack every grid point of one instance in one call.

    Point p packs items ``item_of[p]`` (a row of ``a_all``/``b_all``, with
    ``z_all[item_of[p]]``) at capacity ``caps[p]`` with ``algorithms[p]``,
    rebalanced when ``rebalances[p]``; its online packing is that of point
    ``sources[online_of[p]]`` (see :func:`shared_online`), computed once.
    Points are independent, so the ``prange`` loops give the same packings
    whatever the thread count.

    Returns ``assigns`` (P, n), ``n_bins`` (P,) and ``moves`` (P,).
    """
    P = item_of.shape[0]
    n = a_all.shape[1]
    online = np.empty((sources.shape[0], n), dtype=np.int64)
    online_bins = np.empty(sources.shape[0], dtype=np.int64)
    for k in prange(sources.shape[0]):
        p = sources[k]
        e = item_of[p]
        online[k], online_bins[k] = online_pack(a_all[e], b_all[e], z_all[e], caps[p], algorithms[p])
    assigns = np.empty((P, n), dtype=np.int64)
    n_bins = np.empty(P, dtype=np.int64)
    moves = np.zeros(P, dtype=np.int64)
    for p in prange(P):
        k = online_of[p]
        if rebalances[p]:
            e = item_of[p]
            assign, n_bins[p], moves[p] = rebalance(online[k], online_bins[k], a_all[e], b_all[e], z_all[e],
                                                    caps[p])
            assigns[p] = assign
        else:
            assigns[p] = online[k]
            n_bins[p] = online_bins[k]
    return assigns, n_bins, moves
