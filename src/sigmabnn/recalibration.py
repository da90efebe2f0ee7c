"""Post-hoc quantile recalibration of a fitted model's predictive intervals on held-out rows.

Kuleshov, Fenner & Ermon 2018, "Accurate Uncertainties for Deep Learning Using Calibrated
Regression" (ICML): the probability integral transform ``u_i = F_i(y_i)`` of held-out rows under
the model's predictive CDF is uniform when the model is calibrated; its empirical CDF ``R``
is a monotone map that makes it so. :func:`recalibrate` computes the ``u_i`` exactly
(:func:`sigmabnn.predict.predictive_cdf`: the equally weighted mixture over the networks of
their Gaussian or Student-t components, in closed form) and returns a copy of the model holding
the map (:class:`~sigmabnn.calibration.Calibration`; its estimator and how it treats the ends
are described there). :func:`sigmabnn.predict.predict` then reads the central interval at level
``c`` off the predictive quantiles ``R^{-1}((1 - c) / 2)`` and ``R^{-1}((1 + c) / 2)``; the
predictive mean and stds are not changed.

A classifier has no intervals: its recalibration refits the temperature of its posterior predictive on the
held-out rows (:mod:`sigmabnn.temperature`, the pooled map), kept only when it lowers their negative
log-likelihood; a model with the per-network map of an older file gets the pooled map.

The held-out rows must be independent of the training rows and of the rows the recalibrated
intervals are judged on: the map is fitted on them, so coverage on the same rows is optimistic.
``m`` rows resolve levels to about ``1 / (m + 1)``; coverage of the recalibrated central
``c`` interval on new rows scatters by about ``sqrt(c (1 - c) / m)`` from the calibration alone.

Leave-one-out PIT of the training rows (``rows="loo"`` or ``"loo+heldout"``): for a model sampled
by MCMC the training rows themselves give nearly independent PIT values, far more of them than a
held-out split has. The leave-one-out predictive CDF of training row ``i``,
``F_{-i}(y_i) = E[F_s(y_i) | y_{-i}]``, is estimated from the full-data draws by importance
weighting, ``w_is ∝ 1 / p(y_i | theta_s)`` (``F_s``, ``p``: network ``s``'s predictive component,
the same per-draw CDF and density :func:`pit_values` and the log predictive density mix), with
the largest weights Pareto-smoothed (PSIS; Vehtari, Gelman & Gabry 2017, "Practical Bayesian model
evaluation using leave-one-out cross-validation and WAIC", and Vehtari et al. 2024, "Pareto
smoothed importance sampling"; ArviZ's :func:`arviz.psislw`): the LOO-PIT of Gabry et al. 2019
("Visualization in Bayesian workflow"), ``u_i = sum_s w~_is F_s(y_i)`` with normalised weights
``w~``. PSIS's tail-shape estimate ``k_i`` says when row ``i``'s estimate is unreliable (its
importance weights have too heavy a tail): rows with ``k_i`` above ``min(1 - 1 / log10(S), 0.7)``
(``S`` draws; the threshold of Vehtari et al. 2024 that ArviZ's ``loo`` uses) are left out of the
calibration set, and how many is recorded in the model's diagnostics (``recalibration``). Only
MCMC draws are samples of the posterior, so only MCMC models are accepted. The fitted input and
target transforms (and the target's baseline) are fixed functions of all training rows and are
not refitted per left-out row; with thousands of rows their leave-one-out change is negligible.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np

from sigmabnn.calibration import CALIBRATION_MAPS, Calibration, fit_scale
from sigmabnn.errors import DataError, InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.names import MCMC_METHODS, MIN_RECALIBRATION_ROWS, RECALIBRATION_ROWS
from sigmabnn.predict import feature_matrix_for, per_draw_predictive, predictive_cdf
from sigmabnn.temperature import fit_temperature

__all__ = [
    "ROWS",
    "LooPIT",
    "loo_log_weights",
    "loo_pit_values",
    "loo_subset",
    "pit_values",
    "recalibrate",
    "uniformity_pvalue",
]

#: Fewest held-out rows accepted (the map resolves levels only to about ``1 / (m + 1)``).
MIN_ROWS = MIN_RECALIBRATION_ROWS
#: Which rows' PIT values the map is fitted on: the held-out rows' ordinary PIT, the training
#: rows' leave-one-out PIT, or both pooled.
ROWS = RECALIBRATION_ROWS


def _check_model(fitted: FittedModel) -> None:
    """Refuse what has no predictive CDF to take PIT values of (a classifier's recalibration is its
    temperature, which :func:`recalibrate` dispatches to before this check)."""
    name = fitted.bnn.likelihood.name
    if name == "categorical":
        raise InputError("PIT values apply to regression models; this model is a classifier (categorical)")
    if name == "known_noise":
        raise InputError(
            "recalibration is not supported for a known-noise model (its intervals depend on the noise std given at "
            "prediction time)"
        )


def pit_values(fitted: FittedModel, x_raw: Any, y_raw: Any, *, chunk_size: int = 65536) -> np.ndarray:
    """Exact PIT values ``F_i(y_i)`` ``[n, t]`` of rows under ``fitted``'s predictive (raw, uncalibrated) CDF.

    ``x_raw``: raw features (array or DataFrame, see :func:`sigmabnn.predict.feature_matrix_for`);
    ``y_raw``: ``[n]`` or ``[n, t]`` targets in original units.
    """
    _check_model(fitted)
    return predictive_cdf(fitted, x_raw, y_raw, chunk_size=chunk_size)


def _heldout_table(fitted: FittedModel, data: Any, split: str, split_column: str | None) -> tuple[Any, str]:
    """The held-out rows of a table (its ``split`` rows, or every row without a split column), and their name."""
    import pandas as pd

    if not isinstance(data, pd.DataFrame):
        raise InputError("recalibrate needs a table (DataFrame) holding the target column, or arrays x and y")
    name = "all"
    if split_column is not None and split_column in data.columns:
        data = data[data[split_column].astype(str) == split]
        name = split
        if len(data) == 0:
            raise DataError(f"no rows with {split_column} == {split!r} to recalibrate on")
    elif split_column is not None and split_column != "split":
        raise DataError(f"the table has no split column {split_column!r}")
    if fitted.target_name not in data.columns:
        raise DataError(f"the table has no target column {fitted.target_name!r}")
    return data, name


def _rows(fitted: FittedModel, data: Any, y: Any, split: str, split_column: str | None) -> tuple[Any, Any, str]:
    """The held-out inputs, targets and their name from a table (with its split column) or arrays."""
    import pandas as pd

    if y is not None:
        return data, y, split
    data, name = _heldout_table(fitted, data, split, split_column)
    values = pd.to_numeric(data[fitted.target_name], errors="coerce").to_numpy(np.float64)
    ok = np.isfinite(values) & ((values > 0) if fitted.log_target else True)
    data = data[ok]
    return data, values[ok], name


class LooPIT(NamedTuple):
    """Leave-one-out PIT values of training rows (:func:`loo_pit_values`).

    Attributes:
        pit: ``[n, t]`` float64, the PSIS estimates of ``F_{-i}(y_i)`` in [0, 1].
        pareto_k: ``[n]`` float64, PSIS's tail-shape estimate per row (``inf`` where the weights'
            tail was too short to fit).
        k_threshold: rows with ``pareto_k`` above this are unreliable (``min(1 - 1 / log10(S), 0.7)``).
        relative_efficiency: the relative effective sample size ``ESS / S`` given to PSIS (mean over
            rows of that of ``p(y_i | theta_s)``).
    """

    pit: np.ndarray
    pareto_k: np.ndarray
    k_threshold: float
    relative_efficiency: float

    @property
    def reliable(self) -> np.ndarray:
        """``[n]`` bool: rows whose ``pareto_k`` is at most ``k_threshold``."""
        return self.pareto_k <= self.k_threshold


def loo_log_weights(log_likelihood: Any, relative_efficiency: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Pareto-smoothed leave-one-out log importance weights (PSIS, :func:`arviz.psislw`).

    Args:
        log_likelihood: ``[n, S]`` ``log p(y_i | theta_s)`` of each row under each posterior draw.
        relative_efficiency: ``ESS / S`` of the draws (sets the length of the smoothed tail).

    Returns:
        ``(log_weights [n, S], pareto_k [n])``: normalised (``sum_s exp = 1`` per row) smoothed
        log weights of the raw ratios ``1 / p(y_i | theta_s)``, and the tail-shape estimates.
    """
    import arviz

    ll = np.asarray(log_likelihood, dtype=np.float64)
    if ll.ndim != 2 or ll.shape[0] < 1 or ll.shape[1] < 2:
        raise InputError(f"log-likelihood must be [rows, draws >= 2], got shape {list(ll.shape)}")
    if not np.all(np.isfinite(ll)):
        raise DataError("log-likelihood values must be finite")
    if not relative_efficiency > 0:
        raise InputError(f"relative efficiency must be > 0, got {relative_efficiency}")
    log_weights, k = arviz.psislw(-ll, reff=float(relative_efficiency))
    return np.asarray(log_weights, np.float64), np.asarray(k, np.float64)


