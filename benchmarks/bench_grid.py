"""The full factorial grid at paper scale, from the CLI, against a NumPy
baseline, with the evaluation's work counted, in one run.

    python benchmarks/bench_grid.py [--config benchmarks/grid.toml] [--instances N] [--json out.json]

Prints and writes as JSON:

- the grid's wall time from the CLI (serial with 1 Numba thread and parallel
  with all), warm (the grid's first instance fills Numba's cache first), peak memory, CLI
  start-up;
- the time of one instance split into read, statistics, packing and
  evaluation (warm, median over ``--profile`` instances, in this process);
- the additions the evaluation performed and the nominal additions (n × the
  evaluation columns of every grid point) they stand for: their ratio is
  the sharing factor;
- performed additions per second of the evaluation against a probe of the
  evaluation's own float32 inner loop (``_add_rows``) on cached data, on the
  same machine in the same run;
- the NumPy baseline, warm (median of repeats after a first call) on a mix
  of grid points (every estimator, the other settings varied), each
  point's m and q compared with the CLI's row.

``--instances`` scales the grid down for a quick look.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
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
from colosim.engine import instance_metrics  # noqa: E402
from colosim.kernels.evaluate import _add_rows  # noqa: E402
from colosim.kernels.tiles import TILE  # noqa: E402
from colosim.resources import keep_freed_memory  # noqa: E402
from colosim.runner.sweep import instance_rows, read_results  # noqa: E402
from colosim.sources.resolve import resolve_store  # noqa: E402


@njit(parallel=True, error_model="numpy")
def _probe(block, members, reps):
    # the evaluation's own inner loop (float32 rows added into a float32
    # accumulator, four at a time: _add_rows, which the tile loop repeats
    # inline on its tiles) on a cached tile, one per thread
    threads = numba.get_num_threads()
    out = np.zeros((threads, block.shape[1]), dtype=block.dtype)
    for th in prange(threads):
        acc = np.zeros(block.shape[1], dtype=block.dtype)
        for _r in range(reps):
            _add_rows(acc, block, members, 0, members.shape[0], 0, block.shape[1])
        out[th] = acc
    return out


def probe_additions_per_second(threads: int) -> float:
    """Additions per second of the evaluation's inner loop on a 1,000 × TILE
    float32 tile in cache (23 rows per bin, the grid's mean bin size)."""
    numba.set_num_threads(threads)
    rng = np.random.default_rng(0)
    block = rng.random((1000, TILE)).astype(np.float32)
    members = np.sort(rng.choice(1000, 23, replace=False)).astype(np.int64)
    reps = 20000
    _probe(block, members, 1)
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        _probe(block, members, reps)
        best = min(best, time.perf_counter() - t0)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return threads * reps * members.size * TILE / best


def profile_instances(cfg, store_path, count: int) -> dict:
    """Warm per-instance split (median over ``count`` instances after one to
    warm up) and the evaluation's work summed over them."""
    per = {"read": [], "statistics": [], "packing": [], "evaluation": []}
    additions = nominal = 0
    eval_seconds = 0.0
    with colosim.open_store(store_path) as store:
        for k in range(count + 1):
            t0 = time.perf_counter()
            idx = instance_rows(cfg.instances.seed, k, store.n_tasks, cfg.instances.tasks)
            x, y = store.rows(idx, "x"), store.rows(idx, "y")
            read = time.perf_counter() - t0
            work = {}
            instance_metrics(x, y, cfg.points, work)
            if k == 0:
                continue  # compiled, buffers mapped
            per["read"].append(read)
            for key in ("statistics", "packing", "evaluation"):
                per[key].append(work[key])
            additions += work["additions"]
            nominal += work["nominal_additions"]
            eval_seconds += work["evaluation"]
    split = {key: statistics.median(v) for key, v in per.items()}
    return {"instances": count, "seconds": split, "total_seconds": sum(split.values()),
            "performed_additions": additions, "nominal_additions": nominal,
            "sharing_factor": nominal / additions, "evaluation_seconds": eval_seconds,
            "performed_additions_per_second": additions / eval_seconds}


def baseline_mix(cfg):
    """One grid point per estimator, the other settings cycled through the
    grid's values (each estimator meets a different algorithm, capacity,
    clairvoyance, data and rebalancing): a representative mix."""
    grid = dict(cfg.grid)
    mix = []
    for e, spec in enumerate(grid["estimator"]):
        mix.append({
            "estimator": getattr(spec, "spec", spec),
            "algorithm": grid["algorithm"][e % len(grid["algorithm"])],
            "capacity": grid["capacity"][e % len(grid["capacity"])],
            "clairvoyance": grid["clairvoyance"][(3 * e) % len(grid["clairvoyance"])],
            "data": grid["data"][(e // 2) % len(grid["data"])],
            "rebalance": grid["rebalance"][(e // 4) % len(grid["rebalance"])],
        })
    return mix


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
    ap.add_argument("--profile", type=int, default=5, help="instances profiled in this process (default 5)")
    ap.add_argument("--repeat", type=int, default=3, help="timed repeats of each NumPy point (default 3)")
    args = ap.parse_args()
    keep_freed_memory()  # as the CLI does: the instances profiled here allocate as the sweep's do

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
        n_store = store.n_tasks

    info = {
        "cpu": _cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
        "numpy": np.__version__, "numba": numba.__version__, "colosim": colosim.__version__,
        "grid_points": n_points,
    }
    print(f"{info['cpu']}, {info['cores']} cores; Python {info['python']}, NumPy {info['numpy']}, "
          f"Numba {info['numba']}; {n_points} grid points")

    # the grid is timed warm: its first instance alone first fills Numba's
    # cache, so that the grid's run loads the kernels instead of compiling
    tiny = work / "tiny.toml"
    tiny.write_text(_tiny_config(text))
    one = work / "one.toml"
    one.write_text(config.read_text().replace("count = ", "count = 1 #", 1))
    warm, _ = run_cli(["sweep", str(one), "--out", str(work / "one.csv"), "-q"], {})
    print(f"warm-up (the grid's first instance, filling Numba's cache): {warm:.1f} s")

    runs = {}
    thread_counts = [numba.config.NUMBA_NUM_THREADS] if args.skip_serial else [1, numba.config.NUMBA_NUM_THREADS]
    for threads in thread_counts:
        out = work / f"grid-{threads}.csv"
        dt, rss = run_cli(["sweep", str(config), "--out", str(out), "--force", "-q"],
                          {"NUMBA_NUM_THREADS": str(threads)})
        runs[threads] = {"seconds": dt, "peak_rss_bytes": rss, "points_per_second": n_points / dt}
        print(f"colosim, {threads} thread(s): {dt:.1f} s, {n_points / dt:.0f} points/s, "
              f"peak RSS {rss / 2**20:.0f} MiB")
    if len(runs) == 2:
        a, b = (work / f"grid-{t}.csv" for t in thread_counts)
        identical = a.read_bytes() == b.read_bytes()
        print(f"serial and parallel results identical: {identical}")
        info["serial_equals_parallel"] = identical
    parallel = runs[max(runs)]
    per_point = parallel["seconds"] / n_points

    # where one instance's time goes, and the evaluation's work
    prof = profile_instances(cfg, store_path, min(args.profile, cfg.instances.count - 1))
    probe = {t: probe_additions_per_second(t) for t in sorted({1, numba.config.NUMBA_NUM_THREADS})}
    threads = numba.config.NUMBA_NUM_THREADS
    prof["share_of_probe"] = prof["performed_additions_per_second"] / probe[threads]
    print(f"\none instance of {len(points)} grid points, warm, median over {prof['instances']} instances "
          f"({threads} threads):")
    for key, v in prof["seconds"].items():
        print(f"  {key:<12}{v:>8.3f} s  {v / prof['total_seconds']:>5.0%}")
    print(f"  {'total':<12}{prof['total_seconds']:>8.3f} s")
    print(f"evaluation: {prof['performed_additions']:.3g} additions performed for {prof['nominal_additions']:.3g} "
          f"nominal (sharing factor {prof['sharing_factor']:.2f}), "
          f"{prof['performed_additions_per_second']:.3g} performed additions/s")
    for t, v in probe.items():
        print(f"probe of the evaluation's float32 inner loop, {t} thread(s): {v:.3g} additions/s")
    print(f"the evaluation performs additions at {prof['share_of_probe']:.2f} of the probe's rate "
          f"({threads} threads)")

    # NumPy baseline: a mix of grid points on instance 0, warm, each checked
    # against the CLI's row
    rows = read_results(work / f"grid-{max(runs)}.csv")
    with colosim.open_store(store_path) as store:
        idx = instance_rows(cfg.instances.seed, 0, n_store, cfg.instances.tasks)
        x, y = store.rows(idx, "x"), store.rows(idx, "y")
    baseline = []
    for point in baseline_mix(cfg):
        def call(point=point):
            return numpy_baseline.grid_point(x, y, point["estimator"], point["capacity"], point["algorithm"],
                                             point["clairvoyance"], point["data"], point["rebalance"])
        call()
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            m_abs, _, q = call()
            times.append(time.perf_counter() - t0)
        spec = colosim.model.estimators.parse_estimator(point["estimator"]).spec
        row = next(r for r in rows if r["instance"] == 0 and r["estimator"] == spec
                   and r["capacity"] == point["capacity"] and r["clairvoyance"] == point["clairvoyance"]
                   and r["data"] == point["data"] and r["algorithm"] == point["algorithm"]
                   and r["rebalance"] == point["rebalance"])
        seconds = statistics.median(times)
        baseline.append({**point, "seconds": seconds, "ratio": seconds / per_point,
                         "same_result": row["m_abs"] == m_abs and row["q"] == q})
    geo = math.exp(np.mean([math.log(v["ratio"]) for v in baseline]))
    np_median = statistics.median(v["seconds"] for v in baseline)

    print(f"\n{'':<28}{'s/point':>12}{'points/s':>12}{'vs NumPy':>10}")
    print(f"{'NumPy baseline (median)':<28}{np_median:>12.4f}{1 / np_median:>12.1f}{1.0:>10.1f}")
    for t, r in runs.items():
        spp = r["seconds"] / n_points
        print(f"{f'colosim grid, {t} thread(s)':<28}{spp:>12.2e}{r['points_per_second']:>12.0f}"
              f"{np_median / spp:>10.0f}")
    print(f"\nNumPy baseline per point (warm, median of {args.repeat}) vs colosim's grid s/point ({per_point:.2e}):")
    for v in baseline:
        label = (f"{v['estimator']} {v['algorithm']} c={v['capacity']} cl={v['clairvoyance']} {v['data']} "
                 f"{'reb' if v['rebalance'] else 'no-reb'}")
        print(f"  {label:<52}{v['seconds']:>8.3f} s  ×{v['ratio']:>7.0f}  same m_abs and q: {v['same_result']}")
    print(f"geometric mean ratio over the mix: {geo:.0f}; every point the same: "
          f"{all(v['same_result'] for v in baseline)}")

    # start-up: a tiny sweep with an empty compile cache, then again
    cache = work / "numba-cache"
    first, _ = run_cli(["sweep", str(tiny), "--out", str(work / "t1.csv"), "-q"], {"NUMBA_CACHE_DIR": str(cache)})
    second, _ = run_cli(["sweep", str(tiny), "--out", str(work / "t2.csv"), "-q"], {"NUMBA_CACHE_DIR": str(cache)})
    print(f"\nCLI start-up (a 1-instance, 1-point sweep): first run {first:.1f} s (compiling), "
          f"second run {second:.1f} s (cached kernels)")

    result = {"machine": info, "runs": runs, "instance_profile": prof,
              "probe_additions_per_second": probe, "numpy_baseline": baseline, "geometric_mean_ratio": geo,
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
