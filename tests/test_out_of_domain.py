"""Out-of-domain flags end to end: fitted and stored with the model, in predictions, the CLI and evaluate."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sigmabnn.api import fit
from sigmabnn.cli.main import main
from sigmabnn.errors import ModelFileError
from sigmabnn.evaluate.metrics import evaluate
from sigmabnn.io.model_file import load_model, save_model
from sigmabnn.predict import predict


def _rows(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    return pd.DataFrame({"a": a, "b": b, "y": 2 * a - b + 0.1 * rng.normal(size=n)})


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ood")
    path = tmp / "train.csv"
    _rows(400, 0).to_csv(path, index=False)
    fitted, _ = fit(
        path, "y", method="mh", architecture="2-8-1", num_chains=2, num_warmup=100, num_samples=20, progress=False
    )
    save_model(fitted, tmp / "model")
    return tmp / "model"


def test_the_domain_is_fitted_on_the_training_rows_and_survives_save_and_load(model_dir):
    fitted = load_model(model_dir)
    header = json.loads((model_dir / "model.json").read_text())
    assert header["domain"]["k"] == 5 and header["domain"]["quantile"] == 0.99
    assert header["arrays"]["domain_reference"] == {"shape": [fitted.report.data.train, 2], "dtype": "float64"}
    ref = fitted.domain.reference
    # the reference rows are the standardised training inputs: mean 0, std 1 per column
    np.testing.assert_allclose(ref.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(ref.std(axis=0), 1.0, rtol=1e-12)
    assert fitted.domain.threshold == header["domain"]["threshold"] > 0


def test_held_out_rows_are_in_the_domain_and_far_points_are_not(model_dir):
    fitted = load_model(model_dir)
    held_out = _rows(2000, 1)
    pred = predict(fitted, held_out, levels=())
    assert pred.in_domain.dtype == bool and pred.domain_distance.shape == (2000,)
    assert 1.0 - pred.in_domain.mean() <= 0.03  # the issue allows a few percent
    far = pd.DataFrame({"a": [0.0, 3.0, -1.0, 1.6], "b": [0.0, 0.0, 2.5, 1.6]})
    assert predict(fitted, far, levels=()).in_domain.tolist() == [True, False, False, False]


def test_predict_cli_writes_the_columns_and_warns_once_with_the_count(model_dir, tmp_path, capsys):
    rows = pd.DataFrame({"a": [0.1, 4.0, -0.3, 5.0], "b": [0.2, 0.0, -0.5, 5.0]})
    rows.to_csv(tmp_path / "x.csv", index=False)
    assert main(["predict", str(model_dir), str(tmp_path / "x.csv"), "-o", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: 2 of 4 rows lie outside the training domain")
    out = pd.read_csv(tmp_path / "p.csv")
    assert list(out.columns[-2:]) == ["in_domain", "domain_distance"]
    assert out["in_domain"].tolist() == [True, False, True, False]
    assert (out["domain_distance"] > 0).all() and out["domain_distance"][1] > out["domain_distance"][0]
    # all rows inside: no warning
    rows.iloc[[0, 2]].to_csv(tmp_path / "in.csv", index=False)
    assert main(["predict", str(model_dir), str(tmp_path / "in.csv"), "-o", str(tmp_path / "q.csv")]) == 0
    assert capsys.readouterr().err == ""


def test_evaluate_scores_the_rows_inside_and_outside_the_domain_apart(model_dir, tmp_path, capsys):
    fitted = load_model(model_dir)
    table = pd.concat([_rows(200, 2), pd.DataFrame({"a": [3.0, -3.0, 2.5], "b": [0.0, 2.0, -2.5]})])
    table.loc[table.index[-3:], "y"] = 2 * table["a"].iloc[-3:] - table["b"].iloc[-3:]
    table = table.reset_index(drop=True)
    metrics = evaluate(fitted, table, table)
    dom = metrics["domain"]
    assert dom["n_in"] + dom["n_out"] == 203 and dom["n_out"] >= 3
    inside = predict(fitted, table, levels=()).in_domain
    y_in = table["y"].to_numpy()[inside]
    m_in = predict(fitted, table[inside], levels=()).mean[:, 0]
    assert dom["in"]["original"]["rmse"] == pytest.approx(np.sqrt(np.mean((m_in - y_in) ** 2)), rel=1e-9)
    assert set(dom["out"]["original"]) >= {"rmse", "nll", "coverage_interval"}
    table.to_csv(tmp_path / "e.csv", index=False)
    assert main(["evaluate", str(model_dir), str(tmp_path / "e.csv")]) == 0
    text = capsys.readouterr().out
    assert f"training domain: {dom['n_in']} rows inside, {dom['n_out']} outside" in text
    assert "rows outside the training domain" in text


def _copy(model_dir, tmp_path):
    import shutil

    dest = tmp_path / "m"
    shutil.copytree(model_dir, dest)
    return dest, json.loads((dest / "model.json").read_text())


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda h: h["domain"].update(threshold=-1.0), "domain threshold must be >= 0"),
        (lambda h: h["domain"].update(k=10_000), "domain k must be an integer"),
        (lambda h: h["domain"].update(metric="mahalanobis"), "unknown domain metric"),
        (lambda h: h.pop("domain"), "has no 'domain'"),
        (lambda h: h["arrays"].pop("domain_reference"), "lacks the array 'domain_reference'"),
    ],
)
def test_a_bad_domain_entry_is_a_one_line_model_file_error(model_dir, tmp_path, edit, message):
    dest, header = _copy(model_dir, tmp_path)
    edit(header)
    (dest / "model.json").write_text(json.dumps(header))
    with pytest.raises(ModelFileError, match=message) as info:
        load_model(dest)
    assert "\n" not in str(info.value)


def test_a_model_without_a_stored_domain_predicts_without_flags(model_dir, tmp_path, capsys):
    import dataclasses

    fitted = dataclasses.replace(load_model(model_dir), domain=None)
    save_model(fitted, tmp_path / "old")
    header = json.loads((tmp_path / "old" / "model.json").read_text())
    assert "domain" not in header and "domain_reference" not in header["arrays"]
    pred = predict(load_model(tmp_path / "old"), pd.DataFrame({"a": [9.0], "b": [9.0]}), levels=())
    assert pred.in_domain is None and pred.domain_distance is None
    assert "domain" not in evaluate(fitted, _rows(20, 3), _rows(20, 3))
