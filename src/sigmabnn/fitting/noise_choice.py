"""The noise model of ``likelihood="auto"``: the MAP starts of each, judged on the validation rows.

An MCMC regression given ``likelihood="auto"`` (:func:`sigmabnn.fitting.spec.auto_noise_choice`) fits
the MAP starts of each noise model of :data:`sigmabnn.names.AUTO_NOISE_MODELS` and prefers the one whose
starts predict the validation rows better (the Gaussian unless the other wins by a margin, below). With
``noise_choice_by="starts"`` (the default) the sampler then runs with that likelihood only, from those starts
(``"calibrated"``: the same, judged by the calibrated score below);
with ``"sampled"`` both models are sampled from their starts and the sampled posteriors decide
(:mod:`sigmabnn.fitting.sampled_choice`). The candidates:

- ``"gaussian"``: homoscedastic Gaussian noise. Its MAP starts are :func:`sigmabnn.map.pretrain_map`
  fits of the mean network; the noise precision is the one its chains would start from
  (:func:`sigmabnn.train.gibbs.initial_noise_precision` of the pooled residuals).
- ``"hetero_student_t"``: a per-row scale output by the network, Student-t tails
  (:class:`~sigmabnn.model.likelihoods.HeteroscedasticStudentT`). Its starts are the Gaussian
  starts widened to the scale head (:func:`sigmabnn.scale_head.widen_to_scale_head`), then MAP
  fits of the wide network: the recipe of :mod:`sigmabnn.scale_head`, sharing its first step.

Score: per validation row, ``log (1/k) sum_j p(y | x, theta_j)``, the log density of the equally
weighted mixture of the ``k`` MAP networks (standardised target units; both candidates share the
transform, so their difference is that of the original units). The heteroscedastic model is chosen
only when its mean beats the Gaussian's by more than ``spec.model.noise_margin`` standard errors of
the paired per-row difference (fit's ``noise_margin``, default :data:`MARGIN_SE`): the scale head has
many more ways to fit noise than one precision, and on a few dozen rows a small mean gain is noise,
and choosing it on noise costs far more than it gains (the margin was set on the defaults battery's
validation rows, ``benchmarks/defaults.py``).
Calibrated score (``noise_choice_by="calibrated"``): the same rows, each model's noise scale multiplied by the
factor of :data:`CALIBRATION_FACTORS` that fits the other validation rows best (:func:`loo_calibrated`), so
that a model is not judged by how closely its MAP networks fit their own training rows; the same margin.
Measured against the default over fresh training sets (``benchmarks/noise_calibration_seeds.py``), it was
not better, so it is an option.
With fewer than :data:`sigmabnn.names.MIN_RECALIBRATION_ROWS` validation rows there is nothing to
choose on and the Gaussian is kept.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn import compiler
from sigmabnn.fitting.prepare import PreparedData
from sigmabnn.fitting.spec import AUTO_NOISE_MARGIN, FitSpec
from sigmabnn.map import MAPConfig, cast_data, pretrain_map
from sigmabnn.model.posterior import BNN, Data
from sigmabnn.names import AUTO_NOISE_MODELS, MIN_RECALIBRATION_ROWS
from sigmabnn.scale_head import widen_to_scale_head
from sigmabnn.train.gibbs import HyperPrior, initial_noise_precision

__all__ = [
    "CALIBRATION_FACTORS", "MARGIN_SE", "NoiseChoice", "beats", "choose_noise_model", "loo_calibrated",
    "mixture_log_densities", "paired_se", "scaled_mixture_log_densities",
]  # fmt: skip


class NoiseChoice(NamedTuple):
    """The outcome of :func:`choose_noise_model`.

    Attributes:
        likelihood: the chosen noise model's name.
        val_log_density: per candidate, the validation rows' mean mixture log density (nats per row,
            standardised target units); empty when no choice was made.
        starts: the chosen model's MAP positions ``[k, d]`` (float64), the sampler's starts; ``None``
            when no choice was made.
        reason: one line saying how the choice was made.
        gain, gain_se: the heteroscedastic model's mean per-row gain over the Gaussian (nats per row) and
            its paired standard error; ``None`` when no choice was made.
        other_starts: the MAP positions ``[k, d']`` (float64) of the model not chosen (``noise_choice_by=
            "sampled"`` samples it too); ``None`` when no choice was made.
        calibrated_gain, calibrated_se: with ``noise_choice_by="calibrated"``, the same gain and paired standard
            error after each model's noise scale is calibrated on the validation rows (:func:`loo_calibrated`);
            else ``None``.
        scale_factors: with ``"calibrated"``, per candidate, the factor of its noise scale that fits all the
            validation rows best; else ``None``.
    """

    likelihood: str
    val_log_density: dict[str, float]
    starts: np.ndarray | None
    reason: str
    gain: float | None = None
    gain_se: float | None = None
    other_starts: np.ndarray | None = None
    calibrated_gain: float | None = None
    calibrated_se: float | None = None
    scale_factors: dict[str, float] | None = None


def mixture_log_densities(bnn: BNN, positions: jax.Array, noise_precision: jax.Array, data: Data) -> jax.Array:
    """Per row of ``data``, ``log (1/k) sum_j p(y_i | x_i, positions_j)`` (nats; ``[n]``, ``bnn``'s dtype).

    ``positions`` ``[k, d]`` in ``bnn``'s flat layout; ``noise_precision`` the scalar precision of a
    homoscedastic likelihood (ignored by a heteroscedastic one).
    """

    def per_row(position: jax.Array) -> jax.Array:
        f = bnn.apply(bnn.unflatten(position), data.x)
        return jax.vmap(lambda fi, yi: bnn.likelihood.log_prob(fi[None], yi[None], noise_precision))(f, data.y)

    logp = jax.vmap(per_row)(positions)  # [k, n]
    return jax.scipy.special.logsumexp(logp, axis=0) - jnp.log(logp.shape[0])


#: The heteroscedastic model must beat the Gaussian by more than this many paired standard errors, unless the
#: fit names another margin. Set on the defaults battery's validation fits (``benchmarks/defaults.py --phase
#: validate``, ``results/defaults_validation.md``) and kept over many training sets
#: (``benchmarks/noise_margin_seeds.py``; :data:`sigmabnn.fitting.spec.AUTO_NOISE_MARGIN`).
MARGIN_SE = AUTO_NOISE_MARGIN


_mixture_log_densities = compiler.jit(mixture_log_densities, static_argnums=(0,))

#: The noise-scale factors of :func:`loo_calibrated`: 1/8 to 8, log-spaced in steps of about 7 %.
CALIBRATION_FACTORS = np.exp(np.linspace(np.log(1 / 8), np.log(8), 61))


def scaled_mixture_log_densities(
    bnn: BNN, positions: jax.Array, noise_precision: jax.Array, data: Data, factors: jax.Array
) -> jax.Array:
    """:func:`mixture_log_densities` with every network's noise scale multiplied by each of ``factors`` ``[m]``:
    ``[m, n]`` (nats).

    The noise models are location-scale families, so the density with scale ``c s`` is that of
    ``mu + (y - mu) / c`` with scale ``s``, less ``t log c`` (``t`` targets): one expression for the
    Gaussian (``noise_precision / c^2``) and the heteroscedastic Student-t (each row's ``s`` times ``c``).
    """

    def per_network(position: jax.Array) -> jax.Array:
        f = bnn.apply(bnn.unflatten(position), data.x)
        mu = bnn.likelihood.mean(f)

        def at(c: jax.Array) -> jax.Array:
            yc = mu + (data.y - mu) / c
            rows = jax.vmap(lambda fi, yi: bnn.likelihood.log_prob(fi[None], yi[None], noise_precision))(f, yc)
            return rows - data.y.shape[1] * jnp.log(c)

        return jax.vmap(at)(factors)

    logp = jax.vmap(per_network)(positions)  # [k, m, n]
    return jax.scipy.special.logsumexp(logp, axis=0) - jnp.log(logp.shape[0])


_scaled_mixture_log_densities = compiler.jit(scaled_mixture_log_densities, static_argnums=(0,))


def loo_calibrated(table: np.ndarray) -> tuple[np.ndarray, int]:
    """Leave-one-out calibrated log densities ``[n]`` from ``table`` ``[m, n]`` (factor by row), and the index of
    the factor that fits all rows best.

    Row ``i`` is scored at the factor that maximises the summed log density of the other rows, so no row
    helps choose its own scale: the score of a model whose noise scale is set on held-out rows. MAP
    networks fit their training rows more closely than new ones (a Gaussian's precision from the training
    residuals is too high, a scale head too small), by an amount that differs between the noise models;
    calibrating each on the validation rows compares their means and the shapes of their noise.
    """
    totals = table.sum(axis=1)
    best = np.argmax(totals[:, None] - table, axis=0)
    return table[best, np.arange(table.shape[1])], int(np.argmax(totals))


def choose_noise_model(
    rng_key: jax.Array,
    spec: FitSpec,
    data: PreparedData,
    map_config: MAPConfig,
    num_starts: int,
    hyperprior: HyperPrior | None = None,
) -> NoiseChoice:
    """The noise model of ``spec`` (``noise_choice`` set) for ``data`` (the module docstring).

    ``map_config``: the MAP pretraining of the sampler's starts; ``num_starts``: its chains;
    ``hyperprior``: the sampler's (``None``: :class:`HyperPrior`'s defaults), whose noise prior gives the
    Gaussian starts' noise precision.
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
    tau = initial_noise_precision(gauss, train, hyperprior or HyperPrior(), positions["gaussian"])
    rows = {
        name: np.asarray(_mixture_log_densities(models[name], positions[name], tau.astype(models[name].jdtype), val),
                         np.float64)
        for name in AUTO_NOISE_MODELS
    }  # fmt: skip
    scores = {name: float(np.mean(r)) for name, r in rows.items()}
    gain = rows["hetero_student_t"] - rows["gaussian"]
    se = paired_se(gain)
    margin = spec.model.noise_margin
    calibrated, factors = None, None
    if spec.model.noise_choice_by == "calibrated":
        calibrated, factors = _calibrated_gain(models, positions, tau, val)
    best = "hetero_student_t" if beats(gain if calibrated is None else calibrated, margin) else "gaussian"
    other = next(name for name in AUTO_NOISE_MODELS if name != best)
    return NoiseChoice(
        best, scores, np.asarray(positions[best], np.float64), _reason(n_val, scores, gain, calibrated, margin),
        float(np.mean(gain)), se, np.asarray(positions[other], np.float64),
        None if calibrated is None else float(np.mean(calibrated)),
        None if calibrated is None else paired_se(calibrated), factors,
    )  # fmt: skip


def _reason(
    n_val: int, scores: dict[str, float], gain: np.ndarray, calibrated: np.ndarray | None, margin: float
) -> str:
    """The one line of :class:`NoiseChoice`: the scores, the gain and, when it judged, the calibrated gain."""
    listed = ", ".join(f"{name} {score:.4g}" for name, score in scores.items())
    judged = f"; chosen above {margin:g} SE)"
    if calibrated is not None:
        judged = (
            f"), with the noise scales calibrated leave-one-out {float(np.mean(calibrated)):+.3g} "
            f"(paired SE {paired_se(calibrated):.3g}; chosen above {margin:g} SE)"
        )
    return (
        f"the MAP starts' mean log density on {n_val} validation rows (nats per row): {listed}; "
        f"hetero_student_t - gaussian {float(np.mean(gain)):+.3g} (paired SE {paired_se(gain):.3g}{judged}"
    )


def _calibrated_gain(
    models: dict[str, BNN], positions: dict[str, jax.Array], tau: jax.Array, val: Data
) -> tuple[np.ndarray, dict[str, float]]:
    """The heteroscedastic model's per-row gain ``[n]`` with both models' noise scales calibrated leave-one-out
    (:func:`loo_calibrated`), and per model the factor that fits all the rows best."""
    calibrated, factors = {}, {}
    for name in AUTO_NOISE_MODELS:
        bnn = models[name]
        table = _scaled_mixture_log_densities(
            bnn, positions[name], tau.astype(bnn.jdtype), val, jnp.asarray(CALIBRATION_FACTORS, bnn.jdtype)
        )
        calibrated[name], best = loo_calibrated(np.asarray(table, np.float64))
        factors[name] = float(CALIBRATION_FACTORS[best])
    return calibrated["hetero_student_t"] - calibrated["gaussian"], factors


def paired_se(gain: np.ndarray) -> float:
    """Standard error of the mean of the per-row differences ``gain`` ``[n]`` (n >= 2)."""
    return float(np.std(gain, ddof=1) / np.sqrt(gain.size))


def beats(gain: np.ndarray, margin: float = MARGIN_SE) -> bool:
    """Whether per-row log-density gains ``gain`` ``[n]`` of a model over another exceed ``margin`` paired
    standard errors."""
    return bool(float(np.mean(gain)) > margin * paired_se(gain))


def _bnn(spec: FitSpec, data: PreparedData, name: str) -> BNN:
    return spec.with_likelihood(name).bnn(data.feature_names)
