"""Per-bin running sums over the evaluation columns and the violation counts
q_j (SPEC §5), for all packings of one instance at once.

Packings of the same instance share most of their bins (a rebalanced packing
differs from its online packing only in the bins that gave or took tasks;
First Fit and Best Fit often open the same first bins), so bins are
deduplicated first: each distinct set of tasks is summed once, and its sums
are compared with every (capacity, first evaluation column) it is judged
at — a *triple* (bin, capacity, first column). A bin's capacity is its own,
so packings onto mixed fleets are judged by the same code.

The columns come laid out in contiguous tiles (:mod:`colosim.kernels.tiles`);
every distinct bin is summed over a tile (in ascending instance position)
before moving to the next tile. float32 data is summed in float32 — twice
the SIMD lanes of float64 — and the few sums that lie within their rounding
error of the capacity are recomputed in float64, so the counts are exactly
those of float64 sums. Tiles are grouped into a fixed number of chunks run
in parallel, each with its own accumulators, merged in chunk order
afterwards: counts and severity sums are the same bits whatever the thread
count.

:func:`count_violations` is the one entry.
"""

import numpy as np
from numba import prange, types
from numba.extending import intrinsic

from .._jit import jit, pjit
from ._bins import bin_members
from .tiles import TILE

__all__ = ["count_violations"]

CHUNKS = 32
#: eight bytes of 0 or 1 times this: byte i's bit on bit 56 + i
_PACK = np.uint64(0x0102040810204080)
#: groups of tiles _column_squares totals in parallel (each with its own
#: per-column counts of every packing)
SQUARES_GROUPS = 16

if TILE != 128:  # _tally's two bit words and unrolled halving are written for 128 columns
    raise ImportError(f"colosim.kernels.evaluate needs TILE = 128, not {TILE}")


@jit
def _table_size(n):
    """A power of two at least twice ``n``: open-addressing tables stay at
    most half full."""
    size = 16
    while size < 2 * n:
        size *= 2
    return size


@jit
def _deduplicate(assigns, n_bins, bin_cap, n_caps, first_index, n_firsts, keys):
    """Distinct bins over packings ``p`` (rows of ``assigns``) and the
    distinct (bin, capacity, first column) triples to count.

    ``bin_cap[p, j]`` is the capacity index of packing p's bin j,
    ``first_index[p]`` the index of its first evaluation column. A bin's
    hash is the sum of its tasks' random ``keys``; bins and triples are
    looked up in open-addressing tables (linear probing), and bins with
    equal hashes are compared member by member.

    Returns ``members, ustart`` (CSR of distinct bins), ``triple_bin``,
    ``triple_cap``, ``triple_first`` (one entry per distinct triple) and
    ``bin_triple`` (P, max m): the triple of packing p's bin j.
    """
    P, n = assigns.shape
    max_m = 0
    total = 0
    for p in range(P):
        max_m = max(max_m, n_bins[p])
        total += n_bins[p]
    bin_triple = np.full((P, max_m), -1, dtype=np.int64)
    members = np.empty(P * n, dtype=np.int64)
    ustart = np.zeros(total + 1, dtype=np.int64)
    uhash = np.empty(total, dtype=np.uint64)
    size = _table_size(total)
    mask = np.uint64(size - 1)
    bins_at = np.full(size, -1, dtype=np.int64)  # slot -> distinct bin
    triples_at = np.full(size, -1, dtype=np.int64)  # slot -> triple
    triple_key = np.empty(total, dtype=np.int64)
    triple_bin = np.empty(total, dtype=np.int64)
    triple_cap = np.empty(total, dtype=np.int64)
    triple_first = np.empty(total, dtype=np.int64)
    n_unique = 0
    n_triples = 0
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
            cap = bin_cap[p, j]
            key = (uid * n_caps + cap) * n_firsts + first_index[p]
            hk = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
            slot = (hk >> np.uint64(32)) & mask
            tid = -1
            while triples_at[slot] >= 0:
                if triple_key[triples_at[slot]] == key:
                    tid = triples_at[slot]
                    break
                slot = (slot + np.uint64(1)) & mask
            if tid < 0:
                tid = n_triples
                triples_at[slot] = tid
                triple_key[tid] = key
                triple_bin[tid] = uid
                triple_cap[tid] = cap
                triple_first[tid] = first_index[p]
                n_triples += 1
            bin_triple[p, j] = tid
    return (members[: ustart[n_unique]], ustart[: n_unique + 1], triple_bin[:n_triples],
            triple_cap[:n_triples], triple_first[:n_triples], bin_triple)


