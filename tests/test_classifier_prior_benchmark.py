"""The classifier-prior benchmark's own code (benchmarks/classifier_prior.py): the paired summary and its pre-set
choice, and one small resumable run."""

from __future__ import annotations

import json

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("classifier_prior")


def _rec(variant: str, seed: int, nll: float) -> dict:
    return {"variant": variant, "seed": seed, "nll": nll, "ece": 0.05, "error": 0.04, "nll_raw": nll + 0.01,
            "ece_raw": 0.06, "temperature": 0.9}  # fmt: skip


def test_the_choice_pairs_the_splits_and_keeps_the_fixed_prior_within_the_tie(bench):
    better = [_rec("fixed", s, 0.20 + 0.01 * s) for s in range(4)] + [
        _rec("learned", s, 0.18 + 0.01 * s) for s in range(4)
    ]
    summary = bench.summarise(better)
    assert summary["chosen"] == "learned" and summary["nll_learned_minus_fixed"]["seeds"] == 4
    assert summary["nll_learned_minus_fixed"]["mean"] == pytest.approx(-0.02)
    assert summary["nll_learned_minus_fixed"]["se"] == pytest.approx(0.0, abs=1e-12)  # the same gain on each split
    tie = [_rec("fixed", 0, 0.2000), _rec("learned", 0, 0.1995), _rec("learned", 1, 0.10)]  # seed 1 unpaired
    assert bench.summarise(tie)["chosen"] == "fixed" and bench.summarise(tie)["nll_learned_minus_fixed"]["seeds"] == 1


@pytest.mark.heavy
def test_a_small_run_records_both_priors_and_resumes(bench, tmp_path):
    settings = json.dumps({"num_chains": 1, "num_warmup": 10, "num_samples": 5, "max_tree_depth": 3})
    args = ["--workdir", str(tmp_path / "w"), "--seeds", "1", "--settings", settings, "--out", str(tmp_path)]
    assert bench.main(args) == 0
    data = json.loads((tmp_path / "classifier_prior.json").read_text())
    assert sorted(r["variant"] for r in data["records"]) == ["fixed", "learned"]
    assert all(0.0 <= r["error"] <= 1.0 and r["nll"] > 0 for r in data["records"])
    stamp = (tmp_path / "w" / "learned-0.json").stat().st_mtime_ns
    assert bench.main(args) == 0 and (tmp_path / "w" / "learned-0.json").stat().st_mtime_ns == stamp
    assert "**Chosen: `" in (tmp_path / "classifier_prior.md").read_text()
    assert bench.main([*args, "--shard", "x"]) == 2
