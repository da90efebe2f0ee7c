"""fit_mcmc: MAP starts -> runner -> draws, on Bayesian linear regression with a known posterior.

With the noise precision fixed, the linear model y = X w + b + eps with a
Gaussian prior has an exactly Gaussian posterior over theta = (w, b):
Sigma = (lambda A^T A + diag(alpha))^-1, mu = lambda Sigma A^T y, A = [X, 1].
Draws are compared with it within ESS-based Monte-Carlo error.
"""

from __future__ import annotations

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.map import MAPConfig
from sigmabnn.model import BNN, Categorical, Data, Gaussian, GaussianPrior, parse_architecture
from sigmabnn.train import MCMCConfig, default_config, fit_mcmc
from sigmabnn.train.gibbs import HyperPrior
from sigmabnn.train.mcmc import CHEES_ROW_STEP_BUDGET, chees_max_tree_depth, chees_num_warmup

ALPHA_W, ALPHA_B, NOISE = 0.5, 0.25, 4.0


def linear_problem(n=50, seed=0, learn_noise=False, dtype="float64"):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = x @ np.array([1.0, -0.5, 0.25]) + 0.3 + 0.5 * rng.normal(size=n)
    bnn = BNN(parse_architecture("3-1"), GaussianPrior(ALPHA_W, ALPHA_B), Gaussian(NOISE, learn_noise), dtype=dtype)
    return bnn, Data(jnp.asarray(x, dtype), jnp.asarray(y[:, None], dtype))


def gaussian_posterior(data):
    x, y = np.asarray(data.x, np.float64), np.asarray(data.y, np.float64).reshape(-1)
    a = np.hstack([x, np.ones((x.shape[0], 1))])
    cov = np.linalg.inv(NOISE * a.T @ a + np.diag([ALPHA_W] * 3 + [ALPHA_B]))
    return NOISE * cov @ a.T @ y, np.diag(cov)


def assert_mc_close(draws, mean, var, z=4.5):
    """Draws ``[chain, draw]`` have this mean and variance within z ESS-based standard errors."""
    draws = np.asarray(draws, np.float64)
    se_mean = np.sqrt(var / float(az.ess(draws)))
    assert abs(draws.mean() - mean) < z * se_mean, (draws.mean(), mean, se_mean)
    sq = (draws - draws.mean()) ** 2
    se_var = np.sqrt(np.var(sq) / float(az.ess(sq)))
    assert abs(sq.mean() - var) < z * se_var, (sq.mean(), var, se_var)


def test_default_config_rule():
    small, mid, big = default_config(100, 50), default_config(8000, 561), default_config(8000, 5000)
    assert (small.num_warmup, mid.num_warmup, big.num_warmup) == (500, 1000, 1500)
    assert small.num_chains * small.num_samples == 1000 and small.thin == 1
    assert mid.map.batch_size is None and mid.map.num_steps == 2000
    huge = default_config(1_000_000, 561)
    assert huge.map.batch_size == 1024 and huge.map.num_epochs == 10
    assert default_config(50_000, 561).map.num_epochs == 41  # ceil(2000 * 1024 / 50000)
    with pytest.raises(ValueError, match="n_data"):
        default_config(0, 10)


def test_chees_trajectory_cap_and_warmup_scale_with_rows():
    # rows x 2**depth within the budget, clipped to [7, 9]: the boundaries are exact powers of two
    cases = {1: 9, 256: 9, 512: 9, 513: 8, 1024: 8, 1025: 7, 2048: 7, 10**6: 7}
    assert {n: chees_max_tree_depth(n) for n in cases} == cases
    for n in (1, 100, 256, 300, 512, 1000):
        assert n * 2 ** chees_max_tree_depth(n) <= CHEES_ROW_STEP_BUDGET
    with pytest.raises(ValueError, match="n_data"):
        chees_max_tree_depth(0)
    # the longer warm-up goes with the deepest cap of half the budget: up to 256 rows
    assert [chees_num_warmup(n) for n in (1, 256, 257, 512, 10**6)] == [600, 600, 300, 300, 300]
    with pytest.raises(ValueError, match="n_data"):
        chees_num_warmup(0)


def test_the_library_default_is_chees_from_map_starts_with_1000_networks():
    from sigmabnn.fitting.spec import build_spec
    from sigmabnn.names import DEFAULT_METHOD

    assert DEFAULT_METHOD == "chees"
    for n, params, warmup, depth in (
        (100, 50, 600, 9),
        (400, 200, 300, 9),
        (800, 200, 300, 8),
        (8000, 561, 300, 7),
        (50_000, 5000, 300, 7),
    ):
        config = build_spec("y").mcmc_config(n, params)
        assert config.kernel == "chees" and config.num_chains * config.num_samples == 1000
        assert (config.num_warmup, config.max_tree_depth) == (warmup, depth)
        assert config.map == default_config(n, params, "chees").map
        without_val = build_spec("y").mcmc_config(n, params, validation=False).map
        assert without_val == default_config(n, params, "chees", validation=False).map
        assert without_val.lbfgs_steps == 0 and (config.map.lbfgs_steps > 0) == (n <= 20_000)
    # a method or a chain count given explicitly keeps its own defaults
    nuts = build_spec("y", method="nuts").mcmc_config(100, 50)
    assert (nuts.kernel, nuts.num_chains, nuts.num_warmup, nuts.max_tree_depth) == ("nuts", 4, 500, 10)
    assert build_spec("y", num_chains=2).mcmc_config(100, 50).num_chains == 2