def _relative_efficiency(log_likelihood: np.ndarray, num_chains: int) -> float:
    """Mean over rows of ``ESS / S`` of ``p(y_i | theta_s)`` (draws chain-major), as the R loo package estimates it."""
    import arviz

    n, s = log_likelihood.shape
    lik = np.exp(log_likelihood - log_likelihood.max(axis=1, keepdims=True))
    chains = lik.T.reshape(num_chains, s // num_chains, n)  # (chain, draw, row)
    ess = np.asarray(arviz.ess(arviz.convert_to_dataset(chains), method="mean").to_array()).reshape(-1)
    ess = ess[np.isfinite(ess)]
    return float(np.clip(np.mean(ess) / s, 1.0 / s, None)) if ess.size else 1.0


def _check_mcmc(fitted: FittedModel) -> None:
    if fitted.method not in MCMC_METHODS:
        raise InputError(
            f"leave-one-out PIT needs MCMC draws ({', '.join(MCMC_METHODS)}); this model was made by "
            f"{fitted.method!r} (recalibrate it on held-out rows instead)"
        )


def uniformity_pvalue(pit: Any) -> float:
    """The smallest, over target columns, Kolmogorov-Smirnov p-value of PIT values ``[m, t]`` against U(0, 1).

    Small: the rows say the model's intervals are miscalibrated; large: they are consistent with
    calibrated ones (or too few to tell).
    """
    from scipy import stats

    u = np.asarray(pit, np.float64)
    u = u[:, None] if u.ndim == 1 else u
    return float(min(stats.kstest(u[:, j], "uniform").pvalue for j in range(u.shape[1])))


def loo_subset(n: int, max_rows: int, seed: int = 0) -> np.ndarray:
    """Sorted indices of ``min(n, max_rows)`` of ``n`` rows, drawn without replacement (seeded)."""
    if max_rows < 1:
        raise InputError(f"max_rows must be >= 1, got {max_rows}")
    if n <= max_rows:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=max_rows, replace=False))


