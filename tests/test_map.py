"""MAP pretraining: the loss falls, a known linear fit is recovered, early stopping keeps the best, restarts."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.map import MAPConfig, MAPError, learning_rate_schedule, pretrain_map
from sigmabnn.model import BNN, Data, Gaussian, GaussianPrior, parse_architecture


def linear_data(n=100, seed=0, dtype="float64"):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + 0.3 + 0.1 * rng.normal(size=n)
    return Data(jnp.asarray(x, dtype), jnp.asarray(y[:, None], dtype))


def exact_map_linear(data, noise_precision, weight_precision, bias_precision):
    """Ridge solution: argmax of the linear model's log-posterior."""
    x, y = np.asarray(data.x, np.float64), np.asarray(data.y, np.float64).reshape(-1)
    a = np.hstack([x, np.ones((x.shape[0], 1))])
    reg = np.diag(np.r_[np.full(x.shape[1], weight_precision), bias_precision])
    return np.linalg.solve(noise_precision * a.T @ a + reg, noise_precision * a.T @ y)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_recovers_linear_map_and_loss_decreases(dtype):
    data = linear_data(dtype=dtype)
    bnn = BNN(parse_architecture("3-1"), GaussianPrior(2.0, 0.5), Gaussian(100.0), dtype=dtype)
    config = MAPConfig(learning_rate=0.05, num_steps=1500, patience=None)
    positions, info = pretrain_map(
        jax.random.PRNGKey(0), bnn, data, bnn.default_hyperparameters(), config, num_starts=3
    )
    assert positions.shape == (3, 4) and positions.dtype == jnp.dtype(dtype)
    expected = exact_map_linear(data, 100.0, 2.0, 0.5)
    tol = 1e-5 if dtype == "float64" else 1e-3
    np.testing.assert_allclose(np.asarray(positions, np.float64), np.tile(expected, (3, 1)), atol=tol)
    hist = info.loss_history
    assert hist.shape == (3, 1500) and np.all(info.num_steps_run == 1500)
    assert np.all(hist[:, -1] < hist[:, 0] - 1000.0)  # from a random start the objective falls a lot
    assert info.num_grad_evals == 3 * 1500 and np.all(info.num_retries == 0)


