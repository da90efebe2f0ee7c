"""Each network's predictive component at given points: what acquisition scores are computed from.

The predictive distribution is the equal-weight mixture over the ``T`` networks of each network's
Gaussian (or Student-t) in log space; :func:`draw_components` returns those components' means and
variances, one network pass through :func:`sigmabnn.predict.engine.run`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from sigmabnn.fitted import FittedModel
from sigmabnn.model.likelihoods import noise_df
from sigmabnn.predict.engine import Request, run
from sigmabnn.predict.inputs import points_for

__all__ = ["Components", "draw_components"]


class Components(NamedTuple):
    """The mixture components of the predictive distribution at ``n`` points (NumPy float64).

    Attributes:
        mean: ``[n, T, t]`` each network's mean of the log-space target (``log10 y`` for a log
            target, else ``y``), networks in the order of the draws flattened chain-major.
        var: ``[n, T, t]`` each network's aleatoric variance there (log-space units squared).
        df: degrees of freedom of Student-t components (the variance is that of the Student-t),
            ``None`` for Gaussian ones.
        log10: the target is modelled as ``log10 y``.
    """

    mean: np.ndarray
    var: np.ndarray
    df: float | None
    log10: bool


def draw_components(fitted: FittedModel, x_raw: Any, *, chunk_size: int = 4096, noise_std: Any = None) -> Components:
    """The :class:`Components` of ``fitted``'s predictive at the rows of ``x_raw`` (a DataFrame with
    the model's raw inputs, or a feature matrix ``[n, p]``). Memory: ``2 n T t`` float64.

    Raises :class:`~sigmabnn.errors.DataError` for bad inputs (as :func:`~sigmabnn.predict.predict`).
    """
    points, _ = points_for(fitted, x_raw, None, noise_std)
    request = Request(moments=False, components=True)
    out = run(fitted, points, request, key=jax.random.key(0), chunk_size=chunk_size)
    mean, var = out["components"]
    df = noise_df(fitted.bnn.likelihood)
    return Components(np.asarray(mean), np.asarray(var), None if df is None else float(df), fitted.log_target)
