"""The recalibration-over-seeds benchmark's own code (benchmarks/recalibration_seeds.py): the default fit's
split, each rule's interval levels from validation PITs, and one resumable run on a small table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from tests.conftest import load_benchmark

from sigmabnn.names import MIN_RECALIBRATION_ROWS


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("recalibration_seeds")


def test_the_split_is_the_default_fits(bench):
    import pandas as pd

    small, large = pd.DataFrame({"y": np.zeros(120)}), pd.DataFrame({"y": np.zeros(1000)})
    assert set(bench.with_split(small, "t", 0)["split"]) == {"train"}  # 12 < MIN_RECALIBRATION_ROWS: all train
    labels = bench.with_split(large, "t", 0)["split"]
    assert (labels == "val").sum() == 100 >= MIN_RECALIBRATION_ROWS
    assert not labels.equals(bench.with_split(large, "t", 1)["split"])  # seeded per seed


def test_each_rule_maps_a_too_wide_models_levels_as_documented(bench):
    rng = np.random.default_rng(5)
    val = stats.norm.cdf(0.6 * rng.standard_normal(400))  # the predictive is 1/0.6 times too wide
    score = stats.norm.cdf(0.6 * rng.standard_normal(20000))
    cov = bench.coverages({"val_pit": val.tolist(), "score_pit": score.tolist()})
    assert abs(cov["raw:0.68"] - (2 * stats.norm.cdf(stats.norm.ppf(0.84) / 0.6) - 1)) < 0.01
    assert abs(cov["quantile:0.68"] - 0.68) < 0.04 and abs(cov["quantile:0.95"] - 0.95) < 0.02
    assert cov["ks-0.05:0.68"] == cov["quantile:0.68"]  # 400 rows reject uniformity
    # shrinking moves the coverage from the empirical map's towards the raw one, more with a larger prior
    path = [cov[f"{r}:0.68"] for r in ("quantile", "shrunk-10", "shrunk-30", "shrunk-100", "raw")]
    assert all(a <= b for a, b in zip(path, path[1:])), path
    # the leave-one-out rules: pooled with the validation PITs, or alone where a fit has no validation rows
    loo = stats.norm.cdf(0.6 * rng.standard_normal(2000))
    with_loo = bench.coverages({"val_pit": val.tolist(), "score_pit": score.tolist(), "loo_pit": loo.tolist()})
    assert abs(with_loo["loo+quantile:0.68"] - 0.68) < 0.03 and with_loo["loo-if-no-val:0.68"] == cov["quantile:0.68"]
    no_val = bench.coverages({"val_pit": [], "score_pit": score.tolist(), "loo_pit": loo.tolist()})
    assert no_val["quantile:0.68"] == cov["raw:0.68"] and abs(no_val["loo-if-no-val:0.68"] - 0.68) < 0.03
    assert no_val["loo+quantile:0.95"] == no_val["loo-if-no-val:0.95"]
    uniform = {"val_pit": rng.uniform(size=30).tolist(), "score_pit": score.tolist()}
    assert bench.coverages(uniform)["ks-0.05:0.95"] == cov["raw:0.95"]  # a calibrated-looking sample: no map


@pytest.mark.heavy
def test_a_run_on_one_table_records_every_rule_and_resumes(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "SCORE_ROWS", 300)
    args = ["--workdir", str(tmp_path / "work"), "--tables", "hetero2d-1000", "--seeds", "1", "--out", str(tmp_path)]
    assert bench.main(args) == 0
    data = json.loads((tmp_path / "recalibration_seeds.json").read_text())
    (record,) = data["records"]
    assert (record["n_val"], record["n_fit"], record["n_score"]) == (100, 900, 300)
    assert set(record["coverage"]) == {f"{r}:{c}" for r in bench.RULES for c in bench.LEVELS}
    state = tmp_path / "work" / "hetero2d-1000-0.json"
    stamp = state.stat().st_mtime_ns
    assert bench.main(args) == 0 and state.stat().st_mtime_ns == stamp  # resumed, not refitted
    assert record["likelihood"] in ("gaussian", "hetero_student_t") and record["map_lbfgs_steps"] > 0
    assert "| hetero2d-1000 | 1 | 100 | 300 | " in (tmp_path / "recalibration_seeds.md").read_text()
    saved = json.loads(state.read_text())
    assert 0 < len(saved["loo_pit"]) <= record["n_fit"] and all(0.0 <= u <= 1.0 for u in saved["loo_pit"])
    assert bench.main([*args[:4], "--tables", "nope"]) == 2


def test_the_library_and_the_readme_follow_the_committed_run_on_todays_default(bench):
    """``recalibrate="auto"`` keeps its map only below the KS gate that the committed run on the default with its
    MAP polish chose by the script's rule, and the README quotes that run's scores."""
    from sigmabnn.fitting.spec import AUTO_RECALIBRATION_GATE

    root = Path(__file__).resolve().parents[1]
    data = json.loads((root / "benchmarks" / "results" / "recalibration_seeds_lbfgs.json").read_text())
    lines, chosen = bench.summarise(data["records"])
    assert chosen == "ks-0.05" and AUTO_RECALIBRATION_GATE == bench.KS_GATE
    score = {line.split(" | ")[0][2:]: line.split(" | ")[1] for line in lines[2 : 2 + len(bench.RULES)]}
    readme = " ".join((root / "README.md").read_text().split())
    quoted = f"{score['ks-0.05']} gated, {score['quantile']} always recalibrated, {score['raw']} raw"
    assert quoted in readme
