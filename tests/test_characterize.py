"""Section 3 analyses (SPEC §9) on planted data with known answers, and the
``colosim characterize`` command end to end."""

import csv

import numpy as np
import pytest
from typer.testing import CliRunner

from colosim.analysis import characterize as ch
from colosim.analysis.characterize_report import OUTPUT_FILES
from colosim.cli import app
from colosim.io import StoreWriter, open_series, open_store, write_series
from colosim.sources.realize import realize

runner = CliRunner()


def write_planted_series(path, inst_tasks, avg_tasks=None):
    """A series file whose task k has records ``inst_tasks[k]`` (and averages
    ``avg_tasks[k]``, default equal to the instantaneous records)."""
    avg_tasks = inst_tasks if avg_tasks is None else avg_tasks
    lengths = [len(t) for t in inst_tasks]
    n = len(inst_tasks)
    write_series(
        path,
        task_id=np.column_stack([np.arange(n), np.zeros(n, dtype=np.int64)]),
        offsets=np.concatenate(([0], np.cumsum(lengths))),
        inst=np.concatenate(inst_tasks) if n else np.empty(0),
        avg=np.concatenate(avg_tasks) if n else np.empty(0),
        start_time=np.concatenate([np.arange(k) * 300_000_000 for k in lengths]),
        source={"planted": True},
        filters={},
    )
    return open_series(path)


def write_planted_store(path, x):
    x = np.asarray(x, dtype=np.float32)
    with StoreWriter(path, n_tasks=x.shape[0], n_realizations=x.shape[1], seed=0,
                     sampling="independent", source={"planted": True}) as w:
        w.write_rows(0, x, x)
    return open_store(path)


# ---------------------------------------------------------------- Table 1


def test_ad_rejection_near_5pct_for_gaussian_tasks():
    g = np.random.default_rng(11)
    x = np.clip(g.normal(0.5, 0.05, size=(200, 400)), 0, None)
    sums = ch.sums_normality(x, sizes=(10, 50), repetitions=400, seed=1)
    assert sums.a2.shape == (400, 2)
    # SPEC's critical value (0.787) sits a little above the exact 5% point.
    assert np.all((sums.share > 0.01) & (sums.share < 0.10)), sums.share
    assert sums.at(50)[1] == pytest.approx(25.0, rel=0.01)  # mean total usage = 50 * 0.5


def test_ad_rejects_sums_of_skewed_tasks():
    g = np.random.default_rng(12)
    x = (g.random((200, 400)) < 0.05).astype(np.float32)  # mostly idle, rare bursts
    sums = ch.sums_normality(x, sizes=(10,), repetitions=50, seed=1)
    assert sums.share[0] > 0.95


def test_sums_are_nested_and_seeded():
    x = np.random.default_rng(13).random((80, 64))
    s = ch.nested_samples(80, 30, 0, 5, seed=2, stream=4)
    assert all(len(set(r)) == 30 for r in s)
    a = ch.sums_normality(x, sizes=(10, 30), repetitions=5, seed=2)
    b = ch.sums_normality(x, sizes=(10, 30), repetitions=5, seed=2)
    assert np.array_equal(a.a2, b.a2)
    # The size-10 sample of sample 3 is the first 10 rows of its size-30 sample.
    total = x[s[3][:10]].sum(axis=0)
    assert a.total_mean[3, 0] == pytest.approx(total.mean(), rel=1e-12)


# ---------------------------------------------------------------- KS


def test_ks_rejection_near_5pct_for_stationary_tasks(tmp_path):
    g = np.random.default_rng(21)
    series = write_planted_series(tmp_path / "s.h5", [g.random(120) for _ in range(800)])
    res = ch.time_invariance(series, deltas=(12, 24), seed=3)
    for v in res.values():
        assert v.tested == 800
        assert 0.005 < v.share < 0.09, (v.delta, v.share)


