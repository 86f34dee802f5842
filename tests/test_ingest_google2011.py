"""Google 2011 ingest (SPEC §7): real shards, one hand-made trace per rule,
bad input, and fuzzed shards."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from colosim.cli import app
from colosim.errors import InputError
from colosim.io import open_series
from colosim.io.series import write_series
from colosim.sources.google2011 import ingest_google2011

runner = CliRunner()


# ------------------------------------------------------------ hand-made ---

def usage_row(job, idx, start, avg, inst, *, end=None, machine=7):
    """One task_usage line's 20 fields (None: empty field)."""
    end = start + 300_000_000 if end is None else end
    fields = [start, end, job, idx, machine, avg] + [0.5] * 13 + [inst]
    return ["" if v is None else str(v) for v in fields]


def event_row(job, idx, event_type, time=0):
    fields = [time, "", job, idx, 5, event_type, "user=", 2, 9, 0.1, 0.2, 0.0, 0]
    return [str(v) for v in fields]


def write_shard(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(",".join(r) + "\n" for r in rows)
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def make_trace(root: Path, events, usage_shards, gz=True) -> Path:
    ext = ".csv.gz" if gz else ".csv"
    write_shard(root / "task_events" / f"part-00000-of-00001{ext}", events)
    for i, rows in enumerate(usage_shards):
        write_shard(root / "task_usage" / f"part-{i:05d}-of-{len(usage_shards):05d}{ext}", rows)
    return root


def long_task(job, idx, n, *, t0=0, inst=0.25, avg=0.2):
    return [usage_row(job, idx, t0 + 300_000_000 * k, avg, inst) for k in range(n)]


def ingest(root, tmp_path, **kw):
    out = tmp_path / "series.h5"
    report = ingest_google2011(root, out, threads=1, **kw)
    return report, open_series(out)


def task_ids(series) -> list[tuple[int, int]]:
    return [tuple(int(v) for v in r) for r in series.task_id]


def test_failing_event_types_drop_the_whole_task(tmp_path):
    events = [event_row(j, 0, 0) for j in range(1, 10)]
    events += [event_row(j, 0, j) for j in range(1, 9)]  # job j gets an event of type j
    usage = [sum((long_task(j, 0, 30) for j in range(1, 10)), [])]
    report, series = ingest(make_trace(tmp_path / "t", events, usage), tmp_path)
    assert task_ids(series) == [(j, 0) for j in (1, 4, 7, 8, 9)]
    step = report.step("failing")
    assert (step["tasks_dropped"], step["records_dropped"]) == (4, 4 * 30)
    assert report.counts["event_failing_tasks"] == 4
    assert report.counts["event_tasks"] == 9


def test_missing_columns_dropped_and_short_counted_after_step_2(tmp_path):
    a = long_task(1, 0, 24)
    a[3][5] = ""  # avg missing -> task 1 keeps 23 records: short
    b = long_task(2, 0, 25)
    b[0][19] = ""  # inst missing -> 24 records: long
    c = [usage_row(3, 0, 0, None, 0.1)]  # only record incomplete: task gone at step 2
    report, series = ingest(make_trace(tmp_path / "t", [], [a + b + c]), tmp_path)
    assert task_ids(series) == [(2, 0)]
    assert series.n_records == 24
    missing = report.step("missing")
    assert (missing["tasks_dropped"], missing["records_dropped"]) == (1, 3)
    short = report.step("short")
    assert (short["tasks_dropped"], short["records_dropped"]) == (1, 23)


def test_average_above_one_replaced_and_instantaneous_above_one_counted(tmp_path):
    rows = long_task(1, 0, 24)
    rows[0] = usage_row(1, 0, 0, 1.5, 0.75)
    rows[1] = usage_row(1, 0, 300_000_000, 0.5, 1.25, end=600_000_000)
    report, series = ingest(make_trace(tmp_path / "t", [], [rows]), tmp_path)
    inst, avg = series.task(0)
    assert avg[0] == np.float32(0.75) and inst[0] == np.float32(0.75)
    assert inst[1] == np.float32(1.25) and avg[1] == np.float32(0.5)
    assert report.counts["avg_above_1_replaced"] == 1
    assert report.counts["inst_above_1"] == 1


def test_zero_usage_tasks_dropped(tmp_path):
    zero = long_task(1, 0, 30, inst=0.0, avg=0.1)
    almost = long_task(2, 0, 30, inst=0.0)
    almost[-1][19] = "0.001"
    report, series = ingest(make_trace(tmp_path / "t", [], [zero + almost]), tmp_path)
    assert task_ids(series) == [(2, 0)]
    step = report.step("zero_usage")
    assert (step["tasks_dropped"], step["records_dropped"]) == (1, 30)


@pytest.mark.parametrize("threshold", [1, 5, 24])
def test_short_threshold_is_a_parameter(tmp_path, threshold):
    rows = sum((long_task(j, 0, n) for j, n in ((1, 1), (2, 4), (3, 5), (4, 23), (5, 24))), [])
    report, series = ingest(make_trace(tmp_path / "t", [], [rows]), tmp_path, min_records=threshold)
    kept = [(j, 0) for j, n in ((1, 1), (2, 4), (3, 5), (4, 23), (5, 24)) if n >= threshold]
    assert task_ids(series) == kept
    assert report.step("short")["tasks"] == len(kept)
    assert json.loads(h5py.File(tmp_path / "series.h5")["/"].attrs["filters"])["min_records"] == threshold


def test_sort_order_across_shards_and_duplicates_kept(tmp_path):
    rng = np.random.default_rng(3)
    rows = []
    for job in (10, 9, 100):  # numeric, not text order
        for idx in (2, 0, 11):
            for k in range(26):
                rows.append(usage_row(job, idx, 300_000_000 * (k // 2), round(0.01 * k, 4), round(0.02 * k + 0.01, 4),
                                      end=300_000_000 * (k // 2) + 1000 * (k % 2), machine=int(rng.integers(1, 4))))
    rows.append(list(rows[5]))  # an exact duplicate
    rows.append(list(rows[7]))
    perm = rng.permutation(len(rows))
    shards = [[rows[i] for i in perm[: len(perm) // 2]], [rows[i] for i in perm[len(perm) // 2 :]]]
    report, series = ingest(make_trace(tmp_path / "t", [], shards, gz=False), tmp_path)
    assert task_ids(series) == sorted((j, i) for j in (10, 9, 100) for i in (2, 0, 11))
    assert report.counts["duplicates"] == 2
    assert series.n_records == len(rows)
    # records within each task in (start, end, machine) order
    for k, (job, idx) in enumerate(task_ids(series)):
        expect = sorted(
            (int(r[0]), int(r[1]), int(r[4]), np.float32(float(r[19])), np.float32(float(r[5])))
            for r in rows if (int(r[2]), int(r[3])) == (job, idx)
        )
        inst, avg = series.task(k)
        a, b = series.offsets[k], series.offsets[k + 1]
        assert list(series.start_time[a:b]) == [e[0] for e in expect]
        assert list(inst) == [e[3] for e in expect]
        assert list(avg) == [e[4] for e in expect]


def test_counts_chain_and_are_stored(tmp_path):
    events = [event_row(1, 0, 3)]
    rows = long_task(1, 0, 30) + long_task(2, 0, 30, inst=0.0) + long_task(3, 0, 5) + long_task(4, 0, 40)
    rows[35][5] = ""
    report, series = ingest(make_trace(tmp_path / "t", events, [rows]), tmp_path)
    steps = report.steps
    for prev, cur in zip(steps, steps[1:]):
        assert cur["tasks"] == prev["tasks"] - cur["tasks_dropped"]
        assert cur["records"] == prev["records"] - cur["records_dropped"]
    assert steps[0]["tasks"] == 4 and steps[0]["records"] == 105
    assert steps[-1]["tasks"] == series.n_tasks == 1 and steps[-1]["records"] == series.n_records == 40
    assert series.attrs["filters"] == json.loads(json.dumps(report.to_dict()))


def test_glob_and_explicit_shard_options(tmp_path):
    root = make_trace(tmp_path / "t", [event_row(1, 0, 5)], [long_task(1, 0, 30), long_task(2, 0, 30)])
    out = tmp_path / "s.h5"
    report = ingest_google2011(
        None, out, task_events=str(root / "task_events"),
        task_usage=str(root / "task_usage" / "part-0000[01]-*.csv.gz"),
    )
    assert task_ids(open_series(out)) == [(2, 0)]
    assert report.counts["task_usage_shards"] == 2


# ------------------------------------------------------------ real data ---

def _read_csv_gz(path: Path):
    with gzip.open(path, "rt", newline="") as fh:
        yield from csv.reader(fh)


def test_real_failing_tasks_equal_independent_count(shared_data, tmp_path):
    trace = shared_data / "google2011"
    events = str(trace / "task_events" / "part-0000[13]-of-00500.csv.gz")  # two shards keep it fast
    failing, all_tasks = set(), set()
    for shard in sorted((trace / "task_events").glob("part-0000[13]-of-00500.csv.gz")):
        for r in _read_csv_gz(shard):
            key = (int(r[2]), int(r[3]))
            all_tasks.add(key)
            if int(r[5]) in (2, 3, 5, 6):
                failing.add(key)
    assert len(all_tasks) > 50_000 and len(failing) > 1000
    usage = {(int(r[2]), int(r[3])) for r in _read_csv_gz(next((trace / "task_usage").glob("*.csv.gz")))}
    out = tmp_path / "s.h5"
    report = ingest_google2011(None, out, task_events=events, task_usage=trace / "task_usage", min_records=1)
    series = open_series(out)
    assert report.counts["event_tasks"] == len(all_tasks)
    assert report.counts["event_failing_tasks"] == len(failing)
    assert report.step("failing")["tasks_dropped"] == len(usage & failing)
    assert not set(task_ids(series)) & failing


def test_real_shard0_task_count_matches_readme(shared_data, tmp_path):
    trace = shared_data / "google2011"
    out = tmp_path / "s.h5"
    report = ingest_google2011(
        None, out, task_events=trace / "task_events" / "part-00000-of-00500.csv.gz",
        task_usage=trace / "task_usage", min_records=1,
    )
    assert report.counts["event_tasks"] == 190_926


def test_real_usage_columns_row_for_row(shared_data, tmp_path):
    trace = shared_data / "google2011"
    report, series = ingest(trace, tmp_path, min_records=1)
    raw = {}
    for r in _read_csv_gz(next((trace / "task_usage").glob("*.csv.gz"))):
        raw.setdefault((int(r[2]), int(r[3])), []).append(r)
    assert report.step("input")["records"] == sum(len(v) for v in raw.values()) == 10_000
    assert series.n_tasks > 1000
    for k, key in enumerate(task_ids(series)):
        (r,) = raw[key]  # one record per task in this excerpt
        inst, avg = series.task(k)
        assert inst[0] == np.float32(float(r[19]))
        c6 = float(r[5])
        assert avg[0] == np.float32(c6 if c6 <= 1 else float(r[19]))
        assert series.start_time[series.offsets[k]] == int(r[0])


# ------------------------------------------------------------ bad input ---

@pytest.fixture
def good_trace(tmp_path):
    return make_trace(tmp_path / "trace", [event_row(1, 0, 0)], [long_task(1, 0, 30), long_task(2, 0, 30)])


def _existing_output(tmp_path) -> tuple[Path, bytes]:
    """An existing series file (which --force may replace) and its bytes."""
    out = tmp_path / "series.h5"
    write_series(out, task_id=[[9, 9]], offsets=[0, 1], inst=[0.5], avg=[0.5], start_time=[0],
                 source={}, filters={})
    return out, out.read_bytes()


def _corrupt_line(root: Path, lineno: int, edit) -> Path:
    shard = root / "task_usage" / "part-00001-of-00002.csv.gz"
    with gzip.open(shard, "rt") as fh:
        lines = fh.read().splitlines()
    lines[lineno - 1] = edit(lines[lineno - 1])
    with gzip.open(shard, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    return shard


@pytest.mark.parametrize(
    "edit, why",
    [
        (lambda s: s + ",9", "columns"),
        (lambda s: s.rsplit(",", 1)[0], "columns"),
        (lambda s: s.replace(",0.5,", ",zero,", 1), "number"),
        (lambda s: ",".join(s.split(",")[:2] + [""] + s.split(",")[3:]), "empty"),
        (lambda s: ",".join(s.split(",")[:19] + ["nan"]), "finite"),
        (lambda s: ",".join(s.split(",")[:5] + ["-0.5"] + s.split(",")[6:]), "finite"),
    ],
)
def test_bad_line_exit_2_names_file_and_line(good_trace, tmp_path, edit, why):
    shard = _corrupt_line(good_trace, 7, edit)
    out, before = _existing_output(tmp_path)
    result = runner.invoke(app, ["ingest", "google2011", str(good_trace), "--out", str(out), "--threads", "2",
                                 "--force"])
    assert result.exit_code == 2, result.output
    message = result.output.strip().splitlines()[-1]
    assert message.startswith("error: ") and str(shard) in message and "line 7" in message and why in message
    assert out.read_bytes() == before


@pytest.mark.parametrize("edit", [lambda s: s + ",9", lambda s: s.replace(",0.5,", ",x,", 1)])
def test_bad_line_skip_is_counted(good_trace, tmp_path, edit):
    _corrupt_line(good_trace, 7, edit)
    report, series = ingest(good_trace, tmp_path, on_bad_lines="skip")
    assert report.counts["bad_lines"] == report.counts["usage_bad_lines"] == 1
    assert report.step("input")["records"] == 59
    assert series.attrs["filters"]["bad_lines"] == 1


def test_bad_event_line_names_file_and_line(good_trace, tmp_path):
    shard = good_trace / "task_events" / "part-00000-of-00001.csv.gz"
    write_shard(shard, [event_row(1, 0, 0), event_row(1, 0, 1)[:12]])
    out, before = _existing_output(tmp_path)
    result = runner.invoke(app, ["ingest", "google2011", str(good_trace), "--out", str(out), "--force"])
    assert result.exit_code == 2
    assert str(shard) in result.output and "line 2" in result.output
    assert out.read_bytes() == before


def test_truncated_gzip_is_an_error_even_when_skipping(good_trace, tmp_path):
    shard = good_trace / "task_usage" / "part-00000-of-00002.csv.gz"
    write_shard(shard, long_task(1, 0, 3000))
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])
    out, before = _existing_output(tmp_path)
    for mode, threads in (("error", "1"), ("skip", "2")):
        result = runner.invoke(app, ["ingest", "google2011", str(good_trace), "--out", str(out),
                                     "--on-bad-lines", mode, "--threads", threads, "--force"])
        assert result.exit_code == 2
        assert str(shard) in result.output and "after line" in result.output
    assert out.read_bytes() == before


def test_missing_task_events_directory(good_trace, tmp_path):
    for f in (good_trace / "task_events").iterdir():
        f.unlink()
    (good_trace / "task_events").rmdir()
    out, before = _existing_output(tmp_path)
    result = runner.invoke(app, ["ingest", "google2011", str(good_trace), "--out", str(out)])
    assert result.exit_code == 2
    assert "task_events" in result.output and "not found" in result.output
    assert out.read_bytes() == before


def test_bad_options(good_trace, tmp_path):
    out = tmp_path / "s.h5"
    for args in (["--on-bad-lines", "ignore"], ["--min-records", "0"], ["--memory-limit", "lots"], ["--threads", "0"]):
        result = runner.invoke(app, ["ingest", "google2011", str(good_trace), "--out", str(out), *args])
        assert result.exit_code == 2, (args, result.output)
        assert result.output.strip().splitlines()[-1].startswith("error: ")
    assert not out.exists()


def test_cli_prints_the_counts_table(good_trace, tmp_path):
    out = tmp_path / "s.h5"
    result = runner.invoke(app, ["ingest", "google2011", str(good_trace), "--out", str(out), "--threads", "1"])
    assert result.exit_code == 0, result.output
    for step in ("input", "failing", "missing", "above_1", "zero_usage", "short"):
        assert step in result.output
    assert open_series(out).n_tasks == 2


# -------------------------------------------------------------- fuzzing ---

_tokens = st.sampled_from(["0", "1", "7", "-3", "0.5", "1.5", "", "nan", "inf", "x", "1e3", " ", "\"",
                           "9223372036854775807"])


@st.composite
def shard_text(draw, widths=(19, 20, 21)):
    n_rows = draw(st.integers(0, 6))
    lines = []
    for _ in range(n_rows):
        if draw(st.booleans()):
            width = draw(st.sampled_from(widths))
            lines.append(",".join(draw(st.lists(_tokens, min_size=width, max_size=width))))
        else:
            lines.append(draw(st.text(alphabet="0123456789.,-e \"\t", max_size=40)))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=20)
@given(usage=shard_text(), events=shard_text(widths=(12, 13, 14)), fuzz_events=st.booleans(),
       gz=st.booleans(), cut=st.integers(0, 2), skip=st.booleans())
def test_fuzzed_shards_raise_only_input_errors(tmp_path_factory, usage, events, fuzz_events, gz, cut, skip):
    root = tmp_path_factory.mktemp("fuzz")
    if fuzz_events:
        shard = root / "task_events" / ("e.csv.gz" if gz else "e.csv")
        write_shard(root / "task_usage" / "u.csv", long_task(1, 0, 3))
        text = events
    else:
        shard = root / "task_usage" / ("u.csv.gz" if gz else "u.csv")
        write_shard(root / "task_events" / "e.csv", [event_row(1, 0, 0)])
        text = usage
    shard.parent.mkdir(parents=True, exist_ok=True)
    data = gzip.compress(text.encode()) if gz else text.encode()
    shard.write_bytes(data[: max(0, len(data) - 5 * cut)])
    try:
        ingest_google2011(root, root / "s.h5", threads=1, min_records=1, on_bad_lines="skip" if skip else "error")
    except InputError as exc:
        assert str(shard) in str(exc) or shard.parent.name in str(exc)
        assert not (root / "s.h5").exists()
    else:
        series = open_series(root / "s.h5")
        assert np.all(np.isfinite(series.inst)) and np.all(np.asarray(series.inst) >= 0)
