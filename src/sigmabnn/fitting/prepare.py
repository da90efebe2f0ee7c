"""Prepare the data of a fit: table -> derived features -> selected, cleaned and split rows -> transforms -> model data.

1. read the table (:func:`sigmabnn.data.tables.read_table`) unless a DataFrame is given;
   add the derived features (:mod:`sigmabnn.data.features`), once: every later stage uses the
   feature matrices made here;
2. select, clean and split the rows (:func:`sigmabnn.data.tables.prepare`);
3. fit the transforms on the training rows: inputs standardised, the target optionally
   ``log10``-ed, less its linear baseline, then standardised;
4. the model data (:class:`~sigmabnn.model.posterior.Data`) of the training and validation rows
   in the run's dtype; a known noise std in the standardised target's units.

A classifier (the ``categorical`` likelihood) replaces its label column by the codes of its
:class:`~sigmabnn.classes.ClassLabels` (the sorted labels of every usable row) before step 2, so
that every split shares one label set; its target transform is the identity.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from sigmabnn.classes import ClassLabels
from sigmabnn.data.features import add_derived, is_helper, parse_derived
from sigmabnn.data.tables import Prepared, Split, prepare, read_table
from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.errors import InputError
from sigmabnn.fitting.spec import FitSpec
from sigmabnn.model.posterior import Data

__all__ = ["PreparedData", "prepare_data", "read_data"]


class PreparedData(NamedTuple):
    """The data of a fit, ready for training.

    Attributes:
        table: the selected, cleaned and split rows (:class:`~sigmabnn.data.tables.Prepared`;
            features in original units, derived ones included).
        source: the table's path, or ``None`` for a DataFrame.
        derived: ``(name, expression)`` pairs of the derived features, in order of evaluation.
        x_transform: standardisation of the inputs (fitted on the training rows).
        y_transform: the target's transform (log10, baseline, standardisation).
        train_data: model-space training data.
        val_data: model-space validation data, or ``None`` without validation rows.
        classes: a classifier's label set (its targets are then the labels' codes ``[n]`` int32,
            the target transform the identity), ``None`` for a regression.
    """

    table: Prepared
    source: str | None
    derived: tuple[tuple[str, str], ...]
    x_transform: Standardizer
    y_transform: TargetTransform
    train_data: Data
    val_data: Data | None
    classes: ClassLabels | None = None

    @property
    def train(self) -> Split:
        return self.table.train

    @property
    def val(self) -> Split:
        return self.table.val

    @property
    def feature_names(self) -> tuple[str, ...]:
        return self.table.feature_names


def read_data(data: Any) -> tuple[pd.DataFrame, str | None]:
    """The table of ``data`` (a path or a DataFrame) and its path (``None`` for a DataFrame)."""
    if isinstance(data, pd.DataFrame):
        return data, None
    if isinstance(data, str | os.PathLike):
        return read_table(data), os.fspath(data)
    raise InputError(f"data must be a path or a pandas DataFrame, got {type(data).__name__}")


def _derive(df: pd.DataFrame, derive: tuple[Any, ...], features: tuple[str, ...] | None) -> tuple:
    """``df`` with the derived columns, the features (derived inputs appended) and the ``(name, expression)`` pairs."""
    if not derive:
        return df, features, ()
    parsed = parse_derived(derive, df.columns)
    df = add_derived(df, parsed)
    derived = tuple((f.name, f.expression) for f in parsed)
    helpers = [n for n, _ in derived if is_helper(n) and (features is None or n not in features)]
    df = df.drop(columns=helpers)  # helpers feed later expressions only, never the network
    if features is not None:
        features = (*features, *(n for n, _ in derived if n not in features and n not in helpers))
    return df, features, derived


def _target_transform(table: Prepared, spec: FitSpec) -> TargetTransform:
    names = list(table.feature_names)
    baseline = spec.data.baseline
    unknown = [b for b in baseline if b not in names]
    if unknown:
        raise InputError(f"baseline feature {unknown[0]!r} is not an input (inputs: {', '.join(names)})")
    train = table.train
    try:
        return TargetTransform.fit(
            train.y, log10=spec.data.log_target, baseline_x=train.x[:, [names.index(b) for b in baseline]],
            baseline_features=baseline,
        )  # fmt: skip
    except ValueError as err:
        raise InputError(str(err)) from None


def _encode_labels(df: pd.DataFrame, target: str) -> tuple[pd.DataFrame, ClassLabels]:
    """``df`` with the label column ``target`` replaced by its codes (float64, NaN where missing) and the label set."""
    if target not in df.columns:
        return df, None  # prepare() names the missing column
    classes = ClassLabels.fit(df[target], what=f"target {target!r}")
    labels = df[target]
    codes = np.full(len(df), np.nan)
    present = labels.notna().to_numpy()
    codes[present] = classes.encode(labels[present], what=f"target {target!r}")
    return df.assign(**{target: codes}), classes


def _model_data(split: Split, table: Prepared, x_transform: Standardizer, y_transform: TargetTransform, dtype: str,
                classifier: bool = False):  # fmt: skip
    """The model-space :class:`Data` of ``split`` (``None`` when it has no rows); a classifier's codes ``[n]`` int32."""
    if split.n == 0:
        return None
    if classifier:
        return Data(x=x_transform.forward(split.x, dtype=dtype), y=split.y.astype(np.int32))
    noise = None
    if split.noise_std is not None:
        log_std = split.noise_std / (split.y * np.log(10.0)) if table.log_target else split.noise_std
        noise = log_std / y_transform.scale[0]
    offset = y_transform.offset(split.x, list(table.feature_names))
    return Data(
        x=x_transform.forward(split.x, dtype=dtype),
        y=y_transform.forward(split.y, dtype=dtype, offset=offset)[:, None],
        noise_std=None if noise is None else noise.astype(dtype),
    )


def prepare_data(data: Any, spec: FitSpec) -> PreparedData:
    """The data of a fit (module docstring).

    Raises:
        InputError / DataError: unreadable data, missing columns, no validation rows to
            recalibrate on, a baseline feature that is not an input (one-line message).
    """
    d = spec.data
    df, source = read_data(data)
    df, features, derived = _derive(df, d.derive, d.features)
    classes = None
    if spec.is_classifier:
        df, classes = _encode_labels(df, d.target)
    table = prepare(
        df,
        d.target,
        None if features is None else list(features),
        split_column=d.split_column,
        split_fractions=d.split,
        seed=spec.seed,
        log_target=d.log_target,
        noise_column=d.noise_column,
        min_val_rows=d.min_val_rows,
    )
    if spec.recalibrate and spec.recalibrate != "loo" and not spec.recalibrate_auto and table.val.n == 0:
        raise InputError("recalibration needs validation rows; this split has none (give a split with a val part)")
    x_transform = Standardizer.fit(table.train.x)
    y_transform = TargetTransform.identity() if classes is not None else _target_transform(table, spec)
    dtype, classifier = spec.model.dtype, classes is not None
    if classifier and len(np.unique(table.train.y)) < 2:
        raise InputError("the training rows of a categorical target hold a single class")
    if not classifier and np.ptp(table.train.y) == 0:  # the sampler would chase a noise std of 0 (R-hat >> 1)
        raise InputError(f"target column {d.target!r} is constant on the training rows: there is nothing to fit")
    return PreparedData(
        table=table,
        source=source,
        derived=derived,
        x_transform=x_transform,
        y_transform=y_transform,
        train_data=_model_data(table.train, table, x_transform, y_transform, dtype, classifier),
        val_data=_model_data(table.val, table, x_transform, y_transform, dtype, classifier),
        classes=classes,
    )
