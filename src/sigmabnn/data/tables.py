"""Reading tables and turning them into training/validation/test arrays.

:func:`read_table` reads CSV (``.csv``, ``.csv.gz``, ``.tsv``, ``.txt``) or
Parquet (``.parquet``, ``.pq``) chosen by the file extension.
:func:`prepare` selects the columns, drops unusable rows (counted and
reported), splits the rows and returns NumPy arrays in a :class:`Prepared`.

Rules of :func:`prepare`:

- **Features.** By default every other numeric column: all columns with a
  numeric (non-boolean) dtype except the target, the split column and the
  noise column, in table order. Non-numeric columns are skipped by the default
  (listed in ``Prepared.skipped_columns``); naming one explicitly is an error.
- **Missing values.** A row with a missing (NaN, empty) or infinite value in
  any selected column is dropped; ``n_dropped`` counts them and
  ``dropped_by_column`` says which columns were at fault.
- **Split.** With ``split_column``, its values assign rows: ``train``,
  ``val`` (or ``valid``/``validation``), ``test`` (case-insensitive; any other
  value is an error). Otherwise a random permutation of the usable rows from
  ``numpy.random.default_rng(seed)`` (a local generator with an explicit
  seed, so the split is reproducible and no global state is touched) is cut
  by ``split_fractions``; a validation part that would hold fewer than
  ``min_val_rows`` rows joins the training part.
- **Log target.** With ``log_target`` every usable target must be > 0.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from sigmabnn.errors import DataError, InputError
from sigmabnn.names import DEFAULT_SPLIT

__all__ = [
    "MIN_TRAIN_ROWS",
    "Prepared",
    "Split",
    "check_unique_columns",
    "feature_matrix",
    "fingerprint",
    "prepare",
    "read_table",
    "read_table_chunks",
]

#: Fewest usable training rows :func:`prepare` accepts.
MIN_TRAIN_ROWS = 2

_CSV_SUFFIXES = {".csv": ",", ".tsv": "\t", ".txt": None}
_PARQUET_SUFFIXES = {".parquet", ".pq"}
_SPLIT_NAMES = {"train": "train", "val": "val", "valid": "val", "validation": "val", "test": "test"}


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def check_unique_columns(columns: Sequence[Any], where: str) -> None:
    """Raise :class:`DataError` naming the first column name that appears more than once in ``columns``.

    A repeated name makes a table ambiguous (which ``a`` is the input?); pandas would silently
    rename the second copy (``a.1``) and train on both.
    """
    seen: set[str] = set()
    for name in columns:
        key = str(name)
        if key in seen:
            raise DataError(f"column {key!r} appears more than once in {where}: rename or drop the copies")
        seen.add(key)


def _table_format(p: Path) -> tuple[str, str | None]:
    """``("parquet", None)`` or ``("csv", separator)`` of an existing file ``p`` by its extension."""
    if not p.exists():
        raise InputError(f"data file not found: {p}")
    if p.is_dir():
        raise InputError(f"data file is a directory: {p}")
    suffixes = [s.lower() for s in p.suffixes]
    compressed = bool(suffixes) and suffixes[-1] in {".gz", ".bz2", ".xz", ".zst"}
    suffix = suffixes[-2] if compressed and len(suffixes) >= 2 else (suffixes[-1] if suffixes else "")
    if suffix in _PARQUET_SUFFIXES and not compressed:
        return "parquet", None
    if suffix in _CSV_SUFFIXES:
        return "csv", _CSV_SUFFIXES[suffix]
    kind = "".join(p.suffixes) or "(no extension)"
    raise InputError(f"unknown table format {kind} of {p}: use .csv, .csv.gz, .tsv or .parquet")


def _check_header(p: Path, names: Sequence[Any], sep: str | None) -> None:
    """The header as written: no repeated name, and not one column whose name holds another separator.

    A ``.csv`` written with semicolons (a common spreadsheet export) reads as one column named
    ``a;b;y``; the error says so instead of a later "column not found".
    """
    check_unique_columns(names, f"the header of {p}")
    if len(names) == 1 and sep is not None:
        other = next((s for s in (";", "\t", "|", ",") if s != sep and s in str(names[0])), None)
        if other is not None:
            raise DataError(
                f"data file {p} reads as one column, {str(names[0])!r}: its header is separated by {other!r}, "
                f"not {sep!r} (.csv files are read comma-separated, .tsv tab-separated)"
            )


def _read_error(p: Path, err: BaseException) -> DataError:
    if isinstance(err, pd.errors.EmptyDataError):
        return DataError(f"data file is empty: {p}")
    if isinstance(err, OSError | ValueError | pd.errors.ParserError | UnicodeDecodeError | EOFError):
        return DataError(f"cannot read {p}: {_one_line(err)}")
    return DataError(f"cannot read {p}: {type(err).__name__}: {_one_line(err)}")  # pyarrow's own error types


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a CSV or Parquet table by its extension (``.csv``, ``.csv.gz``, ``.tsv``, ``.parquet``, ...).

    Raises:
        InputError: the file does not exist, is a directory, or has an unknown extension.
        DataError: the file cannot be parsed, or holds no rows or no columns.
    """
    p = Path(path)
    kind, sep = _table_format(p)
    try:
        if kind == "parquet":
            check_unique_columns(pq.read_schema(p).names, f"the columns of {p}")  # pyarrow's own error is cryptic
            df = pd.read_parquet(p)
        else:
            engine = "python" if sep is None else "c"
            df = pd.read_csv(p, sep=sep, engine=engine, comment=None)
            # pandas renames a repeated header name (a, a -> a, a.1): check the header as written
            header = pd.read_csv(p, sep=sep, engine=engine, comment=None, header=None, nrows=1, dtype=str)
            _check_header(p, header.iloc[0].tolist(), sep)
    except (InputError, DataError):
        raise
    except Exception as err:
        raise _read_error(p, err) from None
    if df.shape[1] == 0:
        raise DataError(f"data file has no columns: {p}")
    if df.shape[0] == 0:
        raise DataError(f"data file has no rows: {p}")
    check_unique_columns(df.columns, f"the header of {p}")
    return df


