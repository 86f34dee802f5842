"""`colosim sweep` in-process: results, reuse, determinism and bad input."""

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import colosim
from colosim.cli import app
from colosim.io.results import COLUMNS
from colosim.runner.sweep import instance_rows

from .conftest import write_random_store

runner = CliRunner()

CONFIG = """
[source]
kind = "store"
path = "store.h5"

[instances]
count = 3
tasks = 40
seed = 5

[grid]
estimator = ["gpa:0.01", "av:1.25", "perc:90", "max"]
algorithm = ["first-fit", "best-fit"]
clairvoyance = [0.1, 1.0]
data = ["inst", "avg"]
rebalance = [true, false]
"""


@pytest.fixture
def workdir(tmp_path, small_store, monkeypatch):
    store_path, x, y = small_store
    (tmp_path / "sweep.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args):
    return runner.invoke(app, list(args))


def test_sweep_writes_every_row_in_order(workdir, small_store):
    _, x, y = small_store
    res = invoke("sweep", "sweep.toml", "--out", "r.csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(Path("r.csv").read_text().splitlines()))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == 3 * 4 * 2 * 2 * 2 * 2
    assert [r["instance"] for r in rows[:64]] == ["0"] * 64
    assert rows[0]["estimator"] == "gpa:0.01" and rows[0]["rebalance"] == "true"
    # every row equals colosim.run on the instance's rows (SPEC §6)
    for r in rows[::5]:
        idx = instance_rows(5, int(r["instance"]), 120, 40)
        want = colosim.run(x[idx], y[idx], r["estimator"], float(r["capacity"]), r["algorithm"],
                           float(r["clairvoyance"]), r["data"], r["rebalance"] == "true", float(r["headroom"]))
        assert int(r["m_abs"]) == want.m_abs and float(r["q"]) == want.q
        assert float(r["severity"]) == want.severity and int(r["m_norm"]) == want.m_norm
    meta = json.loads(Path("r.csv.json").read_text())
    assert meta["complete"] and meta["rows"] == len(rows)


def test_rerun_recomputes_nothing_and_same_bytes(workdir):
    assert invoke("sweep", "sweep.toml", "--out", "a.csv").exit_code == 0
    first = Path("a.csv").read_bytes()
    stamp = os.stat("a.csv").st_mtime_ns
    res = invoke("sweep", "sweep.toml", "--out", "a.csv")
    assert res.exit_code == 0 and "nothing recomputed" in res.output
    assert os.stat("a.csv").st_mtime_ns == stamp
    assert invoke("sweep", "sweep.toml", "--out", "b.csv", "-q").exit_code == 0
    assert Path("b.csv").read_bytes() == first


def test_changed_config_does_not_mix_results(workdir):
    assert invoke("sweep", "sweep.toml", "--out", "a.csv").exit_code == 0
    before = Path("a.csv").read_bytes()
    (workdir / "sweep.toml").write_text(CONFIG.replace("count = 3", "count = 2"))
    res = invoke("sweep", "sweep.toml", "--out", "a.csv")
    assert res.exit_code == 2 and "--force" in res.output
    assert Path("a.csv").read_bytes() == before
    assert invoke("sweep", "sweep.toml", "--out", "a.csv", "--force").exit_code == 0
    assert len(Path("a.csv").read_text().splitlines()) == 1 + 2 * 64


BAD_CONFIGS = [
    ("[grid]\nestimator = ['gpa:0.01']\nfoo = [1]\n", "unknown key 'grid.foo'"),
    ("[grid]\nestimator = 'gpa:0.01'\n", "grid.estimator must be a list"),
    ("[grid]\nestimator = []\n", "grid.estimator is an empty list"),
    ("[grid]\nestimator = ['gpa:7']\n", "gpa:7"),
    ("[grid]\nestimator = ['gpa0.1']\n", "gpa0.1"),
    ("[grid]\ncapacity = [0.0]\n", "capacity"),
    ("[grid]\ncapacity = ['big']\n", "grid.capacity value 'big'"),
    ("[grid]\nclairvoyance = [0.0]\n", "clairvoyance"),
    ("[grid]\nclairvoyance = [0.9999]\n", "no evaluation column"),
    ("[grid]\nheadroom = [1.5]\n", "headroom"),
    ("[grid]\nrebalance = ['yes']\n", "grid.rebalance value 'yes'"),
    ("[grid]\ndata = ['peak']\n", "data"),
    ("[grid]\nalgorithm = ['next-fit']\n", "algorithm"),
]


@pytest.mark.parametrize("grid, message", BAD_CONFIGS)
def test_bad_config_exits_2_with_one_line(workdir, grid, message):
    head = CONFIG.split("[grid]")[0]
    (workdir / "bad.toml").write_text(head + grid)
    res = invoke("sweep", "bad.toml", "--out", "bad.csv")
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "bad.toml" in lines[0]
    assert message in lines[0]
    assert not (workdir / "bad.csv").exists()


def test_more_tasks_than_store_holds(workdir):
    (workdir / "big.toml").write_text(CONFIG.replace("tasks = 40", "tasks = 500"))
    res = invoke("sweep", "big.toml", "--out", "x.csv")
    assert res.exit_code == 2 and "more than the 120 tasks" in res.output
    assert not (workdir / "x.csv").exists()


@pytest.mark.parametrize("content, message", [
    (None, "not found"),
    (b"this is not hdf5", "not a readable HDF5"),
])
def test_missing_or_foreign_store(workdir, content, message):
    os.remove("store.h5")
    if content is not None:
        Path("store.h5").write_bytes(content)
    res = invoke("sweep", "sweep.toml", "--out", "x.csv")
    assert res.exit_code == 2 and message in res.output and "store.h5" in res.output


def test_truncated_store(workdir):
    size = os.path.getsize("store.h5")
    with open("store.h5", "r+b") as fh:
        fh.truncate(size - 1000)
    res = invoke("sweep", "sweep.toml", "--out", "x.csv")
    assert res.exit_code == 2 and ("truncated" in res.output or "HDF5" in res.output)


def test_existing_output_survives_a_failed_run(workdir):
    Path("keep.csv").write_text("precious\n")
    (workdir / "bad.toml").write_text(CONFIG.replace("gpa:0.01", "gpa:2"))
    assert invoke("sweep", "bad.toml", "--out", "keep.csv").exit_code == 2
    assert Path("keep.csv").read_text() == "precious\n"


def test_store_with_negative_values_is_named(workdir):
    import h5py

    with h5py.File("store.h5", "r+") as f:
        off = f["x"].id.get_offset()
    with open("store.h5", "r+b") as fh:  # corrupt x[0, 0] behind h5py's back
        fh.seek(off)
        fh.write(np.float32(-1).tobytes())
    (workdir / "all.toml").write_text(CONFIG.replace("tasks = 40", "tasks = 120"))
    res = invoke("sweep", "all.toml", "--out", "x.csv")
    assert res.exit_code == 2 and "row 0 column 0" in res.output


def test_missing_config_and_bad_toml(workdir):
    res = invoke("sweep", "nope.toml")
    assert res.exit_code == 2 and "nope.toml: config file not found" in res.output
    (workdir / "broken.toml").write_text("[grid\n")
    res = invoke("sweep", "broken.toml")
    assert res.exit_code == 2 and "invalid TOML" in res.output


def test_a_replaced_store_is_not_taken_for_the_old_one(workdir):
    assert invoke("sweep", "sweep.toml", "--out", "a.csv", "-q").exit_code == 0
    before = Path("a.csv").read_bytes()
    write_random_store(workdir / "store.h5", 120, 400, seed=8)  # same shape, other content
    res = invoke("sweep", "sweep.toml", "--out", "a.csv", "-q")
    assert res.exit_code == 2 and "another config or store" in res.output
    assert Path("a.csv").read_bytes() == before


def test_synthetic_source_reuses_only_a_matching_store(workdir):
    cfg = ('[source]\nkind = "synthetic"\ntasks = 60\nrealizations = 50\nseed = {seed}\n'
           'store = "syn.h5"\n[instances]\ncount = 1\ntasks = 20\nseed = 0\n[grid]\nestimator = ["av:1"]\n')
    (workdir / "s.toml").write_text(cfg.format(seed=1))
    assert invoke("sweep", "s.toml", "--out", "s.csv", "-q").exit_code == 0
    made = (workdir / "syn.h5").read_bytes()
    (workdir / "s2.toml").write_text(cfg.format(seed=2))
    res = invoke("sweep", "s2.toml", "--out", "s2.csv", "-q")
    assert res.exit_code == 2 and "seed 1 (config: 2)" in res.output
    assert (workdir / "syn.h5").read_bytes() == made and not (workdir / "s2.csv").exists()


# ------------------------------------------- extra columns: gpa-cal, fleets

EXTRA_GRID = """estimator = ["gpa:0.01", "gpa-cal:0.01", "emp:0.01"]
algorithm = ["best-fit", "first-fit-decreasing"]
capacity = [1.0, "1:0.5,0.5:0.5"]
clairvoyance = [0.5]
"""


def test_sweep_appends_rho_and_per_type_columns(tmp_path, small_store, monkeypatch):
    from colosim.io.results import EXTRA_COLUMNS
    from colosim.model.grid import evaluation_columns
    from colosim.runner.sweep import read_results

    from .conftest import write_config

    _, x, y = small_store
    write_config(tmp_path, EXTRA_GRID, name="sweep.toml")
    monkeypatch.chdir(tmp_path)
    res = invoke("sweep", "sweep.toml", "--out", "r.csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(Path("r.csv").read_text().splitlines()))
    assert tuple(rows[0]) == COLUMNS and COLUMNS[-len(EXTRA_COLUMNS):] == EXTRA_COLUMNS  # every column, always
    assert len(rows) == 2 * 3 * 2 * 2
    typed = read_results("r.csv")
    for r, t in zip(rows, typed):
        assert int(r["realizations"]) == x.shape[1]
        assert int(r["evaluated"]) == evaluation_columns(t["clairvoyance"], x.shape[1]) < x.shape[1] + 1
        assert (r["calibrated_rho"] != "") == (r["estimator"] == "gpa-cal:0.01")
        assert (r["m_abs_by_type"] != "") == (r["capacity"] == "1:0.5,0.5:0.5")
        idx = instance_rows(5, t["instance"], 120, 40)
        want = colosim.run(x[idx], y[idx], t["estimator"], t["capacity"], t["algorithm"], t["clairvoyance"])
        assert t["m_abs"] == want.m_abs and t["q"] == want.q and t["severity"] == want.severity
        assert t["calibrated_rho"] == want.calibrated_rho
        assert t["m_abs_by_type"] == want.m_abs_by_type and t["q_by_type"] == want.q_by_type
    again = invoke("sweep", "sweep.toml", "--out", "r.csv")
    assert again.exit_code == 0 and "nothing recomputed" in again.output
    info = invoke("info", "r.csv")
    assert info.exit_code == 0 and "1:0.5,0.5:0.5" in info.output


@pytest.mark.parametrize("line, culprit", [
    ('capacity = ["1:0.5;0.5:0.5"]', "1:0.5;0.5:0.5"),
    ('algorithm = ["next-fit-decreasing"]', "next-fit-decreasing"),
    ('estimator = ["emp:2"]', "emp:2"),
    ('capacity = [1, 1.0]', "twice"),
    ('estimator = ["gpa:0.01", "gpa:0.010"]', "twice"),
])
def test_sweep_config_rejects_bad_grid_values(tmp_path, line, culprit):
    from .conftest import write_config

    path = write_config(tmp_path, line)
    (tmp_path / "store.h5").write_bytes(b"")
    res = invoke("sweep", str(path), "--out", str(tmp_path / "r.csv"))
    assert res.exit_code == 2
    assert culprit in res.output and "c.toml" in res.output


def test_equal_configs_written_differently_have_one_fingerprint(tmp_path):
    from colosim.config import load_config

    from .conftest import write_config

    a = load_config(write_config(tmp_path, 'capacity = [1, 0.5]\nestimator = ["GPA:0.010", "perc:1e2"]',
                                 name="a.toml"))
    b = load_config(write_config(tmp_path, 'capacity = [1.0, 0.5]\nestimator = ["gpa:0.01", "perc:100"]',
                                 name="b.toml"))
    c = load_config(write_config(tmp_path, 'capacity = [0.5, 1.0]\nestimator = ["gpa:0.01", "perc:100"]',
                                 name="c.toml"))
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()
    assert a.points == b.points


def test_sweep_writes_a_summary_per_grid_point_and_refuses_older_results(workdir):
    from colosim.analysis.summary import SUMMARY_COLUMNS, summarize
    from colosim.io.results import summary_path
    from colosim.runner.sweep import read_results

    res = invoke("sweep", "sweep.toml", "--out", "r.csv")
    assert res.exit_code == 0, res.output
    assert "95% interval" in res.output and "q resolution" in res.output
    with open(summary_path(Path("r.csv")), newline="") as fh:
        summary = list(csv.DictReader(fh))
    assert tuple(summary[0]) == SUMMARY_COLUMNS and len(summary) == 4 * 2 * 2 * 2 * 2
    want = summarize(read_results("r.csv"), 400)
    for got, w in zip(summary, want):
        assert got["estimator"] == w["estimator"] and int(got["instances"]) == 3
        for c in ("m_abs_mean", "m_abs_ci_low", "q_mean", "q_ci_low", "q_ci_high", "q_max_ci_high"):
            assert float(got[c]) == w[c]
        assert float(got["q_ci_low"]) <= float(got["q_mean"]) <= float(got["q_ci_high"])
    # results of an earlier results schema are not taken for finished ones
    meta = json.loads(Path("r.csv.json").read_text())
    Path("r.csv.json").write_text(json.dumps(dict(meta, results_schema=1, fingerprint="of an older schema")))
    again = invoke("sweep", "sweep.toml", "--out", "r.csv")
    assert again.exit_code == 2 and "earlier colosim (results schema 1)" in again.output


def test_the_summary_path_is_checked_before_any_work(workdir):
    Path("s.csv.summary.csv").mkdir()
    res = invoke("sweep", "sweep.toml", "--out", "s.csv")
    assert res.exit_code == 2 and "s.csv.summary.csv" in res.output and not Path("s.csv").exists()
    Path("u.csv.summary.csv").write_text("mine\n")
    res = invoke("sweep", "sweep.toml", "--out", "u.csv")
    assert res.exit_code == 2 and "--force" in res.output and not Path("u.csv").exists()
    assert Path("u.csv.summary.csv").read_text() == "mine\n"
    # the store named like the summary: never replaced, even with --force
    Path("st.csv.summary.csv").write_bytes(Path("store.h5").read_bytes())
    Path("st.toml").write_text(CONFIG.replace('"store.h5"', '"st.csv.summary.csv"'))
    res = invoke("sweep", "st.toml", "--out", "st.csv", "--force")
    assert res.exit_code == 2 and "is the input" in res.output
    assert Path("st.csv.summary.csv").read_bytes() == Path("store.h5").read_bytes()


@pytest.mark.parametrize("out", ["", "."])
def test_an_empty_or_directory_out_is_refused(workdir, out):
    res = invoke("sweep", "sweep.toml", "--out", out)
    assert res.exit_code == 2 and "--out" in res.output and ("is a directory" in res.output or "empty" in res.output)
    assert not list(Path(".").glob("*.parts"))


def test_open_store_of_no_path_is_an_input_error():
    with pytest.raises(colosim.InputError, match="store path must be a file path"):
        colosim.open_store(None)
