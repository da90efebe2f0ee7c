"""mcmc.run.sample: shapes, dtypes, thinning, determinism, compile-once, Gibbs plumbing, input errors."""

from __future__ import annotations

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.draws import PosteriorDraws
from sigmabnn.mcmc.progress import ProgressBar
from sigmabnn.mcmc.run import MCMCResult, sample
from sigmabnn.mcmc.warmup import window_adaptation

SCALES = jnp.array([0.5, 2.0, 1.0])


def _ld(x, hyper):
    return -0.5 * jnp.sum((x / SCALES.astype(x.dtype)) ** 2)


def _run(kernel="mh", **kw):
    kw = {"num_warmup": 30, "num_samples": 20, "progress": False, "chunk_size": 10, **kw}
    init = kw.pop("init", jnp.zeros((2, 3)))
    return sample(jax.random.key(0), _ld, init, kernel=kernel, num_integration_steps=3, max_tree_depth=4, **kw)


@pytest.mark.parametrize("kernel", ["mh", "hmc", "nuts"])
def test_shapes_and_dtypes(kernel):
    r = _run(kernel)
    assert isinstance(r, MCMCResult) and isinstance(r.draws, PosteriorDraws)
    assert r.draws.positions.shape == (2, 20, 3) and r.draws.positions.dtype == jnp.float64
    assert r.draws.hyper is None
    for name in r.info._fields:
        assert getattr(r.info, name).shape == (2, 20), name
        assert getattr(r.warmup_info, name).shape == (2, 30), name
    assert r.info.is_divergent.dtype == bool
    assert r.adapted.step_size.shape == (2,) and r.adapted.inverse_mass_matrix.shape == (2, 3)
    assert np.all(np.asarray(r.adapted.step_size) > 0)
    # the recorded step size during sampling is the adapted one
    np.testing.assert_array_equal(r.info.step_size, np.broadcast_to(np.asarray(r.adapted.step_size)[:, None], (2, 20)))
    np.testing.assert_allclose(r.info.logdensity, jax.vmap(jax.vmap(lambda x: _ld(x, None)))(r.draws.positions))
    if kernel == "nuts":
        assert np.all(np.asarray(r.info.tree_depth) >= 1)
    else:
        assert np.all(np.asarray(r.info.tree_depth) == 0)


def test_float32_run_stays_float32():
    r = _run("hmc", init=jnp.zeros((2, 3), jnp.float32))
    assert r.draws.positions.dtype == jnp.float32
    assert r.adapted.step_size.dtype == jnp.float32 and r.adapted.inverse_mass_matrix.dtype == jnp.float32
    assert r.info.logdensity.dtype == jnp.float32


def test_dense_mass_shapes():
    r = _run("hmc", dense_mass=True)
    assert r.adapted.inverse_mass_matrix.shape == (2, 3, 3)
    np.testing.assert_allclose(r.adapted.inverse_mass_matrix, np.swapaxes(r.adapted.inverse_mass_matrix, 1, 2))


def test_determinism_same_key_same_draws():
    a, b = _run("hmc"), _run("hmc")
    np.testing.assert_array_equal(a.draws.positions, b.draws.positions)
    np.testing.assert_array_equal(a.info.acceptance_rate, b.info.acceptance_rate)


def test_draws_do_not_depend_on_chunk_size():
    a, b = _run("mh", chunk_size=7), _run("mh", chunk_size=13)
    np.testing.assert_array_equal(a.draws.positions, b.draws.positions)


def test_thinning_keeps_every_thin_th_draw():
    full = _run("mh", num_samples=24, thin=1)
    thinned = _run("mh", num_samples=8, thin=3)
    assert thinned.draws.positions.shape == (2, 8, 3)
    np.testing.assert_array_equal(thinned.draws.positions, full.draws.positions[:, 2::3])
    np.testing.assert_array_equal(thinned.info.acceptance_rate, full.info.acceptance_rate[:, 2::3])


def test_compiles_once_whatever_the_number_of_chunks():
    traces = []

    def count(num_warmup, num_samples):
        def ld(x, hyper):  # a new function per run: nothing compiled for an earlier run is reused
            traces.append(1)  # Python side effect: runs only while tracing
            return -0.5 * jnp.sum(x**2)

        traces.clear()
        sample(
            jax.random.key(1), ld, jnp.zeros((2, 2)), kernel="hmc", num_warmup=num_warmup,
            num_samples=num_samples, num_integration_steps=2, chunk_size=10, progress=False,
        )  # fmt: skip
        return len(traces)

    few = count(20, 10)  # 2 warm-up chunks + 1 sampling chunk
    many = count(60, 45)  # 6 warm-up chunks + 5 sampling chunks (last one padded)
    assert few > 0 and few == many


