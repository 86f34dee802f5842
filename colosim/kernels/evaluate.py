"""Per-bin running sums over the evaluation columns and the violation counts
q_j (SPEC §5), for many packings of one instance at once.

Packings of the same instance share most of their bins (a rebalanced packing
differs from its online packing only in the bins that gave or took tasks;
First Fit and Best Fit often open the same first bins), so bins are
deduplicated first: each distinct set of tasks is summed once, and its sums
are compared with every capacity it is used with.

The evaluation is cache-tiled: the instance's columns are laid out in
contiguous tiles, and every distinct bin is summed over a tile (in ascending
instance position) before moving to the next tile. float32 data is summed in
float32 — twice the SIMD lanes of float64 — and the few sums that lie within
their rounding error of the capacity are recomputed in float64, so the
counts are exactly those of float64 sums. Tiles are grouped into a fixed number of chunks run in parallel, each
with its own accumulators, merged in chunk order afterwards: counts and
severity sums are the same bits whatever the thread count.
"""

import numpy as np
from numba import prange

from .._jit import jit, pjit

TILE = 128
CHUNKS = 32


@jit
def bin_members(assign, n_bins):
    """CSR member lists of a packing's bins, each in ascending position:
    bin j holds ``members[start[j]:start[j + 1]]``."""
    n = assign.shape[0]
    start = np.zeros(n_bins + 1, dtype=np.int64)
    for i in range(n):
        start[assign[i] + 1] += 1
    for j in range(n_bins):
        start[j + 1] += start[j]
    fill = start[:-1].copy()
    members = np.empty(n, dtype=np.int64)
    for i in range(n):
        j = assign[i]
        members[fill[j]] = i
        fill[j] += 1
    return members, start


@jit
def _table_size(n):
    """A power of two at least twice ``n``: open-addressing tables stay at
    most half full."""
    size = 16
    while size < 2 * n:
        size *= 2
    return size


@jit
def deduplicate(assigns, n_bins, cap_index, n_caps, first_index, n_firsts, keys):
    """Distinct bins over packings ``p`` (rows of ``assigns``) and the
    distinct (bin, capacity, first evaluation column) triples to count.

    A bin's hash is the sum of its tasks' random ``keys``; bins and triples
    are looked up in open-addressing tables (linear probing), and bins with
    equal hashes are compared member by member.

    Returns ``members, ustart`` (CSR of distinct bins), ``pair_bin``,
    ``pair_cap``, ``pair_first`` (one entry per distinct triple) and
    ``bin_pair`` (P, max m): the triple of packing p's bin j.
    """
    P, n = assigns.shape
    max_m = 0
    total = 0
    for p in range(P):
        max_m = max(max_m, n_bins[p])
        total += n_bins[p]
    bin_pair = np.full((P, max_m), -1, dtype=np.int64)
    members = np.empty(P * n, dtype=np.int64)
    ustart = np.zeros(total + 1, dtype=np.int64)
    uhash = np.empty(total, dtype=np.uint64)
    size = _table_size(total)
    mask = np.uint64(size - 1)
    bins_at = np.full(size, -1, dtype=np.int64)  # slot -> distinct bin
    pairs_at = np.full(size, -1, dtype=np.int64)  # slot -> triple
    pair_key = np.empty(total, dtype=np.int64)
    pair_bin = np.empty(total, dtype=np.int64)
    pair_cap = np.empty(total, dtype=np.int64)
    pair_first = np.empty(total, dtype=np.int64)
    n_unique = 0
    n_pairs = 0
    for p in range(P):
        mem, start = bin_members(assigns[p], n_bins[p])
        for j in range(n_bins[p]):
            a, b = start[j], start[j + 1]
            h = np.uint64(b - a)
            for s in range(a, b):
                h += keys[mem[s]]
            slot = (h ^ (h >> np.uint64(29))) & mask
            uid = -1
            while bins_at[slot] >= 0:
                cand = bins_at[slot]
                ua, ub = ustart[cand], ustart[cand + 1]
                if uhash[cand] == h and ub - ua == b - a:
                    same = True
                    for s in range(b - a):
                        if members[ua + s] != mem[a + s]:
                            same = False
                            break
                    if same:
                        uid = cand
                        break
                slot = (slot + np.uint64(1)) & mask
            if uid < 0:
                uid = n_unique
                base = ustart[uid]
                for s in range(b - a):
                    members[base + s] = mem[a + s]
                ustart[uid + 1] = base + (b - a)
                uhash[uid] = h
                bins_at[slot] = uid
                n_unique += 1
            key = (uid * n_caps + cap_index[p]) * n_firsts + first_index[p]
            hk = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
            slot = (hk >> np.uint64(32)) & mask
            pid = -1
            while pairs_at[slot] >= 0:
                if pair_key[pairs_at[slot]] == key:
                    pid = pairs_at[slot]
                    break
                slot = (slot + np.uint64(1)) & mask
            if pid < 0:
                pid = n_pairs
                pairs_at[slot] = pid
                pair_key[pid] = key
                pair_bin[pid] = uid
                pair_cap[pid] = cap_index[p]
                pair_first[pid] = first_index[p]
                n_pairs += 1
            bin_pair[p, j] = pid
    return (members[: ustart[n_unique]], ustart[: n_unique + 1], pair_bin[:n_pairs],
            pair_cap[:n_pairs], pair_first[:n_pairs], bin_pair)


