"""The defaults benchmark's own code (benchmarks/defaults.py): tables, options, NumPyro's predictive, goals, resume."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from tests.conftest import load_benchmark

_REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("defaults")


# --------------------------------------------------------------------------- tables


@pytest.mark.parametrize(
    ("name", "rows", "inputs"),
    [
        ("sin1d-100", 100, 1),
        ("lin2d-120", 120, 2),
        ("smooth6d-300", 300, 6),
        ("steep6d-300", 300, 6),
        ("hetero2d-1000", 1000, 2),
        ("friedman10d-2000", 2000, 10),
        ("student10d-2000", 2000, 10),
    ],
)
def test_synthetic_tables_are_deterministic_with_the_documented_shapes(bench, name, rows, inputs):
    a, b = bench.load_table(name), bench.load_table(name)
    assert a.train.shape == (rows, inputs + 1) and a.test.shape == (bench.SYNTHETIC_TEST_ROWS, inputs + 1)
    assert list(a.train.columns) == [f"x{j}" for j in range(inputs)] + ["y"]
    assert a.train.equals(b.train) and a.test.equals(b.test)
    assert not a.log_target and np.isfinite(a.train.to_numpy()).all()
    # training rows do not depend on whether the test rows are drawn (the validation phase draws none)
    only = bench.load_table(name, with_test=False)
    assert only.test is None and only.train.equals(a.train)


def test_large_synthetic_and_scaling_tables_shapes(bench):
    assert bench.SYNTHETIC["friedman20d-20000"].n == 20000
    assert bench.load_table("friedman10d-10000", with_test=False).train.shape == (10000, 11)
    assert {n: s.n for n, s in bench.SCALING.items()} == {
        "scaling10d-1000": 1000,
        "scaling10d-10000": 10000,
        "scaling10d-100000": 100000,
    }


def test_lin2d_is_the_issue_table(bench):
    t = bench.load_table("lin2d-120")
    x, y = t.train[["x0", "x1"]].to_numpy(), t.train["y"].to_numpy()
    assert np.all(np.abs(x) <= 1)
    resid = y - (2 * x[:, 0] - x[:, 1])
    assert abs(resid.std() - 0.1) < 0.03


def test_validation_split_is_seeded_80_20_and_disjoint(bench):
    train = bench.load_table("sin1d-100", with_test=False).train
    fit, val = bench.validation_split(train)
    fit2, val2 = bench.validation_split(train)
    assert (len(fit), len(val)) == (80, 20)
    assert fit.equals(fit2) and val.equals(val2)
    rows = {tuple(r) for r in train.to_numpy()}
    assert {tuple(r) for r in fit.to_numpy()} | {tuple(r) for r in val.to_numpy()} == rows
    assert not {tuple(r) for r in fit.to_numpy()} & {tuple(r) for r in val.to_numpy()}


def test_ewino_table(bench):
    t = bench.load_table(bench.EWINO_TABLE)
    assert t.log_target and (t.train["y"] > 0).all() and (t.test["y"] > 0).all()
    assert list(t.train.columns) == ["m_1000022", "N1000022_1", "N1000022_2", "N1000022_3", "N1000022_4", "y"]


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize(("p", "warmup"), [(1, 1000), (10, 1000), (76, 1000), (77, 1500)])
def test_previous_default_reproduces_the_warmup_rule(bench, p, warmup):
    d = 20 * p + 20 + 420 + 21  # P-20-20-1: kernels and biases
    assert bench.default_num_params(p) == d
    kw = bench.previous_default(p, 1000)
    assert kw["num_warmup"] == warmup == bench.previous_warmup(d)
    assert kw["method"] == "nuts" and kw["num_chains"] == 4 and kw["num_samples"] == 250
    assert kw["max_tree_depth"] == 10 and kw["architecture"] == f"{p}-20-20-1"
    assert kw["map"]["num_steps"] == 2000 and kw["map"]["learning_rate"] == 1e-2 and kw["map"]["patience"] == 200


def test_previous_warmup_rule_matches_the_library_rule_of_today(bench):
    assert [bench.previous_warmup(d) for d in (100, 199, 200, 1999, 2000)] == [500, 500, 1000, 1000, 1500]


def test_previous_default_map_minibatches_above_20000_rows(bench):
    assert bench.previous_map(20000)["batch_size"] is None
    big = bench.previous_map(80000)
    assert big["batch_size"] == 1024 and big["num_epochs"] == max(10, math.ceil(2000 * 1024 / 80000))


def test_fit_kwargs(bench):
    assert bench.fit_kwargs("sigmabnn", 3, 100, False) == {}
    assert bench.fit_kwargs("sigmabnn", 3, 100, True) == {"log_target": True}
    assert bench.fit_kwargs("ensemble", 3, 100, False) == {"method": "ensemble"}
    # the candidates were measured in float64 before fit's default fit became float32: they keep it
    assert bench.fit_kwargs("chees-map", 3, 100, False)["dtype"] == "float64"
    assert bench.fit_kwargs("chees-within-8x125-rows-w-s90-f32", 3, 100, False)["dtype"] == "float32"
    # a candidate keeps the split it was measured with: 80/10/10 when it names none, its own, or fit's automatic one
    assert bench.fit_kwargs("chees-map", 3, 100, False)["split"] == [0.8, 0.1, 0.1]
    assert bench.fit_kwargs("chees-within-8x125-rows-w-s90", 3, 100, False)["split"] == [0.9, 0.1, 0.0]
    assert "split" not in bench.fit_kwargs("chees-within-8x125-rows-w-sauto-f32-auto", 3, 100, False)
    assert bench.with_float32("chees-within-8x125-rows-w-sauto-auto") == "chees-within-8x125-rows-w-sauto-f32-auto"
    recal = bench.fit_kwargs("chees-map-recal", 3, 100, False)
    assert recal["recalibrate"] is True and recal["method"] == "chees"
    smoke = bench.fit_kwargs("previous-default", 3, 100, False, smoke=True)
    assert smoke["num_warmup"] < 100 and smoke["map"]["num_steps"] < 100 and smoke["map"]["learning_rate"] == 1e-2
    for name in bench.CANDIDATES:
        assert name in bench.ENTRIES and name in bench.VALIDATE_METHODS


# --------------------------------------------------------------------------- NumPyro's predictive


def test_one_draw_mixture_is_the_gaussian_density_with_the_jacobian(bench):
    rng = np.random.default_rng(0)
    n, y_mean, y_std = 7, 3.0, 2.5
    f, prec = rng.normal(size=(1, n)), np.array([4.0])
    m, v = y_mean + y_std * f, np.broadcast_to(y_std**2 / prec[:, None], (1, n))
    y = rng.normal(3.0, 2.0, size=n)
    s = bench.mixture_scores(y, m, v, log_target=False)
    # standardised density minus log(y_std): the Jacobian of the standardisation
    z = (y - y_mean) / y_std
    expect = stats.norm.logpdf(z, f[0], 1 / math.sqrt(prec[0])) - math.log(y_std)
    assert s["test_ll"] == pytest.approx(expect.mean(), rel=1e-12)
    assert s["rmse"] == pytest.approx(np.sqrt(np.mean((y - m[0]) ** 2)))
    # log target: density of y = 10**u, log-normal mean
    y = 10 ** rng.normal(0.0, 0.3, size=n)
    mu, sd = rng.normal(0, 0.1, size=(1, n)), 0.3
    s = bench.mixture_scores(y, mu, np.full((1, n), sd**2), log_target=True)
    assert s["test_ll"] == pytest.approx(np.mean(stats.lognorm.logpdf(y, sd * math.log(10), scale=10 ** mu[0])))
    a = math.log(10)
    assert s["rmse"] == pytest.approx(np.sqrt(np.mean((y - np.exp(a * mu[0] + 0.5 * a * a * sd**2)) ** 2)))


def test_mixture_coverage_by_the_cdf(bench):
    # y at known positions of a one-component mixture: inside the 68 % interval iff |z| <= 0.9945
    z = np.array([0.0, 0.5, 0.99, 1.0, 1.5, 1.95, 1.97, -2.5])
    s = bench.mixture_scores(z, np.zeros((1, z.size)), np.ones((1, z.size)), log_target=False)
    assert s["coverage_68"] == pytest.approx(3 / 8)
    assert s["coverage_95"] == pytest.approx(6 / 8)
    # many draws of a mixture: coverage of fresh draws is near nominal
    rng = np.random.default_rng(1)
    m = rng.normal(size=(50, 1)) * np.ones((50, 4000))
    comp = rng.integers(0, 50, 4000)
    y = m[comp, np.arange(4000)] + 0.5 * rng.normal(size=4000)
    s = bench.mixture_scores(y, m, np.full(m.shape, 0.25), log_target=False)
    assert abs(s["coverage_68"] - 0.68) < 0.03 and abs(s["coverage_95"] - 0.95) < 0.015


def test_network_outputs_and_predictive(bench):
    rng = np.random.default_rng(2)
    samples = {"w1": rng.normal(size=(3, 2, 4)), "w2": rng.normal(size=(3, 4, 4)), "w3": rng.normal(size=(3, 4, 1))}
    samples["prec_obs"] = np.array([1.0, 2.0, 4.0])
    z = rng.normal(size=(5, 2))
    f = bench.network_outputs(samples, z, chunk=2)
    s = 1
    expect = np.tanh(np.tanh(z @ samples["w1"][s]) @ samples["w2"][s]) @ samples["w3"][s]
    assert f.shape == (3, 5) and np.allclose(f[s], expect[:, 0])
    m, v = bench.numpyro_predictive(samples, z, 10.0, 2.0)
    assert np.allclose(m, 10 + 2 * f) and np.allclose(v[:, 0], 4 / samples["prec_obs"])
    x = rng.normal(size=(5, 2))
    zz = bench.numpyro_inputs(x, x.mean(0), x.std(0))
    assert zz.shape == (5, 3) and np.all(zz[:, -1] == 1) and np.allclose(zz[:, :2].mean(0), 0)


def test_numpyro_model_has_no_biases(bench):
    pytest.importorskip("numpyro")
    import jax
    from numpyro import handlers

    x = np.ones((4, 3), np.float32)
    trace = handlers.trace(handlers.seed(bench.numpyro_model, jax.random.key(0))).get_trace(x, np.zeros(4))
    shapes = {k: v["value"].shape for k, v in trace.items() if v["type"] == "sample" and not v["is_observed"]}
    assert shapes == {"w1": (3, 20), "w2": (20, 20), "w3": (20, 1), "prec_obs": ()}
    prior = trace["prec_obs"]["fn"]
    assert float(prior.concentration) == 3.0 and float(prior.rate) == 1.0


# --------------------------------------------------------------------------- goals and Markdown


def rec(table, sampler, **kw):
    base = {
        "table": table,
        "phase": "test",
        "sampler": sampler,
        "status": "ok",
        "n_train": 500,
        "n_score": 400,
        "num_features": 3,
        "seconds": 10.0,
        "rmse": 0.1,
        "test_ll": 1.0,
        "coverage_68": 0.68,
        "coverage_95": 0.95,
        "load_average_start": 1.0,
        "load_average_end": 1.5,
        "peak_rss_mb": 500.0,
        "kwargs": {},
    }
    return base | kw


def test_goals_on_hand_made_records(bench):
    records = [
        # table a: every goal met
        rec("a", "sigmabnn"),
        rec("a", "previous-default", test_ll=0.9, seconds=300.0),
        rec("a", "numpyro", seconds=100.0, rmse=0.2, test_ll=0.5),
        # table b: too slow, coverage off, LL worse, NumPyro more accurate
        rec("b", "sigmabnn", seconds=90.0, coverage_68=0.60, coverage_95=0.97, test_ll=0.0),
        rec("b", "previous-default", test_ll=0.5),
        rec("b", "numpyro", seconds=200.0, rmse=0.05, test_ll=0.1),
        # table c: previous default timed out, NumPyro failed
        rec("c", "sigmabnn", n_train=10000, seconds=150.0),
        rec("c", "previous-default", status="timeout", seconds=1200.0, rmse=None, test_ll=None),
        rec("c", "numpyro", status="failed", error="boom", seconds=None),
        # table d: the default failed
        rec("d", "sigmabnn", status="failed", error="DataError: bad", seconds=None, rmse=None, test_ll=None),
    ]
    g = bench.check_goals(records)
    met = {key: {r["table"]: r["met"] for r in g[key]} for key in ("time", "coverage", "ll_vs_previous", "vs_numpyro")}
    assert met["time"] == {"a": True, "b": False, "c": True, "d": False}
    assert met["coverage"] == {"a": True, "b": False, "c": True, "d": False}
    assert met["ll_vs_previous"] == {"a": True, "b": False, "c": None, "d": False}
    assert met["vs_numpyro"] == {"a": True, "b": False, "c": None, "d": False}
    assert g["pooled_coverage"]["68"]["mean"] == pytest.approx((0.68 + 0.60 + 0.68) / 3)
    assert g["pooled_coverage"]["95"]["met"] is True
    text = {r["table"]: r["text"] for r in g["ll_vs_previous"]}
    assert "timed out after 1200 s" in text["c"]
    cov_b = next(r["text"] for r in g["coverage"] if r["table"] == "b")
    assert "MISSED" in cov_b and f"SE {math.sqrt(0.68 * 0.32 / 400):.3f}" in cov_b
    md = bench.render_test({"records": records, "runs": []})
    assert "timed out after 1200 s" in md and "failed: DataError: bad" in md and "MISSED" in md
    assert "**(a) training time" in md and "met on 2 of 4 tables" in md


def test_coverage_scatter_counts_the_test_rows_and_the_recalibration_rows(bench):
    """Goal (b)'s scatter is the binomial SD of the test rows plus that of the empirical map fitted on the
    validation rows; a table with fewer validation rows than recalibration needs counts the test rows only."""
    assert bench.coverage_scatter(0.68, 400, 0) == pytest.approx(math.sqrt(0.68 * 0.32 / 400))
    assert bench.coverage_scatter(0.95, 400, 100) == pytest.approx(math.sqrt(0.95 * 0.05 * (1 / 400 + 1 / 100)))
    records = [
        rec("a", "sigmabnn", n_val=100, coverage_68=0.75),  # 0.07 off: 1.4 scatters of 0.052
        rec("b", "sigmabnn", n_val=5, n_score=2000, coverage_68=0.75),  # too few to recalibrate: 6.7 scatters
    ]
    # a record that says which rows its map was fitted on: none (the gate kept the raw intervals), or all 100
    assert bench.recalibration_rows(rec("c", "sigmabnn", n_val=100, recalibration_rows=0)) == 0
    assert bench.recalibration_rows(rec("c", "sigmabnn", n_val=100, recalibration_rows=100)) == 100
    g = bench.check_goals(records)
    rows = {r["table"]: r for r in g["coverage"]}
    assert rows["a"]["met"] is False and rows["a"]["recal_rows"] == 100 and rows["b"]["recal_rows"] == 0
    sd = math.sqrt(0.68 * 0.32 * (1 / 400 + 1 / 100))
    assert rows["a"]["z"][0] == pytest.approx(0.07 / sd) and rows["a"]["z"][1] == pytest.approx(0.0)
    assert rows["b"]["z"][0] == pytest.approx(0.07 / math.sqrt(0.68 * 0.32 / 2000))
    line = bench.scatter_line(g["coverage"])
    assert "1 of 4 coverages lie more than 2 scatters" in line
    assert "at 242 recalibration rows for the 68 % interval and 53 for the 95 %" in line
    assert "1 tables recalibrate on fewer than 242 rows and 1 are not recalibrated" in line
    assert line in bench.render_test({"records": records, "runs": []})


def test_the_previous_default_on_the_validation_rows_is_a_reference_beside_the_library_default(bench):
    """Goal (c)'s comparison on validation rows pairs the library's default (``sigmabnn`` when no polish entry
    was added) with ``previous-default`` per table; a table where the previous default did not finish says so."""
    records = [
        rec("a", "sigmabnn", phase="validate", test_ll=1.2, seconds=20.0, row_ll=[0.5, 0.7, 0.9]),
        rec("a", "previous-default", phase="validate", test_ll=1.0, seconds=300.0, row_ll=[0.4, 0.5, 0.6]),
        rec("b", "sigmabnn", phase="validate", test_ll=0.5),
        rec("b", "previous-default", phase="validate", test_ll=0.9),
        rec("c", "sigmabnn", phase="validate"),
        rec("c", "previous-default", phase="validate", status="timeout", seconds=1500.0),
    ]
    assert bench.library_default_entry(records) == "sigmabnn"
    md = bench.render_validation({"records": records, "runs": []})
    section = md[md.index("## The previous default on the validation rows") :]
    assert "| a | 3 | 0.1 | 0.1 | 1.200 | 1.000 | +0.200 (0.058) | yes | 15.0 |" in section
    assert "| b |" in section and "| no |" in section and "previous default timed out after 1500 s" in section
    assert "LL no worse on 1 of the 2 tables where the previous default ran" in section
    assert "## The previous default" not in bench.render_validation({"records": records[2:3], "runs": []})


def test_the_noise_reference_is_the_added_polish_with_the_gaussian_forced(bench):
    """``default-lbfgs-es-rows-gaussian`` fits as the polish entry does, with only the noise model changed, and its
    section pairs it with the library's default per table, naming the noise model the default chose."""
    name = bench.NOISE_REFERENCE
    assert name in bench.EXPLORATORY and name not in bench.CANDIDATES and name not in bench.POLISH_CANDIDATES
    base = bench.fit_kwargs("default-lbfgs-es-rows", 6, 270, False)
    base.pop("noise_choice_by")  # a forced Gaussian makes no choice
    assert bench.fit_kwargs(name, 6, 270, False) == {**base, "likelihood": "gaussian"}
    records = [
        rec("a", "sigmabnn", phase="validate", test_ll=1.2, likelihood="hetero_student_t", row_ll=[0.5, 0.7, 0.9]),
        rec("a", name, phase="validate", test_ll=1.0, likelihood="gaussian", row_ll=[0.4, 0.5, 0.6]),
        rec("b", "sigmabnn", phase="validate", test_ll=0.5, likelihood="hetero_student_t"),
        rec("b", name, phase="validate", test_ll=0.9, likelihood="gaussian"),
    ]
    md = bench.render_validation({"records": records, "runs": []})
    section = md[md.index("## The noise choice on the validation rows") :]
    assert "| a | 3 | hetero_student_t | 0.1 | 0.1 | 1.200 | 1.000 | +0.200 (0.058) | yes |" in section
    assert "| b | - | hetero_student_t |" in section and "LL no worse than the Gaussian's on 1 of the 2" in section