@jit
def _bound(maxima, a, b, members):
    """The float64 sum of the bin's tasks' maxima, in the same order as the
    float64 sums it bounds: rounding is monotone, so no column's sum exceeds
    it, and none can violate a capacity it does not exceed."""
    bound = 0.0
    for s in range(a, b):
        bound += np.float64(maxima[members[s]])
    return bound


#: rows added to a bin's sums at a time (:func:`_add_rows`); bins share the
#: sums of their common first groups of this many tasks (:func:`_prefix_order`)
GROUP = 4


@jit(inline="always")
def _before(members, ustart, u, v):
    """Whether bin u's member list comes before bin v's in lexicographic order
    (a list before the longer lists it begins)."""
    a, b = ustart[u], ustart[u + 1]
    c, d = ustart[v], ustart[v + 1]
    k = 0
    while a + k < b and c + k < d:
        if members[a + k] != members[c + k]:
            return members[a + k] < members[c + k]
        k += 1
    return b - a < d - c


@jit
def _prefix_order(members, ustart):
    """The distinct bins in lexicographic order of their member lists, and
    for each the number of whole :data:`GROUP`-task groups it shares with
    the bin before it in that order: bins that begin with the same tasks are
    neighbours, and the sums of their common groups are made once
    (:func:`_triple_violations`). A bottom-up merge sort."""
    n_live = ustart.shape[0] - 1
    order = np.arange(n_live)
    other = np.empty_like(order)
    width = 1
    while width < n_live:
        for lo in range(0, n_live, 2 * width):
            mid = min(lo + width, n_live)
            hi = min(lo + 2 * width, n_live)
            i, j, t = lo, mid, lo
            while i < mid and j < hi:
                if _before(members, ustart, order[j], order[i]):
                    other[t] = order[j]
                    j += 1
                else:
                    other[t] = order[i]
                    i += 1
                t += 1
            while i < mid:
                other[t] = order[i]
                i += 1
                t += 1
            while j < hi:
                other[t] = order[j]
                j += 1
                t += 1
        order, other = other, order
        width *= 2
    shared = np.zeros(n_live, dtype=np.int64)
    for i in range(1, n_live):
        u, v = order[i - 1], order[i]
        a, c = ustart[u], ustart[v]
        most = min(ustart[u + 1] - a, ustart[v + 1] - c) // GROUP * GROUP
        k = 0
        while k < most and members[a + k] == members[c + k]:
            k += 1
        shared[i] = k // GROUP
    return order, shared


@jit
def _in_prefix_order(members, ustart, triple_bin, triple_cap, triple_first, bin_triple):
    """The output of :func:`_deduplicate` renumbered: distinct bins in the
    order of :func:`_prefix_order` (with the groups each shares with the one
    before it), and triples by bin in that order, so that the evaluation
    walks every array it reads in order. ``bin_triple`` is renumbered in
    place; the counts do not depend on the numbering."""
    order, shared = _prefix_order(members, ustart)
    n_unique = order.shape[0]
    new_bin = np.empty(n_unique, dtype=np.int64)
    new_ustart = np.zeros(n_unique + 1, dtype=np.int64)
    new_members = np.empty_like(members)
    for i in range(n_unique):
        u = order[i]
        new_bin[u] = i
        a, b = ustart[u], ustart[u + 1]
        base = new_ustart[i]
        new_members[base : base + (b - a)] = members[a:b]
        new_ustart[i + 1] = base + (b - a)
    n_triples = triple_bin.shape[0]
    first = np.zeros(n_unique + 1, dtype=np.int64)  # counting sort of the triples by new bin
    for q in range(n_triples):
        first[new_bin[triple_bin[q]] + 1] += 1
    for i in range(n_unique):
        first[i + 1] += first[i]
    new_triple = np.empty(n_triples, dtype=np.int64)
    for q in range(n_triples):
        i = new_bin[triple_bin[q]]
        new_triple[q] = first[i]
        first[i] += 1
    tb = np.empty_like(triple_bin)
    tc = np.empty_like(triple_cap)
    tf = np.empty_like(triple_first)
    for q in range(n_triples):
        k = new_triple[q]
        tb[k] = new_bin[triple_bin[q]]
        tc[k] = triple_cap[q]
        tf[k] = triple_first[q]
    for p in range(bin_triple.shape[0]):
        for j in range(bin_triple.shape[1]):
            if bin_triple[p, j] >= 0:
                bin_triple[p, j] = new_triple[bin_triple[p, j]]
    return new_members, new_ustart, tb, tc, tf, shared


