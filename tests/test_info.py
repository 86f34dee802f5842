"""`colosim info` describes and verifies stores, series and results."""

import h5py
import numpy as np
from typer.testing import CliRunner

from colosim.cli import app
from colosim.io import write_series

runner = CliRunner()


def test_info_on_a_store(small_store):
    path, x, _ = small_store
    res = runner.invoke(app, ["info", str(path)])
    assert res.exit_code == 0, res.output
    assert "colosim store" in res.output and "N = 120, realizations R = 400" in res.output
    assert "values:" not in res.output  # no scan unless asked
    res = runner.invoke(app, ["info", str(path), "--verify"])
    assert res.exit_code == 0 and "all finite and >= 0" in res.output


def test_info_finds_a_negative_value_and_changes_nothing(small_store):
    path, _, _ = small_store
    with h5py.File(path, "r") as f:
        off = f["y"].id.get_offset()
    with open(path, "r+b") as fh:
        fh.seek(off + 4 * (400 * 7 + 3))
        fh.write(np.float32(-0.5).tobytes())
    before = path.read_bytes()
    assert runner.invoke(app, ["info", str(path)]).exit_code == 0  # not scanned by default
    res = runner.invoke(app, ["info", str(path), "--verify"])
    assert res.exit_code == 2
    assert "y(7, 3) holds" in res.output and res.output.strip().splitlines()[-1].startswith("error: ")
    assert path.read_bytes() == before


def test_info_on_series_and_results(tmp_path, small_store, monkeypatch):
    s = tmp_path / "s.h5"
    write_series(s, task_id=[[1, 0], [1, 1]], offsets=[0, 30, 54], inst=np.full(54, 0.1),
                 avg=np.full(54, 0.1), start_time=np.arange(54), source={"kind": "test"}, filters={"short": 3})
    res = runner.invoke(app, ["info", str(s)])
    assert res.exit_code == 0 and "tasks = 2, records = 54 (per task 24 to 30" in res.output
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(
        '[source]\nkind = "store"\npath = "store.h5"\n[instances]\ncount = 2\ntasks = 10\nseed = 0\n'
        '[grid]\nestimator = ["av:1", "max"]\n')
    assert runner.invoke(app, ["sweep", "c.toml", "--out", "r.csv", "-q"]).exit_code == 0
    res = runner.invoke(app, ["info", "r.csv"])
    assert res.exit_code == 0 and "4 rows" in res.output and "estimator: av:1, max" in res.output
    assert "command:" in res.output and "ran: " in res.output
    res = runner.invoke(app, ["info", "r.csv.json"])
    assert res.exit_code == 0 and "colosim results sidecar (of r.csv)" in res.output
    for words in ("versions: colosim", "numba", "h5py", "effective config:", "  grid:",
                  '    estimator: ["av:1", "max"]', "store: store.h5"):
        assert words in res.output, (words, res.output)
    res = runner.invoke(app, ["info", "r.csv.summary.csv"])
    assert res.exit_code == 0 and "colosim results summary, 2 grid points" in res.output
    assert "q_max_mean" in res.output


def test_info_on_a_characterization(tmp_path):
    out = tmp_path / "char"
    out.mkdir()
    (out / "report.md").write_text("# Characterization\n\n## Table 1\ntext\n")
    (out / "clusters.csv").write_text("cluster,share\n0,0.5\n1,0.5\n")
    res = runner.invoke(app, ["info", str(out / "clusters.csv")])
    assert res.exit_code == 0 and "colosim characterize table, 2 rows" in res.output and "cluster, share" in res.output
    res = runner.invoke(app, ["info", str(out / "report.md")])
    assert res.exit_code == 0 and "characterize report" in res.output and "Table 1" in res.output
    (tmp_path / "x.csv.json").write_text("{}")
    res = runner.invoke(app, ["info", str(tmp_path / "x.csv.json")])
    assert res.exit_code == 2 and "x.csv.json" in res.output


def test_series_filters_are_printed_one_per_line(tmp_path):
    s = tmp_path / "s.h5"
    filters = {f"step{i}": {"tasks": i, "records": 10 * i} for i in range(40)}
    write_series(s, task_id=[[1, 0]], offsets=[0, 30], inst=np.full(30, 0.1), avg=np.full(30, 0.1),
                 start_time=np.arange(30), source={"kind": "test"}, filters=filters)
    res = runner.invoke(app, ["info", str(s)], terminal_width=100)
    assert res.exit_code == 0 and "  step39:" in res.output and max(map(len, res.output.splitlines()[1:])) < 60


def test_info_rejects_foreign_files(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello\n")
    res = runner.invoke(app, ["info", str(p)])
    assert res.exit_code == 2 and "notes.txt" in res.output
    res = runner.invoke(app, ["info", str(tmp_path / "missing.h5")])
    assert res.exit_code == 2 and "not found" in res.output


def test_written_files_get_the_usual_permissions(tmp_path):
    import os
    import stat

    from colosim.io import write_text_atomic

    mask = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.txt", "x")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o644
