"""Posterior draws, predictions and sampler info as ArviZ InferenceData, written to netCDF atomically."""

from __future__ import annotations

import os
import tempfile
import warnings as _warnings
from typing import Any

import jax
import numpy as np

from sigmabnn.evaluate.diagnostics import info_field

with _warnings.catch_warnings():
    _warnings.simplefilter("ignore", FutureWarning)  # ArviZ's refactor notice on import
    import arviz as az

__all__ = ["to_inference_data", "to_netcdf"]

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
            value = info_field(info, field)
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
