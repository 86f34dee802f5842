"""Google 2019 instance_usage ingest (SPEC §7 steps 2-5): the 19 real tasks,
one hand-made file per rule, bad input, and fuzzed files."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from colosim.cli import app
from colosim.errors import InputError
from colosim.io import open_series
from colosim.io.series import write_series
from colosim.sources.google2019 import ingest_google2019

runner = CliRunner()
HEADER = ["time", "collection_id", "instance_index", "machine_id", "avg_cpu_usage", "max_cpu_usage",
          "random_sample_cpu_usage"]


def row(time, collection, index, avg, inst, machine=5):
    return [str(time), str(collection), str(index), str(machine),
            "" if avg is None else str(avg), "0.9", "" if inst is None else str(inst)]


def write_file(path: Path, rows, header=HEADER) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(",".join(r) + "\n" for r in [header, *rows])
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def task_rows(collection, index, n, inst=0.3, avg=0.25, t0=0):
    return [row(t0 + 300_000_000 * k, collection, index, avg, inst) for k in range(n)]


def test_real_tasks_all_kept_with_their_records(shared_data, tmp_path):
    folder = shared_data / "google2019" / "instance_usage"
    files = sorted(folder.rglob("*.csv.gz"))
    raw = {}
    for f in files:
        with gzip.open(f, "rt", newline="") as fh:
            rows = list(csv.DictReader(fh))
        key = (int(rows[0]["collection_id"]), int(rows[0]["instance_index"]))
        raw[key] = rows
    assert len(raw) == 19
    out = tmp_path / "s.h5"
    report = ingest_google2019([folder], out)
    series = open_series(out)
    assert sorted(raw) == [tuple(int(v) for v in t) for t in series.task_id]
    assert report.step("short")["tasks"] == 19
    larger_std = 0
    for k, t in enumerate(series.task_id):
        rows = raw[tuple(int(v) for v in t)]
        inst, avg = series.task(k)
        assert len(inst) == len(rows)
        assert np.sort(inst).tolist() == sorted(np.float32(float(r["random_sample_cpu_usage"])) for r in rows)
        assert np.sort(avg).tolist() == sorted(np.float32(float(r["avg_cpu_usage"])) for r in rows)
        assert abs(inst.mean() - avg.mean()) <= 0.05 * avg.mean()
        larger_std += inst.std() > avg.std()
    assert larger_std > 19 / 2


def test_rules_on_hand_made_files(tmp_path):
    a = task_rows(1, 0, 30)
    a[2][4] = ""  # avg missing
    a[3][6] = ""  # inst missing -> 28 records
    b = task_rows(1, 1, 24, inst=0.0)  # zero usage
    c = task_rows(1, 2, 24)
    c[0] = row(0, 1, 2, 1.7, 0.6)  # average above 1
    c[1] = row(300_000_000, 1, 2, 0.2, 1.2)  # instantaneous above 1, kept
    d = task_rows(2, 0, 23)  # short
    d_missing = task_rows(2, 1, 24)
    d_missing[5][6] = ""  # 23 after step 2: short
    write_file(tmp_path / "in" / "a.csv.gz", a)
    write_file(tmp_path / "in" / "sub" / "b.csv", b + c)
    write_file(tmp_path / "in" / "d.csv", d + d_missing)
    out = tmp_path / "s.h5"
    report = ingest_google2019([tmp_path / "in"], out)
    series = open_series(out)
    assert series.task_id.tolist() == [[1, 0], [1, 2]]
    assert series.lengths().tolist() == [28, 24]
    inst, avg = series.task(1)
    assert (inst[0], avg[0]) == (np.float32(0.6), np.float32(0.6))
    assert (inst[1], avg[1]) == (np.float32(1.2), np.float32(0.2))
    assert report.counts["avg_above_1_replaced"] == 1 and report.counts["inst_above_1"] == 1
    assert report.step("missing")["records_dropped"] == 3
    assert report.step("zero_usage")["tasks_dropped"] == 1
    assert (report.step("short")["tasks_dropped"], report.step("short")["records_dropped"]) == (2, 46)
    assert series.attrs["filters"]["steps"][0]["records"] == 30 + 24 + 24 + 23 + 24


def test_records_sorted_by_time_and_split_tasks_merged(tmp_path):
    rows = task_rows(3, 4, 30)
    rng = np.random.default_rng(0)
    perm = rng.permutation(30)
    write_file(tmp_path / "x.csv", [rows[i] for i in perm[:10]])
    write_file(tmp_path / "y.csv.gz", [rows[i] for i in perm[10:]] + [rows[0]])
    out = tmp_path / "s.h5"
    report = ingest_google2019([tmp_path / "x.csv", str(tmp_path / "y.*")], out, min_records=31)
    series = open_series(out)
    assert series.n_records == 31 and report.counts["duplicates"] == 1
    assert np.all(np.diff(series.start_time) >= 0)


@pytest.mark.parametrize(
    "edit, why",
    [
        (lambda r: r + ["1"], "columns"),
        (lambda r: r[:-1], "columns"),
        (lambda r: r[:4] + ["high"] + r[5:], "not a number"),
        (lambda r: ["noon"] + r[1:], "not an integer"),
        (lambda r: r[:6] + ["-1"], "finite"),
    ],
)
def test_bad_line_exit_2_names_file_and_line(tmp_path, edit, why):
    rows = task_rows(1, 0, 30)
    rows[4] = edit(rows[4])
    f = write_file(tmp_path / "in" / "t.csv.gz", rows)
    out = tmp_path / "s.h5"
    write_series(out, task_id=[[9, 9]], offsets=[0, 1], inst=[0.5], avg=[0.5], start_time=[0],
                 source={}, filters={})
    before = out.read_bytes()
    result = runner.invoke(app, ["ingest", "google2019", str(f), "--out", str(out), "--force"])
    assert result.exit_code == 2, result.output
    message = result.output.strip().splitlines()[-1]
    assert message.startswith("error: ") and str(f) in message and "line 6" in message and why in message
    assert out.read_bytes() == before
    report = ingest_google2019([f], out, on_bad_lines="skip", force=True)
    assert report.counts["bad_lines"] == 1 and open_series(out).n_records == 29


def test_truncated_gzip_and_missing_header_column(tmp_path):
    f = write_file(tmp_path / "t.csv.gz", task_rows(1, 0, 3000))
    f.write_bytes(f.read_bytes()[:-200])
    g = write_file(tmp_path / "h.csv", task_rows(1, 0, 30), header=HEADER[:-1] + ["other"])
    out = tmp_path / "s.h5"
    for bad, why in ((f, "after line"), (g, "random_sample_cpu_usage"), (tmp_path / "nothing", "not found")):
        result = runner.invoke(app, ["ingest", "google2019", str(bad), "--out", str(out), "--on-bad-lines", "skip"])
        assert result.exit_code == 2
        assert str(bad) in result.output and why in result.output
    assert not out.exists()


def test_cli_prints_counts(tmp_path):
    f = write_file(tmp_path / "t.csv", task_rows(1, 0, 30))
    result = runner.invoke(app, ["ingest", "google2019", str(f), "--out", str(tmp_path / "s.h5")])
    assert result.exit_code == 0, result.output
    assert "zero_usage" in result.output and "short" in result.output


_cells = st.sampled_from(["0", "1", "-1", "0.5", "2.5", "", "nan", "x", "1e400", "9" * 30, "\"", " "])


@settings(max_examples=40)
@given(
    header=st.one_of(st.just(HEADER), st.lists(st.sampled_from(HEADER + ["junk"]), min_size=0, max_size=8)),
    rows=st.lists(st.lists(_cells, min_size=6, max_size=8), max_size=5),
    gz=st.booleans(),
    cut=st.integers(0, 3),
    skip=st.booleans(),
)
def test_fuzzed_files_raise_only_input_errors(tmp_path_factory, header, rows, gz, cut, skip):
    folder = tmp_path_factory.mktemp("fuzz")
    f = write_file(folder / ("t.csv.gz" if gz else "t.csv"), rows, header=header)
    if cut:
        data = f.read_bytes()
        f.write_bytes(data[: max(0, len(data) - 7 * cut)])
    out = folder / "s.h5"
    try:
        ingest_google2019([f], out, min_records=1, on_bad_lines="skip" if skip else "error")
    except InputError as exc:
        assert str(f) in str(exc)
        assert not out.exists()
    else:
        series = open_series(out)
        assert np.all(np.isfinite(series.avg)) and np.all(np.asarray(series.avg) >= 0)
