"""Derived features: values against numpy, the allow-list, errors, order dependence."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sigmabnn.data.features import (
    MAX_LENGTH,
    DerivedFeature,
    add_derived,
    as_derived,
    parse_derive,
    parse_derived,
    required_columns,
)
from sigmabnn.errors import DataError, InputError


@pytest.fixture
def df() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 50
    return pd.DataFrame(
        {
            "m_1000022": rng.uniform(-900, 900, n),
            "m_1000023": rng.uniform(100, 900, n),
            "N1000022_3": rng.uniform(-1, 1, n),
            "N1000022_4": rng.uniform(-1, 1, n),
            "nlo_1000022_-1000024": rng.uniform(1e-3, 10, n),
            "label": ["x"] * n,
        }
    )


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("(N1000022_3**2-N1000022_4**2)**2", lambda d: (d.N1000022_3**2 - d.N1000022_4**2) ** 2),
        ("log(abs(m_1000022))", lambda d: np.log(np.abs(d.m_1000022))),
        ("log10(m_1000023) + exp(-m_1000023/500)", lambda d: np.log10(d.m_1000023) + np.exp(-d.m_1000023 / 500)),
        ("sqrt(m_1000023) * 2 - 1.5e-1", lambda d: np.sqrt(d.m_1000023) * 2 - 0.15),
        ("-m_1000022 / +m_1000023", lambda d: -d.m_1000022 / d.m_1000023),
        ("min(abs(m_1000022), m_1000023)", lambda d: np.minimum(np.abs(d.m_1000022), d.m_1000023)),
        ("max(m_1000022, 0) ** 0.5", lambda d: np.maximum(d.m_1000022, 0) ** 0.5),
        ("`nlo_1000022_-1000024` * 10", lambda d: d["nlo_1000022_-1000024"] * 10),
        ("2 ** 3", lambda d: np.full(len(d), 8.0)),
        ("-(-m_1000023)", lambda d: d.m_1000023),
    ],
)
def test_values_match_numpy(df, expression, expected):
    feature = DerivedFeature("z", expression)
    got = feature.apply(df)
    assert got.name == "z"
    assert got.dtype == np.float64
    assert got.index.equals(df.index)
    np.testing.assert_allclose(got.to_numpy(), np.asarray(expected(df), dtype=float), rtol=1e-15, atol=0)


def test_long_flat_sums_are_fine(df):
    expression = "+".join(["N1000022_3**2"] * 30)
    np.testing.assert_allclose(DerivedFeature("s", expression).apply(df), 30 * df.N1000022_3**2, rtol=1e-13)


def test_parse_derive_and_columns_used():
    f = parse_derive(" zc = (N1000022_3**2-N1000022_4**2)**2 + N1000022_3 ")
    assert f.name == "zc"
    assert f.expression == "(N1000022_3**2-N1000022_4**2)**2 + N1000022_3"
    assert f.columns_used == ("N1000022_3", "N1000022_4")
    assert str(f) == "zc=(N1000022_3**2-N1000022_4**2)**2 + N1000022_3"
    assert f.as_pair() == ("zc", f.expression)
    assert as_derived(f.as_pair()) == f
    assert as_derived(str(f)) == f
    assert parse_derive("a=`nlo_1000022_-1000024`+`nlo_1000022_-1000024`").columns_used == ("nlo_1000022_-1000024",)


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("__import__('os')", "unknown function '__import__'"),
        ("__import__('os').system('true')", "attribute access"),
        ("m_1000022.real", "attribute access"),
        ("(lambda: 1)()", "only calls to"),
        ("lambda x: x", "lambda"),
        ("[x for x in m_1000022]", "comprehension"),
        ("sum(x for x in m_1000022)", "unknown function 'sum'"),
        ("m_1000022[0]", "subscript"),
        ("m_1000022[0:2]", "subscript"),
        ("2**2**2", "power towers"),
        ("9**9**9**9", "power towers"),
        ("m_1000022**(2**3)", "power towers"),
        ("m_1000022 if m_1000023 else 1", "conditional"),
        ("m_1000022 < 1", "comparison"),
        ("m_1000022 and m_1000023", "boolean"),
        ("'abc'", "string literals"),
        ("m_1000022 % 2", "operator '%'"),
        ("m_1000022 // 2", "operator '//'"),
        ("~m_1000022", "operator '~'"),
        ("not m_1000022", "operator 'not'"),
        ("log(m_1000023, base=10)", "keyword arguments"),
        ("log(m_1000023, 10)", "takes 1 argument"),
        ("min(m_1000023)", "takes 2 arguments"),
        ("eval('1')", "unknown function 'eval'"),
        ("m_1000022()", "unknown function 'm_1000022'"),
        ("`m_1000022`(1)", "calling a column"),
        ("log", "without a call"),
        ("__builtins__", "names starting with __"),
        ("(x := 1)", "assignment expression"),
        ("(1, 2)", "tuple"),
        ("[1]", "list"),
        ("{1: 2}", "dict"),
        ("f'{m_1000022}'", "f-string"),
        ("True", "bool literals"),
        ("1j", "complex literals"),
        ("*m_1000022", "invalid expression"),
        ("m_1000022 +", "invalid expression"),
        ("import os", "invalid expression"),
        ("m_1000022\n+1", "line breaks"),
        ("`m_1000022", "unmatched backquote"),
        ("``+1", "empty backquoted"),
        ("_bq0_ + 1", "reserved"),
        ("-" * 120 + "m_1000022", "nested too deeply"),
        ("+".join(["m_1000022"] * 51), "too long"),
        ("+".join(["(1*1*1*1*1*1*1*1)"] * 24), "too many terms"),
        ("m" * (MAX_LENGTH + 1), "too long"),
        ("", "empty expression"),
    ],
)
def test_disallowed_constructs_rejected(expression, fragment):
    with pytest.raises(InputError) as err:
        DerivedFeature("z", expression)
    message = str(err.value)
    assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize("name", ["1abc", "a-b", "a b", "", "__x", "log", "max", "a.b"])
def test_bad_names(name):
    with pytest.raises(InputError, match="name"):
        DerivedFeature(name, "1")


@pytest.mark.parametrize("text", ["noequals", "=1", "a=", "  =  "])
def test_parse_derive_needs_name_and_expression(text):
    with pytest.raises(InputError, match="name=expression"):
        parse_derive(text)


def test_self_reference_rejected():
    with pytest.raises(InputError, match="refers to itself"):
        DerivedFeature("a", "a + 1")


def test_unknown_column_is_named(df):
    with pytest.raises(InputError, match="unknown column 'm_9999'"):
        DerivedFeature("z", "m_9999 + m_1000022").apply(df)
    with pytest.raises(InputError, match="unknown column 'nope'"):
        add_derived(df, ["z=nope*2"])


def test_non_numeric_column(df):
    with pytest.raises(DataError, match="not numeric"):
        DerivedFeature("z", "label + 1").apply(df)


def test_non_finite_result_from_finite_inputs_is_an_error(df):
    n_negative = int((df.m_1000022 <= 0).sum())
    assert n_negative > 0
    first = int(np.argmax(df.m_1000022.to_numpy() <= 0)) + 1
    with pytest.raises(DataError, match=rf"not finite for {n_negative} of {len(df)} rows \(first: data row {first}\)"):
        DerivedFeature("lm", "log(m_1000022)").apply(df)
    with pytest.raises(DataError, match="not finite"):
        DerivedFeature("big", "exp(m_1000023)").apply(df)  # overflow, not a hang
    with pytest.raises(DataError, match="not finite"):
        DerivedFeature("tower", "((10.0**10)**10)**10").apply(df)


def test_missing_inputs_stay_missing(df):
    d = df.copy()
    d.loc[3, "m_1000023"] = np.nan
    out = DerivedFeature("z", "m_1000023 * 2").apply(d)
    assert np.isnan(out[3])
    assert np.isfinite(out.drop(index=3)).all()


def test_add_derived_is_ordered_and_does_not_modify_input(df):
    before = df.copy()
    out = add_derived(df, ["a=m_1000023/100", ("b", "a**2 + 1"), DerivedFeature("c", "b - a")])
    pd.testing.assert_frame_equal(df, before)
    assert list(out.columns) == list(df.columns) + ["a", "b", "c"]
    a = df.m_1000023 / 100
    np.testing.assert_allclose(out["b"], a**2 + 1)
    np.testing.assert_allclose(out["c"], a**2 + 1 - a)
    with pytest.raises(InputError, match="unknown column 'b'"):
        add_derived(df, ["a=b+1", "b=m_1000023"])  # later name used too early


def test_duplicate_and_shadowing_names(df):
    with pytest.raises(InputError, match="defined twice"):
        add_derived(df, ["a=1", "a=2"])
    with pytest.raises(InputError, match="already a column"):
        add_derived(df, ["m_1000022=1"])
    with pytest.raises(InputError, match="defined twice"):
        parse_derived(["a=1", "a=m_1000022"])


def test_required_columns_expands_derived_names():
    derived = ["a=m_1000022+m_1000023", "b=a*N1000022_3", "c=`nlo_1000022_-1000024`"]
    got = required_columns(["b", "N1000022_4", "m_1000022", "c"], derived)
    assert got == ["m_1000022", "m_1000023", "N1000022_3", "N1000022_4", "nlo_1000022_-1000024"]
    assert required_columns(["x"], []) == ["x"]


def test_threshold_integral_is_callable_with_six_arguments():
    from sigmabnn.data.special import threshold_integral

    df = pd.DataFrame({"m1": [60.0, 300.0], "m2": [70.0, 400.0]})
    out = add_derived(df, ["i0=thrint(abs(m1)+abs(m2),91.1876,2.4952,2,0,1e8)"])
    np.testing.assert_array_equal(out["i0"], threshold_integral(df.m1 + df.m2, 91.1876, 2.4952, 2, 0, 1e8))
    with pytest.raises(InputError, match=r"thrint\(\) takes 6 arguments, got 2"):
        parse_derive("i0=thrint(m1,m2)")


def test_helper_names_are_defined_but_marked():
    from sigmabnn.data.features import is_helper

    out = add_derived(pd.DataFrame({"a": [1.0, 2.0]}), ["_h=a*2", "b=_h+1"])
    np.testing.assert_array_equal(out["b"], [3.0, 5.0])
    assert is_helper("_h") and not is_helper("b") and not is_helper("__h")
