"""The calibrated noise choice's benchmark (benchmarks/noise_calibration_seeds.py): which fit each rule picks, the
comparison and the rule that decides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("noise_calibration_seeds")


def records(bench, table: str, spec: list[tuple[float, float | None, float, float]]) -> list[dict]:
    """One table's records as ``defaults.run_fit_cell`` writes them: per seed ``(z, calibrated z, LL Gaussian, LL
    hetero)``, both statistics with SEs of 0.1 (``None``: a record from before the calibrated statistic)."""
    nms = bench.nms
    out = []
    for seed, (z, zc, g, h) in enumerate(spec):
        choice = {"gain": 0.1 * z, "gain_se": 0.1}
        if zc is not None:
            choice.update(calibrated_gain=0.1 * zc, calibrated_se=0.1)
        for forced, ll in ((nms.GAUSSIAN, g), (nms.HETERO, h)):
            out.append({
                "table": table, "seed": 60 + seed, "sampler": forced, "status": "ok", "n_val": 30, "test_ll": ll,
                "rmse": 1.0, "coverage_68": 0.68, "coverage_95": 0.95, "seconds": 1.0, "noise_choice": dict(choice),
            })  # fmt: skip
    return out


def test_each_rule_picks_by_its_own_statistic(bench):
    rows = bench.nms.cells(records(bench, "smooth6d-300", [(1.4, -0.6, 0.7, 0.4), (0.5, 1.5, 0.6, 0.8)]))
    assert [round(c["zc"], 6) for c in rows] == [-0.6, 1.5]
    assert [bench.today(c) for c in rows] == ["hetero", "gaussian"]
    assert [bench.picked_calibrated(c) for c in rows] == ["gaussian", "hetero"]
    summary, per_table = bench.comparison(rows)
    # calibrated against today: +0.3 on the first seed (Gaussian 0.7 instead of 0.4), +0.2 on the second
    assert summary["pooled_ll_difference"] == pytest.approx(0.25) and per_table[0]["ll_verdict"] == "ahead"
    assert summary["oracle_agreement"] == 1.0


def test_the_rule_needs_two_se_and_no_table_behind(bench):
    tables = bench.nms.TABLES[:2]
    # calibrated right on every seed of both tables, by similar amounts: clearly ahead
    good = [r for t in tables for r in records(bench, t, [(1.5, 0.0, 0.8 + 0.01 * s, 0.3) for s in range(5)])]
    summary, _ = bench.comparison(bench.nms.cells(good))
    assert "worth making the default" in bench.decide(summary, len(tables))
    assert "incomplete" in bench.decide(summary, len(tables) + 1) and "incomplete" in bench.decide(None, 1)
    # ahead on the first table, behind on the second
    bad = records(bench, tables[0], [(1.5, 0.0, 0.8 + 0.01 * s, 0.3) for s in range(5)])
    bad += records(bench, tables[1], [(1.5, 0.0, 0.3 - 0.01 * s, 0.4) for s in range(5)])
    summary, _ = bench.comparison(bench.nms.cells(bad))
    assert f"behind on {tables[1]}" in bench.decide(summary, len(tables))


def test_the_page_leaves_out_records_without_the_calibrated_statistic(bench):
    recs = records(bench, "smooth6d-300", [(1.4, -0.6, 0.7, 0.4), (1.4, None, 0.7, 0.4)])
    page = bench.markdown({"records": recs, "runs": []})
    assert "incomplete" in page and page.count("| smooth6d-300 | 60 |") == 1  # the cell with the statistic
    assert "| smooth6d-300 | 61 |" not in page


def test_the_docstring_the_readme_and_the_library_follow_the_committed_run(bench):
    """The run's verdict (not adopted), the numbers the docstring and the README quote, and the library's default."""
    from sigmabnn.fitting.spec import AUTO_NOISE_CHOICE_BY

    root = Path(__file__).resolve().parents[1]
    data = json.loads((root / "benchmarks" / "results" / "noise_calibration_seeds.json").read_text())
    rows = bench.nms.cells(data["records"])
    assert len(rows) == 43 and all(c["zc"] is not None for c in rows)
    summary, _ = bench.comparison(rows)
    assert "today's choice stays" in bench.decide(summary, len(bench.nms.TABLES))
    assert AUTO_NOISE_CHOICE_BY == "starts"
    quoted = f"{summary['pooled_ll_difference']:+.4f} (SE {summary['pooled_se']:.4f}), behind on no table"
    doc = " ".join(bench.__doc__.split())
    assert f"Pooled LL {quoted}" in doc and summary["behind_on"] == "none"
    differ = {(c["table"], c["seed"]): c for c in rows if bench.today(c) != bench.picked_calibrated(c)}
    assert set(differ) == {("steep6d-300", 62), ("bostonHousing", 60)}
    # the calibrated rule's gain on a cell it changed: the other model's LL minus today's pick's
    assert f"({-differ['steep6d-300', 62]['ll_difference']:+.3f} nats per row)" in doc
    assert f"({-differ['bostonHousing', 60]['ll_difference']:+.3f})" in doc
    right = sum((bench.today(c) == "hetero") == (c["ll_difference"] > 0) for c in rows)
    assert right == 40 and f"on {right} of {len(rows)} cells" in doc
    assert summary["oracle_agreement"] == pytest.approx(40 / 43)
    readme = " ".join((root / "README.md").read_text().split())
    assert f"scored {summary['pooled_ll_difference']:.4f} nats per row (SE {summary['pooled_se']:.4f})" in readme
