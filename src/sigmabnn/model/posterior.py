"""The BNN log-posterior: prior + likelihood over data, on a flat parameter vector.

``log p(theta | D, h) = log p(theta | h) + log p(y | f(x; theta), h)``: minus
the potential energy V of eq. (4.24) in the thesis draft (up to -log Z), where
``h`` are the :class:`Hyperparameters` (the prior precisions and the noise
precision). Samplers see a function of a flat ``[num_params]`` vector; the
hyperparameters are passed explicitly, so Gibbs updates can change them
between weight updates without rebuilding anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.model.likelihoods import Gaussian, Likelihood
from sigmabnn.model.mlp import MLP, Params, forward, make_unflatten
from sigmabnn.model.priors import GaussianPrior

Array = jax.Array


class Data(NamedTuple):
    """Training data as arrays.

    Attributes:
        x: inputs ``[n, input_dim]``, floating dtype of the run.
        y: targets ``[n, target_dim]`` (floating), or ``[n]`` integer labels
            for a categorical likelihood.
        noise_std: known per-point noise std ``[n]`` or ``[n, target_dim]``
            (target units), or ``None``.
    """

    x: Array
    y: Array
    noise_std: Array | None = None


class Hyperparameters(NamedTuple):
    """Precisions that the log-posterior is conditioned on.

    Attributes:
        noise_precision: scalar; 1 / noise variance of a homoscedastic
            Gaussian likelihood (ignored by the other likelihoods).
        weight_precision: ``[num_groups]``; prior precision of kernel entries per group
            (:meth:`~sigmabnn.model.priors.GaussianPrior.groups`: the layers, a scale head's own, one per input
            with automatic relevance determination).
        bias_precision: ``[num_groups]``; prior precision of bias entries per group.
    """

    noise_precision: Array
    weight_precision: Array
    bias_precision: Array


@dataclass(frozen=True)
class BNN:
    """What a Bayesian MLP is: architecture, prior, likelihood, dtype. No data, no state.

    Attributes:
        mlp: the architecture.
        prior: prior over kernels and biases (default precisions inside).
        likelihood: one of :mod:`sigmabnn.model.likelihoods`.
        dtype: ``"float64"`` or ``"float32"``; see :mod:`sigmabnn.dtypes`.
    """

    mlp: MLP
    prior: GaussianPrior = field(default_factory=GaussianPrior)
    likelihood: Likelihood = field(default_factory=Gaussian)
    dtype: str = "float64"

    @property
    def jdtype(self) -> jnp.dtype:
        return jnp.dtype(self.dtype)

    def default_hyperparameters(self) -> Hyperparameters:
        """Hyperparameters at their fixed / initial values."""
        w, b = self.prior.precisions(self.mlp, self.jdtype)
        noise = getattr(self.likelihood, "precision", 1.0)
        return Hyperparameters(jnp.asarray(noise, self.jdtype), w, b)

    def unflatten(self, position: Array) -> Params:
        """Parameters pytree from a flat ``[num_params]`` vector."""
        return make_unflatten(self.mlp, self.jdtype)(position)

    def apply(self, params: Params, x: Array) -> Array:
        """Raw network output ``[n, output_dim]``."""
        return forward(self.mlp, params, x)

    def outputs(self, position: Array, x: Array) -> Array:
        """Raw network outputs ``[n, output_dim]`` at ``position`` ``[num_params]`` for inputs ``x`` ``[n, input_dim]``.

        From :data:`LIKELIHOOD_MIN_BLOCKS` blocks' worth of rows on, the rows go through the network
        in blocks of :meth:`row_block` rows (a ``lax.map``), so the working set is one block's
        activations, as in :meth:`log_likelihood`; below, in one pass. The outputs are the same.
        """
        params = self.unflatten(position)
        n = int(x.shape[0])
        block = self.block_rows(n)
        if block >= n:
            return self.apply(params, x)
        head, tail = _split_blocks(x, block)
        out = jax.lax.map(lambda rows: self.apply(params, rows), head)
        out = out.reshape((-1,) + out.shape[2:])
        return out if tail is None else jnp.concatenate([out, self.apply(params, tail)])

    def log_prior(self, position: Array, hyper: Hyperparameters) -> Array:
        params = self.unflatten(position)
        return self.prior.log_prob(self.mlp, params, hyper.weight_precision, hyper.bias_precision)

    def log_likelihood(self, position: Array, hyper: Hyperparameters, data: Data) -> Array:
        """``log p(y | f(x; theta), h)`` summed over the rows (scalar); in blocks of :meth:`row_block` rows
        from :data:`LIKELIHOOD_MIN_BLOCKS` blocks' worth of rows on, else in one pass."""
        return blocked_log_likelihood(self, position, hyper, data, self.block_rows(int(data.x.shape[0])))

    def block_rows(self, n: int) -> int:
        """Rows per block for ``n`` rows: :meth:`row_block` from :data:`LIKELIHOOD_MIN_BLOCKS` blocks' worth
        of rows on, else ``n`` (one pass)."""
        block = self.row_block()
        return block if n >= LIKELIHOOD_MIN_BLOCKS * block else n

    def row_block(self) -> int:
        """Rows per block of :meth:`log_likelihood`: :data:`LIKELIHOOD_BLOCK_BYTES` over the dtype's size."""
        return LIKELIHOOD_BLOCK_BYTES // self.jdtype.itemsize

    def log_posterior(self, position: Array, hyper: Hyperparameters, data: Data) -> Array:
        """Unnormalised log-posterior (scalar) = -V of eq. (4.24)."""
        return self.log_prior(position, hyper) + self.log_likelihood(position, hyper, data)


