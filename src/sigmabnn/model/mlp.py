"""Multilayer perceptrons: architecture spec, initialisation, forward pass.

A network is described by a hashable :class:`MLP` spec (layer widths and one
activation per layer) and its parameters, a tuple of :class:`Layer` named
tuples (a JAX pytree). Samplers work on a flat 1-d view of the parameters,
obtained with :func:`flatten` / :func:`make_unflatten`.

Shapes: ``kernel`` of layer ``l`` is ``[widths[l], widths[l + 1]]`` and
``bias`` is ``[widths[l + 1]]``; inputs ``x`` are ``[n, widths[0]]`` and
outputs ``[n, widths[-1]]``. All arrays of one network share one floating
dtype (see :mod:`sigmabnn.dtypes`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

Array = jax.Array

__all__ = [
    "ACTIVATIONS",
    "MLP",
    "Layer",
    "Params",
    "parse_architecture",
    "init_params",
    "forward",
    "forward_ensemble",
    "OutInLayer",
    "out_in_layers",
    "num_params",
    "flatten",
    "make_unflatten",
]


#: exp(-x^2) is exactly 0 beyond |x| = 27.3 (float64) or 10.2 (float32): clipping at 30 changes no value.
_RBF_CLIP = 30.0


def _rbf(x: Array) -> Array:
    # exp(-x^2) underflows to 0 for large |x| (never overflows), but its derivative -2x exp(-x^2)
    # is 0 * inf = NaN once 2x overflows (|x| > 1.7e38 in float32). Clipping first keeps every
    # value and makes the derivative exactly 0 far out.
    return jnp.exp(-jnp.square(jnp.clip(x, -_RBF_CLIP, _RBF_CLIP)))


ACTIVATIONS: dict[str, Callable[[Array], Array]] = {
    "tanh": jnp.tanh,
    "relu": jax.nn.relu,
    "silu": jax.nn.silu,
    "swish": jax.nn.silu,
    "sigmoid": jax.nn.sigmoid,
    "rbf": _rbf,
    "identity": lambda x: x,
}


class Layer(NamedTuple):
    """One dense layer. ``kernel``: ``[n_in, n_out]``; ``bias``: ``[n_out]``."""

    kernel: Array
    bias: Array


Params = tuple[Layer, ...]


class MLP(NamedTuple):
    """Static, hashable description of a fully connected network.

    Attributes:
        widths: layer widths including input and output, e.g. ``(5, 20, 20, 1)``.
        activations: one name per layer (``len(widths) - 1`` entries), applied
            after that layer's affine map; the last is normally ``"identity"``.
    """

    widths: tuple[int, ...]
    activations: tuple[str, ...]

    @property
    def num_layers(self) -> int:
        """Number of affine layers (kernels)."""
        return len(self.widths) - 1

    @property
    def input_dim(self) -> int:
        return self.widths[0]

    @property
    def output_dim(self) -> int:
        return self.widths[-1]

    def describe(self) -> str:
        """Architecture string such as ``"5-20-20-1"``."""
        return "-".join(str(w) for w in self.widths)


def parse_architecture(
    spec: str | tuple[int, ...] | list[int],
    activation: str | tuple[str, ...] | list[str] = "tanh",
    output_activation: str = "identity",
) -> MLP:
    """Build an :class:`MLP` from ``"5-20-20-1"`` (or a sequence of widths).

    ``activation`` is one name for every hidden layer, or one per hidden layer.
    Raises ``ValueError`` with a one-line message on a malformed spec.
    """
    if isinstance(spec, str):
        try:
            widths = tuple(int(w) for w in spec.replace(",", "-").split("-") if w.strip())
        except ValueError:
            raise ValueError(f"architecture {spec!r} is not of the form '5-20-20-1'") from None
    else:
        widths = tuple(int(w) for w in spec)
    if len(widths) < 2 or any(w < 1 for w in widths):
        raise ValueError(f"architecture {spec!r} needs at least two positive widths")
    n_hidden = len(widths) - 2
    if isinstance(activation, str):
        hidden = (activation,) * n_hidden
    else:
        hidden = tuple(activation)
        if len(hidden) != n_hidden:
            raise ValueError(f"{len(hidden)} activations given for {n_hidden} hidden layers")
    acts = hidden + (output_activation,)
    for a in acts:
        if a not in ACTIVATIONS:
            raise ValueError(f"unknown activation {a!r}; choose from {', '.join(sorted(ACTIVATIONS))}")
    return MLP(widths, acts)


def init_params(key: Array, mlp: MLP, dtype: jnp.dtype = jnp.float64, scale: str = "glorot") -> Params:
    """Random parameters: Glorot-normal kernels (``scale="glorot"``), zero biases.

    ``scale="prior"`` is not handled here; draw from a prior with
    :meth:`sigmabnn.model.priors.GaussianPrior.sample` instead.
    """
    if scale != "glorot":
        raise ValueError(f"unknown init scale {scale!r}")
    keys = jax.random.split(key, mlp.num_layers)
    layers = []
    for k, n_in, n_out in zip(keys, mlp.widths[:-1], mlp.widths[1:]):
        std = jnp.sqrt(2.0 / (n_in + n_out))
        # the barrier keeps XLA from folding ``std`` into the normal's own constant under jit, so
        # jitted and eager draws are the same numbers
        layers.append(
            Layer(
                kernel=(std * jax.lax.optimization_barrier(jax.random.normal(k, (n_in, n_out)))).astype(dtype),
                bias=jnp.zeros((n_out,), dtype),
            )
        )
    return tuple(layers)


def forward(mlp: MLP, params: Params, x: Array) -> Array:
    """Network output for inputs ``x`` of shape ``[..., n, widths[0]]`` -> ``[..., n, widths[-1]]``.

    Hidden units are kept points-last (``[..., width, n]``): each layer is the product
    ``kernel^T h`` whose long axis is the points, the layout of :func:`forward_ensemble`. The
    values are those of the points-first ``act(h @ kernel + bias)`` up to the order of
    floating-point sums. The samplers' and MAP's gradients go through here with the chains
    vmapped; ``benchmarks/train_layout.py`` times both layouts side by side
    (``results/train_layout.md``), where points-last was the faster on every network, row count,
    dtype and chain count measured.
    """
    h = jnp.swapaxes(x, -1, -2)
    for layer, act in zip(params, mlp.activations):
        h = ACTIVATIONS[act](layer.kernel.T @ h + layer.bias[:, None])
    return jnp.swapaxes(h, -1, -2)


class OutInLayer(NamedTuple):
    """A layer of many networks with its kernel stored transposed (for :func:`forward_ensemble`).

    Attributes:
        kernel_t: ``[..., n_out, n_in]``, the :class:`Layer` kernel with its last two axes swapped,
            so that the contraction axis is the contiguous one.
        bias: ``[..., n_out]``.
    """

    kernel_t: Array
    bias: Array


def out_in_layers(params: Params) -> tuple[OutInLayer, ...]:
    """``params`` (any leading axes) as :class:`OutInLayer` s: every kernel transposed (a copy)."""
    return tuple(OutInLayer(jnp.swapaxes(layer.kernel, -1, -2), layer.bias) for layer in params)


def forward_ensemble(mlp: MLP, layers: Sequence[OutInLayer], x: Array) -> Array:
    """Outputs of ``T`` networks at the same inputs: ``layers`` (:func:`out_in_layers` of parameters
    with a leading ``[T]`` axis), ``x`` ``[n, widths[0]]`` -> ``[T, n, widths[-1]]``, in the
    parameters' dtype.

    The same values as ``jax.vmap(lambda p: forward(mlp, p, x))(params)`` up to the order of
    floating-point sums. Hidden units are kept points-last (``[T, width, n]``), so each layer is one
    batched product ``[out, in] x [in, n]`` whose long axis is the points; for one point (``n = 1``,
    static) each layer is a batched matrix-vector product over the networks. Measured on a CPU for
    1,000 ``5-20-20-1`` networks (``benchmarks/predict.py`` times the layouts side by side): the
    points-last layout ran 1.2-2x faster than the vmapped points-first network, and kernels stored ``[out, in]``
    (contraction axis contiguous) ran a chunk 4 % (float64) and 13 % (float32) faster and one point
    1.3-1.6x faster than ``[in, out]`` (ad hoc measurements).
    """
    if x.shape[0] == 1:
        h = x[0]
        for i, (layer, act) in enumerate(zip(layers, mlp.activations)):
            h = jnp.einsum("toi,i->to" if i == 0 else "toi,ti->to", layer.kernel_t, h)
            h = ACTIVATIONS[act](h + layer.bias)
        return h[:, None, :]
    h = None
    for i, (layer, act) in enumerate(zip(layers, mlp.activations)):
        if i == 0:
            h = jnp.einsum("toi,ni->ton", layer.kernel_t, x)
        else:
            h = jnp.einsum("toi,tin->ton", layer.kernel_t, h)
        h = ACTIVATIONS[act](h + layer.bias[:, :, None])
    return jnp.swapaxes(h, 1, 2)


def num_params(mlp: MLP) -> int:
    """Total number of scalar parameters (kernels and biases)."""
    return sum(n_in * n_out + n_out for n_in, n_out in zip(mlp.widths[:-1], mlp.widths[1:]))


def flatten(params: Params) -> Array:
    """Flat ``[num_params]`` view, layer by layer (kernel row-major, then bias)."""
    return ravel_pytree(params)[0]


def make_unflatten(mlp: MLP, dtype: jnp.dtype = jnp.float64) -> Callable[[Array], Params]:
    """Inverse of :func:`flatten` for this architecture and dtype."""
    template = tuple(
        Layer(jnp.zeros((n_in, n_out), dtype), jnp.zeros((n_out,), dtype))
        for n_in, n_out in zip(mlp.widths[:-1], mlp.widths[1:])
    )
    return ravel_pytree(template)[1]
