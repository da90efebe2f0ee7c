"""The candidates-over-seeds benchmark's own code (benchmarks/candidate_seeds.py): the candidates' options,
the per-table summary (candidate minus default, paired by seed), the pooled difference and the decision
rule, and a resumable run whose default cells are shared by the candidates (cells faked: no fit)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("candidate_seeds")


def _rec(table, seed, sampler, rmse, ll, seconds=20.0):
    return {
        "table": table, "seed": seed, "sampler": sampler, "status": "ok", "rmse": rmse, "test_ll": ll,
        "row_ll": [ll - 0.1, ll + 0.1], "n_train": 300, "n_score": 2, "coverage_68": 0.7, "coverage_95": 0.95,
        "num_features": 6,
        "seconds": seconds,
    }  # fmt: skip


def test_each_candidate_is_the_default_with_one_change(bench):
    assert bench.defaults.fit_kwargs("warmup-1000", 6, 300, log_target=False) == {"num_warmup": 1000}
    noise = bench.defaults.fit_kwargs("noise-rate-0.1", 6, 300, log_target=False)
    assert noise == {"hyperprior": {"noise_rate": 0.1}}  # no dtype or split forced: the library's default otherwise
    assert bench.defaults.fit_kwargs("sigmabnn", 6, 300, log_target=False) == {}


def test_differences_are_candidate_minus_default_paired_by_seed(bench):
    recs = []
    for seed, ll_c in enumerate([0.50, 0.52, 0.54]):
        recs += [
            _rec("smooth6d-300", seed, "sigmabnn", 0.15, 0.45, seconds=20.0),
            _rec("smooth6d-300", seed, "warmup-1000", 0.14, ll_c, seconds=40.0 + seed),
            _rec("smooth6d-300", seed, "noise-rate-0.1", 0.16, 0.45, seconds=20.0),
        ]
    seeds, (row,) = bench.summarise(recs, "warmup-1000")
    assert len(seeds) == 3 and row["ll_difference"] == pytest.approx(0.07) and row["ll_verdict"] == "ahead"
    assert row["rmse_difference"] == pytest.approx(-0.01) and row["rmse_verdict"] == "ahead"
    assert row["time_ratio"] == pytest.approx(41.0 / 20.0) and row["max_seconds_candidate"] == 42.0
    assert row["time_limit"] == 60.0  # 300 rows, 6 inputs: the 60 s goal
    _, (other,) = bench.summarise(recs, "noise-rate-0.1")
    assert other["rmse_difference"] == pytest.approx(0.01) and other["rmse_verdict"] == "behind"


def test_pooled_difference_and_decision(bench):
    def table(ll, se, ll_v="ahead", rmse_v="within noise"):
        return {"ll_difference": ll, "ll_se": se, "ll_verdict": ll_v, "rmse_verdict": rmse_v}

    ahead = [table(0.10, 0.03), table(0.02, 0.04)]
    mean, se = bench.pooled(ahead)
    assert mean == pytest.approx(0.06) and se == pytest.approx(math.sqrt(0.03**2 + 0.04**2) / 2)
    assert bench.decide(ahead, expected=2) == "worth making the default"
    assert bench.decide(ahead, expected=3) == "incomplete"  # a table not yet run
    assert bench.decide([table(0.10, 0.03), table(0.02, 0.04, rmse_v="behind")], expected=2) == "no"
    assert bench.decide([table(0.01, 0.03), table(0.0, 0.04)], expected=2) == "no"  # within 2 SE pooled
    assert bench.decide([table(0.1, None)], expected=1) == "incomplete"  # one seed: no SE


def test_a_run_resumes_and_shares_the_default_cells(bench, tmp_path, monkeypatch):
    calls = []

    def fake(spec, timeout, log, script):
        calls.append((spec["table"], spec["seed"], spec["sampler"]))
        assert script == bench.SCRIPT
        return _rec(spec["table"], spec["seed"], spec["sampler"], 0.1, 0.5)

    monkeypatch.setattr(bench.defaults, "run_subprocess", fake)
    out = tmp_path / "c.json"
    args = ["--tables", "lin2d-120", "--seeds", "0,1", "--out", str(out)]
    assert bench.main([*args, "--candidates", "warmup-1000"]) == 0
    assert calls == [("lin2d-120", s, m) for s in (0, 1) for m in ("sigmabnn", "warmup-1000")]
    assert bench.main([*args, "--candidates", "noise-rate-0.1"]) == 0  # the default's cells are not rerun
    assert calls[4:] == [("lin2d-120", s, "noise-rate-0.1") for s in (0, 1)]
    page = out.with_suffix(".md").read_text()
    assert page.count("| lin2d-120 | 2 |") == 2 and "noise-rate-0.1 against the default" in page
    with pytest.raises(SystemExit, match="unknown candidate"):
        bench.main([*args, "--candidates", "nope"])


def test_a_candidate_over_the_time_goal_is_not_made_the_default(bench):
    def table(name, seconds, limit=60.0):
        return {"table": name, "ll_difference": 0.1, "ll_se": 0.01, "ll_verdict": "ahead",
                "rmse_verdict": "within noise", "seconds_candidate": seconds, "time_limit": limit}  # fmt: skip

    fast = [table("a", 30.0) for _ in range(6)]
    assert bench.decision_text(fast, "warmup-1000") == "**worth making the default**" and bench.over_time(fast) == []
    slow = [*fast[:5], table("energy", 75.0)]
    assert bench.over_time(slow) == ["energy"]
    assert "over the time goal" in bench.decision_text(slow, "warmup-1000")
    assert "energy" in bench.decision_text(slow, "warmup-1000")


def test_a_candidate_of_some_tables_is_judged_on_those_alone(bench):
    """``ard-gaussian-3-inputs`` changes only the tables of three or more inputs: complete with those four."""

    def table(name):
        return {"table": name, "ll_difference": 0.1, "ll_se": 0.01, "ll_verdict": "ahead",
                "rmse_verdict": "within noise", "seconds_candidate": 30.0, "time_limit": 60.0}  # fmt: skip

    four = [table(t) for t in bench.CANDIDATE_TABLES["ard-gaussian-3-inputs"]]
    assert set(bench.CANDIDATE_TABLES["ard-gaussian-3-inputs"]) < set(bench.TABLES)
    assert bench.decision_text(four, "ard-gaussian-3-inputs") == "**worth making the default**"
    assert bench.decision_text(four, "ard-gaussian") == "**incomplete**"  # six tables for the others
    assert bench.judged_tables(["ard-gaussian-3-inputs"]) == bench.CANDIDATE_TABLES["ard-gaussian-3-inputs"]
    assert bench.judged_tables(["ard-gaussian-3-inputs", "ard"]) == bench.TABLES


def test_a_run_of_a_candidate_of_some_tables_runs_those_by_default(bench, tmp_path, monkeypatch):
    calls = []

    def fake(spec, timeout, log, script):
        calls.append(spec["table"])
        return _rec(spec["table"], spec["seed"], spec["sampler"], 0.1, 0.5)

    monkeypatch.setattr(bench.defaults, "run_subprocess", fake)
    out = tmp_path / "c.json"
    assert bench.main(["--seeds", "0", "--out", str(out), "--candidates", "ard-gaussian-3-inputs"]) == 0
    assert sorted(set(calls)) == sorted(bench.CANDIDATE_TABLES["ard-gaussian-3-inputs"]) and len(calls) == 8


def test_the_readme_quotes_the_committed_fresh_warmup_run(bench):
    """The README's energy gain of ``warmup-1000-fresh`` and the decision are those of the committed JSON."""

    data = bench.defaults.load_results(bench.OUT)
    _, tables = bench.summarise(data["records"], "warmup-1000-fresh")
    energy = next(t for t in tables if t["table"] == "energy")
    sin1d = next(t for t in tables if t["table"] == "sin1d-100")
    assert bench.decide(tables) == "no" and sin1d["ll_verdict"] == "behind"
    readme = " ".join((Path(bench.SCRIPT).parents[1] / "README.md").read_text().split())
    assert f"energy ({energy['ll_difference']:+.4f}, SE {energy['ll_se']:.4f})" in readme


