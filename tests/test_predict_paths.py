"""The fast paths of predict give the same numbers as the batched path.

A single point runs unpadded (its own chunk size), the quantiles are taken on
the host while the next chunk runs, and a model's draws are unflattened on the
device once per model object: none of that may change a result.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from tests.test_predict import make_fitted

from sigmabnn.predict import engine, predict, predictive_cdf
from sigmabnn.predict.device import device_model
from sigmabnn.predict.engine import Request, chunk_function, effective_chunk, packed_chunk_function
from sigmabnn.predict.sampling import MIN_NOISE_SAMPLES, default_num_samples, host_quantiles, standard_noise


def _fields(p):
    out = {"mean": p.mean, "std": p.std, "epistemic_std": p.epistemic_std, "aleatoric_std": p.aleatoric_std}
    for level in p.levels:
        out[f"lower{level}"], out[f"upper{level}"] = p.lower[level], p.upper[level]
    return out


def test_single_point_equals_its_row_in_a_batch():
    f = make_fitted(log10=True, chains=2, draws=5)
    x = np.random.default_rng(0).normal(size=(70, 2))  # two chunks of 64: the pipelined path
    key = jax.random.key(3)
    assert effective_chunk(1, 65536, 10) == 1
    one = predict(f, x[:1], rng_key=key, return_samples=True)
    # The noise of row i comes from fold_in(key, i): row 0 of the single call is row 0 of the batch.
    for batch in (predict(f, x, rng_key=key, return_samples=True), predict(f, x[:5], rng_key=key, return_samples=True)):
        for space_one, space_batch in ((one, batch), (one.log_space, batch.log_space)):
            a, b = _fields(space_one), _fields(space_batch)
            for name in a:
                np.testing.assert_allclose(a[name][0], b[name][0], rtol=1e-12, err_msg=name)
            np.testing.assert_allclose(space_one.samples[:, 0], space_batch.samples[:, 0], rtol=1e-12)


def test_host_quantiles_match_numpy():
    rng = np.random.default_rng(1)
    draws = rng.normal(size=(7, 2, 401))
    qs = (0.025, 0.16, 0.5, 0.84, 0.975)
    got = host_quantiles(draws, qs, log10=True)
    np.testing.assert_allclose(got["log"], np.quantile(draws, qs, axis=-1), rtol=1e-12)
    # original space: quantiles of 10**samples (a monotone map), interpolated between the mapped order statistics
    np.testing.assert_allclose(got["orig"], np.quantile(10.0**draws, qs, axis=-1), rtol=1e-12)


def test_device_draws_are_per_model():
    a, b = make_fitted(seed=5), make_fitted(seed=6)
    x = np.ones((3, 2))
    pa, pb = predict(a, x), predict(b, x)
    assert not np.allclose(pa.mean, pb.mean)
    np.testing.assert_array_equal(predict(a, x).mean, pa.mean)  # cached draws: same result


def test_no_intervals_gives_the_same_moments_without_noise():
    f = make_fitted(log10=True, chains=2, draws=5)
    x = np.random.default_rng(4).normal(size=(9, 2))
    full = predict(f, x)
    moments = predict(f, x, levels=())
    for space_full, space_moments in ((full, moments), (full.log_space, moments.log_space)):
        assert space_moments.levels == () and space_moments.lower == {} and space_moments.upper == {}
        for name in ("mean", "std", "epistemic_std", "aleatoric_std"):
            # the same definitions; without intervals they are accumulated inside the network scan
            np.testing.assert_allclose(getattr(space_moments, name), getattr(space_full, name), rtol=1e-12)
    # the compiled chunk function of a call without intervals draws no noise samples
    fn = chunk_function(f.bnn, f.num_networks, Request(num_samples=0, log10=True))
    out = fn(device_model(f), np.zeros((1, 2)), None, jax.random.key(0), 0, None, None)
    assert "samples" not in out
    # samples can still be asked for without intervals
    with_samples = predict(f, x, levels=(), return_samples=True, num_noise_samples=40)
    assert with_samples.samples.shape == (40, 9, 1) and with_samples.lower == {}


@pytest.mark.parametrize("want_cov", [False, True])
def test_packed_chunk_results_equal_the_plain_ones(want_cov):
    """predict's chunk function returns its results packed into one array; unpacked, they are the
    plain function's, leaf for leaf (up to XLA's fusion choices: a few ulp), with the draws beside them."""
    f = make_fitted(log10=True, chains=2, draws=5, t=2)
    model = device_model(f)
    z = np.random.default_rng(5).normal(size=(4, 2))
    y = np.random.default_rng(6).normal(size=(4, 2))
    args = (model, z, None, jax.random.key(1), 3, y, y)
    request = Request(num_samples=20, log10=True, covariance=want_cov, density=True, pit=True)
    plain = jax.device_get(chunk_function(f.bnn, 10, request)(*args))
    packed = packed_chunk_function(f.bnn, 10, request)
    columns, samples = packed.jitted(*args)
    unpacked = packed.unpack(np.asarray(columns))
    np.testing.assert_array_equal(np.asarray(samples), plain.pop("samples"))
    assert jax.tree.structure(unpacked) == jax.tree.structure(plain)
    for a, b in zip(jax.tree.leaves(unpacked), jax.tree.leaves(plain)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("log10", [False, True])
def test_streamed_moments_equal_the_two_pass_ones(log10):
    """Moments accumulated group by group (merged means and squared deviations, padding networks
    weighted 0) equal those of every network's values materialised first."""
    f = make_fitted(log10=log10, chains=1, draws=101, t=2)  # 11 groups, 9 padding networks
    z = np.random.default_rng(7).normal(size=(6, 2))
    args = (device_model(f), z, None, jax.random.key(0), 0, None, None)
    streamed = jax.device_get(chunk_function(f.bnn, 101, Request(log10=log10, stream_moments=True))(*args))
    two_pass = jax.device_get(chunk_function(f.bnn, 101, Request(log10=log10, stream_moments=False))(*args))
    assert jax.tree.structure(streamed) == jax.tree.structure(two_pass)
    for a, b in zip(jax.tree.leaves(streamed), jax.tree.leaves(two_pass)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("df", [None, 4.0])
def test_antithetic_noise_pairs_opposite_normals(df):
    key, index = jax.random.key(0), jax.numpy.arange(3)
    eps = np.asarray(standard_noise(key, index, (4000, 1), df, antithetic=True))
    half = eps.shape[1] // 2
    if df is None:  # the second half is minus the first, point by point
        np.testing.assert_array_equal(eps[:, half:], -eps[:, :half])
    else:  # opposite normals times (shifted) pool scales: signs opposite
        assert np.all(np.sign(eps[:, half:]) == -np.sign(eps[:, :half]))
    # still unit variance, and the points' draws differ
    np.testing.assert_allclose(eps.var(axis=1), 1.0, atol=0.15 if df else 0.1)
    assert not np.allclose(eps[0], eps[1])


def test_default_sample_count_pairs_every_network():
    for t_nets, expected in ((1000, 2000), (100, 2000), (300, 2400), (3, 2004), (2500, 2500)):
        s = default_num_samples(t_nets, None)
        assert s == expected and s >= MIN_NOISE_SAMPLES and s % t_nets == 0


def test_antithetic_pairs_lower_the_interval_error(monkeypatch):
    """Over many keys, the interval endpoints scatter less with antithetic pairs than with independent
    draws (same sample count), and both centre on the exact mixture quantiles."""
    f = make_fitted(arch="2-8-1", chains=4, draws=25, seed=11)  # T = 100: the default S = 2000 pairs them
    x = np.random.default_rng(2).normal(size=(32, 2))

    def endpoints():
        packed_chunk_function.cache_clear()
        out = []
        for r in range(30):
            p = predict(f, x, rng_key=jax.random.key(r), levels=0.95)
            out.append(np.stack([p.lower[0.95], p.upper[0.95]]))
        packed_chunk_function.cache_clear()
        return np.array(out)  # [keys, 2, n, 1]

    paired = endpoints()
    monkeypatch.setattr(  # the engine's chunk functions draw their noise through this name
        engine,
        "standard_noise",
        lambda key, index, shape, df, antithetic=False: standard_noise(key, index, shape, df),
    )
    independent = endpoints()
    ratio = paired.std(axis=0).mean() / independent.std(axis=0).mean()
    assert ratio < 0.85, ratio  # measured 0.63 on this model
    # unbiased: the exact predictive CDF at the mean endpoints is the nominal level within the scatter
    for draws in (paired, independent):
        for j, level in enumerate((0.025, 0.975)):
            u = predictive_cdf(f, x, draws[:, j].mean(axis=0))
            assert abs(float(np.mean(u)) - level) < 0.002, (j, float(np.mean(u)))


def test_float32_evaluation_of_a_float64_model_agrees():
    f = make_fitted(arch="2-16-16-1", log10=True, chains=2, draws=50, seed=4)
    x = np.random.default_rng(9).normal(size=(40, 2))
    f32 = f.with_dtype("float32")
    assert f32.bnn.dtype == "float32" and f.bnn.dtype == "float64" and f.with_dtype("float64") is f
    key = jax.random.key(1)
    a, b = predict(f, x, rng_key=key), predict(f32, x, rng_key=key)
    assert a.mean.dtype == b.mean.dtype == np.float64
    # the networks' float32 rounding (relative ~1e-7 per operation) is far below the predictive std
    for name in ("mean", "std", "epistemic_std", "aleatoric_std"):
        np.testing.assert_allclose(getattr(b.log_space, name), getattr(a.log_space, name), rtol=1e-4, err_msg=name)
    assert np.max(np.abs(b.log_space.mean - a.log_space.mean) / a.log_space.std) < 1e-4
    for level in a.levels:  # the same noise draws: the intervals move by the rounding alone
        np.testing.assert_allclose(b.log_space.lower[level], a.log_space.lower[level], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="float32 or float64"):
        f.with_dtype("float16")