def test_paired_ll_difference_pairs_the_rows(bench):
    a = {"row_ll": [1.0, 2.0, 3.0, 4.0]}
    b = {"row_ll": [0.5, 1.5, 2.5, 3.5]}  # every row 0.5 lower: the difference has no spread
    assert bench.paired_ll_difference(a, b) == pytest.approx((0.5, 0.0, 4))
    c = {"row_ll": [0.0, 2.0, 2.0, 4.0]}  # differences 1, 0, 1, 0: mean 0.5, sd 0.577, se 0.289
    mean, se, n = bench.paired_ll_difference(a, c)
    assert mean == pytest.approx(0.5) and se == pytest.approx(math.sqrt(1 / 3) / 2) and n == 4
    assert bench.paired_ll_difference(a, {"row_ll": [1.0, 2.0]}) is None  # not the same rows
    assert bench.paired_ll_difference(a, {}) is None  # a record written before rows were kept
    assert bench.row_lls(np.array([0.123456789, -2.0])) == [0.123457, -2.0]
    records = [rec("a", "sigmabnn", **a), rec("a", "previous-default", test_ll=0.9, **b)]
    (row,) = bench.check_goals(records)["ll_vs_previous"]
    assert "paired per-row difference +0.5000 +- 0.0000, 4 rows" in row["text"]
    (row,) = bench.check_goals([rec("a", "sigmabnn"), rec("a", "previous-default", test_ll=0.9)])["ll_vs_previous"]
    assert "paired" not in row["text"]


