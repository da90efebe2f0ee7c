"""The UCI benchmark's protocol code (benchmarks/uci.py) on tiny synthetic splits."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from tests.conftest import load_benchmark

from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.fitted import FittedModel
from sigmabnn.model import BNN, Gaussian, Hyperparameters, num_params, parse_architecture

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "uci.py"


@pytest.fixture(scope="module")
def uci():
    return load_benchmark("uci")


def constant_model(x_train, y_train, bias: float, noise_precision: float) -> FittedModel:
    """A 2-3-1 network with zero kernels: its model-space predictive is N(bias, 1 / noise_precision) everywhere."""
    mlp = parse_architecture("2-3-1")
    theta = np.zeros(num_params(mlp))
    theta[-1] = bias  # the output bias is the last parameter
    hyper = Hyperparameters(np.full((1, 1), noise_precision), np.ones((1, 1, 2)), np.ones((1, 1, 2)))
    return FittedModel(
        bnn=BNN(mlp, likelihood=Gaussian()),
        draws=PosteriorDraws(theta[None, None], hyper),
        x_transform=Standardizer.fit(x_train),
        y_transform=TargetTransform.fit(y_train),
        feature_names=("x0", "x1"),
        target_name="y",
    )


def test_test_ll_and_rmse_on_the_original_scale(uci):
    rng = np.random.default_rng(0)
    x_train = rng.normal(size=(40, 2))
    y_train = rng.normal(50.0, 7.0, size=40)
    model = constant_model(x_train, y_train, bias=0.3, noise_precision=4.0)
    # the predictive in original units: N(mean_y + 0.3 std_y, (std_y / 2)^2)
    mu = y_train.mean() + 0.3 * y_train.std()
    sd = y_train.std() / 2.0
    x_test = rng.normal(size=(25, 2))
    y_test = rng.normal(55.0, 9.0, size=25)
    scores = uci.test_scores(model, x_test, y_test)
    assert scores["test_ll"] == pytest.approx(np.mean(stats.norm.logpdf(y_test, mu, sd)), rel=1e-9)
    assert scores["rmse"] == pytest.approx(math.sqrt(np.mean((y_test - mu) ** 2)), rel=1e-9)
    # the standardised-scale LL differs by log(std_y): the original scale is what is reported
    assert abs(scores["test_ll"] - np.mean(stats.norm.logpdf((y_test - mu) / y_train.std(), 0, 0.5))) > 1.0


def test_standardisation_uses_the_training_split_only(uci):
    rng = np.random.default_rng(1)
    n = 60
    x = np.c_[rng.normal(0.0, 1.0, n), np.full(n, 3.0)]  # second feature constant on every row
    y = x[:, 0] + 0.1 * rng.standard_normal(n)
    train, test = np.arange(40), np.arange(40, 60)
    x[test, 0] = x[test, 0] * 100.0 + 1000.0  # test rows on a wildly different scale
    y[test] += 500.0
    df = uci.split_frame(x, y, train, test)
    assert list(df["split"]).count("train") == 40 and list(df["split"]).count("test") == 20
    from sigmabnn.api import fit

    model, _ = fit(
        df, "y", ["x0", "x1"], split_column="split", method="ensemble", architecture="2-3-1",
        num_members=2, num_steps=20, progress=False,
    )  # fmt: skip
    np.testing.assert_allclose(model.x_transform.mean, x[train].mean(0), rtol=1e-12)
    np.testing.assert_allclose(model.x_transform.std[0], x[train, 0].std(), rtol=1e-12)
    assert model.x_transform.std[1] == 1.0  # constant column: centred only
    np.testing.assert_allclose(model.y_transform.mean, [y[train].mean()], rtol=1e-12)
    np.testing.assert_allclose(model.y_transform.scale, [y[train].std()], rtol=1e-12)
    with pytest.raises(ValueError, match="overlap"):
        uci.split_frame(x, y, train, np.array([39, 40]))


def test_load_dataset_reads_the_published_layout(uci, tmp_path):
    d = tmp_path / "toy" / "data"
    d.mkdir(parents=True)
    data = np.arange(30, dtype=float).reshape(6, 5)
    np.savetxt(d / "data.txt", data)
    np.savetxt(d / "index_features.txt", [0, 1, 3])
    np.savetxt(d / "index_target.txt", [4])
    np.savetxt(d / "n_splits.txt", [2])
    np.savetxt(d / "n_hidden.txt", [50])
    for i, (tr, te) in enumerate((([0, 1, 2, 3], [4, 5]), ([2, 3, 4, 5], [0, 1]))):
        np.savetxt(d / f"index_train_{i}.txt", np.asarray(tr, float))  # written as floats, as published
        np.savetxt(d / f"index_test_{i}.txt", np.asarray(te, float))
    ds = uci.load_dataset(tmp_path, "toy")
    np.testing.assert_array_equal(ds.x, data[:, [0, 1, 3]])
    np.testing.assert_array_equal(ds.y, data[:, 4])
    assert ds.n_hidden == 50 and len(ds.train_index) == 2
    np.testing.assert_array_equal(ds.test_index[1], [0, 1])
    assert ds.train_index[0].dtype.kind == "i"


def test_aggregate_merge_and_table(uci):
    rec = lambda split, rmse, ll, method="ensemble": {
        "dataset": "energy", "method": method, "split": split, "rmse": rmse, "test_ll": ll,
        "seconds": 10.0 + split, "coverage_95": 0.95,
    }  # fmt: skip
    old = [rec(0, 1.0, -1.0), rec(1, 9.0, -9.0)]
    merged = uci.merge(old, [rec(1, 2.0, -2.0), rec(2, 3.0, -3.0)])
    assert [r["split"] for r in merged] == [0, 1, 2] and merged[1]["rmse"] == 2.0
    (row,) = uci.aggregate(merged)
    assert row["n_splits"] == 3 and row["rmse"] == pytest.approx(2.0)
    assert row["rmse_se"] == pytest.approx(np.std([1.0, 2.0, 3.0]) / math.sqrt(3))  # ddof = 0
    assert row["test_ll"] == pytest.approx(-2.0) and row["seconds"] == pytest.approx(33.0)
    best = {
        ("energy", "rmse"): {"mean": 2.0, "stderr": 0.1, "method": "X", "decimals": 2},
        ("energy", "test_ll"): {"mean": -1.5, "stderr": 0.1, "method": "Y", "decimals": 2},
    }
    assert uci.wins(2.004, best[("energy", "rmse")], "rmse")  # equal at the published precision
    assert uci.outcome(2.004, best[("energy", "rmse")], "rmse") == "tie"
    assert uci.outcome(1.994, best[("energy", "rmse")], "rmse") == "win"
    assert uci.outcome(-1.504, best[("energy", "test_ll")], "test_ll") == "tie"
    assert not uci.strict_win(2.004, best[("energy", "rmse")], "rmse")  # a tie is no strict win
    assert uci.strict_win(1.999, best[("energy", "rmse")], "rmse") and uci.strict_win(
        -1.49, best[("energy", "test_ll")], "test_ll"
    )
    assert not uci.wins(2.006, best[("energy", "rmse")], "rmse")
    assert not uci.wins(-2.0, best[("energy", "test_ll")], "test_ll")
    doc = {"records": merged, "results": [row], "runs": []}
    table = uci.markdown(doc, best)
    assert "| energy | ensemble | 3 | 2.00 +- 0.47 | 2.00 (X) | *tie* | -2.00 +- 0.47 | -1.50 (Y) | lose |" in table
    # the goal's tally counts the tie, the strict tally does not
    assert "| ensemble | 1 of 7 | 0 | 0 | 0 | 1 (energy) | 1 (energy) | 0 |" in table
    assert "extrapolat" in table.lower()


def _toy_uci(root: Path, name: str = "toy", n: int = 48, n_splits: int = 2) -> None:
    """A tiny data set in the published layout: y = sin(x0) + x1 / 2 + noise."""
    d = root / "data" / "uci" / name / "data"
    d.mkdir(parents=True)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, 2))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] + 0.1 * rng.standard_normal(n)
    np.savetxt(d / "data.txt", np.c_[x, y])
    np.savetxt(d / "index_features.txt", [0, 1])
    np.savetxt(d / "index_target.txt", [2])
    np.savetxt(d / "n_splits.txt", [n_splits])
    np.savetxt(d / "n_hidden.txt", [4])
    for i in range(n_splits):
        perm = np.random.default_rng(i).permutation(n).astype(float)
        np.savetxt(d / f"index_train_{i}.txt", perm[: n - 8])
        np.savetxt(d / f"index_test_{i}.txt", perm[n - 8 :])
    published = (
        "dataset,method,metric,mean,stderr,source\n" + f"{name},X,rmse,0.50,0.01,s\n{name},X,test_ll,-1.00,0.01,s\n"
    )
    (root / "data" / "uci" / "published_results.csv").write_text(published)


@pytest.mark.heavy
def test_jobs_run_merges_records_into_an_existing_file(uci, tmp_path):
    """Two worker processes over 1 split x 2 methods: every cell lands in the JSON, old records are kept."""
    import json
    import os
    import subprocess
    import sys

    _toy_uci(tmp_path)
    out = tmp_path / "uci.json"
    old = {"dataset": "energy", "method": "nuts", "split": 7, "rmse": 1.0, "test_ll": -1.0}
    old |= {"seconds": 1.0, "cpu_seconds": 1.0, "coverage_95": 0.9}
    out.write_text(json.dumps({"records": [old], "runs": []}))
    env = os.environ | {"SIGMABNN_SHARED": str(tmp_path)}
    cmd = [sys.executable, str(_PATH), "--datasets", "toy", "--methods", "bbb,ensemble", "--splits", "1"]
    proc = subprocess.run(
        [*cmd, "--jobs", "2", "--smoke", "--out", str(out)], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    keys = {(r["dataset"], r["method"], r["split"]) for r in doc["records"]}
    assert keys == {("energy", "nuts", 7)} | {("toy", m, 0) for m in ("bbb", "ensemble")}
    (run,) = doc["runs"]
    assert run["jobs"] == 2 and run["cells_done"] == 2 and run["cells_failed"] == 0 and not run["interrupted"]
    assert run["cpu_seconds"] == pytest.approx(sum(r["cpu_seconds"] for r in doc["records"][1:]))
    toy = [r for r in doc["records"] if r["dataset"] == "toy"]
    assert all(np.isfinite(r["rmse"]) and np.isfinite(r["test_ll"]) for r in toy)
    assert {r["n_train"] for r in toy} == {40}
    table = (tmp_path / "uci.md").read_text()
    assert "| toy | bbb | 1 |" in table and "| toy | ensemble | 1 |" in table and not list(tmp_path.glob("*.tmp"))
    # a bad split number is a one-line error, exit 2, and leaves the file as it was
    before = out.read_text()
    bad = subprocess.run([*cmd[:-2], "--split-ids", "5", "--out", str(out)], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "splits 0..1" in bad.stderr and out.read_text() == before


def test_method_options_size_the_budget_by_training_rows(uci):
    """Larger training sets get no more NUTS gradients x rows than the small sets; VI and ensemble steps shrink."""

    def nuts_work(name):  # worst case: every iteration a full tree of 2**depth - 1 gradients over n rows
        n, p, h = uci.SIZES[name]
        o = uci.method_options("nuts", n, p, h)
        assert o["learn_noise"] and o["learn_prior"] and o["architecture"] == f"{p}-{h}-1"
        return n * o["num_chains"] * (o["num_warmup"] + o["num_samples"]) * (2 ** o["max_tree_depth"] - 1)

    small = [d for d in uci.DATASETS if uci.SIZES[d][0] <= uci.SIZE_CLASSES[0]]
    assert small == ["bostonHousing", "energy", "wine-quality-red"]
    assert max(nuts_work(d) for d in uci.DATASETS) == max(nuts_work(d) for d in small)
    protein = uci.method_options("ensemble", 41157, 9, 100)
    boston = uci.method_options("ensemble", 455, 13, 50)
    assert protein["num_members"] == boston["num_members"] == 5 and protein["architecture"] == "9-100-1"
    # each minibatch step shuffles all n rows: protein gets few, large minibatches (at most 100 epochs)
    assert protein["num_steps"] < boston["num_steps"] and protein["num_steps"] * protein["batch_size"] <= 100 * 41157
    assert boston["batch_size"] is None and uci.method_options("bbb", 455, 13, 50)["batch_size"] is None
    with pytest.raises(ValueError, match="unknown method"):
        uci.method_options("sgld", 100, 2, 50)
    smoke = uci.smoke_options(uci.method_options("nuts", 455, 13, 50))
    assert smoke["num_warmup"] < 50 and smoke["map"].num_steps < 50 and smoke["architecture"] == "13-50-1"


def test_merge_docs_combines_runs_done_in_pieces(uci):
    rec = lambda split, rmse: {"dataset": "energy", "method": "bbb", "split": split, "rmse": rmse}
    a = {"records": [rec(0, 1.0), rec(1, 5.0)], "runs": [{"command": "a"}]}
    b = {"records": [rec(1, 2.0), rec(2, 3.0)], "runs": [{"command": "b"}]}
    merged = uci.merge_docs(a, b)
    assert [(r["split"], r["rmse"]) for r in merged["records"]] == [(0, 1.0), (1, 2.0), (2, 3.0)]
    assert merged["runs"] == [{"command": "a"}, {"command": "b"}]
    assert uci.merge_docs(merged, b)["runs"] == merged["runs"]  # merging the same file twice adds nothing
    assert a["records"][1]["rmse"] == 5.0  # inputs untouched


def test_validation_data_holds_out_training_rows_only(uci):
    """--validate scores on a seeded share of each split's training rows; the published test rows are never used."""
    rng = np.random.default_rng(4)
    train = [np.arange(0, 90), np.arange(10, 100)]
    test = [np.arange(90, 100), np.arange(0, 10)]
    data = uci.UCIData("toy", rng.normal(size=(100, 2)), rng.normal(size=100), train, test, 4)
    val = uci.validation_data(data, seed=0)
    for i in range(2):
        assert np.intersect1d(val.train_index[i], val.test_index[i]).size == 0
        np.testing.assert_array_equal(np.sort(np.r_[val.train_index[i], val.test_index[i]]), np.sort(train[i]))
        assert np.intersect1d(np.r_[val.train_index[i], val.test_index[i]], test[i]).size == 0
        assert val.test_index[i].size == round(uci.VALIDATION_FRACTION * 90)
    again = uci.validation_data(data, seed=0)
    np.testing.assert_array_equal(again.test_index[0], val.test_index[0])  # reproducible
    assert not np.array_equal(np.sort(val.test_index[0]), np.sort(val.test_index[1] - 10))  # a draw per split


