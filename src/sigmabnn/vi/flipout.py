"""Flipout (Wen et al. 2018, "Flipout: Efficient Pseudo-Independent Weight
Perturbations on Mini-Batches"): per-example weight perturbations for dense layers.

With one shared weight sample per minibatch (:mod:`sigmabnn.vi.bbb`) the
gradients of different examples are correlated, so averaging over the batch
does not reduce their variance. Flipout decorrelates them at the cost of a
second matrix product: a single perturbation ``Delta W = sigma * eps`` is drawn
per minibatch, and example ``n`` sees ``W_n = W_mu + Delta W o (s_in,n s_out,n^T)``
with independent random sign vectors ``s_in,n`` ``[n_in]`` and ``s_out,n``
``[n_out]``. Since ``Delta W`` is symmetric and independent of the signs,
every ``W_n`` is an exact draw from q (so the ELBO and its gradient stay
unbiased), and the layer is computed in batch form (Wen et al. 2018, sec. 3):

    out = x W_mu + b_mu + ((x o s_in) Delta W) o s_out + Delta b o s_out.

The bias perturbation is flipped with the same ``s_out`` (again an exact draw
from q for each example). The KL term uses the shared draw ``w = mu + Delta``,
exactly as Bayes by Backprop does; :func:`init`, :func:`sample` and the state
are those of :mod:`sigmabnn.vi.bbb`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from sigmabnn.model.mlp import ACTIVATIONS, Params
from sigmabnn.model.posterior import BNN, Data
from sigmabnn.vi import meanfield
from sigmabnn.vi.bbb import VIInfo, VIState, gradient_step, init, likelihood_hyper, sample
from sigmabnn.vi.priors import VIPrior

Array = jax.Array

__all__ = ["VIInfo", "VIState", "forward", "init", "log_likelihood_of_output", "loss", "sample", "step"]


def forward(rng_key: Array, bnn: BNN, mean_params: Params, delta_params: Params, x: Array) -> Array:
    """Network output ``[n, output_dim]`` with Flipout perturbations in every dense layer.

    Args:
        rng_key: key for the random signs (drawn per example and per layer).
        bnn: the network (architecture and activations).
        mean_params: the variational means as a parameters pytree.
        delta_params: the shared perturbation ``Delta = sigma * eps`` as a parameters pytree.
        x: inputs ``[n, input_dim]``.
    """
    keys = jax.random.split(rng_key, 2 * bnn.mlp.num_layers)
    h = x
    n = x.shape[0]
    for i, (mean, delta, act) in enumerate(zip(mean_params, delta_params, bnn.mlp.activations)):
        s_in = jax.random.rademacher(keys[2 * i], (n, mean.kernel.shape[0]), h.dtype)
        s_out = jax.random.rademacher(keys[2 * i + 1], (n, mean.kernel.shape[1]), h.dtype)
        z = h @ mean.kernel + mean.bias + (((h * s_in) @ delta.kernel) + delta.bias) * s_out
        h = ACTIVATIONS[act](z)
    return h


def log_likelihood_of_output(bnn: BNN, f: Array, hyper: Any, batch: Data) -> Array:
    """``log p(batch | f)`` (scalar) for network outputs ``f``; same target handling as ``BNN.log_likelihood``."""
    y = batch.y if batch.y.ndim == 2 or bnn.likelihood.name == "categorical" else batch.y[:, None]
    return bnn.likelihood.log_prob(f, y, hyper.noise_precision, batch.noise_std)


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
    """Monte-Carlo ``F_i`` with Flipout perturbations; returns ``(loss, (kl, nll))``.

    Same arguments and meaning as :func:`sigmabnn.vi.bbb.loss`; each of the ``num_mc_samples``
    draws has its own ``Delta`` and its own sign vectors.
    """
    mu, rho, log_noise_precision = params
    std = meanfield.std_from_rho(rho)
    key_eps, key_sign = jax.random.split(rng_key)
    eps = jax.random.normal(key_eps, (num_mc_samples,) + mu.shape, mu.dtype)
    deltas = std * eps
    hyper = likelihood_hyper(bnn, log_noise_precision)
    mean_params = bnn.unflatten(mu)

    def one(key: Array, delta: Array) -> Array:
        f = forward(key, bnn, mean_params, bnn.unflatten(delta), batch.x)
        return log_likelihood_of_output(bnn, f, hyper, batch)

    loglik = jax.vmap(one)(jax.random.split(key_sign, num_mc_samples), deltas)
    nll = -likelihood_scale * jnp.mean(loglik)
    kl = prior.kl(mu, std, mu + deltas)
    return kl_weight * kl + nll, (kl, nll)


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
    """One Flipout update on ``batch``: ``(new_state, info)``. Arguments as :func:`sigmabnn.vi.bbb.step`."""
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
