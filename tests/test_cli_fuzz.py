"""The command line driven with random option values (Hypothesis): whatever
the values, the exit code is 0 or 2; on 2 stderr is one ``error:`` line and
no file was created or changed; without ``--force`` no existing file is ever
changed; an input is never changed, with or without ``--force``."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from colosim.cli import app
from colosim.io.outputs import LOCK_SUFFIX

from .conftest import write_random_store

runner = CliRunner()

SWEEP = """
[source]
kind = "store"
path = "store.h5"

[instances]
count = 2
tasks = 8
seed = 1

[grid]
estimator = ["gpa:0.01", "av:1.25"]
"""

PLAN = SWEEP.replace('estimator = ["gpa:0.01", "av:1.25"]', "").replace("count = 2", "count = 4")

#: the files every run starts with; none of them may change as an input
INPUTS = ("store.h5", "series.h5", "sweep.toml", "plan.toml", "a.csv", "a.csv.json", "a.csv.summary.csv",
          "notes.txt")


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A folder with a tiny store, series file, configs and results."""
    from colosim.io.series import write_series

    folder = tmp_path_factory.mktemp("fuzz")
    write_random_store(folder / "store.h5", 24, 40, seed=2)
    n, per = 6, 30
    inst = np.random.default_rng(0).uniform(0, 0.2, n * per).astype(np.float32)
    write_series(folder / "series.h5", task_id=np.stack([np.arange(n), np.zeros(n, int)], 1),
                 offsets=np.arange(0, n * per + 1, per), inst=inst, avg=inst * 0.9,
                 start_time=np.arange(n * per, dtype=np.int64) * 300_000_000, source={}, filters={})
    (folder / "sweep.toml").write_text(SWEEP)
    (folder / "plan.toml").write_text(PLAN)
    (folder / "notes.txt").write_text("mine\n")
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        res = runner.invoke(app, ["sweep", "sweep.toml", "--out", "a.csv", "-q"])
    finally:
        os.chdir(cwd)
    assert res.exit_code == 0, res.output
    return folder


PATHS = st.sampled_from(["store.h5", "series.h5", "sweep.toml", "plan.toml", "a.csv", "a.csv.json",
                         "a.csv.summary.csv", "notes.txt", "new.csv", "new.h5", "out", "sub/x.csv",
                         "notes.txt/x", "", ".", "missing.h5", "/dev/null", "link.h5"])
INTS = st.one_of(st.integers(-2, 30), st.sampled_from([2**31, 2**63, 10**9, 10**12]))
WORDS = st.sampled_from(["0.99", "0.5", "abc", "1e-300", "nan", "inf", "-1", "0", "1", "", "local", "dask",
                         "foo", "tcp://host:99999", "independent", "paired", "time-aligned", "gpa:0.01", "7"])
FLAGS = st.sampled_from(["--force", "--quiet", "--per-machine", "--no-verify", "--check-source", "--wait"])
NUMBER = st.one_of(INTS.map(str), WORDS)


def mix(good, bad=None) -> st.SearchStrategy:
    """Mostly a valid value (so that the successful paths are reached too),
    sometimes a hostile one."""
    good = good if isinstance(good, st.SearchStrategy) else st.sampled_from(list(good))
    return st.one_of(good, good, good, good, good, NUMBER if bad is None else bad)


def small(lo, hi):
    return mix(st.integers(lo, hi).map(str))


def options(names: dict, required=()) -> st.SearchStrategy:
    """The ``required`` options and some of the others of ``names`` (option
    -> value strategy, None for a flag), in a random order, each with a drawn
    value; a required option is left out now and then."""
    def pieces(chosen):
        return st.tuples(*[st.just([k]) if names[k] is None else names[k].map(lambda v, k=k: [k, str(v)])
                           for k in chosen]).map(lambda ps: [x for p in ps for x in p])

    def chosen(drawn):
        keep, extra = drawn
        return [k for k, kept in zip(required, keep) if kept] + [k for k in extra if k not in required]
    return st.tuples(st.lists(st.sampled_from([True] * 19 + [False]), min_size=len(required),
                              max_size=len(required)),
                     st.lists(st.sampled_from(sorted(names)), unique=True, max_size=len(names))
                     ).map(chosen).flatmap(st.permutations).flatmap(pieces)


