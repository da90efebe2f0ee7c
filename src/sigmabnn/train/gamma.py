"""Gamma draws without loops, for the Gibbs updates inside the compiled sampler.

Algorithm: Marsaglia and Tsang, "A simple method for generating gamma variables", ACM
Trans. Math. Softw. 26 (2000) 363. For shape ``a >= 1``, with ``d = a - 1/3`` and
``c = 1 / sqrt(9 d)``: draw ``x ~ N(0, 1)``, ``u ~ U(0, 1)``, set ``v = (1 + c x)^3``;
accept ``d v`` when ``v > 0`` and ``log u < x^2 / 2 + d - d v + d log v``. For ``a < 1``
the paper's boost: ``Gamma(a) = Gamma(a + 1) U^(1/a)``.

Why not ``jax.random.gamma``: it runs the rejection as a ``while_loop`` per element, which
makes the sampler's compiled chunk larger and slower to compile. Here each element gets
:data:`NUM_CANDIDATES` proposals at once and keeps the first accepted one, with no loop. A
proposal is accepted with probability above 0.95 for every ``a >= 1`` (the paper's
efficiency; ``tests/train/test_gamma.py`` measures it at ``a = 1``), so all of them are
rejected with probability below ``0.05 ** 8 < 4e-11`` per draw; that draw then returns
``d``, near the mode, instead of a further proposal (a departure from the exact
distribution of that order). The arithmetic is float64 whatever the inputs' dtype (the
acceptance test subtracts terms of size ``d``, which for shapes of ``10^4`` would lose its
digits in float32); the result has the shape's dtype.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

__all__ = ["NUM_CANDIDATES", "gamma"]

NUM_CANDIDATES = 8
"""Proposals per draw (see the module docstring for the chance that none is accepted)."""


def gamma(rng_key: Array, shape: Array, rate: Array) -> Array:
    """Gamma(``shape``, ``rate``) draws, one per element of ``jnp.broadcast_shapes(shape, rate)``.

    Args:
        rng_key: JAX PRNG key.
        shape: shape parameters ``a > 0`` (any array shape).
        rate: rate parameters ``> 0`` (broadcast with ``shape``); the mean is ``shape / rate``.

    Returns:
        The draws, with the broadcast shape and the dtype of ``shape`` (floating).
    """
    shape = jnp.asarray(shape)
    out_dtype = shape.dtype if jnp.issubdtype(shape.dtype, jnp.floating) else jnp.result_type(float)
    a = jnp.broadcast_to(shape, jnp.broadcast_shapes(jnp.shape(shape), jnp.shape(rate))).astype(jnp.float64)
    key_x, key_u, key_boost = jax.random.split(rng_key, 3)
    boost = a < 1.0
    d = jnp.where(boost, a + 1.0, a) - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    size = (NUM_CANDIDATES, *a.shape)
    x = jax.random.normal(key_x, size, jnp.float64)
    u = jax.random.uniform(key_u, size, jnp.float64, minval=jnp.finfo(jnp.float64).tiny)
    v = (1.0 + c * x) ** 3
    positive = v > 0.0
    log_v = jnp.log(jnp.where(positive, v, 1.0))
    accepted = positive & (jnp.log(u) < 0.5 * x * x + d - d * v + d * log_v)
    first = jnp.argmax(accepted, axis=0)
    chosen = jnp.take_along_axis(v, first[None], axis=0)[0]
    draw = d * jnp.where(jnp.any(accepted, axis=0), chosen, 1.0)
    u_boost = jax.random.uniform(key_boost, a.shape, jnp.float64, minval=jnp.finfo(jnp.float64).tiny)
    draw = jnp.where(boost, draw * u_boost ** (1.0 / a), draw)
    return (draw / jnp.asarray(rate, jnp.float64)).astype(out_dtype)
