"""The acquire scaling benchmark's own code (benchmarks/acquire_scale.py) on a tiny grid: cells, records, resume."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("acquire_scale")


@pytest.mark.heavy
def test_a_tiny_grid_records_each_cell_and_resumes(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "WORK", tmp_path / "work")
    grid = (
        ("regression", "bald", "streamed", 600),
        ("regression", "bald", "whole", 600),
        ("regression", "bald", "whole", 900),
    )
    monkeypatch.setattr(bench, "GRID", grid)
    out = tmp_path / "scale.json"
    assert bench.main(["--out", str(out)]) == 0
    records = json.loads(out.read_text())["records"]
    assert [(r["how"], r["candidates"], r["status"], r["rows_written"]) for r in records] == [
        ("streamed", 600, "ok", bench.CHOOSE),
        ("whole", 600, "ok", bench.CHOOSE),
        ("whole", 900, "ok", bench.CHOOSE),
    ]
    assert (
        pd.read_csv(tmp_path / "work" / "chosen_regression_bald_streamed_600.csv")["id"].tolist()
        == pd.read_csv(tmp_path / "work" / "chosen_regression_bald_whole_600.csv")["id"].tolist()
    )  # the command and the in-memory peer choose the same rows
    assert all(r["peak_rss_mb"] > 100 and r["seconds"] > 0 for r in records)
    (m600, m900) = (r["peak_rss_mb"] for r in records[1:])
    assert bench.whole_table_projection(records, "regression", n=1200) == pytest.approx(m900 + (m900 - m600))
    assert "| regression | bald | streamed | 600 | ok |" in out.with_suffix(".md").read_text()
    assert bench.main(["--out", str(out)]) == 0  # nothing left to run: the same records
    assert json.loads(out.read_text())["records"] == records
    assert all(r["scored"] == r["candidates"] for r in records)  # 600 rows: fewer than the pool, all scored
    assert bench.main(["--out", str(out), "--rerun", "regression,bald,whole,900"]) == 0
    again = json.loads(out.read_text())["records"]
    assert again[:2] == records[:2] and again[2]["candidates"] == 900 and again[2] != records[2]  # measured anew
    assert len(json.loads(out.read_text())["runs"]) == 3
