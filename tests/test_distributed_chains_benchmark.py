"""``benchmarks/distributed_chains.py``: its table, its records and resumption (the fits replaced by a fake)."""

from __future__ import annotations

import json

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("distributed_chains")


def test_records_table_and_resume(bench, tmp_path, monkeypatch):
    ran = []

    def fake(size, method):
        ran.append((size, method))
        base = {"size": size, "method": method, "rows": 200, "architecture": "3-16-16-1", "num_chains": 4}
        timing = {"map_seconds": 1.0, "sample_seconds": 2.0, "load_1min_before": 3.5, "load_1min_after": 3.75}
        return [
            {"case": f"{size}-{method}-serial", **base, "workers": 0, "seconds": 10.0, "speedup": 1.0, **timing},
            {"case": f"{size}-{method}-2w", **base, "workers": 2, "seconds": 8.0, "speedup": 1.25, **timing,
             "cluster_start_seconds": 2.0, "max_abs_diff_draws": 0.0},
        ]  # fmt: skip

    monkeypatch.setattr(bench, "run_case", fake)
    out = tmp_path / "c.json"
    assert bench.main(["--sizes", "small", "--methods", "chees", "--out", str(out)]) == 0
    assert ran == [("small", "chees")]
    data = json.loads(out.read_text())
    assert data["sizes_run"] == ["small"] and len(data["records"]) == 2
    md = out.with_suffix(".md").read_text()
    assert "shared machine under load" in md and "| small | chees | 3-16-16-1 | 200 | 4 | 2 | 8.0 |" in md
    assert "3.50 | 3.75" in md  # the load averages beside each timing
    ran.clear()
    assert bench.main(["--sizes", "small", "--methods", "chees", "--out", str(out)]) == 0
    assert ran == []  # recorded: skipped
    assert bench.main(["--sizes", "small", "--methods", "nuts", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert len(data["runs"]) == 2 and "Earlier run: Measured" in out.with_suffix(".md").read_text()


def test_the_synthetic_table_and_fit_settings(bench):
    df = bench.table(bench.SIZES["small"])
    assert df.shape == (200, 4) and list(df.columns) == ["x0", "x1", "x2", "y"]
    kwargs = bench.fit_kwargs(bench.SIZES["larger"], "nuts")
    assert kwargs["method"] == "nuts" and kwargs["num_chains"] == 8 and kwargs["map"] == {"num_steps": 1000}
    assert kwargs["max_tree_depth"] == 6 and "max_tree_depth" not in bench.fit_kwargs(bench.SIZES["small"], "nuts")


def test_the_page_says_whether_the_machine_was_quiet(bench):
    quiet = [{"load_1min_before": 1.2, "load_1min_after": 2.4}]
    busy = [*quiet, {"load_1min_before": 2.4, "load_1min_after": 2.6}]
    assert "quiet machine" in bench._load_sentence(quiet) and "under load" not in bench._load_sentence(quiet)
    assert "under load" in bench._load_sentence(busy)
