"""CPU and memory packed together (docs/memory.md): the engine against the
naive reference, the invariants with Hypothesis, the API's bad input."""

import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import colosim
from colosim.engine import instance_metrics
from colosim.model.grid import ALGORITHMS, FIT_RULES, GridPoint

from . import naive
from .conftest import random_usage, usage_arrays
from .test_engine import SPECS

#: memory estimators: every one of the table but the calibrated one
MEMORY_SPECS = ["max", "perc:90", "av:1", "gpa:0.01", "cantelli:1", "emp:0.05", "nsigma:1.5", "effsize:0.1",
                "hoeffding:0.05"]
CPU_SPECS = [s for name, specs in SPECS.items() if name != "gpa-cal" for s in specs]
#: (capacity, memory_capacity): one shape, a fleet with one memory, machine shapes
MACHINES = [(1.0, 0.6), (0.6, 1.0), ("1:0.5,0.5:0.5", 0.8), ("0.5x0.5:3,0.5x0.25:2,1x1:1", None),
            ("0.5x0.03:5,1x1:1", None)]  # most machines too small for most tasks' memory


def memory_of(rng, x):
    """Memory usage loosely tied to CPU: a task-level size and a small
    window-to-window variation."""
    n, R = x.shape
    level = rng.gamma(1.2, 0.06, size=(n, 1)) + 0.3 * x.mean(axis=1, keepdims=True)
    return (level * rng.uniform(0.85, 1.15, size=(n, R))).astype(np.float32)


