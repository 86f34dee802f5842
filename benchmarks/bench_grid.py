"""The full factorial grid at paper scale, from the CLI, against a NumPy
baseline and the machine's add throughput, in one run.

    python benchmarks/bench_grid.py [--config benchmarks/grid.toml] [--instances N] [--json out.json]

Prints a table — NumPy baseline per grid point, colosim serial (1 Numba
thread) and parallel (all threads) over the whole grid; grid points per
second; ratios; the share of the machine's measured add throughput; peak
memory; CLI start-up, first (cold compile cache) and second run — and writes
the same as JSON. ``--instances`` scales the grid down for a quick look.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402
from numba import njit, prange  # noqa: E402

import colosim  # noqa: E402
from benchmarks import numpy_baseline  # noqa: E402
from colosim.config import load_config  # noqa: E402
from colosim.model.grid import observation_split  # noqa: E402
from colosim.runner.sweep import instance_rows, read_results  # noqa: E402
from colosim.sources.resolve import resolve_store  # noqa: E402


@njit(parallel=True, cache=True, error_model="numpy")
def _add_throughput(block, reps):
    # the evaluation's inner loop at its best: float32 rows added into
    # float64 accumulators, data in cache, one accumulator per thread
    n, w = block.shape
    out = np.zeros((numba.get_num_threads(), w))
    for th in prange(numba.get_num_threads()):
        acc = np.zeros(w)
        for _r in range(reps):
            for i in range(n):
                row = block[i]
                for t in range(w):
                    acc[t] += np.float64(row[t])
        out[th] = acc
    return out


def machine_adds_per_second(threads: int) -> float:
    numba.set_num_threads(threads)
    block = np.random.default_rng(0).random((1000, 64)).astype(np.float32)
    _add_throughput(block, 1)
    reps = 400
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        _add_throughput(block, reps)
        best = min(best, time.perf_counter() - t0)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return threads * reps * block.size / best


def run_cli(args, env_extra) -> tuple[float, int]:
    """Wall time and peak RSS (bytes) of one CLI run in a fresh process."""
    wrapper = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
               "r = subprocess.run(sys.argv[1:]); dt = time.perf_counter() - t; "
               "print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)")
    env = {**os.environ, **env_extra}
    out = subprocess.run([sys.executable, "-c", wrapper, sys.executable, "-m", "colosim", *args],
                         env=env, capture_output=True, text=True, check=True)
    dt, rss, rc = out.stdout.split()[-3:]
    if int(rc) != 0:
        raise SystemExit(f"colosim {' '.join(args)} failed:\n{out.stderr}")
    return float(dt), int(rss) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "benchmarks" / "grid.toml"))
    ap.add_argument("--instances", type=int, help="instances to run (default: the config's)")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "grid.json"))
    ap.add_argument("--skip-serial", action="store_true", help="only the parallel run")
    args = ap.parse_args()

    cfg = load_config(args.config)
    text = Path(args.config).read_text()
    if args.instances:
        text = text.replace(f"count = {cfg.instances.count}", f"count = {args.instances}", 1)
    work = Path(tempfile.mkdtemp(prefix="colosim-bench-"))
    config = work / "grid.toml"
    store_path = resolve_store(cfg.source, Path(args.config).parent)
    text = text.replace('kind = "synthetic"', f'kind = "store"\npath = "{store_path}"', 1)
    for key in ("tasks", "realizations", "seed", "sampling"):  # source keys of the synthetic kind
        text = _drop_source_key(text, key)
    config.write_text(text)
    cfg = load_config(config)
    points = cfg.points
    n_points = len(points) * cfg.instances.count
    with colosim.open_store(store_path) as store:
        R = store.n_realizations
        n_store = store.n_tasks
    adds = sum(cfg.instances.tasks * (R - observation_split(p.clairvoyance, R)[1]) for p in points)
    adds *= cfg.instances.count

    info = {
        "cpu": _cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
        "numpy": np.__version__, "numba": numba.__version__, "colosim": colosim.__version__,
        "grid_points": n_points, "nominal_additions": adds,
    }
    print(f"{info['cpu']}, {info['cores']} cores; Python {info['python']}, NumPy {info['numpy']}, "
          f"Numba {info['numba']}; {n_points} grid points, {adds:.3g} nominal additions")

    machine = {t: machine_adds_per_second(t) for t in sorted({1, numba.config.NUMBA_NUM_THREADS})}
    for t, v in machine.items():
        print(f"machine add throughput, {t} thread(s): {v:.3g} additions/s")

    runs = {}
    thread_counts = [numba.config.NUMBA_NUM_THREADS] if args.skip_serial else [1, numba.config.NUMBA_NUM_THREADS]
    for threads in thread_counts:
        out = work / f"grid-{threads}.csv"
        dt, rss = run_cli(["sweep", str(config), "--out", str(out), "--force", "-q"],
                          {"NUMBA_NUM_THREADS": str(threads)})
        runs[threads] = {"seconds": dt, "peak_rss_bytes": rss, "points_per_second": n_points / dt,
                         "effective_additions_per_second": adds / dt}
        print(f"colosim, {threads} thread(s): {dt:.1f} s, {n_points / dt:.0f} points/s, "
              f"peak RSS {rss / 2**20:.0f} MiB")
    if len(runs) == 2:
        a, b = (work / f"grid-{t}.csv" for t in thread_counts)
        identical = a.read_bytes() == b.read_bytes()
        print(f"serial and parallel results identical: {identical}")
        info["serial_equals_parallel"] = identical
    parallel = runs[max(runs)]

    # NumPy baseline: instance 0, each estimator at c = 1, full clairvoyance,
    # inst data, Best Fit with rebalancing (checked against the CLI's rows)
    rows = read_results(work / f"grid-{max(runs)}.csv")
    with colosim.open_store(store_path) as store:
        idx = instance_rows(cfg.instances.seed, 0, n_store, cfg.instances.tasks)
        x, y = store.rows(idx, "x"), store.rows(idx, "y")
    per_point = parallel["seconds"] / n_points
    baseline = {}
    for spec in dict(cfg.grid)["estimator"]:
        t0 = time.perf_counter()
        m_abs, _, q = numpy_baseline.grid_point(x, y, spec)
        dt = time.perf_counter() - t0
        row = next(r for r in rows if r["instance"] == 0
                   and r["estimator"] == colosim.model.estimators.parse_estimator(spec).spec
                   and r["capacity"] == 1.0 and r["clairvoyance"] == 1.0 and r["data"] == "inst"
                   and r["algorithm"] == "best-fit" and r["rebalance"])
        same = row["m_abs"] == m_abs and row["q"] == q
        baseline[spec] = {"seconds": dt, "ratio": dt / per_point, "same_result": same}
    geo = math.exp(np.mean([math.log(v["ratio"]) for v in baseline.values()]))

    print()
    print(f"{'':<28}{'s/point':>12}{'points/s':>12}{'vs NumPy':>10}{'adds/s':>12}{'of machine':>12}")
    np_mean = float(np.mean([v["seconds"] for v in baseline.values()]))
    print(f"{'NumPy baseline (mean)':<28}{np_mean:>12.4f}{1 / np_mean:>12.1f}{1.0:>10.1f}{'':>12}{'':>12}")
    for t, r in runs.items():
        spp = r["seconds"] / n_points
        frac = r["effective_additions_per_second"] / machine[max(machine)]
        print(f"{f'colosim, {t} thread(s)':<28}{spp:>12.2e}{r['points_per_second']:>12.0f}"
              f"{np_mean / spp:>10.0f}{r['effective_additions_per_second']:>12.3g}{frac:>12.2f}")
    print(f"\nper estimator, NumPy s/point vs colosim's grid s/point ({per_point:.2e}):")
    for spec, v in baseline.items():
        print(f"  {spec:<14}{v['seconds']:>9.3f} s  ×{v['ratio']:>8.0f}  same m_abs and q: {v['same_result']}")
    print(f"geometric mean ratio over estimators: {geo:.0f}")

    # start-up: a tiny sweep with an empty compile cache, then again
    tiny = work / "tiny.toml"
    tiny.write_text(_tiny_config(text))
    cache = work / "numba-cache"
    first, _ = run_cli(["sweep", str(tiny), "--out", str(work / "t1.csv"), "-q"], {"NUMBA_CACHE_DIR": str(cache)})
    second, _ = run_cli(["sweep", str(tiny), "--out", str(work / "t2.csv"), "-q"], {"NUMBA_CACHE_DIR": str(cache)})
    print(f"\nCLI start-up (a 1-instance, 1-point sweep): first run {first:.1f} s (compiling), "
          f"second run {second:.1f} s (cached kernels)")

    result = {"machine": info, "machine_additions_per_second": machine, "runs": runs,
              "numpy_baseline": baseline, "geometric_mean_ratio": geo,
              "startup_seconds": {"first": first, "second": second}}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"wrote {args.json}")


def _drop_source_key(text: str, key: str) -> str:
    head, sep, rest = text.partition("[instances]")
    lines = [ln for ln in head.splitlines() if not ln.strip().startswith(f"{key} =")]
    return "\n".join(lines) + "\n" + sep + rest


def _tiny_config(text: str) -> str:
    head = text.split("[grid]")[0]
    head = head.replace("count = ", "count = 1 #", 1)
    return head + '[grid]\nestimator = ["gpa:0.01"]\n'


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    main()
