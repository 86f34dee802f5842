"""How the cost of one instance_metrics call grows with tasks per instance,
realizations, grid points and Numba threads, with the fitted exponent of
each; and the 100,000-task instance on the clairvoyance grid (wall time, peak
memory). Writes a JSON and one figure.

    python benchmarks/bench_growth.py [--store STORE.h5] [--r-store STORE.h5] [--out DIR] [--force]
                                      [--series tasks,realizations,grid,threads,clairvoyance] [--quick]

Each point is the median of warm calls (one call first, to compile and
touch the caches), on instance 0 of its store (SPEC §6, seed 1):

- **tasks**: n = 1,000 … 100,000 tasks (a whole cell packed at once) of the
  paper-scale store (``--store``, default: the cached store of
  benchmarks/grid.toml), R = 10,000, at two points: gpa:0.01 and perc:95,
  Best Fit with rebalancing, c = 1, clairvoyance 1, inst data (a Gaussian
  estimator and a percentile one: the two kinds of statistics). Each n runs
  in its own process, which also gives its peak RSS; from ``--big-tasks``
  tasks on (default 30,000), ``--big-repeat`` warm repeats (default 1).
- **realizations**: R = 1,000 … 100,000, the first R columns of a store of
  1,000 tasks × 100,000 realizations, same points. The store is made by
  ``colosim generate`` at ``--r-store`` when that file is missing (and
  kept), or in a temporary folder removed afterwards.
- **grid**: 1, 4, 16, … grid points of the paper's full factorial grid
  (benchmarks/grid.toml: 16 estimators × 2 algorithms × 5 capacities × 7
  clairvoyance levels × inst/avg × rebalance on/off, 4,480 points) on the
  1,000 × 10,000 instance; the k points are the first k of one seeded
  permutation of the grid (nested subsets), then the whole grid.
- **threads**: 1, 2 and all the machine has (``numba.set_num_threads``) on
  the 1,000 × 10,000 instance at ``--thread-points`` of those points
  (default 256); m_abs, q, severity, the per-bin counts and the assignments
  are compared across thread counts.
- **clairvoyance**: ``--cl-tasks`` tasks (default 100,000) at R = 10,000 on
  the grid of configs/clairvoyance.toml (7 gpa/av estimators × 7
  clairvoyance levels, Best Fit, rebalancing, c = 1), once, in its own
  process: read time, the time of the call (compiled on a few rows first),
  and the process's peak RSS.

For each series the exponent b of time ≈ a·size^b is fitted by least squares
on log–log. ``--quick`` scales everything down (at most 10,000 tasks and R,
grids up to 64 points, the clairvoyance line at 10,000 tasks).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import resource
import shutil
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

import colosim  # noqa: E402
from benchmarks.bench_grid import _cpu_name  # noqa: E402
from colosim.config import load_config  # noqa: E402
from colosim.engine import instance_metrics  # noqa: E402
from colosim.io.atomic import atomic_path  # noqa: E402
from colosim.model.grid import GridPoint  # noqa: E402
from colosim.resources import available_memory  # noqa: E402
from colosim.runner.sweep import instance_rows  # noqa: E402
from colosim.sources.resolve import resolve_store  # noqa: E402

SERIES = ("tasks", "realizations", "grid", "threads", "clairvoyance")
ESTIMATORS = ("gpa:0.01", "perc:95")
GRID_CONFIG = ROOT / "benchmarks" / "grid.toml"
CLAIRVOYANCE_CONFIG = ROOT / "configs" / "clairvoyance.toml"
R_STORE_TASKS = 1000
SEED = 2017  # of the population and the draws of the store made for the R series
MIB = 2**20

FULL = dict(tasks=[1000, 3000, 10000, 30000, 100000], realizations=[1000, 3000, 10000, 30000, 100000],
            grid_max=None, thread_points=256, cl_tasks=100000)
QUICK = dict(tasks=[1000, 3000, 10000], realizations=[1000, 3000, 10000], grid_max=64, thread_points=16,
             cl_tasks=10000)


# ------------------------------------------------------------------ helpers

def points_of(estimators=ESTIMATORS) -> list[GridPoint]:
    """The fixed points of the tasks and realizations series."""
    return [GridPoint.make(e, "best-fit", 1.0, 1.0, "inst", True, 1.0) for e in estimators]


def grid_subsets(sizes_max: int | None) -> tuple[list[GridPoint], list[int]]:
    """The paper grid's points in one seeded order, and the subset sizes:
    powers of 4 up to the grid (or ``sizes_max``), then the whole grid."""
    points = load_config(GRID_CONFIG).points
    order = np.random.default_rng(SEED).permutation(len(points))
    shuffled = [points[i] for i in order]
    top = len(points) if sizes_max is None else min(sizes_max, len(points))
    sizes = [4**k for k in range(int(math.log(top, 4)) + 1) if 4**k <= top]
    if sizes[-1] != top:
        sizes.append(top)
    return shuffled, sizes


def warm_median(fn, repeat: int):
    """Median seconds of ``repeat`` calls after a first one, every time, and
    the last result."""
    out = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, out


def fit(sizes, seconds) -> dict | None:
    """b and a of seconds ≈ a·size^b, least squares on log–log."""
    if len(sizes) < 2:
        return None
    b, log_a = np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float)), 1)
    return {"exponent": float(b), "prefactor": float(math.exp(log_a))}


def needs_avg(points) -> bool:
    return any(p.data == "avg" for p in points)


def load_instance(store_path, n_tasks: int, with_y: bool):
    """Rows of instance 0 (SPEC §6, seed 1): x, y (or None) and the read
    time."""
    t0 = time.perf_counter()
    with colosim.open_store(store_path) as s:
        idx = instance_rows(1, 0, s.n_tasks, n_tasks)
        x = s.rows(idx, "x")
        y = s.rows(idx, "y") if with_y else None
    return x, y, time.perf_counter() - t0


def instance_bytes(n_tasks: int, R: int, with_y: bool) -> int:
    """What one call holds at most, roughly: x (and y) in float32, the
    evaluation's tiled copy of x, and the interpreter with its kernels."""
    return int(4 * n_tasks * R * (2 + with_y) * 1.1) + 400 * MIB


