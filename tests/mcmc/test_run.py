"""mcmc.run.sample: shapes, dtypes, thinning, determinism, compile-once, Gibbs plumbing, input errors."""

from __future__ import annotations

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.mcmc import hmc, mh, nuts
from sigmabnn.mcmc.progress import ProgressBar
from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import MCMCResult, RunConfig, compile_ahead, sample
from sigmabnn.mcmc.window import AdaptedParameters, window_adaptation

SCALES = jnp.array([0.5, 2.0, 1.0])


def _ld(x, hyper):
    return -0.5 * jnp.sum((x / SCALES.astype(x.dtype)) ** 2)


RUN_FIELDS = set(RunConfig.__dataclass_fields__)


def _run(kernel="mh", init=None, **kw):
    """A run of ``kernel``; keyword arguments go to :class:`RunConfig` or to ``make_algorithm``."""
    run = {"num_warmup": 30, "num_samples": 20, "chunk_size": 10}
    run.update({k: v for k, v in kw.items() if k in RUN_FIELDS})
    settings = {k: v for k, v in kw.items() if k not in RUN_FIELDS}
    init = jnp.zeros((2, 3)) if init is None else init
    algorithm = make_algorithm(kernel, num_integration_steps=3, max_tree_depth=4, **settings)
    return sample(jax.random.key(0), algorithm, _ld, init, None, RunConfig(**run), progress=False)


@pytest.mark.parametrize("kernel", ["mh", "hmc", "nuts"])
def test_shapes_and_dtypes(kernel):
    r = _run(kernel)
    assert isinstance(r, MCMCResult) and isinstance(r.adapted, AdaptedParameters)
    assert r.positions.shape == (2, 20, 3) and r.positions.dtype == jnp.float64
    assert r.hyper is None
    for name in r.info._fields:
        assert getattr(r.info, name).shape == (2, 20), name
        assert getattr(r.warmup_info, name).shape == (2, 30), name
    assert r.info.is_divergent.dtype == bool
    assert r.adapted.step_size.shape == (2,) and r.adapted.inverse_mass_matrix.shape == (2, 3)
    assert np.all(np.asarray(r.adapted.step_size) > 0)
    # the recorded step size during sampling is the adapted one
    np.testing.assert_array_equal(r.info.step_size, np.broadcast_to(np.asarray(r.adapted.step_size)[:, None], (2, 20)))
    np.testing.assert_allclose(r.info.logdensity, jax.vmap(jax.vmap(lambda x: _ld(x, None)))(r.positions))
    if kernel == "nuts":
        assert np.all(np.asarray(r.info.tree_depth) >= 1)
    else:
        assert np.all(np.asarray(r.info.tree_depth) == 0)


def test_float32_run_stays_float32():
    r = _run("hmc", init=jnp.zeros((2, 3), jnp.float32))
    assert r.positions.dtype == jnp.float32
    assert r.adapted.step_size.dtype == jnp.float32 and r.adapted.inverse_mass_matrix.dtype == jnp.float32
    assert r.info.logdensity.dtype == jnp.float32


def test_dense_mass_shapes():
    r = _run("hmc", dense_mass=True)
    assert r.adapted.inverse_mass_matrix.shape == (2, 3, 3)
    np.testing.assert_allclose(r.adapted.inverse_mass_matrix, np.swapaxes(r.adapted.inverse_mass_matrix, 1, 2))


def test_determinism_same_key_same_draws():
    a, b = _run("hmc"), _run("hmc")
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.info.acceptance_rate, b.info.acceptance_rate)


def test_draws_do_not_depend_on_chunk_size():
    a, b = _run("mh", chunk_size=7), _run("mh", chunk_size=13)
    np.testing.assert_array_equal(a.positions, b.positions)


def test_thinning_keeps_every_thin_th_draw():
    full = _run("mh", num_samples=24, thin=1)
    thinned = _run("mh", num_samples=8, thin=3)
    assert thinned.positions.shape == (2, 8, 3)
    np.testing.assert_array_equal(thinned.positions, full.positions[:, 2::3])
    np.testing.assert_array_equal(thinned.info.acceptance_rate, full.info.acceptance_rate[:, 2::3])


def test_compiles_once_whatever_the_number_of_chunks():
    traces = []

    def count(num_warmup, num_samples):
        def ld(x, hyper):  # a new function per run: nothing compiled for an earlier run is reused
            traces.append(1)  # Python side effect: runs only while tracing
            return -0.5 * jnp.sum(x**2)

        traces.clear()
        config = RunConfig(num_warmup=num_warmup, num_samples=num_samples, chunk_size=10)
        sample(jax.random.key(1), make_algorithm("hmc", num_integration_steps=2), ld, jnp.zeros((2, 2)), None, config,
               progress=False)  # fmt: skip
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
        config = RunConfig(num_warmup=10, num_samples=10, chunk_size=5)
        return sample(jax.random.key(1), make_algorithm("mh"), ld, jnp.zeros((2, 2)), None, config, progress=False)

    first = run()
    n = len(traces)
    second = run()
    assert n > 0 and len(traces) == n
    np.testing.assert_array_equal(first.positions, second.positions)


