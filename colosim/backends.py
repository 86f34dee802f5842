"""Execution beyond this process: a Dask (``distributed``) backend.

Units of work (one instance each) are submitted to a Dask cluster; workers
open the store by path (a shared filesystem) and memory-map it. Each unit is
a pure function of the config, the store and the instance number, so the
rows are identical, byte for byte, to the local backend's.
"""

from __future__ import annotations

from pathlib import Path

from .errors import InputError

#: how long to wait for a remote scheduler before calling its address bad
CONNECT_TIMEOUT = "10s"


def run_dask(config, store_path: Path, todo: list[int], finish, scheduler: str | None = None,
             n_workers: int = 2) -> None:
    """Compute instances ``todo`` on a Dask cluster, calling ``finish(k,
    rows)`` as each completes (in completion order)."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:  # pragma: no cover - dask is a declared dependency
        raise InputError("the dask backend needs 'dask[distributed]' (pip install 'colosim[dask]')") from None
    from .sweep import compute_instance

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
                raise InputError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        with client:
            futures = {client.submit(compute_instance, config, str(store_path), k, pure=False): k for k in todo}
            for future in as_completed(futures):
                finish(futures[future], future.result())
    finally:
        if cluster is not None:
            cluster.close()
