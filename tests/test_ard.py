"""Automatic relevance determination (``fit(..., ard=True)``): the sampled per-input precisions shrink the
first-layer weights of inputs the target does not depend on, and the model says which inputs it used."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

import sigmabnn
from sigmabnn.cli.main import main


def test_ard_shrinks_the_inputs_the_target_does_not_depend_on(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (200, 4))
    df = pd.DataFrame(x, columns=["a", "b", "c", "d"])
    df["y"] = np.sin(2 * x[:, 0]) + 0.1 * rng.standard_normal(200)  # only a matters
    # the Gaussian noise model given, not chosen: what is asserted is the prior's, and the choice would compile and
    # fit the heteroscedastic model's starts as well
    fitted, _ = sigmabnn.fit(df, "y", ard=True, likelihood="gaussian", num_warmup=150, num_samples=30, progress=False)
    prior = fitted.bnn.prior
    assert prior.input_groups and fitted.draws.hyper.weight_precision.shape[-1] == prior.num_groups(fitted.bnn.mlp)
    first = prior.first_input_group(fitted.bnn.mlp)
    median = np.median(np.asarray(fitted.draws.hyper.weight_precision)[..., first:], axis=(0, 1))
    # a's weights carry the function: its precision is far below every irrelevant input's
    assert np.all(median[1:] > 4 * median[0]), median
    relevance = fitted.input_relevance()
    assert list(relevance) == ["a", "b", "c", "d"]
    np.testing.assert_allclose(relevance["a"], 1 / np.sqrt(median[0]), rtol=0.3)
    assert relevance["a"] > 2 * max(relevance["b"], relevance["c"], relevance["d"])
    # saved and described: the JSON carries the numbers, the summary ranks the inputs
    sigmabnn.save_model(fitted, tmp_path / "m")
    assert main(["info", str(tmp_path / "m"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["input_relevance"] == relevance
    assert main(["info", str(tmp_path / "m")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "input relevance" in line)
    assert row.split("input relevance")[1].split()[0] == "a"
    # the training summary of `sigmabnn train --ard` ranks them too
    data = tmp_path / "t.csv"
    df.to_csv(data, index=False)
    argv = ["train", str(data), "--target", "y", "--ard", "--likelihood", "gaussian"]
    argv += ["--warmup", "150", "--draws", "30"]  # the API fit's: its compiled functions serve
    assert main([*argv, "--out", str(tmp_path / "cli")]) == 0
    assert "input relevance" in capsys.readouterr().out
    plain, _ = sigmabnn.fit(df, "y", method="mh", num_warmup=20, num_samples=5, progress=False)
    assert plain.input_relevance() is None