def test_minibatch_converges_near_full_batch_map():
    data = linear_data(n=256)
    bnn = BNN(parse_architecture("3-1"), GaussianPrior(2.0, 0.5), Gaussian(100.0))
    config = MAPConfig(learning_rate=0.02, num_epochs=120, batch_size=32, patience=None)
    positions, info = pretrain_map(
        jax.random.PRNGKey(1), bnn, data, bnn.default_hyperparameters(), config, num_starts=2
    )
    assert info.num_steps_run[0] == 120 * (256 // 32)
    expected = exact_map_linear(data, 100.0, 2.0, 0.5)
    # minibatch noise at the end: the posterior sd of each coefficient is ~0.1/sqrt(256) = 0.006
    np.testing.assert_allclose(np.asarray(positions), np.tile(expected, (2, 1)), atol=0.01)
    # different starts shuffle differently
    assert not np.allclose(info.loss_history[0, 10:20], info.loss_history[1, 10:20])


def test_each_epoch_is_one_permutation_carried_across_chunks():
    """Minibatches: one permutation of the rows per epoch, drawn at the epoch's first step and carried.

    At a fixed position (learning rate ~0) the mean loss over an epoch's K = n / B minibatches
    (each scaled by n / B) equals the full-batch objective exactly when they partition the rows;
    epochs differ in order; and scan chunks that start mid-epoch (``eval_every``) change nothing.
    """
    data = linear_data(n=60)
    bnn = BNN(parse_architecture("3-1"), GaussianPrior(2.0, 0.5), Gaussian(100.0))
    hyper = bnn.default_hyperparameters()
    runs = [
        pretrain_map(
            jax.random.PRNGKey(3),
            bnn,
            data,
            hyper,
            MAPConfig(learning_rate=1e-12, num_steps=40, batch_size=12, patience=None, eval_every=every),
            num_starts=2,
        )
        for every in (7, 40)
    ]
    (positions, info), (positions2, info2) = runs
    np.testing.assert_array_equal(np.asarray(positions), np.asarray(positions2))
    np.testing.assert_array_equal(info.loss_history, info2.loss_history)
    for s in range(2):
        p = positions[s]
        full = -float(bnn.log_prior(p, hyper) + bnn.log_likelihood(p, hyper, data))
        epochs = info.loss_history[s].reshape(8, 5)  # 40 steps = 8 epochs of 5 minibatches
        np.testing.assert_allclose(epochs.mean(axis=1), full, rtol=1e-9)
        assert not np.allclose(epochs[0], epochs[1])  # a new order every epoch


def test_early_stopping_keeps_best_validation_parameters():
    # A wide network fitted to 10 noisy points overfits: validation loss rises after a minimum.
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, size=(10, 1))
    xv = rng.uniform(-2, 2, size=(200, 1))
    f = lambda t: np.sin(2 * t)
    data = Data(jnp.asarray(x), jnp.asarray(f(x) + 0.3 * rng.normal(size=x.shape)))
    val = Data(jnp.asarray(xv), jnp.asarray(f(xv) + 0.3 * rng.normal(size=xv.shape)))
    bnn = BNN(parse_architecture("1-50-50-1"), GaussianPrior(1e-4, 1e-4), Gaussian(10.0))
    config = MAPConfig(learning_rate=0.01, num_steps=4000, eval_every=20, patience=400)
    positions, info = pretrain_map(
        jax.random.PRNGKey(0), bnn, data, bnn.default_hyperparameters(), config, val_data=val, num_starts=2
    )
    mon = info.monitor_history
    # the kept parameters are the minimum of the monitored validation loss, and have that loss
    np.testing.assert_allclose(info.best_loss, np.nanmin(mon, axis=1))
    np.testing.assert_allclose(info.val_loss, info.best_loss)
    hyper = bnn.default_hyperparameters()
    for i in range(2):
        v = -float(bnn.log_likelihood(positions[i], hyper, val)) / 200
        np.testing.assert_allclose(v, info.best_loss[i], rtol=1e-10)
    # it stopped early, patience steps after the best, and the final loss is worse than the best
    assert np.all(info.num_steps_run < 4000)
    np.testing.assert_array_equal(info.num_steps_run - info.best_step, 400)
    assert np.all(info.best_step > 0)
    assert np.all(mon[np.arange(2), np.sum(np.isfinite(mon), axis=1) - 1] > info.best_loss)


def test_non_finite_start_is_retried():
    data = linear_data()
    bnn = BNN(parse_architecture("3-1"))
    starts = jnp.zeros((2, 4)).at[0, 0].set(jnp.nan)
    config = MAPConfig(learning_rate=0.05, num_steps=300)
    positions, info = pretrain_map(
        jax.random.PRNGKey(0), bnn, data, bnn.default_hyperparameters(), config, num_starts=2, initial_positions=starts
    )
    assert np.all(np.isfinite(np.asarray(positions)))
    np.testing.assert_array_equal(info.num_retries, [1, 0])
    assert np.all(np.isfinite(info.best_loss))


def test_persistently_non_finite_raises_clear_error():
    data = linear_data()
    data = Data(data.x, data.y.at[3, 0].set(jnp.inf))
    bnn = BNN(parse_architecture("3-1"))
    config = MAPConfig(num_steps=10, max_retries=2)
    with pytest.raises(MAPError, match="non-finite log-posterior after 2 restarts"):
        pretrain_map(jax.random.PRNGKey(0), bnn, data, bnn.default_hyperparameters(), config, num_starts=2)


def test_bad_settings_raise_value_error():
    data = linear_data()
    bnn = BNN(parse_architecture("3-1"))
    hyper = bnn.default_hyperparameters()
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match="learning_rate"):
        pretrain_map(key, bnn, data, hyper, MAPConfig(learning_rate=-1.0))
    with pytest.raises(ValueError, match="init"):
        pretrain_map(key, bnn, data, hyper, MAPConfig(init="zeros"))
    with pytest.raises(ValueError, match="initial_positions"):
        pretrain_map(key, bnn, data, hyper, num_starts=2, initial_positions=jnp.zeros((3, 4)))


