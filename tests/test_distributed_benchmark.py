"""``benchmarks/distributed.py``: its records, speedups and resumption (the jobs replaced by quick fakes)."""

from __future__ import annotations

import json

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("distributed")


def test_records_speedups_and_resume(bench, tmp_path, monkeypatch):
    ran = []
    seconds = {("train-all", 0): 10.0, ("train-all", 2): 5.5, ("predict", 1): 4.0, ("predict", 2): 2.5,
               ("train-all-one-core", 0): 12.0}  # fmt: skip

    def fake(job):
        def run(settings, workers, work):
            ran.append((job, workers))
            assert work.is_dir() and settings["processes"] == 2  # the smoke settings
            return {"seconds": seconds[job, workers], "peak_rss_mb_per_worker": 100.0, "cluster_start_seconds": 1.0}

        return run

    monkeypatch.setattr(bench, "train_all_job", fake("train-all"))
    monkeypatch.setattr(bench, "predict_job", fake("predict"))
    monkeypatch.setattr(bench, "train_all_one_core_job", fake("train-all-one-core"))
    out = tmp_path / "d.json"
    assert bench.main(["--smoke", "--out", str(out)]) == 0
    assert ran == [("train-all", 0), ("train-all", 2), ("predict", 1), ("predict", 2), ("train-all-one-core", 0)]
    data = json.loads(out.read_text())
    got = {(r["job"], r["workers"]): r["speedup"] for r in data["records"]}
    assert got == {("train-all", 0): 1.0, ("train-all", 2): 10.0 / 5.5, ("predict", 1): 1.0, ("predict", 2): 1.6,
                   ("train-all-one-core", 0): 1.0}  # fmt: skip
    assert data["smoke"] and all(r["peak_rss_mb_per_worker"] == 100.0 for r in data["records"])
    md = out.with_suffix(".md").read_text()
    assert "smoke mode" in md and "goal" not in md  # no goal judged on a smoke run
    text = bench.render(data | {"smoke": False})
    assert "speedup 1.82 against the serial run (goal >= 1.7: met)" in text
    assert "confined to one core took 12.0 s: the serial run on both cores was 1.20x faster" in text
    assert "the 2-worker cluster 2.18x" in text
    assert "ideal of 2 one-core workers is the one-core time over 2, 6.0 s: 1.67x the serial run" in text
    out.with_suffix(".md").write_text("stale")
    runs_before = len(ran)
    assert bench.main(["--table", "--out", str(out)]) == 0  # the page again from the JSON, nothing run
    assert "smoke mode" in out.with_suffix(".md").read_text() and len(ran) == runs_before
    # a second run resumes: every job recorded, nothing runs
    ran.clear()
    assert bench.main(["--smoke", "--out", str(out)]) == 0
    assert ran == []


def test_other_settings_start_over(bench, tmp_path):
    out = tmp_path / "d.json"
    out.write_text(json.dumps({"settings_key": "other", "records": [{"case": "train-all-serial"}]}))
    assert bench.load_records(out, bench.SMOKE) == []
    out.write_text(json.dumps({"settings_key": bench.settings_key(bench.SMOKE), "records": [{"case": "x"}]}))
    assert bench.load_records(out, bench.SMOKE) == [{"case": "x"}]


def test_smoke_results_go_to_a_temporary_directory(bench):
    assert bench.SMOKE_OUT.parent != bench.RESULTS.parent
    assert bench.FULL["processes"] >= 4 and bench.FULL["points"] == 10**6 and bench.FULL["workers"] == 2