def test_an_mcmc_classifier_learns_its_prior_precisions_unless_told_not_to():
    from sigmabnn.fitting.spec import build_spec

    for method in ("nuts", "chees", "hmc", "mh"):
        assert build_spec("y", method=method, likelihood="categorical").mcmc_config(100, 50).learn_prior
        fixed = build_spec("y", method=method, likelihood="categorical", learn_prior=False)
        assert fixed.mcmc_config(100, 50).learn_prior is False
        regression = build_spec("y", method=method).mcmc_config(100, 50).learn_prior  # ChEES: learn_prior="auto"
        assert regression is (method == "chees")


def test_learn_prior_auto_samples_the_prior_precisions_by_the_noise_model():
    from sigmabnn.errors import InputError
    from sigmabnn.fitting.spec import build_spec

    # the default method's default: the fallback noise model before the choice is the Gaussian
    assert build_spec("y").mcmc_config(100, 50).learn_prior is True
    assert build_spec("y").with_likelihood("hetero_student_t").mcmc_config(100, 50).learn_prior is False
    assert build_spec("y", learn_prior=False).with_likelihood("gaussian").mcmc_config(100, 50).learn_prior is False
    auto = build_spec("y", learn_prior="auto")
    # likelihood="auto" decides it once the noise model is chosen: the Gaussian samples, the hetero-t does not
    assert auto.with_likelihood("gaussian").mcmc_config(100, 50).learn_prior is True
    assert auto.with_likelihood("hetero_student_t").mcmc_config(100, 50).learn_prior is False
    assert build_spec("y", likelihood="student_t", learn_prior="auto").mcmc_config(100, 50).learn_prior is False
    assert build_spec("y", likelihood="categorical", learn_prior="auto").mcmc_config(100, 50).learn_prior is True
    # an explicit value wins over the noise model
    forced = build_spec("y", learn_prior=True).with_likelihood("hetero_student_t")
    assert forced.mcmc_config(100, 50).learn_prior is True
    for bad in ("yes", 1, None, 0.5):
        with pytest.raises(InputError, match="learn_prior must be true, false or 'auto'"):
            build_spec("y", learn_prior=bad)


def test_bad_settings_raise_value_error():
    bnn, data = linear_problem()
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match="num_chains"):
        fit_mcmc(key, bnn, data, MCMCConfig(num_chains=0), progress=False)
    cat = BNN(parse_architecture("3-2"), likelihood=Categorical(2))
    labels = Data(data.x, jnp.zeros(data.x.shape[0], jnp.int32))
    with pytest.raises(ValueError, match="gaussian"):
        fit_mcmc(key, cat, labels, MCMCConfig(learn_noise=True), progress=False)