class Split(NamedTuple):
    """One subset of the rows.

    Attributes:
        x: features ``[n, p]`` float64, original units, in ``feature_names`` order.
        y: target ``[n]`` float64, original units.
        noise_std: known noise std ``[n]`` float64 (target units), or ``None``.
        rows: ``[n]`` int64 positions of these rows in the input table.
    """

    x: np.ndarray
    y: np.ndarray
    noise_std: np.ndarray | None
    rows: np.ndarray

    @property
    def n(self) -> int:
        return int(self.y.shape[0])


class Prepared(NamedTuple):
    """A table turned into arrays (see the module docstring for the rules).

    Attributes:
        train, val, test: the three :class:`Split` s (``val``/``test`` may have 0 rows).
        feature_names: input columns, in order.
        target_name: the target column.
        noise_column: the known-noise column, or ``None``.
        log_target: whether the target will be modelled as ``log10``.
        n_rows: rows in the input table.
        n_dropped: rows dropped for a missing or non-finite value.
        dropped_by_column: column -> number of rows with a missing/non-finite value there.
        skipped_columns: non-numeric columns left out of the default features.
        split_source: ``"column:<name>"`` or ``"random:seed=<seed>"``.
        fingerprint: ``"sha256:<hex>"`` of the training arrays and names (see :func:`fingerprint`).
    """

    train: Split
    val: Split
    test: Split
    feature_names: tuple[str, ...]
    target_name: str
    noise_column: str | None
    log_target: bool
    n_rows: int
    n_dropped: int
    dropped_by_column: dict[str, int]
    skipped_columns: tuple[str, ...]
    split_source: str
    fingerprint: str


