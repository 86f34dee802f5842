"""Results do not depend on the number of Numba threads (SPEC §6): every
parallel kernel run with 1 and with 2 threads gives the same bits, in this
process and in a sweep run from the command line."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import colosim
from colosim.engine import instance_metrics
from colosim.kernels.anderson import nested_sum_statistics
from colosim.model.grid import GridPoint

from .conftest import numba_threads, random_usage, write_config, write_random_store

EXTRA = ("calibrated_rho", "m_abs_by_type", "q_by_type")


def test_engine_results_equal_with_one_and_two_threads():
    rng = np.random.default_rng(11)
    x = random_usage(rng, 300, 3000)
    points = [GridPoint.make(e, a, c, cl)
              for e in ("gpa:0.01", "perc:95", "emp:0.01", "effsize:0.01", "nsigma:2", "gpa-cal:0.01")
              for a in ("best-fit", "first-fit-decreasing")
              for c in (1.0, "1:0.5,0.5:0.5")
              for cl in (0.3, 1.0)]
    runs = []
    for threads in (1, 2):
        with numba_threads(threads):
            runs.append(instance_metrics(x, x, points))
    for one, two in zip(*runs):
        assert one.row(EXTRA) == two.row(EXTRA)
        np.testing.assert_array_equal(one.assign, two.assign)
        np.testing.assert_array_equal(one.counts, two.counts)


def test_nested_sums_equal_with_one_and_two_threads():
    g = np.random.default_rng(4)
    x = g.random((60, 500)).astype(np.float32)
    samples = np.stack([g.choice(60, 30, replace=False) for _ in range(9)])
    runs = []
    for threads in (1, 2):
        with numba_threads(threads):
            runs.append(nested_sum_statistics(x, samples, [10, 30]))
    for a, b in zip(*runs):
        assert np.array_equal(a, b, equal_nan=True)


def test_sweep_bytes_equal_with_one_and_two_threads(tmp_path):
    write_random_store(tmp_path / "store.h5", 200, 2000, seed=4)
    write_config(tmp_path, 'estimator = ["gpa:0.01", "perc:95", "cantelli:1", "emp:0.01", "gpa-cal:0.01"]\n'
                 'capacity = [1.0, "1:0.5,0.5:0.5"]\nclairvoyance = [0.1, 1.0]\ndata = ["inst", "avg"]\n'
                 'rebalance = [true, false]\n', count=2, tasks=150, seed=9)
    outputs = []
    for threads in ("1", "2"):
        env = {**os.environ, "NUMBA_NUM_THREADS": threads,
               "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        out = tmp_path / f"r{threads}.csv"
        check = "import numba, sys; sys.exit(numba.config.NUMBA_NUM_THREADS != int(sys.argv[1]))"
        assert subprocess.run([sys.executable, "-c", check, threads], env=env).returncode == 0
        done = subprocess.run([sys.executable, "-m", "colosim", "sweep", "c.toml", "--out", str(out), "-q"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]


def test_api_results_equal_with_one_and_two_threads():
    rng = np.random.default_rng(13)
    x = random_usage(rng, 200, 1500)
    runs = []
    for threads in (1, 2):
        with numba_threads(threads):
            runs.append([colosim.run(x, x, spec, "1:0.5,0.5:0.5", "best-fit-decreasing", 0.3)
                         for spec in ("emp:0.01", "effsize:0.01", "nsigma:2", "gpa-cal:0.01", "gpa:0.01")])
    for one, two in zip(*runs):
        np.testing.assert_array_equal(one.assign, two.assign)
        assert one.row(EXTRA) == two.row(EXTRA)
