"""Bad input everywhere gives an input error and changes nothing; results do
not depend on the number of Numba threads."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from colosim.config import parse_config
from colosim.errors import InputError

from .conftest import write_random_store

toml_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=True)
    | st.text(max_size=12) | st.sampled_from(["gpa:0.01", "av:1", "best-fit", "inst", "synthetic", "store"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["kind", "path", "tasks", "seed", "count", "estimator", "capacity", "clairvoyance",
                         "data", "rebalance", "headroom", "algorithm", "realizations", "sampling", "x"]),
        inner, max_size=5),
    max_leaves=12,
)
configs = st.dictionaries(st.sampled_from(["source", "instances", "grid", "output", "extra"]), toml_values, max_size=4)


@given(raw=configs)
def test_config_loader_fuzz_only_input_errors(raw):
    # anything a TOML file can hold: a valid config or an InputError, nothing else
    try:
        cfg = parse_config(raw, Path("fuzz.toml"))
    except InputError as exc:
        assert "fuzz.toml" in str(exc) and "\n" not in str(exc)
    else:
        assert cfg.points()


def test_results_identical_with_one_and_two_numba_threads(tmp_path):
    write_random_store(tmp_path / "store.h5", 200, 2000, seed=4)
    (tmp_path / "c.toml").write_text(
        '[source]\nkind = "store"\npath = "store.h5"\n[instances]\ncount = 2\ntasks = 150\nseed = 9\n'
        '[grid]\nestimator = ["gpa:0.01", "perc:95", "cantelli:1"]\nclairvoyance = [0.1, 1.0]\n'
        'data = ["inst", "avg"]\nrebalance = [true, false]\n')
    outputs = []
    for threads in ("1", "2"):
        env = {**os.environ, "NUMBA_NUM_THREADS": threads,
               "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        out = tmp_path / f"r{threads}.csv"
        done = subprocess.run([sys.executable, "-m", "colosim", "sweep", "c.toml", "--out", str(out), "-q"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