def column_tiles(x, first, stop):
    """Columns ``[first, stop)`` of x re-laid as contiguous tiles
    ``(n_tiles, n, TILE)``, the last one padded with zeros.

    Reading a tile then streams one contiguous block instead of touching n
    rows a page apart.
    """
    n = x.shape[0]
    width = stop - first
    n_tiles = (width + TILE - 1) // TILE
    tiles = np.zeros((n_tiles, n, TILE), dtype=x.dtype)
    full = width // TILE
    if full:
        tiles[:full] = x[:, first : first + full * TILE].reshape(n, full, TILE).transpose(1, 0, 2)
    if full < n_tiles:
        tiles[full, :, : width - full * TILE] = x[:, first + full * TILE : stop]
    return tiles


@pjit
def task_maxima(tiles):
    """Each task's largest value over all the laid-out columns, ``(n,)``."""
    n_tiles, n, w = tiles.shape
    out = np.empty(n, dtype=tiles.dtype)
    for i in prange(n):
        m = tiles[0, i, 0]
        for tile in range(n_tiles):
            for t in range(w):
                m = max(m, tiles[tile, i, t])
        out[i] = m
    return out


@jit
def _bound(maxima, a, b, members):
    """The float64 sum of the bin's tasks' maxima, in the same order as the
    float64 sums it bounds: rounding is monotone, so no column's sum exceeds
    it, and none can violate a capacity it does not exceed."""
    bound = 0.0
    for s in range(a, b):
        bound += np.float64(maxima[members[s]])
    return bound


@jit
def _tally(acc, part, lo, w, c, above, below, block, members, a, b):
    """Violations of capacity ``c`` on columns ``[lo, w)`` of a tile whose
    sums are ``acc``, and their summed excess ``S - c``: sums at or above
    ``above`` violate; those in ``[below, above)`` are decided by their
    float64 sum in ascending position. ``above``/``below`` have the sums'
    type; ``part`` is (TILE,) float64 scratch.

    The first pass covers the whole tile with masks, so that it vectorizes,
    and the excesses are added by pairwise halving (a fixed order whose
    steps vectorize too).
    """
    near = np.int32(0)
    sure = np.int32(0)
    for t in range(TILE):
        inside = (t >= lo) & (t < w)
        v = acc[t]
        near += np.int32(inside & (v >= below))
        keep = inside & (v >= above)
        sure += np.int32(keep)
        part[t] = (np.float64(v) - c) if keep else 0.0
    if near == 0:
        return 0, 0.0
    count = np.int64(sure)
    excess = 0.0
    if sure > 0:
        h = TILE
        while h > 1:
            h //= 2
            for t in range(h):
                part[t] += part[t + h]
        excess = part[0]
    if near > sure:
        for t in range(lo, w):
            v = acc[t]
            if (v >= below) & (v < above):
                exact = 0.0
                for s in range(a, b):
                    exact += np.float64(block[members[s], t])
                if exact > c:
                    count += 1
                    excess += exact - c
    return count, excess


