"""Prediction scans on a Dask cluster: a model's predictions for every row of a large table, as Parquet.

Each partition of the input (:mod:`sigmabnn.distributed.scan`) is predicted on a
worker; the model is loaded once per worker process (cached by path, modification
time and dtype), not once per partition. The noise samples of the intervals of
partition ``i`` use the key ``fold_in(key(seed), i)``: a scan is reproducible for a
given partitioning, and its means and standard deviations equal those of one
:func:`sigmabnn.predict.predict` over the whole table (they use no random numbers).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import pandas as pd

from sigmabnn.io.model_file import HEADER_NAME, load_model
from sigmabnn.predict import predict

__all__ = ["cached_model", "predict_partition", "predict_scan"]

_MODELS: dict[tuple[str, int, str | None], Any] = {}


def cached_model(path: str | os.PathLike[str], dtype: str | None = None) -> Any:
    """The :class:`~sigmabnn.fitted.FittedModel` at ``path`` (in ``dtype`` if given), loaded once per process."""
    p = Path(path).resolve()
    key = (str(p), (p / HEADER_NAME).stat().st_mtime_ns, dtype)
    if key not in _MODELS:
        fitted = load_model(p)
        _MODELS.clear()  # one model per worker at a time: a scan of another model replaces it
        _MODELS[key] = fitted if dtype is None else fitted.with_dtype(dtype)
    return _MODELS[key]


def predict_partition(
    frame: pd.DataFrame,
    index: int,
    *,
    model: str,
    columns: Callable[[pd.DataFrame, Any], pd.DataFrame],
    levels: tuple[float, ...],
    seed: int,
    calibrated: bool = True,
    dtype: str | None = None,
) -> pd.DataFrame:
    """The output rows of one partition: ``columns(frame, prediction)`` (a task of :func:`predict_scan`)."""
    fitted = cached_model(model, dtype)
    key = jax.random.fold_in(jax.random.key(seed), index)
    pred = predict(fitted, frame, levels=levels, rng_key=key, calibrated=calibrated)
    return columns(frame.reset_index(drop=True), pred)


def predict_scan(
    client: Any,
    model: str | os.PathLike[str],
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    columns: Callable[[pd.DataFrame, Any], pd.DataFrame],
    levels: tuple[float, ...] = (0.68, 0.95),
    seed: int = 0,
    calibrated: bool = True,
    dtype: str | None = None,
    blocksize: int | None = None,
) -> Any:
    """Predict every row of ``data`` with ``model`` on the cluster of ``client``; write a Parquet data set ``out``.

    Args:
        client: a ``dask.distributed.Client`` (its workers must see ``model``, ``data`` and ``out``).
        model: a model directory.
        data: a Parquet data set (directory of files), a ``.parquet`` or a ``.csv`` file.
        out: the output directory: ``part-<i>.parquet`` per input partition, in input order;
            complete or not at all.
        columns: ``(input rows, Prediction) -> output frame`` (module-level: workers import it).
        levels, seed, calibrated: as :func:`sigmabnn.predict.predict` (``seed``: see the module docstring).
        dtype: evaluate the networks in this dtype (``"float32"``) instead of the model's.
        blocksize: bytes of input per partition (default 64 MiB).

    Returns:
        :class:`sigmabnn.distributed.scan.ScanResult` (path, rows, partitions).

    Raises:
        InputError / ModelFileError: a bad model (checked on the client first) or input.
    """
    from sigmabnn.distributed.scan import DEFAULT_BLOCKSIZE, scan_to_parquet

    load_model(model)  # a bad model fails here, once, with its own message
    return scan_to_parquet(
        client,
        data,
        out,
        predict_partition,
        blocksize=blocksize or DEFAULT_BLOCKSIZE,
        model=str(Path(model).resolve()),
        columns=columns,
        levels=tuple(levels),
        seed=seed,
        calibrated=calibrated,
        dtype=dtype,
    )
