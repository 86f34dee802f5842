"""`colosim info` and `colosim plot` against hostile input: provenance is
data, never a path to open; escape sequences are escaped; damaged files are
input errors naming the file; plot checks rows as the sweep does, refuses a
point twice, and claims every figure file before drawing anything."""

import contextlib
import hashlib
import json
import os
import signal
from pathlib import Path

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from colosim.cli import app
from colosim.errors import InputError, printable
from colosim.figures.results import plot_file
from colosim.info import describe
from colosim.io import StoreWriter
from colosim.io._hdf5 import create_contiguous
from colosim.io.results import COLUMNS, csv_text, read_results
from colosim.model.grid import check_row
from colosim.sources.resolve import generate_synthetic_store

runner = CliRunner()
FIG9 = ("fig09_gpa_relative_error.png", "fig09_gpa_relative_error.svg")


@contextlib.contextmanager
def deadline(seconds=20):
    """Fail, rather than hang, when the block blocks (an open FIFO)."""

    def expired(signum, frame):
        raise TimeoutError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def store_with_source(path, source):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 0.2, size=(3, 5)).astype(np.float32)
    with StoreWriter(path, n_tasks=3, n_realizations=5, seed=1, sampling="independent", source=source,
                     task_id=np.stack([np.arange(3), np.zeros(3, int)], 1)) as w:
        w.write_rows(0, x, x)
    return path


def text_of(lines, problems=()):
    return "\n".join([*lines, *problems])


# ------------------------------------------------------------ 1. provenance


def test_info_never_opens_the_recorded_source_unless_asked(tmp_path):
    series = tmp_path / "series.h5"
    series.write_bytes(b"the source bytes")
    digest = hashlib.sha256(b"the source bytes").hexdigest()
    store = store_with_source(tmp_path / "s.h5", {"series": str(series), "sha256": digest})
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    hostile = store_with_source(tmp_path / "h.h5", {"series": str(fifo), "sha256": "0" * 64})
    with deadline():  # opening the FIFO would block
        lines, problems = describe(hostile, verify=True)
    text = text_of(lines, problems)
    assert problems == [] and "0" * 64 in text and "not compared" in text and "--check-source" in text
    lines, problems = describe(store, verify=True)
    text = text_of(lines, problems)
    assert digest in text and "not compared" in text and "matches" not in text and "DIFFERS" not in text


def test_info_check_source_compares_a_regular_file(tmp_path):
    series = tmp_path / "series.h5"
    series.write_bytes(b"the source bytes")
    digest = hashlib.sha256(b"the source bytes").hexdigest()
    store = store_with_source(tmp_path / "s.h5", {"series": str(series), "sha256": digest})
    lines, problems = describe(store, verify=False, check_source=True)
    assert problems == [] and any("matches" in line for line in lines)
    series.write_bytes(b"changed")
    lines, problems = describe(store, verify=True, check_source=True)
    assert any("DIFFERS" in line for line in lines) and "SHA-256 differs" in problems[0]
    series.unlink()
    lines, problems = describe(store, check_source=True)
    assert problems == [] and any("not here to compare" in line for line in lines)


@pytest.mark.parametrize("kind", ["fifo", "directory", "device", "link to a device", "not a path"])
def test_info_check_source_opens_only_a_regular_file(tmp_path, kind):
    target = {"fifo": tmp_path / "fifo", "directory": tmp_path, "device": Path("/dev/zero"),
              "link to a device": tmp_path / "zero", "not a path": ["a", "list"]}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    if kind == "link to a device":
        target.symlink_to("/dev/zero")
    source = {"series": target if isinstance(target, list) else str(target), "sha256": "ab" * 32}
    store = store_with_source(tmp_path / "s.h5", source)
    with deadline():
        lines, problems = describe(store, check_source=True)
    text = text_of(lines, problems)
    assert problems == [] and "not compared" in text and "matches" not in text


# ------------------------------------------------------- 2. escape sequences


def test_printable_escapes_control_characters():
    assert printable("plain é … text") == "plain é … text"
    assert printable("a\x1b[2Jb\x07c\nd\u2028e\x9b") == "a\\x1b[2Jb\\x07c\\nd\\u2028e\\x9b"


def test_info_escapes_attributes_of_a_store(tmp_path):
    store = store_with_source(tmp_path / "s.h5", {"kind": "test"})
    with h5py.File(store, "r+") as f:
        f.attrs["sampling"] = "\x1b]0;owned\x07\x1b[2J"
        f.attrs["colosim_version"] = "9\r\x1b[31m"
    lines, problems = describe(store)
    text = text_of(lines, problems)
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "\\x1b]0;owned\\x07\\x1b[2J" in text and "9\\r\\x1b[31m" in text
    res = runner.invoke(app, ["info", str(store)])
    assert res.exit_code == 0 and "\x1b" not in res.output