def test_merge_joins_runs_made_side_by_side(bench, tmp_path):
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "out.json"
    a.write_text(json.dumps({"runs": [{"date": "1"}], "records": [rec("x", "sigmabnn"), rec("y", "sigmabnn")]}))
    late = rec("y", "sigmabnn", test_ll=2.0)  # the same cell again: the later file's record wins
    b.write_text(json.dumps({"runs": [{"date": "2"}], "records": [rec("x", "previous-default"), late]}))
    assert bench.main(["--phase", "test", "--out", str(out), "--merge", str(a), str(b)]) == 0
    merged = json.loads(out.read_text())
    cells = {(r["table"], r["sampler"]): r["test_ll"] for r in merged["records"]}
    assert cells == {("x", "sigmabnn"): 1.0, ("y", "sigmabnn"): 2.0, ("x", "previous-default"): 1.0}
    assert [r["date"] for r in merged["runs"]] == ["1", "2"] and out.with_suffix(".md").exists()
    smoke = tmp_path / "smoke.json"
    smoke.write_text(json.dumps({"smoke": True, "runs": [], "records": [rec("z", "sigmabnn")]}))
    with pytest.raises(SystemExit, match="smoke and real"):
        bench.main(["--phase", "test", "--out", str(out), "--merge", str(smoke)])


