"""Bayes by Backprop (Blundell et al. 2015): the mean-field ELBO, optimised by Optax.

The variational free energy of a minibatch ``D_i`` (Blundell et al. 2015,
sec. 3.4, "Minibatches and KL re-weighting")

    F_i(mu, rho) = kl_weight_i * KL(q || p) - likelihood_scale * E_q[log p(D_i | w)]

is estimated with ``M = num_mc_samples`` reparameterized draws
``w_m = mu + softplus(rho) * eps_m`` (Kingma & Welling 2014); each draw is one
network applied to the whole minibatch (the "shared sample" estimator; see
:mod:`sigmabnn.vi.flipout` for per-example perturbations). Over an epoch the
``kl_weight_i`` sum to one and the likelihood terms add up to the full data
set, so the epoch's sum of ``F_i`` is an unbiased estimate of the full
``F = KL(q || p) - E_q[log p(D | w)]`` = -ELBO (eq. 8 of the VI notes,
``reference/notes-bnn-variational-inference.txt``).

The KL is closed form for the Gaussian prior and Monte Carlo,
``mean_m [log q(w_m) - log p(w_m)]``, for the scale mixture
(:mod:`sigmabnn.vi.priors`).

Noise precision of a homoscedastic Gaussian likelihood: fixed, or learned as
a point estimate by maximising the ELBO over ``log lambda`` (variational EM /
type-II maximum likelihood, no hyperprior); it is carried in the state as
``log_noise_precision`` and its gradient is zeroed when not learned.

Pure and Optax-style:

    state = init(rng_key, bnn, optimizer)
    state, info = step(rng_key, state, batch, bnn=bnn, optimizer=optimizer, prior=prior, ...)
    positions = sample(rng_key, state, num_draws)        # [num_draws, d]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from sigmabnn.model.mlp import flatten, init_params, num_params
from sigmabnn.model.posterior import BNN, Data, Hyperparameters
from sigmabnn.vi import meanfield
from sigmabnn.vi.priors import VIPrior, gaussian_prior_from_bnn

Array = jax.Array

__all__ = ["VIInfo", "VIState", "gradient_step", "init", "likelihood_hyper", "loss", "sample", "step"]


class VIState(NamedTuple):
    """State of a variational fit.

    Attributes:
        mu: variational means ``[d]`` (flat parameter layout), run dtype.
        rho: unconstrained std parameters ``[d]``; ``sigma = softplus(rho)``.
        log_noise_precision: scalar ``log lambda`` of a homoscedastic Gaussian
            likelihood (fixed unless learned; unused by other likelihoods).
        opt_state: Optax state over ``(mu, rho, log_noise_precision)``.
        step: number of updates done, int32 scalar.
    """

    mu: Array
    rho: Array
    log_noise_precision: Array
    opt_state: Any
    step: Array

    @property
    def std(self) -> Array:
        """Variational standard deviations ``[d]``."""
        return meanfield.std_from_rho(self.rho)


class VIInfo(NamedTuple):
    """Diagnostics of one update (scalars; stacked ``[num_steps]`` by :func:`sigmabnn.vi.fit.fit_vi`).

    Attributes:
        loss: the minibatch objective ``F_i = kl_weight * kl + nll`` that was minimised (nats).
        kl: ``KL(q || p)`` estimate, unweighted (nats; closed form or Monte Carlo).
        nll: ``-likelihood_scale * E_q[log p(batch | w)]`` (nats), Monte-Carlo estimate.
        grad_norm: global L2 norm of the gradient w.r.t. ``(mu, rho, log_noise_precision)``.
        noise_precision: noise precision lambda used in this step.
        kl_weight: the KL weight of this minibatch.
    """

    loss: Array
    kl: Array
    nll: Array
    grad_norm: Array
    noise_precision: Array
    kl_weight: Array


def init(
    rng_key: Array,
    bnn: BNN,
    optimizer: optax.GradientTransformation,
    *,
    init_position: Array | None = None,
    init_std_ratio: float = 0.1,
    noise_precision: float | Array | None = None,
    prior_std: Array | None = None,
) -> VIState:
    """Initial variational state.

    Args:
        rng_key: JAX PRNG key (Glorot draw of the means when ``init_position`` is None).
        bnn: the network; its dtype is the run's dtype.
        optimizer: Optax transformation whose state is initialised here.
        init_position: optional ``[d]`` starting means (e.g. a MAP fit); default Glorot-normal kernels, zero biases.
        init_std_ratio: initial ``sigma = ratio * min(glorot_std, prior_std)`` (:func:`meanfield.init_std`).
        noise_precision: initial / fixed noise precision; default: the BNN's likelihood value.
        prior_std: prior std per entry ``[d]`` for the sigma cap; default: the BNN's Gaussian prior.
    """
    dtype = bnn.jdtype
    if init_position is None:
        mu = flatten(init_params(rng_key, bnn.mlp, dtype))
    else:
        mu = jnp.asarray(init_position, dtype)
        d = num_params(bnn.mlp)
        if mu.shape != (d,):
            raise ValueError(f"init_position has shape {mu.shape}, the network has {d} parameters")
    if prior_std is None:
        prior_std = jnp.sqrt(gaussian_prior_from_bnn(bnn).variance())
    rho = meanfield.rho_from_std(meanfield.init_std(bnn, prior_std, init_std_ratio)).astype(dtype)
    if noise_precision is None:
        noise_precision = bnn.default_hyperparameters().noise_precision
    if not float(noise_precision) > 0:
        raise ValueError(f"noise precision must be positive, got {float(noise_precision)}")
    log_noise_precision = jnp.log(jnp.asarray(noise_precision, dtype))
    opt_state = optimizer.init((mu, rho, log_noise_precision))
    return VIState(mu, rho, log_noise_precision, opt_state, jnp.asarray(0, jnp.int32))


def sample(rng_key: Array, state: VIState, num_draws: int) -> Array:
    """``num_draws`` parameter vectors from q: ``[num_draws, d]``, run dtype."""
    return meanfield.sample(rng_key, state.mu, state.std, num_draws)


def likelihood_hyper(bnn: BNN, log_noise_precision: Array) -> Hyperparameters:
    """Hyperparameters for the likelihood with noise precision ``exp(log_noise_precision)``."""
    return bnn.default_hyperparameters()._replace(noise_precision=jnp.exp(log_noise_precision))


def loss(
    rng_key: Array,
    params: tuple[Array, Array, Array],
    batch: Data,
    *,
    bnn: BNN,
    prior: VIPrior,
    kl_weight: Array | float = 1.0,
    likelihood_scale: Array | float = 1.0,
    num_mc_samples: int = 1,
) -> tuple[Array, tuple[Array, Array]]:
    """Monte-Carlo estimate of ``F_i`` with shared weight samples; returns ``(loss, (kl, nll))``.

    Args:
        rng_key: key for the ``eps`` draws.
        params: ``(mu [d], rho [d], log_noise_precision ())``.
        batch: the minibatch (run dtype).
        bnn: the network (architecture, likelihood).
        prior: a :mod:`sigmabnn.vi.priors` prior.
        kl_weight: weight of the KL term for this minibatch.
        likelihood_scale: factor on the minibatch log-likelihood.
        num_mc_samples: number of weight draws M.
    """
    mu, rho, log_noise_precision = params
    std = meanfield.std_from_rho(rho)
    eps = jax.random.normal(rng_key, (num_mc_samples,) + mu.shape, mu.dtype)
    ws = meanfield.reparameterize(mu, std, eps)
    hyper = likelihood_hyper(bnn, log_noise_precision)
    loglik = jax.vmap(lambda w: bnn.log_likelihood(w, hyper, batch))(ws)
    nll = -likelihood_scale * jnp.mean(loglik)
    kl = prior.kl(mu, std, ws)
    return kl_weight * kl + nll, (kl, nll)


def gradient_step(
    loss_fn: Callable[..., tuple[Array, tuple[Array, Array]]],
    rng_key: Array,
    state: VIState,
    batch: Data,
    *,
    optimizer: optax.GradientTransformation,
    learn_noise: bool | Array,
    kl_weight: Array | float,
    **loss_kwargs: Any,
) -> tuple[VIState, VIInfo]:
    """One Optax update of ``(mu, rho, log_noise_precision)`` on the gradient of ``loss_fn``.

    Shared by Bayes by Backprop and Flipout; ``loss_fn(rng_key, params, batch, kl_weight=..., **loss_kwargs)``.
    """
    params = (state.mu, state.rho, state.log_noise_precision)
    (value, (kl, nll)), grads = jax.value_and_grad(loss_fn, argnums=1, has_aux=True)(
        rng_key, params, batch, kl_weight=kl_weight, **loss_kwargs
    )
    # bool or traced bool scalar (e.g. off during a warm-up); off -> zero gradient, fixed noise
    grads = (grads[0], grads[1], jnp.where(learn_noise, grads[2], jnp.zeros_like(grads[2])))
    updates, opt_state = optimizer.update(grads, state.opt_state, params)
    mu, rho, log_noise_precision = optax.apply_updates(params, updates)
    info = VIInfo(
        loss=value,
        kl=kl,
        nll=nll,
        grad_norm=optax.tree.norm(grads),
        noise_precision=jnp.exp(state.log_noise_precision),
        kl_weight=jnp.asarray(kl_weight, value.dtype),
    )
    return VIState(mu, rho, log_noise_precision, opt_state, state.step + 1), info


def step(
    rng_key: Array,
    state: VIState,
    batch: Data,
    *,
    bnn: BNN,
    optimizer: optax.GradientTransformation,
    prior: VIPrior,
    kl_weight: Array | float = 1.0,
    likelihood_scale: Array | float = 1.0,
    num_mc_samples: int = 1,
    learn_noise: bool | Array = False,
) -> tuple[VIState, VIInfo]:
    """One Bayes-by-Backprop update on ``batch``: ``(new_state, info)``.

    See :func:`loss` for the arguments; ``learn_noise`` (bool, or a traced boolean scalar)
    says whether ``log_noise_precision`` is updated in this step.
    """
    return gradient_step(
        loss,
        rng_key,
        state,
        batch,
        optimizer=optimizer,
        learn_noise=learn_noise,
        kl_weight=kl_weight,
        bnn=bnn,
        prior=prior,
        likelihood_scale=likelihood_scale,
        num_mc_samples=num_mc_samples,
    )