def test_cosine_schedule_runs_from_learning_rate_to_final():
    config = MAPConfig(learning_rate=0.01, final_learning_rate=1e-4)
    schedule = learning_rate_schedule(config, 1000)
    np.testing.assert_allclose(float(schedule(0)), 0.01, rtol=1e-12)
    np.testing.assert_allclose(float(schedule(500)), (0.01 + 1e-4) / 2, rtol=1e-9)
    np.testing.assert_allclose(float(schedule(1000)), 1e-4, rtol=1e-9)
    np.testing.assert_allclose(float(schedule(5000)), 1e-4, rtol=1e-9)  # held at the end
    assert learning_rate_schedule(MAPConfig(learning_rate=0.03), 1000) == 0.03


@pytest.mark.parametrize("final", [0.0, -1e-3, 0.1])
def test_final_learning_rate_is_checked(final):
    data = linear_data()
    bnn = BNN(parse_architecture("3-1"), GaussianPrior(2.0, 0.5), Gaussian(100.0))
    config = MAPConfig(learning_rate=0.05, final_learning_rate=final)
    with pytest.raises(ValueError, match="final_learning_rate"):
        pretrain_map(jax.random.PRNGKey(0), bnn, data, bnn.default_hyperparameters(), config)


def test_decayed_step_size_settles_closer_to_the_map_than_a_constant_one():
    # minibatch Adam at a constant step size ends in a noise ball around the MAP whose size scales with the
    # step size; decaying it to 1/100 shrinks the ball, so every start ends much closer
    data = linear_data(n=256)
    bnn = BNN(parse_architecture("3-1"), GaussianPrior(2.0, 0.5), Gaussian(100.0))
    expected = exact_map_linear(data, 100.0, 2.0, 0.5)
    errors = {}
    for final in (None, 2e-4):
        config = MAPConfig(learning_rate=0.02, final_learning_rate=final, num_epochs=200, batch_size=32, patience=None)
        positions, _ = pretrain_map(
            jax.random.PRNGKey(1), bnn, data, bnn.default_hyperparameters(), config, num_starts=4
        )
        errors[final] = np.abs(np.asarray(positions) - expected).max(axis=1)
    assert np.all(errors[2e-4] < 2e-4)
    assert np.median(errors[2e-4]) < np.median(errors[None]) / 5


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lbfgs_polish_reaches_the_exact_map_that_short_adam_misses(dtype):
    data = linear_data(dtype=dtype)
    bnn = BNN(parse_architecture("3-1"), GaussianPrior(2.0, 0.5), Gaussian(100.0), dtype=dtype)
    expected = exact_map_linear(data, 100.0, 2.0, 0.5)
    hyper = bnn.default_hyperparameters()
    adam = MAPConfig(learning_rate=0.05, num_steps=50, patience=None)
    short, _ = pretrain_map(jax.random.PRNGKey(0), bnn, data, hyper, adam, num_starts=3)
    polished, info = pretrain_map(jax.random.PRNGKey(0), bnn, data, hyper, adam._replace(lbfgs_steps=30), num_starts=3)
    assert np.abs(np.asarray(short, np.float64) - expected).max() > 1e-2  # 50 Adam steps are far off
    tol = 1e-8 if dtype == "float64" else 1e-4
    np.testing.assert_allclose(np.asarray(polished, np.float64), np.tile(expected, (3, 1)), atol=tol)
    assert polished.dtype == jnp.dtype(dtype)
    assert info.polished.tolist() == [True] * 3 and info.polish_loss_history.shape == (3, 30)
    hist = info.polish_loss_history
    assert np.all(np.diff(hist, axis=1) <= 1e-6 * np.abs(hist[:, 1:]))  # the line search only goes down
    assert info.num_grad_evals > 3 * (50 + 30)  # line-search steps are counted
    # the kept point's monitored loss is the polished one (full objective per point)
    objective = -np.asarray(jax.vmap(lambda p: bnn.log_posterior(p, hyper, data))(polished)) / 100
    np.testing.assert_allclose(info.best_loss, objective, rtol=1e-5)


