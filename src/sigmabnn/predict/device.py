"""A fitted model's networks on the device, and the network pass over a chunk of points.

The networks run in groups of about ``NETWORK_GROUP`` (a ``lax.scan``; each group with
:func:`~sigmabnn.model.mlp.forward_ensemble`, hidden units points-last), so that a group's hidden
units (``NETWORK_GROUP x width x chunk``) stay in the CPU caches; the kernels are stored
transposed, ``[out, in]``, on the device. A model's arrays are copied to the device once per model
object (:func:`device_model`). The networks run in the model's dtype; everything after the network
output (transforms, moments, quantiles) is computed in float64.
"""

from __future__ import annotations

import functools
import math
import weakref
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn import compiler
from sigmabnn.fitted import FittedModel
from sigmabnn.model.mlp import forward_ensemble, out_in_layers
from sigmabnn.model.posterior import BNN
from sigmabnn.predict.mixture import group_stats, lognormal_parts, merge_stats

Array = jax.Array

__all__ = [
    "NETWORK_GROUP",
    "DeviceModel",
    "device_model",
    "log_offset",
    "network_groups",
    "per_draw",
    "streamed_moments",
    "to_log_space",
]

#: Networks evaluated together inside a chunk (:func:`per_draw`); docs/architecture.md
#: ("Prediction") records how the value was chosen.
NETWORK_GROUP = 10


