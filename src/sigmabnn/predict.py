"""The predictive distribution of a fitted BNN: mean, epistemic and aleatoric spread, intervals.

For every sampled network ``t = 1..T`` (all chains and draws) and input
``x``, the likelihood gives a Gaussian ``N(mu_t(x), sigma_t^2(x))`` in the
model space, with ``mu_t = likelihood.mean(f_t(x))`` and ``sigma_t^2 =
likelihood.aleatoric_variance(f_t(x), lambda_t)`` using that draw's noise
precision ``lambda_t``. The predictive distribution is the equally weighted
mixture of these T Gaussians.

In the *log space* of the target (``log10 y`` for a log target, else ``y``;
the model space with the standardisation undone) we report

- ``mean = (1/T) sum_t mu_t``                       (eq. 4.19 of the thesis draft)
- ``epistemic_std^2 = (1/T) sum_t (mu_t - mean)^2``  (eq. 4.20 with 1/T instead of 1/(T-1))
- ``aleatoric_std^2 = (1/T) sum_t sigma_t^2``
- ``std^2 = epistemic_std^2 + aleatoric_std^2``     (the mixture variance)
- ``covariance`` ``[n, t, t]`` across outputs = the mixture covariance,
  ``(1/T) sum_t (mu_t mu_t^T + diag sigma_t^2) - mean mean^T`` (on request).

In the *original* space of a log target, ``Y = 10^U`` with ``U ~ N(mu_t, sigma_t^2)``
per draw is log-normal, so its moments are exact: with ``a = ln 10``,
``E[Y | t] = exp(a mu_t + a^2 sigma_t^2 / 2)`` and
``Var[Y | t] = (exp(a^2 sigma_t^2) - 1) E[Y | t]^2``; the mean, epistemic
(``Var_t E[Y|t]``) and aleatoric (``E_t Var[Y|t]``) parts follow by the law
of total variance. Nothing is approximated by a Gaussian in the original space.

Student-t noise (:class:`~sigmabnn.model.likelihoods.StudentT`, ``nu`` degrees of
freedom): the latent per-point weight of a new point is integrated out, so each
network's predictive is a Student-t ``t_nu(mu_t, s_t)`` with scale ``s_t = 1 / sqrt(tau_t)``
(model space) and variance ``sigma_t^2 = nu / (nu - 2) s_t^2``. With
:class:`~sigmabnn.model.likelihoods.HeteroscedasticStudentT` the scale is the network's
own output, ``s_t(x)``, per point and per network; everything below is per point and
network, so that case is exact in the same way. The mixture moments
above hold as written, intervals come from t draws (below) and the log predictive
density is that of the mixture of t's. ``10^U`` has no finite moments when ``U`` is
t-distributed, so in the original space the moments are those of the log-normals with
each network's log-space mean and variance (moment matching; the intervals, being
quantiles, remain exact).

Intervals are *central predictive quantiles*, estimated from samples of the
mixture that include the noise: sample ``s`` uses network ``s mod T`` (every
network contributes equally when ``num_noise_samples`` is a multiple of T)
and a standard-normal draw (Student-t noise: a ``t_nu`` draw scaled by ``s_t``).
When ``S = num_noise_samples`` is a multiple of 2T (the default S for fewer than
2,000 networks), samples ``s`` and ``s + S / 2`` share their network and take
opposite standard-normal draws (antithetic variates): every sample is still an
exact draw of the mixture, but not independent of its partner. For a central
quantile ``q`` the indicators ``1{mu + sigma z <= q}`` and ``1{mu - sigma z <= q}``
are negatively correlated for every component, so the pairs lower the
Monte-Carlo error of every quantile (``tests/test_predict_paths.py`` checks it
against independent draws) and halve the normal draws.
Samples are drawn in log space and transformed
(``10**u`` is monotone, so the original-space quantiles are the transformed
samples' quantiles). The noise for point ``i`` comes from
``jax.random.fold_in(rng_key, i)``, so results do not depend on the chunking;
the default key is ``jax.random.key(DEFAULT_SEED)`` with ``DEFAULT_SEED = 0``.

Recalibrated intervals: a model holding a :class:`~sigmabnn.calibration.Calibration`
(quantile recalibration, Kuleshov, Fenner & Ermon 2018; :mod:`sigmabnn.recalibration`)
reads its central interval at level ``c`` off the same samples at the mapped levels
``R^{-1}((1 -+ c) / 2)``; ``predict(..., calibrated=False)`` gives the raw ones.
Mapped tail levels can be far smaller than ``1 / 2000``, so the default sample count
is then raised (``TAIL_SAMPLES``). The exact PIT ``F(y)`` of the mixture is
:func:`predictive_cdf`.

Performance: the points are processed in chunks whose size is a power of two
(the last chunk is padded), at most the memory budget's and ``chunk_size``, and
for a small call the next power of two of ``n / PREDICT_THREADS`` (so ten points
are two chunks of 8, not one padded to a large chunk); a function is compiled
once per chunk size and reused across calls; memory per chunk is
bounded (about ``2**21`` floats for the largest intermediate: ``G x chunk x
width`` or ``S x chunk x t``). Inside a chunk the networks run in groups of
about ``NETWORK_GROUP`` (a ``lax.scan``; each group with
:func:`~sigmabnn.model.mlp.forward_ensemble`, hidden units points-last), so a
group's hidden units stay in the CPU caches (the kernels are stored transposed,
``[out, in]``, on the device). The networks, moments and noise
samples run in one jitted function per chunk, whose results come back to the
host packed in one array (one transfer); the samples are sorted for the
quantiles on the host (NumPy's sort is much faster than XLA's on CPU). Chunks
run side by side in ``PREDICT_THREADS`` threads (one XLA computation keeps
about one core busy); with one thread, the device computes the next chunk
while the host sorts this one. A model's arrays are copied to the device once
per model object. Without intervals (``levels=()``) no noise is drawn: the
network pass and the moments are all the work. On a CPU the network pass
dominates: 1,000 ``5-20-20-1`` networks evaluate 40,000 tanh and 400,000
multiply-adds per point. ``benchmarks/predict.py`` measures points per second,
latency and load time, and where a chunk's time goes.
The networks run in the model's dtype; everything after the network output
(transforms, moments, quantiles) is computed in float64.
"""

from __future__ import annotations

import functools
import math
import os
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.errors import DataError, InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.model.likelihoods import noise_df
from sigmabnn.model.mlp import forward_ensemble, out_in_layers
from sigmabnn.model.posterior import BNN

Array = jax.Array

__all__ = [
    "DEFAULT_LEVELS",
    "DEFAULT_SEED",
    "Prediction",
    "feature_matrix_for",
    "log_predictive_density",
    "component_cdf",
    "mixture_cdf",
    "per_draw_predictive",
    "predict",
    "predictive_cdf",
]

