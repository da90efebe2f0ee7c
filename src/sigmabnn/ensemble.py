"""Deep ensembles: independently trained MAP networks with a learned variance head.

Lakshminarayanan, Pritzel & Blundell (2017), "Simple and scalable predictive
uncertainty estimation using deep ensembles": ``M`` networks (``M = 5`` in
the paper), each from its own random initialisation and minibatch order, each
trained by minimising the Gaussian negative log-likelihood of a
mean-and-variance head, ``-log N(y; mu(x), sigma^2(x))``. Their predictive
distribution is the equally weighted mixture of the members' Gaussians, so it
has exactly the form of every other sigmabnn model: the members are stored as
:class:`~sigmabnn.draws.PosteriorDraws` (``positions`` ``[1, M, d]``: one
"chain" of ``M`` networks, as variational draws are stored), the likelihood is
:class:`~sigmabnn.model.likelihoods.HeteroscedasticGaussian`, and
:mod:`sigmabnn.predict` reports

- ``mean = (1/M) sum_m mu_m``,
- ``epistemic_std^2 = (1/M) sum_m (mu_m - mean)^2`` (the spread of the members' means),
- ``aleatoric_std^2 = (1/M) sum_m sigma_m^2`` (the mean of the members' variances),

with intervals from the mixture's quantiles, without any special case.

Training reuses :func:`sigmabnn.map.pretrain_map`: the members are its
``num_starts`` starts, optimised together (``jax.vmap`` over the member axis,
Optax Adam), each with its own PRNG key (initial weights, minibatch order),
early-stopped on its own monitored loss. The objective is the BNN's negative
log-posterior, i.e. the NLL plus the BNN's Gaussian prior acting as L2 weight
decay (with :func:`sigmabnn.api.fit`'s unit prior precision on standardised
data, a mild regulariser). The paper's optional adversarial-example smoothing
is not implemented.

A classifier's ensemble (:class:`~sigmabnn.model.likelihoods.Categorical` likelihood) has no
variance head: its members are MAP networks of the categorical NLL plus the prior, each from its
own random start, and its predictive is the mean of the members' class probabilities.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.draws import PosteriorDraws, broadcast_hyper
from sigmabnn.map import MAPConfig, MAPInfo, pretrain_map
from sigmabnn.model.build import without_variance_head
from sigmabnn.model.likelihoods import Categorical, HeteroscedasticGaussian
from sigmabnn.model.mlp import Layer, flatten
from sigmabnn.model.posterior import BNN, Data
from sigmabnn.vi.meanfield import rho_from_std as inverse_softplus

Array = jax.Array

__all__ = ["EnsembleConfig", "EnsembleInfo", "fit_ensemble"]


class EnsembleConfig(NamedTuple):
    """Settings of :func:`fit_ensemble`.

    Attributes:
        num_members: networks in the ensemble (``M``; the paper uses 5).
        training: how each member is trained (:class:`~sigmabnn.map.MAPConfig`:
            Adam step size, steps or epochs, minibatch size, early-stopping
            patience on the monitored loss, initialisation).
    """

    num_members: int = 5
    training: MAPConfig = MAPConfig()

    @classmethod
    def from_options(cls, **options: object) -> EnsembleConfig:
        """A config from flat options: ``num_members`` and any :class:`~sigmabnn.map.MAPConfig` field.

        ``EnsembleConfig.from_options(num_members=5, num_steps=500, batch_size=128)``.
        Raises ``ValueError`` naming an unknown option.
        """
        unknown = sorted(set(options) - {"num_members"} - set(MAPConfig._fields))
        if unknown:
            valid = ", ".join(("num_members", *MAPConfig._fields))
            raise ValueError(f"unknown ensemble option {unknown[0]!r}; valid: {valid}")
        training = MAPConfig()._replace(**{k: v for k, v in options.items() if k != "num_members"})
        return cls(num_members=int(options.get("num_members", 5)), training=training)

    def flat(self) -> dict[str, object]:
        """``num_members`` and the training settings as one flat dict (for reports and model files)."""
        return {"num_members": int(self.num_members), **self.training._asdict()}


class EnsembleInfo(NamedTuple):
    """What happened in :func:`fit_ensemble`.

    Attributes:
        map_info: the per-member training record (:class:`~sigmabnn.map.MAPInfo`;
            its start axis is the member axis).
        seconds: wall time of training (s, including compilation).
    """

    map_info: MAPInfo
    seconds: float


def _check(bnn: BNN, config: EnsembleConfig) -> None:
    if not isinstance(bnn.likelihood, HeteroscedasticGaussian | Categorical):
        raise ValueError(
            "a deep ensemble needs the heteroscedastic (learned variance) or the categorical likelihood, "
            f"got {bnn.likelihood.name!r}"
        )
    if int(config.num_members) < 1:
        raise ValueError(f"num_members must be >= 1, got {config.num_members}")


def mean_first_starts(
    rng_key: Array, bnn: BNN, data: Data, training: MAPConfig, num_members: int, val_data: Data | None = None
) -> tuple[Array, MAPInfo]:
    """Members' starts ``[M, d]``: each a MAP fit of the mean alone, its std output set to the residuals' RMS.

    Trained from random weights, a mean-and-variance network can explain a badly fitted region by a
    large variance instead of fitting it: the mean's NLL gradient is scaled by ``1 / sigma^2``, so
    where the variance grows the mean stops learning (Seitzer et al. 2022, "On the pitfalls of
    heteroscedastic uncertainty estimation with probabilistic neural networks"). On a few hundred
    rows of a steep function the members then disagree by far more than their error. So each member
    first fits its mean network (the same hidden layers) under the homoscedastic Gaussian
    likelihood, then starts its std output at zero kernel and the bias giving the root mean square
    of that fit's residuals on the validation rows (the noise a new point sees; the training rows'
    residuals when there are none), from where the full mean-and-variance NLL is trained.
    """
    lik = bnn.likelihood
    mean_bnn = without_variance_head(bnn)
    positions, info = pretrain_map(
        rng_key, mean_bnn, data, mean_bnn.default_hyperparameters(), training, val_data, num_starts=num_members
    )
    ref = data if val_data is None else val_data

    def widen(position: Array) -> Array:
        layers = mean_bnn.unflatten(position)
        rms = jnp.sqrt(jnp.mean(jnp.square(ref.y - mean_bnn.apply(layers, ref.x)), axis=0))
        raw = inverse_softplus(jnp.maximum(rms - lik.min_std, 0.1 * lik.min_std))
        last = layers[-1]
        head = Layer(
            jnp.concatenate([last.kernel, jnp.zeros_like(last.kernel)], axis=1),
            jnp.concatenate([last.bias, raw.astype(last.bias.dtype)]),
        )
        return flatten((*layers[:-1], head))

    return jax.vmap(widen)(positions).astype(bnn.jdtype), info


def fit_ensemble(
    rng_key: Array,
    bnn: BNN,
    data: Data,
    config: EnsembleConfig | None = None,
    val_data: Data | None = None,
    initial_positions: Array | None = None,
) -> tuple[PosteriorDraws, EnsembleInfo]:
    """Train a deep ensemble (module docstring): ``M`` MAP networks, vmapped, each from its own key.

    Args:
        rng_key: PRNG key; member ``m``'s initial weights and minibatch order
            come from its own split of it.
        bnn: the model; its likelihood must be
            :class:`~sigmabnn.model.likelihoods.HeteroscedasticGaussian` and its
            prior is the L2 penalty (at ``bnn.default_hyperparameters()``).
        data: training data in model space (``x`` ``[n, p]``, ``y`` ``[n, t]``).
        config: :class:`EnsembleConfig` (defaults when ``None``).
        val_data: optional validation data for early stopping.
        initial_positions: optional ``[M, d]`` starts of the members' full training (e.g. the
            members of an earlier fit, to refit on more rows); then no mean-first fit is run.

    Returns:
        ``(PosteriorDraws, EnsembleInfo)``: positions ``[1, M, d]`` and the
        default hyperparameters broadcast to ``[1, M, ...]`` (the noise
        precision is unused by the learned-variance likelihood).

    Raises:
        ValueError: a likelihood without a variance head or invalid settings (one-line message).
    """
    config = EnsembleConfig() if config is None else config
    _check(bnn, config)
    hyper = bnn.default_hyperparameters()
    m = int(config.num_members)
    t0 = time.perf_counter()
    mean_key, full_key = jax.random.split(rng_key)
    if isinstance(bnn.likelihood, Categorical) and initial_positions is None:
        # no variance head: each member from its random start
        positions, map_info = pretrain_map(full_key, bnn, data, hyper, config.training, val_data, num_starts=m)
    else:
        if initial_positions is None:
            starts, mean_info = mean_first_starts(mean_key, bnn, data, config.training, m, val_data)
            mean_evals = mean_info.num_grad_evals
        else:
            starts, mean_evals = jnp.asarray(initial_positions, bnn.jdtype), 0
        positions, map_info = pretrain_map(
            full_key, bnn, data, hyper, config.training, val_data, num_starts=m, initial_positions=starts
        )
        map_info = map_info._replace(num_grad_evals=map_info.num_grad_evals + mean_evals)
    positions = jax.block_until_ready(positions)
    seconds = time.perf_counter() - t0
    draws = PosteriorDraws(positions=jnp.asarray(positions)[None], hyper=broadcast_hyper(hyper, 1, m))
    return draws, EnsembleInfo(map_info=map_info, seconds=seconds)
