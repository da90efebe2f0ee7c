"""A run in blocks of chains (``ChainBlock``): each block with the whole run's keys gives the whole run's draws.

Up to rounding: XLA compiles the vmapped iteration for the number of chains it is given and may
order a sum over a chain's coordinates differently for 2 chains than for 4, and the adaptation
carries such a difference along. How far it grows depends on the processor's vector units: HMC
differed from the whole run by ~5e-10 after 55 iterations on one machine and by up to 3e-6
(relative; 4 of 180 reals) on an AVX-512 Xeon; NUTS and ChEES agreed bit for bit on both. So the
random choices (tree sizes, steps, divergences) are compared exactly, which any use of the wrong
key would change, and the reals to a relative 1e-5, far below the O(1) differences of other keys.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.mcmc.algorithm import ChainBlock, blocks_of
from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import MemoryStore, RunConfig, sample, warm_up

SCALES = jnp.array([0.5, 2.0, 1.0])
CONFIG = RunConfig(num_warmup=40, num_samples=15, chunk_size=10)


def _ld(x, hyper):
    return -0.5 * jnp.sum((x / SCALES) ** 2)


def _starts(num_chains=4):
    return jax.random.normal(jax.random.key(5), (num_chains, 3)) * SCALES


def _join(results, name):
    return np.concatenate([np.asarray(getattr(r, name)) for r in results])


def _assert_close(got, want, name=""):
    got, want = np.asarray(got), np.asarray(want)
    if np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-9, err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, name)


def _assert_same_records(got, want):
    for field in want._fields:
        _assert_close(getattr(got, field), getattr(want, field), field)


def test_blocks_cut_a_run_into_consecutive_chains():
    assert blocks_of(5, 2) == (ChainBlock(0, 2, 5), ChainBlock(2, 2, 5), ChainBlock(4, 1, 5))
    assert blocks_of(4, 4) == (ChainBlock.whole(4),) and ChainBlock.whole(4).is_whole
    b = ChainBlock(1, 2, 4)
    assert b.stop == 3 and not b.is_whole
    key = jax.random.key(3)
    np.testing.assert_array_equal(jax.random.key_data(b.keys(key)), jax.random.key_data(jax.random.split(key, 4))[1:3])
    np.testing.assert_array_equal(b.take(np.arange(8).reshape(4, 2)), [[2, 3], [4, 5]])
    for bad in ((-1, 1, 4), (0, 0, 4), (3, 2, 4)):
        with pytest.raises(ValueError, match="block of chains"):
            ChainBlock(*bad)
    with pytest.raises(ValueError, match="chains per block"):
        blocks_of(4, 0)


@pytest.mark.parametrize("kernel", ["nuts", "hmc", "mh"])
def test_independent_chains_warm_up_and_sample_in_blocks(kernel):
    """Stan's windowed adaptation is per chain: blocks run start, warm-up and sampling on their own."""
    algorithm = make_algorithm(kernel, num_integration_steps=3, max_tree_depth=4)
    assert not algorithm.shared_adaptation
    x0 = _starts()
    whole = sample(jax.random.key(0), algorithm, _ld, x0, None, CONFIG, progress=False)
    parts = [
        sample(jax.random.key(0), algorithm, _ld, b.take(x0), None, CONFIG, progress=False, block=b)
        for b in blocks_of(4, 2)
    ]
    _assert_close(_join(parts, "positions"), whole.positions)
    for name in ("info", "warmup_info", "adapted"):
        got = jax.tree_util.tree_map(lambda *a: np.concatenate(a), *[getattr(p, name) for p in parts])
        _assert_same_records(got, getattr(whole, name))
    assert len({np.asarray(whole.positions)[c, -1].tobytes() for c in range(4)}) == 4  # every chain its own keys
    first = blocks_of(4, 2)[0]  # another run's keys: far outside the tolerance above
    other = sample(jax.random.key(1), algorithm, _ld, first.take(x0), None, CONFIG, progress=False, block=first)
    assert not np.allclose(other.positions, np.asarray(whole.positions)[:2], rtol=1e-5, atol=1e-9)


def test_chees_warms_up_whole_and_samples_in_blocks():
    """ChEES adapts across the chains: warm-up of all chains at once, then sampling blocks resumed from it."""
    algorithm = make_algorithm("chees")
    assert algorithm.shared_adaptation
    x0 = _starts()
    whole = sample(jax.random.key(0), algorithm, _ld, x0, None, CONFIG, progress=False)
    warm = warm_up(jax.random.key(0), algorithm, _ld, x0, None, CONFIG, progress=False)
    assert warm.iteration == CONFIG.num_warmup
    _assert_same_records(warm.warmup_info, whole.warmup_info)
    parts = []
    for b in blocks_of(4, 3):  # blocks of 3 and 1 chains
        store = MemoryStore(commit=(warm.iteration, b.take(warm.state)))
        parts.append(sample(jax.random.key(0), algorithm, _ld, b.take(x0), None, CONFIG, store=store,
                            progress=False, block=b))  # fmt: skip
    _assert_close(_join(parts, "positions"), whole.positions)
    got = jax.tree_util.tree_map(lambda *a: np.concatenate(a), *[p.info for p in parts])
    _assert_same_records(got, whole.info)
    adapted = jax.tree_util.tree_map(lambda *a: np.concatenate(a), *[p.adapted for p in parts])
    _assert_same_records(adapted, whole.adapted)


def test_a_block_of_chees_chains_is_not_warmed_up_alone():
    b = ChainBlock(0, 2, 4)
    with pytest.raises(ValueError, match="adapt together"):
        sample(jax.random.key(0), make_algorithm("chees"), _ld, _starts()[:2], None, CONFIG, progress=False, block=b)


def test_a_block_must_match_the_starts():
    with pytest.raises(ValueError, match="block holds 3 chains"):
        sample(jax.random.key(0), make_algorithm("mh"), _ld, _starts(), None, CONFIG, block=ChainBlock(0, 3, 4))