def test_numpyro_timeout_counts_as_speed_only(bench):
    records = [rec("a", "sigmabnn", seconds=10.0), rec("a", "numpyro", status="timeout", seconds=1200.0)]
    (row,) = bench.check_goals(records)["vs_numpyro"]
    assert row["met"] is None and "lower bound" in row["text"] and "the speed part met" in row["text"]
    (slow,) = bench.check_goals([rec("a", "sigmabnn", seconds=500.0), records[1]])["vs_numpyro"]
    assert slow["met"] is None and "speed part undecided" in slow["text"]


def test_time_limits(bench):
    assert bench.time_limit(2000, 20) == 60 and bench.time_limit(2000, 21) == 180
    assert bench.time_limit(10000, 10) == 180 and bench.time_limit(20000, 20) == 360


def test_validation_summary(bench):
    records = [
        rec("a", "previous-default", phase="validate", test_ll=1.0),
        rec("a", "chees-map", phase="validate", test_ll=1.2, seconds=30.0, coverage_68=0.70),
        rec("b", "previous-default", phase="validate", test_ll=1.0),
        rec("b", "chees-map", phase="validate", test_ll=0.8, seconds=90.0),
        rec("b", "chees-map-recal", phase="validate", status="failed", error="too few rows"),
    ]
    rows = {r["sampler"]: r for r in bench.validation_summary(records)}
    assert rows["chees-map"]["median_seconds"] == 60.0 and rows["chees-map"]["worst_time_ratio"] == 1.5
    assert rows["chees-map"]["ll_wins_vs_previous"] == "1/2"
    assert rows["chees-map"]["mean_abs_coverage_error"] == pytest.approx(0.02 / 4)
    assert rows["chees-map-recal"]["tables_not_ok"] == 1
    md = bench.render_validation({"records": records, "runs": []})
    assert "failed: too few rows" in md and "chees-map" in md


def test_numpyro_on_the_validation_rows_is_a_reference_beside_the_chosen_candidate(bench):
    """NumPyro's validation records are compared with the chosen candidate, but are not a candidate: they move
    neither the summary's best LL nor the choice."""
    rows = [0.5, 0.7, 0.9]
    records = [
        rec("a", "chees-map", phase="validate", test_ll=1.2, row_ll=rows),
        rec("a", "numpyro", phase="validate", test_ll=5.0, rmse=0.2, seconds=60.0, row_ll=[0.4, 0.5, 0.6]),
        rec("b", "chees-map", phase="validate", test_ll=0.8),
        rec("b", "numpyro", phase="validate", status="timeout", seconds=900.0),
    ]
    summary = bench.validation_summary(records)
    assert [r["sampler"] for r in summary] == ["chees-map"] and summary[0]["mean_ll_gap"] == 0.0
    got = bench.numpyro_validation(records, "chees-map")
    assert got[0]["table"] == "a" and got[0]["as_accurate"] == "no"  # lower LL, though a smaller RMSE
    assert got[0]["ll_difference"] == "+0.200 (0.058)" and got[0]["speedup"] == 6.0 and got[0]["rows"] == 3
    assert got[1] == {"table": "b", "as_accurate": "NumPyro timed out after 900 s"}
    md = bench.render_validation({"records": records, "runs": []})
    assert (
        "## NumPyro on the validation rows" in md
        and "At least as accurate on 0 of the 1 tables where NumPyro finished" in md
    )


