"""Calibration report: its numbers on data drawn from the model's own predictive, files, CLI."""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main
from sigmabnn.evaluate.report import INTERVAL_LEVELS, calibration_report, choose_points, split_metrics
from sigmabnn.io.model_file import save_model
from sigmabnn.predict import predict
from test_predict import make_fitted


def _erf(k: float) -> float:
    return math.erf(k / math.sqrt(2.0))


def _bounds(mu, sd, levels=INTERVAL_LEVELS):
    from scipy import stats

    lo = {lv: mu - stats.norm.ppf((1 + lv) / 2) * sd for lv in levels}
    hi = {lv: mu + stats.norm.ppf((1 + lv) / 2) * sd for lv in levels}
    return lo, hi


def test_split_metrics_calibrated_and_overconfident():
    rng = np.random.default_rng(1)
    n = 40_000
    mu = rng.uniform(-3, 1, n)
    sd = rng.uniform(0.05, 0.2, n)
    u = mu + sd * rng.normal(size=n)
    lo, hi = _bounds(mu, sd)
    m = split_metrics(u, mu, sd, lo, hi, log_target=True)
    assert m["n"] == n
    assert abs(m["z_std"] - 1) < 0.02 and abs(m["z_mean"]) < 0.02
    for k in ("1", "2", "3"):
        c = m["coverage_sigma"][k]
        se = math.sqrt(c["expected"] * (1 - c["expected"]) / n)
        assert abs(c["observed"] - c["expected"]) < 4 * se + 1e-4
    for key, observed in m["coverage_interval"].items():
        assert abs(observed - float(key)) < 4 * math.sqrt(float(key) * (1 - float(key)) / n) + 1e-4
    # the definitions, recomputed here
    y, pred = 10**u, 10**mu
    assert m["r2_xsec"] == pytest.approx(1 - np.sum((pred - y) ** 2) / np.sum((y - y.mean()) ** 2))
    assert m["r2_log"] == pytest.approx(1 - np.sum((mu - u) ** 2) / np.sum((u - u.mean()) ** 2))
    assert m["rel_err"]["q0.5"] == pytest.approx(np.median(np.abs(pred / y - 1)))
    # where 1 - R^2 comes from: the largest squared residual of each space, and its share
    for key, (a, b) in (("r2_log_concentration", (u, mu)), ("r2_xsec_concentration", (y, pred))):
        sq = (a - b) ** 2
        assert m[key]["top_rows"][0] == int(np.argmax(sq))
        assert m[key]["share_top1"] == pytest.approx(sq.max() / sq.sum())
    # the 10**u space is dominated by its largest values: its top 10 carry a far larger share
    assert m["r2_xsec_concentration"]["share_top10"] > 5 * m["r2_log_concentration"]["share_top10"]
    # predictive std half the truth: 1-sigma coverage of erf(0.5 / sqrt 2), z std 2
    m2 = split_metrics(u, mu, sd / 2, *_bounds(mu, sd / 2), log_target=True)
    assert m2["coverage_sigma"]["1"]["observed"] == pytest.approx(_erf(0.5), abs=0.01)
    assert m2["z_std"] == pytest.approx(2.0, rel=0.02)


def test_choose_points_are_distinct_and_include_extremes():
    u = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    mu = u.copy()
    mu[2] += 10.0
    picks = choose_points(u, mu, np.ones(5), num=4)
    assert len(picks) == len(set(picks)) == 4
    assert {1, 3, 2} <= set(picks)  # smallest, largest, worst |z|
    assert choose_points(u[:2], mu[:2], np.ones(2)) == [1, 0]


@pytest.fixture(scope="module")
def calibrated():
    """A constant log10 model and data drawn from its own predictive (calibrated by construction)."""
    fitted = make_fitted(
        "2-3-1", chains=2, draws=3, log10=True, positions=np.zeros((2, 3, 13)), noise=np.full((2, 3), 4.0)
    )
    rng = np.random.default_rng(0)
    n = 1200
    x = rng.normal(size=(n, 2))
    lp = predict(fitted, x[:1]).log_space
    mu, sd = float(lp.mean[0, 0]), float(lp.std[0, 0])
    u = mu + sd * rng.normal(size=n)
    table = pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "y": 10**u})
    table["split"] = np.where(np.arange(n) < 800, "train", np.where(np.arange(n) < 900, "val", "test"))
    table.loc[[5, 850, 1000], "y"] = np.nan  # failed points: dropped and counted
    table.loc[7, "y"] = -1.0
    return fitted, table, mu, sd


