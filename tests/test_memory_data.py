"""Memory in the data (docs/memory.md, docs/spec.md "Memory realizations"):
series and stores of format 2, the realization recipe against a naive
re-implementation, the CPU bytes unchanged, the real excerpts ingested with
memory, bad memory values refused naming file and line, and a sweep that
packs memory end to end."""

from __future__ import annotations

import csv
import gzip
import hashlib

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

import colosim
from colosim.cli import app
from colosim.errors import InputError
from colosim.io import open_series, open_store
from colosim.io.series import write_series
from colosim.sources.google2011 import ingest_google2011
from colosim.sources.google2019 import ingest_google2019
from colosim.sources.population import SyntheticPopulation
from colosim.sources.realize import draw_indices, realize, select_rows
from colosim.sources.resolve import generate_synthetic_store

from .test_ingest_google2011 import event_row, make_trace, usage_row
from .test_ingest_google2019 import HEADER, task_rows, write_file

runner = CliRunner()

#: SHA-256 of x then y of the built-in population's 300 x 200 store, seed
#: 2017, as made before memory existed: memory must not move a CPU byte
CPU_STORE_SHA = "ebcdd2990e1736375fe0add1d9926179b228296eb0d15133366549221426f15d"


#: SHA-256 of task_id, offsets, inst, avg and start_time of the real excerpts'
#: series (2011 with min_records 1, 2019 by default), as ingested before
#: memory existed: reading memory must not change a CPU record
REAL_CPU_SHA = {"2011": "91a3b89eeff1de603721b3a5d3b21f9c2a792e9a4f8d27b3b5740569f147eb97",
                "2019": "d1156e3020b79d8597d11f21c1f74d336f4e65eb9ed6a2c678d5757b79ae59d5"}


def _cpu_sha(series) -> str:
    return hashlib.sha256(b"".join(np.ascontiguousarray(getattr(series, k)).tobytes()
                                   for k in ("task_id", "offsets", "inst", "avg", "start_time"))).hexdigest()


def _xy_sha(path) -> str:
    with h5py.File(path, "r") as f:
        return hashlib.sha256(f["x"][...].tobytes() + f["y"][...].tobytes()).hexdigest()


def test_cpu_bytes_do_not_change_with_memory(tmp_path):
    generate_synthetic_store(tmp_path / "cpu.h5", n_tasks=300, n_realizations=200, seed=2017)
    generate_synthetic_store(tmp_path / "mem.h5", n_tasks=300, n_realizations=200, seed=2017, memory=True)
    assert _xy_sha(tmp_path / "cpu.h5") == CPU_STORE_SHA == _xy_sha(tmp_path / "mem.h5")
    with h5py.File(tmp_path / "cpu.h5", "r") as f:
        assert "memory" not in f and f.attrs["format_version"] == 1
    with open_store(tmp_path / "cpu.h5") as s:
        assert not s.has_memory
        with pytest.raises(InputError, match="no memory realizations"):
            s.rows([0], "memory")


@pytest.mark.parametrize("sampling", ["independent", "paired", "time-aligned"])
def test_memory_realizations_come_from_the_records_of_x(tmp_path, sampling):
    pop = SyntheticPopulation(40, seed=3)
    out = tmp_path / "s.h5"
    realize(pop, out, n_tasks=25, n_realizations=60, seed=9, sampling=sampling, memory=True, block_rows=4,
            threads=2)
    with open_store(out) as store:
        x, memory = store.rows(np.arange(25), "x"), store.rows(np.arange(25), "memory")
    rows = select_rows(40, 25, 9)
    for j, k in enumerate(rows):
        inst, _ = pop.task(int(k))
        _, mem_max = pop.memory(int(k))
        if sampling == "time-aligned":  # the record x was drawn from: found by its value and its memory
            for t in range(60):
                candidates = np.flatnonzero(inst == x[j, t])
                assert memory[j, t] in mem_max[candidates]
            continue
        ix, _ = draw_indices(9, j, len(inst), 60, sampling)
        np.testing.assert_array_equal(x[j], inst[ix])
        np.testing.assert_array_equal(memory[j], mem_max[ix])


