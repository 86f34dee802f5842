"""Bad input everywhere gives an input error and changes nothing."""

from pathlib import Path

import pytest
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


def test_a_renamed_parameter_leaves_the_rest_of_the_message_alone():
    from colosim.errors import parameters_as

    with pytest.raises(InputError) as info, parameters_as({"n_tasks": "--tasks"}):
        raise InputError("n_tasks 5 is more than the 3 tasks of n_tasks/series.h5", param="n_tasks")
    assert str(info.value) == "--tasks 5 is more than the 3 tasks of n_tasks/series.h5"
    with pytest.raises(ValueError, match="begin with its name"):
        InputError("the n_tasks are wrong", param="n_tasks")


def test_generate_onto_an_existing_file_names_its_path(tmp_path):
    from typer.testing import CliRunner

    from colosim.cli import app

    out = tmp_path / "outputs" / "s.h5"
    out.parent.mkdir()
    out.write_bytes(b"keep")
    res = CliRunner().invoke(app, ["generate", "--out", str(out), "--tasks", "5", "--realizations", "4"])
    assert res.exit_code == 2 and f"{out}: exists; pass --force" in res.output and out.read_bytes() == b"keep"


@pytest.mark.parametrize("extra", [",q_by_type", ",m_abs_by_type", ",calibrated_rho,q_by_type"])
def test_results_with_unpaired_fleet_columns_are_rejected(tmp_path, extra):
    from colosim.io.results import COLUMNS, read_results

    path = tmp_path / "r.csv"
    path.write_text(",".join(COLUMNS) + extra + "\n")
    with pytest.raises(InputError, match="not a colosim results table"):
        read_results(path)


def test_results_reader_puts_hand_written_specs_in_canonical_form(tmp_path):
    from colosim.io.results import COLUMNS, read_results
    from colosim.model.grid import check_row

    path = tmp_path / "r.csv"
    path.write_text(",".join(COLUMNS) + "\n"
                    '0,GPA:0.010,best-fit,"1:0.5, 0.5:0.5",1.0,inst,true,1.0,cpu,,MAX,3,2,1.5,0.1,0.2,0.01,0,'
                    '0.05,0.2,100,100,,2;1,0.1;0.1,,,\n')
    (row,) = read_results(path, check_point=check_row)
    assert row["estimator"] == "gpa:0.01" and row["capacity"] == "1:0.5,0.5:0.5"
    assert row["memory_estimator"] == "max" and row["memory_capacity"] is None


def test_results_reader_checks_each_row_of_a_repeated_grid_point(tmp_path):
    """A grid point's cells are typed and checked once, at its first row: every
    later row still gets the canonical values, its own metrics and its own
    checks, and another spelling of the same point is a repeat."""
    from colosim.io.results import COLUMNS, read_results
    from colosim.model.grid import check_row

    def line(instance, spec="GPA:0.010", m="1.5", q="0.1"):
        return (f'{instance},{spec},best-fit,"1:0.5, 0.5:0.5",1.0,inst,true,1.0,cpu,,MAX,3,2,{m},{q},0.2,0.01,0,'
                '0.05,0.2,100,100,,2;1,0.1;0.1,,,\n')

    path = tmp_path / "r.csv"
    path.write_text(",".join(COLUMNS) + "\n" + line(0) + line(1, q="0.15") + line(2))
    rows = read_results(path, check_point=check_row)
    assert [r["instance"] for r in rows] == [0, 1, 2] and [r["q"] for r in rows] == [0.1, 0.15, 0.1]
    assert all(r["estimator"] == "gpa:0.01" and r["capacity"] == "1:0.5,0.5:0.5" for r in rows)
    path.write_text(",".join(COLUMNS) + "\n" + line(0) + line(1) + line(2, q="1.5"))
    with pytest.raises(InputError, match="line 4: q and q_max must lie in"):
        read_results(path, check_point=check_row)
    path.write_text(",".join(COLUMNS) + "\n" + line(0) + line(1) + line(0, spec="gpa:0.01"))
    with pytest.raises(InputError, match=r"line 4: instance 0 at this grid point again \(first on line 2\)"):
        read_results(path, check_point=check_row)
