"""Class label sets: stable order, encoding, and the one-line errors of bad labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sigmabnn.classes import ClassLabels
from sigmabnn.errors import DataError


def test_labels_are_sorted_whatever_the_row_order_and_encode_round_trips():
    a = ClassLabels.fit(pd.Series(["cat", "dog", "ant", "dog"]))
    b = ClassLabels.fit(pd.Series(["dog", "ant", "cat"]))
    assert a == b and a.labels == ("ant", "cat", "dog")
    codes = a.encode(["dog", "ant"])
    assert codes.tolist() == [2, 0] and codes.dtype == np.int32
    assert a.decode(codes).tolist() == ["dog", "ant"]


def test_integer_labels_sort_numerically_and_whole_floats_are_integers():
    c = ClassLabels.fit(pd.Series([10, 2, 1, 2]))
    assert c.labels == (1, 2, 10)
    assert ClassLabels.fit(pd.Series([1.0, 2.0, np.nan])).labels == (1, 2)


@pytest.mark.parametrize(
    ("values", "needle"),
    [([0.5, 1.0, 2.0], "not floats"), ([1, 1, 1], "at least 2 classes"), ([True, False], "booleans")],
)
def test_bad_label_columns_are_one_line_data_errors(values, needle):
    with pytest.raises(DataError, match=needle) as err:
        ClassLabels.fit(pd.Series(values))
    assert "\n" not in str(err.value)


def test_an_unseen_label_is_refused():
    c = ClassLabels.fit(pd.Series(["a", "b"]))
    with pytest.raises(DataError, match=r"'z' \(data row 2\) is not a class the model was trained on"):
        c.encode(["a", "z"])
    with pytest.raises(DataError, match=r"label of data row 3 is missing"):
        c.encode(["a", "b", None])


def test_json_round_trip_and_validation():
    c = ClassLabels(labels=(0, 3, 7), temperature=0.5)
    assert c.temperature_map == "pooled" and ClassLabels.from_json(c.to_json()) == c
    older = ClassLabels.from_json({"labels": [0, 3, 7], "temperature": 0.5})  # a file from before the map was stored
    assert older.temperature_map == "networks" and older.temperature_text() == "0.5 (on every network's logits)"
    assert (
        c.temperature_text() == "0.5 (on the posterior predictive)"
        and ClassLabels((0, 1)).temperature_text() == "1 (none)"
    )
    with pytest.raises(ValueError, match="temperature_map"):
        ClassLabels.from_json({**c.to_json(), "temperature_map": "logits"})
    with pytest.raises(ValueError):
        ClassLabels.from_json({**c.to_json(), "extra": 1})
    with pytest.raises(ValueError):
        ClassLabels.from_json({"labels": [3, 0], "temperature": 1.0})
    with pytest.raises(ValueError):
        ClassLabels.from_json({"labels": [0, 1], "temperature": -1.0})
