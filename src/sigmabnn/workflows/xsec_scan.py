"""Cross sections at many SLHA files on a Dask cluster: file chunks as tasks, written as a Parquet data set.

The files (after expanding directories) are cut into chunks of ``files_per_task``; the
task of chunk ``i`` reads its points, predicts every process with the surrogates loaded
once per worker process (cached by directory, processes and model times) and writes
``part-<i>.parquet`` (:func:`sigmabnn.distributed.scan.write_parts`); with ``write`` it
also appends the ``XSECTION`` blocks to its own SLHA files, each file atomically. The
Parquet data set appears complete or not at all; SLHA files written by finished tasks
stay written when another task fails (a rerun replaces sigmabnn's blocks, so it is safe).
The ``point`` column numbers the files in the order of :func:`sigmabnn.physics.slha.input_files`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from sigmabnn.errors import InputError
from sigmabnn.physics.slha import TABLE_SUFFIXES, XSectionResult, input_files, read_points, write_xsections
from sigmabnn.workflows.surrogates import Surrogate, load_surrogates, predict_xsections, required_inputs

__all__ = ["cached_surrogates", "write_xsection_blocks", "xsec_part", "xsec_scan"]

_SURROGATES: dict[tuple[Any, ...], list[Surrogate]] = {}


def cached_surrogates(directory: str | os.PathLike[str], processes: Sequence[str] | None) -> list[Surrogate]:
    """:func:`~sigmabnn.workflows.surrogates.load_surrogates`, loaded once per process (per directory state)."""
    root = Path(directory).resolve()
    stamps = tuple(sorted((str(p), p.stat().st_mtime_ns) for p in root.glob("**/model.json")))
    key = (str(root), None if processes is None else tuple(processes), stamps)
    if key not in _SURROGATES:
        _SURROGATES.clear()
        _SURROGATES[key] = load_surrogates(root, processes)
    return _SURROGATES[key]


def write_xsection_blocks(frame: pd.DataFrame, levels: Sequence[float], sqrt_s: float) -> int:
    """Append the predictions of ``frame`` (:func:`predict_xsections` rows) to their SLHA files; returns the files."""
    sources = 0
    for source, rows in frame.groupby("source", sort=False):
        results = {
            row["process"]: XSectionResult(
                value=float(row["xsec"]),
                std=float(row["std"]),
                intervals={lv: (float(row[f"lower_{lv:g}"]), float(row[f"upper_{lv:g}"])) for lv in levels},
            )
            for _, row in rows.iterrows()
        }
        write_xsections(source, results, sqrt_s=sqrt_s)
        sources += 1
    return sources


def xsec_part(
    item: tuple[list[str], int],
    index: int,
    *,
    models: str,
    processes: Sequence[str] | None,
    levels: tuple[float, ...],
    write: bool,
    sqrt_s: float,
) -> pd.DataFrame:
    """One task of :func:`xsec_scan`: the predictions at the files of ``item = (files, first point number)``."""
    files, offset = item
    surrogates = cached_surrogates(models, processes)
    points = read_points(files, columns=required_inputs(surrogates))
    frame = predict_xsections(surrogates, points, levels)
    frame["point"] += offset
    if write:
        write_xsection_blocks(frame, levels, sqrt_s)
    return frame


def xsec_scan(
    client: Any,
    models: str | os.PathLike[str],
    paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    processes: Sequence[str] | None = None,
    levels: Sequence[float] = (0.68, 0.95),
    files_per_task: int = 500,
    write: bool = False,
    sqrt_s: float = 13000.0,
) -> Any:
    """Every process's cross section at every SLHA file of ``paths``, on the cluster of ``client``.

    Args:
        client: a ``dask.distributed.Client`` (its workers must see the models, the files and ``out``).
        models: a surrogate directory (``sigmabnn train-all``) or one model.
        paths: SLHA files and directories of them (tables: use ``sigmabnn predict --dask`` per model).
        out: the output Parquet data set (directory; complete or not at all).
        processes: only these processes (default: every model of ``models``).
        levels: central interval probabilities.
        files_per_task: SLHA files per task.
        write: also append ``XSECTION`` blocks to each SLHA file (on the workers).
        sqrt_s: collider energy of the ``XSECTION`` headers (GeV).

    Returns:
        :class:`sigmabnn.distributed.scan.ScanResult` (rows: one per file and process).

    Raises:
        InputError: a table among ``paths``, a bad surrogate directory, missing files, ``files_per_task < 1``.
    """
    from sigmabnn.distributed.scan import write_parts

    if files_per_task < 1:
        raise InputError(f"files_per_task must be >= 1, got {files_per_task}")
    load_surrogates(models, processes)  # a bad directory fails here, once
    files = [str(f) for f in input_files(paths)]
    tables = [f for f in files if f.lower().endswith(TABLE_SUFFIXES)]
    if tables:
        raise InputError(f"a cluster scan reads SLHA files; {tables[0]} is a table (use 'sigmabnn predict --dask')")
    items = [(files[i : i + files_per_task], i) for i in range(0, len(files), files_per_task)]
    return write_parts(
        client,
        items,
        out,
        xsec_part,
        models=str(Path(models).resolve()),
        processes=None if processes is None else list(processes),
        levels=tuple(levels),
        write=write,
        sqrt_s=sqrt_s,
    )
