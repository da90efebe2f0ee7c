"""The noise model of ``likelihood="auto"``: chosen on the validation rows from the MAP starts.

An MCMC regression given ``likelihood="auto"`` (:func:`sigmabnn.fitting.spec.auto_noise_choice`) fits
the MAP starts of each noise model of :data:`sigmabnn.names.AUTO_NOISE_MODELS` and keeps the one whose
starts predict the validation rows best; the sampler then runs with that likelihood only, from those
starts. The candidates:

- ``"gaussian"``: homoscedastic Gaussian noise. Its MAP starts are :func:`sigmabnn.map.pretrain_map`
  fits of the mean network; the noise precision is the one its chains would start from
  (:func:`sigmabnn.train.gibbs.initial_noise_precision` of the pooled residuals).
- ``"hetero_student_t"``: a per-row scale output by the network, Student-t tails
  (:class:`~sigmabnn.model.likelihoods.HeteroscedasticStudentT`). Its starts are the Gaussian
  starts widened to the scale head (:func:`sigmabnn.scale_head.widen_to_scale_head`), then MAP
  fits of the wide network: the recipe of :mod:`sigmabnn.scale_head`, sharing its first step.

Score: the mean over validation rows of ``log (1/k) sum_j p(y | x, theta_j)``, the log density of the
equally weighted mixture of the ``k`` MAP networks (standardised target units; both candidates share
the transform, so their difference is that of the original units). The higher wins; a tie goes to
the Gaussian. With fewer than :data:`sigmabnn.names.MIN_RECALIBRATION_ROWS` validation rows there is
nothing to choose on and the Gaussian is kept.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn import compiler
from sigmabnn.fitting.prepare import PreparedData
from sigmabnn.fitting.spec import FitSpec
from sigmabnn.map import MAPConfig, cast_data, pretrain_map
from sigmabnn.model.build import build_bnn
from sigmabnn.model.posterior import BNN, Data
from sigmabnn.names import AUTO_NOISE_MODELS, MIN_RECALIBRATION_ROWS
from sigmabnn.scale_head import widen_to_scale_head
from sigmabnn.train.gibbs import HyperPrior, initial_noise_precision

__all__ = ["NoiseChoice", "choose_noise_model", "mixture_log_density"]


class NoiseChoice(NamedTuple):
    """The outcome of :func:`choose_noise_model`.

    Attributes:
        likelihood: the chosen noise model's name.
        val_log_density: per candidate, the validation rows' mean mixture log density (nats per row,
            standardised target units); empty when no choice was made.
        starts: the chosen model's MAP positions ``[k, d]`` (float64), the sampler's starts; ``None``
            when no choice was made.
        reason: one line saying how the choice was made.
    """

    likelihood: str
    val_log_density: dict[str, float]
    starts: np.ndarray | None
    reason: str


def mixture_log_density(bnn: BNN, positions: jax.Array, noise_precision: jax.Array, data: Data) -> float:
    """Mean over the rows of ``data`` of ``log (1/k) sum_j p(y_i | x_i, positions_j)`` (nats per row).

    ``positions`` ``[k, d]`` in ``bnn``'s flat layout; ``noise_precision`` the scalar precision of a
    homoscedastic likelihood (ignored by a heteroscedastic one).
    """

    def per_row(position: jax.Array) -> jax.Array:
        f = bnn.apply(bnn.unflatten(position), data.x)
        return jax.vmap(lambda fi, yi: bnn.likelihood.log_prob(fi[None], yi[None], noise_precision))(f, data.y)

    logp = jax.vmap(per_row)(positions)  # [k, n]
    k = logp.shape[0]
    return jnp.mean(jax.scipy.special.logsumexp(logp, axis=0) - jnp.log(k))


_mixture_log_density = compiler.jit(mixture_log_density, static_argnums=(0,))


def choose_noise_model(
    rng_key: jax.Array, spec: FitSpec, data: PreparedData, map_config: MAPConfig, num_starts: int
) -> NoiseChoice:
    """The noise model of ``spec`` (``noise_choice`` set) for ``data`` (the module docstring).

    ``map_config``: the MAP pretraining of the sampler's starts; ``num_starts``: its chains.
    """
    val = data.val_data
    n_val = 0 if val is None else int(val.y.shape[0])
    if n_val < MIN_RECALIBRATION_ROWS:
        reason = f"{n_val} validation rows, fewer than {MIN_RECALIBRATION_ROWS}: nothing to choose on, Gaussian kept"
        return NoiseChoice("gaussian", {}, None, reason)
    models = {name: _bnn(spec, data, name) for name in AUTO_NOISE_MODELS}
    gauss = models["gaussian"]
    train, val = cast_data(gauss, data.train_data), cast_data(gauss, val)
    positions = {}
    positions["gaussian"], _ = pretrain_map(
        rng_key, gauss, train, gauss.default_hyperparameters(), map_config, val, num_starts=num_starts
    )
    hetero = models["hetero_student_t"]
    widened, _ = widen_to_scale_head(hetero, positions["gaussian"], train)
    positions["hetero_student_t"], _ = pretrain_map(
        jax.random.fold_in(rng_key, 1), hetero, train, hetero.default_hyperparameters(), map_config, val,
        num_starts=num_starts, initial_positions=widened,
    )  # fmt: skip
    tau = initial_noise_precision(gauss, train, HyperPrior(), positions["gaussian"])
    scores = {
        name: float(_mixture_log_density(models[name], positions[name], tau.astype(models[name].jdtype), val))
        for name in AUTO_NOISE_MODELS
    }
    best = max(AUTO_NOISE_MODELS, key=lambda name: (scores[name], name == "gaussian"))
    listed = ", ".join(f"{name} {score:.4g}" for name, score in scores.items())
    reason = f"the MAP starts' mean log density on {n_val} validation rows (nats per row): {listed}"
    return NoiseChoice(best, scores, np.asarray(positions[best], np.float64), reason)


def _bnn(spec: FitSpec, data: PreparedData, name: str) -> BNN:
    spec = spec.with_likelihood(name)
    return build_bnn(spec.likelihood(), spec.model.architecture, data.feature_names, spec.model.activation,
                     spec.model.dtype)  # fmt: skip
