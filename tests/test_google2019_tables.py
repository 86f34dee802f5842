"""Google 2019 trace tables in the v3 schema's nested shape (JSON lines,
gzip'd JSON lines, parquet) with instance_events: fixtures made here from the
19 real tasks, the failing-task filter, and bad input."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from colosim.cli import app
from colosim.errors import InputError
from colosim.io import open_series
from colosim.sources.google2019 import PERCENTILES, ingest_google2019

from .conftest import SHARED_DATA

runner = CliRunner()


def nested(rec: dict) -> dict:
    """One per-task CSV row as a v3 instance_usage record (the CSV has no
    p100: the fixture's is the CSV's maximum raised to p99, as the CSV
    ingest takes it)."""
    knots = [float(rec[p]) for p in PERCENTILES]
    top = float(rec["max_cpu_usage"])
    if all(v == -1 for v in knots):
        dist, tail = [-1.0] * 11, [-1.0] * 9
    else:
        dist, tail = [*knots[:10], max(top, knots[-1])], knots[10:]
    return {
        "start_time": int(rec["time"]), "end_time": int(rec["time"]) + 300_000_000,
        "collection_id": int(rec["collection_id"]), "instance_index": int(rec["instance_index"]),
        "machine_id": int(rec["machine_id"]),
        "average_usage": {"cpus": float(rec["avg_cpu_usage"]), "memory": float(rec["avg_memory_usage"])},
        "maximum_usage": {"cpus": top, "memory": float(rec["max_memory_usage"])},
        "random_sample_usage": {"cpus": float(rec["random_sample_cpu_usage"])},
        "cpu_usage_distribution": dist, "tail_cpu_usage_distribution": tail,
    }


def write_lines(path: Path, records) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in records)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def to_parquet(src: Path, dest: Path) -> Path:
    import duckdb

    con = duckdb.connect()
    con.execute(f"COPY (SELECT * FROM read_json('{src}', format = 'newline_delimited')) TO '{dest}' (FORMAT parquet)")
    con.close()
    return dest


def record(t, collection=7, index=0, inst=0.02, dist=None, tail=None, **extra):
    dist = [0.001 * (k + 1) for k in range(10)] + [0.05] if dist is None else dist
    tail = [0.011 + 0.001 * k for k in range(9)] if tail is None else tail
    r = {"start_time": 300_000_000 * t, "end_time": 300_000_000 * (t + 1), "collection_id": collection,
         "instance_index": index, "machine_id": 3, "average_usage": {"cpus": 0.01, "memory": 0.02},
         "maximum_usage": {"cpus": 0.05, "memory": 0.03}, "random_sample_usage": {"cpus": inst},
         "cpu_usage_distribution": dist, "tail_cpu_usage_distribution": tail}
    r.update(extra)
    return r


@pytest.fixture(scope="module")
def real_tables(tmp_path_factory):
    """The 19 real tasks as one JSON-lines file per collection, a gzip'd
    copy, a parquet copy, and their per-task CSV ingest to compare with."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real trace excerpts not found at ../shared/data (looked in {SHARED_DATA})")
    folder = SHARED_DATA / "google2019" / "instance_usage"
    tmp = tmp_path_factory.mktemp("tables")
    by_collection: dict = {}
    for f in sorted(folder.rglob("*.csv.gz")):
        with gzip.open(f, "rt", newline="") as fh:
            for rec in csv.DictReader(fh):
                by_collection.setdefault(rec["collection_id"], []).append(nested(rec))
    json_dir, gz_dir, pq_dir = tmp / "json", tmp / "gz", tmp / "parquet"
    for c, recs in by_collection.items():
        src = write_lines(json_dir / f"instance_usage-{c}.json", recs)
        write_lines(gz_dir / f"instance_usage-{c}.json.gz", recs)
        pq_dir.mkdir(exist_ok=True)
        to_parquet(src, pq_dir / f"instance_usage-{c}.parquet")
    ingest_google2019([folder], tmp / "csv.h5")
    return tmp, open_series(tmp / "csv.h5")


