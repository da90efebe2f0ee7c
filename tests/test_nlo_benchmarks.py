"""The all-process benchmark's goal checks and the held-out choice's rule (benchmarks/nlo_all.py, nlo_validation.py)."""

from __future__ import annotations

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def nlo_all():
    return load_benchmark("nlo_all")


@pytest.fixture(scope="module")
def nlo_validation():
    return load_benchmark("nlo_validation")


def test_process_kinds(nlo_all):
    assert nlo_all.kind("1000022,1000023") == "neutralino pair"
    assert nlo_all.kind("1000023,-1000024") == "neutralino-chargino"
    assert nlo_all.kind("1000024,-1000037") == "chargino pair"


def test_shortfalls_say_by_how_much(nlo_all):
    assert nlo_all.shortfall("r2_log", 0.9995) == "met"
    assert nlo_all.shortfall("r2_log", 0.9974) == "0.0016 below"
    assert nlo_all.shortfall("median_rel_err", 0.0074) == "0.24 pp over"
    assert nlo_all.shortfall("coverage_68", 0.6577) == "2.5 pp under"
    assert nlo_all.shortfall("coverage_68", 0.70) == "met"
    assert nlo_all.shortfall("coverage_997", 0.9966) == "met"
    assert nlo_all.shortfall("coverage_997", 0.985) == "0.7 pp under"
    assert nlo_all.shortfall("train_seconds", 609.0) == "309 s over"


def _record(candidate, process, nll, seconds, load, cores=2):
    return {"candidate": candidate, "process": process, "nll_log10": nll, "train_seconds": seconds,
            "load_average": load, "cpu_affinity": list(range(cores)), "grad_evals": 1000}  # fmt: skip


def test_choice_by_nll_and_only_quiet_timings_count_against_the_budget(nlo_validation):
    records = [
        _record("short", "a", -3.0, 500.0, 6.0),  # loaded: over 300 s says nothing
        _record("short", "b", -4.0, 100.0, 6.0),
        _record("many_short", "a", -3.2, 900.0, 1.0),  # quiet and over budget: excluded
        _record("many_short", "b", -4.1, 200.0, 1.0),
    ]
    choice = nlo_validation.choose(records)
    assert choice["chosen"] == "short" and choice["within_budget"]
    by = {r["candidate"]: r for r in choice["candidates"]}
    assert by["many_short"]["over_budget"] == ["a"] and by["short"]["over_budget"] == []
    assert by["many_short"]["mean_nll_excess"] == 0.0
    assert by["short"]["mean_nll_excess"] == pytest.approx(0.15)
    records[2]["load_average"] = 6.0  # the same timing under load: no longer counts
    assert nlo_validation.choose(records)["chosen"] == "many_short"
    records[2] |= {"load_average": 1.0, "cpu_affinity": [0]}  # quiet but on one core: not the budget's 2 cores
    assert nlo_validation.choose(records)["chosen"] == "many_short"


def test_a_quiet_two_core_rerun_decides_the_budget(nlo_validation):
    records = [
        _record("short", "a", -3.0, 500.0, 6.0, cores=1),
        _record("many_short", "a", -3.2, 900.0, 6.0, cores=1),
    ]
    records[0]["retimes"] = [{"train_seconds": 90.0, "load_average": 1.4, "cpu_affinity": [0, 1]}]
    records[1]["retimes"] = [{"train_seconds": 340.0, "load_average": 1.9, "cpu_affinity": [0, 1]}]
    choice = nlo_validation.choose(records)
    assert choice["chosen"] == "short"
    by = {r["candidate"]: r for r in choice["candidates"]}
    assert by["many_short"]["worst_quiet_seconds"] == 340.0 and by["short"]["worst_quiet_seconds"] == 90.0
    records[1]["retimes"][0]["train_seconds"] = 290.0  # within the budget: the lower NLL wins
    assert nlo_validation.choose(records)["chosen"] == "many_short"


def test_a_candidate_missing_a_process_is_not_compared(nlo_validation):
    records = [_record("short", "a", -3.0, 100.0, 1.0), _record("short", "b", -4.0, 100.0, 1.0)]
    records.append(_record("many_short", "a", -9.0, 100.0, 1.0))
    assert nlo_validation.choose(records)["chosen"] == "short"


def _train_all_record(process, seconds, load):
    test = {"n": 100, "r2_log": 0.9995, "r2_xsec": 0.99, "rel_err": {"q0.5": 0.004, "q0.99": 0.1},
            "coverage_interval": {"0.6827": 0.68, "0.9545": 0.95, "0.9973": 0.997}}  # fmt: skip
    return {"process": process, "label": process, "n_train": 1000, "metrics": {"test": test},
            "train_seconds": seconds, "grad_evals": 1, "sampler": {"rhat_predictions": 3.0},
            "load_average": load, "modes": "a mixture"}  # fmt: skip


def test_training_times_under_load_are_reported_not_compared(nlo_all):
    rows = [nlo_all.row(_train_all_record("1000022,1000022", 900.0, 6.0)),
            nlo_all.row(_train_all_record("1000022,1000023", 120.0, 1.9))]  # fmt: skip
    text = nlo_all.markdown({"command": "c", "processes_done": 2, "rows": rows})
    line = next(x for x in text.splitlines() if x.startswith("| train_seconds"))
    assert "| 1 of 1 |" in line and line.endswith("| met |")
    assert "above 2.5 (not compared with the goal until rerun on a quiet machine): 1000022,1000022." in text
    rows[1] = nlo_all.row(_train_all_record("1000022,1000023", 400.0, 1.9))
    line = next(x for x in nlo_all.markdown({"command": "c", "processes_done": 2, "rows": rows}).splitlines()
                if x.startswith("| train_seconds"))  # fmt: skip
    assert "| 0 of 1 |" in line and line.endswith("| 100 s over |")


def test_coverage_noise_adds_the_maps_and_the_test_rows_binomial_errors(nlo_all):
    assert nlo_all.coverage_noise(0.5, 100, 100) == pytest.approx((0.25 * 0.02) ** 0.5)
    assert nlo_all.coverage_noise(0.6827, 518, 10**12) == pytest.approx((0.6827 * 0.3173 / 518) ** 0.5)


def test_records_of_an_earlier_configuration_are_called_stale(nlo_all):
    from sigmabnn.io.model_file import to_jsonable
    from sigmabnn.workflows.nlo import recommended_config

    config = to_jsonable(recommended_config("1000022,1000022")._asdict())
    assert nlo_all.stale_fields({"1000022,1000022": config}) == []
    old = config | {"hidden": [20, 21], "num_chains": 99}
    assert nlo_all.stale_fields({"1000022,1000022": old}) == ["hidden", "num_chains"]


def test_worst_rows_page_says_how_far_another_run_is():
    worst = load_benchmark("nlo_worst")
    same = {"r2_log": 0.9975, "nlo_all_r2_log": 0.9975, "median_rel_err": 0.0078, "nlo_all_median_rel_err": 0.0078}
    rerun = {"r2_log": 0.9990, "nlo_all_r2_log": 0.9989, "median_rel_err": 0.0045, "nlo_all_median_rel_err": 0.0042}
    assert "at most 0.0000" in worst._runs_sentence([same]) and "at most 0.00 pp" in worst._runs_sentence([same])
    text = worst._runs_sentence([same, rerun])
    assert "2 processes" in text and "at most 0.0001" in text and "at most 0.03 pp" in text
    assert "No `nlo_all.json` row" in worst._runs_sentence([{"r2_log": 0.99, "nlo_all_r2_log": None}])
