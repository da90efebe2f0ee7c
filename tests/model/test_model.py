"""The model layer: architecture parsing, flat views, priors, likelihoods and eq. (4.24)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from sigmabnn.model import (
    BNN,
    Categorical,
    Data,
    Gaussian,
    GaussianPrior,
    HeteroscedasticGaussian,
    KnownNoiseGaussian,
    forward,
    forward_ensemble,
    init_params,
    make_logdensity,
    num_params,
    out_in_layers,
    parse_architecture,
)
from sigmabnn.model.mlp import flatten, make_unflatten


def test_parse_architecture_and_counts():
    mlp = parse_architecture("5-20-20-1", activation="tanh")
    assert mlp.widths == (5, 20, 20, 1)
    assert mlp.activations == ("tanh", "tanh", "identity")
    assert num_params(mlp) == 5 * 20 + 20 + 20 * 20 + 20 + 20 + 1
    mixed = parse_architecture([3, 4, 2], activation=["rbf"])
    assert mixed.activations == ("rbf", "identity")


@pytest.mark.parametrize(
    "spec, kwargs, message",
    [
        ("5-x-1", {}, "not of the form"),
        ("5", {}, "at least two"),
        ("5-0-1", {}, "at least two positive"),
        ("5-3-1", {"activation": "gelu"}, "unknown activation"),
        ("5-3-3-1", {"activation": ["tanh"]}, "1 activations given for 2 hidden layers"),
    ],
)
def test_parse_architecture_rejects_bad_specs(spec, kwargs, message):
    with pytest.raises(ValueError, match=message):
        parse_architecture(spec, **kwargs)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_flatten_round_trip_keeps_dtype(dtype):
    mlp = parse_architecture("3-7-2")
    params = init_params(jax.random.key(1), mlp, dtype=dtype)
    flat = flatten(params)
    assert flat.shape == (num_params(mlp),) and flat.dtype == dtype
    back = make_unflatten(mlp, dtype)(flat)
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(back)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    x = jnp.ones((4, 3), dtype)
    assert forward(mlp, back, x).dtype == dtype


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_init_params_jitted_are_the_eager_numbers(dtype):
    # the MAP starts are drawn under jit; a fit's chains must not depend on that
    mlp = parse_architecture("6-20-20-1")
    eager = init_params(jax.random.key(3), mlp, dtype)
    jitted = jax.jit(lambda k: init_params(k, mlp, dtype))(jax.random.key(3))
    for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(jitted)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_forward_matches_numpy():
    mlp = parse_architecture("2-3-1", activation="tanh")
    params = init_params(jax.random.key(0), mlp)
    x = np.array([[0.1, -0.4], [2.0, 1.5]])
    (w1, b1), (w2, b2) = [(np.asarray(layer.kernel), np.asarray(layer.bias)) for layer in params]
    expected = np.tanh(x @ w1 + b1) @ w2 + b2
    np.testing.assert_allclose(np.asarray(forward(mlp, params, jnp.asarray(x))), expected, rtol=1e-12)


def test_forward_points_last_is_the_points_first_network_with_leading_axes_and_gradients():
    # forward keeps hidden units [width, n]; values, leading axes and gradients are those of act(h @ W + b)
    mlp = parse_architecture("3-6-5-2", activation="tanh")
    params = init_params(jax.random.key(4), mlp, dtype=jnp.float64)
    x = jnp.asarray(np.random.default_rng(4).normal(size=(2, 7, 3)))

    def points_first(p, xs):
        h = xs
        for layer, act in zip(p, ("tanh", "tanh", "identity")):
            h = h @ layer.kernel + layer.bias
            h = jnp.tanh(h) if act == "tanh" else h
        return h

    out = forward(mlp, params, x)
    assert out.shape == (2, 7, 2)
    np.testing.assert_allclose(np.asarray(out), np.asarray(points_first(params, x)), rtol=1e-12, atol=1e-14)
    g_new = jax.grad(lambda p: jnp.sum(jnp.sin(forward(mlp, p, x[0]))))(params)
    g_old = jax.grad(lambda p: jnp.sum(jnp.sin(points_first(p, x[0]))))(params)
    for a, b in zip(jax.tree_util.tree_leaves(g_new), jax.tree_util.tree_leaves(g_old)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    ("arch", "activation", "dtype", "rtol"),
    [
        ("5-20-20-1", "tanh", "float64", 1e-12),
        ("3-7-2", "relu", "float64", 1e-12),
        ("4-6-5-3", "silu", "float32", 1e-5),
    ],
)
def test_forward_ensemble_is_every_network_at_the_same_inputs(arch, activation, dtype, rtol):
    mlp = parse_architecture(arch, activation=activation)
    keys = jax.random.split(jax.random.key(1), 7)
    params = jax.vmap(lambda k: init_params(k, mlp, dtype=jnp.dtype(dtype)))(keys)
    params = jax.tree.map(lambda a: a + 0.3 * jax.random.normal(jax.random.key(2), a.shape, a.dtype), params)
    layers = out_in_layers(params)
    assert layers[0].kernel_t.shape == (7, mlp.widths[1], mlp.widths[0])
    for n in (11, 1):  # a batch (points-last products) and one point (matrix-vector products)
        x = jnp.asarray(np.random.default_rng(n).normal(size=(n, mlp.input_dim)), dtype)
        out = forward_ensemble(mlp, layers, x)
        assert out.shape == (7, n, mlp.output_dim) and out.dtype == jnp.dtype(dtype)
        expected = np.stack([np.asarray(forward(mlp, jax.tree.map(lambda a, t=t: a[t], params), x)) for t in range(7)])
        np.testing.assert_allclose(np.asarray(out), expected, rtol=rtol, atol=rtol)


def test_rbf_is_stable_for_huge_inputs():
    mlp = parse_architecture("1-4-1", activation="rbf")
    params = init_params(jax.random.key(0), mlp)
    out = forward(mlp, params, jnp.array([[1e200], [-1e300], [0.0]]))
    assert np.all(np.isfinite(np.asarray(out)))


def test_log_posterior_is_eq_4_24_up_to_constants():
    """-log p = lambda_W/2 sum||W||^2 + lambda_b/2 sum||b||^2 + lambda/2 sum (y - f)^2 + const."""
    mlp = parse_architecture("2-5-1")
    bnn = BNN(mlp, GaussianPrior(weight_precision=2.0, bias_precision=0.5), Gaussian(precision=30.0))
    key_x, key_y, key_p = jax.random.split(jax.random.key(3), 3)
    x = jax.random.normal(key_x, (11, 2))
    y = jax.random.normal(key_y, (11, 1))
    hyper = bnn.default_hyperparameters()
    logdensity = make_logdensity(bnn, Data(x, y))

    def potential(q):
        params = bnn.unflatten(q)
        f = forward(mlp, params, x)
        w2 = sum(float(jnp.sum(layer.kernel**2)) for layer in params)
        b2 = sum(float(jnp.sum(layer.bias**2)) for layer in params)
        return 0.5 * 2.0 * w2 + 0.5 * 0.5 * b2 + 0.5 * 30.0 * float(jnp.sum((y - f) ** 2))

    q1 = flatten(init_params(key_p, mlp))
    q2 = q1 + 0.1
    # The difference of log-densities is minus the difference of potentials (constants cancel).
    np.testing.assert_allclose(
        float(logdensity(q1, hyper) - logdensity(q2, hyper)), potential(q2) - potential(q1), rtol=1e-10
    )


def test_gaussian_prior_log_prob_matches_scipy_per_layer_precisions():
    mlp = parse_architecture("2-3-1")
    params = init_params(jax.random.key(5), mlp)
    wp = jnp.array([0.5, 4.0])
    bp = jnp.array([2.0, 9.0])
    expected = 0.0
    for i, layer in enumerate(params):
        expected += stats.norm(0, 1 / np.sqrt(wp[i])).logpdf(np.asarray(layer.kernel)).sum()
        expected += stats.norm(0, 1 / np.sqrt(bp[i])).logpdf(np.asarray(layer.bias)).sum()
    np.testing.assert_allclose(float(GaussianPrior().log_prob(mlp, params, wp, bp)), expected, rtol=1e-12)


def test_scale_outputs_are_a_precision_group_of_their_own():
    # 2-3-4 with two scale outputs: layer 0, the last layer's mean columns 0-1, its scale columns 2-3
    mlp = parse_architecture("2-3-4")
    prior = GaussianPrior(scale_outputs=2)
    params = init_params(jax.random.key(6), mlp)
    params = (params[0], params[1]._replace(bias=params[1].bias + jnp.array([0.1, -0.2, 0.3, -0.4])))
    wp, bp = jnp.array([0.5, 4.0, 30.0]), jnp.array([2.0, 9.0, 0.1])
    last = params[1]
    expected = stats.norm(0, 1 / np.sqrt(0.5)).logpdf(np.asarray(params[0].kernel)).sum()
    expected += stats.norm(0, 1 / np.sqrt(2.0)).logpdf(np.asarray(params[0].bias)).sum()
    expected += stats.norm(0, 1 / np.sqrt(4.0)).logpdf(np.asarray(last.kernel[:, :2])).sum()
    expected += stats.norm(0, 1 / np.sqrt(9.0)).logpdf(np.asarray(last.bias[:2])).sum()
    expected += stats.norm(0, 1 / np.sqrt(30.0)).logpdf(np.asarray(last.kernel[:, 2:])).sum()
    expected += stats.norm(0, 1 / np.sqrt(0.1)).logpdf(np.asarray(last.bias[2:])).sum()
    assert prior.num_groups(mlp) == 3
    np.testing.assert_allclose(float(prior.log_prob(mlp, params, wp, bp)), expected, rtol=1e-12)
    kernel_sizes, bias_sizes = prior.group_sizes(mlp)
    assert kernel_sizes.tolist() == [6, 6, 6] and bias_sizes.tolist() == [3, 2, 2]
    # with equal precisions the grouping does not change the density
    ones = jnp.ones(3)
    np.testing.assert_allclose(
        float(prior.log_prob(mlp, params, 2 * ones, ones)),
        float(GaussianPrior().log_prob(mlp, params, 2 * ones[:2], ones[:2])),
        rtol=1e-12,
    )
    draws = [prior.sample(k, mlp, wp, bp)[1] for k in jax.random.split(jax.random.key(1), 400)]
    scale_kernel = np.stack([np.asarray(d.kernel[:, 2:]) for d in draws])
    mean_kernel = np.stack([np.asarray(d.kernel[:, :2]) for d in draws])
    # variances 1/30 and 1/4 from 2400 normals each: relative sd sqrt(2/2400) ~ 0.03, 5 sd tolerance
    assert abs(scale_kernel.var() * 30.0 - 1.0) < 5 * np.sqrt(2 / scale_kernel.size)
    assert abs(mean_kernel.var() * 4.0 - 1.0) < 5 * np.sqrt(2 / mean_kernel.size)
    with pytest.raises(ValueError, match="scale_outputs"):
        GaussianPrior(scale_outputs=4).groups(mlp)
    with pytest.raises(ValueError, match="scale_outputs"):
        GaussianPrior(scale_outputs=-1)


def test_input_groups_give_each_input_its_first_layer_precision():
    # 3-4-2 with a scale output: groups 0-2 the layers' (layer 0: its bias only), the scale head, inputs 0-2
    mlp = parse_architecture("3-4-2")
    prior = GaussianPrior(scale_outputs=1, input_groups=True)
    params = init_params(jax.random.key(7), mlp)
    wp = jnp.array([9.0, 0.5, 3.0, 0.2, 4.0, 25.0])
    bp = jnp.array([2.0, 9.0, 0.1, 7.0, 7.0, 7.0])
    first, last = params
    expected = sum(stats.norm(0, 1 / np.sqrt(wp[3 + i])).logpdf(np.asarray(first.kernel[i])).sum() for i in range(3))
    expected += stats.norm(0, 1 / np.sqrt(2.0)).logpdf(np.asarray(first.bias)).sum()
    expected += stats.norm(0, 1 / np.sqrt(0.5)).logpdf(np.asarray(last.kernel[:, 0])).sum()
    expected += stats.norm(0, 1 / np.sqrt(9.0)).logpdf(np.asarray(last.bias[0]))
    expected += stats.norm(0, 1 / np.sqrt(3.0)).logpdf(np.asarray(last.kernel[:, 1])).sum()
    expected += stats.norm(0, 1 / np.sqrt(0.1)).logpdf(np.asarray(last.bias[1]))
    np.testing.assert_allclose(float(prior.log_prob(mlp, params, wp, bp)), expected, rtol=1e-12)
    kernel_sizes, bias_sizes = prior.group_sizes(mlp)
    assert kernel_sizes.tolist() == [0, 4, 4, 4, 4, 4] and bias_sizes.tolist() == [4, 1, 1, 0, 0, 0]
    w2, _ = prior.squared_norms(mlp, params)
    np.testing.assert_allclose(np.asarray(w2[3:]), np.sum(np.asarray(first.kernel) ** 2, axis=1), rtol=1e-12)
    # one layer with a scale output: the input groups take only the mean column
    one = parse_architecture("3-2")
    sizes = GaussianPrior(scale_outputs=1, input_groups=True).group_sizes(one)
    assert sizes[0].tolist() == [0, 3, 1, 1, 1] and sizes[1].tolist() == [1, 1, 0, 0, 0]


def test_prior_sample_has_the_prior_variance():
    mlp = parse_architecture("50-200-1")
    wp = jnp.array([4.0, 0.25])
    bp = jnp.array([1.0, 1.0])
    params = GaussianPrior().sample(jax.random.key(0), mlp, wp, bp)
    var = float(jnp.var(params[0].kernel))
    n = params[0].kernel.size
    # Sample variance of n normals: relative sd sqrt(2/n) ~ 0.014; 5 sd tolerance.
    assert abs(var * 4.0 - 1.0) < 5 * np.sqrt(2 / n)


def test_likelihoods_match_scipy():
    rng = np.random.default_rng(0)
    f = rng.normal(size=(6, 1))
    y = rng.normal(size=(6, 1))
    lam = 3.0
    got = float(Gaussian().log_prob(jnp.asarray(f), jnp.asarray(y), jnp.asarray(lam)))
    np.testing.assert_allclose(got, stats.norm(f, 1 / np.sqrt(lam)).logpdf(y).sum(), rtol=1e-12)

    s = rng.uniform(0.1, 2.0, size=6)
    got = float(KnownNoiseGaussian().log_prob(jnp.asarray(f), jnp.asarray(y), jnp.asarray(1.0), jnp.asarray(s)))
    np.testing.assert_allclose(got, stats.norm(f[:, 0], s).logpdf(y[:, 0]).sum(), rtol=1e-12)

    het = HeteroscedasticGaussian(min_std=1e-3)
    raw = rng.normal(size=(6, 1))
    std = np.log1p(np.exp(raw)) + 1e-3
    got = float(het.log_prob(jnp.asarray(np.hstack([f, raw])), jnp.asarray(y), jnp.asarray(1.0)))
    np.testing.assert_allclose(got, stats.norm(f, std).logpdf(y).sum(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(het.aleatoric_variance(jnp.asarray(np.hstack([f, raw])), 1.0)), std**2)

    logits = rng.normal(size=(6, 3))
    labels = rng.integers(0, 3, size=6)
    got = float(Categorical(3).log_prob(jnp.asarray(logits), jnp.asarray(labels), jnp.asarray(1.0)))
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(got, logp[np.arange(6), labels].sum(), rtol=1e-12)


def test_gradient_is_finite_and_has_param_shape_in_float32():
    mlp = parse_architecture("5-20-20-1")
    bnn = BNN(mlp, dtype="float32")
    x = jnp.ones((9, 5), jnp.float32)
    y = jnp.zeros((9, 1), jnp.float32)
    hyper = bnn.default_hyperparameters()
    q = flatten(init_params(jax.random.key(0), mlp, dtype=jnp.float32))
    g = jax.grad(make_logdensity(bnn, Data(x, y)))(q, hyper)
    assert g.dtype == jnp.float32 and g.shape == q.shape and bool(jnp.all(jnp.isfinite(g)))