@jit(inline="always")
def _exact_sum(src, plane, col, members, a, b):
    """The float64 sum of column ``col`` of ``src[plane]`` over the bin
    ``members[a:b]``, in ascending position: the sum SPEC §5 judges."""
    exact = 0.0
    for s in range(a, b):
        exact += np.float64(src[plane, members[s], col])
    return exact


@jit
def _add_rows(acc, src, members, a, b, lo, hi):
    """``acc[t] += src[members[s], lo + t]`` for the tasks ``members[a:b]``
    in ascending position and ``t < hi - lo``, four rows at a time (a
    quarter of the accumulator traffic): the sums both readings of the
    evaluation make."""
    w = hi - lo
    s = a
    while s + 4 <= b:
        r0 = src[members[s], lo:hi]
        r1 = src[members[s + 1], lo:hi]
        r2 = src[members[s + 2], lo:hi]
        r3 = src[members[s + 3], lo:hi]
        for t in range(w):
            acc[t] += (r0[t] + r1[t]) + (r2[t] + r3[t])
        s += 4
    while s < b:
        row = src[members[s], lo:hi]
        for t in range(w):
            acc[t] += row[t]
        s += 1


@intrinsic
def _popcount(typingctx, word):
    """The number of set bits of a uint64 (LLVM's ctpop: one instruction
    where the CPU has it)."""
    if word != types.uint64:
        return None

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


@jit(inline="always")
def _tally(sums, r, part, flags, flag8, lo, w, c, above, below, src, plane, col0, members, a, b, hits, slot, q):
    """Violations of capacity ``c`` on columns ``[lo, w)`` of a tile whose
    sums are ``sums[r]``, and their summed excess ``S - c``: sums at or above
    ``above`` violate; those in ``[below, above)`` are decided by their
    float64 sum in ascending position (column t of the tile is column
    ``col0 + t`` of ``src[plane]``). ``above``/``below`` have the sums'
    type; ``part`` is (TILE,) float64 scratch, ``flags`` (TILE / 8,)
    uint64 scratch and ``flag8`` its uint8 view. The violating columns are
    stored as bits of ``hits[slot, q, 0]`` (columns 0-63 of the tile) and
    ``hits[slot, q, 1]`` (64-127), once, when there is one (each triple's
    tile is tallied once; the words start zeroed). The halving below is
    written for TILE = 128.

    Every array is indexed whole, never sliced: a view in this loop would
    cost two atomic reference-count updates, shared by the threads.

    The first pass only asks whether some column is sure to violate and
    whether some lies in the band, as boolean reductions over the whole
    tile with masks, so that it vectorizes (counting there made Numba widen
    the counters to int64 lanes). Only a tile with a violation makes a
    second pass for the excesses, added by pairwise halving (a fixed order
    whose steps vectorize too), and its bits; their popcount is the count.
    (The bits were once or-ed in one column at a time, two scalar loops of
    64 shifts: the bytes and their multiplication take a fraction of that.)
    """
    sure = False
    band = False
    if lo == 0 and w == TILE:
        for t in range(TILE):
            v = sums[r, t]
            sure |= v >= above
            band |= (v >= below) & (v < above)
    else:
        for t in range(TILE):
            inside = (t >= lo) & (t < w)
            v = sums[r, t]
            sure |= inside & (v >= above)
            band |= inside & (v >= below) & (v < above)
    if not (sure or band):
        return 0, 0.0
    count = np.int64(0)
    excess = 0.0
    w0 = np.uint64(0)
    w1 = np.uint64(0)
    if sure:
        # each column's excess into part (0 where none) and its violation
        # as a byte of flag8, in one pass that vectorizes; then the excesses
        # added by pairwise halving, part[t] + part[t + 64], then halves of
        # 32, 16 and 8, then the last eight in the same tree. Each eight
        # bytes of flag8 (0 or 1; ``flags`` is its uint64 view) become eight
        # bits of the words by one multiplication: byte i lands on bit 56 + i
        for t in range(TILE):
            v = sums[r, t]
            hit = (t >= lo) & (t < w) & (v >= above)
            part[t] = (np.float64(v) - c) if hit else 0.0
            flag8[t] = np.uint8(hit)
        for t in range(64):
            part[t] += part[t + 64]
        for j in range(8):
            w0 |= ((flags[j] * _PACK) >> np.uint64(56)) << np.uint64(8 * j)
            w1 |= ((flags[j + 8] * _PACK) >> np.uint64(56)) << np.uint64(8 * j)
        count = np.int64(_popcount(w0) + _popcount(w1))
        for t in range(32):
            part[t] += part[t + 32]
        for t in range(16):
            part[t] += part[t + 16]
        for t in range(8):
            part[t] += part[t + 8]
        excess = ((part[0] + part[4]) + (part[2] + part[6])) + ((part[1] + part[5]) + (part[3] + part[7]))
    if band:
        for t in range(lo, w):
            v = sums[r, t]
            if (v >= below) & (v < above):
                exact = _exact_sum(src, plane, col0 + t, members, a, b)
                if exact > c:
                    count += 1
                    excess += exact - c
                    if t < 64:
                        w0 |= np.uint64(1) << np.uint64(t)
                    else:
                        w1 |= np.uint64(1) << np.uint64(t - 64)
    if count:
        hits[slot, q, 0] = w0
        hits[slot, q, 1] = w1
    return count, excess