def test_report_files_and_numbers(calibrated, tmp_path):
    fitted, table, mu, sd = calibrated
    result = calibration_report(fitted, table, tmp_path / "rep", rng_key=jax.random.key(1))
    names = sorted(p.name for p in (tmp_path / "rep").iterdir())
    assert names == sorted(["report.md", "metrics.json", *[f.name for f in result.figures]])
    for fig in result.figures:
        assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(result.metrics) == ["train", "val", "test"]
    assert [result.metrics[s]["dropped"] for s in ("train", "val", "test")] == [2, 1, 1]
    assert [result.metrics[s]["n"] for s in ("train", "val", "test")] == [798, 99, 299]
    train = result.metrics["train"]
    for k in ("1", "2", "3"):
        c = train["coverage_sigma"][k]
        assert abs(c["observed"] - c["expected"]) < 4 * math.sqrt(c["expected"] * (1 - c["expected"]) / 798) + 1e-3
    assert abs(train["z_std"] - 1) < 0.08
    saved = json.loads((tmp_path / "rep" / "metrics.json").read_text())
    assert saved["splits"]["test"]["z_std"] == pytest.approx(result.metrics["test"]["z_std"])
    assert len(saved["points"]) == 4
    text = result.markdown.read_text()
    for needle in ("## Accuracy", "## Calibration", "## Predictive distributions", "![coverage](coverage.png)"):
        assert needle in text
    assert f"| z std | {train['z_std']:.3f} |" in text
    share = train["r2_xsec_concentration"]["share_top1"]
    assert f"| cross section: the largest | {100 * share:.1f} %" in text
    # no split column: one split "all"
    whole = calibration_report(fitted, table.drop(columns="split"), tmp_path / "rep2")
    assert list(whole.metrics) == ["all"] and whole.metrics["all"]["n"] == 1200 - 4


def test_report_counts_interval_coverage_exactly_as_evaluate_does(calibrated, tmp_path):
    """The report's interval coverage is the fraction of rows whose exact PIT lies in each central interval's
    levels: the same number evaluate gives for those rows (no sampling error between the two)."""
    from scipy import stats

    from sigmabnn.evaluate.metrics import evaluate

    fitted, table, mu, sd = calibrated
    result = calibration_report(fitted, table, tmp_path / "rep", rng_key=jax.random.key(1))
    test = table[(table["split"] == "test") & (table["y"] > 0)]
    pit = stats.norm.cdf(np.log10(test["y"].to_numpy()), mu, sd)  # the constant model's predictive
    ev = evaluate(fitted, test, test, levels=INTERVAL_LEVELS)["log10"]["coverage_interval"]
    for level in INTERVAL_LEVELS:
        got = result.metrics["test"]["coverage_interval"][f"{level:.4f}"]
        assert got == pytest.approx(np.mean(np.abs(pit - 0.5) <= level / 2), abs=1e-12)
        assert got == ev[f"{level:g}"]


def test_report_replaces_directory_atomically_and_rejects_bad_input(calibrated, tmp_path):
    from sigmabnn.errors import DataError, InputError

    fitted, table, _, _ = calibrated
    target = tmp_path / "rep"
    target.mkdir()
    (target / "stale.txt").write_text("old")
    calibration_report(fitted, table.iloc[:50], target)
    assert not (target / "stale.txt").exists()
    with pytest.raises(InputError, match="no target column"):
        calibration_report(fitted, table.drop(columns="y"), tmp_path / "bad")
    with pytest.raises(DataError, match="no rows"):
        calibration_report(fitted, table.assign(y=np.nan), tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_cli_evaluate_report(calibrated, tmp_path, capsys):
    fitted, table, _, _ = calibrated
    model = save_model(fitted, tmp_path / "m.model")
    data = tmp_path / "d.csv"
    table.groupby("split").head(20).to_csv(data, index=False)
    assert main(["evaluate", str(model), str(data), "--report", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert "report.md" in out
    # The summary's k-sigma coverage is the report's central-interval coverage (the headline),
    # and the |z| <= k fraction is shown under its own label.
    metrics = json.loads((tmp_path / "rep" / "metrics.json").read_text())["splits"]
    splits = list(metrics)
    line = next(x for x in out.splitlines() if "coverage 1 sigma (central 68.3 % interval)" in x)
    assert line.split()[-len(splits) * 2 :: 2] == [
        f"{100 * metrics[s]['coverage_interval']['0.6827']:.1f}" for s in splits
    ]
    line = next(x for x in out.splitlines() if "fraction |z| <= 1" in x)
    assert line.split()[-len(splits) * 2 :: 2] == [
        f"{100 * metrics[s]['coverage_sigma']['1']['observed']:.1f}" for s in splits
    ]
    assert (tmp_path / "rep" / "report.md").is_file()
    assert main(["evaluate", str(model), str(data), "--report", str(tmp_path / "rep"), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"train", "val", "test"}
    assert main(["evaluate", str(model), str(data), "--report", str(tmp_path / "no" / "such" / "rep")]) == 2
    err = capsys.readouterr().err
    assert "directory does not exist" in err and len(err.strip().splitlines()) == 1
