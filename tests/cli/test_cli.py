"""End to end through the command line: CSV -> train -> predict -> evaluate -> info, on a small synthetic table."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main

TINY = ["--chains", "2", "--warmup", "60", "--draws", "40", "--arch", "2-8-1", "--seed", "1"]
LEVEL_COLUMNS = ["lower_0.68", "upper_0.68", "lower_0.95", "upper_0.95"]
COLUMNS = ["mean", "std", "epistemic_std", "aleatoric_std", *LEVEL_COLUMNS]
#: Last columns of every prediction of a model that stores its training domain.
DOMAIN_COLUMNS = ["in_domain", "domain_distance"]


def synthetic_table(n: int, seed: int) -> pd.DataFrame:
    """Two inputs, a smooth positive target with 5 % multiplicative noise (so it also works as a log target)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2.0, 2.0, n)
    b = rng.uniform(0.0, 1.0, n)
    clean = np.exp(0.5 * np.sin(a) + b)
    return pd.DataFrame({"a": a, "b": b, "y": clean * (1.0 + 0.05 * rng.standard_normal(n)), "clean": clean})


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cli")
    train = synthetic_table(120, seed=0).drop(columns="clean")
    train.loc[3, "a"] = np.nan  # one failed row: dropped and reported
    train.to_csv(d / "train.csv", index=False)
    synthetic_table(60, seed=1).to_csv(d / "test.csv", index=False)
    return d


class Trained(NamedTuple):
    path: Path
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def trained(workdir: Path) -> Trained:
    """One training run through main(), with its summary captured (progress bars are off: not a terminal)."""
    out = workdir / "model.sbnn"
    argv = ["train", str(workdir / "train.csv"), "--target", "y", "--features", "a,b", *TINY, "--out", str(out)]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv)
    assert code == 0, stderr.getvalue()
    return Trained(out, stdout.getvalue(), stderr.getvalue())


@pytest.fixture(scope="module")
def model(trained: Trained) -> Path:
    return trained.path


@pytest.fixture(scope="module")
def log_model(workdir: Path) -> Path:
    out = workdir / "log_model.sbnn"
    # all numeric columns as inputs, plus one derived from them (recomputed from a and b at prediction time)
    argv = ["train", str(workdir / "train.csv"), "--target", "y", "--log-target", "--derive", "ab=a*b", *TINY]
    assert main([*argv, "--arch", "3-8-1", "-q", "--out", str(out)]) == 0
    return out