def test_the_warmup_candidates_gain_where_the_noise_model_is_right_and_lose_where_it_is_not(bench):
    """The docs' reading of the committed warm-up runs: with the heteroscedastic model chosen, a longer
    warm-up raised the LL on every training set of steep6d-300 and energy and lowered it on every one of
    smooth6d-300 (homoscedastic noise); ``warmup-600-to-512`` did not pass the rule."""
    data = bench.defaults.load_results(bench.OUT)
    recs = {(r["table"], r["seed"], r["sampler"]): r for r in data["records"]}
    signs = {"steep6d-300": [], "energy": [], "smooth6d-300": []}
    for (table, seed, sampler), rec in recs.items():
        base = recs.get((table, seed, bench.DEFAULT))
        if sampler not in ("warmup-1000", "warmup-1000-fresh", "warmup-600-to-512") or table not in signs:
            continue
        if base is not None and rec["likelihood"] == base["likelihood"] == "hetero_student_t":
            signs[table].append(rec["test_ll"] - base["test_ll"])
    assert len(signs["steep6d-300"]) == 15 and len(signs["energy"]) == 15 and len(signs["smooth6d-300"]) == 5
    assert min(signs["steep6d-300"] + signs["energy"]) > 0 > max(signs["smooth6d-300"])
    _, tables = bench.summarise(data["records"], "warmup-600-to-512")
    assert bench.decide(tables) == "no"


