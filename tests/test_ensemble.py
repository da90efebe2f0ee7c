"""Deep ensemble: learned noise on a heteroscedastic toy, the mixture decomposition, save/load, CLI.

The toy fit and the CLI round trip take about 20 s of CPU together and are marked slow.
"""

from __future__ import annotations

import contextlib
import io

import jax
import numpy as np
import pandas as pd
import pytest

from sigmabnn.api import fit
from sigmabnn.cli.main import main
from sigmabnn.ensemble import EnsembleConfig, fit_ensemble
from sigmabnn.errors import InputError
from sigmabnn.io.model_file import load_model, save_model
from sigmabnn.model import BNN, Gaussian, parse_architecture
from sigmabnn.model.build import with_variance_head
from sigmabnn.model.likelihoods import HeteroscedasticGaussian
from sigmabnn.model.posterior import Data
from sigmabnn.predict import predict


def true_mean(x):
    return np.sin(1.5 * x)


def true_std(x):
    """Noise std growing linearly from 0.05 at x = -2 to 0.45 at x = 2."""
    return 0.05 + 0.1 * (x + 2.0)


def toy_table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, n)
    return pd.DataFrame({"x": x, "y": true_mean(x) + true_std(x) * rng.standard_normal(n)})


@pytest.fixture(scope="module")
def toy_model():
    model, report = fit(
        toy_table(800, seed=0),
        "y",
        ["x"],
        method="ensemble",
        architecture="1-16-1",
        split=(1.0, 0.0, 0.0),
        seed=3,
        progress=False,
        num_steps=1500,
    )
    return model, report


@pytest.mark.slow
def test_ensemble_recovers_heteroscedastic_noise_and_mean(toy_model):
    model, report = toy_model
    assert model.method == "ensemble"
    assert model.bnn.likelihood.name == "heteroscedastic"
    assert model.bnn.mlp.widths == (1, 16, 2)  # the 1-16-1 mean network plus its std output
    assert model.draws.positions.shape[:2] == (1, 5)
    xs = np.linspace(-1.8, 1.8, 37)
    pred = predict(model, xs[:, None])
    # 800 points: the learned std is within 20 % of the truth everywhere inside the data,
    # though the truth varies by a factor of 9 across it
    rel = pred.aleatoric_std[:, 0] / true_std(xs) - 1.0
    assert np.max(np.abs(rel)) < 0.2, rel
    assert np.sqrt(np.mean(np.square(pred.mean[:, 0] - true_mean(xs)))) < 0.05
    # a homoscedastic fit would give one std; the ensemble's grows with x as the noise does
    assert np.corrcoef(pred.aleatoric_std[:, 0], true_std(xs))[0, 1] > 0.98
    # members trained from their own keys differ, but agree far better than the noise inside the data
    assert np.all(pred.epistemic_std[:, 0] > 0)
    assert np.median(pred.epistemic_std[:, 0] / pred.aleatoric_std[:, 0]) < 0.3
    assert report.noise_std is None
    assert report.sampler.num_members == 5


@pytest.mark.slow
def test_prediction_is_the_mixture_of_the_members(toy_model):
    """mean = average member mean, epistemic = spread of the member means, aleatoric = mean member variance."""
    model, _ = toy_model
    xs = np.array([[-1.5], [0.0], [1.2]])
    z = model.x_transform.forward(xs)
    bnn = model.bnn
    mus, variances = [], []
    for theta in np.asarray(model.draws.positions)[0]:
        f = bnn.apply(bnn.unflatten(jax.numpy.asarray(theta)), z)
        mus.append(np.asarray(bnn.likelihood.mean(f))[:, 0])
        variances.append(np.asarray(bnn.likelihood.aleatoric_variance(f, 1.0))[:, 0])
    scale, shift = model.y_transform.scale[0], model.y_transform.mean[0]
    mus = np.array(mus) * scale + shift
    variances = np.array(variances) * scale**2
    pred = predict(model, xs)
    np.testing.assert_allclose(pred.mean[:, 0], mus.mean(0), rtol=1e-10)
    np.testing.assert_allclose(pred.epistemic_std[:, 0], mus.std(0, ddof=0), rtol=1e-8)
    np.testing.assert_allclose(pred.aleatoric_std[:, 0], np.sqrt(variances.mean(0)), rtol=1e-10)


