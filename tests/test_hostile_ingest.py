"""The ingest commands against a hostile user (SPEC §11): an output that is an
input, an existing output, folders and temporaries left behind, Ctrl-C, and
CSV headers that are not what they seem."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from colosim.cli import app
from colosim.errors import InputError
from colosim.io import open_series
from colosim.io.outputs import lock
from colosim.sources import google2011
from colosim.sources.google2011 import ingest_google2011
from colosim.sources.google2019 import ingest_google2019

from .test_ingest_google2011 import event_row, long_task, make_trace, usage_row, write_shard
from .test_ingest_google2019 import HEADER, task_rows, write_file

runner = CliRunner()


def _last_line(result) -> str:
    return result.output.strip().splitlines()[-1]


@pytest.fixture
def trace(tmp_path) -> Path:
    return make_trace(tmp_path / "trace", [event_row(1, 0, 0)], [long_task(1, 0, 30), long_task(2, 0, 30)])


@pytest.fixture
def usage_file(tmp_path) -> Path:
    return write_file(tmp_path / "in" / "t.csv", task_rows(1, 0, 30))


@pytest.fixture
def no_duckdb(monkeypatch):
    """Fail the test if DuckDB's database is made."""

    def refuse(*args, **kw):
        raise AssertionError("DuckDB started before the output was checked")

    monkeypatch.setattr(google2011, "_Database", refuse)


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _ingest(kind: str, source: Path, out: Path, **kw):
    if kind == "google2011":
        return ingest_google2011(source, out, threads=1, **kw)
    return ingest_google2019([source], out, **kw)


# ------------------------------------------------- 1. output is an input ---

