"""Run time of the estimators of docs/estimators.md beside GPA on one instance of
the paper's size, after JIT warm-up; prints seconds and the ratio to GPA.

    python benchmarks/bench_estimators.py [--tasks 1000] [--realizations 10000] [--store STORE.h5]

Without --store the instance is instance 0 of the built-in population (its
first ``--tasks`` × 20 tasks realized in memory); with --store it is
instance 0 of the store (SPEC §6, seed 1).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from colosim.engine import instance_metrics
from colosim.model.grid import GridPoint  # noqa: E402

SPECS = ["gpa:0.001", "emp:0.001", "nsigma:3", "effsize:0.001", "hoeffding:0.001", "gpa-cal:0.001"]
SETTINGS = [("best-fit", 1.0, 1.0), ("best-fit", 0.1, 1.0), ("best-fit-decreasing", 1.0, 1.0),
            ("best-fit", 1.0, "1:0.5,0.5:0.5")]


def instance(args):
    from colosim.io import open_store
    from colosim.runner.sweep import instance_rows

    if args.store:
        path = Path(args.store)
    else:
        from colosim.sources.resolve import generate_synthetic_store

        path = Path(tempfile.mkdtemp()) / "store.h5"
        generate_synthetic_store(path, n_tasks=args.tasks * 20, n_realizations=args.realizations, seed=2017)
    with open_store(path) as s:
        return s.rows(instance_rows(1, 0, s.n_tasks, args.tasks), "x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--realizations", type=int, default=10000)
    ap.add_argument("--store")
    args = ap.parse_args()
    x = instance(args)
    instance_metrics(x[:50, :200], None, [GridPoint.make(s, a, c, cl) for s in SPECS for a, cl, c in SETTINGS])
    print(f"instance: {x.shape[0]} tasks × {x.shape[1]} realizations")
    print(f"{'estimator':<16} {'algorithm':<20} {'capacity':<14} {'clairv.':>7} {'m_abs':>5} {'q':>9} "
          f"{'seconds':>8} {'× gpa':>6}")
    for algorithm, clairvoyance, capacity in SETTINGS:
        base = None
        for spec in SPECS:
            p = GridPoint.make(spec, algorithm, capacity, clairvoyance)
            t0 = time.perf_counter()
            met = instance_metrics(x, None, [p])[0]
            dt = time.perf_counter() - t0
            base = dt if base is None else base
            print(f"{spec:<16} {algorithm:<20} {str(capacity):<14} {clairvoyance:>7g} {met.m_abs:>5} "
                  f"{met.q:>9.2e} {dt:>8.2f} {dt / base:>6.1f}")


if __name__ == "__main__":
    main()