@jit(inline="always")
def _count_triples(sums, r, part, flags, flag8, w, tile, src, plane, col0, members, a, b, triples, t0, t1, triple_start,
                   triple_cap, capacities, error_scale, counts, severity, hits, slot, by_slot):
    """Count the violations of the bin ``members[a:b]`` whose sums over the
    tile are ``sums[r]``, for each of its triples ``triples[t0:t1]``, and add
    their summed ``(S - c) / c`` to ``severity``. The tile's values are
    ``src[plane, :, col0:col0 + w]`` (for the float64 re-check).

    ``sums`` may err by up to ``error_scale * c`` (its float32 rounding); every
    sum within that band — and at least 1e-5 × c — of the capacity is
    recomputed in float64 in ascending position, so the counts are exactly
    those of float64 sums (SPEC §5). ``error_scale`` = 0 means exact sums, and
    a violation is S > c (S == c is not one).

    The violating columns of the tile are recorded as bits of
    ``hits[slot, q]`` (two words per tile and triple: a tile's triples are
    written in order, q ascending), for the per-column counts.
    ``counts`` and ``severity`` are indexed by the triple ``q``, or with
    ``by_slot`` by its slot ``k - t0`` among the bin's triples.
    """
    for k in range(t0, t1):
        q = triples[k]
        lo = max(0, triple_start[q] - tile * TILE)
        if lo >= w:
            continue
        c = capacities[triple_cap[q]]
        if error_scale > 0:
            # float32 thresholds, so that the first pass compares float32
            # lanes; rounding them moves them by far less than the band
            tol = max(1e-5 * c, error_scale * c)
            above, below = np.float32(c + tol), np.float32(c - tol)
            count, excess = _tally(sums, r, part, flags, flag8, lo, w, c, above, below, src, plane, col0, members,
                                   a, b, hits, slot, q)
        else:
            above = np.nextafter(c, np.inf)
            count, excess = _tally(sums, r, part, flags, flag8, lo, w, c, above, above, src, plane, col0, members,
                                   a, b, hits, slot, q)
        if count:
            at = k - t0 if by_slot else q
            counts[at] += count
            severity[at] += excess / c


