"""Chains split across devices: the device-count request, the mesh, and draws equal to one device's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from sigmabnn import parallel


def test_request_is_added_to_xla_flags(monkeypatch):
    monkeypatch.setattr(parallel, "_backend_initialised", lambda: False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert parallel.set_host_device_count(3) == 3
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=3"


def test_an_explicit_user_flag_wins(monkeypatch):
    monkeypatch.setattr(parallel, "_backend_initialised", lambda: False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=5")
    assert parallel.set_host_device_count(2) == 5
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=5"


def test_default_is_the_usable_cores(monkeypatch):
    monkeypatch.setattr(parallel, "_backend_initialised", lambda: False)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert parallel.set_host_device_count() == expected


def test_after_jax_started_nothing_changes(monkeypatch):
    import jax

    jax.local_devices()  # the backend is up
    monkeypatch.setenv("XLA_FLAGS", "")
    assert parallel.set_host_device_count(7) == len(jax.local_devices())
    assert os.environ["XLA_FLAGS"] == ""


def test_bad_count():
    with pytest.raises(ValueError, match=">= 1"):
        parallel.set_host_device_count(0)


_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from sigmabnn.parallel import set_host_device_count, chain_mesh
    set_host_device_count(2)
    import jax, jax.numpy as jnp, numpy as np
    from sigmabnn.mcmc.registry import make_algorithm
    from sigmabnn.mcmc.run import RunConfig, sample

    scales = jnp.linspace(0.5, 3.0, 6)
    logdensity = lambda x, h: -0.5 * jnp.sum((x / scales) ** 2)
    x0 = jax.random.normal(jax.random.key(1), (4, 6)) * scales
    runs = {}
    for split in (True, False):
        r = sample(jax.random.key(0), make_algorithm("nuts", initial_step_size=0.3), logdensity, x0, None,
                   RunConfig(num_warmup=0, num_samples=40, split_chains=split), progress=False)
        runs[split] = r
    a, b = (np.asarray(runs[s].positions) for s in (True, False))
    print(json.dumps({
        "devices": len(jax.local_devices()),
        "mesh4": None if chain_mesh(4) is None else int(chain_mesh(4).size),
        "mesh3": None if chain_mesh(3) is None else int(chain_mesh(3).size),
        "max_rel_diff": float(np.max(np.abs(a - b) / np.asarray(scales))),
        "steps_equal": bool(np.array_equal(np.asarray(runs[True].info.num_integration_steps),
                                            np.asarray(runs[False].info.num_integration_steps))),
        "chains_distinct": len({a[c, -1].tobytes() for c in range(4)}) == 4,
    }))
    """
)


@pytest.mark.heavy
def test_split_chains_give_the_draws_of_one_device():
    """Two CPU devices (a fresh process): the same trees and draws as one device, up to rounding."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["devices"] == 2 and res["mesh4"] == 2 and res["mesh3"] is None
    assert res["steps_equal"]
    assert res["max_rel_diff"] < 1e-10
    assert res["chains_distinct"]  # every chain its own key
