"""`colosim plan`: the search, the held-out check against a sweep of the
chosen estimators, reuse, determinism and bad input."""

import csv

import numpy as np
import pytest
from typer.testing import CliRunner

from colosim.analysis.summary import summarize_point
from colosim.cli import app
from colosim.config import load_config
from colosim.runner.plan import LADDERS, PLAN_COLUMNS, plan, probe
from colosim.runner.sweep import read_results

from .conftest import write_config, write_random_store

runner = CliRunner()


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("COLOSIM_CACHE", str(tmp_path / "cache"))
    write_random_store(tmp_path / "store.h5", 300, 400, seed=3)
    write_config(tmp_path, 'algorithm = ["first-fit"]', count=6, tasks=40, name="plan.toml")
    return tmp_path


def _plan(folder, *args):
    return runner.invoke(app, ["plan", str(folder / "plan.toml"), *args])


def _table(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_plan_answers_and_its_held_out_numbers_are_a_sweep_s(folder):
    res = _plan(folder, "--slo", "0.95", "--out", str(folder / "p"))
    assert res.exit_code == 0, res.output
    assert "machines per 1,000 tasks" in res.output or "No family meets" in res.output
    rows = _table(folder / "p" / "plan.csv")
    assert tuple(rows[0]) == PLAN_COLUMNS
    assert sorted(r["family"] for r in rows) == sorted(LADDERS)
    meets = [r["meets"] == "true" for r in rows]
    assert meets == sorted(meets, reverse=True)  # meeting families first
    m_abs = [float(r["m_abs_mean"]) for r in rows if r["meets"] == "true"]
    assert m_abs == sorted(m_abs)  # cheapest first
    assert any(meets)
    assert (folder / "p" / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # the same estimators swept on all 6 instances: instances 3-5 are the held-out ones
    specs = [r["estimator"] for r in rows if r["family"] != "max"]
    grid = 'algorithm = ["first-fit"]\nestimator = [' + ", ".join(f'"{s}"' for s in specs) + "]"
    write_config(folder, grid, count=6, tasks=40, name="check.toml")
    sweep = runner.invoke(app, ["sweep", str(folder / "check.toml"), "--out", str(folder / "check.csv"), "-q"])
    assert sweep.exit_code == 0, sweep.output
    swept = read_results(folder / "check.csv")
    for r in rows:
        if r["family"] == "max":
            continue
        held = [s for s in swept if s["estimator"] == r["estimator"] and s["instance"] >= 3]
        assert len(held) == int(r["instances"]) == 3
        want = summarize_point(held, 400)
        for c in ("m_abs_mean", "m_abs_ci_low", "q_mean", "q_ci_low", "q_ci_high", "q_max_mean"):
            assert float(r[c]) == want[c], (r["estimator"], c)
        assert (r["meets"] == "true") == (want["q_ci_high"] <= 0.05 + 1e-12)


def test_search_stops_at_the_cheapest_value_meeting_on_training(folder, tmp_path):
    config = load_config(folder / "plan.toml")
    for per_machine in (False, True):
        result = plan(config, folder / "store.h5", tmp_path / f"out{per_machine}", 0.97, per_machine=per_machine)
        bound = "q_max_ci_high" if per_machine else "q_ci_high"
        for f in result.families:
            ladder = [probe(f.family, v, 1.0) for v in LADDERS[f.family][1]]
            tried = {p: s for p, s in f.tried}
            i = ladder.index(f.chosen)
            assert tried[f.chosen][bound] == f.trained_bound
            if f.trained_bound <= result.target and i > 0:
                # the next cheaper value was tried and missed on training
                assert tried[ladder[i - 1]][bound] > result.target
            elif f.trained_bound > result.target:
                assert i == len(ladder) - 1  # not even the most conservative meets
            assert f.meets == (f.held_out[bound] <= result.target)


def test_plans_are_deterministic_and_reuse_their_evaluations(folder):
    first = _plan(folder, "--slo", "0.95", "--out", str(folder / "a"))
    again = _plan(folder, "--slo", "0.95", "--out", str(folder / "b"))
    assert first.exit_code == again.exit_code == 0
    assert (folder / "a" / "plan.csv").read_bytes() == (folder / "b" / "plan.csv").read_bytes()
    assert "(0 evaluations computed" in again.output
    other = _plan(folder, "--slo", "0.9", "--per-machine", "--out", str(folder / "c"))
    assert other.exit_code == 0, other.output
    # a plan of another SLO is not written over without --force
    before = (folder / "a" / "plan.csv").read_bytes()
    refused = _plan(folder, "--slo", "0.9", "--out", str(folder / "a"))
    assert refused.exit_code == 2 and "--force" in refused.output
    assert (folder / "a" / "plan.csv").read_bytes() == before
    forced = _plan(folder, "--slo", "0.9", "--out", str(folder / "a"), "--force")
    assert forced.exit_code == 0 and (folder / "a" / "plan.csv").read_bytes() != before


def test_a_broken_cache_is_recomputed(folder):
    assert _plan(folder, "--slo", "0.95", "--out", str(folder / "a")).exit_code == 0
    for f in (folder / "cache" / "plans").glob("*.csv"):
        f.write_text("garbage\n")
    res = _plan(folder, "--slo", "0.95", "--out", str(folder / "b"))
    assert res.exit_code == 0, res.output
    assert (folder / "a" / "plan.csv").read_bytes() == (folder / "b" / "plan.csv").read_bytes()


@pytest.mark.parametrize("args, grid, count, message", [
    (["--slo", "1"], 'algorithm = ["first-fit"]', 6, "--slo must be a number in (0, 1)"),
    (["--slo", "0"], 'algorithm = ["first-fit"]', 6, "--slo must be a number in (0, 1)"),
    (["--slo", "-0.5"], 'algorithm = ["first-fit"]', 6, "--slo must be a number in (0, 1)"),
    (["--slo", "0.99"], 'capacity = [1.0, 0.5]', 6, "grid.capacity lists 2 values"),
    (["--slo", "0.99"], 'estimator = ["gpa:0.1", "av:1"]', 6, "grid.estimator lists 2 values"),
    (["--slo", "0.99"], 'algorithm = ["first-fit"]', 3, "plan needs at least 4"),
])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(folder, args, grid, count, message):
    write_config(folder, grid, count=count, tasks=40, name="plan.toml")
    res = _plan(folder, *args, "--out", str(folder / "out"))
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], res.output
    assert not (folder / "out").exists()
    assert not (folder / "cache" / "plans").exists()


def test_out_that_is_a_file_is_refused(folder):
    (folder / "taken").write_text("mine\n")
    res = _plan(folder, "--slo", "0.99", "--out", str(folder / "taken"))
    assert res.exit_code == 2 and "taken" in res.output
    assert (folder / "taken").read_text() == "mine\n"


def test_machines_share_meeting_counts_bins_within_the_target():
    from colosim.runner.plan import machines_share_meeting

    rows = [{"bin_violations": (0, 1, 5, 10)}, {"bin_violations": (0, 0)}]
    # |E| = 100, target 0.05: bins with at most 5 violations
    assert machines_share_meeting(rows, 0.05, 100) == pytest.approx(np.mean([3 / 4, 1.0]))


def test_files_at_out_that_are_not_this_plan_s_are_kept(folder):
    user = folder / "user"
    user.mkdir()
    (user / "frontier.png").write_text("my picture\n")
    res = _plan(folder, "--slo", "0.95", "--out", str(user))
    assert res.exit_code == 2 and "frontier.png" in res.output and "--force" in res.output
    assert (user / "frontier.png").read_text() == "my picture\n" and not (user / "plan.json").exists()
    # the config itself named like an output: never replaced, even with --force
    inputs = folder / "inputs"
    inputs.mkdir()
    (inputs / "plan.json").write_text((folder / "plan.toml").read_text().replace('"store.h5"', '"../store.h5"'))
    text = (inputs / "plan.json").read_text()
    res = runner.invoke(app, ["plan", str(inputs / "plan.json"), "--slo", "0.95", "--out", str(inputs), "--force"])
    assert res.exit_code == 2 and "is the input" in res.output
    assert (inputs / "plan.json").read_text() == text


def test_a_cache_with_values_out_of_their_domain_is_recomputed(folder):
    assert _plan(folder, "--slo", "0.95", "--out", str(folder / "a")).exit_code == 0
    for f in (folder / "cache" / "plans").glob("*.csv"):
        lines = f.read_text().splitlines()
        header = lines[0].split(",")
        q = header.index("q")
        edited = [",".join(v if i != q else "-1" for i, v in enumerate(line.split(","))) for line in lines[1:]]
        f.write_text("\n".join([lines[0], *edited]) + "\n")
    res = _plan(folder, "--slo", "0.95", "--out", str(folder / "b"))
    assert res.exit_code == 0, res.output
    assert (folder / "a" / "plan.csv").read_bytes() == (folder / "b" / "plan.csv").read_bytes()
