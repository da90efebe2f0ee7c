"""A table in partitions, each transformed on a worker and written as one file of a Parquet data set.

The input is a Parquet data set (a directory of ``.parquet`` files, or one file) or a
CSV file, read by Dask DataFrame in partitions (CSV: byte blocks of ``blocksize``;
Parquet: its row groups, combined up to ``blocksize``). Task ``i`` reads partition
``i``, calls ``transform(frame, i, **kwargs)`` and writes the returned frame to
``part-<i>.parquet``; nothing is collected on the client, so the memory of a worker is
bounded by a partition and its result, whatever the size of the input. The output
directory is built under a hidden temporary name and renamed into place when every
partition is written (:func:`sigmabnn.io.atomic.atomic_directory`): a data set complete,
or not at all. It must be on a file system the workers share.

A compressed CSV (``.csv.gz``) cannot be split and is one partition: convert it to
Parquet (or uncompressed CSV) for bounded memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from sigmabnn.errors import InputError
from sigmabnn.io.atomic import atomic_directory

__all__ = ["DEFAULT_BLOCKSIZE", "ScanResult", "partitions", "scan_to_parquet", "write_parts"]

DEFAULT_BLOCKSIZE = 64 * 2**20
"""Bytes of input per partition (64 MiB)."""
_PARQUET = (".parquet", ".pq")
_CSV = (".csv", ".csv.gz", ".tsv")


class ScanResult(NamedTuple):
    """What :func:`scan_to_parquet` wrote: the data set's directory, its rows and its files (partitions)."""

    path: Path
    rows: int
    partitions: int


def partitions(path: str | os.PathLike[str], blocksize: int = DEFAULT_BLOCKSIZE) -> list[Any]:
    """The partitions of a Parquet data set or CSV file, as ``dask.delayed`` pandas frames (nothing read yet).

    Raises:
        InputError: missing input, an unknown format, a directory without Parquet files.
    """
    import dask.dataframe as dd

    p = Path(path)
    name = p.name.lower()
    if not p.exists():
        raise InputError(f"input not found: {p}")
    if p.is_dir():
        if not any(f.name.lower().endswith(_PARQUET) for f in p.rglob("*") if f.is_file()):
            raise InputError(f"no Parquet files (.parquet) in directory {p}")
        frame = dd.read_parquet(p, blocksize=blocksize)
    elif name.endswith(_PARQUET):
        frame = dd.read_parquet(p, blocksize=blocksize)
    elif name.endswith(_CSV):
        compressed = name.endswith(".gz")
        frame = dd.read_csv(
            p,
            sep="\t" if name.endswith(".tsv") else ",",
            blocksize=None if compressed else blocksize,
            compression="gzip" if compressed else None,
        )
    else:
        raise InputError(f"unknown table format of {p}: use a Parquet data set (directory), .parquet or .csv")
    return list(frame.to_delayed())


def _write_part(frame: Any, index: int, directory: str, transform: Callable[..., Any], kwargs: dict[str, Any]) -> int:
    """Task body: transform partition ``index`` and write it as ``part-<index>.parquet``; returns its rows."""
    result = transform(frame, index, **kwargs)
    result.to_parquet(Path(directory) / f"part-{index:06d}.parquet", index=False)
    return len(result)


def _check_replaceable(out: Path) -> None:
    """Only an earlier scan's output (``part-*.parquet`` files only) is replaced."""
    if not out.exists():
        if not out.parent.is_dir():
            raise InputError(f"directory of the output does not exist: {out.parent}")
        return
    if not out.is_dir():
        raise InputError(f"output {out} exists and is not a directory")
    others = [f.name for f in out.iterdir() if not (f.name.startswith("part-") and f.name.endswith(".parquet"))]
    if others:
        raise InputError(f"refusing to replace {out}: a directory that is not a scan's output (it holds {others[0]})")


def scan_to_parquet(
    client: Any,
    path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    transform: Callable[..., Any],
    *,
    blocksize: int = DEFAULT_BLOCKSIZE,
    **kwargs: Any,
) -> ScanResult:
    """Write ``transform(partition, index, **kwargs)`` of every partition of ``path`` as the Parquet data set ``out``.

    Args:
        client: a ``dask.distributed.Client``.
        path: a Parquet data set (directory or file) or a CSV file.
        out: the output directory (an earlier scan's output is replaced atomically).
        transform: a module-level function ``(pandas frame, partition index, **kwargs) -> pandas frame``.
        blocksize: bytes of input per partition.

    Returns:
        :class:`ScanResult`. Rows keep the input's order: partition ``i`` is ``part-<i>.parquet``.

    Raises:
        InputError: a bad input (see :func:`partitions`), an output directory that is not a scan's;
        whatever a task raised.
    """
    _check_replaceable(Path(out))
    return write_parts(client, partitions(path, blocksize), out, transform, **kwargs)


def write_parts(
    client: Any, items: Sequence[Any], out: str | os.PathLike[str], transform: Callable[..., Any], **kwargs: Any
) -> ScanResult:
    """Write ``transform(items[i], i, **kwargs)`` as ``out/part-<i>.parquet``, one task per item; all or nothing.

    ``items`` are table partitions (``dask.delayed`` frames, read on the worker) or any
    other arguments (e.g. lists of input files).
    """
    import dask

    _check_replaceable(Path(out))
    with atomic_directory(out) as tmp:
        tasks = [
            dask.delayed(_write_part, pure=False)(item, i, str(tmp), transform, kwargs) for i, item in enumerate(items)
        ]
        rows = client.gather(client.compute(tasks))
    return ScanResult(Path(out), int(sum(rows)), len(items))
