"""Time-aligned realization (docs/estimators.md): the streamed writer gives the
bytes of the recipe written out naively, whatever the thread count; shared
trace times keep a common daily pattern (cross-task correlation) that
independent sampling destroys, and q rises with it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import colosim
from colosim.cli import app
from colosim.errors import InputError
from colosim.io import open_series, open_store, write_series
from colosim.io.series import WINDOW_US
from colosim.sources.realize import realize

from . import naive

DAY_US = 86_400 * 1_000_000


def daily_series(path, n_tasks, seed=0, amplitude=0.6, shuffle=False):
    """Tasks over parts of a 6-day span; usage = level × (1 + A sin(day
    phase)) × noise, so that tasks running at the same time are correlated.
    Some tasks have gaps, duplicated start times, or unsorted records."""
    rng = np.random.default_rng(seed)
    span = 6 * 288
    insts, avgs, times, offsets = [], [], [], [0]
    for k in range(n_tasks):
        first = int(rng.integers(0, span // 2))
        length = int(rng.integers(24, span - first))
        slots = np.arange(first, first + length)
        slots = slots[rng.random(length) > 0.1]  # gaps
        if k % 5 == 0:
            slots = np.sort(np.concatenate([slots, slots[:3]]))  # duplicated starts
        t = 600_000_000 + slots.astype(np.int64) * WINDOW_US + int(rng.integers(0, 1000))
        pattern = 1 + amplitude * np.sin(2 * np.pi * (t % DAY_US) / DAY_US)
        level = rng.gamma(2.0, 0.02)
        inst = level * pattern * rng.gamma(4.0, 0.25, len(t))
        avg = level * pattern * rng.gamma(16.0, 1 / 16, len(t))
        if shuffle and k % 7 == 3:
            perm = rng.permutation(len(t))
            t, inst, avg = t[perm], inst[perm], avg[perm]
        insts.append(inst)
        avgs.append(avg)
        times.append(t)
        offsets.append(offsets[-1] + len(t))
    write_series(path, task_id=np.stack([np.arange(n_tasks), np.zeros(n_tasks, int)], 1),
                 offsets=np.array(offsets), inst=np.concatenate(insts).clip(0, 1),
                 avg=np.concatenate(avgs).clip(0, 1), start_time=np.concatenate(times),
                 source={"test": "daily"}, filters={})
    return open_series(path)


@pytest.fixture(scope="module")
def daily(tmp_path_factory):
    return daily_series(tmp_path_factory.mktemp("series") / "daily.h5", 40, shuffle=True)


@pytest.mark.parametrize("threads, block_rows", [(1, None), (2, 3), (3, 7)])
def test_bytes_equal_the_naive_recipe(daily, tmp_path, threads, block_rows):
    out = tmp_path / "s.h5"
    realize(daily, out, n_tasks=25, n_realizations=150, seed=9, sampling="time-aligned",
            threads=threads, block_rows=block_rows)
    want_x, want_y = naive.aligned_store(daily, 25, 150, 9)
    with open_store(out) as st_:
        np.testing.assert_array_equal(np.asarray(st_.x), want_x)
        np.testing.assert_array_equal(np.asarray(st_.y), want_y)
        assert st_.attrs["sampling"] == "time-aligned"


@settings(max_examples=15)
@given(seed=st.integers(0, 2**32 - 1), R=st.integers(1, 40))
def test_recipe_holds_for_any_seed(daily, tmp_path_factory, seed, R):
    out = tmp_path_factory.mktemp("p") / "s.h5"
    realize(daily, out, n_tasks=6, n_realizations=R, seed=seed, sampling="time-aligned", threads=1)
    want_x, want_y = naive.aligned_store(daily, 6, R, seed)
    with open_store(out) as st_:
        np.testing.assert_array_equal(np.asarray(st_.x), want_x)
        np.testing.assert_array_equal(np.asarray(st_.y), want_y)


def test_correlation_survives_and_q_rises(tmp_path):
    series = daily_series(tmp_path / "d.h5", 120, seed=3, amplitude=0.8)
    stores = {}
    for sampling in ("independent", "time-aligned"):
        realize(series, tmp_path / f"{sampling}.h5", n_tasks=120, n_realizations=2000, seed=1,
                sampling=sampling, threads=1)
        with open_store(tmp_path / f"{sampling}.h5") as s:
            stores[sampling] = np.asarray(s.x, dtype=np.float64)
    corr = {k: np.corrcoef(v) for k, v in stores.items()}
    off = ~np.eye(120, dtype=bool)
    assert abs(corr["independent"][off].mean()) < 0.01
    assert corr["time-aligned"][off].mean() > 0.04
    # per-task distributions keep their means; the sums get wider, so GPA
    # (which assumes independence) violates more often
    np.testing.assert_allclose(stores["independent"].mean(1).sum(), stores["time-aligned"].mean(1).sum(), rtol=0.05)
    q = {k: colosim.run(v.astype(np.float32), None, "gpa:0.01", clairvoyance=0.5).q for k, v in stores.items()}
    assert q["time-aligned"] > 2 * q["independent"]


def test_sources_without_times_are_rejected(tmp_path):
    class NoTimes:
        n_tasks = 3
        task_id = np.zeros((3, 2), dtype=np.int64)

        def task(self, k):
            return np.ones(4, np.float32), np.ones(4, np.float32)

    with pytest.raises(InputError, match="start times"):
        realize(NoTimes(), tmp_path / "s.h5", n_tasks=2, n_realizations=5, seed=0, sampling="time-aligned")
    assert not (tmp_path / "s.h5").exists()


def test_cli_realize_time_aligned_and_bad_sampling(daily, tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["realize", str(daily.path), "-o", str(tmp_path / "a.h5"), "-n", "5", "-r", "20",
                              "--seed", "1", "--sampling", "time-aligned"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["realize", str(daily.path), "-o", str(tmp_path / "b.h5"), "-n", "5", "-r", "20",
                              "--seed", "1", "--sampling", "aligned"])
    assert res.exit_code == 2 and "aligned" in res.output and not (tmp_path / "b.h5").exists()


# ------------------------------------------------- synthetic daily pattern

def test_synthetic_daily_pattern_and_time_range():
    from colosim.sources.population import DAY_US, PopulationModel, SyntheticPopulation

    plain = SyntheticPopulation(30, seed=4)
    daily = SyntheticPopulation(30, seed=4, model=PopulationModel(daily_amplitude=0.5))
    lo, hi = daily.time_range()
    firsts, lasts = [], []
    for k in range(30):
        i0, a0, t0 = plain.records(k)
        i1, a1, t1 = daily.records(k)
        np.testing.assert_array_equal(t0, t1)
        factor = 1 + 0.5 * np.sin(2 * np.pi * (t0 % DAY_US) / DAY_US)
        np.testing.assert_array_equal(i1, (i0 * factor).clip(0, 1).astype(np.float32))
        np.testing.assert_array_equal(a1, (a0 * factor).clip(0, 1).astype(np.float32))
        firsts.append(t0[0])
        lasts.append(t0[-1])
    assert (lo, hi) == (min(firsts), max(lasts) + WINDOW_US)
    with pytest.raises(InputError, match="daily_amplitude"):
        PopulationModel(daily_amplitude=1.0)


def test_synthetic_time_aligned_store_matches_the_recipe(tmp_path):
    from colosim.io import write_series
    from colosim.sources.population import PopulationModel, SyntheticPopulation

    pop = SyntheticPopulation(12, seed=2, model=PopulationModel(daily_amplitude=0.3))
    realize(pop, tmp_path / "s.h5", n_tasks=8, n_realizations=60, seed=5, sampling="time-aligned", threads=2)
    write_series(tmp_path / "p.h5", **pop.to_series_arrays(), source=pop.source, filters={})
    want_x, want_y = naive.aligned_store(open_series(tmp_path / "p.h5"), 8, 60, 5)
    with open_store(tmp_path / "s.h5") as s:
        np.testing.assert_array_equal(np.asarray(s.x), want_x)
        np.testing.assert_array_equal(np.asarray(s.y), want_y)


@pytest.mark.parametrize("value", ["1.5", "-0.1", '"x"', "true"])
def test_config_rejects_bad_daily_amplitude(tmp_path, value):
    from colosim.config import load_config

    (tmp_path / "c.toml").write_text(f"""
