"""The local backend's two units in flight."""

import sys
import threading

import pytest

from colosim.runner import backends


def test_local_backend_refills_whichever_worker_finishes_first(monkeypatch):
    # unit 0 is held until units 1-3 are finished: the other worker must go
    # on with the queue meanwhile rather than wait for unit 0's result
    monkeypatch.setattr(backends, "_overlap_safe", lambda: True)
    released = threading.Event()
    finished = []

    def work(k):
        if k == 0:
            assert released.wait(timeout=20), "unit 0 was waited for before the later units were finished"
        return [k * 10]

    def finish(k, rows):
        finished.append((k, rows))
        if len(finished) == 3:
            released.set()

    backends.run_local(work, [0, 1, 2, 3], finish)
    assert finished == [(1, [10]), (2, [20]), (3, [30]), (0, [0])]


def test_local_backend_finishes_every_unit_once_in_order_when_serial(monkeypatch):
    monkeypatch.setattr(backends, "_overlap_safe", lambda: False)
    finished = []
    backends.run_local(lambda k: [k], [3, 1, 2], lambda k, rows: finished.append((k, rows)))
    assert finished == [(3, [3]), (1, [1]), (2, [2])]


class _Pool(backends.ThreadPoolExecutor):
    """The pool, with a callback run once a unit's future is complete (its
    result or error recorded): tests order units by it, not by timing."""

    done_hooks: dict = {}

    def submit(self, fn, *args):
        future = super().submit(fn, *args)
        if args and args[0] in self.done_hooks:
            future.add_done_callback(self.done_hooks[args[0]])
        return future


def test_local_backend_finishes_the_unit_in_flight_then_raises_a_units_error(monkeypatch):
    # unit 1 fails while unit 0 still runs (unit 0 returns only once unit
    # 1's failure is recorded): no later unit starts, unit 0 is finished,
    # and then unit 1's error is raised
    monkeypatch.setattr(backends, "_overlap_safe", lambda: True)
    failed = threading.Event()
    monkeypatch.setattr(_Pool, "done_hooks", {1: lambda _: failed.set()})
    monkeypatch.setattr(backends, "ThreadPoolExecutor", _Pool)
    started, finished = [], []

    def work(k):
        started.append(k)
        if k == 1:
            raise ValueError("unit 1")
        assert failed.wait(timeout=20)
        return [k]

    with pytest.raises(ValueError, match="unit 1"):
        backends.run_local(work, [0, 1, 2, 3], lambda k, rows: finished.append((k, rows)))
    assert sorted(started) == [0, 1] and finished == [(0, [0])]


def test_local_backend_finishes_the_units_in_flight_when_finish_raises(monkeypatch):
    # finishing unit 0 raises (an interrupt): the unit in flight beside it
    # is still finished, nothing after it starts, and the interrupt is raised
    monkeypatch.setattr(backends, "_overlap_safe", lambda: True)
    first_done = threading.Event()
    finished = []

    def work(k):
        if k == 1:
            assert first_done.wait(timeout=20)
        return [k]

    def finish(k, rows):
        finished.append(k)
        if k == 0:
            first_done.set()
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        backends.run_local(work, [0, 1, 2, 3, 4], finish)
    # unit 2 was submitted before unit 0's finish raised; it is finished too
    assert finished[:1] == [0] and sorted(finished) == [0, 1, 2]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes are Python 3.11's")
def test_local_backend_notes_a_second_units_error_on_the_first(monkeypatch):
    monkeypatch.setattr(backends, "_overlap_safe", lambda: True)
    both = threading.Barrier(2, timeout=20)

    def work(k):
        both.wait()  # both units are running before either fails
        raise ValueError(f"unit {k}")

    with pytest.raises(ValueError) as info:
        backends.run_local(work, [0, 1, 2], lambda k, rows: None)
    assert any("another unit also failed" in note for note in getattr(info.value, "__notes__", []))