@pjit
def _triple_violations(tiles, maxima, tile0, stop, members, ustart, triple_bin, triple_cap, triple_start,
                       capacities, roundoff, shared, scratch):
    """For each (bin, capacity, start) triple: the number of columns t in
    ``[start, stop)`` with ``sum_{i in bin} x[i, t] > capacity``, and the
    sum of ``(S - c) / c`` over them. ``tiles`` holds the columns from
    ``tile0 * TILE`` on (global tile ``tile`` is ``tiles[tile - tile0]``).

    Also returns ``hits`` (tiles, triples, 2) uint64: the violating columns
    of each triple in each tile as bits, and the number of additions
    performed (a tile's padding columns included: they are added too).

    The chunks are fixed by ``stop`` alone (global tiles split evenly), so
    the order in which a triple's severity is added does not depend on which
    other triples are counted with it.

    A bin's sums are computed once for all its triples, only on tiles that
    some triple needs, and not at all when the sum of its tasks' maxima
    (``maxima``) cannot exceed the smallest capacity it is judged against:
    conservative packings (max, high percentiles) rarely need any sums.

    Sums are accumulated in the data's precision. With float32 data
    (``roundoff`` = 2^-24) the counts are made exact by a float64 re-check
    near the capacity (see ``_count_triples``), whose band covers the
    rounding of any summation order; ``roundoff`` = 0 means the data is
    float64 and sums are exact already.
    """
    n_tiles = (stop + TILE - 1) // TILE
    n_unique = ustart.shape[0] - 1
    n_triples = triple_bin.shape[0]
    triples, tstart = bin_members(triple_bin, n_unique)  # the triples of each distinct bin (CSR)
    needed_from = np.full(n_unique, stop, dtype=np.int64)
    lowest_cap = np.full(n_unique, np.inf)
    for q in range(n_triples):
        u = triple_bin[q]
        needed_from[u] = min(needed_from[u], triple_start[q])
        lowest_cap[u] = min(lowest_cap[u], capacities[triple_cap[q]])

    # a bin whose tasks' maxima add up to at most its smallest capacity never
    # violates it: it is not summed at all (conservative packings)
    may_violate = np.empty(n_unique, dtype=np.bool_)
    for u in range(n_unique):
        may_violate[u] = _bound(maxima, ustart[u], ustart[u + 1], members) > lowest_cap[u]

    # the chunks' counts and severity, and the violating columns, two 64-bit
    # words per (tile, triple), tile-major: a chunk owns its tiles' words, a
    # contiguous stretch it zeroes itself and writes in order (triples are
    # numbered by bin, bins visited in that order), in ``scratch``
    n_hits = (n_tiles - tile0) * n_triples * 2
    n_chunk = CHUNKS * n_triples
    words = scratch
    words[n_hits:] = 0
    hits = words[:n_hits].reshape((n_tiles - tile0, n_triples, 2))
    chunk_counts = words[n_hits : n_hits + n_chunk].view(np.int64).reshape((CHUNKS, n_triples))
    chunk_severity = words[n_hits + n_chunk :].view(np.float64).reshape((CHUNKS, n_triples))
    chunk_additions = np.zeros(CHUNKS, dtype=np.int64)
    # bins come in lexicographic order of their tasks (_in_prefix_order): a
    # bin's sums start from the sums of the groups it shares with the bin
    # summed before it
    deepest = 0
    for u in range(n_unique):
        deepest = max(deepest, (ustart[u + 1] - ustart[u]) // GROUP)
    for chunk in prange(CHUNKS):
        # stack[k]: the sums of the first k groups of the bin summed last;
        # its last row, ACC, those sums with the bin's last rows added. Every
        # array below is indexed whole, never sliced (see _tally)
        stack = np.zeros((deepest + 2, TILE), dtype=tiles.dtype)
        ACC = deepest + 1
        part = np.empty(TILE)
        flags = np.empty(TILE // 8, dtype=np.uint64)
        flag8 = flags.view(np.uint8)
        counts_here = chunk_counts[chunk]
        severity_here = chunk_severity[chunk]
        additions = 0
        for tile in range(max(tile0, chunk * n_tiles // CHUNKS), (chunk + 1) * n_tiles // CHUNKS):
            tt = tile - tile0
            hits[tt] = 0
            w = min(TILE, stop - tile * TILE)
            end = tile * TILE + w
            valid = 0  # groups of the stack that are the last summed bin's
            for u in range(n_unique):
                # groups shared with the last summed bin: the least shared by
                # neighbours since (lexicographic order)
                valid = min(valid, shared[u])
                if needed_from[u] >= end or not may_violate[u]:
                    continue
                a, b = ustart[u], ustart[u + 1]
                whole = (b - a) // GROUP
                # the same float32 operations in the same order as summing
                # the bin alone (_add_rows): group sums added one after the
                # other, then the last rows one by one
                for k in range(valid, whole):
                    g = a + k * GROUP
                    m0, m1, m2, m3 = members[g], members[g + 1], members[g + 2], members[g + 3]
                    for t in range(TILE):
                        stack[k + 1, t] = stack[k, t] + ((tiles[tt, m0, t] + tiles[tt, m1, t])
                                                         + (tiles[tt, m2, t] + tiles[tt, m3, t]))
                additions += (whole - valid) * GROUP * TILE
                valid = whole
                r = whole
                if a + whole * GROUP < b:
                    # the last rows one by one, as _add_rows adds them
                    for t in range(TILE):
                        stack[ACC, t] = stack[whole, t]
                    for s in range(a + whole * GROUP, b):
                        m0 = members[s]
                        for t in range(TILE):
                            stack[ACC, t] += tiles[tt, m0, t]
                    additions += (b - a - whole * GROUP) * TILE
                    r = ACC
                # a float32 sum of m terms errs by at most m 2^-24 S in any
                # order; twice that, to be safe
                _count_triples(stack, r, part, flags, flag8, w, tile, tiles, tt, 0, members, a, b, triples, tstart[u],
                               tstart[u + 1], triple_start, triple_cap, capacities, 2.0 * (b - a + 1) * roundoff,
                               counts_here, severity_here, hits, tt, False)
        chunk_additions[chunk] = additions
    counts = np.zeros(n_triples, dtype=np.int64)
    severity = np.zeros(n_triples)
    for chunk in range(CHUNKS):
        for q in range(n_triples):
            counts[q] += chunk_counts[chunk, q]
            severity[q] += chunk_severity[chunk, q]
    return counts, severity, hits, chunk_additions.sum()


@pjit
def _triple_violations_rows(x, maxima, tile0, stop, members, ustart, triple_bin, triple_cap, triple_start,
                            capacities, roundoff):
    """What :func:`_triple_violations` returns, reading the rows of ``x``
    (n, R) itself instead of a tile layout: each distinct bin adds its
    tasks' whole rows (columns from ``tile0 * TILE`` to ``stop``, streamed
    once) and is then judged tile by tile exactly as there — the same
    float32 sums, the same float64 re-check, each triple's severity added
    over the same tiles within the same chunks and the chunks in the same
    order — so every count, severity and hit is the same bits.

    The bins are independent (each owns its triples), so they are spread
    over the threads. It reads each task's row once per distinct bin that
    holds it: the choice for one packing, where that is one read of x."""
    n_tiles = (stop + TILE - 1) // TILE
    n_unique = ustart.shape[0] - 1
    n_triples = triple_bin.shape[0]
    triples, tstart = bin_members(triple_bin, n_unique)
    first = tile0 * TILE
    width = (n_tiles - tile0) * TILE
    planes = x.reshape((1, x.shape[0], x.shape[1]))  # x as one plane, indexed as tiles are
    counts = np.zeros(n_triples, dtype=np.int64)
    severity = np.zeros(n_triples)
    hits = np.zeros((n_tiles - tile0, n_triples, 2), dtype=np.uint64)
    additions = np.zeros(n_unique, dtype=np.int64)
    for u in prange(n_unique):
        a, b = ustart[u], ustart[u + 1]
        t0, t1 = tstart[u], tstart[u + 1]
        needed_from = stop
        lowest_cap = np.inf
        for k in range(t0, t1):
            needed_from = min(needed_from, triple_start[triples[k]])
            lowest_cap = min(lowest_cap, capacities[triple_cap[triples[k]]])
        if not _bound(maxima, a, b, members) > lowest_cap:
            continue
        acc = np.zeros(width, dtype=x.dtype)
        _add_rows(acc, x, members, a, b, first, stop)
        by_tile = acc.reshape((n_tiles - tile0, TILE))
        additions[u] = (b - a) * (stop - first)
        part = np.empty(TILE)
        flags = np.empty(TILE // 8, dtype=np.uint64)
        flag8 = flags.view(np.uint8)
        chunk_counts = np.zeros(t1 - t0, dtype=np.int64)
        chunk_severity = np.zeros(t1 - t0)
        for chunk in range(CHUNKS):
            # a chunk's own accumulators, as in _triple_violations, merged
            # into the totals in chunk order
            chunk_counts[:] = 0
            chunk_severity[:] = 0.0
            for tile in range(max(tile0, chunk * n_tiles // CHUNKS), (chunk + 1) * n_tiles // CHUNKS):
                w = min(TILE, stop - tile * TILE)
                if needed_from >= tile * TILE + w:
                    continue
                _count_triples(by_tile, tile - tile0, part, flags, flag8, w, tile, planes, 0, tile * TILE, members, a,
                               b, triples, t0, t1, triple_start, triple_cap, capacities, 2.0 * (b - a + 1) * roundoff,
                               chunk_counts, chunk_severity, hits, tile - tile0, True)
            for k in range(t1 - t0):
                q = triples[t0 + k]
                counts[q] += chunk_counts[k]
                severity[q] += chunk_severity[k]
    return counts, severity, hits, additions.sum()


@pjit
def _column_squares(hits, bin_triple, n_bins, counts):
    """For each packing p, ``sum_t V_t^2`` over its evaluation columns, with
    ``V_t`` the number of its bins that violate their capacity in column t:
    with ``sum_t V_t = sum_j q_j`` it gives the spread of the per-column
    counts (SPEC §5's evaluation columns are independent realizations).

    Tile by tile, reading each tile's hit words in order (``hits[tile]``,
    every triple's two words): a word with a violation is added to the
    per-column counts of every packing that holds its triple (a list of
    them per triple), and after the tile the packings it touched are
    totalled. The per-column counts are kept bit-sliced: ``planes[p, k]``
    holds bit k of ``V_t`` for the 64 columns of a word, and a bin's hit
    word is added to them by a ripple carry, 64 columns at once. Then, with
    ``V = sum_k 2^k b_k``, ``sum_t V_t^2 = sum_{k,l} 2^(k+l) popcount(b_k &
    b_l)``. Groups of tiles run in parallel; their integer sums are added
    afterwards."""
    P = n_bins.shape[0]
    n_tiles = hits.shape[0]
    T = hits.shape[1]
    # the packings that hold each violating triple (CSR)
    start = np.zeros(T + 1, dtype=np.int64)
    for p in range(P):
        for j in range(n_bins[p]):
            q = bin_triple[p, j]
            if counts[q] > 0:
                start[q + 1] += 1
    for q in range(T):
        start[q + 1] += start[q]
    fill = start[:-1].copy()
    owners = np.empty(start[T], dtype=np.int64)
    for p in range(P):
        for j in range(n_bins[p]):
            q = bin_triple[p, j]
            if counts[q] > 0:
                owners[fill[q]] = p
                fill[q] += 1
    # V_t <= m < 2^depth: the carry never leaves the planes
    depth = np.empty(P, dtype=np.int64)
    deepest = 1
    for p in range(P):
        d = 1
        while (np.int64(1) << d) <= n_bins[p]:
            d += 1
        depth[p] = d
        deepest = max(deepest, d)
    n_groups = min(n_tiles, SQUARES_GROUPS)
    by_group = np.zeros((n_groups, P), dtype=np.int64)
    for g in prange(n_groups):
        planes = np.zeros((P, deepest, 2), dtype=np.uint64)
        touched = np.empty(P, dtype=np.int64)
        seen = np.zeros(P, dtype=np.bool_)
        for tile in range(g * n_tiles // n_groups, (g + 1) * n_tiles // n_groups):
            n_touched = 0
            for q in range(T):
                w0 = hits[tile, q, 0]
                w1 = hits[tile, q, 1]
                if (w0 | w1) == 0:
                    continue
                for o in range(start[q], start[q + 1]):
                    p = owners[o]
                    if not seen[p]:
                        seen[p] = True
                        touched[n_touched] = p
                        n_touched += 1
                    for i in range(2):  # each word added by ripple carry
                        carry = hits[tile, q, i]
                        k = 0
                        while carry:
                            up = planes[p, k, i] & carry
                            planes[p, k, i] ^= carry
                            carry = up
                            k += 1
            for s in range(n_touched):
                p = touched[s]
                total = np.int64(0)
                for i in range(2):
                    for k in range(depth[p]):
                        bk = planes[p, k, i]
                        if bk == 0:
                            continue
                        total += np.int64(_popcount(bk)) << np.int64(2 * k)
                        for h in range(k + 1, depth[p]):
                            total += np.int64(_popcount(bk & planes[p, h, i])) << np.int64(k + h + 1)
                for k in range(depth[p]):
                    planes[p, k, 0] = 0
                    planes[p, k, 1] = 0
                seen[p] = False
                by_group[g, p] += total
    out = np.zeros(P, dtype=np.int64)
    for g in range(n_groups):
        for p in range(P):
            out[p] += by_group[g, p]
    return out


@jit
def _per_packing(assigns, n_bins, bin_triple, counts, severity, hits):
    """The triples' counts, severity and hits as each packing's q_j, summed
    severity (bins in bin order) and ``sum_t V_t^2``."""
    P = assigns.shape[0]
    out_counts = np.zeros(bin_triple.shape, dtype=np.int64)
    out_severity = np.zeros(P)
    for p in range(P):
        sev = 0.0
        for j in range(n_bins[p]):
            q = bin_triple[p, j]
            out_counts[p, j] = counts[q]
            sev += severity[q]
        out_severity[p] = sev
    return out_counts, out_severity, _column_squares(hits, bin_triple, n_bins, counts)


def count_violations(tiles, maxima, tile0, stop, assigns, n_bins, bin_cap, capacities, first_index, starts, keys,
                     scratch=None):
    """Violation counts of every bin of every packing of one instance.

    Parameters
    ----------
    tiles, maxima : the instance's columns ``[tile0 * TILE, stop)`` laid out
        by :func:`colosim.kernels.tiles.column_tiles`, or the instance
        itself, (n, R), with each task's maxima over those columns (or any
        upper bound of them): read row by row, the choice for one packing
    assigns : (P, n) int64, packing p's bin of every task; ``n_bins`` (P,)
    bin_cap : (P, max m) int64, the index into ``capacities`` of each bin
    first_index : (P,) int64, index into ``starts``: packing p is judged on
        columns ``[starts[first_index[p]], stop)``
    keys : (n,) uint64 random hash keys of the tasks
    scratch : optional, ``words -> uint64 array`` of exactly that many
        words: room for the tile layout's working arrays (a caller that
        judges instance after instance reuses pages instead of faulting in
        fresh ones); no result refers to it

    Returns
    -------
    counts : (P, max m) int64, q_j of bin j of packing p (0 past its bins)
    severity : (P,) float64, the sum over its violations of ``(S - c) / c``,
        the bins' contributions added in bin order
    squares : (P,) int64, ``sum_t V_t^2`` with ``V_t`` the number of
        packing p's bins that violate in evaluation column t
    additions : int, the additions of usage values the evaluation
        performed: its work, after sharing and skipping

    Both layouts give the same bits.
    """
    members, ustart, triple_bin, triple_cap, triple_first, bin_triple = _deduplicate(
        assigns, n_bins, bin_cap, capacities.shape[0], first_index, starts.shape[0], keys)
    roundoff = 2.0**-24 if tiles.itemsize == 4 else 0.0
    args = (tiles, maxima, tile0, stop, members, ustart, triple_bin, triple_cap, starts[triple_first], capacities,
            roundoff)
    if tiles.ndim == 3:
        members, ustart, triple_bin, triple_cap, triple_first, shared = _in_prefix_order(
            members, ustart, triple_bin, triple_cap, triple_first, bin_triple)
        args = (tiles, maxima, tile0, stop, members, ustart, triple_bin, triple_cap, starts[triple_first],
                capacities, roundoff, shared)
        n_triples = triple_bin.shape[0]
        words = (tiles.shape[0] * 2 + 2 * CHUNKS) * n_triples
        room = np.empty(words, dtype=np.uint64) if scratch is None else scratch(words)
        if room.shape != (words,):
            raise ValueError(f"scratch({words}) returned {room.shape[0]} words")
        counts, severity, hits, additions = _triple_violations(*args, room)
    else:
        counts, severity, hits, additions = _triple_violations_rows(*args)
    counts, severity, squares = _per_packing(assigns, n_bins, bin_triple, counts, severity, hits)
    return counts, severity, squares, additions