@pytest.mark.parametrize("kind", ["json", "gz", "parquet"])
def test_real_tasks_in_nested_shape_equal_the_csv_ingest(real_tables, kind):
    tmp, want = real_tables
    out = tmp / f"{kind}.h5"
    report = ingest_google2019([tmp / kind], out)
    got = open_series(out)
    np.testing.assert_array_equal(got.task_id, want.task_id)
    np.testing.assert_array_equal(got.offsets, want.offsets)
    for name in ("inst", "avg", "start_time", "mem_avg", "mem_max", "cpu_quantiles"):
        np.testing.assert_array_equal(np.asarray(getattr(got, name)), np.asarray(getattr(want, name)), err_msg=name)
    assert report.counts["distribution_absent"] == 15
    assert got.attrs["source"]["format"] == "google2019-tables"


def test_failing_events_drop_their_tasks(tmp_path):
    write_lines(tmp_path / "t" / "instance_usage-0.json",
                        [record(t, index=i) for i in range(4) for t in range(30)])
    events = [{"collection_id": 7, "instance_index": 0, "type": 5}, {"collection_id": 7, "instance_index": 1,
                                                                    "type": "KILL"},
              {"collection_id": 7, "instance_index": 2, "type": 3}, {"collection_id": 7, "instance_index": 2,
                                                                     "type": "SCHEDULE"}]
    write_lines(tmp_path / "t" / "instance_events-0.json", events)
    report = ingest_google2019([tmp_path / "t"], tmp_path / "s.h5")
    s = open_series(tmp_path / "s.h5")
    assert s.task_id.tolist() == [[7, 2], [7, 3]]
    step = report.step("failing")
    assert (step["tasks_dropped"], step["records_dropped"]) == (2, 60)
    assert report.counts["event_failing_tasks"] == 2


def test_without_events_there_is_no_failing_step(tmp_path):
    write_lines(tmp_path / "instance_usage.json", [record(t) for t in range(30)])
    report = ingest_google2019([tmp_path / "instance_usage.json"], tmp_path / "s.h5")
    assert [s["step"] for s in report.steps][:2] == ["input", "missing"]


def test_absent_distribution_falls_back_to_the_sample(tmp_path):
    recs = [record(t) for t in range(30)]
    recs[4] = record(4, inst=0.033, dist=[-1.0] * 11, tail=[-1.0] * 9)
    recs[5] = record(5, inst=0.044, dist=None, tail=None, cpu_usage_distribution=[])
    del recs[6]["cpu_usage_distribution"]
    del recs[6]["tail_cpu_usage_distribution"]
    write_lines(tmp_path / "instance_usage.json", recs)
    report = ingest_google2019([tmp_path / "instance_usage.json"], tmp_path / "s.h5")
    q = open_series(tmp_path / "s.h5").quantiles(0)
    np.testing.assert_array_equal(q[4], np.full(20, np.float32(0.033)))
    np.testing.assert_array_equal(q[5], np.full(20, np.float32(0.044)))
    np.testing.assert_array_equal(q[6], np.full(20, np.float32(0.02)))
    assert report.counts["distribution_absent"] == 3


@pytest.mark.parametrize("edit, why", [
    (dict(cpu_usage_distribution=[0.01] * 10), "has 10 values, expected 11"),
    (dict(tail_cpu_usage_distribution=[0.02] * 8), "has 8 values, expected 9"),
    (dict(cpu_usage_distribution=[0.01] * 10 + [1.5]), r"outside \[0, 1\]"),
    (dict(cpu_usage_distribution=[0.02, 0.01] + [0.02] * 9), "out of order"),
    (dict(random_sample_usage={"cpus": -0.5}), "random_sample_usage.cpus holds"),
])
def test_bad_record_exit_2_names_file_and_line(tmp_path, edit, why):
    recs = [record(t) for t in range(30)]
    recs[7].update(edit)
    path = write_lines(tmp_path / "instance_usage.json.gz", recs)
    with pytest.raises(InputError, match=why) as err:
        ingest_google2019([path], tmp_path / "s.h5")
    assert str(err.value).startswith(f"{path}: line 8:")
    assert not (tmp_path / "s.h5").exists()
    result = runner.invoke(app, ["ingest", "google2019", str(path), "-o", str(tmp_path / "s.h5")])
    assert result.exit_code == 2 and "line 8" in result.output
    assert not (tmp_path / "s.h5").exists()


