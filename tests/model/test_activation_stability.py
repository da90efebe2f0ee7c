"""Overflow-prone activations stay finite, with finite gradients, for huge pre-activations.

A sampler's trajectory can visit weights that put pre-activations at 1e30 or
beyond; an activation that returned inf or NaN there (``exp(x^2)``,
``1 / (1 + exp(-x))`` computed naively) would turn a rejected proposal into
a NaN log-density. These tests pin down that every activation, its value and
its derivative, is finite on the whole float range, in float64 and float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.model.mlp import ACTIVATIONS, MLP, forward, init_params

HUGE = {
    "float64": [-1e300, -1e30, -1e3, -40.0, -1e-300, 0.0, 1e-300, 40.0, 1e3, 1e30, 1e300],
    "float32": [-3e38, -1e30, -1e3, -40.0, -1e-38, 0.0, 1e-38, 40.0, 1e3, 1e30, 3e38],
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_value_and_gradient_are_finite_everywhere(name, dtype):
    x = jnp.asarray(HUGE[dtype], dtype)
    f = ACTIVATIONS[name]
    y = f(x)
    g = jax.vmap(jax.grad(lambda v: f(v)))(x)
    assert y.dtype == x.dtype and g.dtype == x.dtype
    assert np.all(np.isfinite(np.asarray(y))), (name, np.asarray(y))
    assert np.all(np.isfinite(np.asarray(g))), (name, np.asarray(g))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_bounded_activations_saturate_to_their_limits(dtype):
    x = jnp.asarray(HUGE[dtype], dtype)
    far = np.abs(np.asarray(x)) >= 1e3
    rbf, sig, tanh = (np.asarray(ACTIVATIONS[n](x)) for n in ("rbf", "sigmoid", "tanh"))
    np.testing.assert_array_equal(rbf[far], 0.0)  # exp(-x^2) underflows to 0, never NaN
    np.testing.assert_array_equal(sig[far], (np.asarray(x)[far] > 0).astype(dtype))
    np.testing.assert_array_equal(tanh[far], np.sign(np.asarray(x)[far]))
    assert np.all((rbf >= 0) & (rbf <= 1)) and np.all((sig >= 0) & (sig <= 1))
    for name in ("rbf", "sigmoid", "tanh"):
        g = np.asarray(jax.vmap(jax.grad(ACTIVATIONS[name]))(x))
        np.testing.assert_array_equal(g[far], 0.0)  # flat far out: no NaN from 0 * inf


@pytest.mark.parametrize("name", ["rbf", "sigmoid", "tanh"])  # bounded: unbounded ones overflow by design
def test_a_network_with_huge_weights_has_finite_outputs_and_gradients(name):
    mlp = MLP((2, 8, 8, 1), (name, name, "identity"))
    params = jax.tree_util.tree_map(lambda a: a * 1e150, init_params(jax.random.key(0), mlp))
    x = jnp.asarray([[1e3, -1e3], [0.5, 0.25]])
    out = forward(mlp, params, x)
    grads = jax.grad(lambda p: jnp.sum(jnp.tanh(forward(mlp, p, x) * 1e-300)))(params)
    assert np.all(np.isfinite(np.asarray(out)))
    assert all(np.all(np.isfinite(np.asarray(g))) for g in jax.tree_util.tree_leaves(grads))
