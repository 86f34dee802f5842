"""Where a sweep's units of work run: this process, or a Dask cluster.

A unit of work is one instance: ``work(k)`` returns its results rows, a pure
function of the config, the store and k, so every backend gives the same
rows, byte for byte. ``finish(k, rows)`` is called as each unit completes,
in the caller's thread.
"""

from __future__ import annotations

import itertools
import re
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable

import numpy as np

from ..errors import InputError

BACKENDS = ("local", "dask")

#: how long to wait for a remote scheduler before calling its address bad
CONNECT_TIMEOUT = "10s"

Work = Callable[[int], list]
Finish = Callable[[int, list], None]


_ADDRESS = re.compile(r"^((tcp|tls|ws|wss|ucx)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?/?$")


def check_backend(backend: str, scheduler: str | None = None) -> None:
    """A known backend, and a scheduler address of the form
    ``[PROTOCOL://]HOST[:PORT]`` (only with the dask backend)."""
    if backend not in BACKENDS:
        raise InputError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}", param="backend")
    if scheduler is None:
        return
    if backend != "dask":
        raise InputError(f"scheduler {scheduler!r} is for the dask backend (pass --backend dask)", param="scheduler")
    m = _ADDRESS.match(scheduler)
    if m is None or (m.group(4) and not 0 < int(m.group(4)[1:]) < 65536):
        raise InputError(f"scheduler {scheduler!r} is not an address PROTOCOL://HOST:PORT (e.g. tcp://host:8786)",
                         param="scheduler")


def run(backend: str, work: Work, todo: list[int], finish: Finish, *, scheduler: str | None = None,
        workers: int = 2) -> None:
    """Compute ``work(k)`` for every k of ``todo`` on ``backend``."""
    check_backend(backend, scheduler)
    if backend == "local":
        run_local(work, todo, finish)
    else:
        run_dask(work, todo, finish, scheduler, n_workers=workers)


def _overlap_safe() -> bool:
    """Whether two instances may run their parallel kernels at once: Numba's
    OpenMP and TBB threading layers allow it, its fallback layer does not."""
    import numba

    from ..kernels.stats import row_means

    if numba.get_num_threads() < 2:
        return False  # one thread was asked for: keep to one
    row_means(np.zeros((2, 2), dtype=np.float32))  # starts the threading layer
    try:
        return numba.threading_layer() in ("omp", "tbb")
    except ValueError:
        return False


def run_local(work: Work, todo: list[int], finish: Finish) -> None:
    """Units in this process. Where the threading layer allows it, two units
    are computed at once, each on half of Numba's threads (one each on two):
    a unit's serial steps (deduplication, result rows, checkpoint) then
    overlap the other's kernels, and no parallel region waits on a thread
    the other unit holds. Whichever unit completes first is finished first
    and its worker takes the next unit at once. A unit or a ``finish`` that
    raises (an interrupt, say) stops the queue: the units in flight are
    still finished as they complete, then the first error is raised (with
    any later one noted on it). Each unit's results do not depend on it (nor
    on the thread count)."""
    if len(todo) < 2 or not _overlap_safe():
        for k in todo:
            finish(k, work(k))
        return
    import numba

    half = max(1, numba.get_num_threads() // 2)

    def on_half(k):
        numba.set_num_threads(half)  # this worker thread's own setting
        return work(k)

    with ThreadPoolExecutor(max_workers=2) as pool:
        rest = iter(todo)
        running = {pool.submit(on_half, k): k for k in itertools.islice(rest, 2)}
        errors: list[BaseException] = []
        try:
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                ordered = sorted(done, key=running.get)
                # a unit that raised: no new unit; the one in flight is still finished
                errors += [f.exception() for f in ordered if f.exception() is not None]
                for future in ordered:
                    k = running.pop(future)
                    if future.exception() is not None:
                        continue
                    nxt = None if errors else next(rest, None)
                    if nxt is not None:
                        running[pool.submit(on_half, nxt)] = nxt
                    try:
                        finish(k, future.result())
                    except BaseException as exc:  # as a unit's error (an interrupt included)
                        errors.append(exc)
        finally:
            for future in running:
                future.cancel()
        if errors:
            for later in errors[1:]:
                if not isinstance(later, KeyboardInterrupt) and hasattr(errors[0], "add_note"):  # Python >= 3.11
                    errors[0].add_note(f"(another unit also failed: {later!r})")
            raise errors[0]


def run_dask(work: Work, todo: list[int], finish: Finish, scheduler: str | None = None,
             n_workers: int = 2) -> None:
    """Units on a Dask cluster (``scheduler``'s address, or a local cluster of
    ``n_workers`` single-threaded processes); ``work`` must be picklable, and
    open what it reads by path (a shared filesystem)."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:  # pragma: no cover - dask is a declared dependency
        raise InputError("the dask backend needs 'dask[distributed]' (pip install 'colosim[dask]')") from None
    cluster = None
    try:
        if scheduler is None:
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
        else:
            try:
                client = Client(scheduler, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError) as exc:
                raise InputError(f"scheduler {scheduler}: cannot connect ({exc})", param="scheduler") from None
        with client:
            futures = {client.submit(work, k, pure=False): k for k in todo}
            for future in as_completed(futures):
                finish(futures[future], future.result())
    finally:
        if cluster is not None:
            cluster.close()
