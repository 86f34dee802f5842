"""A hostile user's cases: every promise of SPEC §11 kept.

Bad input exits 2 with one line naming the culprit and creates nothing; no
existing file is replaced without --force, never one of another kind, never
an input; checkpoints and finished results prove themselves; one run at a
time writes an output; temporaries of a killed run are removed by the next
run; interruption exits 130. (ingest: test_hostile_ingest.py; info and
plot: test_hostile_info_plot.py.)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from colosim.cli import app
from colosim.errors import InputError
from colosim.io import checkpoints, outputs, results
from colosim.io.store import open_store
from colosim.runner import sweep as sweep_module
from colosim.terminal import STEP_LINE

from .conftest import write_random_store

runner = CliRunner()

CONFIG = """
[source]
kind = "store"
path = "store.h5"

[instances]
count = 4
tasks = 30
seed = 5

[grid]
estimator = ["gpa:0.01", "av:1.25"]
clairvoyance = [0.5, 1.0]
"""

ENV = {**os.environ, "PYTHONPATH": str(Path(sweep_module.__file__).resolve().parents[2])}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    write_random_store(tmp_path / "store.h5", 60, 200, seed=3)
    (tmp_path / "sweep.toml").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLOSIM_CACHE", str(tmp_path / "cache"))
    return tmp_path


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def snapshot(folder: Path) -> dict:
    """Every file under ``folder`` with its bytes (folders as None)."""
    out = {}
    for p in sorted(Path(folder).rglob("*")):
        out[str(p.relative_to(folder))] = p.read_bytes() if p.is_file() else p.lstat().st_mode
    return out


def refused(res, *words) -> str:
    """The one error line of a run that exited 2 (each of ``words`` in it)."""
    lines = [line for line in res.stderr.splitlines() if not STEP_LINE.fullmatch(line)]  # steps done before
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def reference(workdir) -> bytes:
    ref = workdir / "ref.csv"
    if not ref.exists():
        assert invoke("sweep", "sweep.toml", "--out", ref, "-q").exit_code == 0
    return ref.read_bytes()


# ----------------------------------------------------- 1, 2: outputs and inputs


def test_realize_onto_its_series_and_sweep_force_onto_its_inputs_are_refused(workdir):
    from colosim.io.series import write_series

    n, per = 4, 30
    rng = np.random.default_rng(0)
    inst = rng.uniform(0, 0.2, n * per).astype(np.float32)
    write_series(workdir / "s.h5", task_id=np.stack([np.arange(n), np.zeros(n, int)], 1),
                 offsets=np.arange(0, n * per + 1, per), inst=inst, avg=inst * 0.9,
                 start_time=np.arange(n * per, dtype=np.int64) * 300_000_000, source={}, filters={})
    before = snapshot(workdir)
    refused(invoke("realize", "s.h5", "--out", "s.h5", "--tasks", 2, "--realizations", 5, "--seed", 1),
            "--out s.h5", "is the input")
    os.symlink("s.h5", workdir / "link.h5")
    before["link.h5"] = (workdir / "link.h5").read_bytes()
    refused(invoke("realize", "s.h5", "--out", "link.h5", "--tasks", 2, "--realizations", 5, "--seed", 1,
                   "--force"), "is the input")
    for target in ("store.h5", "sweep.toml"):
        refused(invoke("sweep", "sweep.toml", "--out", target, "--force"), target)
    assert snapshot(workdir) == before
    # --force replaces a store with a store, and nothing else
    (workdir / "notes.txt").write_text("mine")
    refused(invoke("generate", "--out", "notes.txt", "--tasks", 5, "--realizations", 4, "--force"),
            "not a colosim store")
    refused(invoke("realize", "s.h5", "--out", "sweep.toml", "--tasks", 2, "--realizations", 5, "--seed", 1,
                   "--force"), "not a colosim store")
    refused(invoke("sweep", "sweep.toml", "--out", "notes.txt", "--force"), "not a colosim results table")
    assert (workdir / "notes.txt").read_text() == "mine"
    assert invoke("realize", "s.h5", "--out", "r.h5", "--tasks", 2, "--realizations", 5, "--seed", 1).exit_code == 0
    refused(invoke("realize", "s.h5", "--out", "r.h5", "--tasks", 2, "--realizations", 5, "--seed", 1),
            "exists; pass --force")
    assert invoke("realize", "s.h5", "--out", "r.h5", "--tasks", 3, "--realizations", 5, "--seed", 1,
                  "--force").exit_code == 0


def test_an_out_below_a_file_or_a_sidecar_of_another_kind(workdir):
    before = snapshot(workdir)
    refused(invoke("sweep", "sweep.toml", "--out", "sweep.toml/r.csv"), "is not a directory")
    refused(invoke("generate", "--out", "store.h5/s.h5", "--tasks", 5, "--realizations", 4), "is not a directory")
    assert snapshot(workdir) == before
    (workdir / "r.csv.json").write_text("[1, 2]")
    refused(invoke("sweep", "sweep.toml", "--out", "r.csv", "--force"), "r.csv.json", "not a colosim results sidecar")
    (workdir / "r.csv.json").unlink()
    (workdir / "r.csv.parts").mkdir()
    (workdir / "r.csv.parts" / "thesis.tex").write_text("mine")
    refused(invoke("sweep", "sweep.toml", "--out", "r.csv", "--force"), "not a checkpoint folder")
    assert (workdir / "r.csv.parts" / "thesis.tex").read_text() == "mine"


def test_the_same_inputs_give_the_same_store_bytes(workdir):
    for name in ("a.h5", "b.h5"):
        assert invoke("generate", "--out", name, "--tasks", 6, "--realizations", 8, "--seed", 4).exit_code == 0
        time.sleep(1.1)  # HDF5 object times have a resolution of a second
    assert (workdir / "a.h5").read_bytes() == (workdir / "b.h5").read_bytes()


# ------------------------------------------------ 3, 4: parts and results prove themselves


def _interrupted_parts(workdir, monkeypatch, after: int) -> Path:
    """Run the sweep into r.csv until ``after`` instances are checkpointed."""
    real = sweep_module.instance_results
    calls = []

    def stopping(config, store, k):
        calls.append(k)
        if len(calls) > after:
            raise KeyboardInterrupt
        return real(config, store, k)

    monkeypatch.setattr(sweep_module, "instance_results", stopping)
    assert invoke("sweep", "sweep.toml", "--out", "r.csv", "-q").exit_code == 130
    monkeypatch.setattr(sweep_module, "instance_results", real)
    return workdir / "r.csv.parts"


@pytest.mark.parametrize("damage", ["edited", "truncated", "duplicated", "garbage", "no record", "foreign record"])
def test_a_damaged_checkpoint_is_computed_again_never_merged(workdir, monkeypatch, damage):
    want = reference(workdir)
    parts = _interrupted_parts(workdir, monkeypatch, after=3)
    p1 = checkpoints.part_path(parts, 1)
    text = p1.read_text()
    if damage == "edited":  # one m_abs changed
        first = text.splitlines()[0].split(",")
        at = results.COLUMNS.index("m_abs")
        first[at] = str(int(first[at]) + 1)
        p1.write_text(",".join(first) + "\n" + text.split("\n", 1)[1])
    elif damage == "truncated":
        p1.write_text(text[: len(text) // 2])
    elif damage == "duplicated":  # instance 0's part and record copied over instance 1's
        shutil.copy(checkpoints.part_path(parts, 0), p1)
        shutil.copy(checkpoints.record_path(parts, 0), checkpoints.record_path(parts, 1))
    elif damage == "garbage":
        p1.write_bytes(b"\x00\xff garbage\n")
    elif damage == "no record":
        checkpoints.record_path(parts, 1).unlink()
    else:  # a record that matches the part but belongs to another run
        rec = json.loads(checkpoints.record_path(parts, 1).read_text())
        checkpoints.record_path(parts, 1).write_text(json.dumps({**rec, "fingerprint": "0" * 64}))
    calls = []
    real = sweep_module.instance_results
    monkeypatch.setattr(sweep_module, "instance_results", lambda c, s, k: calls.append(k) or real(c, s, k))
    res = invoke("sweep", "sweep.toml", "--out", "r.csv", "-q")
    assert res.exit_code == 0, res.output
    assert "did not match their record" in res.stderr and "instances 1" in res.stderr
    assert sorted(calls) == [1, 3]
    assert (workdir / "r.csv").read_bytes() == want


def test_a_part_changed_while_the_sweep_runs_never_reaches_the_results(workdir, monkeypatch):
    parts = _interrupted_parts(workdir, monkeypatch, after=2)
    real = sweep_module.instance_results

    def tamper(config, store, k):  # the last instance: damage an earlier part meanwhile
        if k == 3:
            checkpoints.part_path(parts, 0).write_text("0,junk\n")
        return real(config, store, k)

    monkeypatch.setattr(sweep_module, "instance_results", tamper)
    refused(invoke("sweep", "sweep.toml", "--out", "r.csv", "-q"), "instance-000000.csv", "changed while")
    assert not (workdir / "r.csv").exists()


@pytest.mark.parametrize("cut", ["a line", "most lines", "a byte"])
def test_a_cut_or_edited_results_file_is_not_up_to_date(workdir, cut):
    want = reference(workdir)
    out = workdir / "ref.csv"
    lines = want.decode().splitlines(keepends=True)
    damaged = {"a line": "".join(lines[:-1]), "most lines": "".join(lines[: len(lines) // 4]),
               "a byte": want.decode().replace("gpa:0.01", "gpa:0.02", 1)}[cut]
    out.write_text(damaged)
    line = refused(invoke("sweep", "sweep.toml", "--out", out), "does not match the row count and checksum")
    assert "--force" in line and out.read_text() == damaged
    assert invoke("sweep", "sweep.toml", "--out", out, "--force", "-q").exit_code == 0
    assert out.read_bytes() == want
    res = invoke("sweep", "sweep.toml", "--out", out, "-q")
    assert res.exit_code == 0 and "up to date" in res.stderr


def test_results_sidecar_records_rows_and_checksum(workdir):
    reference(workdir)
    meta = results.read_meta(workdir / "ref.csv")
    assert meta["rows"] == 16 and meta["sha256"] == results.sha256_text_file(workdir / "ref.csv")


# --------------------------------------------------------------- 5: closed stores


def test_a_closed_store_fails_cleanly(workdir):
    with open_store(workdir / "store.h5") as store:
        x = store.x
    assert float(np.asarray(x[0, :3]).sum()) >= 0  # the array handed out stays valid
    with pytest.raises(InputError, match="store.h5"):
        store.rows(np.array([0]), "x")


# ------------------------------------------------------------------------- 6: lock


HOLD = """
import fcntl, os, sys, time
from colosim.io.outputs import lock
with lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    open(sys.argv[1] + ".released", "w").close()  # just before the lock goes
"""


def _holder(target: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(target), str(seconds)], env=ENV,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_run_on_one_output_says_who_holds_it_or_waits(workdir):
    proc = _holder(workdir / "r.csv", 30)
    try:
        before = snapshot(workdir)
        line = refused(invoke("sweep", "sweep.toml", "--out", "r.csv"), "being written by process", "--wait")
        assert str(proc.pid) in line
        assert snapshot(workdir) == before  # (the holder's lock file included)
        assert not (workdir / "r.csv.parts").exists()
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    proc = _holder(workdir / "w.csv", 1.5)
    res = invoke("sweep", "sweep.toml", "--out", "w.csv", "--wait", "-q")
    assert res.exit_code == 0, res.output
    assert (workdir / "w.csv.released").exists()  # it waited for the holder
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()
    assert (workdir / "w.csv").read_bytes() == reference(workdir)
    assert not outputs.lock_path(workdir / "w.csv").exists()  # released and removed


def test_a_lock_left_by_a_killed_run_does_not_block(workdir):
    proc = _holder(workdir / "r.csv", 30)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert outputs.lock_path(workdir / "r.csv").exists()  # the file stays, the lock went with the process
    assert invoke("sweep", "sweep.toml", "--out", "r.csv", "-q").exit_code == 0


# ---------------------------------------------------------- 8, 9: exit 2, not tracebacks


@pytest.mark.parametrize("line, words", [
    ('kind = ["store"]', ["source.kind"]),
    ("count = 9223372036854775807", ["instances.count must be <="]),
    ("tasks = 9223372036854775807", ["instances.tasks must be <="]),
    ("seed = -1", ["instances.seed must be >= 0"]),
])
def test_config_values_that_crashed_or_hung(workdir, line, words):
    key = line.split(" = ")[0]
    text = "\n".join(line if ln.startswith(key + " =") else ln for ln in CONFIG.splitlines())
    (workdir / "bad.toml").write_text(text)
    before = snapshot(workdir)
    refused(invoke("sweep", "bad.toml", "--out", "r.csv"), "bad.toml", *words)  # at once, no allocation
    assert snapshot(workdir) == before


@pytest.mark.parametrize("args, words", [
    (["realize", "store.h5", "--out", "x.h5", "--tasks", 2, "--realizations", 5, "--seed", -1], ["--seed"]),
    (["sweep", "sweep.toml", "--backend", "dask", "--scheduler", "not an address"], ["--scheduler"]),
    (["sweep", "sweep.toml", "--backend", "dask", "--scheduler", "tcp://host:99999"], ["--scheduler"]),
    (["sweep", "sweep.toml", "--scheduler", "tcp://host:8786"], ["--scheduler", "--backend dask"]),
    (["sweep", "sweep.toml", "--backend", "foo"], ["--backend"]),
    (["generate", "--out", "huge.h5", "--tasks", 100_000_000, "--realizations", 10_000_000], ["of disk"]),
    (["generate", "--out", "huge.h5", "--tasks", 10**9], ["--tasks"]),
    (["characterize", "--synthetic", 30, "--store-tasks", 0, "--out", "c"], ["--store-tasks"]),
    (["characterize", "--synthetic", 30, "--store-tasks", 90_000_000, "--out", "c"], ["of memory"]),
    (["plan", "sweep.toml", "--slo", "1e-300", "--out", "p"], ["--slo"]),
    (["compare", "store.h5", "store.h5"], ["store.h5"]),
    # found by test_cli_fuzz.py: a path through a file, an empty path, a FIFO
    (["compare", "sweep.toml/x", "sweep.toml/x"], ["sweep.toml/x"]),
    (["compare", "", ""], ["directory"]),
    (["plot", "fifo", "--out", "figs"], ["fifo", "not a regular file"]),
    (["info", "."], ["."]),
])
def test_options_that_crashed_or_wrote(workdir, args, words):
    os.mkfifo(workdir / "fifo")
    before = snapshot(workdir)
    refused(invoke(*args), *words)
    assert snapshot(workdir) == before


def test_violations_with_a_fleet_capacity_is_an_input_error(workdir):
    from colosim import api

    with open_store(workdir / "store.h5") as store:
        x = np.asarray(store.x[:10])
    with pytest.raises(InputError, match="capacity"):
        api.violations(x, [0] * 10, capacity="1:1")


# ------------------------------------------------------------- 11: errors write nothing


def test_an_unreachable_scheduler_leaves_no_checkpoints(workdir, monkeypatch):
    pytest.importorskip("dask.distributed")
    from colosim.runner import backends

    monkeypatch.setattr(backends, "CONNECT_TIMEOUT", "1s")
    before = snapshot(workdir)
    refused(invoke("sweep", "sweep.toml", "--out", "r.csv", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:9"),
            "--scheduler")
    assert snapshot(workdir) == before


def test_a_nan_row_reached_mid_sweep_leaves_nothing(workdir):
    x, y = write_random_store(workdir / "nan.h5", 60, 200, seed=3)
    with open_store(workdir / "nan.h5") as store:
        offset = store.x.offset
    with open(workdir / "nan.h5", "r+b") as fh:  # every value of x's row 7 NaN, after the store was checked
        fh.seek(offset + 7 * 200 * 4)
        fh.write(np.full(200, np.nan, dtype=np.float32).tobytes())
    (workdir / "nan.toml").write_text(CONFIG.replace("store.h5", "nan.h5"))
    before = snapshot(workdir)
    res = invoke("sweep", "nan.toml", "--out", "r.csv")
    refused(res, "nan.h5", "row 7", "nan")
    assert snapshot(workdir) == before


def test_reproduce_over_another_scale_refuses_before_making_a_store(workdir):
    configs = workdir / "configs"
    configs.mkdir()
    (configs / "baseline.toml").write_text(
        '[source]\nkind = "synthetic"\ntasks = 80\nrealizations = 40\nseed = 1\n\n'
        "[instances]\ncount = 2\ntasks = 20\nseed = 1\n\n[grid]\nestimator = [\"gpa:0.01\"]\n")
    (workdir / "rep" / "results").mkdir(parents=True)
    (workdir / "rep" / "results" / "baseline.csv").write_text(",".join(results.COLUMNS) + "\n")
    before = snapshot(workdir)
    refused(invoke("reproduce", "--out", "rep", "--configs", "configs", "--scale", "tiny"),
            "baseline.csv", "another scale")
    assert snapshot(workdir) == before and not (workdir / "cache").exists()


# ------------------------------------------------- 12: temporaries, SIGTERM, SIGKILL


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_of_a_target_are_removed_live_ones_kept(workdir):
    dead = workdir / f".s.h5.{_dead_pid()}-0123abcd{outputs.TMP_SUFFIX}"
    dead.write_bytes(b"x" * 1000)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = workdir / f".s.h5.{sleeper.pid}-89abcdef{outputs.TMP_SUFFIX}"
        live.write_bytes(b"y")
        other = workdir / f".t.h5.{_dead_pid()}-0123abcd{outputs.TMP_SUFFIX}"
        other.write_bytes(b"z")
        assert invoke("generate", "--out", "s.h5", "--tasks", 5, "--realizations", 4).exit_code == 0
        assert not dead.exists() and live.exists() and other.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def _run_and_signal(args, workdir, sig, when) -> tuple[int, str]:
    proc = subprocess.Popen([sys.executable, "-m", "colosim", *map(str, args)], cwd=workdir, env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not when():
        time.sleep(0.02)
    time.sleep(0.2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode()


def _temps(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.endswith(outputs.TMP_SUFFIX)]


@pytest.mark.slow
def test_sigterm_exits_130_and_leaves_no_temporary(workdir):
    args = ["generate", "--out", "big.h5", "--tasks", 20000, "--realizations", 2000]
    code, err = _run_and_signal(args, workdir, signal.SIGTERM, lambda: _temps(workdir))
    assert code == 130 and err.strip().splitlines() == ["interrupted"], err
    assert not _temps(workdir) and not (workdir / "big.h5").exists()


@pytest.mark.slow
def test_sigterm_during_a_sweep_keeps_the_checkpoints_and_resumes(workdir):
    (workdir / "long.toml").write_text(CONFIG.replace("count = 4", "count = 600"))
    code, err = _run_and_signal(["sweep", "long.toml", "--out", "l.csv", "-q"], workdir, signal.SIGTERM,
                                lambda: list((workdir / "l.csv.parts").glob("instance-*.json"))
                                if (workdir / "l.csv.parts").exists() else [])
    assert code == 130 and "run the same command again" in err, err
    assert invoke("sweep", "long.toml", "--out", "l.csv", "-q").exit_code == 0


@pytest.mark.slow
def test_sigkill_leaves_a_temporary_the_next_run_removes(workdir):
    args = ["generate", "--out", "big.h5", "--tasks", 20000, "--realizations", 2000]
    code, _ = _run_and_signal(args, workdir, signal.SIGKILL, lambda: _temps(workdir))
    assert code == -signal.SIGKILL and _temps(workdir)
    assert invoke("generate", "--out", "big.h5", "--tasks", 5, "--realizations", 4).exit_code == 0
    assert not _temps(workdir)


# ------------------------------------- a second hostile pass (after the fixes)


@pytest.mark.parametrize("args", [
    ["realize", "fifo", "--out", "x.h5", "--tasks", 1, "--realizations", 5, "--seed", 1],
    ["sweep", "fifo", "--out", "z.csv"],
    ["sweep", "fifo.toml", "--out", "z.csv"],  # a config whose store is the FIFO
    ["characterize", "--synthetic", 30, "--out", "ch", "--store", "fifo"],
])
def test_a_fifo_as_an_input_is_refused_without_blocking(workdir, args):
    os.mkfifo(workdir / "fifo")
    (workdir / "fifo.toml").write_text(CONFIG.replace('path = "store.h5"', 'path = "fifo"'))
    before = snapshot(workdir)
    refused(invoke(*args), "fifo", "not a regular file")
    assert snapshot(workdir) == before
    with pytest.raises(InputError, match="not a regular file"):
        open_store(workdir / "fifo")


@pytest.mark.parametrize("length", [250, 300])
def test_an_output_name_too_long_for_its_lock_is_one_line(workdir, length):
    before = snapshot(workdir)
    refused(invoke("generate", "--out", "a" * length + ".h5", "--tasks", 5, "--realizations", 5), "file name")
    assert snapshot(workdir) == before


def test_plan_into_the_current_folder(workdir):
    (workdir / "plan.toml").write_text(CONFIG.replace('estimator = ["gpa:0.01", "av:1.25"]\n', "")
                                       .replace("clairvoyance = [0.5, 1.0]\n", ""))
    res = invoke("plan", "plan.toml", "--slo", "0.9", "--out", ".")
    assert res.exit_code == 0, res.output
    assert (workdir / "plan.csv").is_file()


def test_force_never_replaces_a_text_file_that_mentions_svg(workdir):
    reference(workdir)
    figs = workdir / "figs"
    figs.mkdir()
    notes = figs / "fig07_m_vs_q.svg"
    notes.write_text("# my notes: <svg> icons later\n")
    before = snapshot(workdir)
    refused(invoke("plot", "ref.csv", "--out", "figs", "--figure", 7, "--force"), "fig07_m_vs_q.svg",
            "not a SVG image")
    assert snapshot(workdir) == before


def test_synth_trace_removes_the_temporary_of_a_killed_run(workdir):
    stale = workdir / f".tr.{_dead_pid()}-0123abcd{outputs.TMP_SUFFIX}"
    stale.mkdir()
    (stale / "part-00000-of-00001.csv.gz").write_bytes(b"x" * 100)
    assert invoke("synth-trace", "--out", "tr", "--tasks", 3, "--days", 1, "--seed", 1).exit_code == 0
    assert not stale.exists() and (workdir / "tr" / "planted.json").is_file()
    assert not list(workdir.glob(f"*{outputs.TMP_SUFFIX}"))


@pytest.mark.parametrize("args, words", [
    (["synth-trace", "--out", "tr", "--tasks", 3, "--days", 100_000, "--seed", 1], ["--days", "open file"]),
    (["synth-trace", "--out", "tr", "--tasks", 99_999_999_999, "--days", 1, "--seed", 1], ["--tasks"]),
    (["characterize", "--synthetic", 30, "--out", "ch", "--sizes", "1:99999999999:1"], ["--sizes"]),
    (["generate", "--out", "g.h5", "--tasks", "1_0", "--realizations", 5], ["--tasks", "1_0"]),
    (["plan", "sweep.toml", "--slo", "0.9_9", "--out", "p"], ["--slo"]),
    (["generate", "--out", "g.h5", "--tasks", "\uff11", "--realizations", 5], ["--tasks"]),
])
def test_sizes_and_numbers_found_in_the_second_pass(workdir, args, words):
    before = snapshot(workdir)
    refused(invoke(*args), *words)
    assert snapshot(workdir) == before


def test_a_full_width_digit_is_not_a_number_in_a_config(workdir):
    (workdir / "w.toml").write_text(CONFIG.replace('"gpa:0.01"', '"gpa:\uff10.01"'))
    refused(invoke("sweep", "w.toml", "--out", "w.csv"), "w.toml", "is not a number")


def test_a_command_without_wait_does_not_offer_it(workdir):
    proc = _holder(workdir / "g.h5", 30)
    try:
        line = refused(invoke("generate", "--out", "g.h5", "--tasks", 5, "--realizations", 5),
                       "being written by process")
        assert "--wait" not in line
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_api_arguments_found_in_the_second_pass(workdir):
    import colosim

    x = np.ones((10, 4), dtype=np.float32)
    for assign in (np.full(10, 10**12), np.full(10, 2**63 - 1), np.full(10, 10)):
        with pytest.raises(InputError, match="assign"):
            colosim.violations(x, assign)
    with open_store(workdir / "store.h5") as store:
        for index, words in ((np.array([99]), "out of range"), (np.array([-1]), "out of range"),
                             (np.array([[0]]), "1-D"), ("a", "integer"), (np.array([0.5]), "integer")):
            with pytest.raises(InputError, match=words):
                store.rows(index)
        assert store.rows(np.array([], dtype=np.int64)).shape == (0, 200)
