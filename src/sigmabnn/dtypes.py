"""The floating-point policy of sigmabnn.

Choice: JAX's 64-bit mode is switched on when sigmabnn is imported, and every
array that enters the library is cast once, at the boundary, to the dtype the
caller asks for (``"float64"`` by default). Inside a run one dtype is used
throughout; nothing mixes float32 and float64 by accident.

Why float64 by default: the log-likelihood of a BNN is a sum over thousands
of points, and HMC/NUTS accept or reject on the *difference* of two such sums
(the energy change). In float32 that difference carries a rounding error of
order ``1e-7 * |log p|``, which for ``|log p| ~ 1e4`` is ~1e-3 nats: harmless
for one step, but it biases long trajectories and the dual-averaging target.
``float32`` remains available (``dtype="float32"``) and is faster for large
networks; ``benchmarks/core_gradient.py`` measures both.

One exception, chosen by measurement: a fit that names no dtype and samples
with ChEES under a Gaussian likelihood (the library's default fit) runs in
float32 (:func:`sigmabnn.fitting.spec.auto_dtype`). On the defaults battery it
was faster on every table, and its held-out log-likelihood matched float64's
within the noise: on its tables (up to 20,000 rows) the rounding of the
energy differences, sums over the rows, stays far below a nat.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

DEFAULT_DTYPE = "float64"
_ALLOWED = {"float32": jnp.float32, "float64": jnp.float64}


def resolve(dtype: str | type | np.dtype | None = None) -> jnp.dtype:
    """Return the JAX dtype for ``"float32"`` / ``"float64"`` (default: float64)."""
    if dtype is None:
        dtype = DEFAULT_DTYPE
    name = np.dtype(dtype).name
    if name not in _ALLOWED:
        raise ValueError(f"dtype must be float32 or float64, not {name}")
    return jnp.dtype(_ALLOWED[name])
