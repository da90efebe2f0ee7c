"""sigmabnn.compiler: the XLA optimisation level of the library's jitted functions."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import pytest

from sigmabnn import compiler

SRC = Path(__file__).resolve().parents[1] / "src" / "sigmabnn"


def test_level_parsing():
    assert compiler._override(None) is None
    assert compiler._override("") is None
    assert compiler._override("1") == 1
    assert compiler._override(" 3") == 3
    with pytest.warns(UserWarning, match="SIGMABNN_XLA_OPT_LEVEL='7' is not 0, 1, 2 or 3; ignored"):
        assert compiler._override("7") is None


def test_default_options():
    assert compiler.COMPILER_OPTIONS == {"xla_backend_optimization_level": compiler.OPTIMIZATION_LEVEL}
    assert compiler.PREDICTION_OPTIONS == {"xla_backend_optimization_level": compiler.PREDICTION_LEVEL}


def test_jit_prediction_passes_its_own_options():
    f = compiler.jit_prediction(lambda v: v + 1.0, compiler_options={"xla_no_such_option_sigmabnn": True})
    with pytest.raises(Exception, match="xla_no_such_option_sigmabnn"):
        f(jnp.ones(3))

    @compiler.jit_prediction(static_argnums=1)
    def scale(v, k):
        return v * k

    assert jnp.allclose(scale(jnp.arange(3.0), 4), 4.0 * jnp.arange(3.0))


def test_the_prediction_engine_compiles_at_the_prediction_level():
    engine = (SRC / "predict" / "engine.py").read_text() + (SRC / "predict" / "classes.py").read_text()
    assert engine.count("compiler.jit_prediction(") == 4 and "compiler.jit(" not in engine


def test_jit_as_call_decorator_and_partial():
    x = jnp.arange(4.0)
    assert jnp.allclose(compiler.jit(lambda v: 2.0 * v)(x), 2.0 * x)

    @compiler.jit
    def square(v):
        return v * v

    @functools.partial(compiler.jit, static_argnames=("power",))
    def pow_(v, power):
        return v**power

    @compiler.jit(static_argnums=1)
    def scale(v, k):
        return v * k

    assert jnp.allclose(square(x), x * x)
    assert jnp.allclose(pow_(x, power=3), x**3)
    assert jnp.allclose(scale(x, 5), 5.0 * x)


def test_jit_passes_the_options_to_xla():
    """An option XLA does not know fails at compilation: the options reach the compiler."""
    f = compiler.jit(lambda v: v + 1.0, compiler_options={"xla_no_such_option_sigmabnn": True})
    with pytest.raises(Exception, match="xla_no_such_option_sigmabnn"):
        f(jnp.ones(3))
    # the library's own option is accepted at every level
    for level in (1, 2, 3):
        g = compiler.jit(lambda v: jnp.tanh(v), compiler_options={"xla_backend_optimization_level": level})
        assert jnp.allclose(g(jnp.ones(3)), jnp.tanh(1.0))


def test_library_jits_only_through_compiler():
    """Every function sigmabnn compiles gets the chosen level: no direct ``jax.jit`` outside compiler.py."""
    offenders = [
        f"{p.relative_to(SRC)}:{i}"
        for p in sorted(SRC.rglob("*.py"))
        if p.name != "compiler.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"\bjax\.jit\b|from jax import .*\bjit\b", line)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("value", "level", "warned"), [("1", 1, False), ("3", 3, False), ("fast", compiler.DEFAULT_LEVEL, True)]
)
def test_environment_override(value, level, warned):
    env = {**os.environ, compiler.ENV_LEVEL: value}
    code = "from sigmabnn import compiler; print(compiler.OPTIMIZATION_LEVEL, compiler.PREDICTION_LEVEL)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    # a valid value sets both levels; an invalid one leaves each at its default
    both = f"{level} {level}" if not warned else f"{level} {compiler.DEFAULT_PREDICTION_LEVEL}"
    assert out.stdout.strip().splitlines()[-1] == both
    assert ("is not 0, 1, 2 or 3" in out.stderr) == warned
