"""A Dask client: to a running scheduler, or to a local cluster with one worker process per core.

A local cluster's workers are processes with one thread each (a fit holds the GIL
between XLA calls, so threads would not run fits side by side). Each worker is
pinned to its share of the cores before it first imports JAX: XLA sizes its CPU
thread pool by the cores a process may run on, so ``n`` workers on ``k`` cores do
not start ``n x k`` threads fighting for ``k`` cores. With one core per worker
XLA's multi-threaded Eigen is switched off too (``XLA_FLAGS``), as are the BLAS /
OpenMP pools.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from distributed import WorkerPlugin

__all__ = ["PinCores", "connect", "core_shares", "usable_cores", "worker_environment"]

LOCAL = "local"
"""The ``--dask`` value (no address given) that starts a local cluster."""


def usable_cores() -> list[int]:
    """The cores this process may run on (its affinity; all cores where affinity is unknown)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def core_shares(cores: list[int], workers: int) -> list[list[int]]:
    """Split ``cores`` into ``workers`` disjoint, equal shares (cores reused round-robin when too few).

    Raises:
        ValueError: ``workers < 1`` or no cores.
    """
    if workers < 1 or not cores:
        raise ValueError(f"need at least one worker and one core, got {workers} workers and {len(cores)} cores")
    share = max(1, len(cores) // workers)
    if share * workers <= len(cores):
        return [cores[i * share : (i + 1) * share] for i in range(workers)]
    return [[cores[i % len(cores)]] for i in range(workers)]


def worker_environment(cores_per_worker: int) -> dict[str, str]:
    """Environment of a local worker process: thread pools sized to its cores (XLA, OpenMP, BLAS)."""
    n = str(cores_per_worker)
    env = {"OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n, "MKL_NUM_THREADS": n}
    flags = os.environ.get("XLA_FLAGS", "")
    if cores_per_worker == 1 and "xla_cpu_multi_thread_eigen" not in flags:
        flags = f"{flags} --xla_cpu_multi_thread_eigen=false".strip()
    if flags:
        env["XLA_FLAGS"] = flags
    return env


class PinCores(WorkerPlugin):
    """Worker plugin: pin local worker ``i`` (its name) to ``shares[i]`` before any task runs.

    A restarted worker (its nanny starts a new process under the same name) is pinned again.
    """

    name = "sigmabnn-pin-cores"
    idempotent = True

    def __init__(self, shares: list[list[int]]) -> None:
        self.shares = shares

    def setup(self, worker: Any) -> None:
        if not hasattr(os, "sched_setaffinity"):  # pragma: no cover - not Linux
            return
        try:
            index = int(worker.name)
        except (TypeError, ValueError):
            return
        os.sched_setaffinity(0, self.shares[index % len(self.shares)])

    def teardown(self, worker: Any) -> None:  # the plugin protocol; nothing to undo
        return None


@contextlib.contextmanager
def connect(address: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """A ``dask.distributed.Client``, closed (with the cluster it started) on exit.

    Args:
        address: a scheduler address (``tcp://host:port``); ``None`` or ``"local"`` starts a
            ``LocalCluster`` of worker processes with one thread each.
        workers: worker processes of a local cluster (default: one per usable core); ignored
            with an address.

    Raises:
        ValueError: ``workers < 1``.
    """
    from dask.distributed import Client, LocalCluster

    if address is not None and address != LOCAL:
        with Client(address) as client:
            yield client
        return
    cores = usable_cores()
    count = len(cores) if workers is None else int(workers)
    shares = core_shares(cores, count)
    cluster = LocalCluster(
        n_workers=count,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        env=worker_environment(len(shares[0])),
    )
    try:
        with Client(cluster) as client:
            client.register_plugin(PinCores(shares))
            yield client
    finally:
        cluster.close()
