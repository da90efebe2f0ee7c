"""The active-learning benchmark's own code (benchmarks/active_learning.py): the smoke run, its summary and resume."""

from __future__ import annotations

import json

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("active_learning")


def _record(criterion, seed, n, err, cov95=95.0):
    return {"process": "p", "criterion": criterion, "seed": seed, "n_train": n, "test_median_rel_err": err,
            "test_r2_log": 0.99, "coverage_68": 68.0, "coverage_95": cov95, "seconds": 1.0}  # fmt: skip


def test_summary_finds_where_a_criterion_reaches_random_at_its_largest_size(bench):
    runs = [_record("random", s, n, e) for s in (0, 1) for n, e in ((500, 9.0), (1000, 6.0), (4000, 3.0))]
    runs += [_record("bald", s, n, e) for s, off in ((0, -0.1), (1, 0.1)) for n, e in ((500, 9.0), (1000, 5 + off),
                                                                                      (2000, 3.0 + off))]  # fmt: skip
    runs += [_record("variance", 0, n, e, cov95=90.0) for n, e in ((500, 9.0), (2000, 2.0))]
    summary = {s["criterion"]: s for s in bench.summarise(runs, pilot={})}
    assert summary["random"]["random_err_at_n_max"] == 3.0 and summary["random"]["n_to_reach"] == 4000
    assert summary["bald"]["n_to_reach"] == 2000 and summary["bald"]["goal_met"]  # mean 3.0 <= 3.0
    assert summary["bald"]["paired_at_2000"] == "1/2"  # seed 0: 2.9 <= 3.0; seed 1: 3.1 > 3.0
    assert summary["variance"]["n_to_reach"] == 2000 and not summary["variance"]["goal_met"]  # 95 % cover 90


def test_summary_leaves_the_goal_unchecked_where_random_does_not_improve(bench):
    runs = [_record("random", 0, n, e) for n, e in ((500, 1.0), (4000, 1.1))]
    runs += [_record("epig", 0, n, e) for n, e in ((500, 1.0), (2000, 0.9))]
    summary = {s["criterion"]: s for s in bench.summarise(runs, pilot={})}
    assert summary["epig"]["n_to_reach"] == 500 and summary["epig"]["goal_met"] is None
    assert summary["epig"]["random_err_at_start"] == 1.0


def test_summary_counts_only_the_arms_with_the_pilots_refits(bench):
    def arm(criterion, refits, curve):
        return [{**_record(criterion, 0, n, e), "refits": refits} for n, e in curve]

    runs = arm("random", "cold", ((500, 9.0), (4000, 3.0))) + arm("random", "warm", ((500, 9.0), (4000, 6.0)))
    runs += arm("epig", "warm", ((500, 9.0), (2000, 2.5))) + arm("epig", "cold", ((500, 9.0), (2000, 5.0)))
    runs += arm("bald", "warm", ((500, 9.0), (2000, 2.0)))
    pilot = {"chosen_start": {"p": False}, "chosen_criterion_start": {"p|epig": True}}
    summary = {(s["criterion"], s["refits"]): s for s in bench.summarise(runs, pilot=pilot)}
    assert {s["random_err_at_n_max"] for s in summary.values()} == {3.0}  # random's reference: its cold arm
    assert summary[("epig", "warm")]["pilot_choice"] and summary[("epig", "warm")]["goal_met"]
    assert not summary[("epig", "cold")]["pilot_choice"] and summary[("epig", "cold")]["goal_met"] is None
    # bald has no choice of its own: the random loop's (cold) applies, so its warm arm is not counted
    assert summary[("bald", "warm")]["n_to_reach"] == 2000 and summary[("bald", "warm")]["goal_met"] is None


def test_records_written_before_the_refits_field_take_their_loops(bench):
    old = [{**_record("epig", 0, 500, 1.0), "warm_start": False}, {**_record("epig", 0, 750, 1.0), "warm_start": True},
           {**_record("bald", 0, 500, 1.0), "warm_start": False}]  # fmt: skip
    assert [r["refits"] for r in bench.with_refits(old)] == ["warm", "warm", "cold"]


