"""Categorical BNNs end to end through the Python API: every method trains, predicts and scores a classifier."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from sigmabnn.api import fit
from sigmabnn.errors import DataError, InputError
from sigmabnn.evaluate.classification import evaluate_classifier
from sigmabnn.evaluate.metrics import evaluate
from sigmabnn.io.model_file import load_model, save_model
from sigmabnn.predict import ClassPrediction, network_probabilities, predict

FAST = {
    "nuts": {"num_chains": 2, "num_warmup": 20, "num_samples": 10, "max_tree_depth": 4},
    "chees": {"num_chains": 2, "num_warmup": 20, "num_samples": 10},
    "hmc": {"num_chains": 2, "num_warmup": 20, "num_samples": 10, "num_integration_steps": 4},
    "mh": {"num_chains": 2, "num_warmup": 20, "num_samples": 10},
    "bbb": {"num_steps": 200, "num_draws": 20, "map": None, "noise_estimate": "elbo"},
    "flipout": {"num_steps": 200, "num_draws": 20, "map": None, "noise_estimate": "elbo"},
    "ensemble": {"num_members": 3, "num_steps": 200},
}


def blobs(n: int = 90, seed: int = 0, labels=("ant", "bee", "cat")) -> pd.DataFrame:
    """Three well separated Gaussian blobs in 2-d, labelled by strings."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 3, n)
    centres = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])
    x = centres[k] + 0.5 * rng.standard_normal((n, 2))
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "kind": np.asarray(labels, dtype=object)[k]})


def _fit(df: pd.DataFrame, method: str, **extra):
    options = {**FAST[method], **extra}
    return fit(df, "kind", method=method, likelihood="categorical", architecture="2-8-3", progress=False, **options)


SLOW = pytest.mark.slow  # the MCMC fits take tens of seconds each on one core


@pytest.fixture(scope="module")
def ensemble_on_blobs():
    """``_fit(blobs(), "ensemble")``, fitted once: several tests check different properties of this same fit."""
    return _fit(blobs(), "ensemble")


@pytest.mark.parametrize(
    "method",
    [pytest.param(m, marks=SLOW) for m in ("nuts", "chees", "hmc", "mh")] + ["bbb", "flipout", "ensemble"],
)
def test_every_method_fits_a_classifier_whose_prediction_is_a_distribution(method, request):
    df = blobs()
    fitted, report = request.getfixturevalue("ensemble_on_blobs") if method == "ensemble" else _fit(df, method)
    assert fitted.classes.labels == ("ant", "bee", "cat")
    pred = predict(fitted, df)
    assert isinstance(pred, ClassPrediction)
    np.testing.assert_allclose(pred.probabilities.sum(axis=1), 1.0, rtol=1e-10)
    np.testing.assert_allclose(pred.mutual_information, pred.entropy - pred.expected_entropy, atol=1e-10)
    assert np.all(pred.mutual_information >= 0) and np.all(pred.entropy <= np.log(3) + 1e-12)
    assert set(pred.predicted) <= {"ant", "bee", "cat"}
    metrics = evaluate(fitted, df, df)
    if method != "mh":  # random-walk MH from MAP starts over 10 draws: still a MAP-quality classifier
        assert metrics["accuracy"] > 0.8, metrics
    assert report.metrics["train"]["n"] > 0


def test_bbb_with_the_scale_mixture_prior_fits_a_classifier():
    fitted, _ = _fit(blobs(), "bbb", prior="scale_mixture")
    assert evaluate_classifier(fitted, blobs(), blobs())["accuracy"] > 0.8


def test_the_predictive_is_the_mean_of_the_networks_probabilities(ensemble_on_blobs):
    df = blobs()
    fitted, _ = ensemble_on_blobs
    p = network_probabilities(fitted, df)
    pred = predict(fitted, df, calibrated=False)  # the untempered posterior (the pooled temperature: below)
    assert p.shape == (3, len(df), 3)
    np.testing.assert_allclose(pred.probabilities, p.mean(axis=0), rtol=1e-12)
    h = -np.sum(p * np.log(p), axis=-1)
    np.testing.assert_allclose(pred.expected_entropy, h.mean(axis=0), rtol=1e-9, atol=1e-14)
    frame = pred.to_frame(index=df.index)  # the columns sigmabnn predict writes
    summaries = ["predicted", "entropy", "expected_entropy", "mutual_information", "in_domain", "domain_distance"]
    assert list(frame.columns)[-6:] == summaries
    np.testing.assert_array_equal(frame[[c for c in frame.columns if c.startswith("prob_")]], pred.probabilities)


