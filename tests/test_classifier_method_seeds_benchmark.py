"""The classifier-default benchmark's own code (benchmarks/classifier_method_seeds.py): the pre-set rule over
paired splits, and one resumable, sharded run of a cheap stand-in for the fits."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("classifier_method_seeds")


def _records(nll_gap: float, error_gap: float, seeds: int = 10, noise: float = 0.002) -> list[dict]:
    rng = np.random.default_rng(0)
    out = []
    for s in range(seeds):
        base = {"nll": 0.2 + rng.normal(0, 0.02), "error": 0.05 + rng.normal(0, 0.005), "ece": 0.03, "seconds": 100.0}
        ens = {"nll": base["nll"] + nll_gap + rng.normal(0, noise), "ece": 0.02, "seconds": 5.0,
               "error": base["error"] + error_gap + rng.normal(0, noise)}  # fmt: skip
        out += [{"method": "chees", "seed": s, **base}, {"method": "ensemble", "seed": s, **ens}]
    return out


def test_the_ensemble_wins_only_ahead_on_nll_by_two_paired_se_and_not_behind_on_error(bench):
    assert bench.summarise(_records(-0.02, 0.0))["chosen"] == "ensemble"
    assert bench.summarise(_records(-0.0005, 0.0))["chosen"] == "chees"  # within noise
    worse_error = bench.summarise(_records(-0.02, 0.01))
    assert worse_error["ensemble_verdict"]["error"] == "behind" and worse_error["chosen"] == "chees"
    s = bench.summarise(_records(-0.02, 0.0)[:-1])  # a seed with one method only is left out of the pairs
    assert len(s["seeds"]) == 9
    assert s["ensemble_minus_chees"]["seconds"]["mean"] == pytest.approx(-95.0)


def test_a_sharded_run_resumes_and_writes_the_page(bench, tmp_path, monkeypatch):
    calls = []

    def fake(digits, method, seed):
        calls.append((method, seed))
        return {"method": method, "seed": seed, "seconds": 1.0, "nll": 0.1 if method == "ensemble" else 0.2,
                "error": 0.05 + 0.001 * seed, "ece": 0.02, "n_score": 360, "temperature": 0.9}  # fmt: skip

    monkeypatch.setattr(bench, "fit_once", fake)
    monkeypatch.setattr(bench, "load_digits", lambda: None)
    work, out = tmp_path / "work", tmp_path / "out"
    args = ["--workdir", str(work), "--seeds", "1", "2", "3", "--out", str(out)]
    assert bench.main([*args, "--shard", "0/2"]) == 0 and not out.exists()
    assert bench.main([*args, "--shard", "1/2"]) == 0 and len(calls) == 6
    assert bench.main(args) == 0 and len(calls) == 6  # every fit on disk: nothing refitted
    data = json.loads((out / "classifier_method_seeds.json").read_text())
    assert data["summary"]["chosen"] == "ensemble" and data["summary"]["seeds"] == [1, 2, 3]
    assert "**Chosen: `ensemble`**" in (out / "classifier_method_seeds.md").read_text()
    assert bench.main([*args, "--shard", "2/2"]) == 2


def test_the_readme_quotes_the_committed_run():
    """The README's numbers for the default classifier method are those of the committed run."""
    root = Path(__file__).resolve().parents[1]
    s = json.loads((root / "benchmarks" / "results" / "classifier_method_seeds.json").read_text())["summary"]
    readme = " ".join((root / "README.md").read_text().split())
    m, d = s["means"], s["ensemble_minus_chees"]["nll"]
    assert (
        f"mean NLL of {m['chees']['nll']:.4f} on fresh rows against the deep ensemble's {m['ensemble']['nll']:.4f}"
        in readme
    )
    assert f"(ensemble minus ChEES {d['mean']:+.4f}, SE {d['se']:.4f})" in readme
    assert f"in {m['chees']['seconds']:.0f} s per fit against the ensemble's {m['ensemble']['seconds']:.0f} s" in readme
    assert s["chosen"] == "chees" and len(s["seeds"]) == 20