def test_a_repeated_run_reuses_the_compiled_functions():
    traces = []

    def ld(x, hyper):
        traces.append(1)
        return -0.5 * jnp.sum(x**2)

    def run():
        return sample(jax.random.key(1), ld, jnp.zeros((2, 2)), kernel="mh", num_warmup=10, num_samples=10,
                      chunk_size=5, progress=False)  # fmt: skip

    first = run()
    n = len(traces)
    second = run()
    assert n > 0 and len(traces) == n
    np.testing.assert_array_equal(first.draws.positions, second.draws.positions)


def test_gibbs_updates_hyper_and_recomputes_cached_logdensity():
    def ld(x, h):
        return -0.5 * h * jnp.sum(x**2)

    def gibbs_fn(key, x, h):  # deterministic "update" to check the plumbing
        return h + 1.0

    r = sample(
        jax.random.key(2), ld, jnp.ones((2, 2)), jnp.asarray(1.0), kernel="hmc", num_warmup=5, num_samples=6,
        num_integration_steps=2, gibbs_fn=gibbs_fn, progress=False, chunk_size=4,
    )  # fmt: skip
    h = np.asarray(r.draws.hyper)
    assert h.shape == (2, 6)
    np.testing.assert_array_equal(h, np.broadcast_to(1.0 + 5 + np.arange(1, 7), (2, 6)))
    np.testing.assert_allclose(r.info.logdensity, jax.vmap(jax.vmap(ld))(r.draws.positions, r.draws.hyper))


def test_fixed_hyper_is_broadcast_to_draws():
    r = sample(
        jax.random.key(3), lambda x, h: -0.5 * h * jnp.sum(x**2), jnp.zeros((2, 2)), jnp.asarray(4.0),
        kernel="mh", num_warmup=0, num_samples=5, progress=False,
    )  # fmt: skip
    np.testing.assert_array_equal(r.draws.hyper, np.full((2, 5), 4.0))
    assert r.warmup_info.acceptance_rate.shape == (2, 0)


@pytest.mark.parametrize(
    "kw",
    [
        {"kernel": "gibbs"},
        {"num_samples": 0},
        {"thin": 0},
        {"num_warmup": -1},
        {"target_accept": 1.5},
        {"chunk_size": 0},
        {"init": jnp.zeros(3)},
        {"init": jnp.array([[0.0, jnp.nan, 0.0]])},
    ],
)
def test_bad_input_is_a_one_line_value_error(kw):
    kernel = kw.pop("kernel", "mh")
    with pytest.raises(ValueError) as err:
        _run(kernel, **kw)
    assert "\n" not in str(err.value)


def test_progress_bar_silent_off_terminal_and_formats_rate():
    stream = io.StringIO()
    bar = ProgressBar(10, "warmup", enabled=None, stream=stream)
    bar.update(5)
    bar.close()
    assert stream.getvalue() == ""  # not a terminal, and log lines not asked for (tests/mcmc/test_progress.py)

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    bar = ProgressBar(10, "sample", stream=tty)
    bar.update(4)
    line = bar.line()
    assert line.startswith("sample |") and "4/10" in line and "it/s" in line and "ETA" in line
    bar.close()
    assert tty.getvalue().endswith("\n")
    silent = Tty()
    ProgressBar(10, enabled=False, stream=silent).update(3)
    assert silent.getvalue() == ""


def test_window_adaptation_alone_returns_tuned_parameters():
    scales = jnp.array([0.1, 1.0, 10.0])
    states, adapted, info = window_adaptation(
        jax.random.key(4), "mh", lambda x: -0.5 * jnp.sum((x / scales) ** 2), jnp.zeros((3, 3)), 1000
    )
    assert states.position.shape == (3, 3) and info.acceptance_rate.shape == (3, 1000)
    assert adapted.step_size.shape == (3,) and adapted.inverse_mass_matrix.shape == (3, 3)
    # the last slow window (500 MH draws, strongly autocorrelated) gets the scales to within a factor 3
    ratio = np.asarray(adapted.inverse_mass_matrix) / np.asarray(scales) ** 2
    assert np.all((ratio > 1 / 3) & (ratio < 3)), ratio
