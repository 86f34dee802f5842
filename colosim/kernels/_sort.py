"""One least-significant-digit radix sort, for float32 and float64 values,
and the order statistics of float32 values by radix selection.

Floats map to unsigned keys of their width whose order is the numeric order
(negative: all bits flipped; otherwise the sign bit set). Keys are sorted by
digit passes from the lowest; a pass where every key has the same digit is
skipped. float32 keys take three passes of 11 bits, float64 keys eight
passes of 8 bits.
"""

import numpy as np

from .._jit import jit

_F32_SIGN = np.uint32(1) << np.uint32(31)
_F64_SIGN = np.uint64(1) << np.uint64(63)
_F32_SHIFTS = np.array([0, 11, 22], dtype=np.uint32)
_F32_MASK = np.uint32(2047)
_F64_SHIFTS = np.arange(0, 64, 8).astype(np.uint64)
_F64_MASK = np.uint64(255)


@jit
def _lsd(keys, scratch, shifts, mask):
    """Sort the unsigned ``keys`` (uint32 or uint64, with ``shifts`` and
    ``mask`` of the same type); returns the array holding the result, which
    is ``keys`` or ``scratch``."""
    n = keys.shape[0]
    radix = int(mask) + 1
    passes = shifts.shape[0]
    counts = np.zeros((passes, radix), dtype=np.int64)
    for i in range(n):
        u = keys[i]
        for p in range(passes):
            counts[p, (u >> shifts[p]) & mask] += 1
    src = keys
    dst = scratch
    for p in range(passes):
        c = counts[p]
        if c[(src[0] >> shifts[p]) & mask] == n:
            continue  # every key has this digit: the pass would move nothing
        total = 0
        for d in range(radix):
            k = c[d]
            c[d] = total
            total += k
        for i in range(n):
            d = (src[i] >> shifts[p]) & mask
            dst[c[d]] = src[i]
            c[d] += 1
        src, dst = dst, src
    return src


@jit
def sort_float32(values, out):
    """``out[:]`` = ``values`` (float32) sorted ascending; -0.0 sorts as 0.0
    and is written as 0.0."""
    n = values.shape[0]
    keys = np.empty(n, dtype=np.uint32)
    bits = np.ascontiguousarray(values).view(np.uint32)
    for i in range(n):
        u = bits[i]
        if values[i] == 0:
            u = np.uint32(0)
        keys[i] = ~u if (u & _F32_SIGN) else (u | _F32_SIGN)
    if n > 0:
        keys = _lsd(keys, np.empty(n, dtype=np.uint32), _F32_SHIFTS, _F32_MASK)
    ob = out.view(np.uint32)
    for i in range(n):
        u = keys[i]
        ob[i] = (u ^ _F32_SIGN) if (u & _F32_SIGN) else ~u


@jit
def sort_float64(a, keys, scratch):
    """Sort the float64 array ``a`` in place; ``keys`` and ``scratch`` are
    uint64 work arrays of a's length."""
    n = a.shape[0]
    if n < 2:
        return
    bits = a.view(np.uint64)
    for i in range(n):
        u = bits[i]
        keys[i] = ~u if (u & _F64_SIGN) else (u | _F64_SIGN)
    src = _lsd(keys, scratch, _F64_SHIFTS, _F64_MASK)
    for i in range(n):
        u = src[i]
        bits[i] = (u ^ _F64_SIGN) if (u & _F64_SIGN) else ~u


@jit
def _key32(v, u):
    """The order-preserving uint32 key of float32 ``v`` with bits ``u``
    (-0.0 as 0.0), as :func:`sort_float32` makes it."""
    if v == 0:
        u = np.uint32(0)
    return ~u if (u & _F32_SIGN) else (u | _F32_SIGN)


@jit
def select(a, lo, hi, k):
    """Reorder ``a[lo:hi + 1]`` in place so that ``a[k]`` is its k-th
    smallest, smaller-or-equal values before it and greater-or-equal after
    (Hoare quickselect, median-of-three pivot; duplicates split evenly)."""
    while hi > lo:
        mid = (lo + hi) >> 1
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[lo]:
            a[hi], a[lo] = a[lo], a[hi]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
        pivot = a[mid]
        i, j = lo, hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            return


@jit
def order_statistics_float32(values, ranks, out):
    """``out[r]`` = the ``ranks[r]``-th smallest of the float32 ``values``
    (0-based; ranks ascending), as :func:`sort_float32` would place it, by
    radix selection: one pass counts the keys' top 11 bits, a second
    gathers the keys of the digits that hold a wanted rank, and each rank is
    selected among its digit's keys (quickselect). ``values`` is not changed."""
    n = values.shape[0]
    bits = np.ascontiguousarray(values).view(np.uint32)
    shift = np.uint32(21)
    counts = np.zeros(2048, dtype=np.int64)
    for i in range(n):
        counts[_key32(values[i], bits[i]) >> shift] += 1
    before = np.zeros(2049, dtype=np.int64)  # keys with a digit below d
    for d in range(2048):
        before[d + 1] = before[d] + counts[d]
    wanted = np.zeros(2048, dtype=np.bool_)
    d = 0
    for r in range(ranks.shape[0]):
        while before[d + 1] <= ranks[r]:
            d += 1
        wanted[d] = True
    at = np.full(2048, -1, dtype=np.int64)  # where a wanted digit's keys start
    size = 0
    for d in range(2048):
        if wanted[d]:
            at[d] = size
            size += counts[d]
    keys = np.empty(size, dtype=np.uint32)
    fill = at.copy()
    for i in range(n):
        key = _key32(values[i], bits[i])
        d = key >> shift
        if wanted[d]:
            keys[fill[d]] = key
            fill[d] += 1
    # within a wanted digit, each rank by selection: ranks ascend, so the
    # next one is searched only above the last one found in the same digit
    ob = out.view(np.uint32)
    d = 0
    last = -1
    low = 0
    for r in range(ranks.shape[0]):
        while before[d + 1] <= ranks[r]:
            d += 1
        if d != last:
            low, last = at[d], d
        k = at[d] + ranks[r] - before[d]
        select(keys, low, at[d] + counts[d] - 1, k)
        low = k
        u = keys[k]
        ob[r] = (u ^ _F32_SIGN) if (u & _F32_SIGN) else ~u
