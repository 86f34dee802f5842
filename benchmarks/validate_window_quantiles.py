"""Window-quantile realization against the random samples, on real Google 2019 tasks.

From per-task ``instance_usage`` CSVs (the 19 real tasks of the project's
excerpts), in one run:

1. ingest them (series format 3, with each window's percentiles) and realize
   two stores of all the tasks, ``independent`` (x = the random samples, the
   paper's way) and ``window-quantiles`` (x drawn from each window's
   distribution, docs/spec.md), same seed;
2. per task, compare the window-quantile draws with the task's random samples
   (the records themselves): the two-sample Kolmogorov-Smirnov test, and the
   ratio of their 99th percentiles, of their 99.9th and of their std;
   the same for the independent draws, a control (they resample the samples),
   and for the window-quantile draws with each window's top segment (p99 to
   the maximum) collapsed onto p99, a sensitivity check of the interpolation;
3. draw a quantile-quantile figure (each task's draws against its samples);
4. pack one instance of every task with the paper's Section 5 estimators at
   small capacities, on both stores (and on the capped draws), and put m and q
   (with its 95% interval) side by side.

Writes ``OUT/validation.json``, ``OUT/estimators.csv`` and ``OUT/qq.png``.

    python benchmarks/validate_window_quantiles.py --data DIR --out benchmarks/results/window_quantiles
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ESTIMATORS = ["gpa:0.1", "gpa:0.05", "gpa:0.01", "gpa:0.001", "av:1", "av:1.25", "av:2",
              "perc:70", "perc:80", "perc:90", "perc:95", "perc:99", "max",
              "cantelli:0.1", "cantelli:0.05", "cantelli:0.01"]


#: the sensitivity check's name: window-quantile draws with the top segment at p99
CAPPED = "window-quantiles-capped-at-p99"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, type=Path, help="folder of Google 2019 per-task CSVs")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "window_quantiles")
    ap.add_argument("--realizations", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=2019)
    ap.add_argument("--capacities", default="0.05,0.1,0.2")
    args = ap.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy import stats

    import colosim
    from colosim.io import open_series, open_store
    from colosim.sources.google2019 import ingest_google2019
    from colosim.sources.realize import interpolate_quantiles, quantile_draws, realize_file

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        report = ingest_google2019([args.data], tmp / "s.h5")
        series = open_series(tmp / "s.h5")
        n = series.n_tasks
        stores = {}
        for sampling in ("independent", "window-quantiles"):
            path = tmp / f"{sampling}.h5"
            realize_file(tmp / "s.h5", path, n_tasks=n, n_realizations=args.realizations, seed=args.seed,
                         sampling=sampling)
            st = open_store(path)
            stores[sampling] = (np.array(st.x), np.array(st.y), np.asarray(st.task_id).copy())
        ids = [tuple(t) for t in series.task_id.tolist()]
        tasks, samples = [], {}
        x_capped = np.empty_like(stores["window-quantiles"][0])
        for j, tid in enumerate(stores["independent"][2].tolist()):
            k = ids.index(tuple(tid))
            inst, _avg = series.task(k)
            inst = np.asarray(inst, dtype=np.float64)
            row = {"task": f"{tid[0]}-{tid[1]}", "records": len(inst), "mean": float(inst.mean())}
            samples[row["task"]] = inst
            # sensitivity: the same draws with each window's top segment (p99 to
            # the maximum) collapsed onto p99, to see what the interpolation to
            # the maximum contributes
            ix, _iy, u = quantile_draws(args.seed, j, len(inst), args.realizations)
            capped = np.array(series.quantiles(k), dtype=np.float32)
            capped[:, -1] = capped[:, -2]
            draws_of = {sampling: x[j].astype(np.float64) for sampling, (x, _y, _ids) in stores.items()}
            draws_of[CAPPED] = interpolate_quantiles(capped[ix], u)
            x_capped[j] = draws_of[CAPPED]
            for sampling, draws in draws_of.items():
                ks = stats.ks_2samp(draws, inst)
                row[sampling] = {
                    "ks": float(ks.statistic), "ks_p": float(ks.pvalue),
                    "p99_ratio": float(np.percentile(draws, 99) / max(np.percentile(inst, 99), 1e-12)),
                    "p999_ratio": float(np.percentile(draws, 99.9) / max(np.percentile(inst, 99.9), 1e-12)),
                    "std_ratio": float(draws.std() / max(inst.std(), 1e-12)),
                }
            tasks.append(row)

        stores_run = {**stores, CAPPED: (x_capped, stores["window-quantiles"][1], None)}
        capacities = [float(c) for c in args.capacities.split(",")]
        rows = []
        for capacity in capacities:
            for est in ESTIMATORS:
                out = {"estimator": est, "capacity": capacity}
                for sampling, (x, y, _ids) in stores_run.items():
                    m = colosim.run(x, y, estimator=est, capacity=capacity)
                    out[f"m_{sampling}"] = m.m_abs
                    out[f"q_{sampling}"] = m.q
                    out[f"q_low_{sampling}"], out[f"q_high_{sampling}"] = m.q_ci
                rows.append(out)

    summary = {
        "tasks": n, "realizations": args.realizations, "seed": args.seed,
        "distribution_absent": report.counts.get("distribution_absent"),
        "max_below_p99": report.counts.get("max_below_p99"),
    }
    for sampling in (*stores, CAPPED):
        summary[sampling] = {
            "ks_rejected_5pct": sum(t[sampling]["ks_p"] < 0.05 for t in tasks),
            "median_ks": float(np.median([t[sampling]["ks"] for t in tasks])),
            "median_p99_ratio": float(np.median([t[sampling]["p99_ratio"] for t in tasks])),
            "median_p999_ratio": float(np.median([t[sampling]["p999_ratio"] for t in tasks])),
            "median_std_ratio": float(np.median([t[sampling]["std_ratio"] for t in tasks])),
        }
    (args.out / "validation.json").write_text(json.dumps({"summary": summary, "tasks": tasks}, indent=1) + "\n")
    with open(args.out / "estimators.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    levels = np.concatenate([np.linspace(1, 99, 99), [99.5, 99.9]])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.8), constrained_layout=True, sharex=True, sharey=True)
    collections = sorted({t["task"].split("-")[0] for t in tasks})
    colors = dict(zip(collections, ("tab:blue", "tab:orange", "tab:green", "tab:red")))
    for ax, sampling in zip(axes, stores):
        x = stores[sampling][0]
        for j, t in enumerate(tasks):
            inst = samples[t["task"]]
            a = np.maximum(np.percentile(inst, levels) / t["mean"], 1e-2)
            b = np.maximum(np.percentile(x[j], levels) / t["mean"], 1e-2)
            c = t["task"].split("-")[0]
            ax.plot(a, b, lw=0.8, alpha=0.8, color=colors[c])
            ax.plot(a[-1:], b[-1:], "o", ms=3, color=colors[c])  # the 99.9th percentile
        ax.set_xscale("log")
        ax.set_yscale("log")
        lo, hi = 1e-2, 1e2
        ax.plot([lo, hi], [lo, hi], color="black", lw=1, ls="--")
        for c in collections:
            ax.plot([], [], color=colors[c], label=f"collection {c}")
        ax.plot([], [], color="black", ls="--", label="equal quantiles")
        ax.set_xlabel("percentile of the task's random samples / task mean")
        ax.set_title(f"x by {sampling}")
        ax.legend(loc="upper left", frameon=False, fontsize=8)
    axes[0].set_ylabel("same percentile of the draws / task mean")
    fig.suptitle(f"{len(tasks)} real Google 2019 tasks, percentiles 1 to 99.9 (dot: 99.9)")
    fig.savefig(args.out / "qq.png", dpi=120)
    print(json.dumps(summary, indent=1))
    for r in rows:
        print(f"{r['estimator']:>14} c={r['capacity']:<5} independent m={r['m_independent']:>3} "
              f"q={r['q_independent']:.2e} [{r['q_low_independent']:.1e}, {r['q_high_independent']:.1e}]   "
              f"window-quantiles m={r['m_window-quantiles']:>3} q={r['q_window-quantiles']:.2e} "
              f"[{r['q_low_window-quantiles']:.1e}, {r['q_high_window-quantiles']:.1e}]   "
              f"capped m={r[f'm_{CAPPED}']:>3} q={r[f'q_{CAPPED}']:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