def test_the_running_acceptance_candidate_is_ahead_pooled_but_behind_on_one_table(bench):
    """The docstring's outcome of ``chees-running-acceptance``: pooled LL beyond 2 SE, yet behind on sin1d-100,
    so the rule keeps the default."""
    data = bench.defaults.load_results(bench.OUT)
    _, tables = bench.summarise(data["records"], "chees-running-acceptance")
    mean, se = bench.pooled(tables)
    sin1d = next(t for t in tables if t["table"] == "sin1d-100")
    assert mean > bench.Z * se and sin1d["ll_verdict"] == "behind" and bench.decide(tables) == "no"


def test_the_scale_head_prior_candidate_changes_only_heteroscedastic_cells_and_loses_where_the_noise_is(bench):
    """The docstring's outcome of ``learn-prior-scale-head``: cells where the Gaussian is chosen score the same
    (their precisions are sampled in both arms); it gained on smooth6d-300's one heteroscedastic cell, lost on
    every cell of steep6d-300 and energy, and is behind on steep6d-300, so the rule keeps the default."""
    data = bench.defaults.load_results(bench.OUT)
    recs = {(r["table"], r["seed"], r["sampler"]): r for r in data["records"]}
    changed = {}
    for (table, seed, sampler), rec in recs.items():
        if sampler != "learn-prior-scale-head":
            continue
        base = recs[(table, seed, bench.DEFAULT)]
        if base["likelihood"] == "gaussian":
            assert rec["test_ll"] == base["test_ll"], (table, seed)
        else:
            changed[(table, seed)] = rec["test_ll"] - base["test_ll"]
    assert changed[("smooth6d-300", 33)] > 0.2
    losses = [d for (table, _), d in changed.items() if table in ("steep6d-300", "energy")]
    assert len(losses) == 10 and max(losses) < 0
    _, tables = bench.summarise(data["records"], "learn-prior-scale-head")
    steep = next(t for t in tables if t["table"] == "steep6d-300")
    assert steep["ll_verdict"] == "behind" and bench.decide(tables) == "no"


def test_the_ard_candidates_are_each_behind_on_a_table(bench):
    """The docstring's outcome of the ARD candidates: ``ard-gaussian`` ahead on bostonHousing and behind on
    lin2d-120; ``ard`` ahead pooled beyond 2 SE but behind on lin2d-120 and steep6d-300; neither passes."""
    data = bench.defaults.load_results(bench.OUT)
    verdicts = {}
    for candidate in ("ard-gaussian", "ard"):
        _, tables = bench.summarise(data["records"], candidate)
        assert bench.decide(tables) == "no"
        verdicts[candidate] = {t["table"]: t["ll_verdict"] for t in tables}
        verdicts[candidate]["pooled"] = bench.pooled(tables)
    assert verdicts["ard-gaussian"]["bostonHousing"] == "ahead" and verdicts["ard-gaussian"]["lin2d-120"] == "behind"
    assert verdicts["ard"]["steep6d-300"] == "behind" and verdicts["ard"]["lin2d-120"] == "behind"
    mean, se = verdicts["ard"]["pooled"]
    assert mean > bench.Z * se
    _, tables = bench.summarise(data["records"], "ard-gaussian")
    boston = next(t for t in tables if t["table"] == "bostonHousing")
    readme = " ".join((Path(bench.SCRIPT).parents[1] / "README.md").read_text().split())
    assert f"bostonHousing ({boston['ll_difference']:+.4f}, SE {boston['ll_se']:.4f})" in readme