def results_csv(path, rows=None, extra_header="", extra_value=""):
    rows = rows if rows is not None else [row(0), row(1)]
    text = csv_text([tuple(r[c] for c in COLUMNS) for r in rows])
    if extra_header:
        lines = text.splitlines()
        text = "\n".join([lines[0] + "," + extra_header] + [line + "," + extra_value for line in lines[1:]]) + "\n"
    Path(path).write_text(text)
    return Path(path)


def row(instance, estimator="gpa:0.01", q=0.004, **grid):
    keys = dict(algorithm="best-fit", capacity=1.0, clairvoyance=1.0, data="inst", rebalance=True, headroom=1.0,
                fit_rule="cpu", memory_capacity=None, memory_estimator="max")
    keys.update(grid)
    return dict(instance=instance, estimator=estimator, **keys, m_abs=30, m_norm=28, m=30 / 28, q=q,
                q_max=2 * q, severity=0.01, oversize=0, q_ci_low=0.5 * q, q_ci_high=1.5 * q, realizations=100,
                evaluated=100, calibrated_rho=None, m_abs_by_type=(), q_by_type=(), q_memory=None, q_memory_max=None,
                memory_bound=None)


def test_info_escapes_sidecar_values_and_error_messages(tmp_path):
    results = results_csv(tmp_path / "r.csv")
    (tmp_path / "r.csv.json").write_text(json.dumps(
        {"format": "colosim-results", "config": "\x1b[31mred.toml", "store": "s\x1b[2J.h5",
         "store_attrs": ["not", "a", "dict"], "rows": 2}))
    lines, problems = describe(results)
    text = text_of(lines, problems)
    assert problems == [] and "\x1b" not in text and "\\x1b[31mred.toml" in text and "s\\x1b[2J.h5" in text
    bad = results_csv(tmp_path / "bad.csv", extra_header="\x1b[2Jevil", extra_value="1")
    with pytest.raises(InputError) as err:
        describe(bad)
    assert "bad.csv" in str(err.value) and "\x1b" not in str(err.value) and "\\x1b[2Jevil" in str(err.value)


# ---------------------------------------------------------- 3. damaged files


