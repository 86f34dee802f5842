"""Window-quantile realization (docs/spec.md, "Window-quantile realizations")
and the Google 2019 window percentiles it is drawn from: the recipe against a
naive re-implementation, its invariants, the per-task CSV's percentile
columns, their bad input, and the 19 real tasks."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from colosim.cli import app
from colosim.errors import InputError
from colosim.io import open_series, open_store
from colosim.io.series import N_QUANTILES, QUANTILE_LEVELS, SeriesWriter
from colosim.sources.google2019 import PERCENTILES, ingest_google2019
from colosim.sources.realize import realize, realize_file

runner = CliRunner()


def make_series(path: Path, knots_per_task, inst_per_task=None) -> Path:
    """A series file with quantiles: ``knots_per_task`` a list of (T, 20)
    arrays; inst (the sample) is the median knot unless given."""
    lengths = [len(k) for k in knots_per_task]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    task_id = np.array([[1, k] for k in range(len(lengths))], dtype=np.int64)
    with SeriesWriter(path, task_id=task_id, offsets=offsets, source={"format": "test"}, filters={},
                      quantiles=True) as w:
        for k, knots in enumerate(knots_per_task):
            knots = np.asarray(knots, dtype=np.float32)
            inst = knots[:, 5] if inst_per_task is None else np.asarray(inst_per_task[k], dtype=np.float32)
            avg = knots.mean(axis=1)
            w.write_records(int(offsets[k]), inst, avg, np.arange(len(knots), dtype=np.int64) * 300_000_000,
                            cpu_quantiles=knots)
    return path


def random_knots(rng, n_tasks, max_len=30):
    out = []
    for _ in range(n_tasks):
        t = int(rng.integers(1, max_len))
        steps = rng.exponential(0.01, (t, N_QUANTILES)) * (rng.random((t, N_QUANTILES)) < 0.8)
        out.append(np.minimum(np.cumsum(steps, axis=1), 1.0).astype(np.float32))
    return out


def naive_window_quantiles(series_path, n_tasks, n_realizations, seed):
    """The recipe written out draw by draw, with NumPy's interp."""
    series = open_series(series_path)
    rows = np.random.default_rng([seed, 0]).choice(series.n_tasks, n_tasks, replace=False)
    x = np.empty((n_tasks, n_realizations), dtype=np.float32)
    y = np.empty_like(x)
    for j, k in enumerate(rows):
        inst, avg = series.task(int(k))
        knots = series.quantiles(int(k))
        g = np.random.default_rng([seed, 1, j])
        ix = g.integers(0, len(inst), n_realizations)
        iy = g.integers(0, len(inst), n_realizations)
        u = g.random(n_realizations)
        for t in range(n_realizations):
            x[j, t] = np.float32(np.interp(u[t], QUANTILE_LEVELS, knots[ix[t]].astype(np.float64)))
        y[j] = avg[iy]
    return x, y


def test_levels_are_the_2019_distribution_and_tail():
    assert N_QUANTILES == 20
    assert np.allclose(QUANTILE_LEVELS[:10], np.arange(10) / 10)
    assert np.allclose(QUANTILE_LEVELS[10:19], np.arange(91, 100) / 100)
    assert QUANTILE_LEVELS[-1] == 1.0 and np.all(np.diff(QUANTILE_LEVELS) > 0)


@pytest.mark.parametrize("seed", [0, 7])
def test_recipe_against_naive_reference(tmp_path, seed):
    rng = np.random.default_rng(seed)
    path = make_series(tmp_path / "s.h5", random_knots(rng, 12))
    out = tmp_path / "st.h5"
    realize_file(path, out, n_tasks=9, n_realizations=300, seed=seed, sampling="window-quantiles")
    store = open_store(out)
    x, y = naive_window_quantiles(path, 9, 300, seed)
    assert store.attrs["sampling"] == "window-quantiles"
    np.testing.assert_array_equal(np.asarray(store.y), y)
    # np.interp and the engine's formula may differ in the last float64 bit
    np.testing.assert_array_max_ulp(np.asarray(store.x), x, maxulp=1)