def test_variants_and_the_validated_choice(uci):
    base = uci.method_options("nuts", 455, 13, 50)
    assert uci.apply_variant(base, "2x50")["architecture"] == "13-50-50-1"
    assert uci.apply_variant(base, "student_t")["likelihood"] == "student_t"
    assert uci.apply_variant(base, "map_long")["map"].num_steps > base["map"].num_steps
    steps = [uci.apply_variant(base, v)["map"].num_steps for v in ("map_long", "map_xlong", "map_xxlong", "map_100k")]
    assert steps == sorted(steps) and len(set(steps)) == 4
    assert uci.apply_variant(base, "base") == base
    mid = uci.method_options("nuts", 7373, 8, 50)
    long = uci.apply_variant(mid, "mid_long")
    assert long["map"] == uci.apply_variant(mid, "map_long")["map"] and long["num_chains"] == mid["num_chains"]
    for k in ("num_warmup", "num_samples", "max_tree_depth"):
        assert long[k] > mid[k]
    wide = uci.apply_variant(mid, "mid_long+chains4")
    assert wide["num_chains"] == 4 > mid["num_chains"] and wide == long | {"num_chains": 4}
    assert uci.apply_variant(mid, "mid_long+chains8") == long | {"num_chains": 8}
    assert uci.apply_variant(mid, "mid_long+chains16+float32") == long | {"num_chains": 16, "dtype": "float32"}
    assert uci.apply_variant(uci.method_options("bbb", 455, 13, 50), "float32")["dtype"] == "float32"
    with pytest.raises(ValueError, match="NUTS setting"):
        uci.apply_variant(uci.method_options("bbb", 455, 13, 50), "student_t")
    rec = lambda method, split, ll: {"dataset": "energy", "method": method, "split": split, "rmse": 1.0,
                                     "test_ll": ll, "seconds": 1.0, "coverage_95": 0.9}  # fmt: skip
    records = [rec("nuts[base]", s, -1.0) for s in (0, 1)] + [rec("nuts[2x50]", s, -0.5) for s in (0, 1)]
    records += [rec("nuts[student_t]", 0, 0.0)]  # best, but on fewer splits: not eligible
    doc = {"records": records, "results": uci.aggregate(records), "runs": []}
    assert [r["method"] for r in doc["results"]] == ["nuts[base]", "nuts[student_t]", "nuts[2x50]"]
    assert uci.chosen_variants(doc) == {("energy", "nuts"): "2x50"}
    over = frozenset({("energy", "nuts", "2x50")})  # the best, but over the budget: the next best is chosen
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(uci, "OVER_BUDGET", over)
        assert uci.chosen_variants(doc) == {("energy", "nuts"): "base"}
        md = uci.validation_markdown(doc)
        assert "over budget |" in next(line for line in md.splitlines() if "| nuts[2x50] |" in line)
    table = uci.validation_markdown(doc)
    assert "| energy | nuts[2x50] | 2 |" in table and table.count("**chosen**") == 1