def test_the_long_map_candidate_is_no_and_keeps_the_same_starts_where_they_came_early(bench):
    """The docstring's outcome of ``map-no-early-stop``: not passed; energy ahead on two of three training sets,
    steep6d-300 behind on all three; the Gaussian cells of smooth6d-300 whose noise choice did not change score
    within 0.001 nats of the default's (nearly the same kept starts); every cell slower."""
    data = bench.defaults.load_results(bench.OUT)
    seeds, tables = bench.summarise(data["records"], "map-no-early-stop")
    assert bench.decide(tables) == "no" and len(tables) == 6 and all(t["seeds"] == 3 for t in tables)
    by = {t["table"]: t for t in tables}
    energy = [r["ll_difference"] for r in seeds if r["table"] == "energy"]
    steep = [r["ll_difference"] for r in seeds if r["table"] == "steep6d-300"]
    assert sum(d > 0 for d in energy) == 2 and all(d < 0 for d in steep)
    assert by["energy"]["ll_verdict"] == by["steep6d-300"]["ll_verdict"] == "within noise"
    recs = {bench.numpyro_seeds.cell_key(r): r for r in data["records"]}
    for seed in (41, 42):
        cand, base = recs[("smooth6d-300", seed, "map-no-early-stop")], recs[("smooth6d-300", seed, "sigmabnn")]
        assert cand["likelihood"] == base["likelihood"] == "gaussian"
        assert abs(cand["test_ll"] - base["test_ll"]) < 0.001
    assert all(t["time_ratio"] > 1.4 for t in tables)


def test_the_initial_buffer_candidate_passed_the_rule_at_the_defaults_time(bench):
    """The docstring's outcome of ``initial-buffer-25``: worth making the default; pooled +0.0144 (SE 0.0046);
    ahead on sin1d-100, steep6d-300 and energy, behind on none; median time ratios 0.90 to 1.10; and the
    library's ChEES default now starts its first slow window after 25 iterations."""
    from sigmabnn.train.mcmc import CHEES_DEFAULTS

    data = bench.defaults.load_results(bench.OUT)
    _, tables = bench.summarise(data["records"], "initial-buffer-25")
    assert bench.decide(tables) == "worth making the default" and not bench.over_time(tables)
    assert all(t["seeds"] == 5 for t in tables) and len(tables) == 6
    mean, se = bench.pooled(tables)
    assert round(mean, 4) == 0.0144 and round(se, 4) == 0.0046
    by = {t["table"]: t for t in tables}
    ahead = {t for t, r in by.items() if r["ll_verdict"] == "ahead"}
    assert ahead == {"sin1d-100", "steep6d-300", "energy"}
    assert round(by["steep6d-300"]["ll_difference"], 4) == 0.0227 and round(by["energy"]["ll_difference"], 4) == 0.0235
    assert by["sin1d-100"]["rmse_verdict"] == by["steep6d-300"]["rmse_verdict"] == "ahead"
    assert 0.895 <= min(t["time_ratio"] for t in tables) and max(t["time_ratio"] for t in tables) < 1.105
    assert CHEES_DEFAULTS["initial_buffer"] == 25


def test_the_readme_quotes_the_committed_initial_buffer_run(bench):
    data = bench.defaults.load_results(bench.OUT)
    _, tables = bench.summarise(data["records"], "initial-buffer-25")
    energy = next(t for t in tables if t["table"] == "energy")
    mean, se = bench.pooled(tables)
    readme = " ".join((Path(bench.SCRIPT).parents[1] / "README.md").read_text().split())
    assert f"energy ({energy['ll_difference']:+.4f}, SE {energy['ll_se']:.4f})" in readme
    assert f"pooled {mean:+.4f}, SE {se:.4f}" in readme
