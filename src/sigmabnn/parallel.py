"""Chains on several devices: one CPU device per core, so independent chains use every core.

JAX runs a jitted computation on one device. On a CPU that device executes the
small, sequential operations of a sampler (leapfrog steps of a small network,
the NUTS tree logic) on one core at a time, so ``C`` vmapped chains leave the
other cores idle. XLA can present the host as several CPU devices
(``--xla_force_host_platform_device_count``); :func:`sigmabnn.mcmc.run.sample`
then splits the chains across them (``shard_map``), each device running its
chains' ``while_loop`` trees independently, with no synchronisation between
devices inside a chunk.

The device count is fixed when JAX initialises its backend, so it must be set
before the first JAX computation of the process: call
:func:`set_host_device_count` first thing, or set ``XLA_FLAGS`` yourself. It
pays when one gradient is too small to keep the cores busy (small data sets,
cheap targets); when XLA already spreads each gradient over the cores (the
8,399-row NLO fit) splitting gave no gain (``benchmarks/gradient_ceiling.py`` times
bare gradients both ways), so the command-line interface does not request devices.
Chains are split over ``gcd(C, devices)`` devices, so any number of chains works;
with one device nothing changes.

Draws do not depend on the split: chain ``c`` of iteration ``t`` uses key
``split(fold_in(run_key, t), C)[c]`` whichever device runs it.
"""

from __future__ import annotations

import math
import os
import re

__all__ = ["chain_mesh", "host_device_count", "set_host_device_count"]

_FLAG = "--xla_force_host_platform_device_count"
AXIS = "chains"
"""Name of the mesh axis the chains are split along."""


def set_host_device_count(count: int | None = None) -> int:
    """Ask XLA for ``count`` CPU devices (default: the number of usable cores), before JAX starts.

    Args:
        count: devices wanted (>= 1); ``None`` uses the cores this process may run on.

    Returns:
        The count now requested in ``XLA_FLAGS``: an explicit flag already in the environment is
        kept (the user's choice wins), and nothing changes once JAX's backend is initialised
        (then the current device count is returned).

    Raises:
        ValueError: if ``count < 1``.
    """
    if count is None:
        count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    count = int(count)
    if count < 1:
        raise ValueError(f"the host device count must be >= 1, got {count}")
    if _backend_initialised():
        return host_device_count()
    flags = os.environ.get("XLA_FLAGS", "")
    match = re.search(_FLAG + r"=(\d+)", flags)
    if match:
        return int(match.group(1))
    os.environ["XLA_FLAGS"] = f"{flags} {_FLAG}={count}".strip()
    return count


def _backend_initialised() -> bool:
    import sys

    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge._backends)
    except (ImportError, AttributeError):  # pragma: no cover - private API moved: assume started
        return True


def host_device_count() -> int:
    """Number of devices of JAX's default backend (initialises the backend)."""
    import jax

    return len(jax.local_devices())


def chain_mesh(num_chains: int):
    """The 1-d device mesh to split ``num_chains`` chains over, or ``None`` for a single device.

    Uses ``gcd(num_chains, devices)`` devices of the default backend, so every device gets the
    same number of chains.
    """
    import jax
    import numpy as np
    from jax.sharding import Mesh

    devices = jax.local_devices()
    n = math.gcd(int(num_chains), len(devices))
    if n <= 1:
        return None
    return Mesh(np.array(devices[:n]), (AXIS,))
