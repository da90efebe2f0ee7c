"""Priors over network parameters.

:class:`GaussianPrior` is eq. (4.21) of the thesis draft: independent
zero-mean Gaussians on every kernel and bias entry, with a *precision*
(inverse variance) per group of entries: ``weight_precision[g]`` for the
kernel entries of group ``g`` and ``bias_precision[g]`` for its bias entries.
The groups are the layers; with ``scale_outputs`` a mean-and-scale network's
scale outputs form one more group, and with ``input_groups`` each input's
first-layer weights one more each (automatic relevance determination;
:meth:`GaussianPrior.groups`).
The precisions may be fixed or resampled by Gibbs updates
(:mod:`sigmabnn.train.gibbs`); in both cases they are passed in explicitly as
arrays of shape ``[num_groups]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.model.mlp import MLP, Layer, Params

Array = jax.Array

_LOG_2PI = jnp.log(2.0 * jnp.pi)


@dataclass(frozen=True)
class GaussianPrior:
    """Zero-mean Gaussian prior with a precision per group of entries.

    Group ``l < num_layers`` is layer ``l``'s kernel (precision ``weight_precision[l]``) and bias
    (``bias_precision[l]``). With ``scale_outputs = t > 0``, the last layer's trailing ``t`` output
    columns (a mean-and-scale network's scale outputs,
    :class:`~sigmabnn.model.likelihoods.HeteroscedasticStudentT`) are group ``num_layers`` instead:
    their kernel column and bias entries get precisions of their own, so a Gibbs step can shrink the
    scale head towards a constant (a homoscedastic fit) without shrinking the mean head.

    With ``input_groups``, each input's row of the first layer's kernel is a group of its own
    (groups ``num_layers + (1 if scale_outputs else 0) + i`` for input ``i``): automatic relevance
    determination (MacKay 1994; Neal 1996, section 1.2.3 and 4.3), with which sampled precisions shrink
    the weights of an input the data do not need. The first layer's group then holds only its bias;
    the input groups' bias precisions have no entries (a Gibbs step draws them from their hyperprior).

    Attributes:
        weight_precision: default precision ``lambda_W`` of kernel entries
            (1 / variance, in 1 / (kernel units)^2), used for every group unless
            per-group values are given to :meth:`log_prob`.
        bias_precision: default precision ``lambda_b`` of bias entries.
        scale_outputs: trailing output columns of the last layer forming their own group
            (0: none; the layers are the groups).
        input_groups: one group per input for the first layer's kernel rows (automatic relevance
            determination).
    """

    weight_precision: float = 1.0
    bias_precision: float = 1.0
    scale_outputs: int = 0
    input_groups: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.scale_outputs, bool) or not isinstance(self.scale_outputs, int | np.integer):
            raise ValueError(f"scale_outputs must be an integer, got {self.scale_outputs!r}")
        if self.scale_outputs < 0:
            raise ValueError(f"scale_outputs must be >= 0, got {self.scale_outputs}")
        if not isinstance(self.input_groups, bool | np.bool_):
            raise ValueError(f"input_groups must be true or false, got {self.input_groups!r}")

    def num_groups(self, mlp: MLP) -> int:
        """Number of precision groups: the layers, one for the scale outputs, one per input with ``input_groups``."""
        return self.first_input_group(mlp) + (mlp.widths[0] if self.input_groups else 0)

    def first_input_group(self, mlp: MLP) -> int:
        """Index of input 0's group (``input_groups``: input ``i``'s is this plus ``i``)."""
        return mlp.num_layers + (1 if self.scale_outputs else 0)

    def groups(self, mlp: MLP) -> tuple[Layer, ...]:
        """Each entry's group index (numpy ``int32``), as a parameters pytree of ``mlp``'s shapes.

        Raises:
            ValueError: ``scale_outputs`` not below the last layer's width.
        """
        out = []
        for i, (n_in, n_out) in enumerate(zip(mlp.widths[:-1], mlp.widths[1:])):
            bias = np.full((n_out,), i, np.int32)
            if i == mlp.num_layers - 1 and self.scale_outputs:
                if self.scale_outputs >= n_out:
                    raise ValueError(f"scale_outputs {self.scale_outputs} must be below the last width {n_out}")
                bias[n_out - self.scale_outputs :] = mlp.num_layers
            kernel = np.broadcast_to(bias, (n_in, n_out)).copy()
            if i == 0 and self.input_groups:  # the rows' mean columns (a one-layer network keeps its scale head)
                mean_columns = bias < mlp.num_layers
                kernel[:, mean_columns] = self.first_input_group(mlp) + np.arange(n_in, dtype=np.int32)[:, None]
            out.append(Layer(kernel, bias))
        return tuple(out)

    def group_sizes(self, mlp: MLP) -> tuple[np.ndarray, np.ndarray]:
        """``(kernel entries, bias entries)`` per group, each ``int`` ``[num_groups]``."""
        g = self.num_groups(mlp)
        groups = self.groups(mlp)
        kernel = sum(np.bincount(layer.kernel.ravel(), minlength=g) for layer in groups)
        bias = sum(np.bincount(layer.bias.ravel(), minlength=g) for layer in groups)
        return kernel, bias

    def squared_norms(self, mlp: MLP, params: Params) -> tuple[Array, Array]:
        """Per-group ``(||W_g||^2, ||b_g||^2)``, each of shape ``[num_groups]`` (the params' dtype).

        By static column slices, not a scatter over :meth:`groups`: this is inside every gradient.
        """
        zero = jnp.zeros((), params[0].kernel.dtype)
        w: list = [zero] * self.first_input_group(mlp)
        b: list = [zero] * self.first_input_group(mlp)
        last = mlp.num_layers - 1
        rows = None  # with input_groups: [inputs], each input's first-layer weights
        for i, layer in enumerate(params):
            cut = layer.bias.shape[0] - self.scale_outputs if i == last and self.scale_outputs else None
            mean_kernel = jnp.square(layer.kernel[:, :cut])
            if i == 0 and self.input_groups:
                rows = jnp.sum(mean_kernel, axis=1)
            else:
                w[i] = jnp.sum(mean_kernel)
            b[i] = jnp.sum(jnp.square(layer.bias[:cut]))
            if cut is not None:
                w[last + 1] = jnp.sum(jnp.square(layer.kernel[:, cut:]))
                b[last + 1] = jnp.sum(jnp.square(layer.bias[cut:]))
        w, b = jnp.stack(w), jnp.stack(b)
        if rows is None:
            return w, b
        return jnp.concatenate([w, rows]), jnp.concatenate([b, jnp.zeros_like(rows)])

    def precisions(self, mlp: MLP, dtype: jnp.dtype = jnp.float64) -> tuple[Array, Array]:
        """Default ``(weight_precision, bias_precision)`` arrays, shape ``[num_groups]``."""
        n = self.num_groups(mlp)
        return jnp.full((n,), self.weight_precision, dtype), jnp.full((n,), self.bias_precision, dtype)

    def entry_values(self, mlp: MLP, kernel_values: Array, bias_values: Array) -> Params:
        """A parameters pytree holding ``kernel_values[g]`` (``[num_groups]``) on the kernel entries of group
        ``g`` and ``bias_values[g]`` on its bias entries."""
        kernel_values, bias_values = jnp.asarray(kernel_values), jnp.asarray(bias_values)
        return tuple(Layer(kernel_values[idx.kernel], bias_values[idx.bias]) for idx in self.groups(mlp))

    def log_prob(self, mlp: MLP, params: Params, weight_precision: Array, bias_precision: Array) -> Array:
        """Normalised log density of ``params`` (scalar).

        ``sum_g [ n_g/2 log(lambda_g / 2 pi) - lambda_g/2 ||theta_g||^2 ]`` over the groups' kernels and
        biases; the normalisation matters when the precisions are themselves sampled.
        """
        w2, b2 = self.squared_norms(mlp, params)
        nw, nb = (jnp.asarray(n, w2.dtype) for n in self.group_sizes(mlp))
        lw = 0.5 * nw * (jnp.log(weight_precision) - _LOG_2PI) - 0.5 * weight_precision * w2
        lb = 0.5 * nb * (jnp.log(bias_precision) - _LOG_2PI) - 0.5 * bias_precision * b2
        return jnp.sum(lw) + jnp.sum(lb)

    def sample(self, key: Array, mlp: MLP, weight_precision: Array, bias_precision: Array, dtype=jnp.float64) -> Params:
        """One draw of the parameters from the prior (``dtype``)."""
        keys = jax.random.split(key, 2 * mlp.num_layers)
        precision = self.entry_values(mlp, weight_precision, bias_precision)
        layers = []
        for i, p in enumerate(precision):
            w = jax.random.normal(keys[2 * i], p.kernel.shape, dtype) / jnp.sqrt(p.kernel)
            b = jax.random.normal(keys[2 * i + 1], p.bias.shape, dtype) / jnp.sqrt(p.bias)
            layers.append(Layer(w.astype(dtype), b.astype(dtype)))
        return tuple(layers)
