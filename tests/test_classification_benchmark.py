"""The classification benchmark's own code: its summary and a smoke run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import load_benchmark


def test_labels_to_reach_averages_over_seeds():
    bench = load_benchmark("classification")
    records = [
        {"criterion": "bald", "seed": 0, "n_labels": 20, "test_error": 0.3},
        {"criterion": "bald", "seed": 1, "n_labels": 20, "test_error": 0.05},  # mean 0.175
        {"criterion": "bald", "seed": 0, "n_labels": 30, "test_error": 0.12},
        {"criterion": "bald", "seed": 1, "n_labels": 30, "test_error": 0.07},  # mean 0.095
        {"criterion": "random", "seed": 0, "n_labels": 30, "test_error": 0.5},
    ]
    assert bench.labels_to_reach(records, "bald") == 30
    assert bench.labels_to_reach(records, "random") is None


def test_ratio_bootstrap_resamples_seeds_jointly():
    bench = load_benchmark("classification")
    curve = {"bald": (0.3, 0.09, 0.05, 0.04), "random": (0.3, 0.2, 0.12, 0.08)}  # bald 20, random 40 labels
    records = [{"criterion": c, "seed": s, "n_labels": 10 * (k + 1), "test_error": e + 0.001 * s}
               for s in range(3) for c, errs in curve.items() for k, e in enumerate(errs)]  # fmt: skip
    out = bench.ratio_bootstrap(records, n=200)
    assert out["ratio_5_95"] == pytest.approx([0.5, 0.5]) and out["both_reach"] == 1.0
    assert out["goal_met_fraction"] == 1.0
    # one seed whose random run never reaches 10 %: resamples that draw it often push random's mean above it
    records += [{"criterion": c, "seed": 3, "n_labels": 10 * (k + 1), "test_error": 0.5 if c == "random" else 0.01}
                for c in curve for k in range(4)]  # fmt: skip
    out = bench.ratio_bootstrap(records, n=400)
    assert 0.0 < out["both_reach"] < 1.0
    assert bench.ratio_bootstrap(records[:4], n=10) is None  # a single seed: no spread to measure


def test_active_learning_keys_of_the_first_grid_are_unchanged_and_new_models_get_their_own():
    bench = load_benchmark("classification")
    # the state file's units were computed under these keys before the widths and activation were options
    old = "active/bald/seed=3/lr=0.01/64-20-10/members=8/steps=1000/power/precision=0.03/max=300/val"
    assert bench._al_key("bald", 3, bench.ALConfig(8, 1000, "power", 0.03), ("val",)) == old
    wide = bench._al_key("bald", 3, bench.ALConfig(8, 1000, "power", 0.03, "64-50-10"), ("val",))
    relu = bench._al_key("bald", 3, bench.ALConfig(8, 1000, "power", 0.03, "64-50-10", "relu"), ("val",))
    assert len({old, wide, relu}) == 3 and "/64-50-10/relu/" in relu
    row = {**bench.ALConfig(8, 1000, "power", 0.03, "64-50-10", "relu")._asdict(), "ratio": 0.8}
    assert bench._config_of(row) == bench.ALConfig(8, 1000, "power", 0.03, "64-50-10", "relu")
    assert bench._random_base(bench.ALConfig(8, 1000, "power", 0.03, "64-50-10")).rule == "top"


def test_ece_of_rows_matches_the_library_ece():
    from sigmabnn.evaluate.classification import ece

    bench = load_benchmark("classification")
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(10, 0.3), size=400)
    y = rng.integers(0, 10, 400)
    conf, correct = p.max(axis=1), (p.argmax(axis=1) == y).astype(float)
    assert bench.ece_of_rows(conf, correct) == pytest.approx(ece(p, y), rel=1e-12)


def test_noise_pairs_the_rows_and_measures_ece_spread():
    bench = load_benchmark("classification")
    rng = np.random.default_rng(1)
    n = 300
    base_nll = rng.exponential(0.1, n)
    conf = rng.uniform(0.6, 1.0, n)

    def rows(nll):
        return {"nll": nll.tolist(), "conf": conf.tolist(), "correct": (rng.random(n) < conf).astype(int).tolist()}

    out = bench.noise({"rows": rows(base_nll + 0.01)}, {"rows": rows(base_nll)})
    # every row differs by exactly 0.01: the paired difference is 0.01 with no spread
    assert out["nll_diff"] == pytest.approx(0.01) and out["nll_diff_se"] == pytest.approx(0.0, abs=1e-12)
    assert 0.0 < out["ece_bootstrap_sd"] < 0.1
    assert out["ece_bootstrap_5_95"][0] <= out["ece_bootstrap_5_95"][1]
    assert 0.0 < out["ece_calibrated_floor_mean"] <= out["ece_calibrated_floor_95"]


def test_workers_sharing_the_state_keep_each_others_units_and_split_the_keys(tmp_path):
    bench = load_benchmark("classification")
    path = tmp_path / "state.json"
    first, second = bench.State(path, (0, 2)), bench.State(path, (1, 2))
    first.put("a", 1)
    second.put("b", 2)  # second never read "a": the write merges it from the file
    first.put("c", 3)
    assert json.loads(path.read_text()) == {"a": 1, "b": 2, "c": 3}
    keys = [f"active/bald/seed={s}" for s in range(40)]
    owners = [[k for k in keys if bench.State(path, (i, 2)).mine(k)] for i in range(2)]
    assert sorted(owners[0] + owners[1]) == sorted(keys) and owners[0] and owners[1]
    assert all(bench.State(path).mine(k) for k in keys)  # no shard: every unit is its own


@pytest.mark.heavy
@pytest.mark.slow
def test_smoke_run_writes_every_record_and_resumes(tmp_path):
    bench = load_benchmark("classification")
    assert bench.main(["--smoke", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "classification.json").read_text())
    active = result["active"]
    assert {r["criterion"] for r in active} == {"bald", "random"}
    assert all(set(r) >= {"criterion", "seed", "n_labels", "test_error"} for r in active)
    assert sorted({r["n_labels"] for r in active}) == [20, 30, 40]
    assert all("val_error" in r for r in active)
    assert {r["method"] for r in result["progress"]} >= {"map", "bbb", "ensemble", "nuts", "chees"}
    (chees,) = [r for r in result["progress"] if r["method"] == "chees"]  # the default classifier fit, one run
    assert chees["chosen"] and chees["draws_per_chain"] == bench.SMOKE["CHEES"]["num_samples"]
    summary = result["summary"]
    assert summary["best_bnn"] != "map" and summary["noise"]["nll_diff_se"] >= 0.0
    for final in summary["final"].values():  # the scores use the temperature api.fit kept (T = 1: the raw scores)
        assert final["temperature_kept"] == (final["temperature"] != 1.0)
        assert final["temperature_kept"] or final["test_nll"] == final["test_nll_raw"]
    assert sum(r["chosen"] for r in summary["pilot"]) == 1
    assert (tmp_path / "classification_progress.png").exists() and (tmp_path / "classification_active.png").exists()
    assert all(final["temperature_map"] == "pooled" for final in summary["final"].values())
    state = (tmp_path / "classification_state.json").read_text()
    assert bench.main(["--smoke", "--out", str(tmp_path)]) == 0  # resumed: nothing is refitted
    assert (tmp_path / "classification_state.json").read_text() == state
    units = json.loads(state)
    key = next(k for k in units if k.startswith("progress/map/"))
    del units[key]["temperature_map"]  # a unit scored before the map was stored is fitted again
    (tmp_path / "classification_state.json").write_text(json.dumps(units))
    assert bench.main(["--smoke", "--out", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "classification_state.json").read_text())
    assert again[key]["temperature_map"] == "pooled"
    assert all(again[k] == v for k, v in units.items() if k != key)


def test_the_readme_quotes_the_committed_default_classifier_run():
    """The README's numbers for the default (ChEES) classifier on the digits are the committed run's."""
    root = Path(__file__).resolve().parents[1]
    final = json.loads((root / "benchmarks" / "results" / "classification.json").read_text())["summary"]["final"]
    readme = " ".join((root / "README.md").read_text().split())
    nll = {m: f"{final[m]['val_nll_raw']:.4f}" for m in ("chees", "ensemble", "nuts")}
    quoted = f"raw NLL {nll['chees']}, against the deep ensemble's {nll['ensemble']} and NUTS's {nll['nuts']}"
    assert quoted in readme
    assert f"its pooled temperature (T = {final['chees']['temperature']:.2f}) sharpens" in readme
    assert min(final, key=lambda m: final[m]["val_nll_raw"]) == "ensemble"


def test_warm_active_learning_refits_bald_from_the_last_members_and_random_from_scratch():
    bench = load_benchmark("classification")
    cold = bench.ALConfig(8, 1000, "power", 0.03, "64-50-10")
    warm = cold._replace(warm=True)
    assert bench._al_key("bald", 3, cold, ("val",)) != bench._al_key("bald", 3, warm, ("val",))
    assert "/warm" in bench._al_key("bald", 3, warm, ("val",))
    # random is the usual retraining under either, so its units are shared with the cold configuration's
    assert bench._al_key("random", 3, bench._random_base(warm), ("val",)) == bench._al_key(
        "random", 3, bench._random_base(cold), ("val",)
    )
    assert bench._criterion_config("random", warm) == cold and bench._criterion_config("bald", warm) == warm
    assert bench._config_of({k: v for k, v in cold._asdict().items() if k != "warm"}) == cold  # older rows


def test_warm_refits_continue_from_the_given_members():
    import jax
    import numpy as np

    from sigmabnn.model.build import build_bnn
    from sigmabnn.model.likelihoods import Categorical

    bench = load_benchmark("classification")
    bnn = build_bnn(Categorical(3), "2-4-3", ["a", "b"], "tanh", "float64")
    init, train, probs = bench._al_functions(bnn, 2, 50, 0.01, 1.0)
    rng = np.random.default_rng(0)
    x, y, mask = rng.normal(size=(12, 2)), rng.integers(0, 3, 12).astype(np.int32), np.ones(12)
    start = init(jax.random.key(0))
    assert not np.allclose(init(jax.random.key(1)), start)  # fresh members differ by key

    def fit_ll(positions):  # mean log-likelihood of the labelled rows under each member
        p = np.asarray(probs(positions, x))
        return np.log(p[:, np.arange(12), y]).mean(axis=1)

    once = train(start, x, y, mask)
    twice = train(once, x, y, mask)  # a warm refit continues from the given members
    assert np.all(fit_ll(start) < fit_ll(once)) and np.all(fit_ll(once) < fit_ll(twice))
