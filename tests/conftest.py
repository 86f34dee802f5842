import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis: a derandomized profile for CI (the first example pays for JIT
# compilation, hence no deadline) and a heavier one for fuzzing sessions.
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzzing", deadline=None, max_examples=2000,
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


def random_usage(rng, n, R, scale=0.08):
    """Usage of n tasks × R realizations: mixtures of levels and noise, so
    that packings need several bins and sums cross the capacity often."""
    import numpy as np

    level = rng.gamma(1.5, scale, size=(n, 1))
    spread = rng.uniform(0.1, 1.0, size=(n, 1))
    noise = rng.gamma(2.0, 1.0, size=(n, R)) / 2.0
    spikes = (rng.random((n, R)) < 0.05) * rng.uniform(0, 3, size=(n, R))
    return (level * (1 + spread * (noise - 1 + spikes))).clip(0, None).astype(np.float32)


def write_random_store(path, n, R, seed=0):
    import numpy as np

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
