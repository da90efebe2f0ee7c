"""Bayes by Backprop: unbiased reparameterized gradients, state handling, learned noise, fit_vi's contract."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from sigmabnn.errors import InputError
from sigmabnn.map import MAPConfig
from sigmabnn.model import BNN, Data, Gaussian, HeteroscedasticGaussian, num_params, parse_architecture
from sigmabnn.vi import bbb, meanfield, priors
from sigmabnn.vi.fit import VIConfig, draws_from_state, fit_vi, predictive_moments, run_vi


def _toy(n=8, seed=0, arch="2-3-1", precision=4.0):
    bnn = BNN(parse_architecture(arch, "tanh"), likelihood=Gaussian(precision=precision))
    kx, ky, km = jax.random.split(jax.random.key(seed), 3)
    x = jax.random.normal(kx, (n, bnn.mlp.input_dim))
    y = jnp.sin(x[:, 0]) + 0.3 * jax.random.normal(ky, (n,))
    d = num_params(bnn.mlp)
    mu = 0.7 * jax.random.normal(km, (d,))
    rho = meanfield.rho_from_std(jnp.full((d,), 0.3))
    return bnn, Data(x, y), (mu, rho, jnp.log(jnp.asarray(precision)))


def _path_free_loss(rng_key, params, batch, *, bnn, prior, kl_weight=1.0, likelihood_scale=1.0, num_mc_samples=1):
    """A wrong estimator: the same loss value, but no gradient through w = mu + sigma * eps into rho."""
    mu, rho, lnp = params
    std = meanfield.std_from_rho(rho)
    eps = jax.random.normal(rng_key, (num_mc_samples,) + mu.shape, mu.dtype)
    ws = mu + jax.lax.stop_gradient(std) * eps
    hyper = bbb.likelihood_hyper(bnn, lnp)
    nll = -likelihood_scale * jnp.mean(jax.vmap(lambda w: bnn.log_likelihood(w, hyper, batch))(ws))
    kl = prior.kl(mu, std, ws)
    return kl_weight * kl + nll, (kl, nll)


@pytest.mark.parametrize("prior_name", ["gaussian", "scale_mixture"])
def test_reparameterized_gradient_is_unbiased(prior_name):
    """Mean of autodiff gradients over independent keys = finite-difference gradient of the
    common-random-numbers Monte-Carlo objective, within Monte-Carlo error; a gradient that
    drops the path through sigma is rejected by the same test."""
    bnn, data, (mu, rho, lnp) = _toy()
    prior = priors.gaussian_prior_from_bnn(bnn) if prior_name == "gaussian" else priors.ScaleMixturePrior(0.5, 1.0, 0.1)
    kw = dict(bnn=bnn, prior=prior, kl_weight=0.5, num_mc_samples=1)
    theta = jnp.concatenate([mu, rho])
    d = mu.shape[0]
    n_keys = 4000

    def per_key(loss_fn, key, th):
        return loss_fn(key, (th[:d], th[d:], lnp), data, **kw)[0]

    keys_ad = jax.random.split(jax.random.key(10), n_keys)
    keys_fd = jax.random.split(jax.random.key(20), n_keys)

    @partial(jax.jit, static_argnums=0)
    def grads(loss_fn, th):
        return jax.vmap(lambda k: jax.grad(partial(per_key, loss_fn, k))(th))(keys_ad)

    @jax.jit
    def crn_objective(th):
        return jnp.mean(jax.vmap(lambda k: per_key(bbb.loss, k, th))(keys_fd))

    h = 1e-5
    eye = jnp.eye(theta.shape[0])
    fd = np.array([(crn_objective(theta + h * e) - crn_objective(theta - h * e)) / (2 * h) for e in eye])

    g = np.asarray(grads(bbb.loss, theta))
    se = g.std(0) * np.sqrt(2.0 / n_keys)  # two independent estimates of the same expectation
    z = np.abs(g.mean(0) - fd) / se
    assert z.max() < 4.5, f"max z = {z.max():.2f}"

    wrong = np.asarray(grads(_path_free_loss, theta))
    z_wrong = np.abs(wrong.mean(0) - fd) / (wrong.std(0) * np.sqrt(2.0 / n_keys) + 1e-300)
    assert z_wrong[d:].max() > 10, "the test cannot tell a biased rho-gradient apart"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_init_step_sample_shapes_and_dtypes(dtype):
    bnn = BNN(parse_architecture("2-5-1", "tanh"), dtype=dtype)
    data = Data(jnp.ones((6, 2), dtype), jnp.zeros((6,), dtype))
    opt = optax.adam(1e-2)
    state = bbb.init(jax.random.key(0), bnn, opt)
    d = num_params(bnn.mlp)
    assert state.mu.shape == (d,) and state.rho.shape == (d,)
    assert state.mu.dtype == bnn.jdtype and state.rho.dtype == bnn.jdtype
    assert float(jnp.exp(state.log_noise_precision)) == pytest.approx(100.0, rel=1e-6)
    prior = priors.gaussian_prior_from_bnn(bnn)
    new, info = jax.jit(partial(bbb.step, bnn=bnn, optimizer=opt, prior=prior, num_mc_samples=3))(
        jax.random.key(1), state, data
    )
    assert int(new.step) == 1 and new.mu.dtype == bnn.jdtype and new.rho.dtype == bnn.jdtype
    assert not np.allclose(np.asarray(new.mu), np.asarray(state.mu))
    # noise precision is fixed unless learned
    assert float(new.log_noise_precision) == float(state.log_noise_precision)
    np.testing.assert_allclose(float(info.loss), float(info.kl + info.nll), rtol=1e-5)
    draws = bbb.sample(jax.random.key(2), new, 7)
    assert draws.shape == (7, d) and draws.dtype == bnn.jdtype
    with pytest.raises(ValueError, match="parameters"):
        bbb.init(jax.random.key(0), bnn, opt, init_position=jnp.zeros(d + 1))


@pytest.mark.parametrize("noise_estimate", ["map", "elbo"])
def test_learned_noise_precision_recovers_the_noise(noise_estimate):
    """Linear model, n = 400, noise std 0.5: the MAP-residual and the ELBO-maximising noise std are within 10 %."""
    n = 400
    kx, ke = jax.random.split(jax.random.key(4))
    x = jax.random.normal(kx, (n, 2))
    y = 1.5 * x[:, 0] - x[:, 1] + 0.3 + 0.5 * jax.random.normal(ke, (n,))
    bnn = BNN(parse_architecture("2-1"), likelihood=Gaussian(precision=1.0, learn_precision=True))
    config = VIConfig(
        num_steps=1500,
        learning_rate=0.05,
        final_learning_rate=1e-3,
        num_mc_samples=4,
        num_draws=10,
        noise_estimate=noise_estimate,
        map=MAPConfig(num_steps=300),
    )
    draws, info = fit_vi(jax.random.key(5), bnn, Data(x, y), config, progress=False)
    noise_std = 1 / np.sqrt(np.asarray(draws.hyper.noise_precision))
    assert np.all(noise_std == noise_std[0, 0])
    assert abs(noise_std[0, 0] / 0.5 - 1) < 0.1, noise_std[0, 0]
    assert info.loss.shape == (1500,) and np.isfinite(np.asarray(info.loss)).all()


@pytest.mark.parametrize("method, dtype", [("bbb", "float64"), ("flipout", "float32")])
def test_fit_vi_contract_and_minibatches(method, dtype):
    bnn, data, _ = _toy(n=40, arch="2-4-1")
    bnn = BNN(bnn.mlp, likelihood=bnn.likelihood, dtype=dtype)
    config = VIConfig(
        method=method,
        num_steps=30,
        num_mc_samples=2,
        batch_size=16,
        kl_schedule="blundell",
        num_draws=11,
        chunk_size=7,
        map=MAPConfig(num_steps=20),
    )
    draws, info = fit_vi(jax.random.key(0), bnn, data, config, progress=False)
    d = num_params(bnn.mlp)
    assert draws.positions.shape == (1, 11, d) and draws.num_networks == 11
    assert draws.positions.dtype == bnn.jdtype and draws.hyper.noise_precision.dtype == bnn.jdtype
    assert draws.hyper.noise_precision.shape == (1, 11)
    assert draws.hyper.weight_precision.shape == (1, 11, 2)
    # two minibatches of 16 per epoch (8 points left over): KL weights 2/3, 1/3 alternate
    np.testing.assert_allclose(np.asarray(info.kl_weight[:4]), [2 / 3, 1 / 3, 2 / 3, 1 / 3], rtol=1e-6)
    assert info.grad_norm.shape == (30,) and np.isfinite(np.asarray(info.loss)).all()
    # same key -> same result; distinct draws from one q
    again, _ = fit_vi(jax.random.key(0), bnn, data, config, progress=False)
    np.testing.assert_array_equal(np.asarray(again.positions), np.asarray(draws.positions))
    assert np.unique(np.asarray(draws.positions[0, :, 0])).size == 11


@pytest.mark.parametrize(
    "change, error, message",
    [
        (dict(method="svgd"), ValueError, "unknown VI method"),
        (dict(prior="laplace"), ValueError, "unknown prior"),
        (dict(kl_schedule="linear"), ValueError, "kl_schedule"),
        (dict(num_steps=0), ValueError, "num_steps"),
        (dict(learning_rate=-1.0), ValueError, "learning_rate"),
        (dict(batch_size=0), ValueError, "batch_size"),
    ],
)
def test_fit_vi_rejects_bad_settings(change, error, message):
    bnn, data, _ = _toy()
    with pytest.raises(error, match=message):
        run_vi(jax.random.key(0), bnn, data, VIConfig(num_steps=2)._replace(**change), progress=False)


def test_fit_vi_rejects_bad_data_and_learn_noise_for_other_likelihoods():
    bnn, data, _ = _toy()
    with pytest.raises(InputError, match="network expects"):
        run_vi(jax.random.key(0), bnn, data._replace(x=data.x[:, :1]), VIConfig(num_steps=2), progress=False)
    with pytest.raises(InputError, match="target rows"):
        run_vi(jax.random.key(0), bnn, data._replace(y=data.y[:3]), VIConfig(num_steps=2), progress=False)
    het = BNN(parse_architecture("2-3-2"), likelihood=HeteroscedasticGaussian())
    with pytest.raises(ValueError, match="learn_noise"):
        run_vi(jax.random.key(0), het, data, VIConfig(num_steps=2, learn_noise=True), progress=False)
    with pytest.raises(InputError, match="outputs"):
        one_output = BNN(parse_architecture("2-3-1"), likelihood=HeteroscedasticGaussian())
        run_vi(jax.random.key(0), one_output, data, VIConfig(num_steps=2), progress=False)


def test_non_finite_objective_is_a_clear_error():
    bnn, data, _ = _toy()
    bad = data._replace(y=data.y.at[0].set(jnp.nan))
    with pytest.raises(InputError, match="non-finite at step 0"):
        run_vi(jax.random.key(0), bnn, bad, VIConfig(num_steps=3, map=None), progress=False)
    with pytest.raises(InputError, match="MAP pretraining"):
        run_vi(jax.random.key(0), bnn, bad, VIConfig(num_steps=3), progress=False)


def test_predictive_moments_is_eq_25():
    bnn = BNN(parse_architecture("1-3-2", "tanh"), likelihood=HeteroscedasticGaussian(min_std=1e-3))
    d = num_params(bnn.mlp)
    positions = jax.random.normal(jax.random.key(0), (5, d))
    hyper = bnn.default_hyperparameters()
    hyper = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (5,) + a.shape), hyper)
    x = jnp.linspace(-1, 1, 4)[:, None]
    mean, aleatoric, epistemic = predictive_moments(bnn, positions, hyper, x)
    f = np.stack([np.asarray(bnn.apply(bnn.unflatten(p), x)) for p in positions])  # [T, n, 2]
    mu_t, std_t = f[..., :1], np.logaddexp(0, f[..., 1:]) + 1e-3
    np.testing.assert_allclose(np.asarray(mean), mu_t.mean(0), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(aleatoric), (std_t**2).mean(0), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(epistemic), mu_t.var(0), rtol=1e-12)


@pytest.mark.slow
def test_heteroscedastic_head_learns_input_dependent_noise():
    """Noise std grows linearly from 0.05 to 0.45 over [-1, 1]: the aleatoric part of eq. 25
    follows it (where the noise is small, misfit of the mean inflates it a little), and the
    epistemic variance at x = 4 is more than twice its largest value in the data."""
    n = 256
    kx, ke = jax.random.split(jax.random.key(6))
    x = jax.random.uniform(kx, (n, 1), minval=-1.0, maxval=1.0)
    true_std = 0.25 + 0.2 * x[:, 0]
    y = jnp.sin(2 * x[:, 0]) + true_std * jax.random.normal(ke, (n,))
    bnn = BNN(parse_architecture("1-16-2", "tanh"), likelihood=HeteroscedasticGaussian())
    config = VIConfig(method="flipout", num_steps=3000, learning_rate=0.02, final_learning_rate=1e-3, num_mc_samples=4)
    draws, _ = fit_vi(jax.random.key(7), bnn, Data(x, y), config, progress=False)
    positions, hyper = draws.flat()
    grid = jnp.asarray([[-0.8], [0.0], [0.8], [4.0]])
    _, aleatoric, epistemic = predictive_moments(bnn, positions, hyper, grid)
    ale_std = np.sqrt(np.asarray(aleatoric[:, 0]))
    assert ale_std[0] < ale_std[1] < ale_std[2] and ale_std[2] / ale_std[0] > 2.5, ale_std
    np.testing.assert_allclose(ale_std[1:3], [0.25, 0.41], rtol=0.2)
    assert ale_std[0] < 0.2, ale_std
    epi = np.asarray(epistemic[:, 0])
    assert epi[3] > 2 * epi[:3].max(), epi  # 2.7x from the default MAP start (over 3x from a Glorot start)


def _toy_standardised(name: str, seed: int = 1):
    from sigmabnn.workflows.toy import TOY_FUNCTIONS, make_toy_data

    x, y = make_toy_data(jax.random.key(seed), {f.name: f for f in TOY_FUNCTIONS}[name])
    return Data(jnp.asarray((x - x.mean()) / x.std())[:, None], jnp.asarray((y - y.mean()) / y.std())[:, None]), y.std()


def test_learned_noise_on_a_50_point_toy_is_near_the_truth():
    """50 points, noise std 0.25, a 1-20-20-1 tanh network: the default noise estimate (Gamma-conditional
    mean at the best of the MAP starts) is within a factor 1.8 of the truth. Estimating it by the ELBO
    (or from a single unlucky MAP start on the sine) gives 2 to 20 times the truth."""
    data, y_std = _toy_standardised("sine")
    bnn = BNN(parse_architecture("1-20-20-1", "tanh"), likelihood=Gaussian(precision=100.0, learn_precision=True))
    draws, _ = fit_vi(jax.random.key(0), bnn, data, VIConfig(num_steps=50, num_draws=4), progress=False)
    noise_std = float(y_std / np.sqrt(np.asarray(draws.hyper.noise_precision)[0, 0]))
    assert 0.25 / 1.8 < noise_std < 0.25 * 1.8, noise_std


def test_heteroscedastic_vi_model_predicts_the_eq_25_split_after_a_round_trip(tmp_path):
    """A variational heteroscedastic model (draws from q), saved and loaded: ``predict``'s epistemic and
    aleatoric stds are the square roots of eq. 25's two terms (``predictive_moments``) in target units,
    and the total std is their quadrature sum."""
    from sigmabnn.data.transforms import Standardizer, TargetTransform
    from sigmabnn.fitted import FittedModel
    from sigmabnn.io.model_file import load_model, save_model
    from sigmabnn.predict import predict

    x = np.linspace(-1.0, 1.0, 64)[:, None]
    y = np.sin(2 * x[:, 0]) + 3.0
    x_t, y_t = Standardizer.fit(x), TargetTransform.fit(y)
    bnn = BNN(parse_architecture("1-8-2", "tanh"), likelihood=HeteroscedasticGaussian())
    # q itself need not be trained for this identity: widen an initial q so both terms matter
    state = bbb.init(jax.random.key(12), bnn, optax.sgd(0.1), init_std_ratio=3.0)
    draws = draws_from_state(jax.random.key(14), bnn, state, VIConfig(num_draws=50))
    fitted = FittedModel(bnn, draws, x_t, y_t, ("x",), "y", method="flipout")
    save_model(fitted, tmp_path / "het.model")
    loaded = load_model(tmp_path / "het.model")
    grid = np.linspace(-1.5, 1.5, 7)[:, None]
    pred = predict(loaded, grid, rng_key=jax.random.key(13))
    positions, hyper = draws.flat()
    _, aleatoric, epistemic = predictive_moments(bnn, positions, hyper, jnp.asarray(x_t.forward(grid)))
    scale = float(y_t.scale[0])
    np.testing.assert_allclose(pred.epistemic_std, np.sqrt(np.asarray(epistemic)) * scale, rtol=1e-6)
    np.testing.assert_allclose(pred.aleatoric_std, np.sqrt(np.asarray(aleatoric)) * scale, rtol=1e-6)
    np.testing.assert_allclose(pred.std**2, pred.epistemic_std**2 + pred.aleatoric_std**2, rtol=1e-9)
    assert loaded.method == "flipout" and loaded.draws.positions.shape == (1, 50, num_params(bnn.mlp))


def test_chunking_does_not_change_the_fit_and_map_start_takes_the_minibatch_size(monkeypatch):
    """Minibatch order is one permutation per epoch carried through the scan, so chunks that start
    mid-epoch give the same fit; a MAP config without a batch size pretrains on the VI minibatches."""
    import sigmabnn.vi.fit as vi_fit

    bnn, data, _ = _toy(n=40, arch="2-4-1")
    config = VIConfig(num_steps=23, num_mc_samples=2, batch_size=12, map=None, noise_estimate="elbo")
    losses = [
        np.asarray(run_vi(jax.random.key(4), bnn, data, config._replace(chunk_size=c), progress=False)[1].loss)
        for c in (5, 23)
    ]
    np.testing.assert_array_equal(losses[0], losses[1])

    seen = []

    def spy(key, bnn_, data_, hyper, map_config, num_starts):
        seen.append(map_config.batch_size)
        return pretrain_map(key, bnn_, data_, hyper, map_config, num_starts=num_starts)

    pretrain_map = vi_fit.pretrain_map
    monkeypatch.setattr(vi_fit, "pretrain_map", spy)
    for vi_batch, map_batch in ((12, None), (12, 8), (None, None)):
        cfg = config._replace(num_steps=3, batch_size=vi_batch, map=MAPConfig(num_steps=3, batch_size=map_batch))
        run_vi(jax.random.key(4), bnn, data, cfg, progress=False)
    assert seen == [12, 8, None]
