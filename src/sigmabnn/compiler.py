"""How sigmabnn compiles its own functions: XLA's CPU backend optimisation level.

Choice, by measurement: XLA optimises CPU code at its highest level, 3, unless told
otherwise. sigmabnn compiles the functions it jits at level :data:`OPTIMIZATION_LEVEL`
(1) instead, all but prediction's (below). ``benchmarks/compile_level.py`` (``benchmarks/results/compile_level.md``)
times levels 1, 2 and 3 side by side, by the rule in its docstring: leapfrog loops of BNN
gradients (small and large networks, 100 to 8,000 rows, float32 and float64) and the
default fit of three tables of the defaults battery, compilation included. Levels 1 and 2
ran the gradients as fast as level 3 or faster (up to 20 % on the smallest network) and
finished the default fits sooner; level 1's summed fit time was the lowest.

Levels differ in how LLVM orders and vectorises floating-point work, so draws under two
levels agree in distribution, not bit for bit. The environment variable
``SIGMABNN_XLA_OPT_LEVEL`` (``0`` to ``3``), read once at import, overrides the level,
e.g. to compare levels; any other value is ignored with a warning.

Prediction compiles at its own level, :data:`PREDICTION_LEVEL` (3), through :func:`jit_prediction`:
``benchmarks/predict_level.py`` (``benchmarks/results/predict_level.md``) times ``predict`` of
1,000-network models at levels 1, 2 and 3 side by side; its rule takes the level with the lowest
summed time of the batched calls. Level 3 ran the small network's batched calls fastest; on the
large network the levels were within a few percent of each other. A prediction function is
compiled once per model and batch shape and then called for every batch of a scan, so its run
time, not its compile time, is what counts.
``SIGMABNN_XLA_OPT_LEVEL`` overrides both levels.

Functions JAX compiles on its own (eager ``jnp`` operations outside sigmabnn's jitted
functions) keep JAX's defaults.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable
from typing import Any

import jax

__all__ = [
    "COMPILER_OPTIONS",
    "BoundFunction",
    "ENV_LEVEL",
    "OPTIMIZATION_LEVEL",
    "PREDICTION_LEVEL",
    "PREDICTION_OPTIONS",
    "as_argument",
    "jit",
    "jit_prediction",
]

ENV_LEVEL = "SIGMABNN_XLA_OPT_LEVEL"
"""Environment variable that overrides :data:`OPTIMIZATION_LEVEL` and :data:`PREDICTION_LEVEL` (``0`` to ``3``)."""
DEFAULT_LEVEL = 1
DEFAULT_PREDICTION_LEVEL = 3


def _override(value: str | None) -> int | None:
    """The level ``value`` (the environment's) names, ``None`` when unset; an invalid value warns and is ignored."""
    if value is None or value.strip() == "":
        return None
    if value.strip() in ("0", "1", "2", "3"):
        return int(value)
    warnings.warn(f"{ENV_LEVEL}={value!r} is not 0, 1, 2 or 3; ignored (the default levels apply)", stacklevel=2)
    return None


_OVERRIDE = _override(os.environ.get(ENV_LEVEL))
OPTIMIZATION_LEVEL = DEFAULT_LEVEL if _OVERRIDE is None else _OVERRIDE
"""XLA backend optimisation level of sigmabnn's compiled functions (see the module docstring)."""
COMPILER_OPTIONS: dict[str, Any] = {"xla_backend_optimization_level": OPTIMIZATION_LEVEL}
"""The options every :func:`jit` passes to XLA."""
PREDICTION_LEVEL = DEFAULT_PREDICTION_LEVEL if _OVERRIDE is None else _OVERRIDE
"""XLA backend optimisation level of the prediction engine's functions (see the module docstring)."""
PREDICTION_OPTIONS: dict[str, Any] = {"xla_backend_optimization_level": PREDICTION_LEVEL}
"""The options every :func:`jit_prediction` passes to XLA."""


def jit(fun: Callable | None = None, /, **kwargs: Any) -> Any:
    """:func:`jax.jit` with :data:`COMPILER_OPTIONS`; ``jit(**kwargs)`` (no function) returns a decorator.

    Keyword arguments are :func:`jax.jit`'s; options given in ``compiler_options`` win over
    :data:`COMPILER_OPTIONS`.
    """
    if fun is None:
        return functools.partial(jit, **kwargs)
    options = {**COMPILER_OPTIONS, **(kwargs.pop("compiler_options", None) or {})}
    return jax.jit(fun, compiler_options=options, **kwargs)


def jit_prediction(fun: Callable | None = None, /, **kwargs: Any) -> Any:
    """:func:`jit` with :data:`PREDICTION_OPTIONS`: the prediction engine's functions (batched forward
    passes and their reductions, compiled once and called for every batch)."""
    options = {**PREDICTION_OPTIONS, **(kwargs.pop("compiler_options", None) or {})}
    return jit(fun, compiler_options=options, **kwargs)


class BoundFunction:
    """A jitted function with its trailing arguments bound: called and lowered as a function of the leading ones.

    The bound arguments are traced as inputs of the compiled code, not folded into it as constants:
    a log-density's :class:`jax.tree_util.Partial` holding the training data
    (:func:`sigmabnn.model.posterior.make_logdensity`) keeps the data out of the executable, so the
    same compiled code serves every data set of the same shapes and dtypes
    (:mod:`sigmabnn.compile_cache`).
    """

    def __init__(self, jitted: Any, *bound: Any) -> None:
        self.jitted, self.bound = jitted, bound

    def __call__(self, *args: Any) -> Any:
        return self.jitted(*args, *self.bound)

    def lower(self, *args: Any) -> Any:
        """``jitted.lower`` with the bound arguments appended (shapes and dtypes of ``args`` suffice)."""
        return self.jitted.lower(*args, *self.bound)

    def eval_shape(self, *args: Any) -> Any:
        """The outputs' shapes and dtypes (:func:`jax.eval_shape` of the jitted function, bound arguments appended)."""
        return jax.eval_shape(self.jitted, *args, *self.bound)


def as_argument(fn: Callable | None) -> jax.tree_util.Partial | None:
    """``fn`` as a pytree a jitted function can take as an argument: a :class:`jax.tree_util.Partial` as it is (its
    arrays become inputs), another callable wrapped in one with no arrays (its closure stays constant)."""
    if fn is None or isinstance(fn, jax.tree_util.Partial):
        return fn
    return jax.tree_util.Partial(fn)