def _are_training_rows(fitted: FittedModel, x: np.ndarray, y: np.ndarray) -> bool:
    """Whether features ``x`` ``[n, p]`` and targets ``y`` are exactly the rows ``fitted`` trained on, in
    order (their fingerprint is the model's; ``False`` when the model records none)."""
    from sigmabnn.data.tables import fingerprint

    y = np.asarray(y, dtype=np.float64)
    yy = y.reshape(len(x)) if fitted.target_dim == 1 and y.size == len(x) else y
    return bool(fitted.data_fingerprint) and (
        fingerprint(x, yy, fitted.feature_names, fitted.target_name) == fitted.data_fingerprint
    )


def loo_pit_values(
    fitted: FittedModel, x_raw: Any, y_raw: Any, *, chunk_size: int = 65536, max_rows: int | None = None
) -> LooPIT:
    """PSIS leave-one-out PIT values of ``fitted``'s own training rows (module docstring).

    Args:
        fitted: a regression model sampled by MCMC.
        x_raw: the training rows' raw features (array or DataFrame, see
            :func:`sigmabnn.predict.feature_matrix_for`), in the order they were trained on.
        y_raw: their targets ``[n]`` or ``[n, t]`` in original units.
        chunk_size: most points per chunk of the network pass.
        max_rows: compute the LOO-PIT of at most this many training rows, a random subset
            (:func:`loo_subset`, fixed seed) in their original order; ``None``: every row. The
            rows are all checked against the model's fingerprint first; each left-out row's
            estimate still conditions on all the others, so a subset only thins the calibration
            set (``m`` values resolve levels to about ``1 / (m + 1)``) and bounds the cost.

    Memory: ``n * S * (t + 1)`` float64 (``S`` draws, ``n`` rows after ``max_rows``); 8,400 rows
    and 1,000 draws take 134 MB.

    Raises:
        InputError: not an MCMC model, a classifier or known-noise model.
        DataError: the rows are not the model's training rows (when the model records the
            fingerprint of its training data), bad values.
    """
    _check_model(fitted)
    _check_mcmc(fitted)
    x = feature_matrix_for(fitted, x_raw)
    y = np.asarray(y_raw, dtype=np.float64)
    if fitted.data_fingerprint:
        if not _are_training_rows(fitted, x, y):
            raise DataError(
                f"these {len(x)} rows are not the model's training rows (their fingerprint differs from the "
                "model's); leave-one-out PIT needs exactly the rows it was trained on, in order"
            )
    if max_rows is not None and len(x) > max_rows:
        keep = loo_subset(len(x), max_rows)
        x, y = x[keep], y[keep]
    log_lik, cdf = per_draw_predictive(fitted, x, y, chunk_size=chunk_size)
    s = log_lik.shape[1]
    chains = fitted.draws.num_chains if s % max(fitted.draws.num_chains, 1) == 0 else 1
    reff = _relative_efficiency(log_lik, chains)
    log_w, k = loo_log_weights(log_lik, reff)
    pit = np.clip(np.einsum("ns,nst->nt", np.exp(log_w), cdf), 0.0, 1.0)
    threshold = min(1.0 - 1.0 / math.log10(s), 0.7) if s > 1 else 0.0
    return LooPIT(pit, k, threshold, reff)