def test_gibbs_updates_hyper_and_recomputes_cached_logdensity():
    def ld(x, h):
        return -0.5 * h * jnp.sum(x**2)

    def gibbs_fn(key, x, h):  # deterministic "update" to check the plumbing
        return h + 1.0

    r = sample(
        jax.random.key(2), make_algorithm("hmc", num_integration_steps=2), ld, jnp.ones((2, 2)), jnp.asarray(1.0),
        RunConfig(num_warmup=5, num_samples=6, chunk_size=4), gibbs_fn=gibbs_fn, progress=False,
    )  # fmt: skip
    h = np.asarray(r.hyper)
    assert h.shape == (2, 6)
    np.testing.assert_array_equal(h, np.broadcast_to(1.0 + 5 + np.arange(1, 7), (2, 6)))
    np.testing.assert_allclose(r.info.logdensity, jax.vmap(jax.vmap(ld))(r.positions, r.hyper))


def test_fixed_hyper_is_broadcast_to_draws():
    r = sample(
        jax.random.key(3), make_algorithm("mh"), lambda x, h: -0.5 * h * jnp.sum(x**2), jnp.zeros((2, 2)),
        jnp.asarray(4.0), RunConfig(num_warmup=0, num_samples=5), progress=False,
    )  # fmt: skip
    np.testing.assert_array_equal(r.hyper, np.full((2, 5), 4.0))
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


def test_warmup_alone_returns_tuned_parameters():
    scales = jnp.array([0.1, 1.0, 10.0])
    r = sample(
        jax.random.key(4), make_algorithm("mh"), lambda x, _: -0.5 * jnp.sum((x / scales) ** 2), jnp.zeros((3, 3)),
        None, RunConfig(num_warmup=1000, num_samples=1), progress=False,
    )  # fmt: skip
    assert r.positions.shape == (3, 1, 3) and r.warmup_info.acceptance_rate.shape == (3, 1000)
    assert r.adapted.step_size.shape == (3,) and r.adapted.inverse_mass_matrix.shape == (3, 3)
    # the last slow window (500 MH draws, strongly autocorrelated) gets the scales to within a factor 3
    ratio = np.asarray(r.adapted.inverse_mass_matrix) / np.asarray(scales) ** 2
    assert np.all((ratio > 1 / 3) & (ratio < 3)), ratio


def test_the_same_settings_give_the_same_algorithm_value():
    """Algorithms are values: equal settings give the same object, so compiled functions are reused."""
    assert make_algorithm("nuts", max_tree_depth=4) is make_algorithm("nuts", max_tree_depth=4)
    assert make_algorithm("nuts", max_tree_depth=4) is not make_algorithm("nuts", max_tree_depth=5)
    assert window_adaptation(hmc.sampler(3)) is window_adaptation(hmc.sampler(3))
    assert nuts.sampler(4).default_target == 0.8 and mh.sampler().default_target == 0.234


def test_run_config_is_validated_when_built():
    with pytest.raises(ValueError, match="num_samples"):
        RunConfig(num_samples=0)
    assert RunConfig(num_warmup=10.0).num_warmup == 10 and isinstance(RunConfig().num_warmup, int)


def _backend_compiles(fn):
    """``(result of fn(), number of XLA compilations while it ran)``."""
    events = []

    def listen(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            events.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        return fn(), len(events)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)


@pytest.mark.parametrize("kernel", ["chees", "hmc"])
def test_compile_ahead_leaves_the_run_nothing_to_compile_and_the_same_draws(kernel):
    config = RunConfig(num_warmup=20, num_samples=10, chunk_size=10)
    algorithm = make_algorithm(kernel, num_integration_steps=2, max_tree_depth=3)
    starts = jnp.asarray(np.random.default_rng(0).normal(size=(4, 3)))

    def run(ahead: bool):
        def ld(x, hyper):  # a new function per run: nothing compiled for another run is reused
            return -0.5 * jnp.sum((x / SCALES.astype(x.dtype)) ** 2) * hyper

        hyper = jnp.asarray(1.0)
        if ahead:
            compile_ahead(jax.random.key(5), algorithm, ld, jax.ShapeDtypeStruct(starts.shape, starts.dtype), hyper,
                          config)()  # fmt: skip
        return _backend_compiles(
            lambda: sample(jax.random.key(5), algorithm, ld, starts, hyper, config, progress=False)
        )  # fmt: skip

    run(False)  # compiles the small eager operations around a run once
    plain, compiles_plain = run(False)
    ahead, compiles_ahead = run(True)
    assert compiles_plain >= 2  # the init and chunk functions, at least
    assert compiles_ahead == compiles_plain - 2
    np.testing.assert_array_equal(ahead.positions, plain.positions)