def compare(got, want):
    np.testing.assert_array_equal(got.assign, want["assign"])
    np.testing.assert_array_equal(got.counts, want["counts"])
    np.testing.assert_array_equal(got.counts_memory, want["counts_memory"])
    np.testing.assert_array_equal(got.bin_type, want["types"])
    for key in ("m_abs", "m_norm", "m", "q", "q_max", "q_memory", "q_memory_max", "memory_bound", "oversize"):
        assert getattr(got, key) == want[key], key
    assert got.severity == pytest.approx(want["severity"], rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("rule", list(FIT_RULES))
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_run_matches_naive_reference(rule, algorithm):
    rng = np.random.default_rng([zlib.crc32(rule.encode()), zlib.crc32(algorithm.encode())])
    for t in range(10):
        n, R = int(rng.integers(10, 36)), int(rng.integers(40, 120))
        x = random_usage(rng, n, R)
        mem = memory_of(rng, x)
        spec = CPU_SPECS[int(rng.integers(len(CPU_SPECS)))]
        mspec = MEMORY_SPECS[t % len(MEMORY_SPECS)]
        capacity, memory_capacity = MACHINES[int(rng.integers(len(MACHINES)))]
        clairvoyance = float(rng.choice([0.3, 1.0]))
        rebalance = bool(rng.integers(0, 2))
        headroom = float(rng.choice([0.8, 1.0]))
        got = colosim.run(x, None, spec, capacity, algorithm, clairvoyance, "inst", rebalance, headroom,
                          memory=mem, memory_capacity=memory_capacity, memory_estimator=mspec, fit_rule=rule)
        want = naive.run_two(x, mem, spec, capacity, memory_capacity, mspec, algorithm, clairvoyance, rebalance,
                             headroom, rule)
        compare(got, want)


def test_memory_binds_on_these_inputs():
    # the comparisons above mean something only if memory changes packings
    rng = np.random.default_rng(5)
    changed = 0
    for _ in range(10):
        x = random_usage(rng, 30, 80)
        mem = memory_of(rng, x)
        alone = colosim.run(x, estimator="gpa:0.01")
        both = colosim.run(x, estimator="gpa:0.01", memory=mem, memory_capacity=0.6)
        changed += not np.array_equal(alone.assign, both.assign)
        assert both.m_abs >= alone.m_abs or both.memory_bound < 1
    assert changed > 0


def test_a_new_machine_is_one_whose_memory_holds_the_task():
    rng = np.random.default_rng(9)
    x = random_usage(rng, 40, 60)
    mem = memory_of(rng, x)
    res = colosim.run(x, estimator="gpa:0.01", capacity="0.5x0.03:5,1x1:1", memory=mem)
    assert res.oversize == 0 and res.q_memory == 0.0
    assert res.m_abs_by_type[1] > 0  # the large machines were opened for the tasks the small cannot hold


def test_rules_differ_on_these_inputs():
    rng = np.random.default_rng(8)
    differ = 0
    for _ in range(10):
        x = random_usage(rng, 40, 60)
        mem = memory_of(rng, x)
        runs = [colosim.run(x, estimator="av:1", memory=mem, memory_capacity=0.5, fit_rule=r, rebalance=False)
                for r in FIT_RULES]
        differ += len({r.assign.tobytes() for r in runs}) > 1
    assert differ > 0


def test_a_point_scores_the_same_alone_and_in_a_grid():
    rng = np.random.default_rng(11)
    x = random_usage(rng, 60, 300)
    mem = memory_of(rng, x)
    points = [GridPoint.make(s, a, c, cl, "inst", rb, 1.0, rule, mc, ms)
              for s in ("gpa:0.01", "av:1", "emp:0.05") for a in ("best-fit", "first-fit")
              for (c, mc) in MACHINES[:2] + MACHINES[3:] for cl in (0.5, 1.0) for rb in (True,)
              for rule in ("cpu", "l2") for ms in ("max", "perc:95")]
    points += [GridPoint.make("gpa:0.01"), GridPoint.make("max", capacity="1:0.5,0.5:0.5")]  # CPU alone beside them
    together = instance_metrics(x, None, points, memory=mem)
    columns = ("q_memory", "q_memory_max", "memory_bound")
    for p, met in list(zip(points, together))[::5]:
        alone = instance_metrics(x, None, [p], memory=mem)[0]
        assert alone.row(columns) == met.row(columns)
        np.testing.assert_array_equal(alone.assign, met.assign)


# ---------------------------------------------------------------- invariants

@given(x=usage_arrays(max_tasks=10, max_columns=16, top=0.6), seed=st.integers(0, 2**16),
       spec=st.sampled_from(CPU_SPECS), algorithm=st.sampled_from(list(ALGORITHMS)), rebalance=st.booleans(),
       rule=st.sampled_from(list(FIT_RULES)), machines=st.sampled_from(MACHINES))
def test_with_max_for_memory_at_full_clairvoyance_no_machine_exceeds_its_memory(x, seed, spec, algorithm,
                                                                                 rebalance, rule, machines):
    capacity, memory_capacity = machines
    top = 0.25 if memory_capacity is None else memory_capacity  # every task fits an empty machine's memory
    mem = (np.random.default_rng(seed).random(x.shape) * top).astype(np.float32)
    res = colosim.run(x, estimator=spec, capacity=capacity, algorithm=algorithm, rebalance=rebalance,
                      memory=mem, memory_capacity=memory_capacity, fit_rule=rule)
    assert res.q_memory == 0.0 and res.q_memory_max == 0.0
    assert res.counts_memory.sum() == 0


#: CPU estimators whose estimate of a bin is never below its summed mean
AT_LEAST_MEAN = ["av:1", "av:1.25", "max", "cantelli:1", "gpa:0.01", "gpa:0.5", "perc:100"]


@given(x=usage_arrays(max_tasks=10, max_columns=16, top=0.4), seed=st.integers(0, 2**16),
       spec=st.sampled_from(AT_LEAST_MEAN), algorithm=st.sampled_from(list(ALGORITHMS)), rebalance=st.booleans(),
       rule=st.sampled_from(list(FIT_RULES)), memory_capacity=st.sampled_from([0.3, 0.5, 1.0]))
def test_every_machine_count_is_at_least_each_resources_lower_bound(x, seed, spec, algorithm, rebalance, rule,
                                                                     memory_capacity):
    # no task is oversize (values below the capacities), so every bin holds
    # at most its capacity of summed means on both resources
    mem = (np.random.default_rng(seed).random(x.shape) * 0.3).astype(np.float32)
    res = colosim.run(x, estimator=spec, capacity=1.0, algorithm=algorithm, rebalance=rebalance, memory=mem,
                      memory_capacity=memory_capacity, fit_rule=rule)
    assert res.oversize == 0
    for usage, cap in ((x, 1.0), (mem, memory_capacity)):
        total = float(np.sum(usage.astype(np.float64).mean(axis=1)))
        assert res.m_abs * cap >= total * (1 - 1e-9)


@given(x=usage_arrays(max_tasks=10, max_columns=16), seed=st.integers(0, 2**16), spec=st.sampled_from(CPU_SPECS),
       algorithm=st.sampled_from(list(ALGORITHMS)), rebalance=st.booleans(),
       capacity=st.sampled_from([0.3, 1.0, "1:0.5,0.5:0.5"]), mspec=st.sampled_from(MEMORY_SPECS),
       clairvoyance=st.sampled_from([0.5, 1.0]))
def test_a_memory_capacity_that_never_binds_gives_the_cpu_only_packing(x, seed, spec, algorithm, rebalance,
                                                                       capacity, mspec, clairvoyance):
    if x.shape[1] < 2 and clairvoyance < 1:
        clairvoyance = 1.0
    mem = (np.random.default_rng(seed).random(x.shape)).astype(np.float32)
    alone = colosim.run(x, estimator=spec, capacity=capacity, algorithm=algorithm, rebalance=rebalance,
                        clairvoyance=clairvoyance)
    both = colosim.run(x, estimator=spec, capacity=capacity, algorithm=algorithm, rebalance=rebalance,
                       clairvoyance=clairvoyance, memory=mem, memory_capacity=1e6, memory_estimator=mspec)
    np.testing.assert_array_equal(alone.assign, both.assign)
    np.testing.assert_array_equal(alone.counts, both.counts)
    assert (alone.m_abs, alone.m_norm, alone.q, alone.q_max, alone.severity, alone.oversize) == \
        (both.m_abs, both.m_norm, both.q, both.q_max, both.severity, both.oversize)
    assert both.q_memory == 0.0 and both.q_memory_max == 0.0
    assert alone.q_memory is None and alone.memory_bound is None


def test_pack_takes_memory_too():
    rng = np.random.default_rng(2)
    x = random_usage(rng, 40, 50)
    mem = memory_of(rng, x)
    got = colosim.pack(x, "gpa:0.01", memory=mem, memory_capacity=0.5)
    want = naive.run_two(x, mem, "gpa:0.01", 1.0, 0.5)["assign"]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(colosim.pack(x, "gpa:0.01"), colosim.pack(x, "gpa:0.01", memory=mem,
                                                                             memory_capacity=1e9))


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("kwargs, message", [
    (dict(memory_capacity=0.0), "memory_capacity must be > 0"),
    (dict(memory_capacity=-1.0), "memory_capacity must be > 0"),
    (dict(memory_capacity=float("nan")), "memory_capacity must be finite"),
    (dict(memory_capacity=1.0, memory_estimator="perc:101"), "memory_estimator: estimator 'perc:101'"),
    (dict(memory_capacity=1.0, memory_estimator="gpa-cal:0.01"), "memory_estimator 'gpa-cal:0.01'"),
    (dict(memory_capacity=1.0, fit_rule="sum"), "fit_rule must be one of cpu, l2, dot"),
    (dict(memory_capacity=1.0, memory="nan"), "memory holds NaN"),
    (dict(memory_capacity=1.0, memory="negative"), "memory holds negative values"),
    (dict(memory_capacity=1.0, memory="short"), "memory has shape (4, 5) but x has shape (4, 6)"),
    (dict(memory_capacity=1.0), "memory_capacity (or machine shapes in capacity) needs memory"),
    (dict(capacity="1x1:1"), "needs memory"),
    (dict(memory="ok"), "memory is given but no memory capacity"),
    (dict(capacity="1x1:1,2:1", memory="ok"), "either every machine type is a shape"),
    (dict(capacity="1x0:1", memory="ok"), "memory capacity must be > 0"),
    (dict(capacity="1x1:1", memory_capacity=2.0, memory="ok"), "give memory either in the shapes"),
])
def test_bad_memory_input_is_a_value_error_naming_it(kwargs, message):
    x = np.full((4, 6), 0.1, dtype=np.float32)
    memory = {"nan": np.full((4, 6), np.nan), "negative": np.full((4, 6), -0.1), "short": np.zeros((4, 5)),
              "ok": np.full((4, 6), 0.1)}.get(kwargs.pop("memory", None))
    with pytest.raises(ValueError) as info:
        colosim.run(x, memory=memory, **kwargs)
    assert message in str(info.value)