#: Rows per block of the log-likelihood times the dtype's size: 8,192 rows in float32, 4,096 in float64.
#: Summed in blocks (:func:`blocked_log_likelihood`), a gradient's working set is one block's activations,
#: which stays in the cache whatever the rows. Not varied inside the samplers' loops
#: (``benchmarks/row_blocks.py`` keeps it fixed).
LIKELIHOOD_BLOCK_BYTES = 32768
#: The fewest blocks' worth of rows a table needs before :meth:`BNN.log_likelihood` sums in blocks. Chosen
#: by ``benchmarks/row_blocks.py`` (``results/row_blocks.md``): leapfrog loops of the samplers' value and
#: gradient, where below this many rows the one pass was about as fast.
LIKELIHOOD_MIN_BLOCKS = 4


def blocked_log_likelihood(bnn: BNN, position: Array, hyper: Hyperparameters, data: Data, block: int) -> Array:
    """``bnn``'s log-likelihood of ``data`` (scalar), the rows summed in blocks of ``block``.

    Every likelihood is a sum of per-row terms, so the blocks' sums add up to the whole's (up to
    rounding). With ``n <= block`` rows it is one evaluation; otherwise a ``lax.scan`` over the
    ``n // block`` full blocks plus the remaining rows, so a gradient's working set is one block's
    activations. How the gradient is formed depends on whether the data are traced:

    - concrete data (the samplers' case: the training rows closed over by the log-density): each
      block's value and gradient come from one forward and one backward pass, summed in the scan
      (a ``jax.custom_vjp``, :func:`_fused_blocks`). The value is not computed a second time, which
      the samplers would otherwise pay: they use the value too (the Hamiltonian's energy).
      Forward-mode differentiation (``jax.jvp``) is not defined on this path.
    - traced data (an argument of a jitted or vmapped function): each block's term under
      ``jax.checkpoint`` (its gradient recomputes the block's forward pass), so every derivative,
      the data's included, is JAX's own.
    """
    traced = any(isinstance(a, jax.core.Tracer) for a in jax.tree_util.tree_leaves(data))
    y = data.y if data.y.ndim == 2 or bnn.likelihood.name == "categorical" else data.y[:, None]
    rows = (data.x, y, data.noise_std)
    n = int(data.x.shape[0])
    if n <= block:
        return _block_term(bnn, position, hyper, rows)
    head, tail = _split_blocks(rows, block)
    if traced:
        return _checkpointed_blocks(bnn, position, hyper, head, tail)
    return _fused_blocks(bnn, head, tail)(position, hyper)


Rows = tuple[Array, Array, Array | None]


def _split_blocks(tree: Any, block: int) -> tuple[Any, Any]:
    """``(head, tail)`` of a pytree of arrays with ``n`` leading rows: ``head`` the ``n // block`` full
    blocks (leading ``[n // block, block]``), ``tail`` the remaining rows (``None`` when there are none)."""
    n = int(jax.tree_util.tree_leaves(tree)[0].shape[0])
    full = n // block
    head = jax.tree_util.tree_map(lambda a: a[: full * block].reshape((full, block) + a.shape[1:]), tree)
    tail = jax.tree_util.tree_map(lambda a: a[full * block :], tree) if n > full * block else None
    return head, tail


