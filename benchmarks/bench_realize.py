"""Realize throughput and peak memory against the disk's write bandwidth.

Builds a synthetic series (or uses ``--series``), then in one run:

1. measures the sequential write bandwidth of the output folder with
   ``dd if=/dev/zero ... conv=fdatasync``;
2. runs ``colosim.sources.realize`` in a fresh process per thread count (so that its
   peak resident set is its own), timing it to the atomic rename (the store is
   fsync'ed before that);
3. prints MB/s of store written, peak RSS, and the ratio realize / dd.

Example (the paper's scale, 8 GB of x and y; needs ~9 GB free in --dir)::

    python benchmarks/bench_realize.py --dir /tmp/bench --tasks 100000 \\
        --realizations 10000 --threads 1,2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# Run from a checkout without installing: import this checkout's colosim.
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

CHILD = r"""
import json, resource, sys, time
from colosim.io import open_series
from colosim.sources.realize import realize
series_path, out, n, r, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
s = open_series(series_path)
t = time.perf_counter()
realize(s, out, n_tasks=n, n_realizations=r, seed=1, threads=threads, source={"series": series_path})
dt = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": dt, "cpu_seconds": ru.ru_utime + ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024}))
"""


def make_series(path: Path, n_tasks: int, mean_records: int, seed: int = 0) -> None:
    """A series of n_tasks tasks with geometric-like lengths (>= 24 records)."""
    from colosim.io import SeriesWriter

    rng = np.random.default_rng(seed)
    lengths = 24 + rng.geometric(1 / max(1, mean_records - 23), n_tasks).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    task_id = np.stack([np.arange(n_tasks, dtype=np.int64), np.zeros(n_tasks, dtype=np.int64)], axis=1)
    block = 1 << 22
    with SeriesWriter(path, task_id=task_id, offsets=offsets, source={"bench": True}, filters={}) as w:
        for a in range(0, int(offsets[-1]), block):
            b = min(int(offsets[-1]), a + block)
            inst = rng.gamma(0.5, 0.04, b - a).astype(np.float32)
            w.write_records(a, inst, (inst * rng.uniform(0.8, 1.2, b - a)).astype(np.float32), np.arange(a, b))


def dd_bandwidth(folder: Path, megabytes: int) -> float:
    """Sequential write MB/s of ``folder`` (dd, fdatasync before it reports)."""
    target = folder / "dd.bench"
    try:
        res = subprocess.run(
            ["dd", "if=/dev/zero", f"of={target}", "bs=16M", f"count={max(1, megabytes // 16)}", "conv=fdatasync"],
            capture_output=True, text=True, check=True,
        )
    finally:
        target.unlink(missing_ok=True)
    m = re.search(r"(\d+) bytes.*copied, ([\d.]+) s", res.stderr)
    return int(m.group(1)) / float(m.group(2)) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, required=True, help="scratch folder (needs room for the store)")
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--realizations", type=int, default=1_000)
    ap.add_argument("--series", type=Path, help="existing series file (default: synthesize one)")
    ap.add_argument("--series-tasks", type=int, default=None, help="tasks of the synthetic series (default 1.2 N)")
    ap.add_argument("--mean-records", type=int, default=300)
    ap.add_argument("--threads", default=str(len(os.sched_getaffinity(0))), help="comma-separated thread counts")
    ap.add_argument("--dd-mb", type=int, default=None,
                    help="size of the dd test write (default: the store's size, at most 8000 MB; "
                         "short writes measure the host's cache rather than the disk)")
    ap.add_argument("--keep", action="store_true", help="keep the store (deleted by default)")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)

    series = args.series
    if series is None:
        series = args.dir / "bench-series.h5"
        n_series = args.series_tasks or int(args.tasks * 1.2)
        t = time.perf_counter()
        make_series(series, n_series, args.mean_records)
        print(f"series: {n_series} tasks, {series.stat().st_size / 1e6:.0f} MB, "
              f"built in {time.perf_counter() - t:.1f} s")

    out = args.dir / "bench-store.h5"
    # warm-up (imports, page cache of the series' task table)
    subprocess.run([sys.executable, "-c", CHILD, str(series), str(out), "10", "10", "1"],
                   check=True, capture_output=True, env=CHILD_ENV)
    size_mb = 2 * args.tasks * args.realizations * 4 / 1e6
    dd_mb = args.dd_mb or int(min(8000, max(64, size_mb)))
    dd = dd_bandwidth(args.dir, dd_mb)
    print(f"disk sequential write (dd conv=fdatasync, {dd_mb} MB): {dd:.0f} MB/s")
    print(f"store: N={args.tasks} x R={args.realizations}, x and y = {size_mb:.0f} MB")
    print(f"{'threads':>7} {'seconds':>8} {'cpu s':>8} {'MB/s':>8} {'peak RSS MB':>12} {'vs dd':>6}")
    results = []
    for threads in (int(t) for t in args.threads.split(",")):
        res = subprocess.run(
            [sys.executable, "-c", CHILD, str(series), str(out), str(args.tasks), str(args.realizations), str(threads)],
            check=True, capture_output=True, text=True, env=CHILD_ENV,
        )
        r = json.loads(res.stdout.strip().splitlines()[-1])
        mbps = size_mb / r["seconds"]
        results.append(dict(threads=threads, **r, mb_per_s=mbps, dd_mb_per_s=dd, ratio=mbps / dd))
        print(f"{threads:>7} {r['seconds']:>8.1f} {r['cpu_seconds']:>8.1f} {mbps:>8.0f} "
              f"{r['peak_rss_mb']:>12.0f} {mbps / dd:>6.2f}")
        if not args.keep:
            out.unlink(missing_ok=True)
    dd_after = dd_bandwidth(args.dir, dd_mb)
    print(f"disk sequential write again after the runs: {dd_after:.0f} MB/s "
          "(ratios against it: " + ", ".join(f"{r['mb_per_s'] / dd_after:.2f}" for r in results) + ")")
    if args.series is None:
        series.unlink(missing_ok=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
