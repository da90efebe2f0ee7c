"""The public prediction: :class:`Prediction` and :func:`predict`.

The definitions of the summaries are in :mod:`sigmabnn.predict.mixture` (moments, the original
space of a log target, Student-t noise) and :mod:`sigmabnn.predict.sampling` (intervals from
predictive samples, recalibrated intervals); the work is done by :mod:`sigmabnn.predict.engine`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

from sigmabnn.errors import DataError, InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.predict.classes import CLASS_CHUNK, ClassPrediction, predict_classes
from sigmabnn.predict.engine import Points, Request, run
from sigmabnn.predict.inputs import check_levels, domain_columns, points_for
from sigmabnn.predict.sampling import default_key, default_num_samples, host_quantiles, quantile_levels

Array = jax.Array

__all__ = ["DEFAULT_LEVELS", "Prediction", "predict", "predict_points"]

DEFAULT_LEVELS = (0.68, 0.95)


class Prediction(NamedTuple):
    """Predictive summaries for ``n`` points and ``t`` targets (NumPy float64 arrays).

    Attributes:
        mean: ``[n, t]`` predictive mean.
        std: ``[n, t]`` total predictive std (``sqrt(epistemic^2 + aleatoric^2)``).
        epistemic_std: ``[n, t]`` spread of the networks' means.
        aleatoric_std: ``[n, t]`` noise std, ``sqrt`` of the mean noise variance.
        lower, upper: level -> ``[n, t]`` central interval bounds from predictive
            quantiles ``(1 - level) / 2`` and ``(1 + level) / 2`` (for a recalibrated
            model, at the calibration's mapped levels; see :func:`predict`).
        levels: the interval levels, in the order asked.
        covariance: ``[n, t, t]`` predictive covariance across outputs, or ``None``
            unless asked for.
        samples: ``[S, n, t]`` predictive samples (noise included), or ``None``
            unless asked for.
        log_space: for a log target, the same summaries of ``log10 y``
            (whose ``log_space`` is ``None``); ``None`` otherwise.
        domain_distance: ``[n]`` distance of each point from the training inputs
            (:class:`~sigmabnn.data.domain.Domain`: mean Euclidean distance to the 5 nearest
            standardised training rows), or ``None`` for a model without a stored domain.
        in_domain: ``[n]`` bool, ``domain_distance <= threshold`` (the threshold fitted on the
            training rows and stored in the model): ``False`` marks points whose error bars
            are extrapolations not to be trusted; ``None`` without a stored domain.
    """

    mean: np.ndarray
    std: np.ndarray
    epistemic_std: np.ndarray
    aleatoric_std: np.ndarray
    lower: dict[float, np.ndarray]
    upper: dict[float, np.ndarray]
    levels: tuple[float, ...]
    covariance: np.ndarray | None = None
    samples: np.ndarray | None = None
    log_space: Prediction | None = None
    domain_distance: np.ndarray | None = None
    in_domain: np.ndarray | None = None

    def columns(self, domain: bool = True) -> dict[str, np.ndarray]:
        """The per-row columns ``sigmabnn predict`` writes, in order, as ``[n]`` arrays of the first target.

        ``mean``, ``std``, ``epistemic_std``, ``aleatoric_std``, then ``lower_<level>`` and
        ``upper_<level>`` per level (the level as ``%g``: ``lower_0.68``); for a log target the same
        of ``log10 y``, prefixed ``log10_``; then ``in_domain`` and ``domain_distance`` when the
        prediction has them (and ``domain``).
        """
        cols: dict[str, Any] = {
            "mean": self.mean, "std": self.std, "epistemic_std": self.epistemic_std,
            "aleatoric_std": self.aleatoric_std,
        }  # fmt: skip
        for level in self.levels:
            cols[f"lower_{level:g}"] = self.lower[level]
            cols[f"upper_{level:g}"] = self.upper[level]
        if self.log_space is not None:
            cols.update({f"log10_{name}": value for name, value in self.log_space.columns(domain=False).items()})
        if domain and self.in_domain is not None:
            cols["in_domain"] = self.in_domain
            cols["domain_distance"] = self.domain_distance
        return {k: _first_column(v) for k, v in cols.items()}

    def to_frame(self, index: Any = None) -> Any:
        """:meth:`columns` as a pandas DataFrame (``index``: e.g. the input table's index)."""
        import pandas as pd

        return pd.DataFrame(self.columns(), index=index)


def _first_column(values: Any) -> np.ndarray:
    """``[n]`` of ``[n]`` or the first column of ``[n, t]``."""
    a = np.asarray(values)
    return a.reshape(a.shape[0], -1)[:, 0] if a.ndim > 1 else a


def predict(
    fitted: FittedModel,
    x_raw: Any,
    *,
    levels: Sequence[float] | float = DEFAULT_LEVELS,
    rng_key: Array | None = None,
    num_noise_samples: int | None = None,
    chunk_size: int = 65536,
    return_samples: bool = False,
    covariance: bool = False,
    noise_std: Any = None,
    calibrated: bool = True,
) -> Prediction | ClassPrediction:
    """Predictive distribution at raw inputs (definitions: :mod:`sigmabnn.predict.mixture` and
    :mod:`sigmabnn.predict.sampling`).

    Args:
        fitted: the model.
        x_raw: raw (original-unit) features ``[n, p]`` in ``fitted.feature_names``
            order, or a DataFrame with the raw columns (derived features are
            then recomputed; see :func:`~sigmabnn.predict.feature_matrix_for`).
        levels: central interval probabilities, e.g. ``(0.68, 0.95)``; ``()`` for no
            intervals: then no noise samples are drawn (unless ``return_samples``),
            the fastest path when only the moments are needed.
        rng_key: JAX key for the noise samples (default ``jax.random.key(DEFAULT_SEED)``).
        num_noise_samples: predictive samples per point (default: the smallest
            multiple of T that is >= 2000; with a calibration, raised so that the
            mapped tail levels are resolved, see ``TAIL_SAMPLES``).
        chunk_size: most points per chunk (rounded down to a power of two and
            capped by the memory budget).
        return_samples: also return the ``[S, n, t]`` samples (memory: S x n x t floats).
        covariance: also return the ``[n, t, t]`` covariance across outputs.
        noise_std: for a known-noise likelihood, the per-point noise std in
            log-space target units (``[n]`` or ``[n, t]``); without it the
            aleatoric part is zero (the noise-free function is predicted).
        calibrated: when the model holds a :class:`~sigmabnn.calibration.Calibration`
            (:func:`sigmabnn.recalibration.recalibrate`), the central interval at level ``c``
            is read off the predictive quantiles ``R^{-1}((1 - c) / 2)`` and
            ``R^{-1}((1 + c) / 2)`` instead of ``(1 -+ c) / 2`` (quantile recalibration,
            Kuleshov et al. 2018), in log and original space alike. ``False`` gives the
            model's raw intervals. The mean, the stds, the covariance and the samples are
            those of the model's predictive distribution either way: recalibration
            changes only the intervals.

    Returns:
        :class:`Prediction` in the original target space; ``.log_space`` holds
        the ``log10`` space summaries for a log target. A classifier (categorical likelihood)
        returns a :class:`~sigmabnn.predict.classes.ClassPrediction` (class probabilities,
        predicted class, total/aleatoric/epistemic entropies; ``calibrated`` applies its
        temperature); the regression options are then ignored.
    """
    if fitted.is_classifier:  # class probabilities and the entropies instead (sigmabnn.predict.classes)
        return predict_classes(fitted, x_raw, chunk_size=min(int(chunk_size), CLASS_CHUNK), calibrated=calibrated)
    points, _ = points_for(fitted, x_raw, noise_std=noise_std)
    options = dict(levels=levels, num_noise_samples=num_noise_samples, return_samples=return_samples)
    return predict_points(
        fitted, points, rng_key=rng_key, chunk_size=chunk_size, covariance=covariance, calibrated=calibrated, **options
    )[0]


def predict_points(
    fitted: FittedModel,
    points: Points,
    *,
    levels: Sequence[float] | float = DEFAULT_LEVELS,
    rng_key: Array | None = None,
    num_noise_samples: int | None = None,
    chunk_size: int = 65536,
    return_samples: bool = False,
    covariance: bool = False,
    calibrated: bool = True,
    scores: bool = False,
) -> tuple[Prediction, dict[str, np.ndarray]]:
    """:func:`predict` on checked inputs (:func:`~sigmabnn.predict.inputs.points_for`); with
    ``scores`` (the points carry targets) also, from the same network pass, ``"lpd"`` ``[n]``
    (log-space log predictive density) and ``"pit"`` ``[n, t]`` (exact PIT), else an empty dict."""
    lv = check_levels(levels)
    if points.z.shape[0] == 0:
        raise DataError("no input rows to predict")
    t_nets = fitted.num_networks
    qlevels, tail = quantile_levels(fitted, lv, calibrated)
    s = int(num_noise_samples) if num_noise_samples is not None else default_num_samples(t_nets, tail)
    if s < 2:
        raise InputError(f"num_noise_samples must be >= 2, got {s}")
    log10 = fitted.log_target
    sampled = bool(lv) or return_samples  # without intervals or samples no noise is drawn
    request = Request(
        num_samples=s if sampled else 0, log10=log10, covariance=bool(covariance), density=scores, pit=scores
    )

    def host(samples: np.ndarray) -> dict[str, Any]:
        """A chunk's interval quantiles ``[m, 2 levels, t]`` per space and, if asked for, its samples."""
        out: dict[str, Any] = {}
        if lv:
            out["quantiles"] = {k: np.moveaxis(q, 0, 1) for k, q in host_quantiles(samples, qlevels, log10).items()}
        if return_samples:
            out["samples"] = samples
        return out

    out = run(
        fitted, points, request, key=default_key() if rng_key is None else rng_key, chunk_size=chunk_size, host=host
    )
    samples = np.moveaxis(out["samples"], -1, 0) if return_samples else None  # [S, n, t]
    quantiles = out.get("quantiles", {})
    domain = domain_columns(fitted, points.z)
    pred = _assemble(out["log"], quantiles.get("log"), samples, lv, None)._replace(**domain)
    if log10:
        pred = _assemble(
            out["orig"], quantiles.get("orig"), None if samples is None else np.power(10.0, samples), lv, pred
        )._replace(**domain)
    return pred, {k: out[k] for k in ("lpd", "pit") if k in out}


def _assemble(
    moments: dict[str, np.ndarray],
    quantiles: np.ndarray | None,
    samples: np.ndarray | None,
    levels: tuple[float, ...],
    log_space: Prediction | None,
) -> Prediction:
    """A :class:`Prediction` from one space's moments, quantiles ``[n, 2 levels, t]`` and samples."""
    epi, ale = moments["epistemic_var"], moments["aleatoric_var"]
    return Prediction(
        mean=moments["mean"],
        std=np.sqrt(epi + ale),
        epistemic_std=np.sqrt(epi),
        aleatoric_std=np.sqrt(ale),
        lower={lv: np.ascontiguousarray(quantiles[:, 2 * i]) for i, lv in enumerate(levels)},
        upper={lv: np.ascontiguousarray(quantiles[:, 2 * i + 1]) for i, lv in enumerate(levels)},
        levels=levels,
        covariance=moments.get("covariance"),
        samples=samples,
        log_space=log_space,
    )
