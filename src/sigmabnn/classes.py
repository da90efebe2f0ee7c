"""The label set of a classifier: which classes a categorical model knows, in a stable order.

A categorical fit learns from a label column of integers or strings. :meth:`ClassLabels.fit`
records the distinct labels of the table's usable rows, sorted (integers numerically, strings
lexicographically), so that class ``k`` of the network's ``K`` logits is ``labels[k]`` whatever
the order the rows came in; :meth:`ClassLabels.encode` maps labels to those codes at training,
prediction and evaluation time and refuses a label the model never saw.

A label column is accepted when it holds integers or strings (an object or string column whose
values are all strings, or an integer column); a float column is accepted only when every value
is a whole number (a column of integers with a missing value reads as float). Anything else,
and a column with a single class, is a one-line :class:`~sigmabnn.errors.DataError`.

``temperature``: the temperature ``T > 0`` of the class probabilities at prediction (temperature
scaling, Guo et al. 2017, "On calibration of modern neural networks"), fitted on the validation
rows when it lowers their negative log-likelihood (:mod:`sigmabnn.temperature`); 1 when not.
``temperature_map``: where it applies. ``"pooled"`` (what a fit stores): to the log of the posterior
predictive, ``softmax(log(mean_t p_t) / T)`` ("pool, then calibrate", Rahaman & Thiery 2021);
``"networks"``: to every network's logits before the mean, ``mean_t softmax(f_t / T)``, the map of
model files written before the field existed, which keep it (a file without the field reads as
``"networks"``). The two agree for one network; ``benchmarks/results/temperature_seeds.md`` chose
``"pooled"`` on fresh digits splits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sigmabnn.errors import DataError

__all__ = ["TEMPERATURE_MAPS", "ClassLabels", "label_values"]

#: Where a classifier's temperature applies (module docstring); the first is what a fit stores.
TEMPERATURE_MAPS = ("pooled", "networks")


def label_values(values: Any, what: str = "label") -> np.ndarray:
    """Labels as a 1-d array of Python ints or strs (object dtype); missing values stay ``None``.

    Raises:
        DataError: a float that is not a whole number, a boolean, or a mix of integers and strings.
    """
    s = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object).reshape(-1))
    if pd.api.types.is_bool_dtype(s):
        raise DataError(f"{what} column holds booleans; a categorical target needs integer or string labels")
    missing = s.isna().to_numpy()
    out = np.empty(len(s), dtype=object)
    kinds = set()
    for i, v in enumerate(s.to_numpy(dtype=object)):
        if missing[i]:
            out[i] = None
        elif isinstance(v, str):
            out[i], _ = v, kinds.add(str)
        elif isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_):
            out[i], _ = int(v), kinds.add(int)
        elif isinstance(v, float | np.floating) and math.isfinite(v) and float(v).is_integer():
            out[i], _ = int(v), kinds.add(int)
        else:
            raise DataError(
                f"{what} {v!r} is not a class label: a categorical target needs integer or string labels, not floats"
            )
    if len(kinds) > 1:
        raise DataError(f"{what} column mixes integer and string labels; use one kind")
    return out


@dataclass(frozen=True)
class ClassLabels:
    """The classes of a categorical model.

    Attributes:
        labels: the ``K >= 2`` distinct labels, sorted; logit ``k`` is ``labels[k]``. All ``int``
            or all ``str``.
        temperature: the temperature at prediction (module docstring), ``> 0``.
        temperature_map: where it applies, one of :data:`TEMPERATURE_MAPS` (module docstring).
    """

    labels: tuple[Any, ...]
    temperature: float = 1.0
    temperature_map: str = TEMPERATURE_MAPS[0]

    def __post_init__(self) -> None:
        kinds = {type(v) for v in self.labels}
        if len(self.labels) < 2 or not (kinds <= {int} or kinds <= {str}):
            raise ValueError("a classifier needs at least 2 distinct labels, all integers or all strings")
        if len(set(self.labels)) != len(self.labels) or list(self.labels) != sorted(self.labels):
            raise ValueError("class labels must be distinct and sorted")
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a positive number, got {self.temperature}")
        if self.temperature_map not in TEMPERATURE_MAPS:
            raise ValueError(
                f"temperature_map must be one of {', '.join(TEMPERATURE_MAPS)}, got {self.temperature_map!r}"
            )

    @property
    def num_classes(self) -> int:
        return len(self.labels)

    @classmethod
    def fit(cls, values: Any, what: str = "target") -> ClassLabels:
        """The sorted distinct labels of ``values`` (missing ones ignored).

        Raises:
            DataError: floats, mixed kinds, or fewer than two classes (one line).
        """
        v = [x for x in label_values(values, what) if x is not None]
        labels = tuple(sorted(set(v)))
        if len(labels) < 2:
            shown = f" (only {labels[0]!r})" if labels else ""
            raise DataError(f"a categorical target needs at least 2 classes; {what} has {len(labels)}{shown}")
        return cls(labels=labels)

    def encode(self, values: Any, what: str = "label") -> np.ndarray:
        """Codes ``[n]`` int32 (the index of each label in :attr:`labels`).

        Raises:
            DataError: a missing value, or a label the model was not trained on (one line).
        """
        v = label_values(values, what)
        index = {label: k for k, label in enumerate(self.labels)}
        codes = np.empty(len(v), dtype=np.int32)
        for i, x in enumerate(v):
            if x is None:
                raise DataError(f"{what} of data row {i + 1} is missing")  # data rows count from 1, as in tables.py
            k = index.get(x)
            if k is None:
                known = ", ".join(map(repr, self.labels))
                raise DataError(f"{what} {x!r} (data row {i + 1}) is not a class the model was trained on ({known})")
            codes[i] = k
        return codes

    def decode(self, codes: Any) -> np.ndarray:
        """The labels ``[n]`` (object dtype) of integer codes ``[n]``."""
        return np.asarray(self.labels, dtype=object)[np.asarray(codes, dtype=np.int64)]

    def temperature_text(self) -> str:
        """The temperature and where it applies, for reports: e.g. ``"0.83 (on the posterior predictive)"``."""
        if self.temperature == 1.0:
            return "1 (none)"
        where = "the posterior predictive" if self.temperature_map == "pooled" else "every network's logits"
        return f"{self.temperature:.4g} (on {where})"

    def with_temperature(self, temperature: float, temperature_map: str = TEMPERATURE_MAPS[0]) -> ClassLabels:
        return ClassLabels(labels=self.labels, temperature=float(temperature), temperature_map=temperature_map)

    def to_json(self) -> dict[str, Any]:
        return {
            "labels": list(self.labels),
            "temperature": float(self.temperature),
            "temperature_map": self.temperature_map,
        }

    @classmethod
    def from_json(cls, d: Any) -> ClassLabels:
        """Read :meth:`to_json`'s form (without ``temperature_map``: ``"networks"``, a file saved before the
        field existed); ``ValueError`` for anything else."""
        keys = {"labels", "temperature"}
        if (
            not isinstance(d, dict)
            or not keys <= set(d) <= keys | {"temperature_map"}
            or not isinstance(d["labels"], list)
        ):
            raise ValueError("classes must be {'labels': [...], 'temperature': number, 'temperature_map': name}")
        if any(isinstance(v, bool) or not isinstance(v, int | str) for v in d["labels"]):
            raise ValueError("class labels must be integers or strings")
        t = d["temperature"]
        if isinstance(t, bool) or not isinstance(t, int | float):
            raise ValueError("temperature must be a number")
        where = d.get("temperature_map", "networks")
        if not isinstance(where, str):
            raise ValueError("temperature_map must be a string")
        return cls(labels=tuple(d["labels"]), temperature=float(t), temperature_map=where)
