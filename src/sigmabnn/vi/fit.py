"""BNN-level variational inference: configure, train (Bayes by Backprop or Flipout), draw from q.

:func:`fit_vi` is the VI counterpart of ``train.fit_mcmc``: it returns
:class:`~sigmabnn.draws.PosteriorDraws` (``positions`` ``[1, num_draws, d]``
drawn from the fitted q, hyperparameters broadcast ``[1, num_draws, ...]``),
so prediction, evaluation and the model file treat VI models exactly like
sampled ones. :func:`run_vi` returns the final :class:`~sigmabnn.vi.bbb.VIState`
(the variational parameters themselves) instead.

Minibatches. With ``batch_size = B < n`` an epoch is ``K = n // B`` minibatches
of a fresh random permutation (the ``n - K B`` left-over points change from
epoch to epoch; the likelihood is scaled by ``n / (K B)`` so the epoch still
counts ``n`` points). Minibatch ``i = 1..K`` weighs the KL term by

- ``"uniform"``: ``pi_i = 1 / K``;
- ``"blundell"``: ``pi_i = 2^(K - i) / (2^K - 1)`` (Blundell et al. 2015, sec. 3.4:
  the first minibatches of an epoch are dominated by the prior, the last by the data).

Both sum to one over an epoch, so the epoch's summed objective is -ELBO.

Start and noise. By default (``VIConfig.map``) the variational means start at
a MAP fit (:func:`sigmabnn.map.pretrain_map`, the samplers' pretraining). A
learned Gaussian noise precision is estimated in one of two ways
(``VIConfig.noise_estimate``):

- ``"map"`` (default): the mean of its Gamma conditional at the MAP residuals,
  ``(a + n/2) / (b + SSE_MAP/2)`` (the hyperprior of
  :class:`sigmabnn.mcmc.gibbs.HyperPrior`, the samplers' starting value), then held
  fixed while q is fitted;
- ``"elbo"``: a point estimate maximising the ELBO jointly with q.

Why ``"map"`` is the default: on small data sets with a network far larger than
the data need, the mean-field ELBO prefers switching most units off (q at the
prior, the mean function nearly constant) and explaining the data as noise
(over-pruning: Trippe & Turner 2018, Coker et al. 2022). On the 50-point toy
functions of :mod:`sigmabnn.workflows.toy` with a ``1-20-20-1`` tanh network,
``"elbo"`` ends with a noise std of the order of the targets' std (the truth
is 25 times smaller) and a nearly flat mean, with or without a MAP start and a
warm-up at fixed noise: the fit at the true noise has a higher -ELBO, so a
better optimiser would not change the answer. The MAP residuals measure the
noise the network can reach; ``"elbo"`` remains right when data are plentiful
relative to the network (then both agree, see ``tests/vi/test_bbb.py``).

Training runs in jitted ``lax.scan`` chunks of equal length (at most
``chunk_size`` steps; surplus steps of the last chunk are masked no-ops), with
a Python loop over chunks (progress bar, early stop on a non-finite loss).
The compiled chunk is cached on the BNN and the static settings, so repeated
fits with the same architecture and settings compile once.
"""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from sigmabnn import compiler, interrupts
from sigmabnn.draws import PosteriorDraws, broadcast_hyper
from sigmabnn.errors import InputError
from sigmabnn.map import MAPConfig, MAPError, epoch_permutation, next_minibatch, pretrain_map, take_rows
from sigmabnn.mcmc.progress import ProgressBar
from sigmabnn.model.mlp import num_params
from sigmabnn.model.posterior import BNN, Data, Hyperparameters
from sigmabnn.vi import bbb, flipout
from sigmabnn.vi.priors import VIPrior, gaussian_prior_from_bnn, validate_scale_mixture

Array = jax.Array

__all__ = [
    "METHODS",
    "VIConfig",
    "draws_from_state",
    "fit_vi",
    "kl_weights",
    "make_prior",
    "map_noise_precision",
    "predictive_moments",
    "run_vi",
]

METHODS = ("bbb", "flipout")
KL_SCHEDULES = ("uniform", "blundell")
PRIORS = ("gaussian", "scale_mixture")
NOISE_ESTIMATES = ("map", "elbo")
#: MAP starts run side by side (vmapped); q starts at the best one (local optima are common on small data).
MAP_STARTS = 4