def _train_rows(fitted: FittedModel, data: Any, train: Any, split_column: str | None, train_split: str):
    """The training rows (inputs, targets) for leave-one-out: ``train=(x, y)``, or the table's ``train_split`` rows."""
    import pandas as pd

    if train is not None:
        if not (isinstance(train, tuple | list) and len(train) == 2):
            raise InputError("train must be a pair (x, y) of the training rows' features and targets")
        return train[0], train[1]
    if not isinstance(data, pd.DataFrame):
        raise InputError(
            "leave-one-out recalibration needs the training rows: a table with a split column, or train=(x, y)"
        )
    if split_column is None:
        return _rows(fitted, data, None, train_split, None)[:2]
    if split_column not in data.columns:
        raise DataError(f"the table has no split column {split_column!r} to find the {train_split!r} rows in")
    return _rows(fitted, data, None, train_split, split_column)[:2]


def recalibrate(
    fitted: FittedModel,
    data: Any,
    y: Any = None,
    *,
    split: str = "val",
    split_column: str | None = "split",
    rows: str = "heldout",
    train_split: str = "train",
    train: Any = None,
    chunk_size: int = 65536,
    loo_max_rows: int | None = None,
    map: str = "quantile",
) -> FittedModel:
    """A copy of ``fitted`` whose intervals are quantile-recalibrated (Kuleshov et al. 2018).

    Args:
        fitted: a model of any likelihood but known noise; a classifier gets its temperature refitted on the
            held-out rows instead of an interval map (``rows`` must be ``"heldout"``; ``map`` does not apply).
        data: a DataFrame with the raw input columns and the target (derived features are
            recomputed), or raw features ``[n, p]`` of the held-out rows with ``y`` (``None`` with
            ``rows="loo"`` and ``train``).
        y: targets ``[n]`` or ``[n, t]`` in original units when ``data`` is an array.
        split: the label of the held-out rows in ``split_column`` (default ``"val"``); also the
            name stored with the calibration. Ignored (named ``"all"``) when the table has no
            ``split_column`` and that column is the default ``"split"``: then every row is used.
        split_column: the column holding split labels (``None``: use every row).
        rows: the PIT values the map is fitted on (:data:`ROWS`): ``"heldout"`` (the held-out
            rows' exact PIT), ``"loo"`` (the training rows' PSIS leave-one-out PIT; MCMC models
            only; see the module docstring) or ``"loo+heldout"`` (both, pooled).
        train_split: the label of the training rows in ``split_column`` (``rows`` with ``"loo"``).
        train: ``(x, y)`` of the training rows as arrays, instead of a table's ``train_split`` rows.
        chunk_size: most points per chunk of the network pass.
        loo_max_rows: the leave-one-out part uses at most this many training rows (``max_rows``
            of :func:`loo_pit_values`); ``None``: all of them.
        map: ``"quantile"``, the empirical map of the PIT values, or ``"scale"``, the one-parameter
            width map fitted to them (:mod:`sigmabnn.calibration`, :func:`~sigmabnn.calibration.fit_scale`).

    Rows whose target is missing (or not positive, for a log target) are skipped, as
    in training; so are training rows whose leave-one-out estimate is unreliable (Pareto ``k``
    above the threshold), and their number is stored in the new model's ``diagnostics``
    (``recalibration``: ``rows``, ``loo_rows``, ``loo_dropped_high_k``, ``loo_k_threshold``,
    ``loo_max_k``, ``relative_efficiency``). The calibration's name is the held-out split's,
    ``"loo-<train_split>"`` or ``"loo-<train_split>+<split>"``. The returned model predicts
    recalibrated intervals by default (``predict(..., calibrated=False)`` for the raw ones); its
    means and stds are unchanged. A model that already holds a calibration is recalibrated from
    its raw CDF (the old map is replaced, not composed).

    Raises:
        InputError / DataError: a known-noise model, ``rows`` other than ``"heldout"`` for a classifier or
            with ``"loo"`` for a model not sampled by MCMC, rows that are not the model's training rows,
            missing columns or rows, fewer than ``MIN_ROWS`` usable rows, a label the classifier never saw.
    """
    if fitted.is_classifier:
        if rows != "heldout":
            raise InputError(f"a classifier is recalibrated on held-out rows (rows 'heldout'), not {rows!r}")
        return _recalibrate_classifier(fitted, data, y, split, split_column)
    _check_model(fitted)
    if rows not in ROWS:
        raise InputError(f"rows must be one of {', '.join(ROWS)}; got {rows!r}")
    if map not in CALIBRATION_MAPS:
        raise InputError(f"map must be one of {', '.join(CALIBRATION_MAPS)}; got {map!r}")
    if rows == "loo+heldout" and train is None and split_column is None:
        raise InputError(
            "rows='loo+heldout' needs a split column (or train=(x, y)) to tell training from held-out rows"
        )
    parts, names, info = [], [], {}
    if "loo" in rows:
        _check_mcmc(fitted)
        x_train, y_train = _train_rows(fitted, data, train, split_column, train_split)
        loo = loo_pit_values(fitted, x_train, y_train, chunk_size=chunk_size, max_rows=loo_max_rows)
        keep = loo.reliable
        parts.append(loo.pit[keep])
        names.append(f"loo-{train_split}")
        finite_k = loo.pareto_k[np.isfinite(loo.pareto_k)]
        info = {
            "loo_rows": int(keep.sum()),
            "loo_dropped_high_k": int((~keep).sum()),
            "loo_k_threshold": float(loo.k_threshold),
            "loo_max_k": float(finite_k.max()) if finite_k.size == len(keep) else None,  # None: a tail not fitted
            "relative_efficiency": float(loo.relative_efficiency),
        }
    if "heldout" in rows:
        x, yy, name = _rows(fitted, data, y, split, split_column)
        if len(x) == 0 and rows == "loo+heldout":
            raise DataError(f"no held-out rows ({name}) to recalibrate on")
        pit = np.zeros((0, fitted.target_dim))
        if len(x):
            x = feature_matrix_for(fitted, x)  # once: the check and the PIT values read the same matrix
            if _are_training_rows(fitted, x, yy):
                raise DataError(
                    f"the {len(x)} rows given to recalibrate on are the model's own training rows: a map fitted "
                    "on them would make the intervals too narrow; give held-out rows (or, for an MCMC model, the "
                    "training rows' leave-one-out PIT: rows 'loo')"
                )
            pit = pit_values(fitted, x, yy, chunk_size=chunk_size)
        parts.append(pit)
        names.append(name)
        info["heldout_rows"] = int(len(x))
    u = np.concatenate(parts)
    n = len(u)
    if n < MIN_ROWS:
        dropped = (
            f" ({info['loo_dropped_high_k']} training rows dropped for Pareto k)"
            if info.get("loo_dropped_high_k")
            else ""
        )
        raise DataError(f"recalibration needs at least {MIN_ROWS} rows with a PIT value, got {n}{dropped}")
    scale = fit_scale(u) if map == "scale" else None
    new = dataclasses.replace(fitted, calibration=Calibration(u, "+".join(names), scale))
    extra = {} if scale is None else {"map": "scale", "scale": scale.tolist()}
    return new.with_diagnostics(recalibration={"rows_kind": rows, "rows": n, **info, **extra})