def test_validated_choices_match_the_committed_validation(uci):
    """NUTS_VARIANT and NUTS_2X50 are what results/uci_validation.json chose, not picked by hand."""
    import json

    path = uci.RESULTS / "uci_validation.json"
    if not path.is_file():
        pytest.skip(f"no validation results at {path}")
    doc = json.loads(path.read_text())
    overall, one_layer = uci.chosen_variants(doc), uci.chosen_variants(doc, without="2x50")
    nuts_sets = {d for d, m in overall if m == "nuts"}
    assert {d: v for (d, m), v in one_layer.items() if m == "nuts" and v != "base"} == uci.NUTS_VARIANT
    assert {d: v for (d, m), v in overall.items() if m == "nuts" and "2x50" in v.split("+")} == uci.NUTS_2X50
    assert set(uci.NUTS_VARIANT) | set(uci.NUTS_2X50) <= nuts_sets
    for name in uci.NUTS_2X50:
        n, p, h = uci.SIZES[name]
        assert uci.method_runs("nuts_2x50", name)
        assert uci.method_options("nuts_2x50", n, p, h, dataset=name)["architecture"] == f"{p}-{h}-{h}-1"
    for name in set(uci.DATASETS) - set(uci.NUTS_2X50):
        assert not uci.method_runs("nuts_2x50", name) and uci.method_runs("nuts", name)