[source]
kind = "synthetic"
tasks = 10
realizations = 10
seed = 1
daily_amplitude = {value}
[instances]
count = 1
tasks = 5
seed = 1
[grid]
""")
    with pytest.raises(InputError, match="daily_amplitude"):
        load_config(tmp_path / "c.toml")


def test_generate_cli_rejects_bad_daily_amplitude(tmp_path):
    res = CliRunner().invoke(app, ["generate", "-o", str(tmp_path / "s.h5"), "-n", "5", "-r", "4",
                                   "--daily-amplitude", "2"])
    assert res.exit_code == 2 and "--daily-amplitude" in res.output and not (tmp_path / "s.h5").exists()


def test_synthetic_daily_store_is_reused_only_with_the_same_amplitude(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = ('[source]\nkind = "synthetic"\ntasks = 40\nrealizations = 30\nseed = 1\nsampling = "time-aligned"\n'
           'store = "syn.h5"\n{daily}[instances]\ncount = 1\ntasks = 20\nseed = 0\n[grid]\nestimator = ["av:1"]\n')
    (tmp_path / "a.toml").write_text(cfg.format(daily="daily_amplitude = 0.3\n"))
    res = CliRunner().invoke(app, ["sweep", "a.toml", "--out", "a.csv", "-q"])
    assert res.exit_code == 0, res.output
    (tmp_path / "b.toml").write_text(cfg.format(daily=""))
    res = CliRunner().invoke(app, ["sweep", "b.toml", "--out", "b.csv", "-q"])
    assert res.exit_code == 2 and "daily_amplitude 0.3 (config: 0.0)" in res.output