def spec_keys(points) -> list[list]:
    return [list(p.keys()) for p in points]


# ------------------------------------------------------------------ worker

def worker(spec: dict) -> dict:
    """One instance in this process: the job a subprocess runs."""
    points = [GridPoint.make(*k) for k in spec["points"]]
    x, y, read = load_instance(spec["store"], spec["tasks"], needs_avg(points))
    out = {"read_seconds": read, "shape": list(x.shape)}
    if spec["mode"] == "warm":
        median, times, _ = warm_median(lambda: instance_metrics(x, y, points), spec["repeat"])
        out.update(seconds=median, times=times)
    else:  # once: compiled on a few rows, then one call at full size
        instance_metrics(x[:64], None if y is None else y[:64], points)
        t0 = time.perf_counter()
        metrics = instance_metrics(x, y, points)
        out.update(seconds=time.perf_counter() - t0, bins=sum(m.m_abs for m in metrics))
    return out


def run_worker(spec: dict, timeout: float) -> dict:
    """:func:`worker` in a fresh process: its result, wall time and peak RSS
    (that process's alone, from ``wait4``)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(spec)], stdout=out, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = -9
                return {"skipped": f"timed out after {timeout:.0f} s", "peak_rss_bytes": usage.ru_maxrss * 1024}
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"worker {spec} failed ({proc.returncode}):\n{err.read()}")
        out.seek(0)
        result = json.loads(out.read().splitlines()[-1])
    result.update(process_seconds=wall, peak_rss_bytes=usage.ru_maxrss * 1024)  # ru_maxrss: KiB on Linux
    return result


def fits_in_memory(n_tasks: int, R: int, with_y: bool) -> str | None:
    """Why a run of this size is skipped (None: it fits)."""
    need, free = instance_bytes(n_tasks, R, with_y), available_memory()
    if need > 0.9 * free:
        return f"needs about {need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB available"
    return None


# ------------------------------------------------------------------ series

def series_tasks(args, sizes, store) -> dict:
    points = points_of()
    rows = []
    print(f"\ntasks per instance: R = 10,000 (the store's), {len(points)} points "
          f"({', '.join(ESTIMATORS)}; best-fit, rebalance, c = 1, clairvoyance 1, inst); one process each")
    print(f"{'tasks':>9}{'median s':>11}{'repeats':>9}{'peak RSS MiB':>14}{'read s':>9}")
    for n in sizes:
        repeat = args.big_repeat if n >= args.big_tasks else args.repeat
        why = fits_in_memory(n, 10000, False)
        if why:
            print(f"{n:>9,}  skipped: {why}")
            rows.append({"tasks": n, "skipped": why})
            continue
        r = run_worker({"store": str(store), "tasks": n, "points": spec_keys(points), "mode": "warm",
                        "repeat": repeat}, args.timeout)
        if "skipped" in r:
            print(f"{n:>9,}  skipped: {r['skipped']}")
            rows.append({"tasks": n, **r})
            continue
        note = "  (1 warm repeat)" if repeat == 1 else ""
        print(f"{n:>9,}{r['seconds']:>11.4f}{repeat:>9}{r['peak_rss_bytes'] / MIB:>14.0f}"
              f"{r['read_seconds']:>9.1f}{note}")
        rows.append({"tasks": n, "repeats": repeat, **r})
    done = [r for r in rows if "seconds" in r]
    memory = fit([r["tasks"] for r in done], [r["peak_rss_bytes"] for r in done])
    return _finish("tasks", "tasks per instance", rows, points, memory_fit=memory)


def series_realizations(args, sizes, r_store) -> dict:
    points = points_of()
    x_all, _, _ = load_instance(r_store, R_STORE_TASKS, False)
    print(f"\nrealizations: the first R columns of a {x_all.shape[0]:,} × {x_all.shape[1]:,} store, "
          f"{len(points)} points (as above)")
    print(f"{'R':>9}{'median s':>11}{'repeats':>9}")
    rows = []
    for R in sizes:
        x = np.ascontiguousarray(x_all[:, :R])
        median, times, _ = warm_median(lambda x=x: instance_metrics(x, None, points), args.repeat)
        print(f"{R:>9,}{median:>11.4f}{args.repeat:>9}")
        rows.append({"realizations": R, "seconds": median, "times": times, "repeats": args.repeat})
    return _finish("realizations", "realizations R", rows, points)


def series_grid(args, sizes, shuffled, x, y) -> dict:
    print(f"\ngrid points: the first k of a seeded permutation of the {len(load_config(GRID_CONFIG).points):,}"
          f"-point paper grid, on the {x.shape[0]:,} × {x.shape[1]:,} instance")
    print(f"{'points':>9}{'median s':>11}{'s/point':>11}{'repeats':>9}")
    rows = []
    for k in sizes:
        pts = shuffled[:k]
        median, times, _ = warm_median(lambda pts=pts: instance_metrics(x, y if needs_avg(pts) else None, pts),
                                       args.repeat)
        print(f"{k:>9,}{median:>11.4f}{median / k:>11.2e}{args.repeat:>9}")
        rows.append({"grid_points": k, "seconds": median, "times": times, "repeats": args.repeat})
    return _finish("grid_points", "grid points", rows, None)


def series_threads(args, points, x, y) -> dict:
    most = numba.config.NUMBA_NUM_THREADS
    counts = sorted({t for t in (1, 2, most) if t <= most})
    print(f"\nNumba threads: {len(points)} grid points on the {x.shape[0]:,} × {x.shape[1]:,} instance "
          f"(the machine has {most})")
    print(f"{'threads':>9}{'median s':>11}{'speed-up':>10}{'repeats':>9}")
    rows, reference, identical = [], None, True
    try:
        for t in counts:
            numba.set_num_threads(t)
            median, times, metrics = warm_median(lambda: instance_metrics(x, y, points), args.repeat)
            got = [(m.m_abs, m.q, m.severity, m.counts, m.assign) for m in metrics]
            if reference is None:
                reference = got
            else:
                identical &= all(a[0] == b[0] and a[1] == b[1] and a[2] == b[2] and np.array_equal(a[3], b[3])
                                 and np.array_equal(a[4], b[4]) for a, b in zip(reference, got))
            print(f"{t:>9}{median:>11.4f}{rows[0]['seconds'] / median if rows else 1.0:>10.2f}{args.repeat:>9}")
            rows.append({"threads": t, "seconds": median, "times": times, "repeats": args.repeat})
    finally:
        numba.set_num_threads(most)
    print(f"  m_abs, q, severity, counts and assignments identical at every thread count: {identical}")
    out = _finish("threads", "Numba threads", rows, points)
    out["identical"] = bool(identical)
    return out


def series_clairvoyance(args, store) -> dict:
    points = load_config(CLAIRVOYANCE_CONFIG).points
    n = args.cl_tasks
    print(f"\nclairvoyance grid ({len(points)} points) on {n:,} tasks × R = 10,000, once, in its own process")
    why = fits_in_memory(n, 10000, needs_avg(points))
    if why:
        print(f"  skipped: {why}")
        return {"tasks": n, "grid_points": len(points), "skipped": why}
    r = run_worker({"store": str(store), "tasks": n, "points": spec_keys(points), "mode": "once"}, args.timeout)
    if "skipped" in r:
        print(f"  skipped: {r['skipped']}")
    else:
        print(f"  read {r['read_seconds']:.1f} s; the call {r['seconds']:.2f} s "
              f"({r['seconds'] / len(points):.3f} s/point, {r['bins']:,} bins in all); "
              f"process {r['process_seconds']:.1f} s; peak RSS {r['peak_rss_bytes'] / 2**30:.2f} GiB")
    return {"tasks": n, "realizations": 10000, "grid_points": len(points), **r}


def _finish(key, label, rows, points, **extra) -> dict:
    done = [r for r in rows if "seconds" in r]
    f = fit([r[key] for r in done], [r["seconds"] for r in done])
    if f:
        print(f"  exponent b = {f['exponent']:.2f}  (time ≈ {f['prefactor']:.3g} s · {label}^b)")
    mem = extra.get("memory_fit")
    if mem:
        print(f"  peak RSS ≈ {mem['prefactor'] / MIB:.3g} MiB · tasks^{mem['exponent']:.2f}")
    out = {"size": key, "label": label, "rows": rows, "fit": f, **extra}
    if points is not None:
        out["points"] = spec_keys(points)
    return out


# ------------------------------------------------------------------ figure

PANELS = {  # title, x label, the size's symbol
    "tasks": ("tasks per instance", "tasks per instance n (tasks; R = 10,000)", "n"),
    "realizations": ("realizations", "realizations R (columns; 1,000 tasks)", "R"),
    "grid": ("grid points", "grid points P (points; 1,000 × 10,000 instance)", "P"),
    "threads": ("Numba threads", "Numba threads T (threads; 1,000 × 10,000 instance)", "T"),
}


def figure(result: dict, path: Path, title: str, force: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    for ax, (name, (heading, xlabel, sym)) in zip(axes.ravel(), PANELS.items()):
        ax.set_title(heading)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("time per call (s)")
        s = result["series"].get(name)
        if not s:
            ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
            continue
        done = [r for r in s["rows"] if "seconds" in r]
        xs = np.array([r[s["size"]] for r in done], float)
        ts = np.array([r["seconds"] for r in done])
        few = np.array([r.get("repeats", 0) < 2 for r in done])
        ax.plot(xs[~few], ts[~few], "o", color="C0", label="warm median")
        if few.any():
            ax.plot(xs[few], ts[few], "o", mfc="none", color="C0", label="1 warm repeat")
        if s["fit"]:
            line = np.geomspace(xs.min(), xs.max(), 50)
            ax.plot(line, s["fit"]["prefactor"] * line ** s["fit"]["exponent"], "--", color="C1",
                    label=f"least-squares fit: time ∝ {sym}^b, b = {s['fit']['exponent']:.2f}")
        if name == "threads":
            ax.set_xticks(xs)
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    with atomic_path(path, overwrite=force) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------ main

def _sizes(text):
    return [int(v) for v in text.split(",")]


def make_r_store(path: Path, R: int) -> None:
    print(f"making a {R_STORE_TASKS:,} × {R:,} store (colosim generate) ...", flush=True)
    subprocess.run([sys.executable, "-m", "colosim", "generate", "--out", str(path), "--tasks", str(R_STORE_TASKS),
                    "--realizations", str(R), "--seed", str(SEED)], check=True, capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", help="the paper-scale store (default: benchmarks/grid.toml's, cached)")
    ap.add_argument("--r-store", help="store of 1,000 tasks for the R series (made here when missing)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "growth"))
    ap.add_argument("--force", action="store_true", help="overwrite existing outputs")
    ap.add_argument("--series", default=",".join(SERIES), help=f"comma-separated, of {', '.join(SERIES)}")
    ap.add_argument("--quick", action="store_true", help="everything scaled down, for a quick look")
    ap.add_argument("--repeat", type=int, default=3, help="warm repeats per point")
    ap.add_argument("--big-tasks", type=int, default=30000, help="from this many tasks on, --big-repeat repeats")
    ap.add_argument("--big-repeat", type=int, default=1)
    ap.add_argument("--tasks", type=_sizes, help="task counts (comma-separated)")
    ap.add_argument("--realizations", type=_sizes, help="R values (comma-separated)")
    ap.add_argument("--grid-max", type=int, help="largest grid subset (default: the whole grid)")
    ap.add_argument("--thread-points", type=int, help="grid points of the thread series")
    ap.add_argument("--cl-tasks", type=int, help="tasks of the clairvoyance-grid line")
    ap.add_argument("--timeout", type=float, default=600, help="seconds allowed to each subprocess")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return

    scale = QUICK if args.quick else FULL
    for key in ("tasks", "realizations", "grid_max", "thread_points", "cl_tasks"):
        if getattr(args, key) is None:
            setattr(args, key, scale[key])
    chosen = [s.strip() for s in args.series.split(",") if s.strip()]
    unknown = set(chosen) - set(SERIES)
    if unknown:
        ap.error(f"unknown series {', '.join(sorted(unknown))} (known: {', '.join(SERIES)})")
    out = Path(args.out)
    targets = {"json": out / "growth.json", "png": out / "growth.png"}
    existing = [str(p) for p in targets.values() if p.exists()]
    if existing and not args.force:
        raise SystemExit(f"{', '.join(existing)}: exists already (--force overwrites)")

    store = Path(args.store) if args.store else resolve_store(load_config(GRID_CONFIG).source, GRID_CONFIG.parent)
    with colosim.open_store(store) as s:
        n_store, r_store_R = s.n_tasks, s.n_realizations
    if r_store_R != 10000:
        print(f"note: the store has R = {r_store_R:,}, not 10,000")
    args.tasks = [n for n in args.tasks if n <= n_store]
    args.cl_tasks = min(args.cl_tasks, n_store)

    info = {"cpu": _cpu_name(), "cores": os.cpu_count(), "numba_threads": numba.config.NUMBA_NUM_THREADS,
            "python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
            "colosim": colosim.__version__, "memory_available_bytes": available_memory()}
    print(f"{info['cpu']}, {info['cores']} cores, {info['numba_threads']} Numba threads; Python {info['python']}, "
          f"NumPy {info['numpy']}, Numba {info['numba']}; {info['memory_available_bytes'] / 2**30:.1f} GiB "
          f"available; {'quick' if args.quick else 'full'} scale, {args.repeat} warm repeats per point")

    t_start = time.perf_counter()
    result = {"machine": info, "quick": args.quick, "repeat": args.repeat, "series": {}}
    series = result["series"]
    if "tasks" in chosen:
        series["tasks"] = series_tasks(args, args.tasks, store)
    if "realizations" in chosen:
        with contextlib.ExitStack() as stack:
            R_max = max(args.realizations)
            if args.r_store:
                r_path = Path(args.r_store)
                if not r_path.exists():
                    make_r_store(r_path, R_max)
            else:
                work = Path(tempfile.mkdtemp(prefix="colosim-growth-"))
                stack.callback(shutil.rmtree, work, True)
                r_path = work / "r-store.h5"
                make_r_store(r_path, R_max)
            with colosim.open_store(r_path) as s:
                if s.n_realizations < R_max or s.n_tasks < R_STORE_TASKS:
                    raise SystemExit(f"{r_path}: {s.n_tasks} × {s.n_realizations}, the R series needs "
                                     f"{R_STORE_TASKS} × {R_max}")
            series["realizations"] = series_realizations(args, args.realizations, r_path)
    if "grid" in chosen or "threads" in chosen:
        shuffled, sizes = grid_subsets(args.grid_max)
        x, y, _ = load_instance(store, 1000, True)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        if "grid" in chosen:
            series["grid"] = series_grid(args, sizes, shuffled, x, y)
        if "threads" in chosen:
            series["threads"] = series_threads(args, shuffled[: args.thread_points], x, y)
        del x, y
    if "clairvoyance" in chosen:
        result["clairvoyance"] = series_clairvoyance(args, store)
    result["seconds"] = time.perf_counter() - t_start
    result["self_peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    summary = ", ".join(f"{k} b = {v['fit']['exponent']:.2f}" for k, v in series.items() if v.get("fit"))
    print(f"\nexponents: {summary or 'none'}; {result['seconds']:.0f} s in all")
    with atomic_path(targets["json"], overwrite=args.force) as tmp:
        tmp.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    written = [targets["json"]]
    if any(k in series for k in PANELS):
        title = (f"colosim instance_metrics, warm median per call; {info['cpu']}, {info['cores']} cores"
                 + (" (quick scale)" if args.quick else ""))
        figure(result, targets["png"], title, args.force)
        written.append(targets["png"])
    print(f"wrote {', '.join(map(str, written))}")


if __name__ == "__main__":
    main()