def test_lbfgs_polish_lowers_a_neural_network_objective():
    data = linear_data(n=200)
    y = jnp.tanh(2 * data.y)
    data = Data(data.x, y)
    bnn = BNN(parse_architecture("3-10-1"), GaussianPrior(1.0, 1.0), Gaussian(1000.0))
    hyper = bnn.default_hyperparameters()
    adam = MAPConfig(learning_rate=0.01, num_steps=300, patience=None)
    a, _ = pretrain_map(jax.random.PRNGKey(2), bnn, data, hyper, adam, num_starts=2)
    b, info = pretrain_map(jax.random.PRNGKey(2), bnn, data, hyper, adam._replace(lbfgs_steps=200), num_starts=2)
    logpost = jax.vmap(lambda p: bnn.log_posterior(p, hyper, data))
    assert np.all(np.asarray(logpost(b)) > np.asarray(logpost(a)) + 10.0)
    assert np.all(info.polished)


def test_a_patient_polish_without_validation_rows_is_the_whole_polish_run_in_chunks():
    """Without validation rows the monitored loss is the training objective, which L-BFGS's line search only
    lowers: every chunk improves it, no start stops early, and the chunked run (``lbfgs_patience``) ends at the
    point of the single scan, iteration by iteration."""
    data = linear_data(n=200)
    data = Data(data.x, jnp.tanh(2 * data.y))
    bnn = BNN(parse_architecture("3-10-1"), GaussianPrior(1.0, 1.0), Gaussian(1000.0))
    hyper = bnn.default_hyperparameters()
    adam = MAPConfig(learning_rate=0.01, num_steps=300, patience=None, lbfgs_steps=60)
    key = jax.random.PRNGKey(2)
    whole, info_whole = pretrain_map(key, bnn, data, hyper, adam, num_starts=2)
    chunked, info = pretrain_map(key, bnn, data, hyper, adam._replace(lbfgs_patience=20, eval_every=20), num_starts=2)
    np.testing.assert_allclose(np.asarray(chunked), np.asarray(whole), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(info.polish_loss_history, info_whole.polish_loss_history, rtol=1e-9)
    assert info.polish_loss_history.shape == (2, 60) and info.polished.all()
    assert info.num_grad_evals == info_whole.num_grad_evals


def test_a_patient_polish_stops_where_the_validation_loss_stops_falling():
    """A network fitted to few noisy rows with a tiny noise scale: Adam early-stopped on the validation rows,
    L-BFGS then overfits the training rows. The patient polish keeps the best validation point it saw (never
    worse than Adam's, its ``val_loss`` that of the returned point) and stops each start within
    ``lbfgs_patience`` iterations (rounded up to whole chunks of ``eval_every``) of its last improvement,
    so it computes fewer gradients."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(60, 3))
    y = np.sin(x @ np.array([1.0, -2.0, 0.5]))[:, None] + 0.3 * rng.normal(size=(60, 1))
    data, val = Data(jnp.asarray(x[:30]), jnp.asarray(y[:30])), Data(jnp.asarray(x[30:]), jnp.asarray(y[30:]))
    bnn = BNN(parse_architecture("3-20-1"), GaussianPrior(0.1, 0.1), Gaussian(100.0))
    hyper = bnn.default_hyperparameters()
    adam = MAPConfig(learning_rate=0.01, num_steps=400, patience=100, eval_every=10)
    key = jax.random.PRNGKey(3)
    _, info_adam = pretrain_map(key, bnn, data, hyper, adam, val, num_starts=3)
    full = adam._replace(lbfgs_steps=400)
    _, info_full = pretrain_map(key, bnn, data, hyper, full, val, num_starts=3)
    polished, info = pretrain_map(key, bnn, data, hyper, full._replace(lbfgs_patience=30), val, num_starts=3)
    assert np.all(info.val_loss <= info_adam.val_loss)
    val_nll = -np.asarray(jax.vmap(lambda p: bnn.log_likelihood(p, hyper, val))(polished)) / 30
    np.testing.assert_allclose(info.val_loss, val_nll, rtol=1e-9)
    hist = info.polish_loss_history
    stopped_at = np.isfinite(hist).sum(axis=1)
    assert np.all(stopped_at < 400) and np.all(stopped_at >= 30) and np.all(stopped_at % 10 == 0)  # whole chunks
    assert info.num_grad_evals < info_full.num_grad_evals
    with pytest.raises(ValueError, match="lbfgs_patience"):
        pretrain_map(key, bnn, data, hyper, full._replace(lbfgs_patience=0), val)


def test_lbfgs_needs_the_full_batch():
    data = linear_data()
    bnn = BNN(parse_architecture("3-1"), GaussianPrior(2.0, 0.5), Gaussian(100.0))
    config = MAPConfig(batch_size=10, lbfgs_steps=5)
    with pytest.raises(ValueError, match="full batch"):
        pretrain_map(jax.random.PRNGKey(0), bnn, data, bnn.default_hyperparameters(), config)


def test_pieces_of_the_starts_merge_into_the_whole_run():
    """Starts computed in pieces (``starts=``) keep their draws, keys and restarts; merged, they are the
    whole run, gradient count included (pieces stop their vmapped loop when their own starts stop).

    Up to rounding: the vmapped network is compiled for the number of starts of a piece, and XLA may
    order its sums differently (here ~1e-13), so reals are compared to 1e-9 and integers exactly."""
    from sigmabnn.map import merge_map_infos

    data, val = linear_data(n=40), linear_data(n=20, seed=1)
    bnn = BNN(parse_architecture("3-6-1"), GaussianPrior(1.0, 1.0), Gaussian(100.0))
    hyper = bnn.default_hyperparameters()
    config = MAPConfig(learning_rate=0.02, num_steps=600, patience=20, eval_every=10, lbfgs_steps=4)
    key = jax.random.PRNGKey(2)
    whole, info = pretrain_map(key, bnn, data, hyper, config, val, num_starts=5)
    assert len(set(info.num_steps_run.tolist())) == 5  # the starts stop at different steps
    pieces = [pretrain_map(key, bnn, data, hyper, config, val, 5, None, s) for s in ([0, 1], [2, 3, 4])]
    np.testing.assert_allclose(np.concatenate([p for p, _ in pieces]), whole, rtol=1e-9, atol=1e-11)
    merged = merge_map_infos([i for _, i in pieces])
    for name in ("best_step", "num_steps_run", "num_retries", "polished", "rounds"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(info, name), name)
    for name in ("loss_history", "monitor_history", "best_loss", "val_loss", "polish_loss_history"):
        np.testing.assert_allclose(getattr(merged, name), getattr(info, name), rtol=1e-9, err_msg=name)
    assert merged.num_grad_evals == info.num_grad_evals
    assert sum(i.num_grad_evals for _, i in pieces) < info.num_grad_evals  # the pieces computed less
    with pytest.raises(ValueError, match="increasing indices"):
        pretrain_map(key, bnn, data, hyper, config, num_starts=5, starts=[3, 1])


def test_take_skips_the_gather_when_every_row_is_kept():
    from sigmabnn.map import _take

    a = jnp.arange(12.0).reshape(4, 3)
    assert _take(a, np.arange(4)) is a  # a first round with every start finite: no eager gather
    np.testing.assert_array_equal(_take(a, np.array([1, 3])), np.asarray(a)[[1, 3]])


def test_the_polish_state_keeps_its_types_across_an_update_so_its_chunk_compiles_once():
    """Optax's L-BFGS starts with weak-typed scalars that its update returns strongly typed; a chunk called with
    the first would compile again for the second. The polisher's start makes them strong: the same dtypes and
    values, and the types of a state after an update."""
    import optax

    from sigmabnn.map import _strongly_typed

    solver, position = optax.lbfgs(memory_size=4), jnp.ones(3)
    objective = lambda p: jnp.sum((p - 2.0) ** 2)  # noqa: E731
    value_and_grad = optax.value_and_grad_from_state(objective)

    def update(p, state):
        value, grad = value_and_grad(p, state=state)
        return solver.update(grad, state, p, value=value, grad=grad, value_fn=objective)[1]

    def types(tree):
        return [(x.shape, x.dtype, x.weak_type) for x in jax.tree_util.tree_leaves(jax.eval_shape(lambda t: t, tree))]

    raw = solver.init(position)
    assert any(weak for _, _, weak in types(raw))  # what the fix is for: optax's own start
    start = _strongly_typed(raw)
    assert not any(weak for _, _, weak in types(start))
    assert types(start) == types(jax.eval_shape(update, position, start))
    for a, b in zip(jax.tree_util.tree_leaves(raw), jax.tree_util.tree_leaves(start), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