def test_info_on_truncated_hdf5_and_a_directory_names_the_file(tmp_path):
    store = tmp_path / "s.h5"
    generate_synthetic_store(store, n_tasks=4, n_realizations=8, seed=1)
    data = store.read_bytes()
    for n in (64, len(data) // 2, len(data) - 16):
        cut = tmp_path / f"cut{n}.h5"
        cut.write_bytes(data[:n])
        with pytest.raises(InputError, match=f"cut{n}.h5"):
            describe(cut)
    with pytest.raises(InputError, match="is a directory"):
        describe(tmp_path)
    res = runner.invoke(app, ["info", str(tmp_path)])
    assert res.exit_code == 2 and res.output.startswith("error: ") and str(tmp_path) in res.output


def test_info_refuses_a_fifo_or_device_without_hanging(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with deadline():
        for path in (fifo, Path("/dev/zero")):
            with pytest.raises(InputError, match="not a regular file"):
                describe(path)


def empty_store(path, n, R):
    with h5py.File(path, "w") as f:
        f.attrs.update({"format": "colosim-store", "format_version": 1, "seed": "1", "sampling": "independent",
                        "source": "{}", "colosim_version": "0", "numpy_version": "0"})
        create_contiguous(f, "x", (n, R), np.float32)
        create_contiguous(f, "y", (n, R), np.float32)
        f["task_id"] = np.zeros((n, 2), dtype=np.int64)
    return path


@pytest.mark.parametrize("n, R", [(3, 0), (0, 4), (0, 0)])
def test_info_on_a_store_without_tasks_or_realizations(tmp_path, n, R):
    store = empty_store(tmp_path / "e.h5", n, R)
    for verify in (True, False):
        with pytest.raises(InputError, match="e.h5: a store needs at least one task and one realization"):
            describe(store, verify)


@pytest.mark.parametrize("content", ["[]", "3", '"x"', "null", "{not json", '{"format": "other"}'])
def test_a_sidecar_that_is_not_a_colosim_object(tmp_path, content):
    results = results_csv(tmp_path / "r.csv")
    (tmp_path / "r.csv.json").write_text(content)
    lines, problems = describe(results)
    assert len(problems) == 1 and "r.csv.json" in problems[0]
    with pytest.raises(InputError, match="r.csv.json"):
        plot_file(results, tmp_path / "figs", figures=[9])
    assert not (tmp_path / "figs").exists()


def test_a_sidecar_that_is_a_fifo_or_directory(tmp_path):
    results = results_csv(tmp_path / "r.csv")
    os.mkfifo(tmp_path / "r.csv.json")
    with deadline():
        _, problems = describe(results)
        assert "not a regular file" in problems[0]
        with pytest.raises(InputError, match="r.csv.json"):
            plot_file(results, tmp_path / "figs", figures=[9])
    (tmp_path / "r.csv.json").unlink()
    (tmp_path / "r.csv.json").mkdir()
    _, problems = describe(results)
    assert "r.csv.json" in problems[0]


# ----------------------------------------------------- 4. rows checked by plot


def test_plot_checks_rows_as_the_sweep_does(tmp_path):
    cases = {
        "clair.csv": (results_csv(tmp_path / "clair.csv", [row(0), row(1, clairvoyance=7.0)]), "line 3"),
        "extra.csv": (results_csv(tmp_path / "extra.csv", extra_header="bogus", extra_value="1"), "bogus"),
        "alg.csv": (results_csv(tmp_path / "alg.csv", [row(0, algorithm="worst-fit")]), "line 2"),
    }
    for name, (path, where) in cases.items():
        with pytest.raises(InputError) as err:
            plot_file(path, tmp_path / "figs", figures=[9])
        assert name in str(err.value) and where in str(err.value)
    assert not (tmp_path / "figs").exists()


def test_plot_refuses_a_point_twice(tmp_path):
    # gpa:0.010 is gpa:0.01 once canonical
    path = results_csv(tmp_path / "dup.csv", [row(0), row(1), row(0, "gpa:0.010", q=0.02)])
    with pytest.raises(InputError, match=r"dup.csv: line 4: instance 0 .*line 2"):
        plot_file(path, tmp_path / "figs", figures=[9])
    assert not (tmp_path / "figs").exists()
    try:  # refused by the reader, or reported by info's own check
        _, problems = describe(path)
    except InputError as exc:
        problems = [str(exc)]
    assert any("dup.csv: line 4" in p and "line 2" in p for p in problems)
    # the same instance at another grid point is no duplicate
    path = results_csv(tmp_path / "ok.csv", [row(0), row(0, clairvoyance=0.5), row(1)])
    assert len(read_results(path, check_point=check_row)) == 3


# ---------------------------------------------------------- 5. output guard


def test_plot_claims_every_figure_before_drawing(tmp_path):
    results = results_csv(tmp_path / "r.csv")
    out = tmp_path / "figs"
    written, _ = plot_file(results, out, figures=[9])
    assert sorted(p.name for p in out.iterdir()) == sorted(FIG9)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(InputError, match=f"{FIG9[0]}: exists; pass --force"):
        plot_file(results, out, figures=[9])
    (out / FIG9[1]).unlink()  # one figure file missing: still nothing written
    with pytest.raises(InputError, match=FIG9[0]):
        plot_file(results, out, figures=[9])
    assert sorted(p.name for p in out.iterdir()) == [FIG9[0]]
    assert (out / FIG9[0]).read_bytes() == before[FIG9[0]]
    plot_file(results, out, figures=[9], force=True)
    assert sorted(p.name for p in out.iterdir()) == sorted(FIG9)


def test_plot_force_replaces_only_images_of_the_kind(tmp_path):
    results = results_csv(tmp_path / "r.csv")
    out = tmp_path / "figs"
    out.mkdir()
    (out / FIG9[1]).write_text("my notes\n")
    with pytest.raises(InputError, match="not a SVG image"):
        plot_file(results, out, figures=[9], force=True)
    assert [p.name for p in out.iterdir()] == [FIG9[1]] and (out / FIG9[1]).read_text() == "my notes\n"


def test_plot_never_writes_over_its_input(tmp_path):
    out = tmp_path / "figs"
    out.mkdir()
    # the results table named as a figure file in --out
    results = results_csv(out / FIG9[0])
    with pytest.raises(InputError, match="input"):
        plot_file(results, out, figures=[9], force=True)
    assert sorted(p.name for p in out.iterdir()) == [FIG9[0]]
    # a figure file that is a link to the input
    other = tmp_path / "figs2"
    other.mkdir()
    (other / FIG9[1]).symlink_to(results)
    with pytest.raises(InputError, match="input"):
        plot_file(results, other, figures=[9], force=True)
    assert results.read_text().startswith("instance,")
    # --out the results file itself
    with pytest.raises(InputError, match="not a directory|input"):
        plot_file(results, results, figures=[9])
