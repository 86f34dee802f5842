"""colosim.run against the naive reference (tests/naive.py) on the same
1,000 × 10,000 instance, after JIT warm-up; prints seconds and ratios.

    python benchmarks/bench_run.py [--tasks 1000] [--realizations 10000] [--store STORE.h5]

Without --store the instance is a seeded random one of about 27 CPU in total
(the paper's 1,000-task instances); with --store it is instance 0 of the
store (SPEC §6, seed 1).
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import colosim  # noqa: E402
from tests import naive  # noqa: E402

ESTIMATORS = ["gpa:0.1", "gpa:0.05", "gpa:0.01", "gpa:0.001", "av:1", "av:1.25", "av:2",
              "perc:50", "perc:70", "perc:90", "perc:95", "perc:99", "max",
              "cantelli:1", "cantelli:1.7", "cantelli:4.4"]


def instance(args):
    if args.store:
        from colosim.runner.sweep import instance_rows

        with colosim.open_store(args.store) as s:
            idx = instance_rows(1, 0, s.n_tasks, args.tasks)
            return s.rows(idx, "x")[:, : args.realizations], s.rows(idx, "y")[:, : args.realizations]
    rng = np.random.default_rng(2017)
    mean = rng.gamma(0.6, 0.045, size=(args.tasks, 1))
    x = (mean * rng.gamma(2.0, 0.5, size=(args.tasks, args.realizations))).astype(np.float32)
    return x, x


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--realizations", type=int, default=10000)
    ap.add_argument("--store")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    x, y = instance(args)
    print(f"instance {x.shape}, total mean usage {x.astype(np.float64).mean(axis=1).sum():.2f}; "
          f"{platform.processor() or platform.machine()}, "
          f"numba {colosim.kernels.__name__ and __import__('numba').__version__}, "
          f"numpy {np.__version__}, threads {__import__('numba').get_num_threads()}")
    colosim.run(x[:50, :100], y[:50, :100], "perc:90")  # JIT warm-up
    print(f"{'estimator':<14}{'naive s':>10}{'colosim s':>11}{'ratio':>9}  same result")
    ratios = []
    for spec in ESTIMATORS:
        fast = best_of(lambda spec=spec: colosim.run(x, y, spec), args.repeat)
        t0 = time.perf_counter()
        want = naive.run(x, y, spec)
        slow = time.perf_counter() - t0
        got = colosim.run(x, y, spec)
        same = np.array_equal(got.assign, want["assign"]) and np.array_equal(got.counts, want["counts"])
        ratios.append(slow / fast)
        print(f"{spec:<14}{slow:>10.3f}{fast:>11.4f}{slow / fast:>9.1f}  {same}")
    print(f"geometric mean ratio: {math.exp(np.mean(np.log(ratios))):.1f}")


if __name__ == "__main__":
    main()