def test_same_bytes_whatever_the_threads_and_blocks(tmp_path):
    path = make_series(tmp_path / "s.h5", random_knots(np.random.default_rng(3), 20))
    digests = set()
    for threads, block in ((1, None), (2, 3), (2, 1)):
        out = tmp_path / f"st{threads}-{block}.h5"
        with open_series(path) as s:
            realize(s, out, n_tasks=15, n_realizations=200, seed=5, sampling="window-quantiles",
                    threads=threads, block_rows=block)
        st_ = open_store(out)
        digests.add((np.asarray(st_.x).tobytes(), np.asarray(st_.y).tobytes()))
    assert len(digests) == 1


def test_constant_windows_give_the_independent_store(tmp_path):
    """A window whose every knot is its sample (what an absent distribution
    falls back to) draws that sample: the x of window-quantiles is then the x
    of independent realization, byte for byte, and y always is."""
    rng = np.random.default_rng(11)
    inst = [rng.random(int(rng.integers(1, 40))).astype(np.float32) for _ in range(10)]
    knots = [np.repeat(v[:, None], N_QUANTILES, axis=1) for v in inst]
    path = make_series(tmp_path / "s.h5", knots, inst)
    for sampling in ("independent", "window-quantiles"):
        realize_file(path, tmp_path / f"{sampling}.h5", n_tasks=10, n_realizations=500, seed=2, sampling=sampling)
    a, b = open_store(tmp_path / "independent.h5"), open_store(tmp_path / "window-quantiles.h5")
    np.testing.assert_array_equal(np.asarray(a.x), np.asarray(b.x))
    np.testing.assert_array_equal(np.asarray(a.y), np.asarray(b.y))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_tasks=st.integers(1, 6), r=st.integers(1, 60))
def test_draws_lie_between_the_picked_windows_ends(tmp_path_factory, seed, n_tasks, r):
    tmp = tmp_path_factory.mktemp("wq")
    knots = random_knots(np.random.default_rng(seed), n_tasks, max_len=8)
    path = make_series(tmp / "s.h5", knots)
    realize_file(path, tmp / "st.h5", n_tasks=n_tasks, n_realizations=r, seed=seed, sampling="window-quantiles")
    store = open_store(tmp / "st.h5")
    series = open_series(path)
    rows = np.random.default_rng([seed, 0]).choice(series.n_tasks, n_tasks, replace=False)
    for j, k in enumerate(rows):
        q = series.quantiles(int(k))
        ix = np.random.default_rng([seed, 1, j]).integers(0, len(q), r)
        x = np.asarray(store.x[j])
        assert np.all(x >= q[ix, 0]) and np.all(x <= q[ix, -1])


def test_a_source_without_percentiles_is_refused(tmp_path):
    path = tmp_path / "cpu.h5"
    offsets = np.array([0, 3])
    with SeriesWriter(path, task_id=[[1, 0]], offsets=offsets, source={}, filters={}) as w:
        w.write_records(0, [0.1, 0.2, 0.3], [0.1, 0.2, 0.3], [0, 1, 2])
    with pytest.raises(InputError, match="window-quantiles.*percentiles"):
        realize_file(path, tmp_path / "st.h5", n_tasks=1, n_realizations=5, seed=1, sampling="window-quantiles")
    assert not (tmp_path / "st.h5").exists()
    result = runner.invoke(app, ["realize", str(path), "-o", str(tmp_path / "st.h5"), "-n", "1", "-r", "5",
                                 "--seed", "1", "--sampling", "window-quantiles"])
    assert result.exit_code == 2 and "percentiles" in result.output
    assert not (tmp_path / "st.h5").exists()


def test_a_synthetic_config_with_window_quantiles_is_refused(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[source]\nkind = "synthetic"\ntasks = 100\nrealizations = 10\nseed = 1\n'
                   'sampling = "window-quantiles"\n[instances]\ncount = 1\ntasks = 10\nseed = 1\n'
                   '[grid]\nestimator = ["max"]\n')
    result = runner.invoke(app, ["sweep", str(cfg)])
    assert result.exit_code == 2
    assert "window-quantiles" in result.output and "synthetic" in result.output
    assert not (tmp_path / "results").exists()


# -- the per-task CSV's percentile columns ---------------------------------