def read_csv_text(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def test_train_writes_a_model_and_prints_a_summary(trained: Trained, workdir: Path) -> None:
    assert (trained.path / "model.json").is_file() and (trained.path / "arrays.npz").is_file()
    text = trained.stdout
    assert f"model written to {trained.path}" in text
    for label in ("acceptance", "divergences", "R-hat", "metrics (original space)", "R^2", "coverage 0.95 interval"):
        assert label in text, label
    # the row with a missing value was dropped, counted, and said so on stderr
    assert "1 of 120 rows with missing values (a: 1)" in text
    assert "dropped 1 row with missing or non-finite values" in trained.stderr
    # no temporary files left beside the model
    assert sorted(p.name for p in workdir.iterdir() if p.name.startswith(".")) == []


def test_predict_columns_and_consistency(model: Path, workdir: Path) -> None:
    out = workdir / "pred.csv"
    assert main(["predict", str(model), str(workdir / "test.csv"), "-o", str(out)]) == 0
    pred = pd.read_csv(out)
    assert list(pred.columns) == [*COLUMNS, *DOMAIN_COLUMNS]
    assert len(pred) == 60
    assert np.all(np.isfinite(pred[COLUMNS].to_numpy()))
    assert pred["in_domain"].dtype == bool and pred["in_domain"].mean() > 0.9  # held-out rows of the same inputs
    # total variance = epistemic + aleatoric (law of total variance over the sampled networks)
    np.testing.assert_allclose(pred["std"] ** 2, pred["epistemic_std"] ** 2 + pred["aleatoric_std"] ** 2, rtol=1e-6)
    # nested intervals around the mean
    assert np.all(pred["lower_0.95"] <= pred["lower_0.68"]) and np.all(pred["upper_0.68"] <= pred["upper_0.95"])
    assert np.all(pred["lower_0.68"] < pred["mean"]) and np.all(pred["mean"] < pred["upper_0.68"])
    # the model learned something: R^2 on the noise-free truth well above zero even with tiny sampling
    truth = pd.read_csv(workdir / "test.csv")["clean"]
    r2 = 1.0 - np.mean((pred["mean"] - truth) ** 2) / np.var(truth)
    assert r2 > 0.7


def test_predict_float32_agrees_with_float64(model: Path, workdir: Path) -> None:
    out64, out32 = workdir / "pred64.csv", workdir / "pred32.csv"
    assert main(["predict", str(model), str(workdir / "test.csv"), "-o", str(out64)]) == 0
    assert main(["predict", str(model), str(workdir / "test.csv"), "-o", str(out32), "--float32"]) == 0
    a, b = pd.read_csv(out64), pd.read_csv(out32)
    assert list(a.columns) == list(b.columns) == [*COLUMNS, *DOMAIN_COLUMNS]
    np.testing.assert_allclose(b.drop(columns="in_domain").to_numpy(), a.drop(columns="in_domain").to_numpy(),
                               rtol=1e-4, atol=1e-6)  # fmt: skip
    assert (a["in_domain"] == b["in_domain"]).all()


def test_predict_to_stdout_matches_file_and_levels(model: Path, workdir: Path, capsys) -> None:
    out = workdir / "pred_levels.csv"
    argv = ["predict", str(model), str(workdir / "test.csv"), "--level", "0.5", "--level", "0.99"]
    assert main([*argv, "-o", str(out)]) == 0
    capsys.readouterr()
    assert main([*argv, "-o", "-"]) == 0
    from_stdout = read_csv_text(capsys.readouterr().out)
    from_file = pd.read_csv(out)
    assert list(from_file.columns) == [
        "mean",
        "std",
        "epistemic_std",
        "aleatoric_std",
        *["lower_0.5", "upper_0.5", "lower_0.99", "upper_0.99"],
        *DOMAIN_COLUMNS,
    ]
    pd.testing.assert_frame_equal(from_stdout, from_file)


def test_predict_with_inputs_keeps_rows(model: Path, workdir: Path) -> None:
    out = workdir / "pred_inputs.csv"
    assert main(["predict", str(model), str(workdir / "test.csv"), "--with-inputs", "-o", str(out)]) == 0
    pred = pd.read_csv(out)
    test = pd.read_csv(workdir / "test.csv")
    assert list(pred.columns) == [*test.columns, *COLUMNS, *DOMAIN_COLUMNS]
    np.testing.assert_allclose(pred["a"], test["a"])


@pytest.mark.parametrize("suffix", [".parquet", ".PQ"])
def test_predict_writes_parquet_when_the_output_says_so(model: Path, workdir: Path, suffix: str) -> None:
    """An OUT ending in .parquet (or .pq) is a Parquet file with the CSV's columns and values (it was a CSV
    whatever the name), at full precision; nothing else is left beside it."""
    csv, parquet = workdir / "pred_fmt.csv", workdir / f"pred_fmt{suffix}"
    argv = ["predict", str(model), str(workdir / "test.csv"), "--with-inputs"]
    assert main([*argv, "-o", str(csv)]) == 0 and main([*argv, "-o", str(parquet)]) == 0
    assert parquet.read_bytes()[:4] == b"PAR1"
    from_csv, from_parquet = pd.read_csv(csv), pd.read_parquet(parquet)
    assert list(from_parquet.columns) == list(from_csv.columns) and from_parquet["in_domain"].dtype == bool
    pd.testing.assert_frame_equal(from_parquet, from_csv, check_exact=False, rtol=1e-9)
    assert not [q for q in workdir.iterdir() if q.name.startswith(".") and "pred_fmt" in q.name]


def test_log_target_has_log_space_columns(log_model: Path, workdir: Path) -> None:
    out = workdir / "pred_log.csv"
    assert main(["predict", str(log_model), str(workdir / "test.csv"), "-o", str(out)]) == 0
    pred = pd.read_csv(out)
    assert list(pred.columns) == COLUMNS + [f"log10_{c}" for c in COLUMNS] + DOMAIN_COLUMNS
    # the derived input was recomputed from the raw columns (test.csv has no column ab)
    assert "ab" not in pd.read_csv(workdir / "test.csv").columns
    # intervals in the original space are the back-transformed log-space intervals (quantiles commute with 10**)
    for c in LEVEL_COLUMNS:
        np.testing.assert_allclose(pred[c], 10.0 ** pred[f"log10_{c}"], rtol=1e-6)
    assert np.all(pred["lower_0.95"] > 0)


def test_evaluate_json_and_table(model: Path, workdir: Path, capsys) -> None:
    assert main(["evaluate", str(model), str(workdir / "test.csv"), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    flat = json.dumps(metrics).lower()
    for key in ("r2", "rmse", "nll", "coverage"):
        assert key in flat
    assert main(["evaluate", str(model), str(workdir / "test.csv")]) == 0
    captured = capsys.readouterr()
    assert "rmse" in captured.out.lower() and "training rows" not in captured.err  # fresh rows: no warning


def test_evaluate_warns_when_the_rows_are_the_training_rows(model: Path, workdir: Path, tmp_path: Path, capsys) -> None:
    """Scoring the training table (its 119 usable rows): the rows the fit trained on (its random split's train
    part) are counted in one warning line; the JSON carries the count."""
    from sigmabnn.io.model_file import load_model

    n_train = load_model(model).report.data.train
    usable = tmp_path / "train_usable.csv"
    pd.read_csv(workdir / "train.csv").dropna().to_csv(usable, index=False)
    assert main(["evaluate", str(model), str(usable), "--json"]) == 0
    captured = capsys.readouterr()
    dom = json.loads(captured.out)["domain"]
    assert dom["n_training_inputs"] == n_train and dom["all_training_inputs_stored"] is True
    warning = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert warning == [
        f"warning: {n_train} of 119 rows have the inputs of the model's training rows: their scores are not "
        "held-out (score rows the model was not trained on)"
    ]


def test_info_shows_derived_features_and_log_target(log_model: Path, capsys) -> None:
    assert main(["info", str(log_model), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["features"] == ["a", "b", "ab"]
    assert info["derived"] == [["ab", "a*b"]]
    assert info["log_target"] is True


def test_evaluate_log_target_reports_both_spaces(log_model: Path, workdir: Path, capsys) -> None:
    assert main(["evaluate", str(log_model), str(workdir / "test.csv"), "--json"]) == 0
    flat = json.dumps(json.loads(capsys.readouterr().out)).lower()
    assert "log" in flat and "original" in flat


def test_info_describes_the_model(model: Path, capsys) -> None:
    assert main(["info", str(model), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["target"] == "y"
    assert info["features"] == ["a", "b"]
    assert info["architecture"] == "2-8-1"
    assert info["chains"] == 2 and info["draws_per_chain"] == 40
    assert main(["info", str(model)]) == 0
    out = capsys.readouterr().out
    assert "2-8-1" in out and ": 2 chains x 40 = 80 networks" in out


@pytest.mark.parametrize(
    ("method", "networks", "line"),
    [("nuts", (1, 5), "nuts: 1 chain x 5 = 5 networks"), ("ensemble", (1, 5), "ensemble: 5 members, each trained"),
     ("bbb", (1, 1000), "bbb: 1000 networks drawn from the fitted variational distribution")],
)  # fmt: skip
def test_info_says_how_the_networks_were_made(method: str, networks: tuple[int, int], line: str) -> None:
    """An ensemble has members and a variational fit draws networks: neither has "1 chains"."""
    from sigmabnn.cli.info import draws_text

    chains, per_chain = networks
    info = {"method": method, "chains": chains, "draws_per_chain": per_chain, "networks": chains * per_chain}
    assert line in draws_text(info)


def _run_cli(*args: str, code: str = "") -> subprocess.CompletedProcess:
    prog = code or "import sys; from sigmabnn.cli.main import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", prog, *args], capture_output=True, text=True, timeout=120)


def test_version_does_not_import_jax() -> None:
    """``--version`` answers without importing JAX (its import is what made it slow); no timing assert."""
    prog = (
        "import sys\n"
        "from sigmabnn.cli.main import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit as e:\n    code = e.code\n"
        "print('JAX' if 'jax' in sys.modules else 'NOJAX', code)\n"
    )
    result = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60)
    assert result.stdout.split()[0:2] == ["sigmabnn", _version()]
    assert result.stdout.split()[-2:] == ["NOJAX", "0"]


def test_help_does_not_import_jax() -> None:
    prog = (
        "import sys\n"
        "from sigmabnn.cli.main import main\n"
        "for argv in (['--help'], ['train', '--help'], ['predict', '--help'], ['demo', '--help']):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('JAX' if 'jax' in sys.modules else 'NOJAX')\n"
    )
    result = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert "--target" in result.stdout and "--level" in result.stdout
    assert result.stdout.split()[-1] == "NOJAX"


def test_console_script_exit_code() -> None:
    result = _run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"sigmabnn {_version()}"


def _version() -> str:
    from sigmabnn._version import __version__

    return __version__


def test_info_says_when_a_model_is_an_interrupted_run() -> None:
    from sigmabnn.cli.info import summary_rows

    base = {
        "target": "y",
        "log_target": False,
        "features": ["a"],
        "derived": [],
        "architecture": "1-2-1",
        "activations": ["tanh", "identity"],
        "likelihood": "gaussian",
        "dtype": "float64",
        "method": "nuts",
        "chains": 2,
        "draws_per_chain": 3,
        "networks": 6,
        "data_fingerprint": "sha256:0",
        "created": "now",
    }
    training = {"complete": False, "phase": "sampling", "draws_done": 3, "draws_planned": 50}
    rows = dict(summary_rows({**base, "diagnostics": {"training": training}}))
    assert "incomplete" in rows["status"] and "3 of 50" in rows["status"] and "--resume" in rows["status"]
    assert "status" not in dict(summary_rows({**base, "diagnostics": {}}))


def test_predict_without_intervals(model: Path, workdir: Path, capsys) -> None:
    out = workdir / "pred_moments.csv"
    assert main(["predict", str(model), str(workdir / "test.csv"), "--no-intervals", "-o", str(out)]) == 0
    moments = pd.read_csv(out)
    assert list(moments.columns) == ["mean", "std", "epistemic_std", "aleatoric_std", *DOMAIN_COLUMNS]
    assert main(["predict", str(model), str(workdir / "test.csv"), "-o", str(workdir / "pred_default.csv")]) == 0
    full = pd.read_csv(workdir / "pred_default.csv")
    pd.testing.assert_frame_equal(moments, full[moments.columns])  # the same moments as the default call
    capsys.readouterr()
    argv = ["predict", str(model), str(workdir / "test.csv"), "--no-intervals", "--level", "0.9", "-o", "-"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--no-intervals" in err[0]


@pytest.mark.slow
def test_train_with_chees_and_diagnose(workdir: Path, capsys) -> None:
    out = workdir / "chees.model"
    argv = ["train", str(workdir / "train.csv"), "--target", "y", "--features", "a,b", *TINY, "--method", "chees"]
    assert main([*argv, "-q", "--out", str(out)]) == 0
    from sigmabnn.io.model_file import load_model

    fitted = load_model(out)
    assert fitted.method == "chees" and fitted.draws.positions.shape[:2] == (2, 40)
    capsys.readouterr()
    assert main(["diagnose", str(out), "--json"]) in (0, 1)  # 1: warnings (R-hat of so short a run)
    summary = json.loads(capsys.readouterr().out)
    assert "predictions" in summary and summary["predictions"]["max_rhat"] > 0


def test_train_with_helper_feature_and_baseline(workdir: Path, tmp_path: Path, capsys) -> None:
    from sigmabnn.io.model_file import load_model

    out = tmp_path / "base.sbnn"
    argv = ["train", str(workdir / "train.csv"), "--target", "y", "--log-target", "--features", "a",
            "--derive", "_h=b*2", "--derive", "hb=_h+1", "--baseline", "hb", *TINY]  # fmt: skip
    assert main([*argv, "--arch", "2-8-1", "-q", "--out", str(out)]) == 0
    fitted = load_model(out)
    assert fitted.feature_names == ("a", "hb")  # the helper feeds hb but is not an input
    # log10 y = (0.5 sin a + b) / ln 10 + noise: the line in hb = 2 b + 1 has slope 1 / (2 ln 10); the
    # sin a term acts as noise of std ~0.15 on ~96 training rows, a standard error of ~11 % (3 of them allowed)
    np.testing.assert_allclose(fitted.y_transform.baseline.coef[0, 0], 1.0 / (2.0 * np.log(10.0)), rtol=0.35)
    test = pd.read_csv(workdir / "test.csv")
    pred = tmp_path / "pred.csv"
    assert main(["predict", str(out), str(workdir / "test.csv"), "-o", str(pred)]) == 0
    mean = pd.read_csv(pred)["mean"].to_numpy()
    r2 = 1.0 - np.sum((np.log10(mean) - np.log10(test.clean)) ** 2) / np.sum(
        (np.log10(test.clean) - np.log10(test.clean).mean()) ** 2
    )
    assert r2 > 0.95
    assert main(["info", str(out)]) == 0
    assert "*hb (log space" in capsys.readouterr().out


def test_train_map_options_reach_pretraining_and_the_model(workdir: Path, tmp_path: Path, capsys) -> None:
    from sigmabnn.io.model_file import load_model

    out = tmp_path / "map.model"
    argv = ["train", str(workdir / "train.csv"), "--target", "y", "--features", "a,b", *TINY, "-q"]
    extra = [
        "--map-steps",
        "120",
        "--map-learning-rate",
        "0.02",
        "--map-lbfgs-steps",
        "15",
        "--map-lbfgs-patience",
        "5",
    ]
    assert main([*argv, *extra, "--out", str(out)]) == 0
    fitted = load_model(out)
    s = fitted.settings
    assert (s["map"], s["map_num_steps"], s["map_num_epochs"], s["map_learning_rate"], s["map_lbfgs_steps"]) == (
        True, 120, None, 0.02, 15,
    )  # fmt: skip
    assert s["map_lbfgs_patience"] == 5 and s["map_patience"] == 200  # the fields not given keep the default's
    # the MAP options are for MCMC starts: a one-line error elsewhere
    capsys.readouterr()
    assert main([*argv, "--method", "bbb", "--map-steps", "5", "--out", str(tmp_path / "bbb.model")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--map-* options set the MAP starts of MCMC methods" in err and "\n" not in err


def test_train_names_the_non_numeric_columns_it_leaves_out_of_the_inputs(workdir: Path, tmp_path: Path) -> None:
    df = pd.read_csv(workdir / "train.csv").assign(label=lambda d: np.where(d["a"] > 0, "high", "low"))
    df.insert(0, "name", [f"point{i}" for i in range(len(df))])
    df.to_csv(tmp_path / "named.csv", index=False)
    argv = ["train", str(tmp_path / "named.csv"), "--target", "y", *TINY, "--out", str(tmp_path / "m")]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        assert main(argv) == 0
    assert "trained y ~ a, b in" in stdout.getvalue()
    assert "note: left out the non-numeric columns 'name', 'label' from the inputs" in stderr.getvalue()
