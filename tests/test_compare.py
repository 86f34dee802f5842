"""`colosim compare`: paired differences B − A per grid point with their
Student's t intervals, the verdicts, bad input, and two real sweeps."""

import csv
import json
import math
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from colosim.analysis.compare import A_BETTER, B_BETTER, COMPARE_COLUMNS, NO_DIFFERENCE, UNDECIDED, compare
from colosim.cli import app
from colosim.errors import InputError
from colosim.io.results import read_results
from colosim.model.grid import evaluation_columns

from .conftest import write_config, write_random_store
from .test_plots import make_row, write_csv

runner = CliRunner()

#: Student's t quantile t_{0.975, 2}
T2 = 4.302652729911275


def test_paired_differences_and_their_t_interval():
    a = [make_row(k, "gpa:0.01", q, m_abs=10, m_norm=10) for k, q in enumerate((0.01, 0.02, 0.03))]
    a += [make_row(k, "av:1", 0.05, m_abs=12, m_norm=10) for k in range(3)]
    # B in another row order: rows are paired on instance and grid point, not on position
    b = [make_row(k, "av:1", 0.04, m_abs=12, m_norm=10) for k in reversed(range(3))]
    b += [make_row(k, "gpa:0.01", 2 * q, m_abs=11 + k, m_norm=10) for k, q in enumerate((0.01, 0.02, 0.03))]
    gpa, av = compare(a, b, realizations=100)
    assert (gpa["estimator"], av["estimator"]) == ("gpa:0.01", "av:1") and gpa["instances"] == 3
    # differences 1, 2, 3 (m_abs), 0.1, 0.2, 0.3 (m), 0.01, 0.02, 0.03 (q): mean 2 and sd 1, times the scale
    for prefix, scale in (("dm_abs", 1.0), ("dm", 0.1), ("dq", 0.01)):
        half = T2 * scale / math.sqrt(3)
        assert gpa[f"{prefix}_mean"] == pytest.approx(2 * scale)
        assert gpa[f"{prefix}_ci_low"] == pytest.approx(2 * scale - half)
        assert gpa[f"{prefix}_ci_high"] == pytest.approx(2 * scale + half)
    assert gpa["m_abs_a"] == 10 and gpa["m_abs_b"] == 12 and gpa["q_a"] == pytest.approx(0.02)
    assert gpa["q_b"] == pytest.approx(0.04) and gpa["m_a"] == pytest.approx(1.0)
    assert gpa["m_verdict"] == gpa["q_verdict"] == NO_DIFFERENCE  # the intervals hold 0
    # the same difference on every instance: a zero-width interval, decided
    assert av["dq_mean"] == av["dq_ci_low"] == av["dq_ci_high"] == pytest.approx(-0.01)
    assert av["q_verdict"] == B_BETTER and av["m_verdict"] == NO_DIFFERENCE
    assert compare(b, a)[0]["q_verdict"] == A_BETTER  # B's order: av first
    assert gpa["q_resolution"] == pytest.approx(1 / (30 * evaluation_columns(1.0, 100)))
    assert math.isnan(compare(a, b)[0]["q_resolution"])
    # one instance: no interval, no verdict
    [one] = compare(a[:1], b[3:4])
    assert one["dq_mean"] == pytest.approx(0.01) and math.isnan(one["dq_ci_low"]) and one["q_verdict"] == UNDECIDED


def test_pure_function_names_the_culprit():
    a = [make_row(k, "gpa:0.01", 0.01) for k in range(3)]
    with pytest.raises(InputError, match=r"^new: grid point estimator=av:1, .* is not in old"):
        compare(a, a + [make_row(0, "av:1", 0.1)], names=("old", "new"))
    with pytest.raises(InputError, match=r"only in A: 2"):
        compare(a, a[:2])
    with pytest.raises(InputError, match=r"^B: instance 1 appears twice"):
        compare(a, a + [a[1]])


# ------------------------------------------------------------- bad input


def rows(instances=(0, 1, 2), estimators=("gpa:0.01", "av:1")):
    return [make_row(k, e, 0.01 * (k + 1)) for e in estimators for k in instances]


def sidecar(path, **meta):
    meta = {"format": "colosim-results", "store_attrs": {"seed": 7, "sampling": "independent"},
            "realizations": 300, **meta}
    Path(f"{path}.json").write_text(json.dumps(meta))


def bad(tmp_path, *args):
    """Run compare with --out tmp/out.csv: exit 2, one error line, nothing written."""
    res = runner.invoke(app, ["compare", *map(str, args), "--out", str(tmp_path / "out.csv")])
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2, res.output
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    assert not (tmp_path / "out.csv").exists()
    return lines[0]