def test_ks_rejects_a_daily_pattern(tmp_path):
    g = np.random.default_rng(22)
    day = np.arange(576) % 288  # two days of 5-minute records
    tasks = [0.1 + 0.5 * day / 288 + g.uniform(0, 1e-4, 576) for _ in range(300)]
    tasks.append(g.random(20))  # too short for any Delta: not tested
    series = write_planted_series(tmp_path / "s.h5", tasks)
    res = ch.time_invariance(series, deltas=(12, 24, 36), seed=3)
    for v in res.values():
        assert v.tested == 300
        assert v.share > 0.85, (v.delta, v.share)


# ---------------------------------------------------------------- clusters


def test_histogram_bins_follow_spec(tmp_path):
    values = np.array([0.0, 0.125, 0.25, 0.5, 0.75, 0.999, 1.0, 1.5])
    series = write_planted_series(tmp_path / "s.h5", [values, np.array([0.3])])
    hist = ch.usage_histograms(series)
    expected = np.zeros(100)
    np.add.at(expected, [0, 12, 25, 50, 75, 99, 99, 99], 1 / 8)
    np.testing.assert_allclose(hist[0], expected)
    assert hist[1].sum() == pytest.approx(1.0) and hist[1][29] + hist[1][30] == pytest.approx(1.0)


def test_kmeans_recovers_planted_shapes(tmp_path):
    g = np.random.default_rng(31)
    tasks, truth = [], []
    for shape in range(16):
        low, high = (6 * shape + 0.5) / 100, (6 * shape + 3.5) / 100
        for _ in range(5 + 2 * shape):
            tasks.append(np.where(g.random(200) < 0.7, low, high))
            truth.append(shape)
    truth = np.array(truth)
    series = write_planted_series(tmp_path / "s.h5", tasks)
    clusters = ch.cluster_histograms(ch.usage_histograms(series), n_init=4, seed=0)
    for shape in range(16):
        assert len(set(clusters.labels[truth == shape])) == 1
    assert len(set(clusters.labels)) == 16
    planted = np.sort(np.bincount(truth))[::-1] / truth.size
    np.testing.assert_allclose(clusters.shares, planted)
    assert clusters.centroids.shape == (16, 100)
    np.testing.assert_allclose(clusters.centroids.sum(axis=1), 1.0)


# ---------------------------------------------------------------- Figs. 2-3