def _recalibrate_classifier(
    fitted: FittedModel, data: Any, y: Any, split: str, split_column: str | None
) -> FittedModel:
    """A classifier's recalibration: its temperature refitted on the held-out rows (:mod:`sigmabnn.temperature`,
    kept only when it lowers their NLL below that at ``T = 1``); the old temperature and its map are replaced."""
    if fitted.classes is None:
        raise InputError("this classifier holds no label set to recalibrate (a model file always does)")
    if y is None:
        table, name = _heldout_table(fitted, data, split, split_column)
        labels = table[fitted.target_name]
        present = labels.notna().to_numpy()
        x, labels = table[present], labels[present]
    else:
        x, labels, name = data, y, split
    if len(labels) < MIN_ROWS:
        raise DataError(f"recalibration needs at least {MIN_ROWS} rows with a label, got {len(labels)}")
    codes = fitted.classes.encode(labels, what=f"label of {fitted.target_name!r}")
    x = feature_matrix_for(fitted, x)
    if _are_training_rows(fitted, x, codes):
        raise DataError(
            f"the {len(x)} rows given to recalibrate on are the model's own training rows: a temperature fitted on "
            "them would make the class probabilities overconfident; give held-out rows"
        )
    new, fit = fit_temperature(fitted, x, codes)
    summary = {
        "rows_kind": "temperature", "rows": len(x), "heldout_rows": len(x), "split": name,
        "temperature": fit.temperature, "val_nll": fit.nll, "val_nll_at_temperature_1": fit.nll_at_one,
        "temperature_at_lower_bound": fit.at_lower_bound,
    }  # fmt: skip
    return new.with_diagnostics(recalibration=summary)