def test_the_rule_picks_the_best_ll_among_candidates_that_meet_the_time_goal_everywhere(bench):
    records = [
        rec("a", "chees-map", phase="validate", test_ll=1.0, seconds=30.0),
        rec("a", "chees-map-8x125", phase="validate", test_ll=1.1, seconds=40.0),
        rec("a", "nuts-d6-short", phase="validate", test_ll=1.5, seconds=70.0),  # best LL, too slow
        rec("b", "chees-map", phase="validate", test_ll=0.5, seconds=30.0),
        rec("b", "chees-map-8x125", phase="validate", test_ll=0.7, seconds=40.0),
        rec("b", "nuts-d6-short", phase="validate", test_ll=0.7, seconds=50.0),
        rec("b", "chees-map-16x64", phase="validate", test_ll=0.9, seconds=30.0),  # ran on one table only
        rec("a", "previous-default", phase="validate", test_ll=2.0, seconds=10.0),  # not a candidate
    ]
    rows = {r["sampler"]: r for r in bench.validation_summary(records)}
    assert rows["chees-map-8x125"]["mean_ll_gap"] == pytest.approx((0.9 + 0.2) / 2)
    assert [name for name, r in rows.items() if r["chosen"]] == ["chees-map-8x125"]
    assert bench.choose([], 2) is None


def test_an_exploratory_entry_is_summarised_and_shown_but_never_chosen(bench):
    """``default-lbfgs1000`` runs beside the candidates (``--phase validate``'s default methods) and is not one."""
    assert "default-lbfgs1000" in bench.EXPLORATORY and "default-lbfgs1000" in bench.VALIDATE_METHODS
    assert "default-lbfgs1000" not in bench.CANDIDATES
    starts = {"noise_choice_by": "starts"}  # the noise choice of the time, written out
    assert bench.fit_kwargs("default-lbfgs1000", 2, 100, False) == {**starts, "map": {"lbfgs_steps": 1000}}
    records = [
        rec("a", "chees-map", phase="validate", test_ll=1.0, seconds=30.0),
        rec("a", "default-lbfgs1000", phase="validate", test_ll=2.0, seconds=20.0),  # better and faster
    ]
    rows = {r["sampler"]: r for r in bench.validation_summary(records)}
    assert rows["default-lbfgs1000"]["mean_ll_gap"] == 0.0 and not rows["default-lbfgs1000"]["chosen"]
    assert [name for name, r in rows.items() if r["chosen"]] == ["chees-map"]
    assert "| default-lbfgs1000 |" in bench.render_validation({"records": records, "runs": []})


def test_the_polish_rule_adds_the_early_stopped_polish_only_when_better_on_time_and_as_calibrated(bench):
    """``polish_step``: a polish entry against the library's default, on every table; the rendered verdict also
    needs the time projected to the whole training rows within the goal."""
    name = "default-lbfgs-es"
    assert set(bench.POLISH_CANDIDATES) <= set(bench.EXPLORATORY) and not set(bench.POLISH_CANDIDATES) & set(
        bench.CANDIDATES
    )
    expected = {"noise_choice_by": "starts", "map": {"lbfgs_steps": 1000, "lbfgs_patience": 100}}
    assert bench.fit_kwargs(name, 2, 100, False) == expected

    def verdict(ll, seconds=20.0, tables=("a", "b")):
        records = [rec(t, "sigmabnn", phase="validate", test_ll=1.0, seconds=20.0) for t in ("a", "b")]
        records += [rec(t, name, phase="validate", test_ll=ll, seconds=seconds) for t in tables]
        return bench.polish_step(bench.validation_summary(records), 2, name), records

    better, records = verdict(1.1)
    page = bench.render_validation({"records": records, "runs": []})
    assert better is True and f"- `{name}`: the rule's verdict **add it**" in page and ": **add it**" in page
    assert verdict(0.9)[0] is False  # less accurate
    assert verdict(1.1, seconds=61.0)[0] is False  # over the time goal
    assert verdict(1.1, tables=("a",))[0] is False  # not run on every table
    assert bench.polish_step(bench.validation_summary(records[:2]), 2, name) is None  # the polish not run
    # 50 s on 500 rows is within the 60 s goal, but 62.6 s on the whole 625 training rows is not
    slow, records = verdict(1.1, seconds=50.0)
    assert slow is True and bench.projected_time_ratio(records[-1]) == pytest.approx(50.0 * 625 / 500 / 60.0)
    assert "**not added**" in bench.render_validation({"records": records, "runs": []})


def test_the_row_budgeted_polish_caps_its_iterations_by_the_rows_fit_trains_on(bench):
    """``default-lbfgs-es-rows``: ``min(1000, 2**22 // rows)`` L-BFGS iterations, the rows those of fit's own
    automatic split (90 % of a 10,000-row table: 9,000 -> 466 iterations)."""
    import pandas as pd

    name = "default-lbfgs-es-rows"
    expected = {"noise_choice_by": "starts", "map": {"lbfgs_patience": 100, "lbfgs_steps": 1000}}
    assert bench.fit_kwargs(name, 2, 100, False) == expected
    assert bench.fit_kwargs(name, 2, 8000, False)["map"]["lbfgs_steps"] == 2**22 // 8000 == 524
    df = pd.DataFrame({"a": np.arange(10_000.0), "y": np.arange(10_000.0)})
    rows = bench.fit_rows(name, df, False)
    assert rows == 9000 and bench.fit_kwargs(name, 1, rows, False)["map"]["lbfgs_steps"] == 466


def test_the_rule_then_picks_the_chosen_samplers_best_calibrated_recalibration(bench):
    base = {"test_ll": 1.0, "seconds": 30.0}
    records = [
        rec("a", "chees-map-8x125", phase="validate", coverage_68=0.75, coverage_95=0.97, **base),
        rec("a", "chees-map-8x125-auto-quantile", phase="validate", coverage_68=0.70, coverage_95=0.95, **base),
        rec("a", "chees-map-8x125-auto-scale", phase="validate", coverage_68=0.69, coverage_95=0.95, **base),
        rec("a", "chees-map-8x125-loo", phase="validate", coverage_68=0.68, coverage_95=0.95, seconds=90.0),
        # another sampler's recalibration is not a variant of the chosen one, however well calibrated
        rec("a", "chees-map-recal", phase="validate", coverage_68=0.68, coverage_95=0.95, test_ll=0.5),
        rec("a", "chees-map", phase="validate", coverage_68=0.68, coverage_95=0.95, test_ll=0.5),
    ]
    rows = {r["sampler"]: r for r in bench.validation_summary(records)}
    assert [name for name, r in rows.items() if r["chosen"]] == ["chees-map-8x125-auto-scale"]  # loo: too slow
    assert bench.sampler_options("chees-map-8x125-auto-scale") == bench.sampler_options("chees-map-8x125")
    assert bench.recalibrates("chees-map-8x125-loo") and not bench.recalibrates("chees-map-8x125")
    worse = [r if r["sampler"] != "chees-map-8x125-auto-scale" else {**r, "mean_abs_coverage_error": 1.0}
             for r in rows.values()]  # fmt: skip
    assert bench.choose(worse, 1) == "chees-map-8x125-auto-quantile"