@jit
def _count_pairs(acc, part, w, tile, block, members, a, b, pairs, p0, p1, pair_start, pair_cap, capacities,
                 error_scale, counts, severity):
    """Count the violations of the bin ``members[a:b]`` whose sums over the
    tile are ``acc``, for each of its (capacity, start) pairs ``pairs[p0:p1]``,
    and add their summed ``(S - c) / c`` to ``severity``.

    ``acc`` may err by up to ``error_scale * c`` (its float32 rounding); every
    sum within that band — and at least 1e-5 × c — of the capacity is
    recomputed in float64 in ascending position, so the counts are exactly
    those of float64 sums (SPEC §5). ``error_scale`` = 0 means exact sums, and
    a violation is S > c (S == c is not one).
    """
    for k in range(p0, p1):
        q = pairs[k]
        lo = max(0, pair_start[q] - tile * TILE)
        if lo >= w:
            continue
        c = capacities[pair_cap[q]]
        if error_scale > 0:
            # float32 thresholds, so that the first pass compares float32
            # lanes; rounding them moves them by far less than the band
            tol = max(1e-5 * c, error_scale * c)
            count, excess = _tally(acc, part, lo, w, c, np.float32(c + tol), np.float32(c - tol),
                                   block, members, a, b)
        else:
            above = np.nextafter(c, np.inf)
            count, excess = _tally(acc, part, lo, w, c, above, above, block, members, a, b)
        if count:
            counts[q] += count
            severity[q] += excess / c