def test_a_classifier_flags_points_outside_its_training_domain(ensemble_on_blobs):
    """The classifier's prediction carries the regression's domain flags: the model's stored domain at the
    standardised inputs; held-out rows from the training distribution inside, far points outside."""
    fitted, _ = ensemble_on_blobs
    held = blobs(200, seed=4)[["a", "b"]]
    far = pd.DataFrame({"a": [30.0, -25.0], "b": [0.0, 40.0]})
    inside, outside = predict(fitted, held), predict(fitted, far)
    z = fitted.x_transform.forward(held[["a", "b"]].to_numpy())
    np.testing.assert_allclose(inside.domain_distance, fitted.domain.distance(z), rtol=1e-6)
    assert inside.in_domain.mean() >= 0.95 and not outside.in_domain.any()
    np.testing.assert_array_equal(inside.in_domain, inside.domain_distance <= fitted.domain.threshold)


def test_evaluate_scores_a_classifiers_rows_inside_and_outside_the_domain_apart(ensemble_on_blobs):
    from sigmabnn.evaluate.classification import classification_summary
    from sigmabnn.evaluate.metrics import evaluate

    fitted, _ = ensemble_on_blobs
    rows = pd.concat([blobs(100, seed=6), blobs(10, seed=7).assign(a=lambda d: d.a + 30.0)], ignore_index=True)
    metrics = evaluate(fitted, rows, rows)
    pred = predict(fitted, rows)
    codes = np.array([fitted.classes.labels.index(v) for v in rows["kind"]])
    dom = metrics["domain"]
    assert dom["n_in"] + dom["n_out"] == 110 and dom["n_out"] >= 10
    out = ~pred.in_domain
    assert dom["out"] == classification_summary(pred.probabilities[out], codes[out])
    assert dom["in"]["n"] == dom["n_in"] and metrics["n"] == 110


def test_string_labels_and_temperature_round_trip_through_save_and_load(tmp_path, ensemble_on_blobs):
    df = blobs()
    fitted, report = ensemble_on_blobs
    assert report.recalibration.rows_kind == "temperature"
    path = save_model(fitted, tmp_path / "m")
    loaded = load_model(path)
    assert loaded.classes == fitted.classes
    np.testing.assert_array_equal(predict(loaded, df).probabilities, predict(fitted, df).probabilities)
    assert list(predict(loaded, df).predicted) == list(predict(fitted, df).predicted)


def test_the_temperature_is_kept_only_when_it_lowers_the_validation_nll():
    fitted, report = _fit(blobs(120, seed=3), "ensemble")
    extra = report.recalibration.extra
    assert extra["val_nll"] <= extra["val_nll_at_temperature_1"]
    if fitted.classes.temperature != 1.0:
        assert extra["val_nll"] < extra["val_nll_at_temperature_1"]


def test_validation_rows_that_are_all_right_keep_no_temperature(ensemble_on_blobs):
    """Well separated blobs: every val row is classified right, the NLL falls to the search's lower bound, and
    T = 1 is kept (not T_MIN); the diagnosis says why."""
    from sigmabnn.evaluate.diagnose import _temperature_sentence

    fitted, report = ensemble_on_blobs
    extra = report.recalibration.extra
    assert extra["temperature_at_lower_bound"] and fitted.classes.temperature == 1.0
    assert extra["val_nll"] == extra["val_nll_at_temperature_1"] > 0
    assert "do not determine a temperature" in _temperature_sentence(report.recalibration)


