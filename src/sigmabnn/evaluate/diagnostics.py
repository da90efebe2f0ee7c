"""Convergence diagnostics for posterior draws, in function space first.

Why function space: the weights of a neural network are not identifiable
(hidden units can be permuted and sign-flipped without changing the
function), so different chains can sit in equivalent modes that give the same
predictions while their weights disagree completely. Weight-space R-hat then
reports non-convergence where there is none, and can hide real problems in
the quantities we care about. We therefore diagnose the predictions
``f(x)`` at a fixed set of inputs and the log posterior, both identifiable.

Statistics (via ArviZ, not re-implemented here):

* R-hat: rank-normalized split R-hat (Vehtari, Gelman, Simpson, Carpenter &
  Bürkner 2021, "Rank-normalization, folding, and localization: an improved
  R-hat", Bayesian Analysis 16(2)), the maximum of the bulk and folded
  (tail) versions.
* Bulk and tail ESS from the same paper (tail ESS: the minimum of the ESS of
  the 5% and 95% quantile indicators).
* Autocorrelation: ArviZ's FFT estimate ``rho_k = c_k / c_0`` with
  ``c_k = (1/n) sum_{t < n-k} (x_t - m)(x_{t+k} - m)``, per chain.

Computed here:

* E-BFMI per chain (Betancourt 2016, "Diagnosing suboptimal cotangent
  disintegrations in Hamiltonian Monte Carlo", arXiv:1604.00695):
  ``sum_n (E_n - E_{n-1})^2 / sum_n (E_n - mean E)^2`` over the energies of
  one chain.
* Divergences, tree-depth saturation and per-chain mean acceptance from the
  sampler's per-draw info arrays.

Default thresholds (:class:`Thresholds`) follow Vehtari et al. (2021) and
Stan: R-hat > 1.01, bulk or tail ESS < 100 per chain, any divergence, any
draw at the maximum tree depth, E-BFMI < 0.3, a chain with (near) zero
acceptance.

Everything returns plain data (floats, lists, numpy arrays); figures live
elsewhere.
"""

from __future__ import annotations

import math
import os
import tempfile
import warnings as _warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

with _warnings.catch_warnings():
    _warnings.simplefilter("ignore", FutureWarning)  # ArviZ's refactor notice on import
    import arviz as az
    import xarray as xr

__all__ = [
    "ModelDiagnosis",
    "Thresholds",
    "autocorrelation",
    "chain_statistics",
    "diagnose_model",
    "ebfmi",
    "predictive_diagnostics",
    "report_warnings",
    "sampler_diagnostics",
    "stored_summary",
    "suggest_thin",
    "summarize",
    "to_inference_data",
    "to_netcdf",
    "warnings",
]


class Thresholds(NamedTuple):
    """Where a diagnostic becomes a warning.

    Attributes:
        max_rhat: warn when any R-hat exceeds this (Vehtari et al. 2021: 1.01).
        min_ess_per_chain: warn when a bulk or tail ESS is below this times the
            number of chains (100 per chain: 400 for 4 chains).
        max_divergent_fraction: warn when the fraction of divergent draws
            exceeds this (0: any divergence warns, as in Stan).
        max_tree_depth_fraction: warn when the fraction of draws that hit the
            maximum tree depth exceeds this (0: any saturation warns).
        min_ebfmi: warn when a chain's E-BFMI is below this (0.3).
        min_acceptance: a chain whose mean acceptance is at or below this is
            reported as stuck.
    """

    max_rhat: float = 1.01
    min_ess_per_chain: float = 100.0
    max_divergent_fraction: float = 0.0
    max_tree_depth_fraction: float = 0.0
    min_ebfmi: float = 0.3
    min_acceptance: float = 1e-3


# --------------------------------------------------------------------------- helpers