def fingerprint(x: np.ndarray, y: np.ndarray, feature_names: Sequence[str], target_name: str) -> str:
    """``"sha256:<hex>"`` over the names, shapes and float64 little-endian bytes of ``x`` and ``y``."""
    h = hashlib.sha256()
    h.update(("\x1f".join(feature_names) + "\x1e" + target_name).encode())
    for a in (x, y):
        a = np.ascontiguousarray(a, dtype="<f8")
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return "sha256:" + h.hexdigest()


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _check_column(df: pd.DataFrame, name: Any, role: str) -> str:
    if not isinstance(name, str):
        raise DataError(f"{role} column must be given by name, got {name!r}")
    if name not in df.columns:
        close = difflib.get_close_matches(name, [str(c) for c in df.columns], n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise DataError(f"{role} column {name!r} not found in the table{hint}")
    return name


def _first_non_number(s: pd.Series) -> tuple[int, Any] | None:
    """``(data row, value)`` of the first present value of ``s`` that does not read as a number (row 1: the
    table's first row), else ``None``. A CSV column with one such value holds every value as a string, so the
    first string is not the culprit."""
    parsed = pd.to_numeric(s, errors="coerce")
    bad = np.flatnonzero(parsed.isna().to_numpy() & s.notna().to_numpy())
    return (int(bad[0]) + 1, s.iloc[bad[0]]) if bad.size else None


def _numeric_column(df: pd.DataFrame, name: str, role: str) -> np.ndarray:
    s = df[name]
    if not _is_numeric(s):
        found = _first_non_number(s) if not pd.api.types.is_bool_dtype(s) else None
        what = f" (e.g. {found[1]!r} in data row {found[0]})" if found is not None else f" (dtype {s.dtype})"
        raise DataError(f"{role} column {name!r} is not numeric{what}")
    return s.to_numpy(dtype=np.float64, na_value=np.nan)


def feature_matrix(df: pd.DataFrame, feature_names: Sequence[str], role: str = "feature") -> np.ndarray:
    """``[n, p]`` float64 matrix of the named numeric columns (missing values stay NaN).

    Raises :class:`DataError` for an absent or non-numeric column (named with its ``role``, e.g.
    ``"target"``), or a repeated column name.
    """
    check_unique_columns(df.columns, "the table")
    cols = [_numeric_column(df, _check_column(df, name, role), role) for name in feature_names]
    if not cols:
        return np.zeros((len(df), 0), np.float64)
    return np.stack(cols, axis=1)


def _split_by_column(df: pd.DataFrame, split_column: str, keep: np.ndarray) -> dict[str, np.ndarray]:
    values = df[split_column].astype("string").str.strip().str.lower()
    mapped = values.map(lambda v: _SPLIT_NAMES.get(v) if isinstance(v, str) else None)
    bad = keep & mapped.isna().to_numpy()
    if bad.any():
        first = df[split_column].to_numpy()[np.flatnonzero(bad)[0]]
        raise DataError(
            f"split column {split_column!r} has {int(bad.sum())} rows with a value other than "
            f"train/val/test (e.g. {first!r})"
        )
    labels = mapped.to_numpy(dtype=object)
    return {name: np.flatnonzero(keep & (labels == name)) for name in ("train", "val", "test")}


def _split_random(
    keep: np.ndarray, fractions: Sequence[float], seed: int, min_val_rows: int = 0
) -> dict[str, np.ndarray]:
    f = np.asarray(fractions, dtype=np.float64)
    if f.shape == (2,):
        f = np.append(f, 0.0)
    if f.shape != (3,) or np.any(f < 0) or not np.isfinite(f).all() or f[0] <= 0 or abs(f.sum() - 1.0) > 1e-6:
        raise InputError(f"split fractions must be three non-negative numbers adding up to 1, got {tuple(fractions)}")
    idx = np.flatnonzero(keep)
    n = idx.size
    rng = np.random.default_rng(seed)
    perm = idx[rng.permutation(n)]
    n_val = int(round(f[1] * n))
    if n_val < min_val_rows:
        n_val = 0
    n_test = int(round(f[2] * n))
    n_train = n - n_val - n_test
    return {
        "train": np.sort(perm[:n_train]),
        "val": np.sort(perm[n_train : n_train + n_val]),
        "test": np.sort(perm[n_train + n_val :]),
    }


def prepare(
    df: pd.DataFrame,
    target: str,
    features: Sequence[str] | None = None,
    *,
    split_column: str | None = None,
    split_fractions: Sequence[float] = DEFAULT_SPLIT,
    seed: int = 0,
    log_target: bool = False,
    noise_column: str | None = None,
    min_val_rows: int = 0,
) -> Prepared:
    """Select, clean and split a table (rules in the module docstring).

    Args:
        df: the table.
        target: the column to predict.
        features: input columns; default every other numeric column.
        split_column: column with train/val/test labels; else a random split.
        split_fractions: train, validation, test fractions of the random split.
        seed: seed of the random split.
        log_target: the target will be modelled as ``log10`` (all usable targets must be > 0).
        noise_column: column with a known per-row noise std of the target (original units, > 0).
        min_val_rows: a random split's validation part with fewer rows than this joins the training
            part (0: never; a split column is followed as it is).

    Raises:
        DataError: unknown or non-numeric column (named), too few usable rows,
            non-positive targets with ``log_target``, a bad split label.
    """
    if not isinstance(df, pd.DataFrame):
        raise InputError(f"expected a pandas DataFrame, got {type(df).__name__}")
    check_unique_columns(df.columns, "the table")
    target = _check_column(df, target, "target")
    special = {target}
    if split_column is not None:
        special.add(_check_column(df, split_column, "split"))
    if noise_column is not None:
        special.add(_check_column(df, noise_column, "noise"))
    skipped: tuple[str, ...] = ()
    if features is None:
        candidates = [str(c) for c in df.columns if c not in special]
        feature_names = tuple(c for c in candidates if _is_numeric(df[c]))
        skipped = tuple(c for c in candidates if not _is_numeric(df[c]))
        if not feature_names:
            raise DataError(f"no numeric feature columns besides the target {target!r}")
    else:
        if isinstance(features, str):
            features = [features]
        feature_names = tuple(_check_column(df, f, "feature") for f in features)
        if not feature_names:
            raise DataError("the list of feature columns is empty")
        dup = sorted({f for f in feature_names if feature_names.count(f) > 1})
        if dup:
            raise DataError(f"feature column {dup[0]!r} is listed twice")
        for f in feature_names:
            if f in special:
                role = "target" if f == target else ("split" if f == split_column else "noise")
                raise DataError(f"column {f!r} is the {role} column and cannot also be a feature")

    x = feature_matrix(df, feature_names)
    y = _numeric_column(df, target, "target")
    noise = _numeric_column(df, noise_column, "noise") if noise_column is not None else None

    dropped_by_column: dict[str, int] = {}
    keep = np.ones(len(df), dtype=bool)
    named = list(zip(feature_names, x.T)) + [(target, y)] + ([(noise_column, noise)] if noise is not None else [])
    for name, col in named:
        bad = ~np.isfinite(col)
        if bad.any():
            dropped_by_column[name] = int(bad.sum())
            keep &= ~bad
    if noise is not None:
        nonpos = keep & ~(noise > 0)
        if nonpos.any():
            raise DataError(f"noise column {noise_column!r} has {int(nonpos.sum())} values <= 0 (must be a std > 0)")
    n_usable = int(keep.sum())
    if log_target:
        nonpos = keep & ~(y > 0)
        if nonpos.any():
            raise DataError(
                f"log target needs positive values, but {int(nonpos.sum())} of {n_usable} usable rows of "
                f"{target!r} are <= 0"
            )

    if split_column is not None:
        parts = _split_by_column(df, split_column, keep)
        source = f"column:{split_column}"
    else:
        parts = _split_random(keep, split_fractions, seed, min_val_rows)
        source = f"random:seed={seed}"
    n_train = parts["train"].size
    if n_train < MIN_TRAIN_ROWS:
        lost = f" ({len(df) - n_usable} of {len(df)} rows dropped for missing values)" if n_usable < len(df) else ""
        rows = "1 usable training row" if n_train == 1 else f"{n_train} usable training rows"
        raise DataError(f"only {rows}; at least {MIN_TRAIN_ROWS} are needed{lost}")

    def subset(rows: np.ndarray) -> Split:
        return Split(
            x=np.ascontiguousarray(x[rows]),
            y=np.ascontiguousarray(y[rows]),
            noise_std=None if noise is None else np.ascontiguousarray(noise[rows]),
            rows=rows.astype(np.int64),
        )

    train = subset(parts["train"])
    return Prepared(
        train=train,
        val=subset(parts["val"]),
        test=subset(parts["test"]),
        feature_names=feature_names,
        target_name=target,
        noise_column=noise_column,
        log_target=bool(log_target),
        n_rows=len(df),
        n_dropped=len(df) - n_usable,
        dropped_by_column=dropped_by_column,
        skipped_columns=skipped,
        split_source=source,
        fingerprint=fingerprint(train.x, train.y, feature_names, target),
    )


def read_table_chunks(path: str | os.PathLike[str], rows: int = 100_000) -> Iterator[pd.DataFrame]:
    """The rows of a CSV or Parquet table (as :func:`read_table` reads it) in chunks of at most
    ``rows`` rows, so that a table larger than memory can be streamed; each chunk keeps its row
    positions in the file as its index (0-based). Errors as :func:`read_table`, raised when reached.
    """
    p = Path(path)
    kind, sep = _table_format(p)
    if rows < 1:
        raise InputError(f"chunk rows must be >= 1, got {rows}")
    start, seen = 0, False
    try:
        if kind == "parquet":
            check_unique_columns(pq.read_schema(p).names, f"the columns of {p}")
            chunks = (b.to_pandas() for b in pq.ParquetFile(p).iter_batches(batch_size=rows))
        else:
            engine = "python" if sep is None else "c"
            header = pd.read_csv(p, sep=sep, engine=engine, comment=None, header=None, nrows=1, dtype=str)
            _check_header(p, header.iloc[0].tolist(), sep)
            chunks = pd.read_csv(p, sep=sep, engine=engine, comment=None, chunksize=rows)
        for chunk in chunks:
            chunk.index = pd.RangeIndex(start, start + len(chunk))
            start += len(chunk)
            seen = seen or chunk.shape[1] > 0
            yield chunk
    except (InputError, DataError):
        raise
    except Exception as err:
        raise _read_error(p, err) from None
    if start == 0 or not seen:
        raise DataError(f"data file has no rows: {p}")