def test_series_of_format_2_round_trip_and_format_1_means_cpu_only(tmp_path):
    common = dict(task_id=[[1, 0], [2, 0]], offsets=[0, 2, 3], inst=[0.1, 0.2, 0.3], avg=[0.1, 0.2, 0.3],
                  start_time=[0, 300_000_000, 0], source={}, filters={})
    write_series(tmp_path / "v2.h5", **common, mem_avg=[0.01, 0.02, 0.03], mem_max=[0.02, 0.03, 0.04])
    write_series(tmp_path / "v1.h5", **common)
    with open_series(tmp_path / "v2.h5") as s:
        assert s.has_memory
        np.testing.assert_array_equal(s.memory(0)[1], np.float32([0.02, 0.03]))
        with s.reader() as r:
            np.testing.assert_array_equal(r.memory(1)[0], np.float32([0.03]))
    with open_series(tmp_path / "v1.h5") as s:
        assert not s.has_memory
        with pytest.raises(InputError, match="no memory"):
            s.memory(0)
        with pytest.raises(InputError, match="has no memory .a CPU-only series"):
            realize(s, tmp_path / "st.h5", n_tasks=2, n_realizations=5, seed=1, memory=True)
    assert not (tmp_path / "st.h5").exists()
    for bad, why in ((np.nan, "finite"), (-0.5, "finite and >= 0")):
        with pytest.raises(InputError, match=f"'mem_max' record 1 holds .*{why}"):
            write_series(tmp_path / "bad.h5", **common, mem_avg=[0.01, 0.02, 0.03], mem_max=[0.02, bad, 0.04])
    assert not (tmp_path / "bad.h5").exists()


def _v2_series(path):
    write_series(path, task_id=[[1, 0], [2, 0]], offsets=[0, 2, 3], inst=[0.1, 0.2, 0.3], avg=[0.1, 0.2, 0.3],
                 start_time=[0, 300_000_000, 0], source={}, filters={}, mem_avg=[0.01, 0.02, 0.03],
                 mem_max=[0.02, 0.03, 0.04])
    return path


def test_bad_memory_on_disk_is_refused_naming_file_and_dataset(tmp_path):
    nan = _v2_series(tmp_path / "nan.h5")
    with h5py.File(nan, "r+") as f:
        f["mem_max"][1] = np.nan
    with open_series(nan) as s, pytest.raises(InputError, match=r"nan\.h5: series task 0: 'mem_max' holds NaN"):
        realize(s, tmp_path / "st.h5", n_tasks=2, n_realizations=5, seed=1, memory=True)
    assert not (tmp_path / "st.h5").exists()
    one = _v2_series(tmp_path / "one.h5")
    with h5py.File(one, "r+") as f:
        del f["mem_max"]
    with pytest.raises(InputError, match=r"one\.h5: series file has no dataset 'mem_max'"):
        open_series(one)
    short = _v2_series(tmp_path / "short.h5")
    with h5py.File(short, "r+") as f:
        del f["mem_avg"]
        f.create_dataset("mem_avg", data=np.zeros(2, np.float32))
    with pytest.raises(InputError, match=r"short\.h5: 'mem_avg' has shape \(2,\), expected \(3,\)"):
        open_series(short)
    store = tmp_path / "store.h5"
    with open_series(_v2_series(tmp_path / "ok.h5")) as s:
        realize(s, store, n_tasks=2, n_realizations=5, seed=1, memory=True)
    with h5py.File(store, "r+") as f:
        f["memory"][1, 2] = -1
    with open_store(store) as st:
        assert st.has_memory and st.attrs["memory"] is True
        st.rows([0], "memory")
        with pytest.raises(InputError, match=r"store\.h5: dataset 'memory' row 1 column 2 holds"):
            st.rows([0, 1], "memory")
    with h5py.File(store, "r+") as f:
        del f["memory"]
        f.create_dataset("memory", data=np.zeros((2, 4), np.float32))
    with pytest.raises(InputError, match=r"store\.h5: datasets 'x' \(2, 5\) and 'memory' \(2, 4\) differ"):
        open_store(store)


def test_memory_changes_the_fingerprint_and_the_cached_names(tmp_path, monkeypatch):
    from colosim.config import SeriesSource, SyntheticSource
    from colosim.runner.sweep import store_fingerprint
    from colosim.sources.resolve import resolve_store

    monkeypatch.setenv("COLOSIM_CACHE", str(tmp_path / "cache"))
    cpu = resolve_store(SyntheticSource(tasks=30, realizations=10, seed=2), tmp_path)
    mem = resolve_store(SyntheticSource(tasks=30, realizations=10, seed=2, memory=True), tmp_path)
    assert cpu.name.endswith("-independent.h5") and mem.name.endswith("-independent-mem1.h5")
    with open_store(cpu) as a, open_store(mem) as b:
        assert store_fingerprint(a) != store_fingerprint(b)
        np.testing.assert_array_equal(a.x, b.x)
    series = _v2_series(tmp_path / "s.h5")
    src = dict(path=str(series), tasks=2, realizations=6, seed=1)
    assert resolve_store(SeriesSource(**src, memory=True), tmp_path).name.endswith("-mem.h5")
    assert not resolve_store(SeriesSource(**src), tmp_path).name.endswith("-mem.h5")
    named = dict(src, store="named.h5")
    resolve_store(SeriesSource(**named), tmp_path)  # a CPU-only store under a name of the config's
    with pytest.raises(InputError, match=r"named\.h5: exists but is not the store .*memory False"):
        resolve_store(SeriesSource(**named, memory=True), tmp_path)


