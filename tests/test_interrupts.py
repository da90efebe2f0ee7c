"""A signal's interrupt survives its exception being swallowed: the runner raises it at the next chunk."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from sigmabnn import interrupts
from sigmabnn.mcmc.run import MemoryStore, sample


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
                lambda x, hyper: -0.5 * jnp.sum(x**2),
                jnp.zeros((2, 3)),
                kernel="mh",
                num_warmup=40,
                num_samples=40,
                chunk_size=10,
                progress=False,
                store=Store(),
            )
    finally:
        interrupts.clear()
    assert chunks == [0, 10]  # the start, then stopped right after the chunk during which the interrupt came
