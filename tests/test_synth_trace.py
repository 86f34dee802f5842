"""synth-trace -> ingest -> realize -> sweep, end to end: ingest recovers
exactly what was planted."""

from __future__ import annotations

import csv
import gzip

import numpy as np
import pytest
from typer.testing import CliRunner

from colosim.cli import app
from colosim.io import open_series, open_store
from colosim.sources.population import SyntheticPopulation
from colosim.sources.trace_writer import write_synthetic_trace

runner = CliRunner()


def _strip(steps):
    return [{k: v for k, v in s.items() if k != "what"} for s in steps]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth") / "trace"
    planted = write_synthetic_trace(root, n_tasks=80, days=3, seed=7, plant_every=4)
    return root, planted


def test_files_have_the_official_shape(trace):
    root, planted = trace
    usage = sorted((root / "task_usage").iterdir())
    events = sorted((root / "task_events").iterdir())
    assert [p.name for p in usage] == [f"part-{s:05d}-of-00003.csv.gz" for s in range(3)]
    assert [p.name for p in events] == [p.name for p in usage]
    for path, width in ((usage[1], 20), (events[0], 13)):
        with gzip.open(path, "rt", newline="") as fh:
            rows = list(csv.reader(fh))
        assert rows and all(len(r) == width for r in rows)
        times = [int(r[0]) for r in rows]
        assert times == sorted(times)  # each shard in time order


def test_ingest_recovers_exactly_what_was_planted(trace, tmp_path):
    root, planted = trace
    out = tmp_path / "series.h5"
    result = runner.invoke(app, ["ingest", "google2011", str(root), "--out", str(out), "--threads", "2"])
    assert result.exit_code == 0, result.output
    series = open_series(out)
    assert series.has_memory
    report = series.attrs["filters"]
    assert _strip(report["steps"]) == planted["steps"]
    assert report["avg_above_1_replaced"] == planted["avg_above_1_replaced"] > 0
    assert report["event_failing_tasks"] == planted["failing_tasks"] > 0
    for name in ("failing", "missing", "zero_usage", "short"):
        assert planted["steps"][[s["step"] for s in planted["steps"]].index(name)]["records_dropped"] > 0
    long_tasks = sorted(planted["long_tasks"])
    assert series.task_id.tolist() == [t[:2] for t in long_tasks]
    assert series.lengths().tolist() == [t[2] for t in long_tasks]
    # values: the population's records, to the 4 digits written
    population = SyntheticPopulation(80, 7)
    key_to_k = {tuple(int(v) for v in t): k for k, t in enumerate(population.task_id)}
    planted_above_1 = {tuple(t) for t in planted["avg_above_1_tasks"]}
    for i, t in enumerate(series.task_id):
        inst, avg = series.task(i)
        k = key_to_k[tuple(int(v) for v in t)]
        want_inst, want_avg = population.task(k)
        # memory (columns 7 and 11): the population's, to the 4 digits written
        for got, want in zip(series.memory(i), population.memory(k)):
            np.testing.assert_allclose(got, want[: len(inst)], rtol=6e-4, atol=1e-12)
        np.testing.assert_allclose(inst, want_inst[: len(inst)], rtol=6e-4, atol=1e-12)
        np.testing.assert_allclose(avg[1:], want_avg[1 : len(inst)], rtol=6e-4, atol=1e-12)
        if tuple(int(v) for v in t) in planted_above_1:
            assert avg[0] == inst[0]  # the planted 1.5 was replaced by the record's inst value
        else:
            np.testing.assert_allclose(avg[0], want_avg[0], rtol=6e-4, atol=1e-12)
    assert planted_above_1 and planted_above_1 <= {tuple(int(v) for v in t) for t in series.task_id}


def test_end_to_end_realize_and_sweep(trace, tmp_path, monkeypatch):
    root, planted = trace
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["ingest", "google2011", str(root), "--out", "series.h5"]).exit_code == 0
    n = planted["steps"][-1]["tasks"]
    res = runner.invoke(app, ["realize", "series.h5", "--out", "store.h5", "--tasks", str(n),
                              "--realizations", "200", "--seed", "1"])
    assert res.exit_code == 0, res.output
    with open_store("store.h5") as store:
        assert store.x.shape == (n, 200)
    (tmp_path / "sweep.toml").write_text(
        '[source]\nkind = "store"\npath = "store.h5"\n\n[instances]\ncount = 2\ntasks = 10\nseed = 3\n\n'
        '[grid]\nestimator = ["gpa:0.01", "max"]\nclairvoyance = [1.0]\n'
    )
    res = runner.invoke(app, ["sweep", "sweep.toml", "--out", "r.csv"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((tmp_path / "r.csv").read_text().splitlines()))
    assert len(rows) == 2 * 2 and all(int(r["m_abs"]) >= 1 for r in rows)


def test_same_seed_same_files(tmp_path):
    a = write_synthetic_trace(tmp_path / "a", n_tasks=12, days=1, seed=2)
    b = write_synthetic_trace(tmp_path / "b", n_tasks=12, days=1, seed=2)
    assert a == b
    for sub in ("task_usage", "task_events"):
        for f in (tmp_path / "a" / sub).iterdir():
            assert gzip.decompress(f.read_bytes()) == gzip.decompress((tmp_path / "b" / sub / f.name).read_bytes())


def test_bad_arguments(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep")
    for args, why in ((["--out", str(tmp_path / "full")], "exists"),
                      (["--out", str(tmp_path / "n"), "--days", "0"], "--days"),
                      (["--out", str(tmp_path / "n"), "--tasks", "0"], "--tasks")):
        res = runner.invoke(app, ["synth-trace", "--tasks", "5", "--seed", "1", *args])
        assert res.exit_code == 2, res.output
        assert why in res.output
    assert (tmp_path / "full" / "x").read_text() == "keep" and not (tmp_path / "n").exists()
