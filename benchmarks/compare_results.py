"""Compare results tables row by row: the same header, the same rows in the
same order, every value equal — or, for the columns given with --rtol,
within that relative tolerance.

    python benchmarks/compare_results.py BEFORE.csv AFTER.csv [--rtol severity=1e-5] [--where estimator=gpa:0.01]

Prints, per column, how many rows are equal, how many differ within the
tolerance and the largest relative difference; exits 1 when a header, a row
count or any value outside the tolerances differs. Several pairs may be
given: BEFORE1.csv AFTER1.csv BEFORE2.csv AFTER2.csv ...
"""

from __future__ import annotations

import argparse
import csv
import math
import sys


def _number(text: str):
    try:
        return float(text)
    except ValueError:
        return None


def compare(before: str, after: str, rtol: dict[str, float]) -> bool:
    with open(before, newline="") as fa, open(after, newline="") as fb:
        a, b = list(csv.reader(fa)), list(csv.reader(fb))
    if not a or not b or a[0] != b[0]:
        print(f"{before} / {after}: headers differ: {a[:1]} / {b[:1]}")
        return False
    header = a[0]
    if len(a) != len(b):
        print(f"{before} / {after}: {len(a) - 1} / {len(b) - 1} rows")
        return False
    equal = {c: 0 for c in header}
    within = {c: 0 for c in header}
    worst = {c: 0.0 for c in header}
    bad = []
    for line, (ra, rb) in enumerate(zip(a[1:], b[1:]), start=2):
        for c, va, vb in zip(header, ra, rb):
            if va == vb:
                equal[c] += 1
                continue
            x, y = _number(va), _number(vb)
            rel = abs(x - y) / max(abs(x), abs(y)) if x is not None and y is not None else math.inf
            worst[c] = max(worst[c], rel)
            if c in rtol and rel <= rtol[c]:
                within[c] += 1
            else:
                bad.append((line, c, va, vb))
    n = len(a) - 1
    print(f"{before} / {after}: {n} rows, {len(header)} columns")
    for c in header:
        if equal[c] == n:
            continue
        print(f"  {c}: {equal[c]} equal, {within[c]} within rtol {rtol.get(c, 0):g}, "
              f"{n - equal[c] - within[c]} beyond; largest relative difference {worst[c]:.2e}")
    for line, c, va, vb in bad[:10]:
        print(f"  line {line}: {c} {va} / {vb}")
    if not bad and all(equal[c] == n for c in header):
        print("  every value identical")
    return not bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+", help="BEFORE.csv AFTER.csv, one or more pairs")
    ap.add_argument("--rtol", action="append", default=[], metavar="COLUMN=TOL",
                    help="compare COLUMN within this relative tolerance (repeatable)")
    args = ap.parse_args()
    if len(args.tables) % 2:
        ap.error("give the tables in pairs: BEFORE.csv AFTER.csv ...")
    rtol = {}
    for item in args.rtol:
        column, _, tol = item.partition("=")
        rtol[column] = float(tol)
    ok = all([compare(args.tables[i], args.tables[i + 1], rtol) for i in range(0, len(args.tables), 2)])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