HEADER = ["time", "collection_id", "instance_index", "avg_cpu_usage", "random_sample_cpu_usage",
          "max_cpu_usage", *PERCENTILES]


def csv_row(time, index, knots, top, inst=0.03, avg=0.03):
    return [str(time), "9", str(index), str(avg), str(inst), str(top), *(str(v) for v in knots)]


def write_csv(path: Path, rows) -> Path:
    path.write_text("".join(",".join(r) + "\n" for r in [HEADER, *rows]))
    return path


def good_knots(scale=0.01):
    return [scale * (k + 1) for k in range(19)]


def test_csv_percentiles_read_with_the_maximum_as_p100(tmp_path):
    rows = [csv_row(300_000_000 * t, 0, good_knots(), 0.5) for t in range(3)]
    rows.append(csv_row(900_000_000, 0, good_knots(), 0.1))  # maximum below p99 (0.19): raised to it
    rows.append(csv_row(1_200_000_000, 0, [-1] * 19, 0.0, inst=0.07))  # absent: the sample in every knot
    report = ingest_google2019([write_csv(tmp_path / "a.csv", rows)], tmp_path / "s.h5", min_records=1)
    s = open_series(tmp_path / "s.h5")
    assert s.has_quantiles
    q = s.quantiles(0)
    np.testing.assert_array_equal(q[0], np.float32([*good_knots(), 0.5]))
    np.testing.assert_array_equal(q[3], np.float32([*good_knots(), 0.19]))
    np.testing.assert_array_equal(q[4], np.full(N_QUANTILES, np.float32(0.07)))
    assert report.counts["distribution_absent"] == 1
    assert report.counts["max_below_p99"] == 1


