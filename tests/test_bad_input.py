"""Bad input everywhere gives an input error and changes nothing."""

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from colosim.config import parse_config
from colosim.errors import InputError

toml_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=True)
    | st.text(max_size=12) | st.sampled_from(["gpa:0.01", "av:1", "best-fit", "inst", "synthetic", "store"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["kind", "path", "tasks", "seed", "count", "estimator", "capacity", "clairvoyance",
                         "data", "rebalance", "headroom", "algorithm", "realizations", "sampling", "x"]),
        inner, max_size=5),
    max_leaves=12,
)
configs = st.dictionaries(st.sampled_from(["source", "instances", "grid", "output", "extra"]), toml_values, max_size=4)


@given(raw=configs)
def test_config_loader_fuzz_only_input_errors(raw):
    # anything a TOML file can hold: a valid config or an InputError, nothing else
    try:
        cfg = parse_config(raw, Path("fuzz.toml"))
    except InputError as exc:
        assert "fuzz.toml" in str(exc) and "\n" not in str(exc)
    else:
        assert cfg.points
