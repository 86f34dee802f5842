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
