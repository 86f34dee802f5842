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
vector kernel's, bin for bin: both run the vector kernel's online pass and
rebalancing (:mod:`colosim.kernels.vector_packing`), here with the memory
test switched on.

:func:`pack_two` is the one entry.
"""

import numpy as np

from .._jit import jit
from ._bins import (
    BEST_FIT,
    DECREASING,
    bin_members,
    decreasing_order,
    in_instance_order,
)
from .vector_packing import RULE_CPU, RULE_DOT, RULE_L2, _members_load, _online, _rebalance, _standalone_loads

__all__ = ["RULE_CPU", "RULE_L2", "RULE_DOT", "pack_two"]


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
    assign, n_bins, bin_type = _online(Vp, kind, params, type_caps, shares, algorithm & BEST_FIT, Wp, kind_m,
                                       params_m, type_mems, rule, standalone_mp, True)
    if rebalance:
        assign, n_bins, moves, bin_type = _rebalance(assign, n_bins, bin_type, Vp, kind, params, type_caps,
                                                     standalone_p, Wp, kind_m, params_m, type_mems, True)
    else:
        moves = 0
        bin_type = bin_type[:n_bins].copy()
    fills = _fills(assign, n_bins, bin_type, Vp, kind, params, Wp, kind_m, params_m, type_caps, type_mems)
    if algorithm & DECREASING:
        assign = in_instance_order(assign, order)
    return assign, n_bins, moves, bin_type, standalone, standalone_m, fills
