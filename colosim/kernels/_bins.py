"""Bin helpers shared by both packing kernels and the evaluation: member
lists, the move into the last bin, dropping emptied bins, decreasing orders.

Algorithm codes (SPEC §4 and docs/estimators.md): bit 0 chooses Best Fit
over First Fit, bit 1 a decreasing order of standalone loads instead of the
instance order.
"""

import numpy as np

from .._jit import jit

FIRST_FIT = 0
BEST_FIT = 1
DECREASING = 2


@jit(inline="always")
def choose(best_fit, j, fits, room, chosen, best_room):
    """The online rule (SPEC §4) after trying bin j for a task (whether it
    fits, and the room it would leave): First Fit takes the first bin that
    fits, Best Fit the one leaving the least room (ties: the lowest number).
    Returns ``(chosen, best_room, done)``; ``chosen`` is -1 while no bin fits."""
    if not fits:
        return chosen, best_room, False
    if not best_fit:
        return j, best_room, True
    if room < best_room:
        return j, room, False
    return chosen, best_room, False


@jit
def bin_members(assign, n_bins):
    """CSR member lists of a packing's bins, each in ascending position:
    bin j holds ``members[start[j]:start[j + 1]]``."""
    n = assign.shape[0]
    start = np.zeros(n_bins + 1, dtype=np.int64)
    for i in range(n):
        start[assign[i] + 1] += 1
    for j in range(n_bins):
        start[j + 1] += start[j]
    fill = start[:-1].copy()
    members = np.empty(n, dtype=np.int64)
    for i in range(n):
        j = assign[i]
        members[fill[j]] = i
        fill[j] += 1
    return members, start


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
def decreasing_order(standalone):
    """Positions by decreasing standalone load, ties by position (a stable
    sort: the order is unique for any loads without NaN)."""
    return np.argsort(-standalone, kind="mergesort")


@jit
def in_instance_order(assign, order):
    """The assignment of a packing made in ``order``, indexed by instance
    position."""
    out = np.empty_like(assign)
    for s in range(order.shape[0]):
        out[order[s]] = assign[s]
    return out
