"""Diagnosis of a fitted model's MCMC draws: function-space R-hat/ESS and the stored training diagnostics.

:func:`diagnose_model` recomputes the convergence statistics of
:mod:`sigmabnn.evaluate.diagnostics` where they are identifiable (the networks'
predictions at check inputs, the log posterior of every draw) and adds the sampler
statistics the model file stores from training; :func:`report_warnings` turns a
stored training report into the same warning sentences (what ``sigmabnn train``
prints at its end).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from sigmabnn import compiler
from sigmabnn.errors import DataError, InputError
from sigmabnn.evaluate.diagnostics import Thresholds, summarize, warnings
from sigmabnn.fitting.report import FitReport, MCMCSummary
from sigmabnn.fitting.trainers import draw_means
from sigmabnn.model.posterior import Data
from sigmabnn.predict import feature_matrix_for

__all__ = [
    "DEFAULT_NUM_POINTS",
    "MODE_MIXTURE_RHAT",
    "ModelDiagnosis",
    "diagnose_model",
    "mode_mixture_note",
    "report_warnings",
    "stored_summary",
]

#: Function-space check points when no data are given (standard-normal inputs in standardised units).
DEFAULT_NUM_POINTS = 20
#: R-hat of the predictions above which the chains are taken to sit in different modes.
MODE_MIXTURE_RHAT = 1.1
#: Draws evaluated at once when recomputing the log posterior (bounds memory: draws x rows x width).
LOG_POSTERIOR_BATCH = 8


class ModelDiagnosis(NamedTuple):
    """Diagnostics of a fitted model's MCMC draws (see :func:`diagnose_model`).

    Attributes:
        summary: JSON-able dict as from :func:`summarize`, plus ``"inputs"``
            (where the predictions were taken), ``"log_posterior_source"``
            and ``"warnings"``.
        warnings: the plain-sentence warnings (:func:`warnings` of ``summary``).
        predictions: ``[C, S, k]`` network means (first target, model units)
            at the ``k`` check inputs; float64.
        log_posterior: ``[C, S]`` log posterior of every draw on the given data
            (nats), or ``None`` without labelled data.
    """

    summary: dict[str, Any]
    warnings: list[str]
    predictions: np.ndarray
    log_posterior: np.ndarray | None


def _draw_log_posterior(fitted: Any, z: np.ndarray, y_model: np.ndarray) -> np.ndarray:
    """Log posterior ``[C, S]`` of every draw (with its own hyperparameters) on standardised data."""
    bnn, draws = fitted.bnn, fitted.draws
    c, s = draws.num_chains, draws.num_draws
    t = c * s
    pos = jnp.asarray(np.asarray(draws.positions).reshape(t, -1), bnn.jdtype)
    hyper = jax.tree_util.tree_map(
        lambda a: jnp.asarray(np.asarray(a).reshape((t,) + np.shape(a)[2:]), bnn.jdtype), draws.hyper
    )
    data = Data(jnp.asarray(z, bnn.jdtype), jnp.asarray(y_model, bnn.jdtype))

    def all_draws(ps, hs, data):
        return jax.lax.map(lambda a: bnn.log_posterior(a[0], a[1], data), (ps, hs), batch_size=LOG_POSTERIOR_BATCH)

    lp = compiler.jit(all_draws)(pos, hyper, data)  # the data an argument (sigmabnn.compile_cache)
    return np.asarray(lp, dtype=np.float64).reshape(c, s)


def stored_summary(report: FitReport, num_chains: int, num_draws: int) -> dict[str, Any]:
    """A :func:`summarize`-shaped dict rebuilt from the training report a model file stores.

    ``report`` is the :class:`~sigmabnn.fitting.report.FitReport` of :func:`sigmabnn.api.fit`
    (``fitted.report``): its MCMC ``sampler`` holds per-chain acceptance and E-BFMI, the number
    of divergences, the tree-depth saturation fraction and the function-space and
    log-posterior R-hat / bulk ESS measured at the end of training. Missing entries are left
    out, so :func:`warnings` of the result warns on what was measured and nothing else.
    """
    sampler = report.sampler if isinstance(report.sampler, MCMCSummary) else MCMCSummary()
    out: dict[str, Any] = {"num_chains": int(num_chains), "num_draws": int(num_draws)}
    block: dict[str, Any] = {}
    if sampler.divergences is not None:
        block["num_divergent"] = int(sampler.divergences)
        block["divergent_fraction"] = float(sampler.divergences) / max(1, num_chains * num_draws)
    if sampler.tree_depth_saturation is not None:
        block["tree_depth_saturation_fraction"] = float(sampler.tree_depth_saturation)
        block["max_tree_depth"] = None  # the model's settings hold it (diagnose_model fills it in)
    for name, values in (("ebfmi", sampler.ebfmi), ("mean_acceptance", sampler.acceptance)):
        if values is not None:
            block[name] = [math.nan if v is None else float(v) for v in np.atleast_1d(values).tolist()]
    if block:
        out["sampler"] = block
    for name, rhat, ess in (
        ("predictions", sampler.rhat_predictions, sampler.ess_bulk_predictions),
        ("log_posterior", sampler.rhat_log_posterior, sampler.ess_bulk_log_posterior),
    ):
        if rhat is None and ess is None:
            continue
        out[name] = {
            "max_rhat": math.nan if rhat is None else float(rhat),
            "min_ess_bulk": math.nan if ess is None else float(ess),
            "argmax_rhat": -1,
        }
    return out


def report_warnings(report: FitReport, thresholds: Thresholds | None = None) -> list[str]:
    """The warnings for a training report (what ``sigmabnn train`` prints at the end).

    The same sentences, from the same :func:`warnings`, that ``sigmabnn
    diagnose`` gives for the stored training diagnostics of the model; empty
    for a variational fit or an ensemble (no chains to diagnose).
    """
    sampler = report.sampler
    if not isinstance(sampler, MCMCSummary):
        return []
    networks = int((report.model.networks if report.model is not None else None) or 0)
    chains = len(sampler.acceptance or ()) or 1
    return warnings(stored_summary(report, chains, max(1, networks // chains)), thresholds)


def _temperature_sentence(recal: Any) -> str:
    """What a classifier's temperature fit (a ``rows_kind="temperature"`` recalibration record, or ``None``) did."""
    t = None if recal is None else recal.extra.get("temperature")
    if t is None or not recal.rows:
        return "Its class probabilities are not temperature-scaled (no validation rows)."
    if float(t) == 1.0 and recal.extra.get("temperature_at_lower_bound"):
        return (
            f"On its {recal.rows} validation rows the NLL kept falling as the temperature sharpened the class "
            "probabilities to the search's bound (as when every row is classified right), so the rows do not "
            "determine a temperature; the probabilities are kept as sampled (T = 1)."
        )
    if float(t) == 1.0:
        return (
            f"On its {recal.rows} validation rows no temperature lowered the NLL of the mixture's class "
            "probabilities, which are kept as sampled (T = 1)."
        )
    return (
        f"Its class probabilities were temperature-scaled on {recal.rows} validation rows (T = {float(t):.3g}), "
        "which calibrates the mixture as a whole."
    )