def _zero_term(bnn: BNN, position: Array, hyper: Hyperparameters, head: Rows) -> Array:
    """A zero of the dtype of a block's log-likelihood (the sums' starting value)."""
    first = jax.tree_util.tree_map(lambda a: a[0], head)
    return jnp.zeros((), jax.eval_shape(lambda r: _block_term(bnn, position, hyper, r), first).dtype)


def _block_term(bnn: BNN, position: Array, hyper: Hyperparameters, rows: Rows) -> Array:
    """The log-likelihood (scalar) of one block of rows ``(x, y [m, t] or labels, noise_std)``."""
    x, y, noise_std = rows
    return bnn.likelihood.log_prob(bnn.apply(bnn.unflatten(position), x), y, hyper.noise_precision, noise_std)


def _scan_sum(fn: Callable[[Rows], Any], zero: Any, head: Rows, tail: Rows | None) -> Any:
    """``fn`` summed (leaf by leaf) over the full blocks ``head`` (a ``lax.scan``) and the remainder ``tail``."""
    add = lambda a, b: jax.tree_util.tree_map(jnp.add, a, b)  # noqa: E731
    total, _ = jax.lax.scan(lambda acc, r: (add(acc, fn(r)), None), zero, head)
    return total if tail is None else add(total, fn(tail))


def _checkpointed_blocks(bnn: BNN, position: Array, hyper: Hyperparameters, head: Rows, tail: Rows | None) -> Array:
    term = jax.checkpoint(lambda r: _block_term(bnn, position, hyper, r))
    return _scan_sum(term, _zero_term(bnn, position, hyper, head), head, tail)


def _fused_blocks(bnn: BNN, head: Rows, tail: Rows | None) -> Callable[[Array, Hyperparameters], Array]:
    """``(position, hyper) -> log-likelihood`` over concrete rows, its gradient formed block by block.

    Under differentiation the forward rule scans ``value_and_grad`` of each block's term (with
    respect to the position and the hyperparameters) and keeps the summed gradient as the residual;
    the backward rule scales it by the cotangent. The rows are constants here, so no derivative with
    respect to them can be asked for.
    """
    value_and_grad = jax.value_and_grad(lambda p, h, r: _block_term(bnn, p, h, r), argnums=(0, 1))

    def primal(position: Array, hyper: Hyperparameters) -> Array:
        zero = _zero_term(bnn, position, hyper, head)
        return _scan_sum(lambda r: _block_term(bnn, position, hyper, r), zero, head, tail)

    def forward(position: Array, hyper: Hyperparameters) -> tuple[Array, Any]:
        zero = (_zero_term(bnn, position, hyper, head), jax.tree_util.tree_map(jnp.zeros_like, (position, hyper)))
        value, grads = _scan_sum(lambda r: value_and_grad(position, hyper, r), zero, head, tail)
        return value, grads

    def backward(grads: Any, cotangent: Array) -> Any:
        return jax.tree_util.tree_map(lambda g: cotangent * g, grads)

    fused = jax.custom_vjp(primal)
    fused.defvjp(forward, backward)
    return fused


class _LogPosterior(NamedTuple):
    """``bnn``'s log-posterior as a function of the data first (hashable: the model's structure only)."""

    bnn: BNN

    def __call__(self, data: Data, position: Array, hyper: Hyperparameters) -> Array:
        return self.bnn.log_posterior(position, hyper, data)


def make_logdensity(bnn: BNN, data: Data) -> Callable[[Array, Hyperparameters], Array]:
    """``logdensity(position [num_params], hyper) -> scalar`` for the samplers.

    A :class:`jax.tree_util.Partial` whose pytree leaves are ``data``'s arrays: a jitted function that
    takes it as an argument (the samplers' chunks do, :mod:`sigmabnn.mcmc.chunks`) traces the data as
    inputs instead of folding them into the executable as constants, so its compiled code is the same
    for every data set of the same shapes and dtypes (:mod:`sigmabnn.compile_cache`).
    """
    return jax.tree_util.Partial(_LogPosterior(bnn), data)