def test_api_refuses_nan_or_negative_memory():
    x = np.full((3, 4), 0.1)
    for value in (np.nan, -1.0):
        mem = np.full((3, 4), 0.1)
        mem[1, 2] = value
        with pytest.raises(ValueError, match="memory holds"):
            colosim.run(x, memory=mem, memory_capacity=1.0)


# ---------------------------------------------------------------- real excerpts

def test_real_2011_excerpt_ingested_with_memory(shared_data, tmp_path):
    out = tmp_path / "s.h5"
    report = ingest_google2011(shared_data / "google2011", out, min_records=1, threads=1)
    assert report.counts["memory_missing"] == 0
    with gzip.open(shared_data / "google2011" / "task_usage" / "part-00000-of-00500.first10000.csv.gz", "rt") as fh:
        memory = {(int(r[2]), int(r[3])): (float(r[6]), float(r[10])) for r in csv.reader(fh)}
    with open_series(out) as s:
        assert s.has_memory and s.n_tasks == s.n_records == 2599  # one record a task in this excerpt
        assert _cpu_sha(s) == REAL_CPU_SHA["2011"]
        got = {tuple(int(v) for v in s.task_id[k]): tuple(float(v[0]) for v in s.memory(k))
               for k in range(s.n_tasks)}
    assert len(got) > 2000
    for key, (mean, peak) in got.items():
        assert (mean, peak) == (float(np.float32(memory[key][0])), float(np.float32(memory[key][1])))


def test_real_2019_tasks_ingested_with_memory(shared_data, tmp_path):
    folder = shared_data / "google2019" / "instance_usage"
    out = tmp_path / "s.h5"
    report = ingest_google2019([folder], out)
    assert report.counts["memory_missing"] == 0
    first = sorted(folder.rglob("*.csv.gz"))[0]
    with gzip.open(first, "rt") as fh:
        rows = list(csv.DictReader(fh))
    key = (int(rows[0]["collection_id"]), int(rows[0]["instance_index"]))
    with open_series(out) as s:
        assert s.has_memory and s.n_tasks == 19 and s.n_records == 52031
        assert _cpu_sha(s) == REAL_CPU_SHA["2019"]
        k = [tuple(int(v) for v in t) for t in s.task_id].index(key)
        mem_avg, mem_max = s.memory(k)
        _, _, start = s.records(k)
    by_time = {int(r["time"]): (float(r["avg_memory_usage"]), float(r["max_memory_usage"])) for r in rows}
    for t, a, m in zip(start[:50], mem_avg[:50], mem_max[:50]):
        assert (float(a), float(m)) == tuple(float(np.float32(v)) for v in by_time[int(t)])


# ---------------------------------------------------------------- bad values

@pytest.mark.parametrize("column, value", [(6, "-0.1"), (10, "nan"), (6, "lots")])
def test_2011_bad_memory_is_a_bad_line_naming_file_and_line(tmp_path, column, value):
    rows = [usage_row(1, 0, 300_000_000 * k, 0.2, 0.25) for k in range(30)]
    rows[3][column] = value
    root = make_trace(tmp_path / "t", [event_row(1, 0, 0)], [rows])
    out = tmp_path / "s.h5"
    res = runner.invoke(app, ["ingest", "google2011", str(root), "--out", str(out)])
    assert res.exit_code == 2, res.output
    message = res.output.strip().splitlines()[-1]
    assert "line 4" in message and f"column {column + 1}" in message and "part-00000" in message
    assert not out.exists()


def test_bad_memory_lines_skipped_and_counted_and_missing_memory_filled_in(tmp_path):
    rows = [usage_row(1, 0, 300_000_000 * k, 0.2, 0.25) for k in range(30)]
    rows[3][6] = "-0.1"  # a bad mean: skipped
    rows[5][10] = "x"  # a bad maximum: skipped
    rows[7][6] = ""  # the mean from the maximum
    rows[8][6] = rows[8][10] = ""  # neither: memory 0, counted
    root = make_trace(tmp_path / "t", [event_row(1, 0, 0)], [rows])
    report = ingest_google2011(root, tmp_path / "s.h5", on_bad_lines="skip", threads=1)
    assert report.counts["usage_bad_lines"] == 2
    assert report.counts["memory_filled_in"] == 1 and report.counts["memory_missing"] == 1
    with open_series(tmp_path / "s.h5") as s:
        mem_avg, mem_max = s.memory(0)
        assert s.n_records == 28
    assert (mem_avg[5], mem_max[5], mem_avg[6], mem_max[6]) == (np.float32(0.5), np.float32(0.5), 0, 0)