class VIConfig(NamedTuple):
    """Settings of a variational fit.

    Attributes:
        method: ``"bbb"`` (shared weight sample per minibatch) or ``"flipout"``.
        num_steps: optimiser steps (minibatch updates).
        learning_rate: Adam step size at the start.
        final_learning_rate: if set, the step size decays exponentially to this value at ``num_steps``.
        num_mc_samples: weight draws M per step for the expected log-likelihood (Maz 2018 uses 10).
        batch_size: minibatch size; ``None`` (or >= n) for full-batch training.
        kl_schedule: ``"uniform"`` or ``"blundell"`` KL weights per minibatch (module docstring).
        prior: ``"gaussian"`` (the BNN's per-layer Gaussian prior, closed-form KL) or
            ``"scale_mixture"`` (Blundell et al.'s mixture below, Monte-Carlo KL).
        mixture_weight: ``pi`` of the scale mixture, in (0, 1).
        mixture_std1: std of the wide component.
        mixture_std2: std of the narrow component (default ``exp(-6)``, Blundell et al.'s grid).
        learn_noise: estimate the Gaussian noise precision (see ``noise_estimate``); ``None``
            follows ``bnn.likelihood.learn_precision``; ``False`` keeps the likelihood's value.
        noise_estimate: ``"map"`` (Gamma-conditional mean at the MAP residuals, then fixed) or
            ``"elbo"`` (optimised jointly with q); see the module docstring for why ``"map"``
            is the default. ``"map"`` uses the residuals of ``init_position`` when one is given.
        map: MAP pretraining of the means' start (:class:`sigmabnn.map.MAPConfig`); ``None``
            starts from a Glorot draw (then ``noise_estimate`` must be ``"elbo"``). A MAP config
            without a ``batch_size`` takes the VI fit's: with minibatches, a full-batch start on
            a large data set would cost many times the variational fit itself.
        noise_shape, noise_rate: Gamma hyperprior of the noise precision used by
            ``noise_estimate="map"`` (defaults of :class:`sigmabnn.mcmc.gibbs.HyperPrior`).
        init_std_ratio: initial ``sigma = ratio * min(glorot_std, prior_std)`` (see :mod:`sigmabnn.vi.meanfield`).
        num_draws: draws from q stored in the returned :class:`PosteriorDraws`.
        chunk_size: steps per jitted ``lax.scan`` chunk (progress granularity).
    """

    method: str = "bbb"
    num_steps: int = 5000
    learning_rate: float = 1e-2
    final_learning_rate: float | None = None
    num_mc_samples: int = 10
    batch_size: int | None = None
    kl_schedule: str = "uniform"
    prior: str = "gaussian"
    mixture_weight: float = 0.5
    mixture_std1: float = 1.0
    mixture_std2: float = math.exp(-6.0)
    learn_noise: bool | None = None
    noise_estimate: str = "map"
    map: MAPConfig | None = MAPConfig(num_steps=2000, patience=None)
    noise_shape: float = 1.0
    noise_rate: float = 0.01
    init_std_ratio: float = 0.1
    num_draws: int = 1000
    chunk_size: int = 500


def kl_weights(num_batches: int, schedule: str = "uniform", dtype: jnp.dtype = jnp.float64) -> Array:
    """KL weights ``[num_batches]`` of the minibatches of one epoch (sum to one).

    ``"blundell"``: ``2^(K - i) / (2^K - 1) = 2^-i / (1 - 2^-K)``, evaluated in the second
    form so large K does not overflow (late weights underflow to 0, as intended).
    """
    if num_batches < 1:
        raise ValueError(f"number of minibatches must be >= 1, got {num_batches}")
    if schedule == "uniform":
        return jnp.full((num_batches,), 1.0 / num_batches, dtype)
    if schedule == "blundell":
        i = np.arange(1, num_batches + 1, dtype=np.float64)
        w = np.exp2(-i) / -np.expm1(-num_batches * np.log(2.0))
        return jnp.asarray(w, dtype)
    raise ValueError(f"unknown kl_schedule {schedule!r}; choose from {', '.join(KL_SCHEDULES)}")


def make_prior(bnn: BNN, config: VIConfig) -> VIPrior:
    """The prior named by ``config.prior`` (Gaussian: the BNN's per-layer precisions)."""
    if config.prior == "gaussian":
        return gaussian_prior_from_bnn(bnn)
    if config.prior == "scale_mixture":
        return validate_scale_mixture(config.mixture_weight, config.mixture_std1, config.mixture_std2)
    raise ValueError(f"unknown prior {config.prior!r}; choose from {', '.join(PRIORS)}")


def _learn_noise(bnn: BNN, config: VIConfig) -> bool:
    learn = config.learn_noise
    if learn is None:
        learn = bool(getattr(bnn.likelihood, "learn_precision", False))
    if learn and bnn.likelihood.name != "gaussian":
        raise ValueError(f"learn_noise needs the homoscedastic 'gaussian' likelihood, not {bnn.likelihood.name!r}")
    return bool(learn)


