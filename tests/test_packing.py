"""Invariants of every packing (SPEC §4), stated with Hypothesis over usage
matrices drawn value by value, for every estimator of the table, both
kernels and every algorithm."""

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

import colosim
from colosim.engine import Observations, pack_points
from colosim.model.grid import ALGORITHMS, GridPoint

from . import naive
from .conftest import usage_arrays
from .test_engine import SPECS

ALL_SPECS = [s for specs in SPECS.values() for s in specs]
CAPACITIES = st.sampled_from([0.05, 0.3, 1.0, 3.0, "1:0.5,0.5:0.5", "0.3:1,2:3"])


def packed(observed, spec, capacity, algorithm, rebalance, headroom=1.0):
    p = GridPoint.make(spec, algorithm, capacity, 1.0, "inst", rebalance, headroom)
    return p, pack_points([p], Observations(observed, None, [p]))[0]


@given(observed=usage_arrays(), spec=st.sampled_from(ALL_SPECS), capacity=CAPACITIES,
       algorithm=st.sampled_from(list(ALGORITHMS)), rebalance=st.booleans())
# a lone task above an empty bin's capacity: opened all the same (oversize)
@example(observed=np.array([[0.5]], dtype=np.float32), spec="max", capacity=0.3, algorithm="first-fit",
         rebalance=True)
# rebalancing with two bins, the last one nearly full
@example(observed=np.array([[0.6], [0.5], [0.45]], dtype=np.float32), spec="av:1", capacity=1.0,
         algorithm="best-fit", rebalance=True)
def test_every_task_in_one_bin_and_every_bin_feasible(observed, spec, capacity, algorithm, rebalance):
    p, pk = packed(observed, spec, capacity, algorithm, rebalance)
    n = observed.shape[0]
    assign = pk.assign
    # every task in exactly one bin, bins 0..m-1 all used
    assert assign.shape == (n,) and assign.min() == 0 and assign.max() == pk.n_bins - 1
    assert set(np.unique(assign).tolist()) == set(range(pk.n_bins))
    assert pk.bin_type.shape == (pk.n_bins,)
    # every bin feasible under the estimator's own test, but an oversize task alone
    caps = [p.headroom * c for c in p.machine_types()[0]]
    V, load, fits = naive.model(observed, spec if not spec.startswith("gpa-cal") else
                                f"gpa:{pk.calibrated_rho!r}", min(caps))
    fits = fits or (lambda S, c: load(S) <= c)
    for j in range(pk.n_bins):
        tasks = list(np.flatnonzero(assign == j))
        cap = caps[pk.bin_type[j]]
        assert fits(naive.bin_state(tasks, V), cap) or len(tasks) == 1


@given(observed=usage_arrays(), spec=st.sampled_from(ALL_SPECS), capacity=CAPACITIES,
       algorithm=st.sampled_from(["first-fit", "best-fit"]))
def test_without_rebalancing_a_bin_opens_only_when_no_open_bin_fits(observed, spec, capacity, algorithm):
    p, pk = packed(observed, spec, capacity, algorithm, False)
    caps = [p.headroom * c for c in p.machine_types()[0]]
    V, load, fits = naive.model(observed, spec if not spec.startswith("gpa-cal") else
                                f"gpa:{pk.calibrated_rho!r}", min(caps))
    fits = fits or (lambda S, c: load(S) <= c)
    firsts = [int(np.flatnonzero(pk.assign == j)[0]) for j in range(pk.n_bins)]
    # bins are numbered in opening order (instance order)
    assert firsts == sorted(firsts)
    for j in range(1, pk.n_bins):
        i = firsts[j]
        for d in range(j):
            earlier = [t for t in np.flatnonzero(pk.assign == d) if t < i]
            assert not fits(naive.bin_state(earlier + [i], V), caps[pk.bin_type[d]])