DEFAULT_SEED = 0
DEFAULT_LEVELS = (0.68, 0.95)
#: Default number of predictive samples per point is the smallest even multiple of T that is >= this
#: (or T, for more networks than this).
MIN_NOISE_SAMPLES = 2000
#: With a calibration, the default sample count is raised so that the smallest mapped tail level
#: ``p`` has about this many samples beyond it (``S >= TAIL_SAMPLES / p``), capped at
#: ``MAX_NOISE_SAMPLES``; ``benchmarks/recalibration.py`` measures the resulting coverage error.
TAIL_SAMPLES = 10
MAX_NOISE_SAMPLES = 50000
#: Bound on the largest per-chunk intermediate, in array elements (for 1,000 5-20-20-1
#: networks: chunks of 256 points, bounded by the ``[T, chunk, t]`` per-network moments).
CHUNK_ELEMENT_BUDGET = 2**21
#: Networks evaluated together inside a chunk (:func:`_per_draw`): a group's hidden units
#: (``NETWORK_GROUP x width x chunk``) stay in the CPU caches. Tuned on 1,000 ``5-20-20-1`` and
#: ``5-50-50-50-1`` networks with chunks of 256 points, moments only (ad hoc scan of 4-200 networks
#: per group): groups of 6-12 ran fastest for both (float32 ~1.5x, float64 ~1.2x groups of 50, which
#: had run 1.5-2x faster than all 1,000 at once); the intervals' path is insensitive to it.
NETWORK_GROUP = 10
#: Chunks run side by side in this many threads (one XLA computation per chunk keeps about one
#: core busy on a CPU; the host's sort for the intervals runs in the same threads). The usable
#: cores, at most 4.
PREDICT_THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))
_LN10 = math.log(10.0)


class Prediction(NamedTuple):
    """Predictive summaries for ``n`` points and ``t`` targets (NumPy float64 arrays).

    Attributes:
        mean: ``[n, t]`` predictive mean.
        std: ``[n, t]`` total predictive std (``sqrt(epistemic^2 + aleatoric^2)``).
        epistemic_std: ``[n, t]`` spread of the networks' means.
        aleatoric_std: ``[n, t]`` noise std, ``sqrt`` of the mean noise variance.
        lower, upper: level -> ``[n, t]`` central interval bounds from predictive
            quantiles ``(1 - level) / 2`` and ``(1 + level) / 2`` (for a recalibrated
            model, at the calibration's mapped levels; see :func:`predict`).
        levels: the interval levels, in the order asked.
        covariance: ``[n, t, t]`` predictive covariance across outputs, or ``None``
            unless asked for.
        samples: ``[S, n, t]`` predictive samples (noise included), or ``None``
            unless asked for.
        log_space: for a log target, the same summaries of ``log10 y``
            (whose ``log_space`` is ``None``); ``None`` otherwise.
    """

    mean: np.ndarray
    std: np.ndarray
    epistemic_std: np.ndarray
    aleatoric_std: np.ndarray
    lower: dict[float, np.ndarray]
    upper: dict[float, np.ndarray]
    levels: tuple[float, ...]
    covariance: np.ndarray | None = None
    samples: np.ndarray | None = None
    log_space: Prediction | None = None


# --------------------------------------------------------------------------- inputs


def feature_matrix_for(fitted: FittedModel, x_raw: Any) -> np.ndarray:
    """Raw feature matrix ``[n, p]`` float64 in ``fitted.feature_names`` order.

    ``x_raw`` is either that matrix already (array-like ``[n, p]``, or ``[n]``
    when ``p = 1``) or a pandas DataFrame holding the raw columns: then the
    derived features stored in the model are recomputed from the raw columns
    and the model's columns are picked by name. Raises :class:`DataError` for
    missing or non-numeric columns, a wrong width, or non-finite values.
    """
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(x_raw, pd.DataFrame):
        from sigmabnn.data.tables import feature_matrix

        df = x_raw
        if fitted.derived:
            from sigmabnn.data.features import add_derived

            names = [n for n, _ in fitted.derived]
            df = add_derived(df.drop(columns=[c for c in names if c in df.columns]), fitted.derived)
        x = feature_matrix(df, fitted.feature_names)
    else:
        x = np.asarray(x_raw, dtype=np.float64)
        if x.ndim == 1 and fitted.num_features == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[1] != fitted.num_features:
            raise DataError(
                f"inputs must have shape [n, {fitted.num_features}] ({', '.join(fitted.feature_names)}), "
                f"got {list(x.shape)}"
            )
    if not np.isfinite(x).all():
        bad = ~np.all(np.isfinite(x), axis=1)
        first = int(np.flatnonzero(bad)[0])
        raise DataError(f"{int(bad.sum())} input rows have missing or non-finite feature values (first: row {first})")
    return x


def _levels(levels: Sequence[float] | float) -> tuple[float, ...]:
    if isinstance(levels, int | float):
        levels = (levels,)
    out = tuple(dict.fromkeys(float(v) for v in levels))
    for v in out:
        if not 0.0 < v < 1.0:
            raise InputError(f"interval level must lie strictly between 0 and 1, got {v}")
    return out


def _check_regression(bnn: BNN) -> None:
    if bnn.likelihood.name == "categorical":
        raise InputError("predict supports regression likelihoods; this model is categorical")


def _noise_std_model(fitted: FittedModel, noise_std: Any, n: int) -> np.ndarray | None:
    """Known-noise std in model units ``[n, t]``, model dtype (given in log-space target units), or None."""
    if fitted.bnn.likelihood.name != "known_noise":
        return None
    t = fitted.target_dim
    if noise_std is None:
        return np.zeros((n, t), fitted.bnn.dtype)  # predict the noise-free function
    s = np.asarray(noise_std, dtype=np.float64)
    s = s[:, None] if s.ndim == 1 else s
    if s.shape not in ((n, t), (n, 1)) or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise InputError(f"noise_std must be [n] or [n, {t}] finite non-negative values")
    return (np.broadcast_to(s, (n, t)) / fitted.y_transform.scale).astype(fitted.bnn.dtype)


# --------------------------------------------------------------------------- chunking


