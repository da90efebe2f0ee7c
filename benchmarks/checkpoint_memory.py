"""Peak host memory of sampling with draws streamed to disk (a checkpoint) versus kept in memory.

A 10^5-parameter target (standard normal, random-walk MH, 2 chains, chunks of
10 iterations) is sampled for 100 and for 300 kept draws per chain with each
store. The peak of NumPy/Python allocations is measured with ``tracemalloc``
(XLA's own buffers are not included: they hold one chunk at most). Expected:
the in-memory store's peak grows with the number of draws (it holds all of
them), the on-disk store's peak stays at a few chunks.

Run: ``python benchmarks/checkpoint_memory.py`` (writes
``benchmarks/results/checkpoint_memory.json``; about a minute).
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
import tracemalloc
from pathlib import Path

import jax
import jax.numpy as jnp

from sigmabnn.io.checkpoint import Checkpoint
from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import RunConfig, sample

D, CHAINS, CHUNK = 100_000, 2, 10
RESULT = Path(__file__).parent / "results" / "checkpoint_memory.json"


def logdensity(x, hyper):
    return -0.5 * jnp.sum(x**2)


def run(store, num_samples: int) -> None:
    sample(
        jax.random.key(0), make_algorithm("mh"), logdensity, jnp.zeros((CHAINS, D)), None,
        RunConfig(num_warmup=0, num_samples=num_samples, chunk_size=CHUNK), progress=False, store=store,
    )  # fmt: skip


def peaks(directory: Path, num_samples: int) -> tuple[int, int]:
    """Peak traced bytes of one run with the on-disk store, then of one with the in-memory store."""
    tracemalloc.start()
    try:
        run(Checkpoint.create(directory, {}), num_samples)
        disk = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        run(None, num_samples)
        return disk, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    run(None, CHUNK)  # compile outside the measurements
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for num_samples in (100, 300):
            disk, memory = peaks(Path(tmp) / f"m{num_samples}", num_samples)
            rows.append(
                {
                    "draws_per_chain": num_samples,
                    "draws_bytes": CHAINS * num_samples * D * 8,
                    "chunk_bytes": CHAINS * CHUNK * D * 8,
                    "peak_bytes_on_disk_store": disk,
                    "peak_bytes_in_memory_store": memory,
                }
            )
    result = {
        "what": "tracemalloc peak of sample() with the on-disk Checkpoint store vs the in-memory store",
        "num_params": D,
        "chains": CHAINS,
        "chunk_size": CHUNK,
        "kernel": "mh",
        "rows": rows,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "loadavg": os.getloadavg(),
        "note": "machine shared with other jobs (see loadavg); memory peaks do not depend on load",
    }
    RESULT.parent.mkdir(exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
