"""The sharded, resumable per-unit loop of the benchmarks (benchmarks/_results.py: run_units)."""

from __future__ import annotations

import json

from tests.conftest import load_benchmark


def test_units_are_split_between_shards_resumed_and_carry_their_load(tmp_path):
    results = load_benchmark("_results")
    calls = []

    def fit(name, seed):
        calls.append((name, seed))
        return {"name": name, "seed": seed}

    units = [("a", s, 0) for s in range(4)] + [("b", s, 1) for s in range(4)]
    assert results.run_units(tmp_path, units, (0, 2), fit) is None  # a shard leaves the gathering to another run
    assert calls == [("a", 0), ("a", 2), ("b", 1), ("b", 3)]  # seed + index even
    gathered = results.run_units(tmp_path, units, (0, 1), fit)
    assert calls[4:] == [("a", 1), ("a", 3), ("b", 0), ("b", 2)]  # the units the shard left, the rest not refitted
    assert len(gathered) == 8 and {(r["name"], r["seed"]) for r in gathered} == {(n, s) for n, s, _ in units}
    for path in tmp_path.glob("*.json"):
        rec = json.loads(path.read_text())
        assert all(len(rec[f"load_average_1_5_15_at_{k}"]) == 3 for k in ("start", "end"))


def test_the_units_load_sentence_counts_the_fits_without_one():
    results = load_benchmark("_results")
    recs = [{"load_average_1_5_15_at_start": [v, 0, 0]} for v in (1.0, 3.0, 2.0)] + [{}]
    text = results.units_load_text(recs)
    assert "min 1, median 2, max 3 over 3 fits" in text and "(1 fitted before" in text
    assert "No fit" in results.units_load_text([{}])


def test_records_say_the_commit_they_ran_from(tmp_path):
    results = load_benchmark("_results")
    commit = results.source_commit()
    assert commit is None or len(commit.split("-")[0]) == 12  # a short hash, outside git None
    [rec] = results.run_units(tmp_path, [("a", 0, 0)], (0, 1), lambda name, seed: {})
    assert rec["commit"] == commit and results.run_metadata("x")["commit"] == commit
