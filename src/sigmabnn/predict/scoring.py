"""Scores of observed targets under the predictive distribution: log density, exact PIT, per network.

:func:`score` is what :mod:`sigmabnn.evaluate` uses: the prediction and each point's scores from one
network pass. :func:`log_predictive_density`, :func:`predictive_cdf` and
:func:`per_draw_predictive` compute one kind of score alone (no moments, no noise samples).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

from sigmabnn.fitted import FittedModel
from sigmabnn.predict.engine import Request, run
from sigmabnn.predict.inputs import points_for
from sigmabnn.predict.mixture import LN10
from sigmabnn.predict.prediction import DEFAULT_LEVELS, Prediction, predict_points
from sigmabnn.predict.sampling import default_key

Array = jax.Array

__all__ = ["Scores", "log_predictive_density", "per_draw_predictive", "predictive_cdf", "score"]


class Scores(NamedTuple):
    """A prediction at ``n`` labelled points and the scores of their targets (NumPy float64).

    Attributes:
        prediction: the :class:`~sigmabnn.predict.Prediction` at the points (what
            :func:`~sigmabnn.predict.predict` returns for the same arguments).
        log_density: ``[n]`` log predictive density of the targets in original units, nats
            (for a log target ``log p(y) = log p(log10 y) - sum_j log(y_j ln 10)``).
        log_space_log_density: ``[n]`` log predictive density of the log-space targets
            (``log10 y``, or ``y`` itself without a log target: then the same as ``log_density``).
        pit: ``[n, t]`` exact probability integral transform ``F(y)`` of each target
            (:func:`predictive_cdf`; the same in every space).
        targets: ``[n, t]`` the targets in original units, as checked.
    """

    prediction: Prediction
    log_density: np.ndarray
    log_space_log_density: np.ndarray
    pit: np.ndarray
    targets: np.ndarray


def _original_density(fitted: FittedModel, log_space: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The log density of ``y`` itself from that of its log-space value (a log target: minus the
    log Jacobian of ``u = log10 y``), ``[n]``."""
    if not fitted.log_target:
        return log_space
    return log_space - np.sum(np.log(y * LN10), axis=1)


def score(
    fitted: FittedModel,
    x_raw: Any,
    y_raw: Any,
    *,
    levels: Sequence[float] | float = DEFAULT_LEVELS,
    rng_key: Array | None = None,
    num_noise_samples: int | None = None,
    chunk_size: int = 65536,
    noise_std: Any = None,
    calibrated: bool = True,
) -> Scores:
    """The prediction at labelled points and the scores of their targets, from one network pass.

    Args:
        fitted: the model (a regression likelihood).
        x_raw: raw features ``[n, p]`` or a DataFrame with the raw columns
            (:func:`~sigmabnn.predict.feature_matrix_for`).
        y_raw: targets in original units, ``[n]`` or ``[n, t]``, a Series, or a DataFrame
            holding the target column (e.g. the same table as ``x_raw``).
        levels, rng_key, num_noise_samples, chunk_size, noise_std, calibrated: as for
            :func:`~sigmabnn.predict.predict`.

    Returns:
        :class:`Scores`.

    Raises:
        DataError: bad features, a target count that is not the row count, missing or
            non-finite targets, a wrong number of target columns, non-positive values of a
            log target, no rows.
        InputError: a classifier, bad levels or options.
    """
    points, y = points_for(fitted, x_raw, y_raw, noise_std)
    pred, out = predict_points(
        fitted,
        points,
        levels=levels,
        rng_key=rng_key,
        num_noise_samples=num_noise_samples,
        chunk_size=chunk_size,
        calibrated=calibrated,
        scores=True,
    )
    lpd = out["lpd"]
    return Scores(pred, _original_density(fitted, lpd, y), lpd, out["pit"], y)


def _scores_alone(fitted: FittedModel, x_raw: Any, y_raw: Any, request: Request, chunk_size: int, noise_std: Any):
    """``(the outputs of request, y [n, t] original units)`` for a request of scores without moments."""
    points, y = points_for(fitted, x_raw, y_raw, noise_std)
    return run(fitted, points, request, key=default_key(), chunk_size=chunk_size), y


def log_predictive_density(
    fitted: FittedModel, x_raw: Any, y_raw: Any, *, chunk_size: int = 65536, noise_std: Any = None
) -> dict[str, np.ndarray]:
    """Per-point log predictive density ``log (1/T) sum_t prod_j N(y_j; mu_tj, sigma_tj^2)``
    (Student-t noise: the t densities of :mod:`sigmabnn.predict.mixture` instead of ``N``).

    Returns ``{"log": [n]}`` (density of the log-space target ``log10 y`` or
    ``y``, in nats) and, for a log target, ``"orig"``: the density of ``y``
    itself, ``log p(y) = log p(log10 y) - sum_j log(y_j ln 10)``.
    ``y_raw`` is ``[n]`` or ``[n, t]`` in original units.
    """
    out, y = _scores_alone(fitted, x_raw, y_raw, Request(moments=False, density=True), chunk_size, noise_std)
    lpd = out["lpd"]
    result = {"log": lpd}
    if fitted.log_target:
        result["orig"] = _original_density(fitted, lpd, y)
    return result


def predictive_cdf(
    fitted: FittedModel, x_raw: Any, y_raw: Any, *, chunk_size: int = 65536, noise_std: Any = None
) -> np.ndarray:
    """Probability integral transform ``u = F(y)`` ``[n, t]`` of each target under the exact predictive CDF.

    ``F`` is the predictive marginal of each target column: the equally weighted mixture over the
    ``T`` networks of their Gaussian or Student-t components (:mod:`sigmabnn.predict.mixture`),
    evaluated in closed form (:func:`~sigmabnn.predict.mixture_cdf`), not from samples. A monotone
    transform of the target leaves ``F(y)`` unchanged, so the value is the same in model, log and
    original space. ``y_raw`` is ``[n]`` or ``[n, t]`` in original units. A calibrated model gives
    ``u`` uniform on [0, 1] on held-out rows; :mod:`sigmabnn.recalibration` learns a correction
    from them.
    """
    return _scores_alone(fitted, x_raw, y_raw, Request(moments=False, pit=True), chunk_size, noise_std)[0]["pit"]


def per_draw_predictive(
    fitted: FittedModel, x_raw: Any, y_raw: Any, *, chunk_size: int = 65536, noise_std: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each network's predictive at each row: ``(log_density [n, T], cdf [n, T, t])``, float64.

    ``log_density[i, s]`` is ``log p(y_i | theta_s)``, the log density of the log-space target of
    row ``i`` under network ``s``'s Gaussian or Student-t component (the term of
    :func:`log_predictive_density`'s mixture; summed over target columns), and ``cdf[i, s, j]`` its
    CDF at ``y_ij`` (the term of :func:`predictive_cdf`'s mixture). The networks are in the order of
    ``fitted.draws`` flattened chain-major (``s = chain * num_draws + draw``). Memory:
    ``n * T * (t + 1)`` floats; :func:`sigmabnn.recalibration.loo_pit_values` uses them to weight
    the draws for leave-one-out.
    """
    request = Request(moments=False, per_network=True)
    log_density, cdf = _scores_alone(fitted, x_raw, y_raw, request, chunk_size, noise_std)[0]["per_network"]
    return log_density, cdf