def _next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def _effective_chunk(n: int, chunk_size: int, per_point: int) -> int:
    if chunk_size < 1:
        raise InputError(f"chunk_size must be >= 1, got {chunk_size}")
    cap = max(1, CHUNK_ELEMENT_BUDGET // max(1, per_point))
    # A small call is split over the threads, each chunk padded only to the next power of two
    # (a few compiled shapes, 1 .. cap, instead of padding every small call to one large chunk).
    c = min(int(chunk_size), cap, _next_pow2(-(-n // PREDICT_THREADS)))
    return 1 << (c.bit_length() - 1)  # round down to a power of two


def _per_point_elements(fitted: FittedModel) -> int:
    """Elements per point of a chunk's largest network-side intermediate: a group's hidden units
    (``G x width``) or the per-network moments and their transforms (``~6 T t``)."""
    t_nets = fitted.num_networks
    group = _network_groups(t_nets)[1]
    return max(group * max(fitted.bnn.mlp.widths), 6 * t_nets * fitted.target_dim)


def _chunk_points(fitted: FittedModel, n: int, chunk_size: int, num_samples: int) -> int:
    """Points per chunk of a :func:`predict` call on ``n`` points drawing ``num_samples`` noise samples
    per point (0: none), within ``CHUNK_ELEMENT_BUDGET``."""
    return _effective_chunk(n, chunk_size, max(_per_point_elements(fitted), 2 * num_samples * fitted.target_dim))


def _chunks(n: int, c: int):
    for start in range(0, n, c):
        yield start, min(start + c, n)


def _map_chunks(n: int, c: int, launch: Any, finish: Any):
    """``finish(*launch(start, stop))`` for every chunk of ``n`` points in chunks of ``c``, yielded in order.

    ``launch`` dispatches a chunk's jitted computation (asynchronous), ``finish`` waits for it and
    does the host's part. Chunks run side by side in ``PREDICT_THREADS`` threads; with one thread
    the next chunk is launched before this one is finished, so the device computes while the host
    works. No value depends on the threads: a point's noise depends on its index alone.
    """
    bounds = list(_chunks(n, c))
    threads = min(PREDICT_THREADS, len(bounds))
    if threads > 1:
        # The first chunk is dispatched here (asynchronously), so that a shape not compiled yet is
        # compiled before the threads start rather than by threads reaching it together.
        first = launch(*bounds[0])
        with ThreadPoolExecutor(threads) as pool:
            rest = pool.map(lambda b: finish(*launch(*b)), bounds[1:])
            yield finish(*first)
            yield from rest
        return
    pending = None
    for start, stop in bounds:
        launched = launch(start, stop)
        if pending is not None:
            yield finish(*pending)
        pending = launched
    yield finish(*pending)


def _pad(a: np.ndarray, c: int) -> np.ndarray:
    if a.shape[0] == c:
        return a
    pad = np.zeros((c - a.shape[0],) + a.shape[1:], a.dtype)
    return np.concatenate([a, pad], axis=0)


# --------------------------------------------------------------------------- per-draw Gaussians


def _network_parts(bnn: BNN, f: Array, precision: Array, noise_std: Array | None) -> tuple[Array, Array]:
    """Model-space ``mu``, ``var`` ``[G, c, t]`` float64 of a group of networks' outputs ``f``
    ``[G, c, out]`` (model dtype) with noise precisions ``precision`` ``[G]``: each network's
    Gaussian mean and aleatoric variance under ``bnn.likelihood``."""
    lik = bnn.likelihood
    mu, var = jax.vmap(lambda f1, p1: (lik.mean(f1), lik.aleatoric_variance(f1, p1, noise_std)))(f, precision)
    return mu.astype(jnp.float64), var.astype(jnp.float64)


def _log_offset(model: _DeviceModel, z: Array) -> Array:
    """``[c, t]`` float64: what :func:`_to_log_space` adds to the scaled model-space means at
    standardised inputs ``z`` ``[c, p]`` (the target mean plus the baseline)."""
    return model.y_mean + model.offset_b + z.astype(jnp.float64) @ model.offset_w


def _to_log_space(model: _DeviceModel, offset: Array, mu: Array, var: Array) -> tuple[Array, Array]:
    """Model-space ``mu``, ``var`` ``[T, c, t]`` float64 -> the target's log space (or its own space
    without ``log10``): ``mu * y_scale + offset`` and ``var * y_scale**2``; ``offset`` from
    :func:`_log_offset`."""
    return mu * model.y_scale + offset, var * jnp.square(model.y_scale)


def _lognormal_parts(mu: Array, var: Array) -> tuple[Array, Array]:
    """``E[Y | t]``, ``Var[Y | t]`` of each component ``Y = 10**N(mu_t, var_t)`` (same shapes, float64)."""
    m = jnp.exp(_LN10 * mu + 0.5 * _LN10**2 * var)
    return m, jnp.expm1(_LN10**2 * var) * jnp.square(m)


def _per_draw(bnn: BNN, model: _DeviceModel, z: Array, noise_std: Array | None, num_networks: int):
    """Model-space ``mu``, ``var`` ``[T, c, t]`` float64 of every network at standardised inputs ``z`` ``[c, p]``.

    The networks run group by group (``model.params`` has leading ``[groups, NETWORK_GROUP]`` axes,
    see :func:`_device_model`; a ``lax.scan`` over the groups), each group with
    :func:`~sigmabnn.model.mlp.forward_ensemble`; the padding networks of the last group are dropped
    (``num_networks = T``, static).
    """

    def parts(f: Array, precision: Array) -> tuple[Array, Array]:
        return _network_parts(bnn, f, precision, noise_std)

    if z.shape[0] == 1:  # one point (the latency path): all networks at once beat the groups' scan
        flat = jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), (model.params, model.noise_precision))
        params, precision = flat
        mu, var = parts(forward_ensemble(bnn.mlp, params, z), precision)
        return mu[:num_networks], var[:num_networks]

    def group(carry: None, g: tuple[Any, Array]) -> tuple[None, tuple[Array, Array]]:
        return None, parts(forward_ensemble(bnn.mlp, g[0], z), g[1])

    _, (mu, var) = jax.lax.scan(group, None, (model.params, model.noise_precision))
    return tuple(a.reshape((-1,) + a.shape[2:])[:num_networks] for a in (mu, var))


def _group_stats(mu: Array, var: Array, w: Array) -> tuple[Array, Array, Array, Array]:
    """``(n, mean, m2, sum_var)`` of one group's ``mu``, ``var`` ``[G, c, t]`` with network weights
    ``w`` ``[G]`` (1, or 0 for a padding network): weighted count, mean, sum of squared deviations
    from the mean, and sum of ``var``."""
    wb = w[:, None, None]
    n = jnp.sum(w)
    mean = jnp.sum(wb * mu, axis=0) / n
    return n, mean, jnp.sum(wb * jnp.square(mu - mean), axis=0), jnp.sum(wb * var, axis=0)


def _merge_stats(a: tuple, b: tuple) -> tuple:
    """Two groups' :func:`_group_stats` combined (Chan, Golub & LeVeque 1979: the pairwise update of
    the mean and the sum of squared deviations, free of the cancellation of raw power sums)."""
    na, ma, qa, va = a
    nb, mb, qb, vb = b
    n = na + nb
    delta = mb - ma
    return n, ma + delta * (nb / n), qa + qb + jnp.square(delta) * (na * nb / n), va + vb


def _streamed_moments(bnn: BNN, model: _DeviceModel, z: Array, noise_std: Array | None, num_networks: int, log10: bool):
    """The moments of :func:`_moments` (and of :func:`_lognormal_moments` when ``log10``), accumulated
    group by group inside the network scan, for ``z`` ``[c, p]`` (``c > 1``).

    The same definitions as the two-pass route (``mu``, ``var`` ``[T, c, t]`` materialised, then
    reduced over the networks), up to the order of floating-point sums: each group's weighted mean
    and squared deviations are merged into the running ones (:func:`_merge_stats`), so a group's
    per-network values never leave the CPU caches. Used when only the moments are asked for.
    """
    k, g = model.noise_precision.shape
    weights = jnp.asarray((np.arange(k * g) < num_networks).reshape(k, g), jnp.float64)
    offset = _log_offset(model, z)  # [c, t]

    def group(carry: Any, xs: tuple[Any, Array, Array]) -> tuple[Any, None]:
        params, precision, w = xs
        mu, var = _network_parts(bnn, forward_ensemble(bnn.mlp, params, z), precision, noise_std)
        mu, var = _to_log_space(model, offset, mu, var)
        stats = {"log": _group_stats(mu, var, w)}
        if log10:
            stats["orig"] = _group_stats(*_lognormal_parts(mu, var), w)
        if carry is None:
            return stats, None
        return jax.tree.map(lambda *ab: _merge_stats(*ab), carry, stats, is_leaf=lambda x: isinstance(x, tuple)), None

    first = jax.tree.map(lambda a: a[0], (model.params, model.noise_precision, weights))
    rest = jax.tree.map(lambda a: a[1:], (model.params, model.noise_precision, weights))
    init, _ = group(None, first)
    total, _ = jax.lax.scan(group, init, rest)
    out = {}
    for space, (n, mean, m2, sum_var) in total.items():
        out[space] = {"mean": mean, "epistemic_var": m2 / n, "aleatoric_var": sum_var / n}
    return out


def _moments(mu: Array, var: Array, want_cov: bool) -> dict[str, Array]:
    mean = mu.mean(0)
    out = {"mean": mean, "epistemic_var": jnp.mean(jnp.square(mu - mean), axis=0), "aleatoric_var": var.mean(0)}
    if want_cov:
        centred = mu - mean
        cov = jnp.einsum("tci,tcj->cij", centred, centred) / mu.shape[0]
        out["covariance"] = cov + jax.vmap(jnp.diag)(out["aleatoric_var"])
    return out


def _lognormal_moments(mu: Array, var: Array, want_cov: bool) -> dict[str, Array]:
    """Exact moments of the mixture of log-normals ``10**N(mu_t, var_t)``."""
    return _moments(*_lognormal_parts(mu, var), want_cov)


def _component_log_density(mu: Array, var: Array, y: Array, df: float | None = None) -> Array:
    """``log prod_j p(y_j; mu_tj, var_tj)`` ``[T, c]`` per network and point.

    ``mu``, ``var``: ``[T, c, t]``; ``y``: ``[c, t]``.

    ``p`` is the Gaussian with that mean and variance, or with ``df`` the Student-t with ``df``
    degrees of freedom, location ``mu`` and scale ``sqrt(var (df - 2) / df)`` (the same variance).
    """
    var = jnp.maximum(var, jnp.finfo(jnp.float64).tiny)
    if df is None:
        logp = -0.5 * (jnp.square(y - mu) / var + jnp.log(2.0 * jnp.pi * var))
    else:
        scale2 = var * ((df - 2.0) / df)
        logp = (
            jax.scipy.special.gammaln(0.5 * (df + 1.0))
            - jax.scipy.special.gammaln(0.5 * df)
            - 0.5 * jnp.log(jnp.pi * df * scale2)
            - 0.5 * (df + 1.0) * jnp.log1p(jnp.square(y - mu) / (df * scale2))
        )
    return logp.sum(-1)


def _mixture_log_density(mu: Array, var: Array, y: Array, df: float | None = None) -> Array:
    """``log (1/T) sum_t prod_j p(y_j; mu_tj, var_tj)`` per point ``[c]`` (:func:`_component_log_density`)."""
    return jax.scipy.special.logsumexp(_component_log_density(mu, var, y, df), axis=0) - jnp.log(mu.shape[0])


def component_cdf(mu: Array, scale: Array, y: Array, df: float | None = None) -> Array:
    """``G((y - mu_t) / scale_t)`` ``[T, ...]``: each component's CDF at ``y`` (see :func:`mixture_cdf`), float64."""
    mu, scale, y = (jnp.asarray(a, jnp.float64) for a in (mu, scale, y))
    z = (y - mu) / jnp.maximum(scale, jnp.finfo(jnp.float64).tiny)
    if df is None:
        return jax.scipy.special.ndtr(z)
    tail = 0.5 * jax.scipy.special.betainc(0.5 * df, 0.5, df / (df + jnp.square(z)))
    return jnp.where(z < 0, tail, 1.0 - tail)


def mixture_cdf(mu: Array, scale: Array, y: Array, df: float | None = None) -> Array:
    """``F(y) = (1/T) sum_t G((y - mu_t) / scale_t)``: ``mu``, ``scale`` ``[T, ...]``, ``y`` ``[...]`` -> ``[...]``.

    ``G`` is the standard-normal CDF, or with ``df`` the Student-t CDF with ``df`` degrees of freedom
    (``scale`` is then the t scale, not the std), computed from the regularised incomplete beta
    function, ``G(z) = I_x(df / 2, 1 / 2) / 2`` for ``z < 0`` with ``x = df / (df + z^2)`` (and
    ``1 - G(-z)`` above), so small tail probabilities keep their relative precision. The result is
    the probability integral transform (PIT) of ``y`` under the equally weighted mixture, float64.
    """
    return component_cdf(mu, scale, y, df).mean(0)


def _component_scale(var: Array, df: float | None) -> Array:
    """The Gaussian std, or with ``df`` the Student-t scale, of components of variance ``var``."""
    return jnp.sqrt(var if df is None else var * ((df - 2.0) / df))


def _mixture_pit(mu: Array, var: Array, y: Array, df: float | None) -> Array:
    """:func:`mixture_cdf` of per-network means and variances ``[T, c, t]`` at ``y`` ``[c, t]``."""
    return mixture_cdf(mu, _component_scale(var, df), y, df)


def _normal(key: Array, shape: tuple[int, ...]) -> Array:
    """Standard-normal draws ``shape``, drawn in float32 and returned as float64.

    A deliberate dtype choice: float32 draws cost half as much on a CPU (ad hoc: 512,000 draws in
    3.2 ms against 7.2 ms), and their rounding (relative 6e-8) and tail cut (a float32 uniform
    resolves ``|z|`` up to about 5.4) are far below what the quantiles of at most
    ``MAX_NOISE_SAMPLES`` draws resolve (a calibrated tail level ``p`` is at least
    ``TAIL_SAMPLES / MAX_NOISE_SAMPLES = 2e-4``, i.e. ``|z| <= 3.6``)."""
    return jax.random.normal(key, shape, jnp.float32).astype(jnp.float64)


def _standard_noise(
    key: Array, index: Array, shape: tuple[int, ...], df: float | None, antithetic: bool = False
) -> Array:
    """Noise of unit variance ``[c, S, t]`` for the points ``index`` ``[c]`` (``shape = (S, t)``).

    Gaussian: a standard-normal draw from ``fold_in(key, i)`` per point. Student-t (``df``):
    ``z / sqrt(g)``, scaled by ``sqrt((df - 2) / df)``, with ``z`` standard normal from the point's
    key and ``g ~ Gamma(df / 2, rate df / 2)`` taken from a pool of ``S`` draws shared by every point,
    cyclically shifted by a random offset per point. Each point's samples are exact t draws (an
    i.i.d. pool, any fixed shift); two points' samples share a mixing draw only when their offsets
    coincide (probability ``1 / S``). The pool spares ``S x n`` Gamma draws, which cost far more
    than the networks on a CPU.

    ``antithetic`` (``S`` even): the standard-normal part of sample ``s + S / 2`` is minus that of
    sample ``s`` (antithetic variates; only ``S / 2`` normal draws per point). Every sample is
    still exactly distributed; the module docstring says why the pairs lower the quantiles'
    Monte-Carlo error.
    """
    half = shape[0] // 2 if antithetic else shape[0]

    def normal(k: Array) -> Array:
        z = _normal(k, (half,) + tuple(shape[1:]))
        return jnp.concatenate([z, -z], axis=0) if antithetic else z

    if df is None:
        return jax.vmap(lambda i: normal(jax.random.fold_in(key, i)))(index)
    pool_key = jax.random.split(key)[1]
    pool = jax.random.gamma(pool_key, 0.5 * df, shape) / (0.5 * df)
    scale = jnp.sqrt((df - 2.0) / df / pool)

    def one(i: Array) -> Array:
        key_z, key_offset = jax.random.split(jax.random.fold_in(key, i))
        offset = jax.random.randint(key_offset, (), 0, shape[0])
        return normal(key_z) * jnp.roll(scale, offset, axis=0)

    return jax.vmap(one)(index)


@functools.lru_cache(maxsize=64)
def _chunk_fn(*config: Any):
    """Jitted ``(model, z, noise_std, key, start, y_log) -> dict`` for one chunk of points, for the
    arguments ``config`` of :func:`_chunk_run` (cached per configuration); :func:`predict` calls
    its packed form, :func:`_packed_chunk_fn`."""
    return jax.jit(_chunk_run(*config))


class _PackedChunkFn:
    """:func:`_chunk_run` with its results packed into one ``[c, K]`` float64 array (and the draws).

    ``jitted(model, z, noise_std, key, start, y_log) -> (columns, draws or None)``; on the host,
    :meth:`unpack` ``(columns)`` gives the same dict as :func:`_chunk_fn` without ``"draws"``, as
    views of the one array. One device-to-host transfer per chunk instead of one per result (a
    log target's moments are six arrays): on the one-point path the transfers were a sizeable
    part of the latency. The layout (tree structure and each result's trailing shape) does not
    depend on the chunk size; it is recorded when the function is traced.
    """

    def __init__(self, run: Any) -> None:
        self._run = run
        self._layout: tuple[Any, list[tuple[int, ...]]] | None = None
        self.jitted = jax.jit(self._packed)

    def _packed(self, model, z, noise_std, key, start, y_log):
        out = self._run(model, z, noise_std, key, start, y_log)
        draws = out.pop("draws", None)
        leaves, treedef = jax.tree.flatten(out)
        c = z.shape[0]
        self._layout = (treedef, [tuple(leaf.shape[1:]) for leaf in leaves])  # static: trace-time metadata
        columns = jnp.concatenate([leaf.astype(jnp.float64).reshape(c, -1) for leaf in leaves], axis=1)
        return columns, draws

    def unpack(self, columns: np.ndarray) -> dict:
        """The results of a chunk from its ``[c, K]`` columns (NumPy views)."""
        treedef, shapes = self._layout
        parts, k = [], 0
        for shape in shapes:
            size = math.prod(shape)
            parts.append(columns[:, k : k + size].reshape(columns.shape[:1] + shape))
            k += size
        return jax.tree.unflatten(treedef, parts)


@functools.lru_cache(maxsize=64)
def _packed_chunk_fn(*config: Any) -> _PackedChunkFn:
    """The :class:`_PackedChunkFn` of :func:`_chunk_run` ``(*config)`` (cached per configuration)."""
    return _PackedChunkFn(_chunk_run(*config))


def _chunk_run(
    bnn: BNN,
    num_networks: int,
    num_samples: int,
    log10: bool,
    want_cov: bool,
    want_scores: bool = False,
    stream_moments: bool = True,
):
    """``(model, z, noise_std, key, start, y_log) -> dict`` for one chunk of points (to be jitted).

    With ``want_scores``, also each point's log predictive density of ``y_log`` (``"lpd"`` ``[c]``,
    log space) and its exact PIT (``"pit"`` ``[c, t]``), from the same network pass.

    ``model`` is the :class:`_DeviceModel`; ``z`` ``[c, p]`` the standardised inputs of the
    points ``start .. start + c - 1`` (their indices pick the noise keys). Compiled once per
    static configuration and chunk shape. Returns the moments and, when ``num_samples > 0``,
    the predictive samples in log space, ``"draws"`` ``[c, t, S]`` (points-major, so that the
    host sorts contiguous rows); the quantiles are taken on the host (:func:`_host_quantiles`):
    NumPy's vectorised sort is an order of magnitude faster than XLA's on CPU. With
    ``num_samples == 0`` (no intervals asked for) no noise is drawn at all, and, with
    ``stream_moments`` and neither covariance nor scores, the moments of a chunk of several points
    are accumulated inside the network scan (:func:`_streamed_moments`; measured side by side by
    ``benchmarks/predict.py``); ``False`` materialises every network's values first.
    """

    df = noise_df(bnn.likelihood)
    stream = stream_moments and num_samples == 0 and not want_scores and not want_cov

    def run(model, z, noise_std, key, start, y_log):
        if stream and z.shape[0] > 1:
            return _streamed_moments(bnn, model, z, noise_std, num_networks, log10)
        mu, var = _per_draw(bnn, model, z, noise_std, num_networks)
        mu, var = _to_log_space(model, _log_offset(model, z), mu, var)
        t_nets = mu.shape[0]
        out = {"log": _moments(mu, var, want_cov)}
        if want_scores:
            out["lpd"] = _mixture_log_density(mu, var, y_log, df)
            out["pit"] = _mixture_pit(mu, var, y_log, df)
        if log10:
            out["orig"] = _lognormal_moments(mu, var, want_cov)
        if num_samples > 0:
            index = start + jnp.arange(z.shape[0])
            which = jnp.arange(num_samples) % t_nets
            eps = _standard_noise(key, index, (num_samples, mu.shape[2]), df, num_samples % (2 * t_nets) == 0)
            samples = mu[which] + jnp.sqrt(var[which]) * jnp.swapaxes(eps, 0, 1)  # [S, c, t]
            out["draws"] = jnp.transpose(samples, (1, 2, 0))  # [c, t, S]
        return out

    return run


def _host_quantiles(draws: np.ndarray, qs: np.ndarray, log10: bool) -> dict[str, np.ndarray]:
    """Quantiles ``[len(qs), c, t]`` of samples ``draws`` ``[c, t, S]``, NumPy's linear interpolation.

    ``qs`` ``[k, t]``: the quantile levels, per target column (or ``[k]``, for every column). ``"log"``: of the samples;
    ``"orig"`` (``log10``): of ``10**samples``, interpolated between the transformed order statistics.
    """
    ordered = np.sort(draws, axis=-1)
    s = ordered.shape[-1]
    qs = np.asarray(qs, np.float64)
    if qs.ndim == 1:  # the same levels for every column
        qs = np.repeat(qs[:, None], ordered.shape[1], axis=1)
    h = (s - 1) * qs  # [k, t], all levels at once (one pass, few NumPy calls)
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, s - 1)
    w = h - lo
    cols = np.arange(ordered.shape[1])[None, :]
    a = np.moveaxis(ordered[:, cols, lo], 1, 0)  # [k, c, t]
    b = np.moveaxis(ordered[:, cols, hi], 1, 0)
    w = w[:, None, :]
    out = {"log": a * (1.0 - w) + b * w}
    if log10:
        out["orig"] = np.power(10.0, a) * (1.0 - w) + np.power(10.0, b) * w
    return out


def _quantile_levels(
    fitted: FittedModel, levels: tuple[float, ...], calibrated: bool
) -> tuple[np.ndarray, float | None]:
    """Model quantile levels ``[2 * len(levels), t]`` of the central intervals (lower, upper per level),
    and the smallest tail probability among them when they come from a calibration (else ``None``)."""
    qs = np.array([q for v in levels for q in ((1.0 - v) / 2.0, (1.0 + v) / 2.0)], np.float64).reshape(-1)
    cal = fitted.calibration if calibrated else None
    if cal is None or qs.size == 0:
        return np.repeat(qs[:, None], fitted.target_dim, axis=1), None
    mapped = cal.model_levels(qs)
    return mapped, float(np.min(np.minimum(mapped, 1.0 - mapped)))


def _default_num_samples(t_nets: int, tail: float | None) -> int:
    """The default sample count: the smallest multiple of T >= ``MIN_NOISE_SAMPLES``, raised for a
    calibrated tail level ``tail`` to about ``TAIL_SAMPLES / tail`` (at most ``MAX_NOISE_SAMPLES``),
    then to an even multiple of T (antithetic pairs, see the module docstring) unless that would
    double it (one sample per network)."""
    want = MIN_NOISE_SAMPLES
    if tail is not None:
        want = max(want, min(MAX_NOISE_SAMPLES, math.ceil(TAIL_SAMPLES / max(tail, 1e-12))))
    per_network = math.ceil(want / t_nets)
    return t_nets * (per_network + per_network % 2 if per_network > 1 else 1)


class _DeviceModel(NamedTuple):
    """A fitted model's arrays on the device, in the form the chunk functions take them.

    Attributes:
        params: the networks' layers in groups (:class:`~sigmabnn.model.mlp.OutInLayer`, kernels
            stored transposed for :func:`~sigmabnn.model.mlp.forward_ensemble`), leading axes ``[k, G]`` with
            ``k = ceil(T / NETWORK_GROUP)`` groups of ``G = ceil(T / k)`` networks, model dtype;
            the last ``k G - T`` (fewer than ``k``) repeat the first network and are dropped
            from every result (:func:`_network_groups`).
        noise_precision: ``[k, G]`` each draw's noise precision, model dtype, grouped alike.
        y_mean, y_scale: ``[t]`` float64, the target standardisation (model -> log space).
        offset_b, offset_w: ``[t]`` and ``[p, t]`` float64, the target's baseline at standardised
            inputs ``z``: ``offset_b + z @ offset_w`` (zeros without a baseline).
    """

    params: Any
    noise_precision: Array
    y_mean: Array
    y_scale: Array
    offset_b: Array
    offset_w: Array


#: Device copies of a model's arrays, made once per model object (a FittedModel is immutable).
_DEVICE_MODELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@functools.lru_cache(maxsize=32)
def _unflatten_all(bnn: BNN):
    return jax.jit(lambda pos: out_in_layers(jax.vmap(jax.vmap(bnn.unflatten))(pos)))


def _network_groups(num_networks: int) -> tuple[int, int]:
    """``(k, G)``: the fewest groups of at most ``NETWORK_GROUP`` networks, ``G`` as even as can be."""
    k = max(1, math.ceil(num_networks / NETWORK_GROUP))
    return k, math.ceil(num_networks / k)


def _grouped(a: np.ndarray, k: int, g: int) -> np.ndarray:
    """``a`` ``[T, ...]`` padded with copies of ``a[0]`` to ``k g`` rows, reshaped to ``[k, g, ...]``."""
    pad = np.repeat(a[:1], k * g - a.shape[0], axis=0)
    return np.concatenate([a, pad]).reshape((k, g) + a.shape[1:])


def _device_model(fitted: FittedModel) -> _DeviceModel:
    """The model's networks, noise precisions and target transform on the device (cached).

    Unflattened once per model object and cached (a FittedModel is immutable):
    slicing the flat ``[T, d]`` draws into layers inside every chunk copied
    all the weights once per chunk (43 MB for 1,000 5-50-50-50-1 networks);
    the small arrays, too, are converted once rather than on every call (a
    one-point prediction is mostly such fixed costs).
    """
    cached = _DEVICE_MODELS.get(fitted)
    if cached is not None:
        return cached
    d = fitted.draws
    dtype = fitted.bnn.jdtype
    t = d.num_networks
    k, g = _network_groups(t)
    pos = jnp.asarray(_grouped(np.asarray(d.positions).reshape(t, -1), k, g), dtype=dtype)
    offset = fitted.y_transform.standardized_offset(fitted.x_transform, fitted.feature_names)
    model = _DeviceModel(
        params=_unflatten_all(fitted.bnn)(pos),
        noise_precision=jnp.asarray(_grouped(np.asarray(d.hyper.noise_precision).reshape(t), k, g), dtype=dtype),
        y_mean=jnp.asarray(fitted.y_transform.mean, jnp.float64),
        y_scale=jnp.asarray(fitted.y_transform.scale, jnp.float64),
        **dict(zip(("offset_b", "offset_w"), map(jnp.asarray, offset))),
    )
    model = jax.block_until_ready(model)
    _DEVICE_MODELS[fitted] = model
    return model


@functools.cache
def _default_key() -> Array:
    """``jax.random.key(DEFAULT_SEED)``, made once (creating a key is a computation of its own)."""
    return jax.random.key(DEFAULT_SEED)


def _assemble(parts: dict[str, list], levels: tuple[float, ...], want_cov: bool, want_samples: bool, log_space):
    cat = {
        # one chunk (every small call): its arrays as they are, a copy (not views of the chunk's buffer)
        k: np.array(v[0]) if len(v) == 1 else np.concatenate(v, axis=1 if k in ("samples", "quantiles") else 0)
        for k, v in parts.items()
    }
    epi, ale = cat["epistemic_var"], cat["aleatoric_var"]
    q = cat.get("quantiles")
    return Prediction(
        mean=cat["mean"],
        std=np.sqrt(epi + ale),
        epistemic_std=np.sqrt(epi),
        aleatoric_std=np.sqrt(ale),
        lower={lv: q[2 * i] for i, lv in enumerate(levels)},
        upper={lv: q[2 * i + 1] for i, lv in enumerate(levels)},
        levels=levels,
        covariance=cat.get("covariance") if want_cov else None,
        samples=cat.get("samples") if want_samples else None,
        log_space=log_space,
    )


def predict(
    fitted: FittedModel,
    x_raw: Any,
    *,
    levels: Sequence[float] | float = DEFAULT_LEVELS,
    rng_key: Array | None = None,
    num_noise_samples: int | None = None,
    chunk_size: int = 65536,
    return_samples: bool = False,
    covariance: bool = False,
    noise_std: Any = None,
    calibrated: bool = True,
) -> Prediction:
    """Predictive distribution at raw inputs (see the module docstring for the definitions).

    Args:
        fitted: the model.
        x_raw: raw (original-unit) features ``[n, p]`` in ``fitted.feature_names``
            order, or a DataFrame with the raw columns (derived features are
            then recomputed; see :func:`feature_matrix_for`).
        levels: central interval probabilities, e.g. ``(0.68, 0.95)``; ``()`` for no
            intervals: then no noise samples are drawn (unless ``return_samples``),
            the fastest path when only the moments are needed.
        rng_key: JAX key for the noise samples (default ``jax.random.key(DEFAULT_SEED)``).
        num_noise_samples: predictive samples per point (default: the smallest
            multiple of T that is >= 2000; with a calibration, raised so that the
            mapped tail levels are resolved, see ``TAIL_SAMPLES``).
        chunk_size: most points per chunk (rounded down to a power of two and
            capped by the memory budget).
        return_samples: also return the ``[S, n, t]`` samples (memory: S x n x t floats).
        covariance: also return the ``[n, t, t]`` covariance across outputs.
        noise_std: for a known-noise likelihood, the per-point noise std in
            log-space target units (``[n]`` or ``[n, t]``); without it the
            aleatoric part is zero (the noise-free function is predicted).
        calibrated: when the model holds a :class:`~sigmabnn.calibration.Calibration`
            (:func:`sigmabnn.recalibration.recalibrate`), the central interval at level ``c``
            is read off the predictive quantiles ``R^{-1}((1 - c) / 2)`` and
            ``R^{-1}((1 + c) / 2)`` instead of ``(1 -+ c) / 2`` (quantile recalibration,
            Kuleshov et al. 2018), in log and original space alike. ``False`` gives the
            model's raw intervals. The mean, the stds, the covariance and the samples are
            those of the model's predictive distribution either way: recalibration
            changes only the intervals.

    Returns:
        :class:`Prediction` in the original target space; ``.log_space`` holds
        the ``log10`` space summaries for a log target.
    """
    x = feature_matrix_for(fitted, x_raw)
    return _predict_matrix(
        fitted,
        x,
        levels=levels,
        rng_key=rng_key,
        num_noise_samples=num_noise_samples,
        chunk_size=chunk_size,
        return_samples=return_samples,
        covariance=covariance,
        noise_std=noise_std,
        calibrated=calibrated,
    )[0]


def _predict_matrix(
    fitted: FittedModel,
    x: np.ndarray,
    *,
    levels: Sequence[float] | float = DEFAULT_LEVELS,
    rng_key: Array | None = None,
    num_noise_samples: int | None = None,
    chunk_size: int = 65536,
    return_samples: bool = False,
    covariance: bool = False,
    noise_std: Any = None,
    y_log: np.ndarray | None = None,
    calibrated: bool = True,
) -> tuple[Prediction, dict[str, np.ndarray] | None]:
    """:func:`predict` on a checked feature matrix; with ``y_log`` ``[n, t]`` (log-space targets)
    also the scores of ``y_log`` from the same network pass: ``{"lpd": [n], "pit": [n, t]}``, the
    per-point log predictive density (log space) and the exact PIT (:func:`predictive_cdf`)."""
    _check_regression(fitted.bnn)
    lv = _levels(levels)
    n = x.shape[0]
    if n == 0:
        raise DataError("no input rows to predict")
    t_nets = fitted.num_networks
    qlevels, tail = _quantile_levels(fitted, lv, calibrated)
    s = int(num_noise_samples) if num_noise_samples is not None else _default_num_samples(t_nets, tail)
    if s < 2:
        raise InputError(f"num_noise_samples must be >= 2, got {s}")
    qs = len(qlevels) > 0
    key = _default_key() if rng_key is None else rng_key
    log10 = fitted.log_target
    sampled = qs or return_samples  # without intervals or samples no noise is drawn
    c = _chunk_points(fitted, n, chunk_size, s if sampled else 0)

    want_scores = y_log is not None
    fn = _packed_chunk_fn(fitted.bnn, t_nets, s if sampled else 0, log10, bool(covariance), want_scores)
    model = _device_model(fitted)
    z = fitted.x_transform.forward(x, dtype=fitted.bnn.dtype)
    nstd = _noise_std_model(fitted, noise_std, n)
    y_log = None if y_log is None else np.asarray(y_log, np.float64)
    spaces = ("log", "orig") if log10 else ("log",)
    parts: dict[str, dict[str, list]] = {sp: {} for sp in spaces}
    score_parts: dict[str, list[np.ndarray]] = {"lpd": [], "pit": []}

    def launch(start: int, stop: int):
        # NumPy chunks go straight to the jitted function (its argument transfer is cheaper
        # than a separate jnp.asarray per array).
        zc = _pad(z[start:stop], c)
        nc = None if nstd is None else _pad(nstd[start:stop], c)
        yc = _pad(y_log[start:stop], c) if want_scores else None
        return stop - start, fn.jitted(model, zc, nc, key, start, yc)

    def finish(m: int, packed: tuple) -> tuple[int, dict, np.ndarray | None, dict | None]:
        columns, device_draws = packed
        out = fn.unpack(np.asarray(columns))
        draws = quantiles = None
        if sampled:
            draws = np.asarray(device_draws)[:m]
            quantiles = _host_quantiles(draws, qlevels, log10) if qs else None
        return m, out, draws, quantiles

    def collect(m: int, out: dict, draws: np.ndarray | None, quantiles: dict | None) -> None:
        for sp in spaces:
            for k, v in out[sp].items():
                parts[sp].setdefault(k, []).append(np.asarray(v)[:m])
            if qs:
                parts[sp].setdefault("quantiles", []).append(quantiles[sp])
            if return_samples:
                samples = np.moveaxis(draws, -1, 0)  # [S, m, t]
                parts[sp].setdefault("samples", []).append(samples if sp == "log" else np.power(10.0, samples))
        if want_scores:
            for k, v in score_parts.items():
                v.append(np.asarray(out[k])[:m])

    for done in _map_chunks(n, c, launch, finish):
        collect(*done)
    scores = {k: np.concatenate(v) for k, v in score_parts.items()} if want_scores else None
    log_pred = _assemble(parts["log"], lv, bool(covariance), bool(return_samples), None)
    if not log10:
        return log_pred, scores
    return _assemble(parts["orig"], lv, bool(covariance), bool(return_samples), log_pred), scores


# --------------------------------------------------------------------------- log predictive density


@functools.lru_cache(maxsize=32)
def _pointwise_fn(bnn: BNN, num_networks: int, kind: str):
    """Jitted ``(model, z, noise_std, y_model) ->`` per-point values of ``kind``.

    ``"lpd"``: ``[c]`` log density of the mixture; ``"cdf"``: ``[c, t]`` PIT of the mixture;
    ``"draws"``: ``([c, T] log density, [c, T, t] CDF)`` of each network's component.
    """
    df = noise_df(bnn.likelihood)

    def run(model, z, noise_std, y_model):
        mu, var = _per_draw(bnn, model, z, noise_std, num_networks)
        # the CDF is invariant under the affine model -> log space map
        scale = _component_scale(var, df)
        if kind == "cdf":
            return mixture_cdf(mu, scale, y_model, df)
        # model-space density, then the Jacobian of model space -> log space
        jacobian = jnp.sum(jnp.log(model.y_scale))
        if kind == "draws":
            logp = _component_log_density(mu, var, y_model, df) - jacobian
            return logp.T, jnp.moveaxis(component_cdf(mu, scale, y_model, df), 0, 1)
        return _mixture_log_density(mu, var, y_model, df) - jacobian

    return jax.jit(run)


def _pointwise(fitted: FittedModel, x_raw: Any, y_raw: Any, kind: str, chunk_size: int, noise_std: Any):
    """``(per-point values of :func:`_pointwise_fn` (an array or a tuple of arrays), y [n, t] original units)``."""
    _check_regression(fitted.bnn)
    x = feature_matrix_for(fitted, x_raw)
    n = x.shape[0]
    y = np.asarray(y_raw, dtype=np.float64).reshape(n, -1)
    if y.shape[1] != fitted.target_dim:
        raise DataError(f"targets must have {fitted.target_dim} columns, got {y.shape[1]}")
    if fitted.log_target and np.any(~(y > 0)):
        raise DataError(f"log target needs positive values; {int(np.sum(~(y > 0)))} are not")
    if not np.all(np.isfinite(y)):
        raise DataError(f"{int(np.sum(~np.isfinite(y)))} target values are missing or non-finite")
    y_model = fitted.y_transform.forward(y, offset=fitted.y_transform.offset(x, fitted.feature_names))
    t_nets = fitted.num_networks
    c = _effective_chunk(n, chunk_size, _per_point_elements(fitted))
    fn = _pointwise_fn(fitted.bnn, t_nets, kind)
    model = _device_model(fitted)
    z = fitted.x_transform.forward(x, dtype=fitted.bnn.dtype)
    nstd = _noise_std_model(fitted, noise_std, n)
    if n == 0:
        t = y.shape[1]
        empty = {
            "lpd": np.zeros(0),
            "cdf": np.zeros((0, t)),
            "draws": (np.zeros((0, t_nets)), np.zeros((0, t_nets, t))),
        }
        return empty[kind], y

    def launch(start: int, stop: int):
        nc = None if nstd is None else _pad(nstd[start:stop], c)
        return stop - start, fn(model, _pad(z[start:stop], c), nc, _pad(y_model[start:stop], c))

    def finish(m: int, out: Any) -> Any:
        return jax.tree.map(lambda a: np.asarray(a)[:m], out)

    parts = list(_map_chunks(n, c, launch, finish))
    return jax.tree.map(lambda *a: np.concatenate(a), *parts), y


def log_predictive_density(
    fitted: FittedModel, x_raw: Any, y_raw: Any, *, chunk_size: int = 65536, noise_std: Any = None
) -> dict[str, np.ndarray]:
    """Per-point log predictive density ``log (1/T) sum_t prod_j N(y_j; mu_tj, sigma_tj^2)``
    (Student-t noise: the t densities of the module docstring instead of ``N``).

    Returns ``{"log": [n]}`` (density of the log-space target ``log10 y`` or
    ``y``, in nats) and, for a log target, ``"orig"``: the density of ``y``
    itself, ``log p(y) = log p(log10 y) - sum_j log(y_j ln 10)``.
    ``y_raw`` is ``[n]`` or ``[n, t]`` in original units.
    """
    lpd, y = _pointwise(fitted, x_raw, y_raw, "lpd", chunk_size, noise_std)
    out = {"log": lpd}
    if fitted.log_target:
        out["orig"] = lpd - np.sum(np.log(y * _LN10), axis=1)
    return out


def predictive_cdf(
    fitted: FittedModel, x_raw: Any, y_raw: Any, *, chunk_size: int = 65536, noise_std: Any = None
) -> np.ndarray:
    """Probability integral transform ``u = F(y)`` ``[n, t]`` of each target under the exact predictive CDF.

    ``F`` is the predictive marginal of each target column: the equally weighted mixture over the
    ``T`` networks of their Gaussian or Student-t components (module docstring), evaluated in
    closed form (:func:`mixture_cdf`), not from samples. A monotone transform of the target
    leaves ``F(y)`` unchanged, so the value is the same in model, log and original space.
    ``y_raw`` is ``[n]`` or ``[n, t]`` in original units. A calibrated model gives ``u`` uniform on
    [0, 1] on held-out rows; :mod:`sigmabnn.recalibration` learns a correction from them.
    """
    return _pointwise(fitted, x_raw, y_raw, "cdf", chunk_size, noise_std)[0]


def per_draw_predictive(
    fitted: FittedModel, x_raw: Any, y_raw: Any, *, chunk_size: int = 65536, noise_std: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each network's predictive at each row: ``(log_density [n, T], cdf [n, T, t])``, float64.

    ``log_density[i, s]`` is ``log p(y_i | theta_s)``, the log density of the log-space target of
    row ``i`` under network ``s``'s Gaussian or Student-t component (the term of
    :func:`log_predictive_density`'s mixture; summed over target columns), and ``cdf[i, s, j]`` its
    CDF at ``y_ij`` (the term of :func:`predictive_cdf`'s mixture). The networks are in the order of
    ``fitted.draws`` flattened chain-major (``s = chain * num_draws + draw``). Memory:
    ``n * T * (t + 1)`` floats; :func:`sigmabnn.recalibration.loo_pit_values` uses them to weight
    the draws for leave-one-out.
    """
    return _pointwise(fitted, x_raw, y_raw, "draws", chunk_size, noise_std)[0]