def two_point_task(g, mean, std, length):
    """Records with exactly this mean and population std."""
    values = np.full(length, mean - std)
    values[g.permutation(length)[: length // 2]] = mean + std
    return values


def test_regression_recovers_planted_lines(tmp_path):
    g = np.random.default_rng(41)
    means = g.uniform(0.05, 0.5, 300)
    lengths = 2 * g.integers(12, 200, 300)
    inst = [two_point_task(g, m, 0.36 * m + 0.015, n) for m, n in zip(means, lengths)]
    avg = [two_point_task(g, m, 0.31 * m + 0.010, n) for m, n in zip(means, lengths)]
    series = write_planted_series(tmp_path / "s.h5", inst, avg)
    moments = ch.task_moments(series)
    for k in (0, 17, 299):  # naive reference on float32-stored values
        v = np.asarray(series.task(k)[0], dtype=np.float64)
        assert moments.mean_inst[k] == pytest.approx(v.mean(), rel=1e-12)
        assert moments.std_inst[k] == pytest.approx(v.std(), rel=1e-9)
    lines = ch.variability_lines(moments)
    assert lines["inst"].slope == pytest.approx(0.36, abs=1e-5)
    assert lines["inst"].intercept == pytest.approx(0.015, abs=1e-5)
    assert lines["avg"].slope == pytest.approx(0.31, abs=1e-5)
    assert lines["avg"].intercept == pytest.approx(0.010, abs=1e-5)


# ---------------------------------------------------------------- Fig. 1


def test_mean_convergence_known_answers(tmp_path):
    g = np.random.default_rng(51)
    tasks_inst, tasks_avg = [], []
    for length in (1, 3, 24, 60, 150):  # inst constant = avg: difference 0
        c = g.uniform(0.1, 0.5)
        tasks_inst.append(np.full(length, c))
        tasks_avg.append(np.full(length, c))
    for length in (5, 20):  # any k-subset of all records: exact full mean
        tasks_inst.append(g.random(length))
        tasks_avg.append(g.uniform(0.1, 0.5, length))
    tasks_inst.append(g.random(30))  # zero mean of averages: excluded
    tasks_avg.append(np.zeros(30))
    series = write_planted_series(tmp_path / "s.h5", tasks_inst, tasks_avg)
    rel = ch.mean_convergence(series, ks=(1, 5, 20, 50, 1000), seed=0)
    assert [rel[k].size for k in (1, 5, 20, 50, 1000)] == [7, 5, 4, 2, 0]
    np.testing.assert_allclose(rel[50], 0.0, atol=1e-12)
    np.testing.assert_allclose(rel[1][:5], 0.0, atol=1e-12)
    for k, idx, pos in ((5, 5, 3), (20, 6, 3)):
        inst, avg = (np.asarray(a, dtype=np.float64) for a in series.task(idx))
        assert rel[k][pos] == pytest.approx((inst.mean() - avg.mean()) / avg.mean(), rel=1e-9)


def test_box_stats_whiskers():
    s = ch.box_stats(np.r_[np.arange(1.0, 10.0), 100.0])
    assert s["median"] == 5.5 and s["whishi"] == 9.0 and s["whislo"] == 1.0 and s["n"] == 10


# ---------------------------------------------------------------- Fig. 6


def test_percentile_error_near_zero_for_gaussian_tasks():
    g = np.random.default_rng(61)
    sd = g.uniform(0.02, 0.1, 150)[:, None]
    x = 0.5 + sd * g.standard_normal((150, 4000))
    pred = ch.percentile_prediction(x, sizes=(10, 50), repetitions=40, seed=5)
    med = np.nanmedian(pred.error, axis=0)
    assert np.all(np.abs(med) < 0.01), med
    # One sample checked by hand: the empirical percentile of the explicit sum.
    rows = np.random.default_rng([5, 9, 5, 7]).choice(150, 50, replace=False)
    total = x[rows[:10]].sum(axis=0)
    np.testing.assert_allclose(pred.empirical[7, 0], np.percentile(total, ch.PERCENTILES), rtol=1e-12)
    mu, sigma = x[rows[:10]].mean(axis=1).sum(), np.sqrt(x[rows[:10]].var(axis=1).sum())
    np.testing.assert_allclose(pred.gaussian[7, 0, 2], mu + sigma * 2.3263478740408408, rtol=1e-9)


# ---------------------------------------------------------------- store


def test_in_memory_store_equals_realized_store(tmp_path):
    g = np.random.default_rng(71)
    series = write_planted_series(tmp_path / "s.h5", [g.random(int(n)) for n in g.integers(24, 90, 30)])
    realize(series, tmp_path / "store.h5", n_tasks=12, n_realizations=50, seed=9)
    x, _ = ch.realize_in_memory(series, 12, 50, seed=9)
    with open_store(tmp_path / "store.h5") as store:
        assert np.array_equal(x, np.asarray(store.x))


class PlantedSource:
    """A SPEC §8 SeriesSource that is not a file (like the synthetic population)."""

    def __init__(self, series):
        self.series = series
        self.task_id = series.task_id
        self.n_tasks = series.n_tasks

    def task(self, k):
        return self.series.task(k)


def test_any_series_source_is_characterized_like_its_file(tmp_path):
    g = np.random.default_rng(72)
    series = write_planted_series(tmp_path / "s.h5", [g.random(int(n)) for n in g.integers(24, 90, 20)])
    from_file = ch.characterize(series, repetitions=3, sizes=(10,), percentile_sizes=(10,), n_init=1,
                                store_tasks=20, realizations=32)
    from_source = ch.characterize(PlantedSource(series), repetitions=3, sizes=(10,), percentile_sizes=(10,),
                                  n_init=1, store_tasks=20, realizations=32)
    assert np.array_equal(from_file.moments.std_inst, from_source.moments.std_inst)
    assert np.array_equal(from_file.sums.a2, from_source.sums.a2)
    assert np.array_equal(from_file.convergence[5], from_source.convergence[5])


def test_parse_sizes():
    from colosim.cli import _sizes

    assert _sizes("10:50:20") == (10, 30, 50)
    assert _sizes("50, 10,10") == (10, 50)
    for bad in ("", "a,b", "10:20", "0,5", "1:9:0"):
        with pytest.raises(ValueError, match="--sizes"):
            _sizes(bad)


# ---------------------------------------------------------------- CLI


@pytest.fixture
def tiny(tmp_path):
    g = np.random.default_rng(81)
    tasks = [g.gamma(2.0, 0.02, int(n)) for n in g.integers(30, 120, 40)]
    series = tmp_path / "series.h5"
    write_planted_series(series, tasks)
    store = tmp_path / "store.h5"
    write_planted_store(store, g.gamma(2.0, 0.02, (40, 300))).close()
    return tmp_path, series, store


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_cli_end_to_end(tiny):
    tmp_path, series, store = tiny
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    res = runner.invoke(app, ["characterize", str(series), "--store", str(store), "--out", str(out),
                              "--repetitions", "12", "--sizes", "10,20", "--n-init", "2", "--seed", "3"])
    assert res.exit_code == 0, res.output
    for name in OUTPUT_FILES:
        assert (out / name).stat().st_size > 0, name
    assert (out / "keep.txt").read_text() == "mine"
    table = read_csv(out / "table1.csv")
    assert [r[0] for r in table[1:]] == ["10", "20"] and table[1][1] == "12"
    clusters = read_csv(out / "clusters.csv")
    assert len(clusters) == 17 and len(clusters[0]) == 104
    assert sum(float(r[3]) for r in clusters[1:]) == pytest.approx(1.0)
    assert len(read_csv(out / "ks_time_invariance.csv")) == 4
    report = (out / "report.md").read_text()
    assert "| std ~ mean slope, instantaneous (Fig. 3) | 0.36 |" in report
    assert "| A-D rejection at N = 500 (Table 1) | about 9% | not computed" in report
    assert "![Fig. 4](fig4_clusters.png)" in report and "nested" in report


def test_characterize_without_store_realizes_one(tiny):
    _, series_path, _ = tiny
    series = open_series(series_path)
    res = ch.characterize(series, repetitions=5, sizes=(10, 20, 500), percentile_sizes=(10,),
                          n_init=1, store_tasks=25, realizations=64)
    assert res.settings["n_store"] == 25 and res.settings["n_realizations"] == 64
    assert res.sums.sizes.tolist() == [10, 20]
    assert any("500" in n for n in res.notes)
    assert "in-memory store" in res.settings["store"]


def test_cli_synthetic_population(tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(app, ["characterize", "--synthetic", "40", "--population-seed", "5", "--out", str(out),
                              "--repetitions", "4", "--sizes", "10", "--n-init", "1", "--realizations", "50"])
    assert res.exit_code == 0, res.output
    report = (out / "report.md").read_text()
    assert "built-in synthetic population (40 tasks, seed 5" in report


@pytest.mark.parametrize("case", ["missing", "not-series", "bad-sizes", "out-is-file", "both", "neither"])
def test_cli_bad_input_exit_2(tiny, case):
    tmp_path, series, store = tiny
    out = tmp_path / "out"
    args = {
        "missing": [str(tmp_path / "nope.h5"), "--out", str(out)],
        "not-series": [str(store), "--out", str(out)],
        "bad-sizes": [str(series), "--out", str(out), "--sizes", "ten"],
        "out-is-file": [str(series), "--out", str(store)],
        "both": [str(series), "--synthetic", "30", "--out", str(out)],
        "neither": ["--out", str(out)],
    }[case]
    before = store.read_bytes()
    res = runner.invoke(app, ["characterize", *args])
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert store.read_bytes() == before
    assert not out.exists()
