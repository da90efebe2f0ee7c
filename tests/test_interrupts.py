"""A signal's interrupt survives its exception being swallowed: the runner raises it at the next chunk."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from sigmabnn import interrupts
from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import MemoryStore, RunConfig, sample


class _Stop(KeyboardInterrupt):
    pass


def test_request_raise_and_clear():
    interrupts.raise_if_pending()  # nothing pending: no effect
    interrupts.request(_Stop)
    assert interrupts.pending() is _Stop
    with pytest.raises(_Stop):
        interrupts.raise_if_pending()
    assert interrupts.pending() is None
    interrupts.request()
    interrupts.clear()
    interrupts.raise_if_pending()


def test_runner_raises_a_pending_interrupt_after_the_chunk_that_saw_it():
    chunks = []

    class Store(MemoryStore):
        """A run store whose commit after the first chunk plays a signal handler whose exception was swallowed."""

        def commit(self, iteration, state):
            chunks.append(iteration)
            if iteration == 10:
                interrupts.request(_Stop)

    try:
        with pytest.raises(_Stop):
            sample(
                jax.random.key(0),
                make_algorithm("mh"),
                lambda x, hyper: -0.5 * jnp.sum(x**2),
                jnp.zeros((2, 3)),
                None,
                RunConfig(num_warmup=40, num_samples=40, chunk_size=10),
                progress=False,
                store=Store(),
            )
    finally:
        interrupts.clear()
    assert chunks == [0, 10]  # the start, then stopped right after the chunk during which the interrupt came


def _linear_problem():
    import numpy as np

    from sigmabnn.model import BNN, Data, Gaussian, parse_architecture

    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 2))
    bnn = BNN(parse_architecture("2-1"), likelihood=Gaussian(4.0, False))
    return bnn, Data(jnp.asarray(x), jnp.asarray(x @ np.array([[1.0], [-0.5]])))


def test_map_pretraining_and_vi_raise_a_pending_interrupt_after_their_first_chunk():
    from sigmabnn.map import MAPConfig, pretrain_map
    from sigmabnn.vi.fit import VIConfig, fit_vi

    bnn, data = _linear_problem()
    key = jax.random.key(1)
    try:
        interrupts.request(_Stop)
        with pytest.raises(_Stop):
            pretrain_map(key, bnn, data, bnn.default_hyperparameters(), MAPConfig(num_steps=400, eval_every=50))
        assert interrupts.pending() is None
        # without a pending request the same fit runs to the end
        pretrain_map(key, bnn, data, bnn.default_hyperparameters(), MAPConfig(num_steps=400, eval_every=50))
        interrupts.request(_Stop)
        with pytest.raises(_Stop):
            fit_vi(key, bnn, data, VIConfig(num_steps=400, chunk_size=50, map=None), progress=False)
    finally:
        interrupts.clear()