@pytest.mark.parametrize("force", [False, True])
def test_2011_out_equal_to_a_shard_is_refused_before_duckdb(trace, no_duckdb, force):
    shard = trace / "task_usage" / "part-00000-of-00002.csv.gz"
    before = _snapshot(trace)
    args = ["ingest", "google2011", str(trace), "--out", str(shard)] + (["--force"] if force else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    message = _last_line(result)
    assert message.startswith("error: --out ") and "is the input" in message and str(shard) in message
    assert _snapshot(trace) == before


@pytest.mark.parametrize("how", ["events", "symlink", "hardlink", "folder"])
def test_2011_out_resolving_to_an_input_is_refused(trace, tmp_path, no_duckdb, how):
    events = trace / "task_events" / "part-00000-of-00001.csv.gz"
    if how == "events":
        out = events
    elif how == "folder":
        out = trace / "task_usage"
    else:
        out = tmp_path / "alias.h5"
        (os.symlink if how == "symlink" else os.link)(events, out)
    before = _snapshot(trace)
    with pytest.raises(InputError, match=r"^--out .*(is the input|is a directory)"):
        ingest_google2011(trace, out, threads=1, force=True)
    assert _snapshot(trace) == before


def test_2011_explicit_shard_options_are_inputs_too(trace, no_duckdb):
    shard = trace / "task_usage" / "part-00001-of-00002.csv.gz"
    before = shard.read_bytes()
    with pytest.raises(InputError, match="is the input"):
        ingest_google2011(None, shard, task_events=str(trace / "task_events"),
                          task_usage=str(trace / "task_usage" / "*.csv.gz"), force=True)
    assert shard.read_bytes() == before


@pytest.mark.parametrize("force", [False, True])
def test_2019_out_equal_to_the_input_file_or_folder_is_refused(usage_file, force):
    before = usage_file.read_bytes()
    for out in (usage_file, usage_file.parent):
        args = ["ingest", "google2019", str(out), "--out", str(out)] + (["--force"] if force else [])
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        message = _last_line(result)
        assert message.startswith("error: --out ") and "is the input" in message
    assert usage_file.read_bytes() == before
    assert sorted(p.name for p in usage_file.parent.iterdir()) == ["t.csv"]


# ---------------------------------------------------- existing outputs ---

@pytest.mark.parametrize("kind", ["google2011", "google2019"])
def test_existing_out_needs_force_and_force_replaces_only_a_series(kind, trace, usage_file, tmp_path):
    source = trace if kind == "google2011" else usage_file
    out = tmp_path / "s.h5"
    out.write_bytes(b"not a series")
    for args in ([], ["--force"]):
        result = runner.invoke(app, ["ingest", kind, str(source), "--out", str(out), *args])
        assert result.exit_code == 2, result.output
        assert _last_line(result).startswith(f"error: --out {out}: exists")
        assert out.read_bytes() == b"not a series"
    out.unlink()
    _ingest(kind, source, out)
    series_bytes = out.read_bytes()
    result = runner.invoke(app, ["ingest", kind, str(source), "--out", str(out)])
    assert result.exit_code == 2 and "--force" in _last_line(result)
    assert out.read_bytes() == series_bytes
    result = runner.invoke(app, ["ingest", kind, str(source), "--out", str(out), "--force"])
    assert result.exit_code == 0, result.output
    assert open_series(out).n_tasks >= 1


@pytest.mark.parametrize("kind", ["google2011", "google2019"])
def test_out_being_written_by_another_run_is_refused(kind, trace, usage_file, tmp_path):
    source = trace if kind == "google2011" else usage_file
    out = tmp_path / "s.h5"
    with lock(out):
        result = runner.invoke(app, ["ingest", kind, str(source), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "being written" in _last_line(result)
    assert not out.exists()


# --------------------------------------- 5. nothing made by a failed run ---

@pytest.mark.parametrize("kind", ["google2011", "google2019"])
def test_a_failed_ingest_leaves_no_output_folder(kind, tmp_path):
    if kind == "google2011":
        rows = long_task(1, 0, 30)
        rows[3] = rows[3][:-1]  # 19 columns
        source = make_trace(tmp_path / "trace", [event_row(1, 0, 0)], [rows])
    else:
        rows = task_rows(1, 0, 30)
        rows[2] = rows[2][:-1]  # line 4, after the header
        source = write_file(tmp_path / "in" / "t.csv", rows)
    out = tmp_path / "new" / "deeper" / "s.h5"
    result = runner.invoke(app, ["ingest", kind, str(source), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "line 4" in _last_line(result)
    assert not (tmp_path / "new").exists()


def test_2011_bad_options_are_checked_before_any_folder_or_duckdb(trace, tmp_path, no_duckdb):
    out = tmp_path / "new" / "s.h5"
    for args in (["--tmp-dir", str(tmp_path / "missing")], ["--tmp-dir", str(trace / "task_events" /
                                                                            "part-00000-of-00001.csv.gz")],
                 ["--memory-limit", "lots"], ["--threads", "0"], ["--min-records", "0"]):
        result = runner.invoke(app, ["ingest", "google2011", str(trace), "--out", str(out), *args])
        assert result.exit_code == 2, (args, result.output)
        assert _last_line(result).startswith("error: "), args
    assert not (tmp_path / "new").exists()
    with pytest.raises(InputError, match="--threads"):
        ingest_google2011(trace, out, threads="2")


def test_2011_an_unwritable_tmp_dir_is_an_input_error(trace, tmp_path, monkeypatch):
    tmp = tmp_path / "ro"
    tmp.mkdir()

    def mkdir(path, mode=0o777):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(os, "mkdir", mkdir)  # as in a folder without write permission (even for root)
    with pytest.raises(InputError, match=f"^--tmp-dir {tmp}: cannot make a temporary folder"):
        ingest_google2011(trace, tmp_path / "s.h5", threads=1, tmp_dir=tmp)
    monkeypatch.undo()
    assert list(tmp.iterdir()) == [] and not (tmp_path / "s.h5").exists()


def test_2019_one_path_not_in_a_list(usage_file, tmp_path):
    report = ingest_google2019(str(usage_file), tmp_path / "s.h5")
    assert report.counts["files"] == 1 and open_series(tmp_path / "s.h5").n_tasks == 1


# --------------------------------------------- 2. DuckDB's temp folder ---

def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_2011_duckdb_folder_is_named_for_removal_and_stale_ones_go(trace, tmp_path, monkeypatch):
    import duckdb

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead = tmp / f".colosim-ingest.{_dead_pid()}-0123abcd.colosim-tmp"
    (dead / "spill").mkdir(parents=True)
    (dead / "ingest.duckdb").write_bytes(b"x" * 100)
    other = tmp / f".other.{_dead_pid()}-0123abcd.colosim-tmp"  # another target's: not ours to remove
    other.write_bytes(b"")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        live = tmp / f".colosim-ingest.{sleeper.pid}-89abcdef.colosim-tmp"
        live.mkdir()
        seen = []
        connect = duckdb.connect

        def spy(database=":memory:", *args, **kw):
            if database != ":memory:":
                seen.append(Path(database))
                assert not dead.exists()  # removed before this run's folder is made
            return connect(database, *args, **kw)

        monkeypatch.setattr(duckdb, "connect", spy)
        ingest_google2011(trace, tmp_path / "s.h5", threads=1, tmp_dir=tmp)
        assert len(seen) == 1
        folder = seen[0].parent
        assert folder.parent == tmp
        assert folder.name.startswith(f".colosim-ingest.{os.getpid()}-") and folder.name.endswith(".colosim-tmp")
        assert sorted(p.name for p in tmp.iterdir()) == sorted([live.name, other.name])
    finally:
        sleeper.kill()
        sleeper.wait()


def test_2011_inputs_inside_a_stale_duckdb_folder_are_not_removed(tmp_path, no_duckdb):
    tmp = tmp_path / "tmp"
    stale = tmp / f".colosim-ingest.{_dead_pid()}-0123abcd.colosim-tmp"
    root = make_trace(stale / "trace", [event_row(1, 0, 0)], [long_task(1, 0, 30)])
    before = _snapshot(root)
    with pytest.raises(InputError, match="temporary folder of colosim ingest"):
        ingest_google2011(root, tmp_path / "s.h5", tmp_dir=tmp)
    with pytest.raises(InputError, match="temporary folder of colosim ingest"):
        ingest_google2011(make_trace(tmp_path / "t2", [event_row(1, 0, 0)], [long_task(1, 0, 30)]),
                          stale / "s.h5", tmp_dir=tmp)
    assert _snapshot(root) == before


def test_2011_duckdb_folder_removed_when_the_ingest_fails(tmp_path):
    rows = long_task(1, 0, 30)
    rows[5][7] = "x"
    root = make_trace(tmp_path / "trace", [event_row(1, 0, 0)], [rows])
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with pytest.raises(InputError, match="line 6"):
        ingest_google2011(root, tmp_path / "s.h5", threads=1, tmp_dir=tmp)
    assert list(tmp.iterdir()) == []


# ------------------------------------------------------------ 3. Ctrl-C ---

def _interrupt(exc):
    def raise_(*args, **kw):
        raise exc

    return raise_


@pytest.mark.parametrize("exc", ["duckdb", "runtime"])
def test_2011_duckdb_interrupt_is_a_keyboard_interrupt_exit_130(trace, tmp_path, monkeypatch, exc):
    import duckdb

    error = duckdb.InterruptException("INTERRUPT Error: Interrupted!") if exc == "duckdb" \
        else RuntimeError("Query interrupted")
    monkeypatch.setattr(google2011, "read_usage", _interrupt(error))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out" / "s.h5"
    with pytest.raises(KeyboardInterrupt):
        ingest_google2011(trace, out, threads=1, tmp_dir=tmp)
    result = runner.invoke(app, ["ingest", "google2011", str(trace), "--out", str(out), "--tmp-dir", str(tmp)])
    assert result.exit_code == 130, result.output
    assert list(tmp.iterdir()) == [] and not out.parent.exists()


def test_2011_interrupt_while_reading_shards_is_not_a_bad_file(trace, tmp_path, monkeypatch):
    import duckdb

    class Connection:
        def __init__(self, con):
            self._con = con

        def execute(self, sql, *args):
            if "read_csv" in sql:
                raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")
            return self._con.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self._con, name)

    class Database(google2011._Database):
        def __init__(self, *args):
            super().__init__(*args)
            self.con = Connection(self.con)

    monkeypatch.setattr(google2011, "_Database", Database)
    with pytest.raises(KeyboardInterrupt):
        ingest_google2011(trace, tmp_path / "s.h5", threads=1)


def test_2011_sigint_inside_a_duckdb_query_exits_130(trace, tmp_path, monkeypatch):
    """A real SIGINT while DuckDB runs a (slow) query: DuckDB 2.0 raises
    RuntimeError('Query interrupted') for it, the command still exits 130."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    real = google2011.apply_filters

    def slow_filters(db, *args):
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            db.con.execute("SELECT sum(a.range * b.range) FROM range(100000) a, range(200000) b").fetchone()
        finally:
            timer.cancel()
        return real(db, *args)

    monkeypatch.setattr(google2011, "apply_filters", slow_filters)
    out = tmp_path / "s.h5"
    result = runner.invoke(app, ["ingest", "google2011", str(trace), "--out", str(out), "--threads", "1",
                                 "--tmp-dir", str(tmp_path)])
    assert result.exit_code == 130, result.output
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# --------------------------------------------- 4. headers and the BOM ---

@pytest.mark.parametrize("column", ["time", "avg_cpu_usage", "machine_id", "max_cpu_usage"])
def test_2019_duplicated_header_column_names_file_and_column(tmp_path, column):
    header = HEADER + [column]
    rows = [r + ["1"] for r in task_rows(1, 0, 30)]
    f = write_file(tmp_path / "in" / "t.csv.gz", rows, header=header)
    out = tmp_path / "s.h5"
    result = runner.invoke(app, ["ingest", "google2019", str(f), "--out", str(out), "--on-bad-lines", "skip"])
    assert result.exit_code == 2, result.output
    message = _last_line(result)
    assert message.startswith(f"error: {f}: line 1: ") and repr(column) in message and "twice" in message
    assert not out.exists()


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz"])
def test_2019_a_utf8_bom_is_dropped(tmp_path, name):
    plain = write_file(tmp_path / "plain" / name, task_rows(1, 0, 30))
    data = plain.read_bytes()
    text = gzip.decompress(data) if name.endswith(".gz") else data
    bom = tmp_path / "bom" / name
    bom.parent.mkdir()
    bom.write_bytes(gzip.compress(b"\xef\xbb\xbf" + text) if name.endswith(".gz") else b"\xef\xbb\xbf" + text)
    ingest_google2019([plain], tmp_path / "a.h5")
    ingest_google2019([bom], tmp_path / "b.h5")
    a, b = open_series(tmp_path / "a.h5"), open_series(tmp_path / "b.h5")
    assert np.array_equal(a.task_id, b.task_id) and np.array_equal(a.inst, b.inst)
    assert np.array_equal(a.start_time, b.start_time)


def test_2019_a_bom_before_a_bad_header_is_not_reported_as_part_of_it(tmp_path):
    f = tmp_path / "t.csv"
    f.write_bytes(b"\xef\xbb\xbf" + ",".join(HEADER[1:]).encode() + b"\n")
    with pytest.raises(InputError) as info:
        ingest_google2019([f], tmp_path / "s.h5")
    assert str(info.value) == f"{f}: line 1: header lacks column(s) time"


def test_2011_a_bom_shard_reads_and_bad_lines_after_it_are_named(tmp_path):
    rows = long_task(1, 0, 30)
    shard = write_shard(tmp_path / "trace" / "task_usage" / "u.csv", rows)
    shard.write_bytes(b"\xef\xbb\xbf" + shard.read_bytes())
    write_shard(tmp_path / "trace" / "task_events" / "e.csv", [event_row(1, 0, 0)])
    report = ingest_google2011(tmp_path / "trace", tmp_path / "s.h5", threads=1)
    assert report.step("input")["records"] == 30
    lines = shard.read_bytes().split(b"\n")
    lines[4] = ",".join(usage_row(1, 0, 5, "x", 0.1)).encode()
    shard.write_bytes(b"\n".join(lines))
    with pytest.raises(InputError, match=r"u\.csv: line 5: column 6 is not a number"):
        ingest_google2011(tmp_path / "trace", tmp_path / "t.h5", threads=1)