def _validate(bnn: BNN, data: Data, config: VIConfig) -> Data:
    if config.method not in METHODS:
        raise ValueError(f"unknown VI method {config.method!r}; choose from {', '.join(METHODS)}")
    if config.noise_estimate not in NOISE_ESTIMATES:
        raise ValueError(f"unknown noise_estimate {config.noise_estimate!r}; choose from {', '.join(NOISE_ESTIMATES)}")
    if not (config.noise_shape > 0 and config.noise_rate > 0):
        shape, rate = config.noise_shape, config.noise_rate
        raise ValueError(f"noise hyperprior needs positive shape and rate, got {shape}, {rate}")
    if config.kl_schedule not in KL_SCHEDULES:
        raise ValueError(f"unknown kl_schedule {config.kl_schedule!r}; choose from {', '.join(KL_SCHEDULES)}")
    for name in ("num_steps", "num_mc_samples", "num_draws", "chunk_size"):
        if int(getattr(config, name)) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(config, name)}")
    if not config.learning_rate > 0:
        raise ValueError(f"learning_rate must be positive, got {config.learning_rate}")
    if config.final_learning_rate is not None and not config.final_learning_rate > 0:
        raise ValueError(f"final_learning_rate must be positive, got {config.final_learning_rate}")
    if config.batch_size is not None and int(config.batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {config.batch_size}")
    dtype = bnn.jdtype
    x = jnp.asarray(data.x, dtype)
    if x.ndim != 2 or x.shape[1] != bnn.mlp.input_dim:
        raise InputError(f"inputs have shape {tuple(x.shape)}, the network expects [n, {bnn.mlp.input_dim}]")
    categorical = bnn.likelihood.name == "categorical"
    y = jnp.asarray(data.y) if categorical else jnp.asarray(data.y, dtype)
    if y.shape[0] != x.shape[0]:
        raise InputError(f"{x.shape[0]} input rows but {y.shape[0]} target rows")
    if not categorical:
        target_dim = y.shape[1] if y.ndim == 2 else 1
        need = bnn.likelihood.output_dim(target_dim)
        if bnn.mlp.output_dim != need:
            raise InputError(
                f"the {bnn.likelihood.name} likelihood needs {need} network outputs for {target_dim} target(s), "
                f"the architecture has {bnn.mlp.output_dim}"
            )
    noise_std = None if data.noise_std is None else jnp.asarray(data.noise_std, dtype)
    if bnn.likelihood.name == "known_noise" and noise_std is None:
        raise InputError("the known-noise likelihood needs per-point noise_std in the data")
    return Data(x, y, noise_std)


class _Static(NamedTuple):
    """Hashable settings of the jitted training chunk (a change recompiles it)."""

    bnn: BNN
    method: str
    num_mc_samples: int
    learn_noise: bool
    num_steps: int
    learning_rate: float
    final_learning_rate: float | None
    num_batches: int
    batch_size: int
    likelihood_scale: float


def _optimizer(static: _Static) -> optax.GradientTransformation:
    """Adam, with an exponential decay of the step size to ``final_learning_rate`` when set."""
    lr = static.learning_rate
    if static.final_learning_rate is None:
        return optax.adam(lr)
    return optax.adam(optax.exponential_decay(lr, static.num_steps, static.final_learning_rate / lr))


@partial(compiler.jit, static_argnums=0)
def _run_chunk(
    static: _Static,
    state: bbb.VIState,
    data: Data,
    steps: Array,
    prior: VIPrior,
    weights: Array,
    key_data: Array,
    key_train: Array,
) -> tuple[bbb.VIState, bbb.VIInfo]:
    """``lax.scan`` over global step indices ``steps``; indices >= ``num_steps`` leave the state unchanged."""
    optimizer = _optimizer(static)
    step_fn = bbb.step if static.method == "bbb" else flipout.step
    n = data.x.shape[0]
    full_batch = static.batch_size == n

    def body(carry: tuple[bbb.VIState, Array | None], t: Array) -> tuple[tuple, bbb.VIInfo]:
        state, perm = carry
        i = t % static.num_batches
        if full_batch:
            batch = data
        else:
            perm, rows = next_minibatch(key_data, perm, t, steps[0], static.num_batches, static.batch_size, n)
            batch = take_rows(data, rows)
        new, info = step_fn(
            jax.random.fold_in(key_train, t),
            state,
            batch,
            bnn=static.bnn,
            optimizer=optimizer,
            prior=prior,
            kl_weight=weights[i],
            likelihood_scale=static.likelihood_scale,
            num_mc_samples=static.num_mc_samples,
            learn_noise=static.learn_noise,
        )
        active = t < static.num_steps
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(active, a, b), new, state)
        return (new, perm), info

    perm0 = None if full_batch else epoch_permutation(key_data, steps[0], static.num_batches, n)
    (state, _), info = jax.lax.scan(body, (state, perm0), steps)
    return state, info