def test_recalibrate_refits_the_temperature_from_arrays_and_keeps_one_that_does_not_help(ensemble_on_blobs):
    """``recalibrate(fitted, x, labels)``: the temperature of :func:`kept_temperature` on those rows replaces
    the model's; on rows the model already fits well no temperature may make it worse than T = 1."""
    from sigmabnn.api import recalibrate
    from sigmabnn.predict.classes import network_probabilities
    from sigmabnn.temperature import kept_temperature, pooled_log_probs

    fitted, _ = ensemble_on_blobs
    held = blobs(200, seed=9)
    x, labels = held[["a", "b"]].to_numpy(), held["kind"].to_numpy()
    old = dataclasses.replace(fitted, classes=fitted.classes.with_temperature(0.5, "networks"))  # an older file's map
    new = recalibrate(old, x, labels)
    codes = np.array([fitted.classes.labels.index(v) for v in labels])
    log_p = np.log(np.maximum(network_probabilities(fitted, x, calibrated=False), 1e-300))
    expected = kept_temperature(pooled_log_probs(log_p), codes)
    assert new.classes.temperature == pytest.approx(expected.temperature)
    assert new.classes.temperature_map == "pooled"
    assert new.classes.labels == fitted.classes.labels and new.report.recalibration.rows == 200
    assert expected.nll <= expected.nll_at_one


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_a_pooled_temperature_tempers_the_posterior_predictive_and_keeps_the_networks_disagreement(
    ensemble_on_blobs,
):
    """The pooled map: ``softmax(log mean_t p_t / T)``; its entropy split in the untempered posterior's
    proportions of mutual information and expected entropy; ``calibrated=False`` gives ``T = 1``."""
    fitted, _ = ensemble_on_blobs
    df = blobs(150, seed=11)
    p = network_probabilities(fitted, df, calibrated=False)
    raw = predict(fitted, df, calibrated=False)
    for t in (0.4, 2.5):
        model = dataclasses.replace(fitted, classes=fitted.classes.with_temperature(t))
        pred = predict(model, df)
        assert pred.temperature_map == "pooled" and pred.temperature == t
        np.testing.assert_allclose(pred.probabilities, _softmax(np.log(p.mean(axis=0)) / t), rtol=1e-9, atol=1e-300)
        h = -np.sum(pred.probabilities * np.log(pred.probabilities), axis=-1)
        np.testing.assert_allclose(pred.entropy, h, rtol=1e-9, atol=1e-14)
        share = raw.mutual_information / raw.entropy
        np.testing.assert_allclose(pred.mutual_information, h * share, rtol=1e-9, atol=1e-300)
        np.testing.assert_allclose(pred.expected_entropy, h * (1 - share), rtol=1e-9, atol=1e-300)
        np.testing.assert_array_equal(network_probabilities(model, df), p)  # no network is tempered by itself
        np.testing.assert_array_equal(predict(model, df, calibrated=False).probabilities, raw.probabilities)
    sharp, soft = (
        predict(dataclasses.replace(fitted, classes=fitted.classes.with_temperature(t)), df) for t in (0.4, 2.5)
    )
    assert sharp.entropy.mean() < raw.entropy.mean() < soft.entropy.mean()


def test_a_model_file_without_a_temperature_map_keeps_the_per_network_map(tmp_path, ensemble_on_blobs):
    """A file written before the map was stored reads as ``"networks"``: ``mean_t softmax(log p_t / T)``, with
    the entropies of those tempered networks; saved again, it keeps that map."""
    fitted, _ = ensemble_on_blobs
    df = blobs(60, seed=12)
    path = save_model(dataclasses.replace(fitted, classes=fitted.classes.with_temperature(0.7)), tmp_path / "m")
    header = json.loads((path / "model.json").read_text())
    assert header["classes"].pop("temperature_map") == "pooled"
    (path / "model.json").write_text(json.dumps(header))
    old = load_model(path)
    assert old.classes.temperature_map == "networks" and old.classes.temperature == 0.7
    p = network_probabilities(old, df, calibrated=False)
    tempered = _softmax(np.log(p) / 0.7)
    np.testing.assert_allclose(network_probabilities(old, df), tempered, rtol=1e-9)
    pred = predict(old, df)
    np.testing.assert_allclose(pred.probabilities, tempered.mean(axis=0), rtol=1e-9)
    np.testing.assert_allclose(pred.expected_entropy, (-np.sum(tempered * np.log(tempered), -1)).mean(0), rtol=1e-9)
    assert pred.temperature_map == "networks"
    scored = evaluate_classifier(old, df, df["kind"])
    assert scored["temperature_map"] == "networks" and scored["temperature"] == 0.7
    assert load_model(save_model(old, tmp_path / "again")).classes == old.classes


def test_integer_labels_keep_their_values():
    df = blobs(labels=(7, 3, 5))
    df["kind"] = df["kind"].astype(np.int64)
    fitted, _ = _fit(df, "ensemble")
    assert fitted.classes.labels == (3, 5, 7)
    assert set(predict(fitted, df).predicted) <= {3, 5, 7}


def test_bad_targets_are_one_line_errors(ensemble_on_blobs):
    df = blobs()
    with pytest.raises(DataError, match="not floats"):
        _fit(df.assign(kind=np.linspace(0, 1, len(df))), "ensemble")
    with pytest.raises(DataError, match="at least 2 classes"):
        _fit(df.assign(kind="ant"), "ensemble")
    with pytest.raises(InputError, match="takes no log_target"):
        _fit(df, "ensemble", log_target=True)
    fitted, _ = ensemble_on_blobs
    with pytest.raises(DataError, match="'dog'.*not a class"):
        evaluate(fitted, df, df.assign(kind=["dog"] * len(df)))