def mode_mixture_note(report: FitReport, threshold: float = MODE_MIXTURE_RHAT) -> str | None:
    """A plain statement that the chains sampled different modes, or ``None`` when they agree.

    A BNN's chains from separate starts usually settle in separate modes of the posterior;
    each then samples its own mode, and the R-hat of the predictions measures the spread
    between the modes, not a failure to sample any one of them. Above ``threshold`` the model
    is an equal-weight mixture of the chains' local posteriors (as a deep ensemble with local
    uncertainty is), not a converged posterior, and the note says what that means for the
    intervals: recalibrated ones were mapped to nominal coverage on rows the fit held out;
    raw ones carry the mixture's spread uncalibrated.

    Args:
        report: the fit's :class:`~sigmabnn.fitting.report.FitReport`.
        threshold: R-hat of the predictions above which the note is given (1.1).
    """
    sampler = report.sampler
    if not isinstance(sampler, MCMCSummary) or sampler.rhat_predictions is None:
        return None
    rhat = float(sampler.rhat_predictions)
    if not math.isfinite(rhat) or rhat <= threshold:
        return None
    chains = len(sampler.acceptance or ()) or None
    who = f"the {chains} chains" if chains else "the chains"
    text = (
        f"R-hat of the predictions is {rhat:.2f} (> {threshold:g}): {who} sit in different modes, so the model "
        "is an equal-weight mixture of the chains' local posteriors, not one converged posterior; "
        "the spread between the modes is part of its epistemic uncertainty. "
    )
    recal = report.recalibration
    classifier = report.model is not None and report.model.likelihood == "categorical"
    if classifier or (recal is not None and recal.rows_kind == "temperature"):  # probabilities, not intervals
        return text + _temperature_sentence(recal)
    if recal is not None and recal.rows:
        where = {"heldout": "held-out rows", "loo": "leave-one-out PIT of the training rows"}.get(
            recal.rows_kind or "", "held-out and leave-one-out rows"
        )
        return (
            text + f"Its intervals were recalibrated on {recal.rows} {where}, which calibrates the mixture as a whole."
        )
    return text + (
        "Its intervals are not recalibrated: whether the mixture's spread is the right width is unchecked; "
        "check coverage on held-out rows ('sigmabnn evaluate') or recalibrate ('sigmabnn recalibrate')."
    )