@pytest.mark.parametrize("value, why", [("-1", "finite and >= 0"), ("abc", "not a number"), ("inf", "finite")])
def test_2019_bad_memory_is_a_bad_line_naming_file_and_line(tmp_path, value, why):
    header = HEADER + ["avg_memory_usage", "max_memory_usage"]
    rows = [r + ["0.01", "0.02"] for r in task_rows(1, 0, 30)]
    rows[2][-2] = value
    f = write_file(tmp_path / "in" / "t.csv", rows, header=header)
    out = tmp_path / "s.h5"
    res = runner.invoke(app, ["ingest", "google2019", str(f), "--out", str(out)])
    assert res.exit_code == 2, res.output
    message = res.output.strip().splitlines()[-1]
    assert str(f) in message and "line 4" in message and "avg_memory_usage" in message and why in message
    assert not out.exists()


def test_2019_missing_memory_taken_from_the_other_column(tmp_path):
    header = HEADER + ["avg_memory_usage", "max_memory_usage"]
    rows = [r + ["0.01", "0.02"] for r in task_rows(1, 0, 30)]
    rows[0][-2] = ""  # mean missing: the maximum
    rows[1][-1] = ""  # maximum missing: the mean
    rows[2][-2:] = ["", ""]  # neither: 0, counted
    f = write_file(tmp_path / "in" / "t.csv", rows, header=header)
    report = ingest_google2019([f], tmp_path / "s.h5")
    assert report.counts["memory_filled_in"] == 2 and report.counts["memory_missing"] == 1
    with open_series(tmp_path / "s.h5") as s:
        mem_avg, mem_max = s.memory(0)
    np.testing.assert_array_equal(mem_avg[:3], np.float32([0.02, 0.01, 0.0]))
    np.testing.assert_array_equal(mem_max[:3], np.float32([0.02, 0.01, 0.0]))


# ---------------------------------------------------------------- end to end

def test_a_sweep_that_packs_memory_agrees_with_the_api(tmp_path, monkeypatch):
    monkeypatch.setenv("COLOSIM_CACHE", str(tmp_path / "cache"))
    config = tmp_path / "m.toml"
    config.write_text('[source]\nkind = "synthetic"\ntasks = 400\nrealizations = 120\nseed = 4\n\n'
                      '[instances]\ncount = 2\ntasks = 60\nseed = 1\n\n[grid]\nestimator = ["gpa:0.01"]\n'
                      'capacity = [0.5, "0.5x0.5:3,0.5x0.25:2"]\nmemory_estimator = ["max", "perc:90"]\n'
                      'fit_rule = ["cpu", "l2"]\n')
    out = tmp_path / "r.csv"
    res = runner.invoke(app, ["sweep", str(config), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "q_memory" in res.output and "memory-bound" in res.output
    rows = colosim.read_results(out)
    assert len(rows) == 2 * 2 * 2 * 2
    store_path = next((tmp_path / "cache").glob("synthetic-*-mem1.h5"))
    from colosim.runner.sweep import instance_rows

    with open_store(store_path) as store:
        for _, r in rows.iterrows():
            index = instance_rows(1, int(r["instance"]), store.n_tasks, 60)
            x, mem = store.rows(index, "x"), store.rows(index, "memory")
            shapes = "x" in str(r["capacity"])
            got = colosim.run(x, estimator="gpa:0.01", capacity=r["capacity"] if shapes else 0.5,
                              memory=mem if shapes else None, memory_estimator=r["memory_estimator"],
                              fit_rule=r["fit_rule"])
            assert (got.m_abs, got.q, got.m_norm) == (r["m_abs"], r["q"], r["m_norm"])
            if shapes:
                assert got.q_memory == r["q_memory"] and got.memory_bound == r["memory_bound"]
            else:
                assert r["q_memory"] is None or np.isnan(r["q_memory"])


def test_plan_reports_memory_beside_its_cpu_search(tmp_path, monkeypatch):
    monkeypatch.setenv("COLOSIM_CACHE", str(tmp_path / "cache"))
    config = tmp_path / "p.toml"
    config.write_text('[source]\nkind = "synthetic"\ntasks = 300\nrealizations = 100\nseed = 4\n\n'
                      '[instances]\ncount = 4\ntasks = 40\nseed = 1\n\n[grid]\n'
                      'capacity = ["0.5x0.25:2,1x1:1"]\nmemory_estimator = ["perc:90"]\n')
    res = runner.invoke(app, ["plan", str(config), "--slo", "0.9", "--out", str(tmp_path / "plan")])
    assert res.exit_code == 0, res.output
    assert "q_memory" in res.output or "No family meets" in res.output
    with open(tmp_path / "plan" / "plan.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(r["q_memory_mean"] != "" and 0 <= float(r["memory_bound_mean"]) <= 1 for r in rows)