def test_bad_input_exits_2_naming_the_culprit(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write_csv(a, rows())
    write_csv(b, rows(estimators=("gpa:0.01", "av:1", "perc:90")))
    line = bad(tmp_path, a, b)
    assert "b.csv: grid point estimator=perc:90" in line and "grids differ" in line
    write_csv(b, rows(estimators=("gpa:0.01",)))
    assert "a.csv: grid point estimator=av:1" in bad(tmp_path, a, b)
    write_csv(b, rows(instances=(0, 1, 2, 5, 6)))
    line = bad(tmp_path, a, b)
    assert "instances differ" in line and "b.csv: 5, 6" in line
    write_csv(b, rows()[:-1])  # av:1 lacks instance 2
    line = bad(tmp_path, a, b)
    assert "b.csv: grid point estimator=av:1" in line and "lacks instances 2" in line
    write_csv(b, rows() + rows()[:1])
    assert "b.csv: line 8: instance 0 at this grid point again" in bad(tmp_path, a, b)
    assert "missing.csv: results file not found" in bad(tmp_path, a, tmp_path / "missing.csv")
    # stores: both sidecars, differing store attributes or realization counts
    write_csv(b, rows())
    sidecar(a)
    sidecar(b, store_attrs={"seed": 8, "sampling": "independent"})
    line = bad(tmp_path, a, b)
    assert "b.csv.json" in line and "store differs" in line and "seed: 7 vs 8" in line
    sidecar(b, realizations=400)
    line = bad(tmp_path, a, b)
    assert "b.csv.json" in line and "400 realizations" in line and "300" in line
    # a missing sidecar says nothing about the store: allowed
    Path(f"{b}.json").unlink()
    res = runner.invoke(app, ["compare", str(a), str(b)])
    assert res.exit_code == 0, res.output


def test_out_is_never_an_input_nor_replaced_without_force(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write_csv(a, rows())
    write_csv(b, rows())
    sidecar(a)
    before = a.read_bytes(), Path(f"{a}.json").read_bytes()
    for target in (a, b, Path(f"{a}.json")):
        res = runner.invoke(app, ["compare", str(a), str(b), "--out", str(target), "--force"])
        lines = [line for line in res.output.splitlines() if line.strip()]
        assert res.exit_code == 2 and len(lines) == 1 and "is the input" in lines[0], res.output
    assert (a.read_bytes(), Path(f"{a}.json").read_bytes()) == before
    out = tmp_path / "out.csv"
    out.write_text("keep")
    res = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out)])
    assert res.exit_code == 2 and "--force" in res.output and out.read_text() == "keep"
    # --force replaces an earlier comparison only, never a file of another kind
    res = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out), "--force"])
    assert res.exit_code == 2 and "not a colosim comparison" in res.output and out.read_text() == "keep"
    out.unlink()
    assert runner.invoke(app, ["compare", str(a), str(b), "--out", str(out)]).exit_code == 0
    res = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out), "--force"])
    assert res.exit_code == 0, res.output
    assert next(csv.reader(out.read_text().splitlines())) == list(COMPARE_COLUMNS)


# ------------------------------------------------------------ real sweeps


@pytest.fixture
def sweeps(tmp_path, monkeypatch):
    """The same small config swept twice, into a.csv and b.csv."""
    monkeypatch.chdir(tmp_path)
    write_random_store(tmp_path / "store.h5", 1000, 300, seed=3)
    write_config(tmp_path, 'estimator = ["gpa:0.1", "av:1"]\nrebalance = [true, false]', count=4, tasks=50)
    for name in ("a.csv", "b.csv"):
        res = runner.invoke(app, ["sweep", "c.toml", "--out", name, "-q"])
        assert res.exit_code == 0, res.output
    return tmp_path


def table_rows(output: str) -> list[str]:
    return [line for line in output.splitlines() if "gpa:0.1" in line or "av:1" in line]


def test_same_config_twice_differs_by_exactly_zero(sweeps):
    res = runner.invoke(app, ["compare", "a.csv", "b.csv", "--out", "ab.csv"])
    assert res.exit_code == 0, res.output
    lines = table_rows(res.output)
    assert len(lines) == 4 and all(line.count(NO_DIFFERENCE) == 2 for line in lines), res.output
    assert "[95% interval]" in res.output  # the escaped markup is shown
    with open("ab.csv", newline="") as fh:
        written = list(csv.DictReader(fh))
    assert len(written) == 4
    for r in written:
        assert r["instances"] == "4" and float(r["q_resolution"]) > 0
        for prefix in ("dm", "dm_abs", "dq"):
            assert float(r[f"{prefix}_mean"]) == float(r[f"{prefix}_ci_low"]) == float(r[f"{prefix}_ci_high"]) == 0


def test_doubled_q_shows_a_better(sweeps):
    with open("a.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        names, rs = reader.fieldnames, list(reader)
    assert all(float(r["q"]) > 0 for r in rs)  # so that doubling changes every grid point
    for r in rs:
        for k in ("q", "q_ci_low", "q_ci_high"):
            r[k] = repr(min(1.0, 2 * float(r[k])))
    with open("d.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=names, lineterminator="\n")
        w.writeheader()
        w.writerows(rs)
    shutil.copy("a.csv.json", "d.csv.json")  # the same store
    res = runner.invoke(app, ["compare", "a.csv", "d.csv"])
    assert res.exit_code == 0, res.output
    lines = table_rows(res.output)
    assert len(lines) == 4 and all(line.count(A_BETTER) == 1 and NO_DIFFERENCE in line for line in lines), res.output
    assert len(read_results("d.csv")) == len(rs)


def test_tables_of_other_instance_seeds_are_not_paired(sweeps):
    write_config(sweeps, 'estimator = ["gpa:0.1", "av:1"]\nrebalance = [true, false]', count=4, tasks=50, seed=6,
                 name="other.toml")
    assert runner.invoke(app, ["sweep", "other.toml", "--out", "o.csv", "-q"]).exit_code == 0
    res = runner.invoke(app, ["compare", "a.csv", "o.csv"])
    assert res.exit_code == 2, res.output
    assert "o.csv.json" in res.output and "seed 6" in res.output and "seed 5" in res.output


def test_out_is_never_an_input_s_summary(sweeps):
    res = runner.invoke(app, ["compare", "a.csv", "b.csv", "--out", "a.csv.summary.csv", "--force"])
    assert res.exit_code == 2 and "a.csv.summary.csv" in res.output


def test_a_hand_edited_sidecar_is_named(sweeps):
    meta = json.loads(Path("b.csv.json").read_text())
    Path("b.csv.json").write_text(json.dumps(dict(meta, instances=5)))
    res = runner.invoke(app, ["compare", "a.csv", "b.csv"])
    assert res.exit_code == 2 and "b.csv.json" in res.output and "instances 5" in res.output
