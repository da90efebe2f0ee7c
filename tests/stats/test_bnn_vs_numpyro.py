"""sigmabnn's NUTS and NumPyro's NUTS agree on a small BNN's predictive distribution.

Setup: a 1-10-1 tanh network, 30 points of y = sin(1.5 x) + 0.1 eps on
x in [-2, 2], fixed noise precision 100 (the simulated noise std 0.1) and
fixed prior precisions 1 on every kernel and bias entry. Both libraries sample
the same posterior (same prior, same likelihood, float64) with 4 chains of
500 warm-up iterations and 500 draws each.

What is compared: at 5 inputs inside the data range, the predictive mean
E[f(x*)] and the predictive std sqrt(Var[f(x*)] + 1 / lambda). Both are
invariant under the network's symmetries (permuting hidden units, flipping
the sign of a unit's incoming and outgoing weights), so chains sitting in
different, symmetric modes agree; inside the data range the 30 points pin
the function down, so the non-symmetric modes predict alike as well.

Tolerance: the difference of the two estimates is compared with its
Monte-Carlo standard error, both runs' errors combined,
``se = sqrt(se_a^2 + se_b^2)``, where each run's error comes from ArviZ's
multi-chain (rank-normalised) ESS: ``se_mean = sd / sqrt(ESS(f))`` and, for
the std, the delta method on the variance,
``se_std = sqrt(Var((f - m)^2) / ESS((f - m)^2)) / (2 std)``. Ten comparisons
at |z| < 4.5 give a family-wise false-alarm rate below 1e-4; chains stuck in
different non-symmetric modes lower the ESS and widen the tolerance
honestly rather than failing by chance.
"""

from __future__ import annotations

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.map import MAPConfig
from sigmabnn.model import BNN, Data, Gaussian, GaussianPrior, parse_architecture
from sigmabnn.train import MCMCConfig, fit_mcmc

NOISE_PRECISION = 100.0
PRIOR_PRECISION = 1.0
NUM_CHAINS, NUM_WARMUP, NUM_SAMPLES = 4, 500, 500
X_STAR = np.array([-1.8, -0.9, 0.0, 0.9, 1.8])


def toy_data():
    rng = np.random.default_rng(42)
    x = rng.uniform(-2.0, 2.0, size=(30, 1))
    y = np.sin(1.5 * x) + rng.normal(size=x.shape) / np.sqrt(NOISE_PRECISION)
    return x, y


def predictive_f(kernels1, biases1, kernels2, biases2, x_star):
    """Network outputs ``[C, S, m]`` at ``x_star`` ``[m, 1]`` for parameters with leading ``[C, S]``."""
    h = np.tanh(np.einsum("mi,csij->csmj", x_star, kernels1) + biases1[:, :, None, :])
    return np.einsum("csmj,csjo->csmo", h, kernels2)[..., 0] + biases2[:, :, None, 0]


def summaries(f):
    """Predictive mean and std and their Monte-Carlo standard errors, each ``[m]``."""
    mean = f.mean(axis=(0, 1))
    var_f = f.var(axis=(0, 1))
    std = np.sqrt(var_f + 1.0 / NOISE_PRECISION)
    se_mean, se_std = np.empty_like(mean), np.empty_like(mean)
    for j in range(f.shape[-1]):
        fj = f[..., j]
        se_mean[j] = np.sqrt(var_f[j] / float(az.ess(fj)))
        sq = (fj - fj.mean()) ** 2
        se_var = np.sqrt(np.var(sq) / float(az.ess(sq)))
        se_std[j] = se_var / (2.0 * std[j])
    return mean, std, se_mean, se_std


def run_sigmabnn(x, y):
    bnn = BNN(
        parse_architecture("1-10-1", "tanh"),
        GaussianPrior(PRIOR_PRECISION, PRIOR_PRECISION),
        Gaussian(NOISE_PRECISION),
    )
    config = MCMCConfig(
        kernel="nuts",
        num_chains=NUM_CHAINS,
        num_warmup=NUM_WARMUP,
        num_samples=NUM_SAMPLES,
        map=MAPConfig(num_steps=1000),
    )
    draws, _ = fit_mcmc(jax.random.PRNGKey(0), bnn, Data(jnp.asarray(x), jnp.asarray(y)), config, progress=False)
    positions = draws.positions.reshape(-1, draws.positions.shape[-1])
    f = jax.vmap(lambda p: bnn.apply(bnn.unflatten(p), jnp.asarray(X_STAR[:, None]))[:, 0])(positions)
    return np.asarray(f).reshape(NUM_CHAINS, NUM_SAMPLES, X_STAR.size)


def run_numpyro(x, y):
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    numpyro.enable_x64()
    prior_std = 1.0 / np.sqrt(PRIOR_PRECISION)

    def model(x, y):
        w1 = numpyro.sample("w1", dist.Normal(0.0, prior_std).expand([1, 10]).to_event(2))
        b1 = numpyro.sample("b1", dist.Normal(0.0, prior_std).expand([10]).to_event(1))
        w2 = numpyro.sample("w2", dist.Normal(0.0, prior_std).expand([10, 1]).to_event(2))
        b2 = numpyro.sample("b2", dist.Normal(0.0, prior_std).expand([1]).to_event(1))
        f = jnp.tanh(x @ w1 + b1) @ w2 + b2
        numpyro.sample("y", dist.Normal(f, 1.0 / np.sqrt(NOISE_PRECISION)).to_event(2), obs=y)

    mcmc = MCMC(
        NUTS(model, target_accept_prob=0.8),
        num_warmup=NUM_WARMUP,
        num_samples=NUM_SAMPLES,
        num_chains=NUM_CHAINS,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.PRNGKey(1), jnp.asarray(x), jnp.asarray(y))
    s = {k: np.asarray(v, np.float64) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    return predictive_f(s["w1"], s["b1"], s["w2"], s["b2"], X_STAR[:, None])


@pytest.mark.slow
def test_predictive_mean_and_std_agree_with_numpyro():
    x, y = toy_data()
    ours = summaries(run_sigmabnn(x, y))
    theirs = summaries(run_numpyro(x, y))
    z_mean = (ours[0] - theirs[0]) / np.sqrt(ours[2] ** 2 + theirs[2] ** 2)
    z_std = (ours[1] - theirs[1]) / np.sqrt(ours[3] ** 2 + theirs[3] ** 2)
    msg = f"means {ours[0]} vs {theirs[0]}; stds {ours[1]} vs {theirs[1]}; z_mean {z_mean}; z_std {z_std}"
    assert np.all(np.abs(z_mean) < 4.5), msg
    assert np.all(np.abs(z_std) < 4.5), msg
    # the comparison has resolution: the standard errors are small next to the predictive std
    assert np.all(ours[2] < 0.2 * ours[1]) and np.all(theirs[2] < 0.2 * theirs[1]), msg