def test_missing_nested_field_names_the_line(tmp_path):
    recs = [record(t) for t in range(30)]
    del recs[11]["collection_id"]
    path = write_lines(tmp_path / "instance_usage.json", recs)
    with pytest.raises(InputError, match="line 12: the record lacks collection_id"):
        ingest_google2019([path], tmp_path / "s.h5")


def test_bad_record_in_parquet_names_the_row(tmp_path):
    recs = [record(t) for t in range(30)]
    recs[3]["cpu_usage_distribution"] = [0.5] + [0.01] * 10
    src = write_lines(tmp_path / "src.json", recs)
    path = to_parquet(src, tmp_path / "instance_usage.parquet")
    with pytest.raises(InputError, match="row 4: percentiles out of order"):
        ingest_google2019([path], tmp_path / "s.h5")


def test_skip_drops_and_counts_bad_records(tmp_path):
    recs = [record(t) for t in range(30)]
    recs[2]["cpu_usage_distribution"] = [0.01] * 3
    write_lines(tmp_path / "instance_usage.json", recs)
    report = ingest_google2019([tmp_path / "instance_usage.json"], tmp_path / "s.h5", on_bad_lines="skip")
    assert report.counts["bad_lines"] == 1
    assert open_series(tmp_path / "s.h5").n_records == 29


def test_mixed_formats_and_events_alone_are_refused(tmp_path):
    write_lines(tmp_path / "a" / "instance_usage.json", [record(t) for t in range(30)])
    (tmp_path / "a" / "x.csv").write_text("time\n")
    with pytest.raises(InputError, match="both per-task CSVs and trace tables"):
        ingest_google2019([tmp_path / "a"], tmp_path / "s.h5")
    write_lines(tmp_path / "b" / "instance_events.json", [{"collection_id": 1, "instance_index": 0, "type": 5}])
    with pytest.raises(InputError, match="no instance_usage files"):
        ingest_google2019([tmp_path / "b"], tmp_path / "s.h5")
    assert not (tmp_path / "s.h5").exists()


def test_integers_written_as_strings_are_read(tmp_path):
    """BigQuery's JSON export writes INT64 values as JSON strings."""
    recs = []
    for t in range(30):
        r = record(t)
        for k in ("start_time", "end_time", "collection_id", "instance_index", "machine_id"):
            r[k] = str(r[k])
        recs.append(r)
    write_lines(tmp_path / "instance_usage.json", recs)
    write_lines(tmp_path / "instance_events.json", [{"collection_id": "7", "instance_index": "1", "type": "5"}])
    ingest_google2019([tmp_path], tmp_path / "s.h5")
    s = open_series(tmp_path / "s.h5")
    assert s.task_id.tolist() == [[7, 0]]
    assert np.asarray(s.start_time).tolist() == [300_000_000 * t for t in range(30)]


@pytest.mark.parametrize("edit, why", [
    (dict(start_time="abc"), 'start_time holds "abc", not an integer'),
    (dict(collection_id=7.5), "collection_id holds 7.5, not an integer >= 0"),
    (dict(instance_index=-3), "instance_index holds -3, not an integer >= 0"),
    (dict(collection_id=1e30), "collection_id holds 1e[+]30, not an integer >= 0"),
    (dict(average_usage="x"), 'average_usage holds "x", not an object'),
    (dict(average_usage={"cpus": True, "memory": 0.1}), "average_usage.cpus holds true, not a number"),
    (dict(cpu_usage_distribution="abc"), 'cpu_usage_distribution holds "abc", not an array of numbers'),
    (dict(cpu_usage_distribution=[0.01, "z"] + [0.02] * 9), "cpu_usage_distribution holds .*not an array"),
    (dict(cpu_usage_distribution=[0.01, None] + [0.02] * 9), r"is null or lies outside \[0, 1\]"),
])
def test_values_of_the_wrong_type_name_their_line(tmp_path, edit, why):
    """A value of the wrong type is its own line's error (not a whole-file
    read error, nor silently rounded or taken as absent)."""
    recs = [record(t) for t in range(30)]
    recs[5].update(edit)
    path = write_lines(tmp_path / "instance_usage.json", recs)
    with pytest.raises(InputError, match=why) as err:
        ingest_google2019([path], tmp_path / "s.h5")
    assert str(err.value).startswith(f"{path}: line 6:")
    report = ingest_google2019([path], tmp_path / "s.h5", on_bad_lines="skip")
    assert report.counts["bad_lines"] == 1 and report.counts["distribution_absent"] == 0
    assert open_series(tmp_path / "s.h5").n_records == 29


