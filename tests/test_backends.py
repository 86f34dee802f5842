"""The local backend's two units in flight."""

import threading

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


def test_local_backend_finishes_the_unit_in_flight_then_raises_a_units_error(monkeypatch):
    # unit 1 fails while unit 0 still runs: no later unit starts, unit 0 is
    # finished, and then unit 1's error is raised
    monkeypatch.setattr(backends, "_overlap_safe", lambda: True)
    failed = threading.Event()
    started, finished = [], []

    def work(k):
        started.append(k)
        if k == 1:
            failed.set()
            raise ValueError("unit 1")
        assert failed.wait(timeout=20)
        return [k]

    try:
        backends.run_local(work, [0, 1, 2, 3], lambda k, rows: finished.append((k, rows)))
    except ValueError as exc:
        assert str(exc) == "unit 1"
    else:
        raise AssertionError("unit 1's error was not raised")
    assert sorted(started) == [0, 1] and finished == [(0, [0])]
