"""The log-likelihood summed in row blocks: the same value and gradient as one pass, for every likelihood."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.model import BNN, Data, parse_architecture
from sigmabnn.model.likelihoods import (
    Categorical,
    Gaussian,
    HeteroscedasticGaussian,
    HeteroscedasticStudentT,
    KnownNoiseGaussian,
    StudentT,
)
from sigmabnn.model.mlp import flatten, init_params
from sigmabnn.model.posterior import LIKELIHOOD_BLOCK_BYTES, blocked_log_likelihood

N = 53  # a prime: every block size below leaves a remainder

CASES = {
    "gaussian": (Gaussian(precision=4.0), 1, "real"),
    "student_t": (StudentT(df=3.0, precision=4.0), 1, "real"),
    "known_noise": (KnownNoiseGaussian(), 2, "real2"),
    "heteroscedastic": (HeteroscedasticGaussian(), 2, "real"),
    "hetero_student_t": (HeteroscedasticStudentT(df=3.0), 2, "real"),
    "categorical": (Categorical(num_classes=3), 3, "labels"),
}


def _problem(name: str, dtype: str = "float64"):
    likelihood, out, kind = CASES[name]
    bnn = BNN(parse_architecture(f"3-8-{out}"), likelihood=likelihood, dtype=dtype)
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.normal(size=(N, 3)), dtype)
    noise_std = None
    if kind == "labels":
        y = jnp.asarray(rng.integers(0, 3, N))
    elif kind == "real2":
        y = jnp.asarray(rng.normal(size=(N, 2)), dtype)
        noise_std = jnp.asarray(rng.uniform(0.1, 1.0, size=(N, 2)), dtype)
    else:
        y = jnp.asarray(rng.normal(size=N), dtype)
    position = flatten(init_params(jax.random.PRNGKey(0), bnn.mlp, bnn.jdtype))
    return bnn, Data(x, y, noise_std), position, bnn.default_hyperparameters()


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("block", [5, 17, 26, 53])
def test_blocks_give_the_one_pass_value_and_gradient(name, block):
    bnn, data, p, hyper = _problem(name)
    whole = lambda q: blocked_log_likelihood(bnn, q, hyper, data, N)  # noqa: E731 - one pass
    blocked = lambda q: blocked_log_likelihood(bnn, q, hyper, data, block)  # noqa: E731
    assert float(blocked(p)) == pytest.approx(float(whole(p)), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(jax.grad(blocked)(p), jax.grad(whole)(p), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["gaussian", "student_t"])
def test_blocks_give_the_one_pass_value_and_gradient_in_the_hyperparameters(name):
    bnn, data, p, hyper = _problem(name)
    whole = jax.value_and_grad(lambda q, h: blocked_log_likelihood(bnn, q, h, data, N), argnums=(0, 1))(p, hyper)
    blocked = jax.value_and_grad(lambda q, h: blocked_log_likelihood(bnn, q, h, data, 8), argnums=(0, 1))(p, hyper)
    assert float(blocked[0]) == pytest.approx(float(whole[0]), rel=1e-12)
    for got, want in zip(jax.tree_util.tree_leaves(blocked[1]), jax.tree_util.tree_leaves(whole[1]), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert float(whole[1][1].noise_precision) != 0.0  # the noise precision's gradient is a real one


def test_traced_rows_give_the_one_pass_gradient_in_the_position_and_the_rows():
    bnn, data, p, hyper = _problem("student_t")

    def grads(block):
        fn = lambda q, d: blocked_log_likelihood(bnn, q, hyper, d, block)  # noqa: E731 - rows traced under jit
        return jax.jit(jax.grad(fn, argnums=(0, 1)))(p, data)

    got, want = grads(8), grads(N)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[1].x, want[1].x, rtol=1e-10, atol=1e-12)
    assert np.abs(np.asarray(want[1].x)).max() > 0


def _count_tanh(fn, *args) -> int:
    """``tanh`` equations in the jaxpr of ``value_and_grad(fn)``, sub-jaxprs (scan bodies) included."""

    def walk(jaxpr) -> int:
        count = 0
        for eqn in jaxpr.eqns:
            count += eqn.primitive.name == "tanh"
            for value in eqn.params.values():
                for sub in value if isinstance(value, (list, tuple)) else [value]:
                    inner = getattr(sub, "jaxpr", sub)
                    count += walk(inner) if hasattr(inner, "eqns") else 0
        return count

    return walk(jax.make_jaxpr(jax.value_and_grad(fn))(*args).jaxpr)


def test_concrete_rows_run_each_blocks_forward_pass_once():
    bnn, data, p, hyper = _problem("gaussian")  # one hidden layer: one tanh per forward pass
    # concrete rows: the scan body's forward pass and the remainder's, nothing recomputed
    assert _count_tanh(lambda q: blocked_log_likelihood(bnn, q, hyper, data, 8), p) == 2
    # traced rows: the value's scan, the recomputing scan of the gradient and the remainder's pass
    assert _count_tanh(lambda q, d: blocked_log_likelihood(bnn, q, hyper, d, 8), p, data) > 2
    assert _count_tanh(lambda q: blocked_log_likelihood(bnn, q, hyper, data, N), p) == 1


def test_blocks_under_jit_and_vmap_of_chains():
    bnn, data, p, hyper = _problem("gaussian")
    positions = jnp.stack([p, 0.5 * p, -p])
    grad = lambda b: jax.jit(jax.vmap(jax.grad(lambda q: blocked_log_likelihood(bnn, q, hyper, data, b))))  # noqa: E731
    np.testing.assert_allclose(grad(8)(positions), grad(N)(positions), rtol=1e-10, atol=1e-12)


def test_the_blocked_program_loops_over_the_blocks_and_the_method_uses_the_dtype_block():
    bnn, data, p, hyper = _problem("gaussian")
    text = jax.jit(jax.grad(lambda q: blocked_log_likelihood(bnn, q, hyper, data, 8))).lower(p).as_text()
    assert "while" in text  # the scan over the 6 full blocks (and its reverse pass)
    one = jax.jit(jax.grad(lambda q: blocked_log_likelihood(bnn, q, hyper, data, N))).lower(p).as_text()
    assert "while" not in one
    assert bnn.row_block() == LIKELIHOOD_BLOCK_BYTES // 8 == 4096
    assert BNN(bnn.mlp, dtype="float32").row_block() == 8192
    assert float(bnn.log_likelihood(p, hyper, data)) == float(blocked_log_likelihood(bnn, p, hyper, data, 4096))


def test_the_method_blocks_from_the_chosen_number_of_blocks_on():
    from sigmabnn.model.posterior import LIKELIHOOD_MIN_BLOCKS

    bnn, _, p, hyper = _problem("gaussian")
    threshold = LIKELIHOOD_MIN_BLOCKS * bnn.row_block()
    for n, loops in ((threshold - 1, False), (threshold, True)):
        data = Data(jnp.zeros((n, 3)), jnp.zeros(n))
        text = jax.jit(jax.grad(lambda q, d=data: bnn.log_likelihood(q, hyper, d))).lower(p).as_text()
        assert ("while" in text) == loops, n


def test_outputs_in_blocks_from_the_threshold_equal_the_one_pass():
    from sigmabnn.model.posterior import LIKELIHOOD_MIN_BLOCKS

    bnn, _, p, _ = _problem("gaussian")
    threshold = LIKELIHOOD_MIN_BLOCKS * bnn.row_block()
    params = bnn.unflatten(p)
    for n, loops in ((threshold - 1, False), (threshold, True), (threshold + 5, True)):
        x = jnp.asarray(np.random.default_rng(n).normal(size=(n, 3)))
        np.testing.assert_allclose(bnn.outputs(p, x), bnn.apply(params, x), rtol=1e-12, atol=1e-12)
        assert bnn.outputs(p, x).shape == (n, 1)
        text = jax.jit(bnn.outputs).lower(p, x).as_text()
        assert ("while" in text) == loops, n


def test_gibbs_residuals_use_the_blocked_outputs():
    from sigmabnn.model.posterior import LIKELIHOOD_MIN_BLOCKS
    from sigmabnn.train.gibbs import residuals

    bnn, _, p, _ = _problem("gaussian")
    n = LIKELIHOOD_MIN_BLOCKS * bnn.row_block() + 3
    rng = np.random.default_rng(2)
    data = Data(jnp.asarray(rng.normal(size=(n, 3))), jnp.asarray(rng.normal(size=n)))
    r = residuals(bnn, data, p)
    np.testing.assert_allclose(r, data.y[:, None] - bnn.apply(bnn.unflatten(p), data.x), rtol=1e-12, atol=1e-12)
    assert "while" in jax.jit(lambda q: residuals(bnn, data, q)).lower(p).as_text()