@pytest.mark.parametrize("text, why", [
    ("{not json\n", "line 3: not valid JSON"),
    ("[1, 2]\n", "line 3: a JSON list, not an object"),
])
def test_unreadable_line_is_named(tmp_path, text, why):
    lines = [json.dumps(record(t)) + "\n" for t in range(30)]
    lines[2] = text
    path = tmp_path / "instance_usage.json"
    path.write_text("".join(lines))
    with pytest.raises(InputError, match=why):
        ingest_google2019([path], tmp_path / "s.h5")
    assert not (tmp_path / "s.h5").exists()


@pytest.mark.parametrize("event, why", [
    ({"instance_index": 0, "type": 7}, "line 2: the event lacks collection_id"),
    ({"collection_id": 7, "instance_index": 0}, "line 2: the event lacks type"),
    ({"collection_id": 7.5, "instance_index": 0, "type": 7}, "line 2: collection_id holds 7.5"),
    ({"collection_id": "x7", "instance_index": 0, "type": 7}, 'line 2: collection_id holds "x7"'),
])
def test_bad_event_names_its_line(tmp_path, event, why):
    write_lines(tmp_path / "instance_usage.json", [record(t) for t in range(30)])
    events = write_lines(tmp_path / "instance_events.json",
                         [{"collection_id": 7, "instance_index": 1, "type": 5}, event])
    with pytest.raises(InputError, match=why) as err:
        ingest_google2019([tmp_path], tmp_path / "s.h5")
    assert str(err.value).startswith(f"{events}: ")
    assert not (tmp_path / "s.h5").exists()
    report = ingest_google2019([tmp_path], tmp_path / "s.h5", on_bad_lines="skip")
    assert report.counts["event_bad_lines"] == 1


def test_event_type_written_as_a_float_code_is_failing(tmp_path):
    write_lines(tmp_path / "instance_usage.json", [record(t, index=i) for i in range(2) for t in range(30)])
    write_lines(tmp_path / "instance_events.json", [{"collection_id": 7, "instance_index": 0, "type": 7.0}])
    ingest_google2019([tmp_path], tmp_path / "s.h5")
    assert open_series(tmp_path / "s.h5").task_id.tolist() == [[7, 1]]


def test_no_records_or_no_task_left_writes_nothing(tmp_path):
    empty = tmp_path / "a" / "instance_usage.json"
    empty.parent.mkdir()
    empty.write_text("")
    with pytest.raises(InputError, match="no instance_usage records"):
        ingest_google2019([empty], tmp_path / "s.h5")
    short = write_lines(tmp_path / "b" / "instance_usage.json", [record(t) for t in range(5)])
    result = runner.invoke(app, ["ingest", "google2019", str(short), "-o", str(tmp_path / "s.h5")])
    assert result.exit_code == 2
    assert "no task is left after the filters" in result.output and "short 1" in result.output
    assert not (tmp_path / "s.h5").exists()


def test_a_missing_usage_value_is_step_2_under_its_v3_name(tmp_path):
    """A record without average_usage (BigQuery's JSON export leaves out
    null fields) is dropped and counted by step 2, named by its v3 field."""
    recs = [record(t) for t in range(30)]
    del recs[3]["average_usage"]
    del recs[4]["random_sample_usage"]
    write_lines(tmp_path / "instance_usage.json", recs)
    report = ingest_google2019([tmp_path / "instance_usage.json"], tmp_path / "s.h5")
    step = report.step("missing")
    assert step["records_dropped"] == 2
    assert "average_usage.cpus or random_sample_usage.cpus" in step["what"]