def test_validate_cells_label_variants_on_the_base_settings(uci, tmp_path):
    """--validate plans one cell per (split, variant) on the base settings; a plain run plans the chosen ones."""
    _toy_uci(tmp_path, name="wine-quality-red", n_splits=3)
    root = tmp_path / "data" / "uci"
    args = uci.parse_args(["--validate", "--methods", "nuts", "--variants", "base,student_t,2x50+map_long"])
    cells = uci.cells_for(args, root, ["wine-quality-red"], ["nuts"])
    assert sorted((c[1], c[2]) for c in cells) == sorted(
        (s, f"nuts[{v}]") for s in range(uci.VALIDATION_SPLITS) for v in ("base", "student_t", "2x50+map_long")
    )
    opts = {c[2]: c[3] for c in cells if c[1] == 0}
    assert "likelihood" not in opts["nuts[base]"] and opts["nuts[student_t]"]["likelihood"] == "student_t"
    assert (
        opts["nuts[2x50+map_long]"]["architecture"] == "2-4-4-1"
        and opts["nuts[2x50+map_long]"]["map"].num_steps == 4000
    )
    plain = uci.cells_for(uci.parse_args(["--splits", "1"]), root, ["wine-quality-red"], list(uci.METHODS))
    chosen = uci.NUTS_VARIANT.get("wine-quality-red", "base")
    (nuts,) = [c for c in plain if c[2] == "nuts"]
    assert nuts[3] == uci.apply_variant(uci.method_options("nuts", 40, 2, 4), chosen)
    assert {c[2] for c in plain} == {m for m in uci.METHODS if uci.method_runs(m, "wine-quality-red")}
    with pytest.raises(ValueError, match="unknown variant"):
        uci.cells_for(uci.parse_args(["--validate", "--variants", "base,bogus"]), root, ["wine-quality-red"], ["nuts"])


