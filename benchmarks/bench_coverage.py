"""Coverage of the 95% interval of mean q (docs/spec.md, "Intervals"),
measured: many independent sweeps of K instances from one store; each
sweep's interval either holds the mean q over many more instances (the
truth) or not.

    python benchmarks/bench_coverage.py [--store STORE.h5] [--tasks 200] [--instances 10]
                                        [--sweeps 60] [--truth 1000] [--realizations 2000]

Without --store the store is the built-in population (``--tasks`` × 25
tasks, ``--realizations`` columns, seed 2017) realized into a temporary
file. Sweeps use instances ``s K .. s K + K - 1`` (seed 1); the truth uses
instances from 1,000,000 on, so no instance is shared. Prints, per
estimator, the truth, the coverage with its own 95% (Wilson) interval, the
median width of the interval and of Student's t interval.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from colosim.analysis.summary import summarize_point  # noqa: E402
from colosim.engine import instance_metrics  # noqa: E402
from colosim.io.results import GRID_KEYS  # noqa: E402
from colosim.model.grid import GridPoint  # noqa: E402
from colosim.model.intervals import mean_interval  # noqa: E402

SPECS = ["gpa:0.1", "gpa:0.01", "gpa:0.001", "cantelli:1", "cantelli:1.7", "av:1.25", "perc:95", "perc:99",
         "emp:0.01"]


def wilson(k: int, n: int) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return ci.low, ci.high


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store")
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--instances", type=int, default=10)
    ap.add_argument("--sweeps", type=int, default=60)
    ap.add_argument("--truth", type=int, default=1000)
    ap.add_argument("--realizations", type=int, default=2000)
    args = ap.parse_args()

    from colosim.io import open_store
    from colosim.runner.sweep import instance_rows

    if args.store:
        path = Path(args.store)
    else:
        from colosim.sources.resolve import generate_synthetic_store

        path = Path(tempfile.mkdtemp()) / "store.h5"
        generate_synthetic_store(path, n_tasks=args.tasks * 25, n_realizations=args.realizations, seed=2017)
    points = [GridPoint.make(estimator=s) for s in SPECS]
    with open_store(path) as store:
        R = store.n_realizations

        def rows_of(k):
            x = store.rows(instance_rows(1, k, store.n_tasks, args.tasks), "x")
            return [dict(zip(GRID_KEYS, p.keys()), instance=k, m_abs=m.m_abs, m=m.m, q=m.q, q_max=m.q_max)
                    for p, m in zip(points, instance_metrics(x, None, points))]

        truth_rows = [rows_of(1_000_000 + k) for k in range(args.truth)]
        truth = [float(np.mean([r[p]["q"] for r in truth_rows])) for p in range(len(points))]
        hit = np.zeros(len(points), dtype=int)
        widths = [[] for _ in points]
        t_widths = [[] for _ in points]
        K = args.instances
        for s in range(args.sweeps):
            per = [rows_of(k) for k in range(s * K, s * K + K)]
            for p in range(len(points)):
                rs = [r[p] for r in per]
                summ = summarize_point(rs, R)
                hit[p] += summ["q_ci_low"] <= truth[p] <= summ["q_ci_high"]
                widths[p].append(summ["q_ci_high"] - summ["q_ci_low"])
                lo, hi = mean_interval([r["q"] for r in rs])
                t_widths[p].append(hi - lo)
    print(f"store {path.name}: R = {R}; {args.sweeps} sweeps of {K} instances of {args.tasks} tasks; "
          f"truth = mean q over {args.truth} other instances")
    print(f"{'estimator':<14}{'truth q':>11}{'coverage':>10}{'(95% Wilson)':>18}{'width':>11}{'t width':>11}")
    for p, spec in enumerate(SPECS):
        lo, hi = wilson(int(hit[p]), args.sweeps)
        print(f"{spec:<14}{truth[p]:>11.2e}{hit[p] / args.sweeps:>10.1%}   [{lo:.1%}, {hi:.1%}]"
              f"{np.median(widths[p]):>11.2e}{np.median(t_widths[p]):>11.2e}")


if __name__ == "__main__":
    main()