@pytest.mark.heavy
def test_smoke_run_writes_records_and_resumes(bench, tmp_path):
    out = tmp_path / "al.json"
    args = ["--smoke", "--workdir", str(tmp_path / "w"), "--out", str(out)]
    assert bench.main(args) == 0
    runs = json.loads(out.read_text())["runs"]
    assert [(r["criterion"], r["n_train"]) for r in runs] == [("random", 200), ("random", 250), ("bald", 200),
                                                              ("bald", 250)]  # fmt: skip
    for key in ("process", "criterion", "seed", "n_train", "test_median_rel_err", "test_r2_log", "coverage_68",
                "coverage_95", "seconds"):  # fmt: skip
        assert all(key in r for r in runs)
    # the same first round (the same 200 random rows and seed) for both criteria
    assert runs[0]["test_median_rel_err"] == runs[2]["test_median_rel_err"]
    assert out.with_suffix(".md").exists() and out.with_suffix(".png").exists()
    # finished runs are kept and not redone
    assert bench.main(args) == 0
    assert json.loads(out.read_text())["runs"] == runs


def test_pilot_chooses_the_smallest_budget_near_the_best_val_error():
    pilot = load_benchmark("active_learning_pilot")

    def rec(process, steps, n, err):
        return {"process": process, "steps": steps, "n_train": n, "val_median_rel_err": err}

    records = [rec("a", 1500, 4000, 0.60), rec("a", 4000, 4000, 0.30), rec("a", 8000, 4000, 0.29),
               rec("a", 1500, 500, 0.2), rec("b", 1500, 4000, 1.0), rec("b", 4000, 4000, 0.95)]  # fmt: skip
    assert pilot.choose(records) == {"a": 4000, "b": 1500}


def _loop(process, criterion, warm, seed, err):
    """A pilot loop's fit record (the fields the choices read)."""
    return {"process": process, "criterion": criterion, "warm_start": warm, "seed": seed, "n_train": 500,
            "val_median_rel_err": err}  # fmt: skip


def test_criterion_start_is_chosen_per_process_and_criterion_over_seeds_run_with_both():
    pilot = load_benchmark("active_learning_pilot")
    rec = _loop

    loops = [rec("a", "epig", True, 0, 1.0), rec("a", "epig", False, 0, 2.0),
             rec("a", "bald", True, 0, 3.0), rec("a", "bald", False, 0, 2.0),
             # seed 1 ran warm only: not counted, although it would turn epig's choice
             rec("a", "epig", True, 1, 9.0),
             rec("b", "epig", True, 0, 1.0)]  # fmt: skip
    assert pilot.choose_criterion_start(loops) == {"a|epig": True, "a|bald": False}


def test_the_readme_quotes_the_committed_active_learning_summary(bench):
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    summary = json.loads((Path(bench.RESULTS)).read_text())["summary"]
    counted = {(s["process"], s["criterion"]): s for s in summary if s["pilot_choice"]}
    chi, mixed = counted[("1000022,1000022", "epig")], counted[("1000022,1000024", "epig")]
    assert chi["goal_met"] and mixed["goal_met"] and mixed["refits"] == chi["refits"] == "warm"
    assert f"with {chi['n_to_reach']:,} points on chi1^0 chi1^0 and {mixed['n_to_reach']:,} on chi1^0 chi1^+" in readme
    assert not any(s["goal_met"] for (p, _), s in counted.items() if p == "1000024,-1000037")
    rand = counted[("1000022,1000024", "random")]
    assert f"({mixed['r2_log_at_2000']:.4f} against {rand['r2_log_at_2000']:.4f} on chi1^0 chi1^+" in readme


def test_criteria_are_compared_at_each_process_refits_on_common_seeds():
    pilot = load_benchmark("active_learning_pilot")
    rec = _loop

    loops = [rec("a", "epig", True, 0, 1.0), rec("a", "bald", True, 0, 2.0),
             rec("a", "epig", False, 0, 9.0),  # not the process's refits: left out
             rec("a", "bald", True, 1, 0.1),  # a seed epig did not run: left out
             rec("b", "epig", False, 0, 3.0), rec("b", "bald", False, 0, 2.0),
             rec("c", "epig", True, 0, 1.0), rec("c", "bald", True, 0, 1.5)]  # fmt: skip
    out = pilot.compare_criteria(loops, {"a": True, "b": False, "c": True})
    assert out["per_process"]["a"] == {"epig": 1.0, "bald": 2.0}
    assert out["best"] == {"a": "epig", "b": "bald", "c": "epig"} and out["wins"] == {"bald": 1, "epig": 2}
    assert out["default"] == "epig"
    # one win each: the lower mean ratio to the lowest decides
    two = pilot.compare_criteria(loops, {"a": True, "b": False})
    assert two["wins"] == {"bald": 1, "epig": 1} and two["default"] == "epig"  # epig 1.25 vs bald 1.5