@given(observed=usage_arrays(), spec=st.sampled_from(ALL_SPECS), capacity=CAPACITIES)
def test_decreasing_orders_open_bins_by_decreasing_standalone_load(observed, spec, capacity):
    p, pk = packed(observed, spec, capacity, "first-fit-decreasing", False)
    order = naive.sorted_order(pk.standalone.tolist())
    position = {i: q for q, i in enumerate(order)}
    firsts = [min(position[i] for i in np.flatnonzero(pk.assign == j)) for j in range(pk.n_bins)]
    assert firsts == sorted(firsts)
    loads = [pk.standalone[order[q]] for q in firsts]
    assert loads == sorted(loads, reverse=True)


@given(observed=usage_arrays(max_columns=40, min_columns=2), capacity=st.sampled_from([0.3, 1.0, 2.0]),
       rebalance=st.booleans())
def test_max_with_full_clairvoyance_never_violates_but_through_oversize(observed, capacity, rebalance):
    res = colosim.run(observed, None, "max", capacity=capacity, rebalance=rebalance)
    for j in np.flatnonzero(res.counts):
        members = np.flatnonzero(res.assign == j)
        assert len(members) == 1 and observed[members[0]].max() > capacity
    assert res.oversize >= np.count_nonzero(res.counts)


@given(observed=usage_arrays(min_columns=2), spec=st.sampled_from(ALL_SPECS), capacity=CAPACITIES,
       cl=st.sampled_from([0.2, 0.5, 1.0]))
def test_metrics_ranges(observed, spec, capacity, cl):
    R = observed.shape[1]
    res = colosim.run(observed, observed, spec, capacity, clairvoyance=cl)
    assert 0.0 <= res.q <= res.q_max <= 1.0
    assert res.m == res.m_abs / res.m_norm and res.m_norm >= 1
    assert res.severity >= 0 and (res.severity > 0) == (res.q > 0)
    k, first = naive.split(cl, R)
    assert res.counts.sum() == round(res.q * res.m_abs * (R - first))


@given(observed=usage_arrays(), rho=st.sampled_from([0.0, 0.02, 0.1]), rebalance=st.booleans(),
       algorithm=st.sampled_from(list(ALGORITHMS)))
def test_emp_with_full_clairvoyance_meets_rho_on_every_bin(observed, rho, rebalance, algorithm):
    R = observed.shape[1]
    res = colosim.run(observed, None, f"emp:{rho}", algorithm=algorithm, rebalance=rebalance)
    for j in range(res.m_abs):
        members = np.flatnonzero(res.assign == j)
        lone_oversize = len(members) == 1 and np.count_nonzero(observed[members[0]] > 1.0) > rho * R
        assert res.counts[j] <= rho * R or lone_oversize


@given(observed=usage_arrays(), capacity=CAPACITIES, algorithm=st.sampled_from(list(ALGORITHMS)))
def test_fleet_bins_open_by_the_lowest_opened_per_share(observed, capacity, algorithm):
    p, pk = packed(observed, "gpa:0.01", capacity, algorithm, False)
    caps, shares = p.machine_types()
    opened = [0] * len(caps)
    for t in pk.bin_type:
        assert t == min(range(len(caps)), key=lambda u: (opened[u] / shares[u], u))
        opened[t] += 1


@given(loads=st.lists(st.sampled_from([-np.inf, 0.25, 0.5, 0.75, 1.0]), min_size=1, max_size=12), data=st.data())
def test_rebalancing_keeps_its_donor_order_as_a_stable_sort_would(loads, data):
    # ties (equal loads, emptied donors at -inf) by lowest number
    from colosim.kernels.packing import _reorder

    loads = np.array(loads)
    order = np.argsort(-loads, kind="mergesort")
    for _ in range(data.draw(st.integers(1, 6))):
        d = data.draw(st.integers(0, loads.size - 1))
        loads[d] = data.draw(st.sampled_from([-np.inf, 0.0, 0.25, 0.5, 0.6, 1.0]))
        _reorder(order, loads, d)
        assert order.tolist() == np.argsort(-loads, kind="mergesort").tolist()
