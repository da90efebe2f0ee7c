"""The temperature-over-splits benchmark's own code (benchmarks/temperature_seeds.py): the stratified splits that
never read the test rows, each rule's temperature, the pre-set choice, and one resumable run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import load_benchmark

from sigmabnn.datasets import load_digits


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("temperature_seeds")


def test_the_splits_are_stratified_seeded_and_leave_the_test_rows_out(bench):
    digits = load_digits()
    a, b = bench.split_of(digits, 0), bench.split_of(digits, 1)
    assert len(a) == int((digits.split != "test").sum())  # the fixed split's test rows are not there at all
    counts = a.split.value_counts()
    assert abs(counts["val"] - bench.VAL_ROWS) <= 5 and abs(counts["test"] - bench.SCORE_ROWS) <= 5
    share = a[a.split == "val"].digit.value_counts(normalize=True).sort_index()
    overall = a.digit.value_counts(normalize=True).sort_index()
    assert np.max(np.abs(share - overall)) < 0.01  # stratified by class
    assert not a.split.equals(b.split) and a.split.equals(bench.split_of(digits, 0).split)


def _log_probs(rng, n: int, sharpen: float, members: int = 3):
    """Members' log-probabilities ``[M, n, 10]``, logits ``sharpen`` times the truth's; labels drawn from the truth."""
    logits = 2.0 * rng.standard_normal((n, 10))
    truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(10, p=p) for p in truth])
    z = sharpen * logits[None] + 0.1 * rng.standard_normal((members, n, 10))
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True)), y


def test_an_overconfident_model_gets_its_temperature_under_every_rule_but_none(bench):
    rng = np.random.default_rng(0)
    val, score = _log_probs(rng, 400, 2.0), _log_probs(rng, 2000, 2.0)
    rules = bench.score_rules(*val, *score, seed=0)
    assert rules["none"]["temperature"] == 1.0
    for rule in ("val-nll", "cv2", "cv5"):
        assert 1.6 < rules[rule]["temperature"] < 2.5, rules[rule]  # logits twice the truth's: T near 2
        assert rules[rule]["nll"] < rules["none"]["nll"] - 0.05 and rules[rule]["ece"] < rules["none"]["ece"]


def test_the_cross_validated_rules_drop_a_temperature_that_only_fits_its_own_rows(bench):
    rng = np.random.default_rng(1)
    kept = {"val-nll": 0, "cv2": 0, "cv5": 0}
    for seed in range(20):
        val = _log_probs(rng, 40, 1.0)  # calibrated: any T != 1 is fitted noise
        t = bench.rule_temperatures(*val, seed=seed)
        kept = {r: kept[r] + (t[r] != 1.0) for r in kept}
    assert kept["val-nll"] >= 18  # the in-sample rule almost always keeps its T
    assert kept["cv2"] <= 14 and kept["cv5"] <= 14, kept


def test_the_pooled_rule_tempers_the_posterior_predictive_as_one_network(bench):
    rng = np.random.default_rng(2)
    one_val, one_score = _log_probs(rng, 400, 2.0, members=1), _log_probs(rng, 1000, 2.0, members=1)
    one = bench.score_rules(*one_val, *one_score, seed=0)
    assert one["pooled"]["temperature"] == pytest.approx(one["val-nll"]["temperature"], rel=1e-6)
    assert one["pooled"]["nll"] == pytest.approx(one["val-nll"]["nll"], rel=1e-9)  # one network: the same map
    soft = _log_probs(rng, 400, 0.5, members=8)  # every network too soft: the mean sharpened, T below 1
    p = np.exp(soft[0]).mean(axis=0)
    np.testing.assert_allclose(np.exp(bench.pooled_log_probs(soft[0]))[0], p, rtol=1e-12)
    t = bench.rule_temperatures(*soft, seed=0)["pooled"]
    assert 0.3 < t < 0.8, t
    assert bench.temperature_nll(bench.pooled_log_probs(soft[0]), soft[1], t) < bench.temperature_nll(
        soft[0], soft[1], 1.0
    )


def test_the_choice_is_the_lowest_mean_nll_with_ties_to_the_simpler_rule(bench):
    def rec(nlls):
        return {"rules": {r: {"nll": v} for r, v in zip(bench.RULES, nlls)}}

    assert bench.choose([rec([0.10, 0.09, 0.095, 0.099, 0.0905])])["chosen"] == "val-nll"
    assert bench.choose([rec([0.10, 0.0995, 0.09, 0.0905, 0.0995])])["chosen"] == "cv2"
    assert bench.choose([rec([0.10, 0.0995, 0.09, 0.0905, 0.088])])["chosen"] == "pooled"
    tie = bench.choose([rec([0.1000, 0.0995, 0.0992, 0.0999, 0.0991])] * 2)
    assert tie["chosen"] == "none" and tie["nll_minus_none_se"]["cv2"] == 0.0  # within TIE of none


@pytest.mark.heavy
def test_a_small_run_records_every_rule_and_resumes(bench, tmp_path):
    config = tmp_path / "classification.json"
    config.write_text(json.dumps({"summary": {"final": {"map": {"epochs": 2, "learning_rate": 0.01, "members": 1}}}}))
    args = ["--workdir", str(tmp_path / "w"), "--seeds", "2", "--methods", "map", "--config", str(config)]
    assert bench.main([*args, "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "temperature_seeds.json").read_text())
    assert [(r["method"], r["seed"]) for r in data["records"]] == [("map", 0), ("map", 1)]
    assert all(
        set(r["rules"]) == set(bench.RULES) and abs(r["n_score"] - bench.SCORE_ROWS) <= 5 for r in data["records"]
    )
    stamp = (tmp_path / "w" / "map-0.json").stat().st_mtime_ns
    assert bench.main([*args, "--out", str(tmp_path)]) == 0
    assert (tmp_path / "w" / "map-0.json").stat().st_mtime_ns == stamp  # resumed, not refitted
    assert f"**Chosen rule: `{data['summary']['chosen']}`**" in (tmp_path / "temperature_seeds.md").read_text()
    assert bench.main([*args[:4], "--methods", "nope", "--config", str(config)]) == 2
    assert bench.main([*args[:4], "--shard", "2/2", "--config", str(config)]) == 2  # I must be below N


def test_the_readme_quotes_the_committed_run(bench):
    """The README's numbers for the per-network and pooled rules are those of the committed run."""
    root = Path(__file__).resolve().parents[1]
    data = json.loads((root / "benchmarks" / "results" / "temperature_seeds.json").read_text())
    s, readme = data["summary"], " ".join((root / "README.md").read_text().split())
    diff, se = s["nll_minus_none"], s["nll_minus_none_se"]
    assert f"(mean NLL {diff['val-nll']:+.5f} nats, SE {se['val-nll']:.5f})" in readme
    assert f"scored {diff['pooled']:+.5f} (SE {se['pooled']:.5f})".replace("+", "") in readme.replace("+", "")
    assert s["chosen"] == "pooled" and len(data["records"]) == 120
    nuts = {r["rule"]: r for r in bench.per_method(data["records"]) if r["method"] == "nuts"}
    assert f"from {nuts['none']['nll']:.4f} to {nuts['pooled']['nll']:.4f}" in readme
    assert f"ECE from {nuts['none']['ece']:.4f} to {nuts['pooled']['ece']:.4f}" in readme