def test_initial_buffer_sets_where_the_first_slow_window_starts():
    """``MCMCConfig.initial_buffer`` reaches the runner's window schedule (Stan's 75 by default): with 25, the
    default ChEES warm-up of 300 iterations updates its metric after iterations 49, 99 and 249 instead of 99,
    149 and 249; the fit option of that name sets it, and a negative one is refused."""
    from sigmabnn.fitting.spec import build_spec
    from sigmabnn.mcmc.adaptation import window_schedule
    from sigmabnn.train.mcmc import run_config_for

    assert run_config_for(MCMCConfig()).initial_buffer == 75
    # the default ChEES fit starts its first slow window after 25 iterations; the other kernels keep Stan's 75
    assert default_config(300, 500, "chees").initial_buffer == 25
    assert default_config(300, 500, "nuts").initial_buffer == 75
    run = run_config_for(MCMCConfig(num_warmup=300, initial_buffer=25))
    ends = np.flatnonzero(window_schedule(run.num_warmup, run.initial_buffer, run.final_buffer, run.first_window)[1])
    assert ends.tolist() == [49, 99, 249]
    default = run_config_for(MCMCConfig(num_warmup=300))
    ends = np.flatnonzero(window_schedule(300, default.initial_buffer, default.final_buffer, default.first_window)[1])
    assert ends.tolist() == [99, 149, 249]
    spec = build_spec("y", initial_buffer=25)
    assert spec.mcmc_config(500, 100).initial_buffer == 25
    with pytest.raises(ValueError, match="initial_buffer"):
        run_config_for(MCMCConfig(initial_buffer=-1))


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["nuts", "chees"])
def test_fit_fixed_noise_matches_exact_gaussian_posterior(kernel):
    bnn, data = linear_problem()
    config = MCMCConfig(
        kernel=kernel,
        num_chains=4,
        num_warmup=400,
        num_samples=1000,
        map=MAPConfig(learning_rate=0.05, num_steps=300),
    )
    draws, info = fit_mcmc(jax.random.PRNGKey(0), bnn, data, config, progress=False)
    assert draws.positions.shape == (4, 1000, 4) and draws.positions.dtype == jnp.float64
    mean, var = gaussian_posterior(data)
    for i in range(4):
        assert_mc_close(draws.positions[..., i], mean[i], var[i])
    # fixed hyperparameters are carried along unchanged
    np.testing.assert_array_equal(np.asarray(draws.hyper.noise_precision), NOISE)
    assert info.learn_noise is False and info.learn_prior is False
    # bookkeeping: gradient count = MAP steps + leapfrog steps (no Gibbs re-evaluations)
    expected = info.map_info.num_grad_evals
    expected += int(np.sum(info.warmup_info.num_integration_steps)) + int(
        np.sum(info.sample_info.num_integration_steps)
    )
    assert info.num_grad_evals == expected and info.map_info.num_grad_evals == 4 * 300
    assert 0 < info.map_seconds < info.total_seconds and 0 < info.sample_seconds < info.total_seconds
    assert info.adapted.step_size.shape == (4,)


@pytest.mark.slow
def test_fit_learns_noise_and_prior_precisions():
    bnn, data = linear_problem(learn_noise=True)
    hp = HyperPrior(noise_shape=2.0, noise_rate=0.5)
    config = MCMCConfig(
        num_chains=2,
        num_warmup=300,
        num_samples=500,
        learn_prior=True,
        hyperprior=hp,
        map=MAPConfig(learning_rate=0.05, num_steps=300),
    )
    draws, info = fit_mcmc(jax.random.PRNGKey(1), bnn, data, config, progress=False)
    assert info.learn_noise and info.learn_prior
    # the initial noise precision is the Gibbs conditional mean at the MAP fits (pooled over chains)
    mlp_x = np.hstack([np.asarray(data.x), np.ones((50, 1))])
    y = np.asarray(data.y).reshape(-1)
    # MAP starts at fixed noise precision 4: the ridge solution
    theta = np.linalg.solve(NOISE * mlp_x.T @ mlp_x + np.diag([ALPHA_W] * 3 + [ALPHA_B]), NOISE * mlp_x.T @ y)
    sse = np.sum((y - mlp_x @ theta) ** 2)
    np.testing.assert_allclose(float(info.initial_hyper.noise_precision), (2.0 + 25.0) / (0.5 + sse / 2), rtol=1e-3)
    lam = np.asarray(draws.hyper.noise_precision)
    w_prec = np.asarray(draws.hyper.weight_precision)
    assert lam.shape == (2, 500) and w_prec.shape == (2, 500, 1)
    assert np.all(lam > 0) and np.std(lam) > 0 and np.std(w_prec) > 0
    # the noise std used to simulate is 0.5: the posterior of lambda sits near 1 / 0.25 = 4
    assert 2.0 < lam.mean() < 8.0
    # gradient count includes one re-evaluation per iteration and chain after the Gibbs update
    expected = info.map_info.num_grad_evals + 2 * (300 + 500)
    expected += int(np.sum(info.warmup_info.num_integration_steps)) + int(
        np.sum(info.sample_info.num_integration_steps)
    )
    assert info.num_grad_evals == expected


@pytest.mark.parametrize("learn_noise", [False, True])
def test_fit_compiles_the_sampler_ahead_while_map_runs(caplog, learn_noise):
    # fit_mcmc compiles the chunk function ahead, in another thread (compile_ahead), with the shapes and
    # dtypes the run then uses, the learnt noise's MAP start included: the calling thread, whose
    # compilations are logged (JAX's log_compiles is per thread), compiles the MAP's functions but
    # not the sampler's; any mismatch of shapes or dtypes would compile it here a second time
    bnn, data = linear_problem(learn_noise=learn_noise)
    config = MCMCConfig(kernel="chees", num_chains=2, num_warmup=20, num_samples=10,
                        map=MAPConfig(learning_rate=0.05, num_steps=20))  # fmt: skip
    with caplog.at_level("WARNING"), jax.log_compiles():
        fit_mcmc(jax.random.PRNGKey(3), bnn, data, config, progress=False)
    compiled = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Finished XLA compilation of")]
    assert any(m.startswith("Finished XLA compilation of jit(chunk_one)") for m in compiled)  # the MAP's
    assert not any(m.startswith("Finished XLA compilation of jit(chunk)") for m in compiled)
