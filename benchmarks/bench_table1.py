"""Table 1 at the paper's scale: A-D normality of sums of N = 10, 20, …, 500
tasks, 10,000 nested samples each, 10,000 realizations per sum.

    python benchmarks/bench_table1.py [--store STORE.h5] [--tasks 20000]
        [--repetitions 10000] [--realizations 10000] [--baseline-samples 3]

Times, after JIT warm-up, on the same samples: the plain NumPy/SciPy baseline
(cumulative sums + ``scipy.stats.anderson`` per size), the Numba kernel on one
thread and on all threads (per sample), then the whole table on all threads.
Without --store the realizations are a seeded random gamma population held in
memory; with --store they are the store's ``x`` (memory-mapped).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np
import scipy.stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from colosim.analysis import characterize as ch  # noqa: E402
from colosim.kernels.anderson import nested_sum_statistics  # noqa: E402


def baseline(x, samples, sizes):
    out = np.empty((len(samples), len(sizes)))
    for r, rows in enumerate(samples):
        sums = np.cumsum(np.asarray(x[rows], dtype=np.float64), axis=0)
        for s, n in enumerate(sizes):
            out[r, s] = scipy.stats.anderson(sums[n - 1], method="interpolate").statistic
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store")
    ap.add_argument("--tasks", type=int, default=20_000)
    ap.add_argument("--realizations", type=int, default=10_000)
    ap.add_argument("--repetitions", type=int, default=10_000)
    ap.add_argument("--baseline-samples", type=int, default=3)
    args = ap.parse_args()

    if args.store:
        from colosim.io import open_store

        x = open_store(args.store).x
        where = args.store
    else:
        rng = np.random.default_rng(2017)
        mean = rng.gamma(0.6, 0.045, size=(args.tasks, 1))
        x = (mean * rng.gamma(2.0, 0.5, size=(args.tasks, args.realizations))).astype(np.float32)
        where = "in-memory gamma population"
    sizes = np.array(ch.DEFAULT_SIZES)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, numba threads "
          f"{numba.config.NUMBA_NUM_THREADS}; x {x.shape} from {where}")

    samples = ch.nested_samples(x.shape[0], int(sizes[-1]), 0, max(8, args.baseline_samples), 0, 4)
    nested_sum_statistics(x, samples[:1], sizes)  # JIT warm-up

    k = args.baseline_samples
    t0 = time.perf_counter()
    ref = baseline(x, samples[:k], sizes)
    t_base = (time.perf_counter() - t0) / k
    numba.set_num_threads(1)
    t0 = time.perf_counter()
    got = nested_sum_statistics(x, samples[:8], sizes)[0]
    t_one = (time.perf_counter() - t0) / 8
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    t0 = time.perf_counter()
    nested_sum_statistics(x, samples[:8], sizes)
    t_all = (time.perf_counter() - t0) / 8
    assert np.allclose(got[:k], ref, rtol=1e-9), "kernel differs from scipy.stats.anderson"
    print(f"per sample (50 sizes): scipy {t_base:.3f} s, numba 1 thread {t_one:.3f} s "
          f"({t_base / t_one:.1f}x), numba {numba.get_num_threads()} threads {t_all:.3f} s "
          f"({t_base / t_all:.1f}x)")

    done = [0]
    t0 = time.perf_counter()

    def progress(description, total):
        def advance(n=1):
            done[0] += n
            if done[0] % 1000 < n:
                print(f"  {done[0]}/{total} samples, {time.perf_counter() - t0:.0f} s", flush=True)
        return advance

    table = ch.sums_normality(x, sizes, repetitions=args.repetitions, seed=0, progress=progress)
    elapsed = time.perf_counter() - t0
    print(f"Table 1 ({sizes.size} sizes x {args.repetitions} samples x {x.shape[1]} realizations): "
          f"{elapsed:.1f} s = {elapsed / 60:.2f} min")
    for n in (10, 50, 100, 500):
        share, total = table.at(n)
        print(f"  N = {n:3d}: rejected {100 * share:5.1f}%, mean total usage {total:.2f}")


if __name__ == "__main__":
    main()
