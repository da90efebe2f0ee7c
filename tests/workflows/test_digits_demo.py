"""``sigmabnn demo digits``: a categorical BNN on the built-in digits, its test scores and report."""

from __future__ import annotations

import json

import pytest

from sigmabnn.cli.main import main


@pytest.mark.slow
def test_demo_digits_prints_test_scores_and_writes_the_report(tmp_path, capsys):
    assert main(["demo", "digits", "--out", str(tmp_path), "-q"]) == 0
    out = capsys.readouterr().out
    assert "test rows 360: accuracy" in out and "ECE" in out
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    test = metrics["splits"]["test"]
    assert test["n"] == 360 and test["accuracy"] > 0.9  # a 64-50-10 ensemble on 1,078 digits
    assert (tmp_path / "report" / "reliability.png").stat().st_size > 1000
    assert (tmp_path / "report" / "certain.png").stat().st_size > 1000
    kinds = [r["kind"] for r in metrics["certain"]]
    assert kinds.count("most certain") == kinds.count("least certain") == 8
    most = [r["entropy"] for r in metrics["certain"] if r["kind"] == "most certain"]
    least = [r["entropy"] for r in metrics["certain"] if r["kind"] == "least certain"]
    assert max(most) <= min(least)
    assert (tmp_path / "model" / "model.json").exists()


def test_demo_digits_refuses_toy_options(capsys):
    assert main(["demo", "digits", "--chains", "2"]) == 2
    assert "do not apply to the digits demo" in capsys.readouterr().err