class DeviceModel(NamedTuple):
    """A fitted model's arrays on the device, in the form the chunk functions take them.

    Attributes:
        params: the networks' layers in groups (:class:`~sigmabnn.model.mlp.OutInLayer`, kernels
            stored transposed for :func:`~sigmabnn.model.mlp.forward_ensemble`), leading axes ``[k, G]`` with
            ``k = ceil(T / NETWORK_GROUP)`` groups of ``G = ceil(T / k)`` networks, model dtype;
            the last ``k G - T`` (fewer than ``k``) repeat the first network and are dropped
            from every result (:func:`network_groups`).
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
    return compiler.jit(lambda pos: out_in_layers(jax.vmap(jax.vmap(bnn.unflatten))(pos)))


def network_groups(num_networks: int) -> tuple[int, int]:
    """``(k, G)``: the fewest groups of at most ``NETWORK_GROUP`` networks, ``G`` as even as can be."""
    k = max(1, math.ceil(num_networks / NETWORK_GROUP))
    return k, math.ceil(num_networks / k)


def _grouped(a: np.ndarray, k: int, g: int) -> np.ndarray:
    """``a`` ``[T, ...]`` padded with copies of ``a[0]`` to ``k g`` rows, reshaped to ``[k, g, ...]``."""
    pad = np.repeat(a[:1], k * g - a.shape[0], axis=0)
    return np.concatenate([a, pad]).reshape((k, g) + a.shape[1:])


def device_model(fitted: FittedModel) -> DeviceModel:
    """The model's networks, noise precisions and target transform on the device (cached).

    Unflattened once per model object and cached (a FittedModel is immutable), so that no chunk
    slices the flat ``[T, d]`` draws into layers again (which copies every weight per chunk), and
    the small arrays are converted once rather than on every call (a one-point prediction is
    mostly such fixed costs).
    """
    cached = _DEVICE_MODELS.get(fitted)
    if cached is not None:
        return cached
    d = fitted.draws
    dtype = fitted.bnn.jdtype
    t = d.num_networks
    k, g = network_groups(t)
    pos = jnp.asarray(_grouped(np.asarray(d.positions).reshape(t, -1), k, g), dtype=dtype)
    offset = fitted.y_transform.standardized_offset(fitted.x_transform, fitted.feature_names)
    model = DeviceModel(
        params=_unflatten_all(fitted.bnn)(pos),
        noise_precision=jnp.asarray(_grouped(np.asarray(d.hyper.noise_precision).reshape(t), k, g), dtype=dtype),
        y_mean=jnp.asarray(fitted.y_transform.mean, jnp.float64),
        y_scale=jnp.asarray(fitted.y_transform.scale, jnp.float64),
        **dict(zip(("offset_b", "offset_w"), map(jnp.asarray, offset))),
    )
    model = jax.block_until_ready(model)
    _DEVICE_MODELS[fitted] = model
    return model


def _network_parts(bnn: BNN, f: Array, precision: Array, noise_std: Array | None) -> tuple[Array, Array]:
    """Model-space ``mu``, ``var`` ``[G, c, t]`` float64 of a group of networks' outputs ``f``
    ``[G, c, out]`` (model dtype) with noise precisions ``precision`` ``[G]``: each network's
    Gaussian mean and aleatoric variance under ``bnn.likelihood``."""
    lik = bnn.likelihood
    mu, var = jax.vmap(lambda f1, p1: (lik.mean(f1), lik.aleatoric_variance(f1, p1, noise_std)))(f, precision)
    return mu.astype(jnp.float64), var.astype(jnp.float64)


def log_offset(model: DeviceModel, z: Array) -> Array:
    """``[c, t]`` float64: what :func:`to_log_space` adds to the scaled model-space means at
    standardised inputs ``z`` ``[c, p]`` (the target mean plus the baseline)."""
    return model.y_mean + model.offset_b + z.astype(jnp.float64) @ model.offset_w


def to_log_space(model: DeviceModel, offset: Array, mu: Array, var: Array) -> tuple[Array, Array]:
    """Model-space ``mu``, ``var`` ``[T, c, t]`` float64 -> the target's log space (or its own space
    without ``log10``): ``mu * y_scale + offset`` and ``var * y_scale**2``; ``offset`` from
    :func:`log_offset`."""
    return mu * model.y_scale + offset, var * jnp.square(model.y_scale)


def per_draw(bnn: BNN, model: DeviceModel, z: Array, noise_std: Array | None, num_networks: int):
    """Model-space ``mu``, ``var`` ``[T, c, t]`` float64 of every network at standardised inputs ``z`` ``[c, p]``.

    The networks run group by group (``model.params`` has leading ``[groups, NETWORK_GROUP]`` axes,
    see :func:`device_model`; a ``lax.scan`` over the groups), each group with
    :func:`~sigmabnn.model.mlp.forward_ensemble`; the padding networks of the last group are dropped
    (``num_networks = T``, static). A single point (the latency path) runs all networks at once:
    with one point there are no hidden units to keep in the caches, and one call is cheaper than
    the scan.
    """

    def parts(f: Array, precision: Array) -> tuple[Array, Array]:
        return _network_parts(bnn, f, precision, noise_std)

    if z.shape[0] == 1:
        flat = jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), (model.params, model.noise_precision))
        params, precision = flat
        mu, var = parts(forward_ensemble(bnn.mlp, params, z), precision)
        return mu[:num_networks], var[:num_networks]

    def group(carry: None, g: tuple[Any, Array]) -> tuple[None, tuple[Array, Array]]:
        return None, parts(forward_ensemble(bnn.mlp, g[0], z), g[1])

    _, (mu, var) = jax.lax.scan(group, None, (model.params, model.noise_precision))
    return tuple(a.reshape((-1,) + a.shape[2:])[:num_networks] for a in (mu, var))


def streamed_moments(bnn: BNN, model: DeviceModel, z: Array, noise_std: Array | None, num_networks: int, log10: bool):
    """The log-space moments of :func:`~sigmabnn.predict.mixture.moments` (and, when ``log10``, the
    original-space ones of :func:`~sigmabnn.predict.mixture.lognormal_moments`), accumulated group
    by group inside the network scan, for ``z`` ``[c, p]`` (``c > 1``).

    The same definitions as materialising ``mu``, ``var`` ``[T, c, t]`` and reducing over the
    networks, up to the order of floating-point sums: each group's weighted mean and squared
    deviations are merged into the running ones (:func:`~sigmabnn.predict.mixture.merge_stats`),
    so a group's per-network values never leave the CPU caches.
    """
    k, g = model.noise_precision.shape
    weights = jnp.asarray((np.arange(k * g) < num_networks).reshape(k, g), jnp.float64)
    offset = log_offset(model, z)  # [c, t]

    def group(carry: Any, xs: tuple[Any, Array, Array]) -> tuple[Any, None]:
        params, precision, w = xs
        mu, var = _network_parts(bnn, forward_ensemble(bnn.mlp, params, z), precision, noise_std)
        mu, var = to_log_space(model, offset, mu, var)
        stats = {"log": group_stats(mu, var, w)}
        if log10:
            stats["orig"] = group_stats(*lognormal_parts(mu, var), w)
        if carry is None:
            return stats, None
        return jax.tree.map(lambda *ab: merge_stats(*ab), carry, stats, is_leaf=lambda x: isinstance(x, tuple)), None

    first = jax.tree.map(lambda a: a[0], (model.params, model.noise_precision, weights))
    rest = jax.tree.map(lambda a: a[1:], (model.params, model.noise_precision, weights))
    init, _ = group(None, first)
    total, _ = jax.lax.scan(group, init, rest)
    out = {}
    for space, (n, mean, m2, sum_var) in total.items():
        out[space] = {"mean": mean, "epistemic_var": m2 / n, "aleatoric_var": sum_var / n}
    return out