def test_the_rule_then_takes_the_float32_twin_only_when_it_is_faster_and_its_ll_is_within_the_noise(bench):
    plain, plain32 = "chees-within-8x125-rows-w-s90", "chees-within-8x125-rows-w-s90-f32"
    auto, auto32 = "chees-within-8x125-rows-w-s90-auto", "chees-within-8x125-rows-w-s90-f32-auto"
    assert bench.with_float32(plain) == plain32 and bench.with_float32(auto) == auto32
    assert bench.float64_sibling(auto32) == auto and bench.with_float32(plain32) is None
    rows64 = [1.0, 0.5, 0.8, 1.2]

    def battery(shift, seconds32):
        rows32 = [v + shift + 0.01 * (-1) ** i for i, v in enumerate(rows64)]
        out = []
        for table in ("a", "b"):
            for name, rows, secs in ((plain, rows64, 30.0), (auto, rows64, 30.0), (plain32, rows32, seconds32),
                                     (auto32, rows32, seconds32)):  # fmt: skip
                out.append(rec(table, name, phase="validate", row_ll=rows, test_ll=float(np.mean(rows)),
                               seconds=secs, coverage_68=0.70 if "auto" in name else 0.75))  # fmt: skip
        return {r["sampler"]: r for r in bench.validation_summary(out)}

    within = battery(-0.002, 20.0)  # 0.002 nats lower, SE about 0.004: within the noise, faster
    assert within[plain32]["ll_vs_float64"] == pytest.approx(-0.002)
    assert within[plain32]["ll_vs_float64_se"] == pytest.approx(np.std([0.01, -0.01] * 2, ddof=1) / 2 / 2**0.5)
    assert [n for n, r in within.items() if r["chosen"]] == [auto32]
    # the twin is 0.002 nats worse on every row (SE 0): beyond the noise, so the float64 candidate stays
    exact = battery(-0.002, 20.0)
    worse = [{**r, "ll_vs_float64_se": 0.0} if r["sampler"] == plain32 else r for r in exact.values()]
    assert bench.choose(worse, 2) == auto
    slower = battery(-0.002, 40.0)  # within the noise but slower
    assert [n for n, r in slower.items() if r["chosen"]] == [auto]


def test_the_rule_last_takes_the_chosen_options_with_the_noise_model_choice_when_they_fit_better(bench):
    chosen = "chees-within-8x125-rows-w-sauto-b18w17-f32-auto"
    expected = {**bench.ENTRIES[chosen], "likelihood": "auto", "noise_choice_by": "starts"}
    assert bench.ENTRIES[bench.NOISE_CANDIDATE] == expected
    base = {"sampler": chosen, "mean_ll_gap": 0.10, "mean_abs_coverage_error": 0.040}

    def step(gap, coverage_error, name=chosen):
        auto = {"sampler": bench.NOISE_CANDIDATE, "mean_ll_gap": gap, "mean_abs_coverage_error": coverage_error}
        return bench.noise_model_step({bench.NOISE_CANDIDATE: auto}, {**base, "sampler": name})["sampler"]

    assert step(0.05, 0.045) == bench.NOISE_CANDIDATE  # better LL, coverage within the slack
    assert step(0.05, 0.055) == chosen  # better LL, coverage beyond the slack
    assert step(0.10, 0.030) == chosen  # no better LL (a tie keeps the Gaussian)
    assert step(0.05, 0.040, name="chees-map-8x125") == "chees-map-8x125"  # not the same options plus auto
    assert bench.noise_model_step({}, base) == base  # not eligible


# --------------------------------------------------------------------------- resume


def test_resume_skips_recorded_cells(bench):
    cells = [("test", "a", "sigmabnn"), ("test", "a", "numpyro"), ("test", "b", "sigmabnn")]
    records = [rec("a", "sigmabnn"), rec("a", "numpyro", status="timeout"), rec("b", "sigmabnn", phase="validate")]
    assert bench.pending_cells(cells, records) == [("test", "b", "sigmabnn")]
    assert bench.pending_cells(cells, records, force=True) == cells
    merged = bench.merge_record(records, rec("a", "sigmabnn", seconds=1.0))
    assert len(merged) == 3 and merged[0]["seconds"] == 1.0  # replaced in its place: the pages keep their order
    assert merged[1:] == records[1:]
    added = bench.merge_record(records, rec("c", "sigmabnn"))
    assert added[:3] == records and added[3]["table"] == "c"


def test_main_skips_recorded_cells(bench, tmp_path, monkeypatch):
    out = tmp_path / "d.json"
    out.write_text(json.dumps({"smoke": True, "runs": [], "records": [rec("sin1d-100", "sigmabnn", smoke=True)]}))
    ran = []

    def fake(spec, timeout, log):
        ran.append((spec["table"], spec["sampler"]))
        return rec(spec["table"], spec["sampler"], smoke=True)

    monkeypatch.setattr(bench, "run_subprocess", fake)
    assert bench.main(["--smoke", "--tables", "sin1d-100", "--methods", "sigmabnn,ensemble", "--out", str(out)]) == 0
    assert ran == [("sin1d-100", "ensemble")]
    data = json.loads(out.read_text())
    assert {r["sampler"] for r in data["records"]} == {"sigmabnn", "ensemble"}
    assert out.with_suffix(".md").exists()
    ran.clear()
    bench.main(["--smoke", "--tables", "sin1d-100", "--methods", "sigmabnn,ensemble", "--out", str(out)])
    assert ran == []


def test_smoke_results_go_to_tmp(bench):
    assert bench.default_out("test", smoke=True).parent == bench.SMOKE_DIR
    assert bench.default_out("validate", smoke=False) == bench.RESULTS_DIR / "defaults_validation.json"


# --------------------------------------------------------------------------- a real cell


