"""The chains of one fit as tasks on a real LocalCluster (``fit(..., client=)``, ``sigmabnn train --dask``).

Every task computes its chains with the keys of the one-process fit, so the model equals the
one-process model. Not always bit for bit: a task evaluates the network for its own number of
chains at once (``vmap``), and XLA may order the sums of that matrix product differently for 2 or
1 chains than for 4, by an ulp, which the sampler then carries along. The random choices (leapfrog
steps, tree depths, divergences) and the counts (gradient evaluations) are compared exactly, the
reals to a tight tolerance; the largest difference seen is printed (``-s``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sigmabnn import api
from sigmabnn.cli.main import main
from sigmabnn.errors import InputError
from sigmabnn.io.model_file import load_model

TINY = {
    "architecture": "2-4-1",
    "num_chains": 4,
    "num_warmup": 30,
    "num_samples": 20,
    "max_tree_depth": 4,
    "map": {"num_steps": 60},
    "progress": False,
}
CLI_TINY = ["--arch", "2-4-1", "--chains", "4", "--warmup", "30", "--draws", "20", "--map-steps", "60", "-q"]
RTOL, ATOL = 1e-6, 1e-8


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """60 rows of a smooth function of two inputs with noise, as a DataFrame and a CSV file."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, size=(60, 2))
    df = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": np.sin(x[:, 0]) + 0.3 * x[:, 1] + 0.05 * rng.normal(size=60)})
    path = tmp_path_factory.mktemp("data") / "data.csv"
    df.to_csv(path, index=False)
    return df, path


def _close(got, want, name: str) -> float:
    """Reals to the tolerance, everything else exactly; returns the largest absolute difference."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, name
    if np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=name)
        return float(np.max(np.abs(got - want), initial=0.0))
    np.testing.assert_array_equal(got, want, name)
    return 0.0


def assert_models_equal(got, want) -> float:
    """Draws, hyperparameter draws, adapted parameters, settings and the report (timings aside)."""
    diff = _close(got.draws.positions, want.draws.positions, "positions")
    for name in want.draws.hyper._fields:
        diff = max(diff, _close(getattr(got.draws.hyper, name), getattr(want.draws.hyper, name), name))
    assert set(got.adapted) == set(want.adapted)
    for name in want.adapted:
        diff = max(diff, _close(got.adapted[name], want.adapted[name], name))
    assert got.settings == want.settings
    g, w = ({k: v for k, v in m.diagnostics.items() if k != "timings"} for m in (got, want))
    _same_json(g, w, "report")
    return diff


def _same_json(got, want, where: str) -> None:
    """Equal JSON values: integers, strings and structure exactly, reals to the tolerance."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for key in want:
            _same_json(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            _same_json(a, b, f"{where}[{i}]")
    elif isinstance(want, float):
        assert isinstance(got, float) and got == pytest.approx(want, rel=RTOL, abs=ATOL, nan_ok=True), where
    else:
        assert got == want, where


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "likelihood", "chains_per_task"),
    [("chees", "gaussian", 2), ("nuts", "gaussian", 2), ("nuts", "hetero_student_t", None)],
)
@pytest.mark.heavy
def test_chains_as_tasks_give_the_one_process_model(table, client, method, likelihood, chains_per_task):
    """ChEES (one warm-up task, sampling in blocks), NUTS (blocks warmed up and sampled apart) and the
    hetero Student-t scale-head starts (one task): the model of the one-process fit."""
    df, _ = table
    kwargs = {**TINY, "method": method, "likelihood": likelihood}
    want, want_report = api.fit(df, "y", **kwargs)
    got, got_report = api.fit(df, "y", client=client, chains_per_task=chains_per_task, **kwargs)
    diff = assert_models_equal(got, want)
    print(f"{method}/{likelihood}: largest difference from the one-process model {diff:.2e}")
    assert got_report.sampler.num_grad_evals == want_report.sampler.num_grad_evals
    assert got_report.metrics["train"].keys() == want_report.metrics["train"].keys()


@pytest.mark.heavy
@pytest.mark.slow
def test_cli_train_dask_writes_the_one_process_model(table, client, tmp_path, capsys):
    """``sigmabnn train DATA --target y --dask=ADDRESS``: the default method (ChEES), chains split over the workers."""
    _, path = table
    argv = ["train", str(path), "--target", "y", *CLI_TINY]
    assert main([*argv, "-o", str(tmp_path / "serial.model")]) == 0
    assert main([*argv, "-o", str(tmp_path / "dask.model"), f"--dask={client.scheduler.address}"]) == 0
    got, want = load_model(tmp_path / "dask.model"), load_model(tmp_path / "serial.model")
    assert got.method == want.method == "chees"
    print(f"cli: largest difference from the one-process model {assert_models_equal(got, want):.2e}")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--method", "bbb", "--dask"], "only MCMC chains run as Dask tasks"),
        (["--method", "ensemble", "--dask=tcp://127.0.0.1:1"], "only MCMC chains run as Dask tasks"),
        (["--chains-per-task", "2"], "--chains-per-task needs --dask"),
    ],
)
def test_cli_bad_combinations_are_one_line_and_exit_2(table, tmp_path, capsys, extra, message):
    _, path = table
    assert main(["train", str(path), "--target", "y", "-o", str(tmp_path / "m.model"), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "m.model").exists()


def test_cli_resume_with_dask_is_refused(tmp_path, capsys):
    assert main(["train", "--resume", str(tmp_path / "m.model"), "--dask"]) == 2
    err = capsys.readouterr().err
    assert "drop --dask" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "flipout", "client": object()}, "only MCMC chains"),
        ({"method": "ensemble", "client": object()}, "only MCMC chains"),
        ({"client": object(), "checkpoint": "m.model"}, "cannot be combined with Dask tasks"),
        ({"chains_per_task": 2}, "chains_per_task needs a Dask client"),
        ({"client": object(), "chains_per_task": 0}, "chains_per_task must be >= 1"),
    ],
)
def test_api_bad_combinations_raise_before_any_work(table, tmp_path, monkeypatch, kwargs, message):
    monkeypatch.chdir(tmp_path)
    df, _ = table
    with pytest.raises(InputError, match=message):
        api.fit(df, "y", progress=False, **kwargs)
    assert not (tmp_path / "m.model").exists()
