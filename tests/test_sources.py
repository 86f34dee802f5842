"""A sweep config may name a series file or a trace folder; the derived store
(and ingested series) is cached and reused, and a changed input is not
mistaken for the old one."""

import os
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from colosim.cli import app
from colosim.io import write_series

runner = CliRunner()

CONFIG = """
[source]
kind = "{kind}"
path = "{path}"
tasks = 30
realizations = 200
seed = 4

[instances]
count = 2
tasks = 20
seed = 1

[grid]
estimator = ["gpa:0.05", "av:1.25"]
"""


def _series(path, seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(24, 60, size=40)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    inst = rng.gamma(1.0, 0.05, size=offsets[-1]).astype(np.float32)
    write_series(path, task_id=np.stack([np.arange(40), np.zeros(40, int)], 1), offsets=offsets,
                 inst=inst, avg=inst * 0.9, start_time=np.arange(offsets[-1]), source={"kind": "test"},
                 filters={})


def test_series_source_is_realized_once_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("COLOSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    _series(tmp_path / "s.h5", 1)
    Path("c.toml").write_text(CONFIG.format(kind="series", path="s.h5"))
    assert runner.invoke(app, ["sweep", "c.toml", "--out", "a.csv", "-q"]).exit_code == 0
    stores = list((tmp_path / "cache").glob("series-*.h5"))
    assert len(stores) == 1
    stamp = stores[0].stat().st_mtime_ns
    assert runner.invoke(app, ["sweep", "c.toml", "--out", "b.csv", "-q"]).exit_code == 0
    assert stores[0].stat().st_mtime_ns == stamp  # reused, not realized again
    assert Path("a.csv").read_bytes() == Path("b.csv").read_bytes()
    # a changed series file makes a new store, and the old results are not taken for it
    _series(tmp_path / "s.h5", 2)
    os.utime(tmp_path / "s.h5", ns=(stamp + 10**9, stamp + 10**9))
    res = runner.invoke(app, ["sweep", "c.toml", "--out", "a.csv", "-q"])
    assert res.exit_code == 2 and "--force" in res.output
    assert runner.invoke(app, ["sweep", "c.toml", "--out", "c.csv", "-q"]).exit_code == 0
    assert len(list((tmp_path / "cache").glob("series-*.h5"))) == 2
    assert Path("c.csv").read_bytes() != Path("a.csv").read_bytes()


def test_trace_folder_source_is_ingested_and_cached(tmp_path, monkeypatch, shared_data):
    monkeypatch.setenv("COLOSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    trace = shared_data / "google2019" / "instance_usage"
    Path("c.toml").write_text(CONFIG.format(kind="google2019", path=trace).replace("tasks = 30", "tasks = 19")
                              .replace("tasks = 20", "tasks = 10"))
    res = runner.invoke(app, ["sweep", "c.toml", "--out", "a.csv", "-q"])
    assert res.exit_code == 0, res.output
    assert len(list((tmp_path / "cache").glob("series-google2019-*.h5"))) == 1
    assert len(list((tmp_path / "cache").glob("google2019-*.h5"))) == 1
    assert runner.invoke(app, ["sweep", "c.toml", "--out", "b.csv", "-q"]).exit_code == 0
    assert Path("a.csv").read_bytes() == Path("b.csv").read_bytes()


def test_missing_source_path_is_an_input_error(tmp_path, monkeypatch):
    monkeypatch.setenv("COLOSIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    Path("c.toml").write_text(CONFIG.format(kind="google2011", path="nowhere"))
    res = runner.invoke(app, ["sweep", "c.toml", "--out", "a.csv"])
    assert res.exit_code == 2 and "nowhere" in res.output and "not found" in res.output


def test_a_closed_store_never_crashes(tmp_path):
    """Arrays taken from a store stay valid after close (run in a child
    process, so that a crash would show as its exit code), and rows() of a
    closed store is an error naming it."""
    import subprocess
    import sys

    from .conftest import write_random_store

    write_random_store(tmp_path / "s.h5", 20, 30)
    code = ("import colosim, sys\n"
            f"with colosim.open_store({str(tmp_path / 's.h5')!r}) as s:\n    x = s.x\n"
            "print(float(x.sum()), float(s.x[3].sum()))\n"
            "try:\n    s.rows([0])\nexcept colosim.InputError as e:\n    print('error:', e)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "the store is closed" in run.stdout and "s.h5" in run.stdout
