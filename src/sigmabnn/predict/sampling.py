"""Predictive samples and the interval quantiles read off them.

Intervals are *central predictive quantiles*, estimated from samples of the mixture
(:mod:`sigmabnn.predict.mixture`) that include the noise: sample ``s`` uses network ``s mod T``
(every network contributes equally when ``num_noise_samples`` is a multiple of T) and a
standard-normal draw (Student-t noise: a ``t_nu`` draw scaled by ``s_t``). When
``S = num_noise_samples`` is a multiple of 2T (the default S for fewer than 2,000 networks),
samples ``s`` and ``s + S / 2`` share their network and take opposite standard-normal draws
(antithetic variates): every sample is still an exact draw of the mixture, but not independent of
its partner. For a central quantile ``q`` the indicators ``1{mu + sigma z <= q}`` and
``1{mu - sigma z <= q}`` are negatively correlated for every component, so the pairs lower the
Monte-Carlo error of every quantile (``tests/test_predict_paths.py`` checks it against
independent draws) and halve the normal draws.

Samples are drawn in log space and transformed (``10**u`` is monotone, so the original-space
quantiles are the transformed samples' quantiles). The noise for point ``i`` comes from
``jax.random.fold_in(rng_key, i)``, so results do not depend on the chunking; the default key is
``jax.random.key(DEFAULT_SEED)`` with ``DEFAULT_SEED = 0``.

Recalibrated intervals: a model holding a :class:`~sigmabnn.calibration.Calibration` reads its
central interval at level ``c`` off the same samples at the mapped levels ``R^{-1}((1 -+ c) / 2)``
(:func:`quantile_levels`). Mapped tail levels can be far smaller than ``1 / 2000``, so the default
sample count is then raised (``TAIL_SAMPLES``).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.fitted import FittedModel

Array = jax.Array

__all__ = [
    "DEFAULT_SEED",
    "MAX_NOISE_SAMPLES",
    "MIN_NOISE_SAMPLES",
    "TAIL_SAMPLES",
    "default_key",
    "default_num_samples",
    "host_quantiles",
    "quantile_levels",
    "standard_noise",
]

DEFAULT_SEED = 0
#: Default number of predictive samples per point is the smallest even multiple of T that is >= this
#: (or T, for more networks than this).
MIN_NOISE_SAMPLES = 2000
#: With a calibration, the default sample count is raised so that the smallest mapped tail level
#: ``p`` has about this many samples beyond it (``S >= TAIL_SAMPLES / p``), capped at
#: ``MAX_NOISE_SAMPLES``; ``benchmarks/recalibration.py`` measures the resulting coverage error.
TAIL_SAMPLES = 10
MAX_NOISE_SAMPLES = 50000


@functools.cache
def default_key() -> Array:
    """``jax.random.key(DEFAULT_SEED)``, made once (creating a key is a computation of its own)."""
    return jax.random.key(DEFAULT_SEED)


def _normal(key: Array, shape: tuple[int, ...]) -> Array:
    """Standard-normal draws ``shape``, drawn in float32 and returned as float64.

    A deliberate dtype choice: float32 draws cost about half as much on a CPU, and their rounding
    (relative 6e-8) and tail cut (a float32 uniform resolves ``|z|`` up to about 5.4) are far below
    what the quantiles of at most ``MAX_NOISE_SAMPLES`` draws resolve (a calibrated tail level
    ``p`` is at least ``TAIL_SAMPLES / MAX_NOISE_SAMPLES = 2e-4``, i.e. ``|z| <= 3.6``)."""
    return jax.random.normal(key, shape, jnp.float32).astype(jnp.float64)


def standard_noise(
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


def host_quantiles(draws: np.ndarray, qs: np.ndarray, log10: bool) -> dict[str, np.ndarray]:
    """Quantiles ``[len(qs), c, t]`` of samples ``draws`` ``[c, t, S]``, NumPy's linear interpolation.

    Taken on the host: NumPy's vectorised sort is an order of magnitude faster than XLA's on a CPU.
    ``qs`` ``[k, t]``: the quantile levels, per target column (or ``[k]``, for every column). ``"log"``:
    of the samples; ``"orig"`` (``log10``): of ``10**samples``, interpolated between the transformed
    order statistics.
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


def quantile_levels(
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


def default_num_samples(t_nets: int, tail: float | None) -> int:
    """The default sample count: the smallest multiple of T >= ``MIN_NOISE_SAMPLES``, raised for a
    calibrated tail level ``tail`` to about ``TAIL_SAMPLES / tail`` (at most ``MAX_NOISE_SAMPLES``),
    then to an even multiple of T (antithetic pairs, see the module docstring) unless that would
    double it (one sample per network)."""
    want = MIN_NOISE_SAMPLES
    if tail is not None:
        want = max(want, min(MAX_NOISE_SAMPLES, math.ceil(TAIL_SAMPLES / max(tail, 1e-12))))
    per_network = math.ceil(want / t_nets)
    return t_nets * (per_network + per_network % 2 if per_network > 1 else 1)