def test_stale_records_are_those_run_with_other_settings(uci):
    """A record whose options differ from today's method_options (e.g. before a validated change) is flagged."""
    import json

    n, p, h = uci.SIZES["kin8nm"]
    opts = uci.method_options("nuts", n, p, h, dataset="kin8nm")
    as_run = json.loads(json.dumps({k: (v._asdict() if hasattr(v, "_asdict") else v) for k, v in opts.items()
                                    if k != "progress"}))  # fmt: skip
    rec = lambda split, options: {"dataset": "kin8nm", "method": "nuts", "split": split, "n_train": n,
                                  "options": options}  # fmt: skip
    assert uci.stale_records([rec(0, as_run)]) == {}
    older = as_run | {"max_tree_depth": as_run["max_tree_depth"] + 1}
    assert uci.stale_records([rec(0, as_run), rec(3, older), rec(1, older)]) == {("kin8nm", "nuts"): [3, 1]}


def test_table_numbers_keep_two_significant_digits_below_one_tenth(uci):
    assert uci._fmt(2.6612, 0.2571) == "2.66 +- 0.26"
    assert uci._fmt(0.06348, 0.0011) == "0.063 +- 0.001"
    assert uci._fmt(0.000294, 0.0000213) == "0.00029 +- 0.00002"
    assert uci._fmt(0.0, 0.0) == "0.00 +- 0.00"