def diagnose_model(
    fitted: Any,
    data: Any = None,
    *,
    num_points: int = DEFAULT_NUM_POINTS,
    rng_key: Any = None,
    thresholds: Thresholds | None = None,
) -> ModelDiagnosis:
    """Function-space and sampler diagnostics of a fitted model's draws.

    Predictions: the network means ``f(x)`` (first target, model units) of
    every draw at ``k = num_points`` inputs: evenly spaced rows of ``data``
    when given, else ``k`` standard-normal points in the standardised input
    space (i.e. around the training inputs, one training standard deviation
    apart), drawn with ``rng_key`` (default ``jax.random.key(0)``).

    Log posterior: when ``data`` holds the target column, the log posterior
    of every draw (its weights and hyperparameters) on all of ``data``'s
    rows, ``log p(w | hyper) + log p(y | w, hyper)`` in the model's
    standardised units; on the training table this is exactly what the
    sampler targeted; on any other table it is still a fixed function of the
    draw, which is all R-hat and ESS need. Without target values the
    training-time log-posterior R-hat and ESS stored in the model are used.

    Sampler statistics (divergences, tree-depth saturation, E-BFMI,
    acceptance) are those the model stores from training.

    Args:
        fitted: a :class:`~sigmabnn.fitted.FittedModel` with MCMC draws.
        data: ``None``, a DataFrame with the raw feature columns (and
            optionally the target), or a raw feature matrix ``[n, p]``.
        num_points: number of check inputs (>= 1).
        rng_key: JAX key for the reference inputs when ``data`` is ``None``.
        thresholds: warning limits (default :class:`Thresholds`).

    Returns:
        :class:`ModelDiagnosis`.
    """
    if int(num_points) < 1:
        raise InputError(f"num_points must be >= 1, got {num_points}")
    draws = fitted.draws
    if draws.num_draws < 4:
        raise InputError(f"diagnostics need at least 4 draws per chain; the model has {draws.num_draws}")
    c, s = draws.num_chains, draws.num_draws
    log_posterior = None
    source = "training report"
    if data is None:
        key = jax.random.key(0) if rng_key is None else rng_key
        z = np.asarray(jax.random.normal(key, (int(num_points), fitted.num_features)), np.float64)
        inputs = {"source": "reference", "num_points": int(num_points), "x": fitted.x_transform.inverse(z).tolist()}
    else:
        x = feature_matrix_for(fitted, data)
        n = x.shape[0]
        if n == 0:
            raise DataError("no rows to diagnose")
        rows = np.unique(np.linspace(0, n - 1, min(int(num_points), n)).round().astype(int))
        z = fitted.x_transform.forward(x[rows])
        inputs = {"source": "data", "num_points": int(rows.size), "rows": rows.tolist()}
        y = _target_values(fitted, data)
        if y is not None:
            if fitted.bnn.likelihood.name == "known_noise":
                source = "training report (a known-noise model needs its noise column)"
            else:
                zall = fitted.x_transform.forward(x, dtype=fitted.bnn.dtype)
                y_model = fitted.y_transform.forward(y, offset=fitted.y_transform.offset(x, fitted.feature_names))
                log_posterior = _draw_log_posterior(fitted, zall, y_model)
                source = f"on {n} data rows"
    predictions = np.asarray(draw_means(fitted.bnn, fitted.draws, z), np.float64)
    summary = summarize(predictions=predictions, log_posterior=log_posterior)
    stored = stored_summary(fitted.report, c, s)
    if stored.get("sampler", {}).get("max_tree_depth") is None and "sampler" in stored:
        stored["sampler"]["max_tree_depth"] = (fitted.settings or {}).get("max_tree_depth")
    if "sampler" in stored:
        summary["sampler"] = stored["sampler"]
    if log_posterior is None and "log_posterior" in stored:
        summary["log_posterior"] = stored["log_posterior"]
    summary["inputs"] = inputs
    summary["log_posterior_source"] = source
    summary["method"] = fitted.method
    found = warnings(summary, thresholds)
    summary["warnings"] = found
    return ModelDiagnosis(summary, found, predictions, log_posterior)


def _target_values(fitted: Any, data: Any) -> np.ndarray | None:
    """Target values ``[n, t]`` of a DataFrame that holds the (valid) target column, else ``None``."""
    if not isinstance(data, pd.DataFrame) or fitted.target_name not in data.columns:
        return None
    y = pd.to_numeric(data[fitted.target_name], errors="coerce").to_numpy(np.float64)[:, None]
    bad = ~np.isfinite(y[:, 0]) | (fitted.log_target & ~(y[:, 0] > 0))
    if bad.any():
        raise DataError(
            f"target column {fitted.target_name!r} has {int(bad.sum())} missing, non-finite"
            + (" or non-positive" if fitted.log_target else "")
            + " values; drop those rows or leave the column out"
        )
    return y