@pytest.mark.heavy
@pytest.mark.parametrize("sampler", ["sigmabnn", "numpyro"])
def test_smoke_cell_in_a_subprocess(bench, sampler, tmp_path):
    if sampler == "numpyro":
        pytest.importorskip("numpyro")
    out = tmp_path / "defaults.json"
    cmd = [sys.executable, str(_REPO / "benchmarks" / "defaults.py"), "--smoke", "--tables", "sin1d-100"]
    cmd += ["--methods", sampler, "--out", str(out), "--timeout", "600"]
    subprocess.run(cmd, cwd=_REPO, check=True, capture_output=True, text=True, timeout=900)
    (r,) = json.loads(out.read_text())["records"]
    assert r["status"] == "ok", r.get("error")
    for key in ("table", "phase", "sampler", "n_train", "n_score", "num_features", "seconds", "rmse", "test_ll"):
        assert r[key] is not None, key
    assert (r["table"], r["phase"], r["sampler"], r["n_train"], r["n_score"], r["num_features"]) == (
        "sin1d-100",
        "test",
        sampler,
        100,
        2000,
        1,
    )
    assert 0 <= r["coverage_68"] <= 1 and 0 <= r["coverage_95"] <= 1 and np.isfinite(r["test_ll"])
    assert r["peak_rss_mb"] > 50 and r["wall_seconds"] >= r["seconds"] > 0
    assert isinstance(r["load_average_start"], float) and isinstance(r["kwargs"], dict)


def test_scaling_section(bench):
    recs = [
        rec(f"scaling10d-{n}", "sigmabnn", phase="scaling", n_train=n, seconds=n / 100, peak_rss_mb=500 + n / 1000)
        for n in (1000, 10000)
    ]
    recs.append(rec("scaling10d-100000", "sigmabnn", phase="scaling", n_train=100000, status="timeout", seconds=1200.0))
    md = bench.render_scaling(recs)
    assert "| scaling10d-10000 | sigmabnn | 10000 | 100.0 | 10.00 | 10 | 10.00 | 510 | 1.02 |" in md
    assert "timed out after 1200 s" in md
    assert "Scaling in rows" in bench.render_test({"records": recs, "runs": []})
    assert "the goals are not checkable" in md  # the 10^5-row fit timed out


@pytest.mark.parametrize(
    ("seconds", "rss", "linear", "bounded"),
    [((10, 90, 900), (500, 600, 700), "met", "met"), ((10, 90, 1001), (500, 600, 1300), "missed", "missed")],
)
def test_scaling_verdict(bench, seconds, rss, linear, bounded):
    recs = [
        rec(f"scaling10d-{n}", "sigmabnn", phase="scaling", n_train=n, seconds=s, peak_rss_mb=m)
        for n, s, m in zip((1000, 10000, 100000), seconds, rss, strict=True)
    ]
    md = bench.render_scaling(recs)
    assert f"**Linear cost: {linear}**" in md and f"**Bounded memory: {bounded}**" in md


def test_table_heading_counts_come_from_a_record_that_has_them(bench):
    """A table whose first record timed out (no counts) still shows its rows and inputs."""
    timed_out = {"table": "t", "sampler": "previous-default", "status": "timeout", "seconds": 480.0}
    recs = {"previous-default": timed_out, "sigmabnn": rec("t", "sigmabnn", n_train=270, n_score=2000)}
    assert "270 training rows, 3 input(s), 2000 test rows." in bench._table_heading("t", recs, "test")
    assert "? training rows, ? input(s), ? test rows." in bench._table_heading("t", {"x": timed_out}, "test")


def test_the_readme_quotes_the_committed_training_times(bench):
    """The README's training times are those ``defaults.json`` holds (a rerun that changes them must update it)."""
    data = json.loads((_REPO / "benchmarks" / "results" / "defaults.json").read_text())
    recs = [r for r in data["records"] if r.get("phase") == "test" and r.get("sampler") == "sigmabnn"]
    small = [r["seconds"] for r in recs if r.get("status") == "ok" and int(r["n_train"]) <= 2000]
    large = [r["seconds"] for r in recs if r.get("status") == "ok" and int(r["n_train"]) > 2000]
    scaling = [r for r in data["records"] if r.get("phase") == "scaling" and r.get("n_train") == 100000]
    readme = " ".join((_REPO / "README.md").read_text().split())
    assert f"a median of {np.median(small):.0f} s on the tables up to 2,000 rows (at most {max(small):.0f} s)" in readme
    assert f"{np.median(large):.0f} s on those of 7,000 to 20,000 rows (at most {max(large):.0f} s" in readme
    assert len(scaling) == 1 and f"; {scaling[0]['seconds']:.0f} s on a synthetic table of 10^5 rows" in readme


@pytest.mark.parametrize("n", [1, 90, 216, 256, 257, 270, 409, 512, 513, 900, 1024, 1025, 5000, 10**5])
def test_a_doubled_budget_gives_twice_the_rows_the_same_cap_and_warmup(bench, n):
    """The row rule with budget 2B at 2n rows is the library's default rule (budget B) at n rows."""
    from sigmabnn.train.mcmc import (
        CHEES_ROW_STEP_BUDGET,
        CHEES_WARMUP_ROW_STEP_BUDGET,
        chees_max_tree_depth,
        chees_num_warmup,
    )

    expected = {"max_tree_depth": chees_max_tree_depth(n), "num_warmup": chees_num_warmup(n)}
    assert bench.budget_settings(2 * CHEES_ROW_STEP_BUDGET, 2 * n, 2 * CHEES_WARMUP_ROW_STEP_BUDGET) == expected


def test_budget_candidates_double_the_rows_of_each_cap(bench):
    import pandas as pd

    name = "chees-within-8x125-rows-w-sauto-b18-f32-auto"
    assert bench.fit_kwargs(name, 6, 270, False) == {
        **{k: v for k, v in bench.ENTRIES[name].items() if k not in ("row_step_budget", "split")},
        "max_tree_depth": 9,
        "num_warmup": 600,
    }
    assert bench.budget_settings(2**18, 512)["max_tree_depth"] == 9 and bench.budget_settings(2**18, 513) == {
        "max_tree_depth": 8,
        "num_warmup": 300,
    }
    assert bench.budget_settings(2**18, 1025)["max_tree_depth"] == 7
    # the rows fit trains on under its automatic split: 10 % held out from 200 rows on (20 or more)
    df = pd.DataFrame({"a": np.arange(300.0), "y": np.arange(300.0)})
    assert bench.fit_rows(name, df, False) == 270 and bench.fit_rows(name, df.head(150), False) == 150
    assert bench.fit_rows("previous-default", df, False) == 240 and bench.fit_rows("chees-map", df, False) == 300
    # the pairs the rule compares: float32 twin and recalibrated variant
    assert bench.with_float32("chees-within-8x125-rows-w-sauto-b18") == "chees-within-8x125-rows-w-sauto-b18-f32"
    assert bench.sampler_options(name) == bench.sampler_options("chees-within-8x125-rows-w-sauto-b18-f32")


