"""A real Dask cluster for the tests of this directory: a LocalCluster of 2 worker processes, 1 thread each."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def client():
    pytest.importorskip("distributed")
    from sigmabnn.distributed.cluster import connect

    with connect(None, workers=2) as c:
        c.wait_for_workers(2, timeout=120)
        yield c