def test_members_are_independent_and_reproducible():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (50, 2))
    data = Data(x, (x[:, :1] ** 2) + 0.1 * rng.standard_normal((50, 1)))
    mlp = with_variance_head(parse_architecture("2-6-1"))
    bnn = BNN(mlp, likelihood=HeteroscedasticGaussian())
    config = EnsembleConfig.from_options(num_members=3, num_steps=100)
    draws, info = fit_ensemble(jax.random.key(0), bnn, data, config)
    again, _ = fit_ensemble(jax.random.key(0), bnn, data, config)
    pos = np.asarray(draws.positions)
    assert pos.shape == (1, 3, (2 * 6 + 6) + (6 * 2 + 2))  # a 2-6-2 network
    assert np.all(np.isfinite(pos))
    assert not np.allclose(pos[0, 0], pos[0, 1])
    np.testing.assert_array_equal(pos, np.asarray(again.positions))
    assert info.map_info.best_loss.shape == (3,)


def test_ensemble_needs_a_variance_head():
    bnn = BNN(parse_architecture("2-4-1"), likelihood=Gaussian())
    data = Data(np.zeros((5, 2)), np.zeros((5, 1)))
    with pytest.raises(ValueError, match="heteroscedastic"):
        fit_ensemble(jax.random.key(0), bnn, data)
    with pytest.raises(ValueError, match="unknown ensemble option 'num_chains'"):
        EnsembleConfig.from_options(num_chains=4)
    with pytest.raises(InputError, match="learns its noise"):
        fit(toy_table(30, 0), "y", ["x"], method="ensemble", noise_precision=10.0, progress=False)


@pytest.mark.slow
def test_save_load_round_trip(toy_model, tmp_path):
    model, _ = toy_model
    save_model(model, tmp_path / "ens.model")
    loaded = load_model(tmp_path / "ens.model")
    assert loaded.method == "ensemble"
    assert loaded.bnn.likelihood == model.bnn.likelihood
    xs = np.linspace(-2, 2, 9)[:, None]
    a, b = predict(model, xs), predict(loaded, xs)
    for field in ("mean", "epistemic_std", "aleatoric_std"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    np.testing.assert_array_equal(a.lower[0.95], b.lower[0.95])


@pytest.mark.slow
def test_cli_train_and_predict(tmp_path):
    toy_table(120, seed=5).to_csv(tmp_path / "train.csv", index=False)
    toy_table(20, seed=6).drop(columns="y").to_csv(tmp_path / "new.csv", index=False)
    model = tmp_path / "m.model"
    out = tmp_path / "pred.csv"
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = ["train", str(tmp_path / "train.csv"), "--target", "y", "--method", "ensemble", "--arch", "1-8-1"]
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        assert main([*argv, "--out", str(model)]) == 0, stderr.getvalue()
        assert main(["predict", str(model), str(tmp_path / "new.csv"), "-o", str(out)]) == 0, stderr.getvalue()
    assert "ensemble: 1 chains x 5 = 5 networks" in stdout.getvalue()
    pred = pd.read_csv(out)
    assert len(pred) == 20
    assert np.all(pred["aleatoric_std"] > 0) and np.all(pred["epistemic_std"] > 0)
    np.testing.assert_allclose(pred["std"] ** 2, pred["epistemic_std"] ** 2 + pred["aleatoric_std"] ** 2, rtol=1e-6)
    assert np.all(pred["lower_0.95"] < pred["mean"]) and np.all(pred["mean"] < pred["upper_0.95"])


def test_small_steep_table_members_fit_the_mean_before_the_variance():
    """300 rows of a function spanning three decades (noise 0.05): trained from random weights the members
    explained the steep corner by a large variance (test RMSE about 7 on this table); fitting each member's
    mean first brings the RMSE below 1."""
    rng = np.random.default_rng(0)

    def table(n):
        x = rng.uniform(-1, 1, (n, 6))
        y = 0.05 + 50 * np.exp(4 * (x[:, 0] - 1)) * (1 + 0.1 * x[:, 1]) + 0.05 * rng.standard_normal(n)
        return pd.DataFrame({**{f"x{i}": x[:, i] for i in range(6)}, "y": y})

    train, test = table(308), table(2000)
    fitted, _ = fit(train, "y", method="ensemble", progress=False)
    p = predict(fitted, test)
    y = test["y"].to_numpy()
    assert np.sqrt(np.mean((p.mean[:, 0] - y) ** 2)) < 1.0
    assert 0.9 <= np.mean((y >= p.lower[0.95][:, 0]) & (y <= p.upper[0.95][:, 0])) <= 1.0
