"""A stable results schema (every column in every table, R and |E| per row),
the complete sidecar, and colosim.read_results."""

from __future__ import annotations

import csv
import datetime
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import colosim
from colosim.cli import app
from colosim.errors import InputError
from colosim.io.results import COLUMNS, EXTRA_COLUMNS, RESULTS_SCHEMA, read_results
from colosim.model.grid import evaluation_columns

from .conftest import write_config

runner = CliRunner()


def sweep(tmp_path, grid: str, name="c.toml", out="r.csv") -> Path:
    config = write_config(tmp_path, grid, count=2, tasks=12, name=name)
    res = runner.invoke(app, ["sweep", str(config), "--out", str(tmp_path / out), "-q"])
    assert res.exit_code == 0, res.output
    return tmp_path / out


def test_every_table_has_every_column_whatever_its_grid(tmp_path, small_store):
    _, x, _ = small_store
    plain = sweep(tmp_path, 'estimator = ["av:1"]\nclairvoyance = [0.25, 1.0]', out="plain.csv")
    extras = sweep(tmp_path, 'estimator = ["gpa-cal:0.01"]\ncapacity = ["1:0.5,0.5:0.5"]', name="e.toml",
                   out="extras.csv")
    for path in (plain, extras):
        header = next(csv.reader(path.read_text().splitlines()))
        assert tuple(header) == COLUMNS and set(EXTRA_COLUMNS) <= set(header)
    rows = list(csv.DictReader(plain.read_text().splitlines()))
    assert {r["calibrated_rho"] for r in rows} == {""} and {r["q_by_type"] for r in rows} == {""}
    R = x.shape[1]
    for r in read_results(plain):
        assert r["realizations"] == R and r["evaluated"] == evaluation_columns(r["clairvoyance"], R)
    assert {r["evaluated"] for r in read_results(plain)} == {R, R - round(0.25 * R)}
    assert all(r["calibrated_rho"] is not None and r["m_abs_by_type"] for r in read_results(extras))


def test_earlier_tables_get_a_clear_error(tmp_path):
    old = tmp_path / "old.csv"
    paper_keys = ("estimator", "algorithm", "capacity", "clairvoyance", "data", "rebalance", "headroom")
    schema2 = ("instance", *paper_keys, *COLUMNS[COLUMNS.index("m_abs"): COLUMNS.index("realizations")])
    old.write_text(",".join(schema2) + "\n")
    with pytest.raises(InputError, match="earlier colosim .schema 2.*fit_rule.*realizations, evaluated.*--force"):
        read_results(old)
    schema3 = (*schema2, "realizations", "evaluated", "calibrated_rho", "m_abs_by_type", "q_by_type")
    old.write_text(",".join(schema3) + "\n")
    with pytest.raises(InputError, match="earlier colosim .schema 3.*fit_rule, memory_capacity, memory_estimator.*"
                                         "q_memory, q_memory_max, memory_bound.*--force"):
        read_results(old)
    odd = tmp_path / "odd.csv"
    odd.write_text(",".join((*COLUMNS, "bogus")) + "\n")
    with pytest.raises(InputError, match="unknown columns bogus"):
        read_results(odd)
    bad = tmp_path / "bad.csv"
    row = ("0,av:1,best-fit,1.0,1.0,inst,true,1.0,cpu,,max,3,2,1.5,0.1,0.2,0.01,0,0.05,0.2,100,101,,,,,,\n")
    bad.write_text(",".join(COLUMNS) + "\n" + row)
    with pytest.raises(InputError, match="line 2: evaluated must lie in"):
        read_results(bad)
    assert RESULTS_SCHEMA == 4


def test_the_sidecar_says_what_ran_and_how(tmp_path, small_store):
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    out = sweep(tmp_path, 'estimator = ["av:1", "max"]')
    meta = json.loads(out.with_name(out.name + ".json").read_text())
    for key in ("command", "started", "finished", "host", "versions", "commit", "config", "store"):
        assert key in meta, key
    started = datetime.datetime.fromisoformat(meta["started"])
    assert before <= started <= datetime.datetime.fromisoformat(meta["finished"])
    assert set(meta["versions"]) == {"colosim", "python", "numpy", "numba", "h5py"}
    assert meta["versions"]["colosim"] == colosim.__version__
    assert meta["config"]["path"].endswith("c.toml")
    assert meta["config"]["parsed"]["grid"]["estimator"] == ["av:1", "max"]
    assert meta["config"]["parsed"]["instances"] == {"count": 2, "tasks": 12, "seed": 5}
    assert meta["store"]["path"].endswith("store.h5") and len(meta["store"]["fingerprint"]) == 64
    if (Path(colosim.__file__).resolve().parents[1] / ".git").exists():  # run from a checkout
        assert meta["commit"] is None or len(meta["commit"]["id"]) == 40
    # the volatile keys are not part of the fingerprint: a rerun recomputes nothing
    config = tmp_path / "c.toml"
    res = runner.invoke(app, ["sweep", str(config), "--out", str(out), "-q"])
    assert res.exit_code == 0 and "nothing recomputed" in res.output


def test_reproduce_records_the_scaled_config(tmp_path):
    from colosim.config import load_config
    from colosim.runner.reproduce import scale_config
    from colosim.shipped import configs_dir

    paper = load_config(configs_dir() / "clairvoyance.toml")
    small = scale_config(paper, "small").effective()
    assert small["source"]["tasks"] == 3000 and small["instances"] == {"count": 10, "tasks": 200, "seed": 1}
    assert small["grid"] == paper.effective()["grid"]


def test_read_results_is_a_dataframe_with_every_column(tmp_path, small_store):
    pd = pytest.importorskip("pandas", reason="colosim.read_results needs the optional pandas extra")
    out = sweep(tmp_path, 'estimator = ["av:1", "max"]\nclairvoyance = [0.5]')
    frame = colosim.read_results(out)
    assert isinstance(frame, pd.DataFrame) and tuple(frame.columns) == COLUMNS and len(frame) == 4
    rows = read_results(out)
    assert frame["q"].tolist() == [r["q"] for r in rows] and frame["m_abs"].tolist() == [r["m_abs"] for r in rows]
    assert frame["evaluated"].tolist() == [r["evaluated"] for r in rows]
    with pytest.raises(InputError):
        colosim.read_results(tmp_path / "missing.csv")