def command(name, positional, names, required=()):
    return st.tuples(st.just([name]), positional, options(names, required)).map(lambda t: t[0] + t[1] + t[2])


def one(good):
    return st.lists(mix(good, PATHS), min_size=1, max_size=1)


SAMPLING = mix(["independent", "paired", "time-aligned"])
COMMANDS = st.one_of(
    command("generate", st.just([]), {"--out": mix(["new.h5"], PATHS), "--tasks": small(1, 30),
                                      "--realizations": small(2, 40), "--seed": small(0, 5), "--sampling": SAMPLING,
                                      "--force": None, "--daily-amplitude": mix(["0", "0.3"])},
            required=("--out", "--tasks", "--realizations", "--seed")),
    command("realize", one(["series.h5"]),
            {"--out": mix(["new.h5"], PATHS), "--tasks": small(1, 6), "--realizations": small(1, 40),
             "--seed": small(0, 5), "--sampling": SAMPLING, "--threads": small(1, 2), "--force": None},
            required=("--out", "--tasks", "--realizations", "--seed")),
    command("sweep", one(["sweep.toml"]),
            {"--out": mix(["new.csv"], PATHS), "--force": None, "--quiet": None, "--backend": mix(["local"]),
             "--scheduler": WORDS, "--workers": small(1, 2)}, required=("--out",)),
    command("plan", one(["plan.toml"]), {"--out": mix(["out"], PATHS), "--slo": mix(["0.9", "0.99"]),
                                         "--force": None, "--per-machine": None},
            required=("--out", "--slo")),
    command("compare", st.lists(mix(["a.csv"], PATHS), min_size=2, max_size=2),
            {"--out": mix(["cmp.csv"], PATHS), "--force": None}),
    command("plot", one(["a.csv"]), {"--out": mix(["figs"], PATHS), "--figure": small(7, 13), "--force": None},
            required=("--out", "--figure")),
    command("info", one(["store.h5", "series.h5"]), {"--no-verify": None, "--check-source": None}),
    command("synth-trace", st.just([]), {"--out": mix(["trace"], PATHS), "--tasks": small(1, 4),
                                         "--days": small(1, 2), "--seed": small(0, 5)},
            required=("--out", "--tasks", "--seed")),
    st.lists(st.one_of(PATHS, WORDS, FLAGS), max_size=4).map(lambda xs: ["sweep", *xs]),
)


def snapshot(folder: Path) -> dict:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.name.endswith(LOCK_SUFFIX) or "cache" in p.relative_to(folder).parts:
            continue
        out[str(p.relative_to(folder))] = None if p.is_dir() else p.read_bytes()
    return out


def _too_big(args: list[str]) -> bool:
    """Valid runs that would take long: a large synthetic trace, or a store
    of the default (paper) size."""
    def value(opt):
        return int(args[args.index(opt) + 1]) if opt in args and args[args.index(opt) + 1].isdigit() else 0
    if args[0] == "generate":
        return "--tasks" not in args or "--realizations" not in args
    return args[0] == "synth-trace" and value("--tasks") * max(value("--days"), 1) > 200


@settings(max_examples=200)
@given(args=COMMANDS)
def test_random_options_exit_0_or_2_and_2_writes_nothing(template, args):
    assume(not _too_big(args))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "w"
        shutil.copytree(template, work)
        os.symlink("store.h5", work / "link.h5")
        cwd = os.getcwd()
        os.chdir(work)
        old_cache = os.environ.get("COLOSIM_CACHE")
        os.environ["COLOSIM_CACHE"] = str(work / "cache")
        try:
            before = snapshot(work)
            res = runner.invoke(app, args)
            after = snapshot(work)
        finally:
            os.chdir(cwd)
            if old_cache is None:
                os.environ.pop("COLOSIM_CACHE", None)
            else:
                os.environ["COLOSIM_CACHE"] = old_cache
    event(f"{args[0]} exit {res.exit_code}")
    assert res.exit_code in (0, 2), (args, res.exit_code, res.output, res.exception)
    if res.exit_code == 2:
        lines = res.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, res.stderr)
        assert after == before, (args, sorted(set(after) ^ set(before)))
    for name in INPUTS:
        assert after.get(name) == before[name], (args, name)
    if "--force" not in args and args[0] != "plan":
        changed = [k for k in before if before[k] is not None and after.get(k) != before[k]]
        assert not changed, (args, changed)
