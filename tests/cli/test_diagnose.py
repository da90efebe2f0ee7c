"""``sigmabnn diagnose``: function-space diagnostics of a saved model, figures and warnings.

The models are built from draws whose convergence is known by construction
(independent draws shared by all chains, or one chain moved away), so the
command's verdict can be checked without running a sampler.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import arviz as az
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main
from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.evaluate import figures
from sigmabnn.evaluate.diagnose import report_warnings
from sigmabnn.fitted import FittedModel
from sigmabnn.io.model_file import save_model
from sigmabnn.model import BNN, Gaussian, parse_architecture
from sigmabnn.model.mlp import num_params
from sigmabnn.model.posterior import Data, Hyperparameters

CHAINS, DRAWS = 4, 200


def make_model(shift_chain: float = 0.0, sampler: dict | None = None, method: str = "nuts") -> FittedModel:
    """A 2-6-1 network with iid draws around a fixed centre (chain 1 moved by ``shift_chain``)."""
    rng = np.random.default_rng(0)
    mlp = parse_architecture("2-6-1")
    d = num_params(mlp)
    centre = rng.normal(size=d)
    pos = centre + 0.1 * rng.normal(size=(CHAINS, DRAWS, d))
    pos[1] += shift_chain
    hyper = Hyperparameters(
        rng.uniform(20.0, 30.0, size=(CHAINS, DRAWS)),
        np.ones((CHAINS, DRAWS, mlp.num_layers)),
        np.ones((CHAINS, DRAWS, mlp.num_layers)),
    )
    report = {"sampler": sampler or {}, "model": {"networks": CHAINS * DRAWS}}
    return FittedModel(
        bnn=BNN(mlp, likelihood=Gaussian()),
        draws=PosteriorDraws(pos, hyper),
        x_transform=Standardizer.fit(rng.normal(1.0, 2.0, size=(50, 2))),
        y_transform=TargetTransform.fit(rng.uniform(1.0, 10.0, size=(50, 1))),
        feature_names=("a", "b"),
        target_name="y",
        method=method,
        settings={"max_tree_depth": 10},
        diagnostics=report,
    )


def table(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({"a": rng.normal(1.0, 2.0, n), "b": rng.normal(1.0, 2.0, n), "y": rng.uniform(1, 10, n)})


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["diagnose", *map(str, argv)])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("diagnose")
    save_model(make_model(), d / "good.model")
    save_model(make_model(shift_chain=0.5), d / "split.model")
    sampler = {"divergences": 8, "tree_depth_saturation": 0.25, "ebfmi": [0.9, 0.2, 0.8, 0.9], "acceptance": [0.8] * 4}
    save_model(make_model(sampler=sampler), d / "sick.model")
    save_model(make_model(method="bbb"), d / "vi.model")
    table().to_csv(d / "data.csv", index=False)
    table().drop(columns="y").to_csv(d / "inputs.csv", index=False)
    return d


def test_converged_model_no_warnings_and_outputs(files):
    out = files / "good_diag"
    code, stdout, stderr = run_cli(files / "good.model", files / "data.csv", "--out", out, "--strict")
    assert code == 0, stderr
    assert "no warnings" in stdout and stderr == ""
    assert sorted(p.name for p in out.iterdir()) == [
        "autocorrelation.png",
        "diagnostics.json",
        "posterior.nc",
        "rank.png",
        "trace.png",
    ]
    for name in ("trace.png", "rank.png", "autocorrelation.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((out / "diagnostics.json").read_text())
    assert summary["predictions"]["num_points"] == 20
    assert summary["predictions"]["max_rhat"] < 1.01
    assert summary["log_posterior_source"] == "on 60 data rows"
    idata = az.from_netcdf(out / "posterior.nc")
    assert idata.posterior["f"].shape == (CHAINS, DRAWS, 20)
    assert idata.posterior["position"].shape[:2] == (CHAINS, DRAWS)
    # The recomputed log posterior is the model's own, draw by draw.
    model = make_model()
    data = table()
    z = model.x_transform.forward(data[["a", "b"]].to_numpy())
    y = model.y_transform.forward(data[["y"]].to_numpy())
    hyper = Hyperparameters(*(jnp.asarray(np.asarray(a)[2, 7]) for a in model.draws.hyper))
    expected = model.bnn.log_posterior(
        jnp.asarray(model.draws.positions[2, 7]), hyper, Data(jnp.asarray(z), jnp.asarray(y))
    )
    got = idata.posterior["log_posterior"].values[2, 7]
    assert got == pytest.approx(float(expected), rel=1e-10)


def test_disagreeing_chain_warns_and_strict_fails(files):
    code, stdout, stderr = run_cli(files / "split.model", files / "inputs.csv", "--strict", "--points", "7")
    assert code == 1
    assert "R-hat of the predictions" in stderr
    assert "log posterior" not in stdout  # no target column and nothing stored: not reported
    code, stdout, _ = run_cli(files / "split.model", "--json")
    assert code == 0
    summary = json.loads(stdout)
    assert summary["inputs"]["source"] == "reference" and summary["predictions"]["max_rhat"] > 1.1


def test_sampler_warnings_match_train(files):
    code, _, stderr = run_cli(files / "sick.model")
    assert code == 0
    lines = [ln.removeprefix("sigmabnn diagnose: warning: ") for ln in stderr.splitlines()]
    assert any(ln.startswith("8 divergent transitions (1.00% of draws)") for ln in lines)
    assert any("25.00% of draws hit the maximum tree depth 10" in ln for ln in lines)
    assert any(ln.startswith("E-BFMI of chain 1 is 0.200") for ln in lines)
    # 'sigmabnn train' prints the same sentences for the same stored report.
    from_train = report_warnings(
        make_model(sampler={"divergences": 8, "ebfmi": [0.9, 0.2, 0.8, 0.9], "acceptance": [0.8] * 4}).report
    )
    assert from_train == [ln for ln in lines if ln.startswith(("8 divergent", "E-BFMI"))]


def test_a_stored_report_warns_on_r_hat_without_a_point_it_does_not_know():
    """A model file keeps only the worst R-hat of the predictions, not where: the warning names no point
    (it printed "point -1"), while a summary computed from draws still names it."""
    from sigmabnn.evaluate import diagnostics as diag

    stored = report_warnings(make_model(sampler={"rhat_predictions": 1.05, "acceptance": [0.8] * CHAINS}).report)
    assert stored == ["R-hat of the predictions is 1.050, above 1.01: the chains disagree."]
    assert diag.worst_point({"argmax_rhat": 3}) == " (point 3)" and diag.worst_point({"argmax_rhat": -1}) == ""


def test_bad_input_exits_2_and_writes_nothing(files, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    code, _, stderr = run_cli(files / "good.model", "--out", busy)
    assert code == 2 and "not a diagnose output" in stderr
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]
    code, _, stderr = run_cli(files / "vi.model")
    assert code == 2 and "variational" in stderr
    code, _, stderr = run_cli(files / "good.model", tmp_path / "missing.csv")
    assert code == 2 and "not found" in stderr


def test_ranks_are_a_permutation_and_flat_for_mixed_chains():
    rng = np.random.default_rng(3)
    values = rng.normal(size=(4, 500))
    r = figures.ranks(values)
    assert sorted(r.ravel().tolist()) == list(range(2000))
    # Mixed chains: each chain's mean rank is near the middle; a shifted chain's is not.
    assert np.all(np.abs(r.mean(axis=1) / 1999 - 0.5) < 0.05)
    values[0] += 3.0
    assert figures.ranks(values)[0].mean() / 1999 > 0.8