def test_measured_run_line_reports_the_latest_whole_reduced_run(uci):
    whole = sum(uci.REDUCED_SPLITS[d] for d in uci.DATASETS for m in uci.METHODS if uci.method_runs(m, d))
    assert whole > len(uci.DATASETS) * 3  # every data set runs nuts, bbb and the ensemble, 2 or more splits each

    def run(date, seconds, planned=whole, done=None, failed=0, interrupted=False):
        return {
            "date": date,
            "seconds": seconds,
            "jobs": 2,
            "cells_planned": planned,
            "cells_done": planned if done is None else done,
            "cells_failed": failed,
            "interrupted": interrupted,
            "loadavg_start": [0.5, 0.5, 0.5],
        }

    assert "no run of the whole reduced run" in uci.measured_run_line({"runs": []})
    partial = [run("2026-01-05", 60.0, planned=5), run("2026-01-06", 60.0, done=whole - 1)]
    partial += [run("2026-01-07", 60.0, failed=1), run("2026-01-08", 60.0, interrupted=True)]
    assert "no run of the whole reduced run" in uci.measured_run_line({"runs": partial})
    line = uci.measured_run_line({"runs": [run("2026-01-02", 3000.0), *partial, run("2026-01-01", 4000.0)]})
    assert "on 2026-01-02: **50.0 min of wall time** with 2 workers, within the 60-minute budget" in line
    line = uci.measured_run_line({"runs": [run("2026-01-02", 3000.0), run("2026-01-03", 3660.0)]})
    assert "on 2026-01-03: **61.0 min of wall time**" in line and "over the 60-minute budget" in line