@pjit
def pair_violations(tiles, maxima, width, members, ustart, pair_bin, pair_cap, pair_start, capacities,
                    roundoff):
    """For each (bin, capacity, start) triple: the number of columns t in
    ``[start, width)`` (of the columns laid out in ``tiles``) with
    ``sum_{i in bin} x[i, t] > capacity``, and the sum of ``(S - c) / c``
    over them.

    A bin's sums are computed once for all its triples, only on tiles that
    some triple needs, and not at all when the sum of its tasks' maxima
    (``maxima``) cannot exceed the smallest capacity it is judged against:
    conservative packings (max, high percentiles) rarely need any sums.

    Sums are accumulated in the data's precision. With float32 data
    (``roundoff`` = 2^-24) the counts are made exact by a float64 re-check
    near the capacity (see ``_count_pairs``), whose band covers the rounding
    of any summation order; ``roundoff`` = 0 means the data is float64 and
    sums are exact already.
    """
    n_tiles = tiles.shape[0]
    n_unique = ustart.shape[0] - 1
    n_pairs = pair_bin.shape[0]
    pairs, pstart = bin_members(pair_bin, n_unique)  # the pairs of each distinct bin (CSR)
    needed_from = np.full(n_unique, width, dtype=np.int64)
    lowest_cap = np.full(n_unique, np.inf)
    for q in range(n_pairs):
        u = pair_bin[q]
        needed_from[u] = min(needed_from[u], pair_start[q])
        lowest_cap[u] = min(lowest_cap[u], capacities[pair_cap[q]])

    # a bin whose tasks' maxima add up to at most its smallest capacity never
    # violates it: it is not summed at all (conservative packings)
    may_violate = np.empty(n_unique, dtype=np.bool_)
    for u in range(n_unique):
        may_violate[u] = _bound(maxima, ustart[u], ustart[u + 1], members) > lowest_cap[u]

    chunk_counts = np.zeros((CHUNKS, n_pairs), dtype=np.int64)
    chunk_severity = np.zeros((CHUNKS, n_pairs))
    for chunk in prange(CHUNKS):
        acc = np.empty(TILE, dtype=tiles.dtype)
        part = np.empty(TILE)
        counts_here = chunk_counts[chunk]
        severity_here = chunk_severity[chunk]
        for tile in range(chunk * n_tiles // CHUNKS, (chunk + 1) * n_tiles // CHUNKS):
            block = tiles[tile]
            w = min(TILE, width - tile * TILE)
            end = tile * TILE + w
            for u in range(n_unique):
                if needed_from[u] >= end or not may_violate[u]:
                    continue
                a, b = ustart[u], ustart[u + 1]
                # four rows at a time: a quarter of the accumulator traffic
                acc[:] = 0.0
                s = a
                while s + 4 <= b:
                    r0 = block[members[s]]
                    r1 = block[members[s + 1]]
                    r2 = block[members[s + 2]]
                    r3 = block[members[s + 3]]
                    for t in range(TILE):
                        acc[t] += (r0[t] + r1[t]) + (r2[t] + r3[t])
                    s += 4
                while s < b:
                    row = block[members[s]]
                    for t in range(TILE):
                        acc[t] += row[t]
                    s += 1
                # a float32 sum of m terms errs by at most m 2^-24 S in any
                # order; twice that, to be safe
                _count_pairs(acc, part, w, tile, block, members, a, b, pairs, pstart[u], pstart[u + 1],
                             pair_start, pair_cap, capacities, 2.0 * (b - a + 1) * roundoff,
                             counts_here, severity_here)
    counts = np.zeros(n_pairs, dtype=np.int64)
    severity = np.zeros(n_pairs)
    for chunk in range(CHUNKS):
        for q in range(n_pairs):
            counts[q] += chunk_counts[chunk, q]
            severity[q] += chunk_severity[chunk, q]
    return counts, severity


def evaluate_packings(x, firsts, stop, assigns, n_bins, capacities):
    """Violation counts of several packings of one instance.

    Parameters
    ----------
    x : (n, R) float32 or float64 array
    firsts : first evaluation column of each packing (E = ``[first, stop)``)
    assigns : list of int64 (n,) arrays; n_bins : their bin counts
    capacities : the capacity each packing is judged against

    Returns
    -------
    list of ``(counts int64 (m,), severity_sum, n_violations)``
    """
    P = len(assigns)
    firsts = np.broadcast_to(np.asarray(firsts, dtype=np.int64), (P,))
    caps, cap_index = np.unique(np.asarray(capacities, dtype=np.float64), return_inverse=True)
    starts, first_index = np.unique(firsts, return_inverse=True)
    f0 = int(starts[0])
    keys = np.random.default_rng(0x5EED).integers(0, 2**63, size=x.shape[0], dtype=np.uint64)
    A = np.ascontiguousarray(np.stack(assigns).astype(np.int64, copy=False))
    nb = np.asarray(n_bins, dtype=np.int64)
    members, ustart, pair_bin, pair_cap, pair_first, bin_pair = deduplicate(
        A, nb, cap_index.astype(np.int64), len(caps), first_index.astype(np.int64), len(starts), keys)
    tiles = column_tiles(x, f0, stop)
    counts, severity = pair_violations(tiles, task_maxima(tiles), stop - f0, members, ustart,
                                       pair_bin, pair_cap, starts[pair_first] - f0, caps,
                                       2.0**-24 if x.dtype == np.float32 else 0.0)
    out = []
    for p in range(P):
        pids = bin_pair[p, : nb[p]]
        c = counts[pids]
        sev = 0.0
        for q in pids:  # bin order: the same bits every time
            sev += float(severity[q])
        out.append((c, sev, int(c.sum())))
    return out


def bin_violations(x, first, stop, assign, n_bins, capacity):
    """Violation counts of one packing (see :func:`evaluate_packings`)."""
    return evaluate_packings(x, first, stop, [assign], [n_bins], [capacity])[0]
