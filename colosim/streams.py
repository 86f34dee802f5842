"""Every random stream colosim draws from, in one registry (SPEC §6, §8, §9).

Each stream is a NumPy ``default_rng`` seeded by a list that names the unit
of work it serves — an instance, a stored row, a characterization sample —
never the thread that happens to run it, so results do not depend on the
thread count or the backend. The tags (the second element) keep the
purposes apart:

==============================  ============================================
seed list                       used for
==============================  ============================================
``[seed, k]``                   instance k of a sweep (SPEC §6; ``seed`` is
                                ``instances.seed``)
``[seed, 0]``                   the series rows a store holds (SPEC §8)
``[seed, 1, j]``                the draws of the store's row j (SPEC §8)
``[seed, 2]``                   the shared trace times of ``time-aligned``
                                realization (docs/estimators.md)
``[seed, 9, analysis, unit]``   the characterization (SPEC §9)
``[seed, 3011]``                the planted tasks of ``colosim synth-trace``
``[0x5EED]``                    hash keys of the evaluation's bin lookup
                                (no result depends on them)
==============================  ============================================

The built-in population draws its tasks from a counter-based hash of
``(seed, task)`` with its own tag (:mod:`colosim.sources.population`), apart
from all of these. Instance streams and store streams have the same form:
when ``instances.seed`` equals the store's seed, instance 0 and the store's
row selection start from the same bits (different draws of them, of
different sizes); SPEC §6 and §8 fix both recipes, so colosim keeps them.
"""

import functools

import numpy as np

ROWS, DRAWS, SHARED_TIMES, ANALYSIS, PLANTED = 0, 1, 2, 9, 3011


def instance(seed: int, k: int) -> np.random.Generator:
    return np.random.default_rng([seed, k])


def store_rows(seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, ROWS])


def row_draws(seed: int, j: int) -> np.random.Generator:
    return np.random.default_rng([seed, DRAWS, j])


def shared_times(seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, SHARED_TIMES])


def analysis(seed: int, number: int, *unit: int) -> np.random.Generator:
    return np.random.default_rng([seed, ANALYSIS, number, *unit])


def planted_tasks(seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, PLANTED])


@functools.lru_cache(maxsize=4)
def hash_keys(n: int) -> np.ndarray:
    """Random 63-bit keys of n tasks, for hashing sets of tasks (read-only)."""
    keys = np.random.default_rng(0x5EED).integers(0, 2**63, size=n, dtype=np.uint64)
    keys.flags.writeable = False
    return keys