def run_vi(
    rng_key: Array,
    bnn: BNN,
    data: Data,
    config: VIConfig | None = None,
    progress: bool = True,
    init_position: Array | None = None,
) -> tuple[bbb.VIState, bbb.VIInfo]:
    """Optimise the ELBO; returns the final state and per-step diagnostics (leaves ``[num_steps]``).

    Args:
        rng_key: JAX PRNG key.
        bnn: the network, prior precisions, likelihood and dtype.
        data: training data (cast to the BNN's dtype here).
        config: :class:`VIConfig` (default settings when None).
        progress: show a progress bar on stderr (only when it is a terminal).
        init_position: optional ``[d]`` starting means (e.g. from MAP pretraining).

    Raises:
        ValueError / InputError: one-line message for bad settings or data; also when the
        objective becomes non-finite (lower the learning rate).
    """
    config = VIConfig() if config is None else config
    data = _validate(bnn, data, config)
    prior = make_prior(bnn, config)
    n = int(data.x.shape[0])
    batch_size = n if config.batch_size is None else min(int(config.batch_size), n)
    num_batches = n // batch_size
    num_steps = int(config.num_steps)
    static = _Static(
        bnn=bnn,
        method=config.method,
        num_mc_samples=int(config.num_mc_samples),
        learn_noise=_learn_noise(bnn, config) and config.noise_estimate == "elbo",
        num_steps=num_steps,
        learning_rate=float(config.learning_rate),
        final_learning_rate=None if config.final_learning_rate is None else float(config.final_learning_rate),
        num_batches=num_batches,
        batch_size=batch_size,
        likelihood_scale=n / (num_batches * batch_size),
    )
    weights = kl_weights(num_batches, config.kl_schedule, bnn.jdtype)

    key_init, key_data, key_train = jax.random.split(rng_key, 3)
    prior_std = jnp.sqrt(jnp.broadcast_to(prior.variance(), (num_params(bnn.mlp),)))
    noise_precision = None
    if init_position is None and config.map is not None:
        hyper = bnn.default_hyperparameters()
        map_config = config.map
        if map_config.batch_size is None and batch_size < n:
            map_config = map_config._replace(batch_size=batch_size)
        try:
            positions, map_info = pretrain_map(key_init, bnn, data, hyper, map_config, num_starts=MAP_STARTS)
        except MAPError as err:
            raise InputError(str(err)) from None
        init_position = positions[int(np.argmin(map_info.best_loss))]
    if _learn_noise(bnn, config) and config.noise_estimate == "map":
        if init_position is None:
            raise ValueError("noise_estimate='map' needs MAP pretraining or an init_position; use 'elbo' otherwise")
        init_position = jnp.asarray(init_position, bnn.jdtype)
        noise_precision = map_noise_precision(bnn, data, init_position, config.noise_shape, config.noise_rate)
    state = bbb.init(
        key_init,
        bnn,
        _optimizer(static),
        init_position=init_position,
        init_std_ratio=config.init_std_ratio,
        noise_precision=noise_precision,
        prior_std=prior_std.astype(bnn.jdtype),
    )

    # equal chunks (one compilation); the last one may run a few masked no-op steps
    num_chunks = -(-num_steps // int(config.chunk_size))
    chunk = -(-num_steps // num_chunks)
    infos = []
    with ProgressBar(num_steps, desc=f"vi-{config.method}", enabled=progress) as bar:
        for start in range(0, num_steps, chunk):
            steps = jnp.arange(start, start + chunk, dtype=jnp.int32)
            state, info = _run_chunk(static, state, data, steps, prior, weights, key_data, key_train)
            done = min(chunk, num_steps - start)
            info = jax.tree_util.tree_map(lambda a, done=done: a[:done], info)
            infos.append(info)
            bar.update(done)
            loss = np.asarray(info.loss)
            if not np.all(np.isfinite(loss)):
                bad = start + int(np.argmin(np.isfinite(loss)))
                raise InputError(
                    f"variational objective became non-finite at step {bad}; lower the learning rate "
                    f"(now {config.learning_rate}) or check the data scaling"
                )
            bar.set_description(f"vi-{config.method} loss {float(loss[-1]):.4g}")
            interrupts.raise_if_pending()  # a signal whose exception was swallowed (sigmabnn.interrupts)
    info = jax.tree_util.tree_map(lambda *a: jnp.concatenate(a), *infos)
    return state, info


def map_noise_precision(bnn: BNN, data: Data, position: Array, shape: float, rate: float) -> Array:
    """Mean ``(shape + n/2) / (rate + SSE/2)`` of the Gamma conditional of the noise precision at ``position``.

    ``SSE`` is the sum of squared residuals of the network ``position`` ``[d]`` on ``data`` (model units);
    ``n`` counts target entries. Returns a scalar of the run's dtype.
    """
    f = bnn.apply(bnn.unflatten(position), data.x)
    y = data.y if data.y.ndim == 2 else data.y[:, None]
    sse = jnp.sum(jnp.square(y - f))
    return ((shape + 0.5 * y.size) / (rate + 0.5 * sse)).astype(bnn.jdtype)


def draws_from_state(rng_key: Array, bnn: BNN, state: bbb.VIState, config: VIConfig) -> PosteriorDraws:
    """``config.num_draws`` draws from q as :class:`PosteriorDraws` ``[1, num_draws, ...]``.

    Hyperparameters: the fitted (or fixed) noise precision; the weight / bias precisions are
    the Gaussian prior's, or for the scale mixture the precision of a Gaussian with the
    mixture's variance ``1 / (pi s1^2 + (1 - pi) s2^2)``.
    """
    num_draws = int(config.num_draws)
    positions = bbb.sample(rng_key, state, num_draws)[None]
    hyper = bnn.default_hyperparameters()
    if config.prior == "scale_mixture":
        prec = 1.0 / make_prior(bnn, config).variance()
        hyper = hyper._replace(
            weight_precision=jnp.full_like(hyper.weight_precision, prec),
            bias_precision=jnp.full_like(hyper.bias_precision, prec),
        )
    hyper = hyper._replace(noise_precision=jnp.exp(state.log_noise_precision).astype(bnn.jdtype))
    return PosteriorDraws(positions, broadcast_hyper(hyper, 1, num_draws))


def fit_vi(
    rng_key: Array,
    bnn: BNN,
    data: Data,
    config: VIConfig | None = None,
    progress: bool = True,
    init_position: Array | None = None,
) -> tuple[PosteriorDraws, bbb.VIInfo]:
    """Fit q by Bayes by Backprop or Flipout and return draws from it.

    Returns:
        ``(draws, info)``: ``draws.positions`` ``[1, num_draws, d]`` from q, hyperparameters
        broadcast ``[1, num_draws, ...]`` (see :func:`draws_from_state`); ``info`` is
        :class:`~sigmabnn.vi.bbb.VIInfo` with leaves ``[num_steps]``.
    """
    config = VIConfig() if config is None else config
    key_fit, key_draws = jax.random.split(rng_key)
    state, info = run_vi(key_fit, bnn, data, config, progress=progress, init_position=init_position)
    return draws_from_state(key_draws, bnn, state, config), info


def predictive_moments(
    bnn: BNN, positions: Array, hyper: Hyperparameters, x: Array, noise_std: Array | None = None
) -> tuple[Array, Array, Array]:
    """Predictive mean and the aleatoric / epistemic variance split (diagonal of eq. 25 of the VI notes).

    For T networks ``w_t`` with means ``mu_t = E[y | x, w_t]`` and variances ``Sigma_t = Var(y | x, w_t)``:
    ``aleatoric = (1/T) sum_t Sigma_t`` and ``epistemic = (1/T) sum_t (mu_t - mu_bar)^2``.

    Args:
        bnn: the network and likelihood (heteroscedastic heads give input-dependent ``Sigma_t``).
        positions: ``[T, d]`` parameter draws.
        hyper: hyperparameters with leading ``[T]`` axes (e.g. ``PosteriorDraws.flat()[1]``).
        x: inputs ``[n, input_dim]`` (model space).
        noise_std: known per-point noise std for the known-noise likelihood.

    Returns:
        ``(mean, aleatoric_variance, epistemic_variance)``, each ``[n, target_dim]``.
    """
    x = jnp.asarray(x, bnn.jdtype)

    def one(position: Array, noise_precision: Array) -> tuple[Array, Array]:
        f = bnn.apply(bnn.unflatten(position), x)
        return bnn.likelihood.mean(f), bnn.likelihood.aleatoric_variance(f, noise_precision, noise_std)

    means, variances = jax.vmap(one)(positions, hyper.noise_precision)
    mean = jnp.mean(means, axis=0)
    return mean, jnp.mean(variances, axis=0), jnp.mean(jnp.square(means - mean), axis=0)
