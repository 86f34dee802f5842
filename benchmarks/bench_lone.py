"""One colosim.run call against the vectorized NumPy baseline
(benchmarks/numpy_baseline.py) on the same 1,000 × 10,000 instance, both
warm (median of repeats after a first call), with m_abs and q compared.

    python benchmarks/bench_lone.py --store STORE.h5 [--repeat 5]

Also prints two floors: one read of the instance's x from its store (its
bytes read from the file into a ready buffer, from the page cache: what a
caller whose data lives in a store pays at least), and one pass over x in
memory (NumPy's max, the fastest thing a call on in-memory arrays can do);
and where a call's time goes: checking x and y
(``as_usage_matrix``; x's values only where the statistics do not check
them), the statistics, the packing and the evaluation
(the profile of ``instance_metrics``), each a median over the repeats.
Instance 0 of the store (SPEC §6, seed 1).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import colosim  # noqa: E402
from benchmarks import numpy_baseline  # noqa: E402
from benchmarks.bench_run import ESTIMATORS  # noqa: E402
from colosim.api import as_usage_matrix  # noqa: E402
from colosim.engine import checks_in_statistics, instance_metrics  # noqa: E402
from colosim.model.grid import GridPoint  # noqa: E402
from colosim.runner.sweep import instance_rows  # noqa: E402


def median_time(fn, repeat):
    fn()  # warm: compiled, caches touched
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def file_read_time(path, repeat) -> float:
    """Median seconds of reading the store's x dataset whole (contiguous in
    the file) into a preallocated buffer."""
    import h5py

    with h5py.File(path, "r") as f:
        ds = f["x"]
        offset, size = ds.id.get_offset(), ds.id.get_storage_size()
    if offset is None:
        raise SystemExit(f"{path}: x is not stored contiguously; the read floor needs a store from colosim generate")
    buf = bytearray(size)
    with open(path, "rb", buffering=0) as fh:

        def read():
            fh.seek(offset)
            if fh.readinto(buf) != size:
                raise SystemExit(f"{path}: x is shorter than its {size} bytes")

        seconds, _ = median_time(read, repeat)
    return seconds


def split(x, y, spec, repeat):
    """Median milliseconds of checking x and y and of the statistics,
    packing and evaluation of one call at ``spec``."""
    point = GridPoint.make(spec, "best-fit", 1.0, 1.0, "inst", True, 1.0)  # colosim.run's defaults
    # what a call checks before the statistics: y's values, x's shape (x's
    # values are checked in the statistics pass where the point allows)
    fused = x.dtype == np.float32 and checks_in_statistics(point)
    check, _ = median_time(lambda: (as_usage_matrix("x", x, check=not fused), as_usage_matrix("y", y)), repeat)
    parts = {"statistics": [], "packing": [], "evaluation": []}
    unchecked = "x" if fused else None
    instance_metrics(x, y, [point], unchecked=unchecked)
    for _ in range(repeat):
        work = {}
        instance_metrics(x, y, [point], work, unchecked=unchecked)
        for key in parts:
            parts[key].append(work[key])
    return [check * 1e3] + [statistics.median(v) * 1e3 for v in parts.values()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True)
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with colosim.open_store(args.store) as s:
        if s.n_tasks != args.tasks:
            raise SystemExit(f"{args.store}: {s.n_tasks} tasks, not --tasks {args.tasks}: the read floor reads the "
                             "store's whole x, which is then the instance (colosim generate -n TASKS)")
        idx = instance_rows(1, 0, s.n_tasks, args.tasks)
        x, y = s.rows(idx, "x"), s.rows(idx, "y")
    npass, _ = median_time(lambda: float(x.max()), args.repeat)
    read = file_read_time(args.store, args.repeat)
    print(f"instance {x.shape} {x.dtype}; numba threads {numba.get_num_threads()}; "
          f"one read of x from the store: {read * 1e3:.1f} ms; one pass over x in memory: {npass * 1e3:.1f} ms")
    print(f"{'estimator':<14}{'NumPy ms':>10}{'colosim ms':>12}{'ratio':>8}{'÷ read':>8}{'÷ pass':>8}{'same':>6}   "
          f"split ms: check x,y | statistics | packing | evaluation")
    ratios = []
    for spec in ESTIMATORS:
        fast, got = median_time(lambda spec=spec: colosim.run(x, y, spec), args.repeat)
        slow, (m_abs, _, q) = median_time(lambda spec=spec: numpy_baseline.grid_point(x, y, spec), args.repeat)
        ratios.append(slow / fast)
        parts = " | ".join(f"{v:.2f}" for v in split(x, y, spec, args.repeat))
        print(f"{spec:<14}{slow * 1e3:>10.1f}{fast * 1e3:>12.1f}{slow / fast:>8.1f}"
              f"{fast / read:>8.1f}{fast / npass:>8.1f}"
              f"{'yes' if got.m_abs == m_abs and got.q == q else 'NO':>6}   {parts}")
    print(f"geometric mean ratio {math.exp(np.mean(np.log(ratios))):.1f}, lowest {min(ratios):.1f}")


if __name__ == "__main__":
    main()