def _as_chains(values: Any, name: str, min_ndim: int = 2) -> np.ndarray:
    """``values`` as a float64 numpy array ``[C, S, ...]``, with a one-line error on bad shapes."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim < min_ndim:
        raise ValueError(f"{name} must have shape [chain, draw, ...], got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 4:
        raise ValueError(f"{name} needs at least 1 chain and 4 draws per chain, got shape {arr.shape}")
    return arr


def _dataset(values: np.ndarray) -> xr.Dataset:
    """One ArviZ dataset variable ``x`` with dims ``(chain, draw, point)`` (``point`` flattened)."""
    c, s = values.shape[:2]
    flat = values.reshape(c, s, -1)
    return xr.Dataset({"x": (("chain", "draw", "point"), flat)})


def chain_statistics(values: Any) -> dict[str, np.ndarray]:
    """R-hat, bulk ESS and tail ESS of every trailing element of ``values``.

    Args:
        values: draws ``[C, S, ...]`` (chains, draws per chain, any trailing shape).

    Returns:
        ``{"rhat", "ess_bulk", "ess_tail"}``, each a float64 array of the
        trailing shape of ``values`` (a scalar array for ``[C, S]`` input).
        ESS is in draws (absolute, not per draw). Constant elements give NaN.
    """
    arr = _as_chains(values, "values")
    trailing = arr.shape[2:]
    ds = _dataset(arr)
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        rhat = az.rhat(ds, method="rank")["x"].values
        bulk = az.ess(ds, method="bulk")["x"].values
        tail = az.ess(ds, method="tail")["x"].values
    return {
        "rhat": np.asarray(rhat, dtype=np.float64).reshape(trailing),
        "ess_bulk": np.asarray(bulk, dtype=np.float64).reshape(trailing),
        "ess_tail": np.asarray(tail, dtype=np.float64).reshape(trailing),
    }


def _nanmax(a: np.ndarray) -> float:
    return float(np.nanmax(a)) if np.any(np.isfinite(a)) else math.nan


def _nanmin(a: np.ndarray) -> float:
    return float(np.nanmin(a)) if np.any(np.isfinite(a)) else math.nan


# --------------------------------------------------------------------------- function space


def predictive_diagnostics(values: Any) -> dict[str, Any]:
    """Function-space convergence diagnostics of predictions ``f(x)`` at fixed inputs.

    Args:
        values: predictions ``[C, S, n_points]`` (chains, draws, input points),
            in any units (the statistics are scale-free). A ``[C, S]`` array is
            read as one point (e.g. the log posterior).

    Returns:
        dict with per-point arrays ``rhat``, ``ess_bulk``, ``ess_tail``
        (``[n_points]``, float64), and the worst over points: ``max_rhat``,
        ``argmax_rhat`` (index of the worst point), ``min_ess_bulk``,
        ``min_ess_tail``; plus ``num_chains``, ``num_draws``, ``num_points``.
        Points whose draws are all equal (NaN statistics) are ignored by the
        worst-case summaries.
    """
    arr = _as_chains(values, "predictions")
    if arr.ndim == 2:
        arr = arr[:, :, None]
    if arr.ndim != 3:
        raise ValueError(f"predictions must have shape [chain, draw, n_points], got shape {arr.shape}")
    stats = chain_statistics(arr)
    rhat = stats["rhat"]
    finite = np.isfinite(rhat)
    return {
        "num_chains": int(arr.shape[0]),
        "num_draws": int(arr.shape[1]),
        "num_points": int(arr.shape[2]),
        "rhat": rhat,
        "ess_bulk": stats["ess_bulk"],
        "ess_tail": stats["ess_tail"],
        "max_rhat": _nanmax(rhat),
        "argmax_rhat": int(np.nanargmax(rhat)) if finite.any() else -1,
        "min_ess_bulk": _nanmin(stats["ess_bulk"]),
        "min_ess_tail": _nanmin(stats["ess_tail"]),
    }


# --------------------------------------------------------------------------- autocorrelation, thinning


def autocorrelation(values: Any, max_lag: int | None = None) -> np.ndarray:
    """Per-chain autocorrelation (ArviZ's FFT estimate) along the draw axis.

    Args:
        values: draws ``[C, S, ...]``.
        max_lag: largest lag returned (default ``S - 1``).

    Returns:
        ``rho`` ``[C, max_lag + 1, ...]`` (float64), ``rho[:, 0] == 1``, with
        ``rho_k = c_k / c_0`` and ``c_k = (1/S) sum_{t < S-k} (x_t - m)(x_{t+k} - m)``
        (the biased, positive-semidefinite estimate), ``m`` the chain mean.
    """
    arr = _as_chains(values, "values")
    s = arr.shape[1]
    if max_lag is None:
        max_lag = s - 1
    if not 0 <= max_lag < s:
        raise ValueError(f"max_lag must be in [0, {s - 1}], got {max_lag}")
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", RuntimeWarning)
        rho = az.autocorr(arr, axis=1)
    return np.asarray(rho, dtype=np.float64)[:, : max_lag + 1]


def suggest_thin(
    values: Any,
    *,
    method: str = "autocorr",
    threshold: float = 0.1,
    max_thin: int | None = None,
) -> int:
    """A thinning interval after which successive kept draws are nearly independent.

    Rules:

    * ``"autocorr"``: the smallest lag ``k >= 1`` at which the autocorrelation,
      averaged over chains, drops below ``threshold`` (0.1), taking the
      largest such lag over all trailing elements of ``values`` (the slowest
      quantity decides).
    * ``"ess"``: ``ceil(C * S / min ESS_bulk)``, the number of draws per
      effective draw of the slowest quantity.

    Both are clipped to ``[1, max_thin]``, ``max_thin`` defaulting to
    ``S // 4`` (thinning never keeps fewer than 4 draws per chain). A lag where
    the autocorrelation never drops below the threshold gives ``max_thin``.

    Args:
        values: draws ``[C, S, ...]``.
        method: ``"autocorr"`` or ``"ess"``.
        threshold: autocorrelation level for ``"autocorr"``.
        max_thin: upper bound of the suggestion.

    Returns:
        the suggested thinning interval (a positive int).
    """
    arr = _as_chains(values, "values")
    c, s = arr.shape[:2]
    upper = max(1, s // 4) if max_thin is None else int(max_thin)
    if upper < 1:
        raise ValueError(f"max_thin must be at least 1, got {max_thin}")
    if method == "autocorr":
        rho = autocorrelation(arr).reshape(c, s, -1).mean(axis=0)  # [S, k]
        worst = 1
        for j in range(rho.shape[1]):
            col = rho[:, j]
            if not np.all(np.isfinite(col)):
                continue  # constant quantity: no information
            below = np.nonzero(col[1:] < threshold)[0]
            lag = int(below[0]) + 1 if below.size else upper
            worst = max(worst, lag)
        thin = worst
    elif method == "ess":
        ess = chain_statistics(arr)["ess_bulk"]
        min_ess = _nanmin(np.atleast_1d(ess))
        thin = upper if not np.isfinite(min_ess) or min_ess <= 0 else math.ceil(c * s / min_ess)
    else:
        raise ValueError(f"method must be 'autocorr' or 'ess', got {method!r}")
    return int(min(max(thin, 1), upper))


# --------------------------------------------------------------------------- sampler


def ebfmi(energy: Any) -> np.ndarray:
    """Energy Bayesian fraction of missing information, one value per chain.

    ``E-BFMI = sum_n (E_n - E_{n-1})^2 / sum_n (E_n - mean E)^2`` over the
    Hamiltonian energies ``E`` of one chain (Betancourt 2016). Values below
    0.3 indicate that momentum resampling explores the energy distribution
    poorly (heavy tails, poorly adapted metric).

    Args:
        energy: ``[C, S]`` energies (nats).

    Returns:
        ``[C]`` float64. A chain with constant energy gives NaN.
    """
    e = _as_chains(energy, "energy")
    if e.ndim != 2:
        raise ValueError(f"energy must have shape [chain, draw], got shape {e.shape}")
    num = np.sum(np.diff(e, axis=1) ** 2, axis=1)
    den = np.sum((e - e.mean(axis=1, keepdims=True)) ** 2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _field(info: Any, name: str) -> np.ndarray | None:
    if info is None:
        return None
    value = info.get(name) if isinstance(info, Mapping) else getattr(info, name, None)
    return None if value is None else np.asarray(value)


def sampler_diagnostics(info: Any, *, max_tree_depth: int | None = None, kernel: str = "nuts") -> dict[str, Any]:
    """Divergences, tree-depth saturation, E-BFMI and acceptance from per-draw sampler info.

    Args:
        info: an object or mapping with any of the fields ``is_divergent``,
            ``tree_depth``, ``energy``, ``acceptance_rate``, each ``[C, S]``
            (e.g. ``SampleInfo`` from :func:`sigmabnn.mcmc.run.sample`).
            Missing fields are skipped.
        max_tree_depth: the sampler's maximum tree depth; a draw is saturated
            when ``tree_depth >= max_tree_depth``. Without it, saturation is
            not reported.
        kernel: ``"nuts"``, ``"hmc"``, ``"chees"`` or ``"mh"``. E-BFMI is reported for
            the Hamiltonian kernels only (an MH "energy" is just the negative
            log-density), tree depth for NUTS only.

    Returns:
        dict with (when the inputs are present) ``num_divergent`` (int),
        ``divergent_fraction``, ``divergent_per_chain`` (list of int),
        ``tree_depth_saturation_fraction``, ``mean_tree_depth``, ``ebfmi``
        (list, per chain), ``mean_acceptance`` (list, per chain), ``num_chains``.
    """
    if kernel not in ("nuts", "hmc", "chees", "mh"):
        raise ValueError(f"kernel must be 'nuts', 'hmc', 'chees' or 'mh', got {kernel!r}")
    out: dict[str, Any] = {}
    div = _field(info, "is_divergent")
    if div is not None:
        div = np.asarray(div, dtype=bool)
        if div.ndim != 2:
            raise ValueError(f"is_divergent must have shape [chain, draw], got shape {div.shape}")
        out["num_chains"] = int(div.shape[0])
        out["num_divergent"] = int(div.sum())
        out["divergent_fraction"] = float(div.mean())
        out["divergent_per_chain"] = [int(v) for v in div.sum(axis=1)]
    depth = _field(info, "tree_depth") if kernel == "nuts" else None
    if depth is not None:
        depth = np.asarray(depth)
        out["mean_tree_depth"] = float(depth.mean())
        if max_tree_depth is not None:
            out["max_tree_depth"] = int(max_tree_depth)
            out["tree_depth_saturation_fraction"] = float(np.mean(depth >= max_tree_depth))
    energy = _field(info, "energy") if kernel != "mh" else None
    if energy is not None:
        out["ebfmi"] = [float(v) for v in ebfmi(energy)]
        out["num_chains"] = int(np.shape(energy)[0])
    acc = _field(info, "acceptance_rate")
    if acc is not None:
        acc = np.asarray(acc, dtype=np.float64)
        if acc.ndim != 2:
            raise ValueError(f"acceptance_rate must have shape [chain, draw], got shape {acc.shape}")
        out["mean_acceptance"] = [float(v) for v in acc.mean(axis=1)]
        out["num_chains"] = int(acc.shape[0])
    return out


# --------------------------------------------------------------------------- summary and warnings


def _jsonable_stats(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in d.items()}


def summarize(
    *,
    predictions: Any = None,
    log_posterior: Any = None,
    parameters: Any = None,
    info: Any = None,
    max_tree_depth: int | None = None,
    kernel: str = "nuts",
) -> dict[str, Any]:
    """All diagnostics of one run, as JSON-serialisable data.

    Args:
        predictions: ``[C, S, n_points]`` predictions f(x) at fixed inputs
            (the primary, identifiable convergence check).
        log_posterior: ``[C, S]`` log posterior of each draw (nats).
        parameters: optional ``[C, S, d]`` weights; reported under
            ``"parameters"`` for reference only (not identifiable for a
            network: its R-hat is expected to look bad and is not warned on).
        info: sampler info with ``[C, S]`` fields (see :func:`sampler_diagnostics`).
        max_tree_depth: the sampler's maximum tree depth.
        kernel: the kernel that made ``info`` (see :func:`sampler_diagnostics`).

    Returns:
        dict with ``num_chains``, ``num_draws`` and, for what was given,
        ``"predictions"`` and ``"log_posterior"`` (as from
        :func:`predictive_diagnostics`, arrays as lists), ``"parameters"``,
        ``"sampler"`` (from :func:`sampler_diagnostics`) and ``"suggested_thin"``
        (the ``"autocorr"`` rule of :func:`suggest_thin` on the log posterior,
        else on the predictions).
    """
    out: dict[str, Any] = {}
    shapes = []
    if predictions is not None:
        pred = _as_chains(predictions, "predictions")
        out["predictions"] = _jsonable_stats(predictive_diagnostics(pred))
        shapes.append(pred.shape[:2])
    if log_posterior is not None:
        lp = _as_chains(log_posterior, "log_posterior")
        if lp.ndim != 2:
            raise ValueError(f"log_posterior must have shape [chain, draw], got shape {lp.shape}")
        out["log_posterior"] = _jsonable_stats(predictive_diagnostics(lp))
        shapes.append(lp.shape)
    if parameters is not None:
        par = _as_chains(parameters, "parameters")
        out["parameters"] = _jsonable_stats(predictive_diagnostics(par.reshape(par.shape[0], par.shape[1], -1)))
        shapes.append(par.shape[:2])
    if info is not None:
        out["sampler"] = sampler_diagnostics(info, max_tree_depth=max_tree_depth, kernel=kernel)
    if len({tuple(s) for s in shapes}) > 1:
        raise ValueError(f"predictions, log_posterior and parameters disagree on [chain, draw]: {shapes}")
    if shapes:
        out["num_chains"], out["num_draws"] = (int(v) for v in shapes[0])
        thin_source = log_posterior if log_posterior is not None else predictions
        if thin_source is not None:
            out["suggested_thin"] = suggest_thin(thin_source)
    elif "sampler" in out and "num_chains" in out["sampler"]:
        out["num_chains"] = out["sampler"]["num_chains"]
    return out


def warnings(summary: Mapping[str, Any], thresholds: Thresholds | None = None) -> list[str]:
    """Plain-sentence warnings for every diagnostic past its threshold.

    Args:
        summary: the output of :func:`summarize`.
        thresholds: the limits (default :class:`Thresholds`).

    Returns:
        a list of sentences, each naming the quantity and its value; empty
        when nothing is wrong.
    """
    t = Thresholds() if thresholds is None else thresholds
    out: list[str] = []
    num_chains = int(summary.get("num_chains", 1))
    min_ess = t.min_ess_per_chain * num_chains
    for key, label in (("predictions", "predictions"), ("log_posterior", "log posterior")):
        block = summary.get(key)
        if not block:
            continue
        max_rhat = block.get("max_rhat", math.nan)
        if np.isfinite(max_rhat) and max_rhat > t.max_rhat:
            where = f" (point {block['argmax_rhat']})" if key == "predictions" else ""
            out.append(f"R-hat of the {label} is {max_rhat:.3f}{where}, above {t.max_rhat}: the chains disagree.")
        for kind in ("bulk", "tail"):
            ess = block.get(f"min_ess_{kind}", math.nan)
            if np.isfinite(ess) and ess < min_ess:
                out.append(
                    f"{kind.capitalize()} ESS of the {label} is {ess:.0f}, below {min_ess:.0f} "
                    f"({t.min_ess_per_chain:.0f} per chain): run longer or thin less."
                )
    sampler = summary.get("sampler") or {}
    ndiv = sampler.get("num_divergent")
    if ndiv is not None and ndiv > 0 and sampler["divergent_fraction"] > t.max_divergent_fraction:
        out.append(
            f"{ndiv} divergent transitions ({100 * sampler['divergent_fraction']:.2f}% of draws): "
            "the posterior has regions the step size cannot resolve; raise target_accept or reparameterize."
        )
    sat = sampler.get("tree_depth_saturation_fraction")
    if sat is not None and sat > t.max_tree_depth_fraction:
        depth = sampler.get("max_tree_depth")
        out.append(
            f"{100 * sat:.2f}% of draws hit the maximum tree depth{'' if depth is None else f' {depth}'}: "
            "trajectories were cut short; raise max_tree_depth or improve the mass matrix."
        )
    for i, value in enumerate(sampler.get("ebfmi", [])):
        if np.isfinite(value) and value < t.min_ebfmi:
            out.append(f"E-BFMI of chain {i} is {value:.3f}, below {t.min_ebfmi}: energy exploration is poor.")
    for i, value in enumerate(sampler.get("mean_acceptance", [])):
        if value <= t.min_acceptance:
            out.append(f"Chain {i} is stuck: its mean acceptance rate is {value:.3g}.")
    return out


# --------------------------------------------------------------------------- ArviZ / netCDF

_SAMPLE_STATS = {
    "acceptance_rate": "acceptance_rate",
    "step_size": "step_size",
    "num_integration_steps": "n_steps",
    "tree_depth": "tree_depth",
    "is_divergent": "diverging",
    "energy": "energy",
    "logdensity": "lp",
}


def to_inference_data(
    draws: Any = None,
    info: Any = None,
    predictions: Any = None,
    log_posterior: Any = None,
) -> az.InferenceData:
    """Posterior draws, predictions and sampler info as an :class:`arviz.InferenceData`.

    Args:
        draws: a :class:`~sigmabnn.draws.PosteriorDraws` (``positions``
            ``[C, S, d]`` become posterior variable ``position`` with dim
            ``param``; hyperparameter fields become variables of their own
            names, leaves of another hyperparameter pytree ``hyper_<i>``),
            or ``None``.
        info: sampler info with ``[C, S]`` fields (``SampleInfo``); mapped to
            ArviZ's names in ``sample_stats`` (``is_divergent`` ->
            ``diverging``, ``logdensity`` -> ``lp``, ``num_integration_steps``
            -> ``n_steps``; the others keep their names).
        predictions: ``[C, S, n_points]`` predictions, posterior variable ``f``
            with dim ``point``.
        log_posterior: ``[C, S]``, posterior variable ``log_posterior``.

    Returns:
        the InferenceData (numpy float64 / bool / int arrays).
    """
    posterior: dict[str, np.ndarray] = {}
    dims: dict[str, list[str]] = {}
    if draws is not None:
        positions = np.asarray(draws.positions)
        if positions.ndim != 3:
            raise ValueError(f"draws.positions must have shape [chain, draw, d], got shape {positions.shape}")
        posterior["position"] = positions
        dims["position"] = ["param"]
        hyper = getattr(draws, "hyper", None)
        if hyper is not None:
            if hasattr(hyper, "_asdict"):
                fields = hyper._asdict()
            else:  # any other pytree: its leaves, numbered
                import jax

                fields = {f"hyper_{i}": leaf for i, leaf in enumerate(jax.tree_util.tree_leaves(hyper))}
            for name, value in fields.items():
                if value is None:
                    continue
                value = np.asarray(value)
                posterior[name] = value
                if value.ndim > 2:
                    dims[name] = [f"{name}_dim_{i}" for i in range(value.ndim - 2)]
    if predictions is not None:
        pred = np.asarray(predictions)
        if pred.ndim != 3:
            raise ValueError(f"predictions must have shape [chain, draw, n_points], got shape {pred.shape}")
        posterior["f"] = pred
        dims["f"] = ["point"]
    if log_posterior is not None:
        lp = np.asarray(log_posterior)
        if lp.ndim != 2:
            raise ValueError(f"log_posterior must have shape [chain, draw], got shape {lp.shape}")
        posterior["log_posterior"] = lp
    sample_stats: dict[str, np.ndarray] = {}
    if info is not None:
        for field, name in _SAMPLE_STATS.items():
            value = _field(info, field)
            if value is not None:
                sample_stats[name] = value
    shapes = {v.shape[:2] for v in (*posterior.values(), *sample_stats.values())}
    if len(shapes) > 1:
        raise ValueError(f"inputs disagree on [chain, draw]: {sorted(shapes)}")
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", UserWarning)  # "more chains than draws" for tiny inputs
        return az.from_dict(
            posterior=posterior or None,
            sample_stats=sample_stats or None,
            dims=dims or None,
        )


def to_netcdf(idata: az.InferenceData, path: str | os.PathLike[str]) -> str:
    """Write ``idata`` to a netCDF-4 file atomically (temporary file, then :func:`os.replace`).

    Uses ArviZ's writer with the ``h5netcdf`` engine. A failure leaves no
    partial file at ``path`` (and removes the temporary file).

    Returns:
        ``path`` as a string.
    """
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise ValueError(f"cannot write {target}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".nc", dir=directory)
    os.close(fd)
    try:
        idata.to_netcdf(tmp, engine="h5netcdf")
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return target


# --------------------------------------------------------------------------- a fitted model

#: Function-space check points when no data are given (standard-normal inputs in standardised units).
DEFAULT_NUM_POINTS = 20
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


def _network_means(fitted: Any, z: np.ndarray) -> np.ndarray:
    """Model-space means ``[C, S, k]`` (first target) of every draw at standardised inputs ``z`` ``[k, p]``."""
    import jax
    import jax.numpy as jnp

    bnn, draws = fitted.bnn, fitted.draws
    c, s = draws.num_chains, draws.num_draws
    pos = jnp.asarray(np.asarray(draws.positions).reshape(c * s, -1), bnn.jdtype)
    zz = jnp.asarray(z, bnn.jdtype)

    def one(p):
        return bnn.likelihood.mean(bnn.apply(bnn.unflatten(p), zz))[:, 0]

    f = jax.jit(lambda ps: jax.lax.map(one, ps, batch_size=64))(pos)
    return np.asarray(f, dtype=np.float64).reshape(c, s, -1)


def _draw_log_posterior(fitted: Any, z: np.ndarray, y_model: np.ndarray) -> np.ndarray:
    """Log posterior ``[C, S]`` of every draw (with its own hyperparameters) on standardised data."""
    import jax
    import jax.numpy as jnp

    from sigmabnn.model.posterior import Data

    bnn, draws = fitted.bnn, fitted.draws
    c, s = draws.num_chains, draws.num_draws
    t = c * s
    pos = jnp.asarray(np.asarray(draws.positions).reshape(t, -1), bnn.jdtype)
    hyper = jax.tree_util.tree_map(
        lambda a: jnp.asarray(np.asarray(a).reshape((t,) + np.shape(a)[2:]), bnn.jdtype), draws.hyper
    )
    data = Data(jnp.asarray(z, bnn.jdtype), jnp.asarray(y_model, bnn.jdtype))

    def one(args):
        p, h = args
        return bnn.log_posterior(p, h, data)

    lp = jax.jit(lambda ps, hs: jax.lax.map(one, (ps, hs), batch_size=LOG_POSTERIOR_BATCH))(pos, hyper)
    return np.asarray(lp, dtype=np.float64).reshape(c, s)


def stored_summary(report: Mapping[str, Any], num_chains: int, num_draws: int) -> dict[str, Any]:
    """A :func:`summarize`-shaped dict rebuilt from the training report a model file stores.

    ``report`` is the report of :func:`sigmabnn.api.fit` (``fitted.diagnostics``):
    its ``"sampler"`` block holds per-chain acceptance and E-BFMI, the number
    of divergences, the tree-depth saturation fraction and the function-space
    and log-posterior R-hat / bulk ESS measured at the end of training; its
    ``"settings"`` or the model's settings hold ``max_tree_depth``. Missing
    entries are left out, so :func:`warnings` of the result warns on what was
    measured and nothing else.
    """
    sampler = dict(report.get("sampler") or {})
    out: dict[str, Any] = {"num_chains": int(num_chains), "num_draws": int(num_draws)}
    block: dict[str, Any] = {}
    ndiv = sampler.get("divergences")
    if ndiv is not None:
        block["num_divergent"] = int(ndiv)
        block["divergent_fraction"] = float(ndiv) / max(1, num_chains * num_draws)
    sat = sampler.get("tree_depth_saturation")
    depth = sampler.get("max_tree_depth", report.get("max_tree_depth"))
    if sat is not None:
        block["tree_depth_saturation_fraction"] = float(sat)
        block["max_tree_depth"] = depth
    for key, name in (("ebfmi", "ebfmi"), ("acceptance", "mean_acceptance")):
        values = sampler.get(key)
        if values is not None:
            block[name] = [math.nan if v is None else float(v) for v in np.atleast_1d(values).tolist()]
    if block:
        out["sampler"] = block
    for key, name in (("predictions", "predictions"), ("log_posterior", "log_posterior")):
        rhat, ess = sampler.get(f"rhat_{key}"), sampler.get(f"ess_bulk_{key}")
        if rhat is None and ess is None:
            continue
        out[name] = {
            "max_rhat": math.nan if rhat is None else float(rhat),
            "min_ess_bulk": math.nan if ess is None else float(ess),
            "argmax_rhat": -1,
        }
    return out


def report_warnings(report: Mapping[str, Any], thresholds: Thresholds | None = None) -> list[str]:
    """The warnings for a training report (what ``sigmabnn train`` prints at the end).

    The same sentences, from the same :func:`warnings`, that ``sigmabnn
    diagnose`` gives for the stored training diagnostics of the model; empty
    for a variational fit (no chains to diagnose).
    """
    sampler = report.get("sampler") or {}
    model = report.get("model") or {}
    networks = int(model.get("networks") or 0)
    chains = len(sampler.get("acceptance") or []) or 1
    if "acceptance" not in sampler and "divergences" not in sampler:
        return []
    return warnings(stored_summary(report, chains, max(1, networks // chains)), thresholds)


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
    import jax

    from sigmabnn.errors import DataError, InputError
    from sigmabnn.predict import feature_matrix_for

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
    predictions = _network_means(fitted, z)
    summary = summarize(predictions=predictions, log_posterior=log_posterior)
    stored = stored_summary(fitted.diagnostics or {}, c, s)
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
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        return None
    if not isinstance(data, pd.DataFrame) or fitted.target_name not in data.columns:
        return None
    from sigmabnn.errors import DataError

    y = pd.to_numeric(data[fitted.target_name], errors="coerce").to_numpy(np.float64)[:, None]
    bad = ~np.isfinite(y[:, 0]) | (fitted.log_target & ~(y[:, 0] > 0))
    if bad.any():
        raise DataError(
            f"target column {fitted.target_name!r} has {int(bad.sum())} missing, non-finite"
            + (" or non-positive" if fitted.log_target else "")
            + " values; drop those rows or leave the column out"
        )
    return y
