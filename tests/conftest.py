import contextlib
import os
from pathlib import Path

# The thread-count tests compare 1 and 2 Numba threads: make sure there are
# 2, even on a machine with one core (before numba is first imported).
if (os.cpu_count() or 1) < 2:
    os.environ.setdefault("NUMBA_NUM_THREADS", "2")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

# Hypothesis: a derandomized profile for CI (the first example pays for JIT
# compilation, hence no deadline; print_blob so that a CI failure can be
# replayed with @reproduce_failure) and a heavier one for fuzzing sessions.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=60, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzzing", deadline=None, max_examples=2000, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """The real trace excerpts beside the project (skip when absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real trace excerpts not found at ../shared/data (looked in {SHARED_DATA})")
    return SHARED_DATA


def usage_arrays(max_tasks=12, max_columns=24, min_columns=1, top=1.0):
    """Usage matrices (tasks × columns, float32 in [0, top]) drawn value by
    value, so that a failure shrinks to a tiny matrix of simple values."""
    shapes = st.tuples(st.integers(1, max_tasks), st.integers(min_columns, max_columns))
    top = float(np.float32(top))
    return shapes.flatmap(lambda shape: hnp.arrays(np.float32, shape, elements=st.floats(0, top, width=32)))


def random_usage(rng, n, R, scale=0.08):
    """Usage of n tasks × R realizations: mixtures of levels and noise, so
    that packings need several bins and sums cross the capacity often."""
    level = rng.gamma(1.5, scale, size=(n, 1))
    spread = rng.uniform(0.1, 1.0, size=(n, 1))
    noise = rng.gamma(2.0, 1.0, size=(n, R)) / 2.0
    spikes = (rng.random((n, R)) < 0.05) * rng.uniform(0, 3, size=(n, R))
    return (level * (1 + spread * (noise - 1 + spikes))).clip(0, None).astype(np.float32)


def write_random_store(path, n, R, seed=0):
    from colosim.io import StoreWriter

    rng = np.random.default_rng(seed)
    x = random_usage(rng, n, R)
    y = (x * rng.uniform(0.6, 1.0, size=(n, 1))).astype(np.float32)
    with StoreWriter(path, n_tasks=n, n_realizations=R, seed=seed, sampling="independent",
                     source={"kind": "test"}, task_id=np.stack([np.arange(n), np.zeros(n, int)], 1)) as w:
        w.write_rows(0, x, y)
    return x, y


@pytest.fixture
def small_store(tmp_path):
    """A 120-task × 400-realization random store."""
    path = tmp_path / "store.h5"
    x, y = write_random_store(path, 120, 400, seed=7)
    return path, x, y


@contextlib.contextmanager
def numba_threads(n: int):
    """Run with n Numba threads (checked), then restore the count."""
    import numba

    if n > numba.config.NUMBA_NUM_THREADS:
        pytest.fail(f"{n} Numba threads asked for, only {numba.config.NUMBA_NUM_THREADS} available")
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        assert numba.get_num_threads() == n
        yield
    finally:
        numba.set_num_threads(before)


def write_config(folder, grid: str, *, count=2, tasks=40, seed=5, store="store.h5", name="c.toml") -> Path:
    """A sweep config over an existing store, with the given [grid] lines."""
    path = Path(folder) / name
    path.write_text(f'[source]\nkind = "store"\npath = "{store}"\n\n'
                    f"[instances]\ncount = {count}\ntasks = {tasks}\nseed = {seed}\n\n[grid]\n{grid}\n")
    return path
