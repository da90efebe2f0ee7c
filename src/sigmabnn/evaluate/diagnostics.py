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

Everything returns plain data (floats, lists, numpy arrays). Figures live in
:mod:`sigmabnn.evaluate.figures`, ArviZ InferenceData and netCDF in
:mod:`sigmabnn.evaluate.inference_data`, the diagnosis of a fitted model (and
of the report stored in its file) in :mod:`sigmabnn.evaluate.diagnose`.
"""

from __future__ import annotations

import math
import warnings as _warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

with _warnings.catch_warnings():
    _warnings.simplefilter("ignore", FutureWarning)  # ArviZ's refactor notice on import
    import arviz as az
    import xarray as xr

__all__ = [
    "Thresholds",
    "autocorrelation",
    "chain_statistics",
    "ebfmi",
    "info_field",
    "predictive_diagnostics",
    "sampler_diagnostics",
    "suggest_thin",
    "summarize",
    "warnings",
    "worst_point",
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


def info_field(info: Any, name: str) -> np.ndarray | None:
    """Field ``name`` of sampler info (a NamedTuple or a mapping) as an array, or ``None`` where absent."""
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
    div = info_field(info, "is_divergent")
    if div is not None:
        div = np.asarray(div, dtype=bool)
        if div.ndim != 2:
            raise ValueError(f"is_divergent must have shape [chain, draw], got shape {div.shape}")
        out["num_chains"] = int(div.shape[0])
        out["num_divergent"] = int(div.sum())
        out["divergent_fraction"] = float(div.mean())
        out["divergent_per_chain"] = [int(v) for v in div.sum(axis=1)]
    depth = info_field(info, "tree_depth") if kernel == "nuts" else None
    if depth is not None:
        depth = np.asarray(depth)
        out["mean_tree_depth"] = float(depth.mean())
        if max_tree_depth is not None:
            out["max_tree_depth"] = int(max_tree_depth)
            out["tree_depth_saturation_fraction"] = float(np.mean(depth >= max_tree_depth))
    energy = info_field(info, "energy") if kernel != "mh" else None
    if energy is not None:
        out["ebfmi"] = [float(v) for v in ebfmi(energy)]
        out["num_chains"] = int(np.shape(energy)[0])
    acc = info_field(info, "acceptance_rate")
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


def worst_point(block: Mapping[str, Any]) -> str:
    """`` (point i)``, the input point of the largest R-hat in a :func:`predictive_diagnostics` block, or
    ``""`` where it is not known (``argmax_rhat`` -1: no finite R-hat, or a summary rebuilt from a model
    file's stored report, which keeps only the worst value)."""
    index = int(block.get("argmax_rhat", -1))
    return f" (point {index})" if index >= 0 else ""


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
            where = worst_point(block) if key == "predictions" else ""
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