def test_csv_without_percentiles_has_none(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("time,collection_id,instance_index,avg_cpu_usage,random_sample_cpu_usage\n"
                    "0,1,0,0.1,0.2\n300000000,1,0,0.1,0.2\n")
    ingest_google2019([path], tmp_path / "s.h5", min_records=1)
    assert not open_series(tmp_path / "s.h5").has_quantiles


@pytest.mark.parametrize("knots, top, why", [
    ([*good_knots()[:5], 0.001, *good_knots()[6:]], 0.5, "out of order"),
    ([*good_knots()[:18], 1.5], 2.0, r"must lie in \[0, 1\]"),
    ([-1] * 18 + [0.1], 0.2, r"must lie in \[0, 1\]"),
    (["x", *good_knots()[1:]], 0.5, "is not a number"),
    (good_knots(), "nan", "max_cpu_usage holds"),
])
def test_bad_percentiles_exit_2_naming_file_and_line(tmp_path, knots, top, why):
    rows = [csv_row(0, 0, good_knots(), 0.5), csv_row(300_000_000, 0, knots, top)]
    path = write_csv(tmp_path / "bad.csv", rows)
    out = tmp_path / "s.h5"
    with pytest.raises(InputError, match=why) as err:
        ingest_google2019([path], out, min_records=1)
    assert str(err.value).startswith(f"{path}: line 3:")
    assert not out.exists()
    result = runner.invoke(app, ["ingest", "google2019", str(path), "-o", str(out), "--min-records", "1"])
    assert result.exit_code == 2 and "line 3" in result.output and not out.exists()


def test_wrong_number_of_values_exits_2(tmp_path):
    rows = [csv_row(0, 0, good_knots(), 0.5), csv_row(300_000_000, 0, good_knots(), 0.5)[:-1]]
    path = write_csv(tmp_path / "bad.csv", rows)
    with pytest.raises(InputError, match="line 3: expected"):
        ingest_google2019([path], tmp_path / "s.h5", min_records=1)


def test_real_tasks_percentiles_as_in_the_csv(shared_data, tmp_path):
    folder = shared_data / "google2019" / "instance_usage"
    ingest_google2019([folder], tmp_path / "s.h5")
    s = open_series(tmp_path / "s.h5")
    assert s.has_quantiles and s.cpu_quantiles.shape == (s.n_records, N_QUANTILES)
    absent = raised = 0
    for f in sorted(folder.rglob("*.csv.gz")):
        with gzip.open(f, "rt", newline="") as fh:
            rows = list(csv.DictReader(fh))
        key = (int(rows[0]["collection_id"]), int(rows[0]["instance_index"]))
        k = [tuple(t) for t in s.task_id.tolist()].index(key)
        inst, _avg, start = s.records(k)
        q = s.quantiles(k)
        by_time = {}
        for r in rows:
            knots = [float(r[p]) for p in PERCENTILES]
            if all(v == -1 for v in knots):
                absent += 1
                want = [float(r["random_sample_cpu_usage"])] * N_QUANTILES
            else:
                raised += float(r["max_cpu_usage"]) < knots[-1]
                want = [*knots, max(knots[-1], float(r["max_cpu_usage"]))]
            by_time.setdefault(int(r["time"]), []).append(np.float32(want).tolist())
        for t, row in zip(start.tolist(), q.tolist()):
            assert row in by_time[t]
    report_counts = s.attrs["filters"]
    assert report_counts["distribution_absent"] == absent == 15
    assert report_counts["max_below_p99"] == raised == 50


# ------------------------------------------------- characterize, both samplings


def test_in_memory_window_quantile_store_is_the_realized_one(tmp_path):
    from colosim.analysis.characterize import realize_in_memory

    path = make_series(tmp_path / "s.h5", random_knots(np.random.default_rng(21), 14))
    realize_file(path, tmp_path / "st.h5", n_tasks=10, n_realizations=120, seed=4, sampling="window-quantiles")
    x, _ = realize_in_memory(open_series(path), 10, 120, seed=4, sampling="window-quantiles")
    np.testing.assert_array_equal(x, np.asarray(open_store(tmp_path / "st.h5").x))


def test_window_draw_series_against_naive_reference(tmp_path):
    from colosim.analysis.characterize import TASK_BLOCK, window_draw_series

    knots = random_knots(np.random.default_rng(22), 9)
    path = make_series(tmp_path / "s.h5", knots)
    series = open_series(path)
    drawn = window_draw_series(series, seed=6)
    u = np.random.default_rng([6, 9, 6, 0]).random(series.n_records)  # one block: 9 tasks < TASK_BLOCK
    assert series.n_tasks < TASK_BLOCK
    q = np.concatenate(knots).astype(np.float64)
    want = np.array([np.interp(u[t], QUANTILE_LEVELS, q[t]) for t in range(len(u))], dtype=np.float32)
    np.testing.assert_array_max_ulp(np.asarray(drawn.inst), want, maxulp=1)
    np.testing.assert_array_equal(np.asarray(drawn.avg), np.asarray(series.avg))
    np.testing.assert_array_equal(np.asarray(drawn.offsets), np.asarray(series.offsets))
    assert np.all(drawn.inst >= q[:, 0].astype(np.float32)) and np.all(drawn.inst <= q[:, -1].astype(np.float32))


def test_constant_windows_characterize_as_the_sample(tmp_path):
    """Windows whose every knot is the sample: the window-quantiles
    characterization is the sampled one, number for number."""
    from colosim.analysis.characterize import characterize
    from colosim.analysis.characterize_report import headline

    rng = np.random.default_rng(23)
    inst = [rng.gamma(2.0, 0.02, int(rng.integers(40, 120))).astype(np.float32) for _ in range(24)]
    path = make_series(tmp_path / "s.h5", [np.repeat(v[:, None], N_QUANTILES, axis=1) for v in inst], inst)
    opts = dict(repetitions=4, sizes=(10, 20), percentile_sizes=(10,), n_init=1, store_tasks=24, realizations=64)
    a = characterize(open_series(path), sampling="sample", **opts)
    b = characterize(open_series(path), sampling="window-quantiles", **opts)
    assert headline(a) == headline(b)
    np.testing.assert_array_equal(a.sums.a2, b.sums.a2)
    assert a.settings["sampling"] == "sample" and b.settings["sampling"] == "window-quantiles"


def test_cli_characterize_reports_both_samplings(tmp_path):
    from colosim.analysis.characterize_report import OUTPUT_FILES, WINDOW_QUANTILES_DIR

    path = make_series(tmp_path / "s.h5", random_knots(np.random.default_rng(24), 20, max_len=60))
    out = tmp_path / "out"
    args = ["characterize", str(path), "--out", str(out), "--repetitions", "3", "--sizes", "10",
            "--n-init", "1", "--realizations", "40"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    for name in OUTPUT_FILES:
        assert (out / name).is_file() and (out / WINDOW_QUANTILES_DIR / name).is_file(), name
    report = (out / "report.md").read_text()
    assert "| quantity | paper (2011) | this trace, sampled second | this trace, window quantiles |" in report
    assert "| std ~ mean slope, instantaneous (Fig. 3) | 0.36 |" in report
    assert "window-quantiles recipe" in (out / WINDOW_QUANTILES_DIR / "report.md").read_text()
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "--force" in again.output
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0
    only = tmp_path / "only"
    res = runner.invoke(app, [*args[:3], str(only), *args[4:], "--sampling", "sample"])
    assert res.exit_code == 0, res.output
    assert not (only / WINDOW_QUANTILES_DIR).exists()
    assert "window quantiles |" not in (only / "report.md").read_text()


@pytest.mark.parametrize("case", ["no-quantiles", "with-store", "bogus", "synthetic"])
def test_cli_characterize_bad_sampling_exit_2(tmp_path, case):
    cpu = tmp_path / "cpu.h5"
    with SeriesWriter(cpu, task_id=[[1, 0]], offsets=np.array([0, 3]), source={}, filters={}) as w:
        w.write_records(0, [0.1, 0.2, 0.3], [0.1, 0.2, 0.3], [0, 1, 2])
    wq = make_series(tmp_path / "wq.h5", random_knots(np.random.default_rng(25), 3))
    realize_file(wq, tmp_path / "st.h5", n_tasks=3, n_realizations=10, seed=1)
    out = tmp_path / "out"
    args = {"no-quantiles": [str(cpu), "--sampling", "window-quantiles"],
            "with-store": [str(wq), "--store", str(tmp_path / "st.h5"), "--sampling", "both"],
            "bogus": [str(wq), "--sampling", "inst"],
            "synthetic": ["--synthetic", "20", "--sampling", "both"]}[case]
    res = runner.invoke(app, ["characterize", *args, "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert "sampling" in res.output
    assert not out.exists()


def test_real_tasks_characterized_both_ways(shared_data, tmp_path):
    """The 19 real 2019 tasks: the window distributions give heavier tails
    than the sampled seconds (the Gaussian estimate of the sum's 99.9th
    percentile falls further below it), the averages are the same data."""
    from colosim.analysis.characterize import characterize

    ingest_google2019([shared_data / "google2019" / "instance_usage"], tmp_path / "s.h5")
    opts = dict(repetitions=50, sizes=(10,), percentile_sizes=(10,), n_init=1, realizations=10_000)
    series = open_series(tmp_path / "s.h5")
    a = characterize(series, sampling="sample", **opts)
    b = characterize(series, sampling="window-quantiles", **opts)
    assert a.lines["avg"].slope == b.lines["avg"].slope
    k = list(a.percentiles.percentiles).index(99.9)
    assert np.nanmedian(b.percentiles.error[:, 0, k]) < np.nanmedian(a.percentiles.error[:, 0, k]) < 0


def test_characterize_with_a_window_quantiles_store_says_so(tmp_path):
    """A store realized with window-quantiles, characterized beside the
    series' sampled seconds: the report names the store's sampling and says
    which analyses come from it."""
    path = make_series(tmp_path / "s.h5", random_knots(np.random.default_rng(26), 20, max_len=60))
    for sampling in ("window-quantiles", "independent"):
        realize_file(path, tmp_path / f"{sampling}.h5", n_tasks=20, n_realizations=40, seed=1, sampling=sampling)
        out = tmp_path / sampling
        res = runner.invoke(app, ["characterize", str(path), "--store", str(tmp_path / f"{sampling}.h5"), "--out",
                                  str(out), "--repetitions", "3", "--sizes", "10", "--n-init", "1"])
        assert res.exit_code == 0, res.output
        report = (out / "report.md").read_text()
        assert f"realized with sampling `{sampling}`" in report
        assert ("Table 1 and Figs. 5-6 come from the store" in report) == (sampling == "window-quantiles")
