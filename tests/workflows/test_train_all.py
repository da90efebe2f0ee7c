"""``train-all`` (resumable, summary), ``train --process`` and ``demo nlo``, on small slices of the built-in data."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main
from sigmabnn.cli.train import use_process
from sigmabnn.datasets import load_ewino
from sigmabnn.io.model_file import load_model
from sigmabnn.physics import amplitude_features
from sigmabnn.physics.processes import process_features
from sigmabnn.workflows.surrogates import SUMMARY_COLUMNS, add_random_split

TINY = [
    "--hidden",
    "3",
    "--map-steps",
    "30",
    "--map-lbfgs-steps",
    "5",
    "--warmup",
    "8",
    "--draws",
    "4",
    "--chains",
    "1",
]
TINY += ["--max-tree-depth", "2", "-q"]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """240 rows of the built-in data (80 per split), as a CSV."""
    df = load_ewino()
    df = df.groupby("split", group_keys=False).head(80).reset_index(drop=True)
    path = tmp_path_factory.mktemp("data") / "small.csv"
    df.to_csv(path, index=False)
    return df, path


def test_train_process_option_fills_target_features_and_split(small):
    df, path = small
    args = argparse.Namespace(process="n1,c1-", features=None, log_target=False, split=None, split_column=None)
    use_process(args, path)
    assert args.target == "nlo_1000022_-1000024"
    assert args.features == process_features("1000022,-1000024")
    assert args.log_target and args.split_column == "split"
    args = argparse.Namespace(process="n1,n1", features=["m_1000022"], log_target=False, split=(0.8, 0.2, 0.0))
    args.split_column = None
    use_process(args, path)
    assert args.features == ["m_1000022"] and args.split_column is None


def test_train_process_unknown_is_one_line_error(small, tmp_path, capsys):
    _, path = small
    assert main(["train", str(path), "--process", "n3,c1-", "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not in the table" in err
    assert not (tmp_path / "m").exists()


def test_config_options_override_only_what_is_given():
    from sigmabnn.cli.train_all import add_config_arguments, config_overrides

    p = argparse.ArgumentParser()
    add_config_arguments(p)
    assert config_overrides(p.parse_args([])) == {}
    got = config_overrides(p.parse_args(["--map-steps", "30", "--map-lbfgs-steps", "0", "--hidden", "4-4"]))
    assert got == {"map_steps": 30, "map_lbfgs_steps": 0, "hidden": (4, 4)}
    with pytest.raises(SystemExit):
        p.parse_args(["--map-lbfgs-steps", "-1"])


def test_random_split_proportions_and_reproducible():
    df = pd.DataFrame({"a": np.arange(1000)})
    one, two = add_random_split(df, 3), add_random_split(df, 3)
    assert (one["split"] == two["split"]).all()
    assert one["split"].value_counts().to_dict() == {"train": 800, "test": 150, "val": 50}


@pytest.mark.heavy
@pytest.mark.slow
def test_train_all_summary_and_resume(small, tmp_path, capsys):
    df, path = small
    out = tmp_path / "sur"
    argv = ["train-all", str(path), "--out", str(out), "--process", "n1,n1", *TINY]
    assert main(argv) == 0
    stamp = (out / "nlo_1000022_1000022.model" / "model.json").stat().st_mtime_ns
    capsys.readouterr()
    # a second run with one more process: the finished one is skipped, the new one trained
    assert main([*argv, "--process", "n1,c1+"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "already done" in lines[0] and "trained in" in lines[1]
    assert (out / "nlo_1000022_1000022.model" / "model.json").stat().st_mtime_ns == stamp
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary.columns) == list(SUMMARY_COLUMNS)
    assert list(summary["process"]) == ["1000022,1000022", "1000022,1000024"]
    for target, row in zip(["nlo_1000022_1000022", "nlo_1000022_1000024"], summary.itertuples(), strict=True):
        assert row.n_failed == int(df[target].isna().sum())  # failed Prospino points dropped and counted
        assert row.n_test == int((df["split"].eq("test") & df[target].notna()).sum())
        assert 0 <= row.coverage_1s <= row.coverage_2s <= row.coverage_3s <= 1
        assert row.grad_evals > 0 and np.isfinite(row.r2_log)
        assert load_model(out / f"{target}.model").target_name == target
        record = json.loads((out / f"{target}.json").read_text())
        assert np.isfinite(record["load_average"]) and record["load_average"] >= 0
        rhat = record["sampler"]["rhat_predictions"]
        assert (record["modes"] is not None) == (rhat is not None and rhat > 1.1)
    assert "| 1000022,1000022 |" in (out / "summary.md").read_text()
    # the directory serves xsec directly
    assert main(["xsec", str(out), str(path), "-o", str(tmp_path / "x.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "x.csv")) == 2 * len(df)


@pytest.mark.heavy
@pytest.mark.slow
def test_demo_nlo_writes_model_and_report(small, tmp_path, monkeypatch, capsys):
    import sigmabnn.datasets
    from sigmabnn.workflows import nlo

    df, _ = small
    monkeypatch.setattr(sigmabnn.datasets, "load_ewino", lambda: df.copy())
    tiny = {"hidden": (3,), "map_steps": 30, "num_warmup": 8, "num_samples": 4, "num_chains": 1, "max_tree_depth": 2}
    monkeypatch.setattr(nlo, "DEMO_SETTINGS", tiny)
    assert main(["demo", "nlo", "--out", str(tmp_path / "demo"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "calibration report" in out and "coverage 1 sigma" in out
    model = load_model(tmp_path / "demo" / "nlo_1000022_1000022.model")
    assert model.num_networks == 4 and len(model.derived) == len(
        amplitude_features.recommended_features("1000022,1000022")
    )
    text = (tmp_path / "demo" / "report" / "report.md").read_text()
    assert "## Calibration" in text and "| metric | train | val | test |" in text
    assert main(["demo", "nlo", "--functions", "sine"]) == 2
