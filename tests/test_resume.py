"""Interrupted sweeps resume; Dask gives the local backend's bytes."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import colosim.runner.sweep as sweep_module
from colosim.cli import app
from colosim.config import load_config

from .conftest import write_random_store

CONFIG = """
[source]
kind = "store"
path = "store.h5"

[instances]
count = 6
tasks = 40
seed = 3

[grid]
estimator = ["gpa:0.05", "av:1.25", "perc:95"]
algorithm = ["first-fit", "best-fit"]
clairvoyance = [0.5, 1.0]
rebalance = [true, false]
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    write_random_store(tmp_path / "store.h5", 150, 300, seed=1)
    (tmp_path / "sweep.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def reference(workdir):
    cfg = load_config(workdir / "sweep.toml")
    out = workdir / "reference.csv"
    sweep_module.sweep(cfg, workdir / "store.h5", out)
    return out.read_bytes()


def test_interrupted_sweep_resumes_with_only_the_missing_instances(workdir, monkeypatch):
    want = reference(workdir)
    cfg = load_config(workdir / "sweep.toml")
    out = workdir / "r.csv"
    calls = []
    interrupt_at = [2]  # instance 2 is interrupted, whichever order the units run in
    real = sweep_module.instance_results

    def counting(config, store, k):
        calls.append(k)
        if k == interrupt_at[0]:
            raise KeyboardInterrupt
        return real(config, store, k)

    monkeypatch.setattr(sweep_module, "instance_results", counting)
    with pytest.raises(sweep_module.Interrupted) as info:
        sweep_module.sweep(cfg, workdir / "store.h5", out)
    # the two units in flight when unit 2 was interrupted are both finished
    # (a third may have started beside them when they completed together)
    parts = sorted(int(p.stem.split("-")[1]) for p in (workdir / "r.csv.parts").glob("instance-*.csv"))
    assert info.value.done == len(parts) and {0, 1} <= set(parts) and 2 not in parts and not out.exists()
    calls.clear()
    interrupt_at[0] = None
    result = sweep_module.sweep(cfg, workdir / "store.h5", out)
    assert sorted(calls) == [k for k in range(6) if k not in parts] and result.computed
    assert out.read_bytes() == want
    assert not (workdir / "r.csv.parts").exists()


def test_ctrl_c_exits_130_and_says_how_to_resume(workdir, monkeypatch):
    def interrupt(config, store, k):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "instance_results", interrupt)
    res = CliRunner().invoke(app, ["sweep", "sweep.toml", "--out", "r.csv"])
    assert res.exit_code == 130
    assert "run the same command again to resume" in res.output


def test_checkpoints_of_another_config_are_not_mixed(workdir, monkeypatch):
    cfg = load_config(workdir / "sweep.toml")
    parts = workdir / "r.csv.parts"
    parts.mkdir()
    (parts / "fingerprint").write_text("something else\n")
    (parts / "instance-000000.csv").write_text("junk\n")
    with pytest.raises(ValueError, match="checkpoints of another config"):
        sweep_module.sweep(cfg, workdir / "store.h5", workdir / "r.csv")
    assert (parts / "instance-000000.csv").read_text() == "junk\n"
    sweep_module.sweep(cfg, workdir / "store.h5", workdir / "r.csv", force=True)
    assert (workdir / "r.csv").read_bytes() == reference(workdir)


def test_sigkill_at_any_moment_then_rerun_equals_uninterrupted(workdir):
    want = reference(workdir)
    (workdir / "big.toml").write_text(CONFIG.replace("count = 6", "count = 40"))
    cfg = load_config(workdir / "big.toml")
    sweep_module.sweep(cfg, workdir / "store.h5", workdir / "big-ref.csv")
    want = (workdir / "big-ref.csv").read_bytes()
    cmd = [sys.executable, "-m", "colosim", "sweep", "big.toml", "--out", "k.csv", "-q"]
    env = {**os.environ, "PYTHONPATH": str(Path(sweep_module.__file__).resolve().parents[1])}
    kills = 0
    for delay in (0.0, 0.5, 1.5):  # before, during and later in the run
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            parts = list((workdir / "k.csv.parts").glob("instance-*")) if (workdir / "k.csv.parts").exists() else []
            if len(parts) >= 1:
                time.sleep(delay)
                break
            time.sleep(0.02)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
    # no partial results file ever appears under the final name
    assert not (workdir / "k.csv").exists() or (workdir / "k.csv").read_bytes() == want
    done = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert (workdir / "k.csv").read_bytes() == want
    assert kills >= 1


def test_dask_local_cluster_gives_identical_bytes(workdir):
    pytest.importorskip("dask.distributed")
    want = reference(workdir)
    cfg = load_config(workdir / "sweep.toml")
    sweep_module.sweep(cfg, workdir / "store.h5", workdir / "d.csv", backend="dask")
    assert (workdir / "d.csv").read_bytes() == want


def test_unreachable_scheduler_is_an_input_error(workdir, monkeypatch):
    pytest.importorskip("dask.distributed")
    import colosim.runner.backends

    monkeypatch.setattr(colosim.runner.backends, "CONNECT_TIMEOUT", "1s")
    res = CliRunner().invoke(app, ["sweep", "sweep.toml", "--out", "x.csv", "--backend", "dask",
                                   "--scheduler", "tcp://127.0.0.1:9"])
    assert res.exit_code == 2 and "--scheduler tcp://127.0.0.1:9" in res.output


def test_real_sigint_checkpoints_the_running_instance_and_exits_130(workdir):
    # a real Ctrl-C reaches the process while a compiled kernel runs: the
    # instance in progress is finished and checkpointed, then exit 130
    (workdir / "big.toml").write_text(CONFIG.replace("count = 6", "count = 40"))
    cfg = load_config(workdir / "big.toml")
    sweep_module.sweep(cfg, workdir / "store.h5", workdir / "ref.csv")
    cmd = [sys.executable, "-m", "colosim", "sweep", "big.toml", "--out", "i.csv", "-q"]
    env = {**os.environ, "PYTHONPATH": str(Path(sweep_module.__file__).resolve().parents[1])}
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    parts = workdir / "i.csv.parts"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not list(parts.glob("instance-*")):
        time.sleep(0.02)
    if proc.poll() is not None:
        pytest.skip("the sweep finished before it could be interrupted")
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err
    done = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, timeout=300)
    assert done.returncode == 0
    assert (workdir / "i.csv").read_bytes() == (workdir / "ref.csv").read_bytes()
