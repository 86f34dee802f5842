"""One least-significant-digit radix sort of float64 values, and the order
statistics of float32 values by radix selection (any values, and a faster
one for rows known to hold no NaN and no negative value).

Floats map to unsigned keys of their width whose order is the numeric order
(negative: all bits flipped; otherwise the sign bit set). float64 keys are
sorted by eight digit passes of 8 bits from the lowest; a pass where every
key has the same digit is skipped. float32 keys are selected digit by digit
from the top (11, 11 and 10 bits).
"""

import numpy as np

from .._jit import jit

_F32_SIGN = np.uint32(1) << np.uint32(31)
_F64_SIGN = np.uint64(1) << np.uint64(63)
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
    (-0.0 as 0.0), so that -0.0 and 0.0 are one value."""
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


@jit(inline="always")
def _float_bits(u):
    """The float32 bits of the order-preserving key ``u`` (``_keys32``)."""
    return (u ^ _F32_SIGN) if (u & _F32_SIGN) else ~u


@jit
def _keys32(values, keys, counts):
    """The order-preserving keys of float32 ``values`` (-0.0 as 0.0) into
    ``keys``, and the histogram of their top 11 bits added into the four
    rows of ``counts`` (4, 2048): consecutive values count into different
    rows, so that runs of equal digits do not wait on one counter."""
    n = values.shape[0]
    bits = np.ascontiguousarray(values).view(np.uint32)
    top = np.uint32(21)
    one = np.uint32(1)
    c0, c1, c2, c3 = counts[0], counts[1], counts[2], counts[3]
    i = 0
    while i + 4 <= n:
        # branch-free: zero (either sign) to +0.0, then flip as in _key32
        u0 = bits[i] & np.uint32(-np.int32((bits[i] << one) != 0))
        u1 = bits[i + 1] & np.uint32(-np.int32((bits[i + 1] << one) != 0))
        u2 = bits[i + 2] & np.uint32(-np.int32((bits[i + 2] << one) != 0))
        u3 = bits[i + 3] & np.uint32(-np.int32((bits[i + 3] << one) != 0))
        k0 = u0 ^ (np.uint32(-np.int32(u0 >> np.uint32(31))) | _F32_SIGN)
        k1 = u1 ^ (np.uint32(-np.int32(u1 >> np.uint32(31))) | _F32_SIGN)
        k2 = u2 ^ (np.uint32(-np.int32(u2 >> np.uint32(31))) | _F32_SIGN)
        k3 = u3 ^ (np.uint32(-np.int32(u3 >> np.uint32(31))) | _F32_SIGN)
        keys[i], keys[i + 1], keys[i + 2], keys[i + 3] = k0, k1, k2, k3
        c0[k0 >> top] += 1
        c1[k1 >> top] += 1
        c2[k2 >> top] += 1
        c3[k3 >> top] += 1
        i += 4
    while i < n:
        k0 = _key32(values[i], bits[i])
        keys[i] = k0
        c0[k0 >> top] += 1
        i += 1


@jit(inline="always")
def _wanted_room(ranks, cum, slot):
    """Consecutive room for the keys of the digits (buckets) holding a
    wanted rank: ``slot[d]`` (-1 for every digit beforehand) becomes where
    digit d's keys start, for those digits, given ``cum[d]``, the keys
    below digit d. Returns the room's size, the number of such digits and
    the first of them."""
    size = 0
    wanted = 0
    first = 0
    d = 0
    for r in range(ranks.shape[0]):
        while cum[d + 1] <= ranks[r]:
            d += 1
        if slot[d] < 0:
            slot[d] = size
            size += cum[d + 1] - cum[d]
            if wanted == 0:
                first = d
            wanted += 1
    return size, wanted, first


@jit
def order_statistics_float32(values, ranks, out, work):
    """``out[r]`` = the ``ranks[r]``-th smallest of the float32 ``values``
    (0-based; ranks ascending; -0.0 is found as 0.0), by
    radix selection on the keys' digits from the top (11, 11 and 10 bits):
    one pass over the values makes the keys and counts their top digits, a
    second gathers the keys of the top digits that hold a wanted rank, and
    within such a digit the next digit is counted over its keys and the
    last over those that share the first two — the counts name the key.
    ``values`` is not changed.

    ``work`` holds the scratch arrays, made by :func:`select_work` for
    values of up to some length and reused from row to row."""
    keys, sub, counts, c2, c3, before, fill, at, step = work
    n = values.shape[0]
    top = np.uint32(21)
    counts[:] = 0
    _keys32(values, keys, counts)
    # merged top-digit counts, and the keys with a digit below d
    before[0] = 0
    for d in range(2048):
        before[d + 1] = before[d] + counts[0, d] + counts[1, d] + counts[2, d] + counts[3, d]
    # the top digits holding a wanted rank get consecutive room in ``sub``
    for d in range(2048):
        at[d] = -1
    size, wanted, _ = _wanted_room(ranks, before, at)
    if wanted <= 3:
        # a pass per wanted digit, its write position kept in a register
        for d in range(2048):
            if at[d] >= 0:
                pos = at[d]
                ud = np.uint32(d)
                for i in range(n):
                    key = keys[i]
                    sub[pos] = key
                    pos += np.int64((key >> top) == ud)
    else:
        # one pass for all: every other digit writes to a spare slot past
        # the room (and stays there)
        for d in range(2048):
            step[d] = at[d] >= 0
            fill[d] = at[d] if at[d] >= 0 else size
        for i in range(n):
            key = keys[i]
            d = key >> top
            pos = fill[d]
            sub[pos] = key
            fill[d] = pos + step[d]
    ob = out.view(np.uint32)
    d = 0
    last_d = -1
    last_e = -1
    for r in range(ranks.shape[0]):
        while before[d + 1] <= ranks[r]:
            d += 1
        if d != last_d:
            # the second digit (bits 10-20) over this top digit's keys,
            # consecutive keys counted into different rows
            lo, hi = at[d], at[d] + before[d + 1] - before[d]
            counts[:] = 0
            _digit_counts(sub, lo, hi, np.uint32(10), np.uint32(2047), counts)
            for e in range(2048):
                c2[e] = counts[0, e] + counts[1, e] + counts[2, e] + counts[3, e]
            last_d, last_e, e, below_e = d, -1, 0, 0
        rank = ranks[r] - before[d]
        while below_e + c2[e] <= rank:
            below_e += c2[e]
            e += 1
        if e != last_e:
            # the keys that share both digits, compacted past the top
            # digits' room, and the last digit (bits 0-9) counted over them
            ue = np.uint32(e)
            pos = size
            for s in range(lo, hi):
                u = sub[s]
                keys[pos - size] = u
                pos += np.int64(((u >> np.uint32(10)) & np.uint32(2047)) == ue)
            counts[:, :1024] = 0
            _digit_counts(keys, 0, pos - size, np.uint32(0), np.uint32(1023), counts)
            for f in range(1024):
                c3[f] = counts[0, f] + counts[1, f] + counts[2, f] + counts[3, f]
            last_e, f, below_f = e, 0, below_e
        while below_f + c3[f] <= rank:
            below_f += c3[f]
            f += 1
        u = (np.uint32(d) << top) | (np.uint32(e) << np.uint32(10)) | np.uint32(f)
        ob[r] = _float_bits(u)


@jit
def _digit_counts(keys, lo, hi, shift, mask, counts):
    """Counts of the digit ``(key >> shift) & mask`` of ``keys[lo:hi]``
    added into the four rows of ``counts``, consecutive keys into different
    rows."""
    c0, c1, c2, c3 = counts[0], counts[1], counts[2], counts[3]
    s = lo
    while s + 4 <= hi:
        c0[(keys[s] >> shift) & mask] += 1
        c1[(keys[s + 1] >> shift) & mask] += 1
        c2[(keys[s + 2] >> shift) & mask] += 1
        c3[(keys[s + 3] >> shift) & mask] += 1
        s += 4
    while s < hi:
        c0[(keys[s] >> shift) & mask] += 1
        s += 1


@jit
def select_work(n):
    """Scratch arrays for :func:`order_statistics_float32` on values of up
    to ``n`` entries."""
    return (np.empty(n, dtype=np.uint32), np.empty(n + 1, dtype=np.uint32), np.empty((4, 2048), dtype=np.int32),
            np.empty(2048, dtype=np.int64), np.empty(1024, dtype=np.int64), np.empty(2049, dtype=np.int64),
            np.empty(2048, dtype=np.int64), np.empty(2048, dtype=np.int64), np.empty(2048, dtype=np.int64))


#: buckets of one level of :func:`order_statistics_nonneg`, and the largest
#: bucket it sorts instead of counting again
_NONNEG_BUCKETS = 1024
_NONNEG_SORTED = 128


@jit
def _range_counts(bits, n, base, shift, counts):
    """Counts of ``((bits & 0x7FFFFFFF) - base) >> shift`` over ``bits[:n]``
    added into the four rows of ``counts``, consecutive values into
    different rows."""
    c0, c1, c2, c3 = counts[0], counts[1], counts[2], counts[3]
    m = np.uint32(0x7FFFFFFF)
    i = 0
    while i + 4 <= n:
        c0[((bits[i] & m) - base) >> shift] += 1
        c1[((bits[i + 1] & m) - base) >> shift] += 1
        c2[((bits[i + 2] & m) - base) >> shift] += 1
        c3[((bits[i + 3] & m) - base) >> shift] += 1
        i += 4
    while i < n:
        c0[((bits[i] & m) - base) >> shift] += 1
        i += 1


#: a bucket holding at most this share of a level's keys is gathered by a
#: branch, seldom taken; a larger one is first tried as a tie (one key
#: repeated)
_NONNEG_FEW = 16


@jit
def _gather_bucket(bits, n, lo, width, c, sub):
    """The ``c`` keys of ``bits[:n]`` (sign cleared) in ``[lo, lo + width]``
    into ``sub[:c]``, in their order. A bucket of one key (one key wide,
    or a tie, common in usage rows, found by a count of its first key, which
    vectorizes) is filled, not gathered."""
    m = np.uint32(0x7FFFFFFF)
    if width == 0:
        sub[:c] = lo
        return
    pos = 0
    if c * _NONNEG_FEW <= n:
        # few keys: a branch seldom taken
        for i in range(n):
            u = bits[i] & m
            if u - lo <= width:
                sub[pos] = u
                pos += 1
        return
    # many keys: perhaps a tie
    i = 0
    while (bits[i] & m) - lo > width:
        i += 1
    v = bits[i] & m
    same = 0
    for j in range(i, n):
        same += np.int32((bits[j] & m) == v)
    if same == c:
        sub[:c] = v
        return
    # every key is written and the room advances past the bucket's own: no branch, which a bucket holding an
    # unpredictable share of the keys (tie-heavy rows) would mispredict. sub[c] may be written too (a key after
    # the bucket's last): sub has room for n keys and c < n (the smallest and largest keys are in different
    # buckets), and only sub[:c] is read
    for j in range(i, n):
        u = bits[j] & m
        sub[pos] = u
        pos += np.int64(u - lo <= width)


@jit
def _nonneg_level(bits, n, ranks, kmin, kmax, counts, cum, slot, fill, sub):
    """One level of :func:`order_statistics_nonneg` over the keys ``bits[:n]``
    (each in ``[kmin, kmax]``, kmin < kmax): their histogram in at most
    :data:`_NONNEG_BUCKETS` buckets of equal width spanning that range (fewer
    for fewer keys), into
    ``cum`` (keys below each bucket), and the keys of the buckets holding a
    wanted rank gathered into consecutive room of ``sub`` (bucket d's from
    ``slot[d]``; -1 for the others; one wanted bucket by
    :func:`_gather_bucket`)."""
    span = kmax - kmin
    # fewer buckets for fewer keys (about four keys a bucket, at least 16): clearing and adding up the counts
    # costs per bucket
    most = _NONNEG_BUCKETS
    while most > 16 and most * 4 > n:
        most //= 2
    shift = np.uint32(0)
    while (span >> shift) >= np.uint32(most):
        shift += np.uint32(1)
    nb = int(span >> shift) + 1
    counts[:, :nb] = 0
    _range_counts(bits, n, kmin, shift, counts)
    c0, c1, c2, c3 = counts[0], counts[1], counts[2], counts[3]
    for d in range(nb):  # vectorizes
        c0[d] += c1[d] + c2[d] + c3[d]
    cum[0] = 0
    for d in range(nb):
        cum[d + 1] = cum[d] + c0[d]
    slot[:nb] = -1
    _, wanted, first = _wanted_room(ranks, cum, slot)
    m = np.uint32(0x7FFFFFFF)
    if wanted == 1:
        lo = kmin + (np.uint32(first) << shift)
        _gather_bucket(bits, n, lo, (np.uint32(1) << shift) - np.uint32(1), cum[first + 1] - cum[first], sub)
    else:
        fill[:nb] = slot[:nb]
        for i in range(n):
            u = bits[i] & m
            d = (u - kmin) >> shift
            if slot[d] >= 0:
                sub[fill[d]] = u
                fill[d] += 1


@jit(inline="always")
def _nonneg_bucket(ranks, r, d, cum, slot):
    """The bucket holding ``ranks[r]`` at a level (searched from bucket d
    on): its keys' room ``sub[lo:hi]``, the keys below it, the end ``r2`` of
    the ranks it holds, and its number."""
    while cum[d + 1] <= ranks[r]:
        d += 1
    lo = slot[d]
    hi = lo + cum[d + 1] - cum[d]
    r2 = r
    while r2 < ranks.shape[0] and ranks[r2] < cum[d + 1]:
        r2 += 1
    return lo, hi, cum[d], r2, d


@jit(inline="always")
def _nonneg_direct(seg, ranks, r, r2, below, ob):
    """A bucket's wanted keys when it holds one key or few (sorted); False,
    and nothing written, when it needs more."""
    a = seg.min()
    if a == seg.max():
        for q in range(r, r2):
            ob[q] = a
        return True
    if seg.shape[0] <= _NONNEG_SORTED:
        seg.sort()
        for q in range(r, r2):
            ob[q] = seg[ranks[q] - below]
        return True
    return False


@jit
def _nonneg_second(seg, ranks, ob, out, level, fallback):
    """The wanted ranks of a large first-level bucket ``seg`` (keys), by a
    second level over its own range; its large buckets by
    :func:`order_statistics_float32`."""
    counts, cum, slot, fill, sub = level
    _nonneg_level(seg, seg.shape[0], ranks, seg.min(), seg.max(), counts, cum, slot, fill, sub)
    r = d = 0
    while r < ranks.shape[0]:
        lo, hi, below, r2, d = _nonneg_bucket(ranks, r, d, cum, slot)
        part = sub[lo:hi]
        if not _nonneg_direct(part, ranks, r, r2, below, ob):
            order_statistics_float32(part.view(np.float32), ranks[r:r2] - below, out[r:r2], fallback)
        r = r2


@jit
def order_statistics_nonneg(values, ranks, out, kmin, kmax, work):
    """What :func:`order_statistics_float32` gives, bit for bit, for float32
    ``values`` with no NaN and no negative value, but that -0.0 is found as
    0.0 (that one may find -0.0, which its keys put just below 0.0):
    ``kmin`` and ``kmax`` are the smallest and largest of their bits with
    the sign cleared (the keys; their order is the values' order). A level
    counts the keys in up to 1,024 buckets of equal width over the keys'
    own range (not fixed digits: a row's values span few binades) and
    gathers the keys of the buckets holding a wanted rank; a bucket of one
    key gives it, a small one is sorted, a larger one gets a second level,
    and a still larger one the general selection. ``work`` from
    :func:`nonneg_work`."""
    level, deeper, fallback = work
    ob = out.view(np.uint32)
    if kmax == kmin:
        for r in range(ranks.shape[0]):
            ob[r] = kmin
        return
    counts, cum, slot, fill, sub = level
    _nonneg_level(values.view(np.uint32), values.shape[0], ranks, kmin, kmax, counts, cum, slot, fill, sub)
    r = d = 0
    while r < ranks.shape[0]:
        lo, hi, below, r2, d = _nonneg_bucket(ranks, r, d, cum, slot)
        seg = sub[lo:hi]
        if not _nonneg_direct(seg, ranks, r, r2, below, ob):
            _nonneg_second(seg, ranks[r:r2] - below, ob[r:r2], out[r:r2], deeper, fallback)
        r = r2


@jit
def _nonneg_level_work(n):
    return (np.empty((4, _NONNEG_BUCKETS), dtype=np.int32), np.empty(_NONNEG_BUCKETS + 1, dtype=np.int64),
            np.empty(_NONNEG_BUCKETS, dtype=np.int64), np.empty(_NONNEG_BUCKETS, dtype=np.int64),
            np.empty(n, dtype=np.uint32))


@jit
def nonneg_work(n):
    """Scratch arrays for :func:`order_statistics_nonneg` on values of up to
    ``n`` entries (the general selection's among them)."""
    return _nonneg_level_work(n), _nonneg_level_work(n), select_work(n)
