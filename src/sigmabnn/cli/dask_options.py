"""``--dask [ADDRESS]`` and ``--workers N``: run a command's tasks on a Dask cluster (shared by the commands).

Dask is imported only when ``--dask`` is given, so ``sigmabnn --help`` and the
commands without it never import it.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from sigmabnn.cli import common

LOCAL = "local"
"""``--dask`` without an address: a local cluster (same value as :data:`sigmabnn.distributed.cluster.LOCAL`)."""


def add_arguments(p: argparse.ArgumentParser, what: str) -> Any:
    """Add ``--dask [ADDRESS]`` (``what`` says what becomes a task) and ``--workers N``; returns their group."""
    g = p.add_argument_group("Dask cluster")
    g.add_argument(
        "--dask",
        nargs="?",
        const=LOCAL,
        metavar="ADDRESS",
        help=f"run {what} as tasks on a Dask cluster: the scheduler at ADDRESS (tcp://host:port), or without "
        "ADDRESS a local cluster of one worker process per core (put --dask last or write --dask=ADDRESS)",
    )
    g.add_argument(
        "--workers",
        type=common.positive_int,
        metavar="N",
        help="worker processes of the local cluster --dask starts (default: one per core)",
    )
    return g


@contextlib.contextmanager
def client_for(args: argparse.Namespace) -> Iterator[Any]:
    """The Dask client ``--dask`` asks for, or ``None`` without it (closed on exit)."""
    if args.dask is None:
        yield None
        return
    from sigmabnn.distributed.cluster import connect

    with connect(args.dask, args.workers) as client:
        yield client