def test_the_warmup_budget_candidates_take_the_deeper_cap_and_the_default_warmup(bench):
    """``b18w17``: the cap of a 2**18 budget, the warm-up of the library's 2**17 (600 only up to 256 rows)."""
    name = "chees-within-8x125-rows-w-sauto-b18w17-f32-auto"
    kwargs = bench.fit_kwargs(name, 6, 270, False)
    assert (kwargs["max_tree_depth"], kwargs["num_warmup"]) == (9, 300)
    assert "warmup_budget" not in kwargs and "row_step_budget" not in kwargs
    assert bench.budget_settings(2**18, 256, 2**17) == {"max_tree_depth": 9, "num_warmup": 600}
    assert bench.budget_settings(2**18, 512, 2**17) == {"max_tree_depth": 9, "num_warmup": 300}
    assert bench.budget_settings(2**18, 513, 2**17) == {"max_tree_depth": 8, "num_warmup": 300}
    # the rule's pairs: the float32 twin and the recalibrated variant share the sampler's options
    base = "chees-within-8x125-rows-w-sauto-b18w17"
    assert bench.with_float32(base) == "chees-within-8x125-rows-w-sauto-b18w17-f32"
    assert bench.sampler_options(base + "-auto") == bench.sampler_options(base)


@pytest.mark.parametrize(
    ("n", "depth", "warmup"), [(100, 9, 600), (216, 9, 600), (256, 9, 600), (270, 8, 300), (512, 8, 300), (513, 7, 300)]
)
def test_the_row_rule_candidates_keep_the_rule_they_ran_with(bench, n, depth, warmup):
    """The ``-rows`` candidates ran with the library's rule of a 2**17 budget; they pin it, whatever the
    library's rule is now (``-rows`` with its own 300 warm-up iterations, ``-rows-w`` with the rule's)."""
    rows_w = bench.fit_kwargs("chees-within-8x125-rows-w-sauto-f32-auto", 6, n, False)
    assert (rows_w["max_tree_depth"], rows_w["num_warmup"]) == (depth, warmup)
    rows = bench.fit_kwargs("chees-within-8x125-rows", 6, n, False)
    assert (rows["max_tree_depth"], rows["num_warmup"]) == (depth, 300)


def test_row_rule_entries_count_the_rows_of_their_own_split(bench):
    import pandas as pd

    df = pd.DataFrame({"a": np.arange(300.0), "y": np.arange(300.0)})
    assert bench.fit_rows("chees-within-8x125-rows", df, False) == 240  # 80/10/10: fit_kwargs' candidates' split
    assert bench.fit_rows("chees-within-8x125-rows-w-s90", df, False) == 270
    assert bench.fit_rows("chees-within-8x125-rows-w-v20", df, False) == 240
    assert bench.fit_rows("chees-within-8x125-rows-w-sauto", df.head(150), False) == 150  # < 20 val rows: all


def test_the_library_polish_is_that_of_the_entry_the_committed_polish_run_added(bench):
    """The default ChEES fit's L-BFGS polish is the options of the one polish entry the committed
    ``defaults_lbfgs.json`` adds (:func:`polish_verdict`), at row counts around the budget's boundaries; above
    20,000 rows (minibatch MAP starts) there is none."""
    from sigmabnn.train.mcmc import default_config

    records = json.loads((bench.RESULTS_DIR / "defaults_lbfgs.json").read_text())["records"]
    added = [name for name in bench.POLISH_CANDIDATES if bench.polish_verdict(records, name)[1]]
    assert added == ["default-lbfgs-es-rows"]
    for n in (1, 100, 4194, 4195, 6421, 16_000, 20_000):
        options = bench.fit_kwargs(added[0], 6, n, False)["map"]
        config = default_config(n, 200, "chees").map
        assert (config.lbfgs_steps, config.lbfgs_patience) == (options["lbfgs_steps"], options["lbfgs_patience"]), n
    assert default_config(4195, 200, "chees").map.lbfgs_steps == 999  # 2**22 // 4195
    assert default_config(20_001, 200, "chees").map.lbfgs_steps == 0
    assert default_config(100, 200, "chees", validation=False).map.lbfgs_steps == 0  # nothing to stop on
    assert default_config(1000, 200, "nuts").map.lbfgs_steps == 0  # measured for ChEES only


def test_the_library_row_rule_is_that_of_the_candidate_the_committed_validation_chose(bench):
    """The library's ChEES cap and warm-up are those of the candidate :func:`choose` picks from the committed
    ``defaults_validation.json``, at every row count around the rule's boundaries."""
    from sigmabnn.train.mcmc import default_config

    data = json.loads((bench.RESULTS_DIR / "defaults_validation.json").read_text())
    chosen = [r["sampler"] for r in bench.validation_summary(data["records"]) if r["chosen"]]
    assert len(chosen) == 1
    for n in (1, 100, 256, 257, 270, 512, 513, 1024, 1025, 5000, 10**5):
        options = bench.fit_kwargs(chosen[0], 6, n, False)
        config = default_config(n, 200, "chees")
        assert (config.max_tree_depth, config.num_warmup) == (options["max_tree_depth"], options["num_warmup"]), n
        assert (config.num_chains, config.num_samples) == (options["num_chains"], options["num_samples"])


def test_a_variants_test_file_reads_its_own_speed_repeats(bench, tmp_path):
    """``defaults_sampled.json`` renders with ``defaults_speed_sampled.json`` where that exists, else the default's."""
    assert bench.speed_file(tmp_path / "defaults.json") == tmp_path / "defaults_speed.json"
    assert bench.speed_file(tmp_path / "defaults_sampled.json") == tmp_path / "defaults_speed.json"
    (tmp_path / "defaults_speed_sampled.json").write_text("{}")
    assert bench.speed_file(tmp_path / "defaults_sampled.json") == tmp_path / "defaults_speed_sampled.json"
