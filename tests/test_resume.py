"""fit_mcmc: same seed, same data, same settings give identical draws; a checkpointed run resumes bit for bit."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import sigmabnn.train.mcmc
from sigmabnn.io.checkpoint import Checkpoint
from sigmabnn.map import MAPConfig
from sigmabnn.train import MCMCConfig, fit_mcmc
from test_train import linear_problem

CONFIG = MCMCConfig(
    kernel="mh", num_chains=2, num_warmup=60, num_samples=40, thin=2, learn_noise=True,
    map=MAPConfig(learning_rate=0.05, num_steps=50),
)  # fmt: skip


def _fit(checkpoint=None):
    bnn, data = linear_problem(learn_noise=True)
    return fit_mcmc(jax.random.key(5), bnn, data, CONFIG, progress=False, checkpoint=checkpoint, chunk_size=16)


def _leaves(result):
    draws, info = result
    return jax.tree_util.tree_leaves((draws, info.sample_info, info.warmup_info, info.adapted, info.initial_hyper))


def _assert_identical(a, b):
    for x, y in zip(_leaves(a), _leaves(b), strict=True):
        assert np.array_equal(np.asarray(x), np.asarray(y))
    for x, y in zip(a[1].map_info, b[1].map_info, strict=True):
        assert (x is None and y is None) or np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)
    assert a[1].num_grad_evals == b[1].num_grad_evals


def test_same_seed_data_and_settings_give_identical_draws():
    first, second = _fit(), _fit()
    _assert_identical(first, second)
    assert np.unique(np.asarray(first[0].hyper.noise_precision)).size > 10  # the Gibbs draws really vary


def test_resumed_fit_skips_map_and_equals_the_uninterrupted_fit(tmp_path, monkeypatch):
    reference = _fit()

    class StopAt(Checkpoint):
        def commit(self, iteration, state):
            super().commit(iteration, state)
            if iteration == 92:  # in sampling: after warm-up (60) and two chunks of 16
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _fit(StopAt.create(tmp_path / "m", {}))
    assert Checkpoint.open(tmp_path / "m").iteration() == 92

    def no_map(*args, **kwargs):
        raise AssertionError("MAP ran again on resume")

    monkeypatch.setattr(sigmabnn.train.mcmc, "pretrain_map", no_map)
    resumed = _fit(Checkpoint.open(tmp_path / "m"))
    _assert_identical(reference, resumed)
