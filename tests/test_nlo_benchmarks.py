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
