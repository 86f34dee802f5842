"""Realization (SPEC §8): the threaded, streamed writer gives the bytes of the
naive recipe, whatever the thread count and block size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from colosim.cli import app
from colosim.errors import InputError
from colosim.io import open_series, open_store, write_series
from colosim.sources.realize import realize

from . import naive

runner = CliRunner()


def make_series(path, lengths, seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    write_series(
        path,
        task_id=np.stack([np.arange(len(lengths)) * 7 + 3, np.arange(len(lengths)) % 5], axis=1),
        offsets=offsets,
        inst=rng.random(n, dtype=np.float32),
        avg=rng.random(n, dtype=np.float32) * 0.5,
        start_time=np.arange(n) * 300,
        source={"test": True},
        filters={},
    )
    return open_series(path)


@pytest.fixture
def series(tmp_path):
    return make_series(tmp_path / "series.h5", [1, 2, 3, 30, 7, 100, 1, 12, 5, 40, 2, 9])


@pytest.mark.parametrize("sampling", ["independent", "paired"])
@pytest.mark.parametrize("threads, block_rows", [(1, None), (2, 1), (3, 4), (4, 5)])
def test_bytes_equal_the_naive_recipe(series, tmp_path, sampling, threads, block_rows):
    out = tmp_path / "store.h5"
    realize(series, out, n_tasks=10, n_realizations=257, seed=11, sampling=sampling,
            threads=threads, block_rows=block_rows)
    x, y, task_id = naive.store(series, 10, 257, 11, sampling)
    with open_store(out) as store:
        assert store.x.tobytes() == x.tobytes()
        assert store.y.tobytes() == y.tobytes()
        assert np.array_equal(store.task_id, task_id)
        assert store.attrs["sampling"] == sampling and store.seed == 11


def test_paired_draws_share_the_record(tmp_path):
    # avg = 2 * inst, so paired draws keep the ratio and independent ones do not
    inst = np.linspace(0.01, 0.5, 50, dtype=np.float32)
    write_series(tmp_path / "s.h5", task_id=[[1, 0]], offsets=[0, 50], inst=inst, avg=2 * inst,
                 start_time=np.arange(50), source={}, filters={})
    series = open_series(tmp_path / "s.h5")
    for sampling, expect in (("paired", True), ("independent", False)):
        realize(series, tmp_path / f"{sampling}.h5", n_tasks=1, n_realizations=100, seed=1, sampling=sampling)
        with open_store(tmp_path / f"{sampling}.h5") as store:
            assert np.array_equal(store.y[0], 2 * store.x[0]) is expect


@settings(max_examples=20)
@given(
    lengths=st.lists(st.integers(1, 40), min_size=1, max_size=12),
    data=st.data(),
    seed=st.integers(0, 2**32),
    threads=st.integers(1, 3),
)
def test_any_series_any_threads_matches_naive(tmp_path_factory, lengths, data, seed, threads):
    folder = tmp_path_factory.mktemp("r")
    series = make_series(folder / "s.h5", lengths, seed=seed % 7)
    n_tasks = data.draw(st.integers(1, len(lengths)))
    n_realizations = data.draw(st.integers(1, 50))
    sampling = data.draw(st.sampled_from(["independent", "paired"]))
    realize(series, folder / "st.h5", n_tasks=n_tasks, n_realizations=n_realizations, seed=seed,
            sampling=sampling, threads=threads, block_rows=data.draw(st.integers(1, 5)))
    x, y, _ = naive.store(series, n_tasks, n_realizations, seed, sampling)
    with open_store(folder / "st.h5") as store:
        assert store.x.tobytes() == x.tobytes() and store.y.tobytes() == y.tobytes()


def test_bad_arguments_leave_no_store(series, tmp_path):
    out = tmp_path / "store.h5"
    out.write_bytes(b"older store")
    for kw in (dict(n_tasks=13), dict(n_tasks=0), dict(n_realizations=0), dict(sampling="both"), dict(threads=0)):
        args = dict(n_tasks=3, n_realizations=5, seed=1) | kw
        with pytest.raises(InputError):
            realize(series, out, **args)
    assert out.read_bytes() == b"older store"


def test_cli_realize(series, tmp_path):
    out = tmp_path / "store.h5"
    result = runner.invoke(app, ["realize", str(series.path), "--out", str(out), "--tasks", "4",
                                 "--realizations", "64", "--seed", "3", "--sampling", "paired", "--threads", "2"])
    assert result.exit_code == 0, result.output
    x, y, _ = naive.store(series, 4, 64, 3, "paired")
    with open_store(out) as store:
        assert np.array_equal(store.x, x) and np.array_equal(store.y, y)
        assert store.attrs["source"]["sha256"]
    result = runner.invoke(app, ["realize", str(series.path), "--out", str(out), "--tasks", "99",
                                 "--realizations", "64", "--seed", "3", "--force"])
    assert result.exit_code == 2
    assert "--tasks 99" in result.output
    with open_store(out) as store:
        assert np.array_equal(store.x, x)
    result = runner.invoke(app, ["realize", str(tmp_path / "missing.h5"), "--out", str(out), "--tasks", "1",
                                 "--realizations", "1", "--seed", "3"])
    assert result.exit_code == 2 and "missing.h5" in result.output


def test_in_memory_source_gives_the_same_bytes(series, tmp_path):
    from colosim.io import Series

    plain = Series(None, np.asarray(series.task_id), np.asarray(series.offsets), np.array(series.inst),
                   np.array(series.avg), np.array(series.start_time))
    realize(series, tmp_path / "a.h5", n_tasks=12, n_realizations=33, seed=4, threads=2, block_rows=3)
    realize(plain, tmp_path / "b.h5", n_tasks=12, n_realizations=33, seed=4, threads=1)
    with open_store(tmp_path / "a.h5") as a, open_store(tmp_path / "b.h5") as b:
        assert a.x.tobytes() == b.x.tobytes() and a.y.tobytes() == b.y.tobytes()


def test_a_source_with_tasks_only_is_realized(series, tmp_path):
    class TasksOnly:  # no reader(), no time_range(): enough for independent sampling
        n_tasks = series.n_tasks
        task_id = series.task_id

        def task(self, k):
            return series.task(k)

    realize(TasksOnly(), tmp_path / "t.h5", n_tasks=5, n_realizations=17, seed=2)
    x, y, _ = naive.store(series, 5, 17, 2, "independent")
    with open_store(tmp_path / "t.h5") as store:
        assert store.x.tobytes() == x.tobytes() and store.y.tobytes() == y.tobytes()
