"""The one-dimensional toy regression experiment of Maz (2018), by NUTS or variational inference.

Six functions, each observed with Gaussian noise ``eps ~ N(0, 0.25^2)`` at 50
equally spaced points of ``[-10, 10]`` (``numpy.linspace(-10, 10, 50)``: the
grid step is 20/49, so ``x = 0``, where ``3 log x^2`` and ``10 / x`` are
singular, is not among them; the closest points are ``x = +-10/49``):

1. ``x``;  2. ``x^2 / 10``;  3. ``3 sin x + x``;  4. ``3 log x^2``;  5. ``10 / x``;
6. ``x^2 / 10 sin(x^2 / 20 + x) + x / 20 + cos x``.

A BNN is fitted for each through the library's product path
(:func:`sigmabnn.api.fit`: standardised data, MAP pretraining, then NUTS with
Gibbs updates of the noise precision; or, with ``settings.method`` ``"bbb"`` /
``"flipout"``, a mean-field variational fit), and the predictive distribution
(:func:`sigmabnn.predict.predict`) is evaluated on ``[-20, 20]``: twice the
training domain, to show how the uncertainty grows away from the data.
Reported per function: the fraction of grid points of the training domain
(in-domain) and of the rest (out-of-domain) where the central 95 % predictive
interval contains the noise-free true function.

Reference: A. Maz, "Regression with Bayesian neural networks" (2018), where
the same functions are fitted by Bayes by Backprop. :data:`MAZ_SETTINGS` is
that paper's setting: two hidden layers of 40 ``rbf`` units (``exp(-x^2)``),
Bayes by Backprop with ``alpha = 0.01`` and ``M = 10``, ``N = 500``. In the
paper ``alpha`` is the step size of the gradient-descent update of the
variational parameters (its eq. 12) and ``N`` the number of such updates, each
on the gradient of the whole 50-point objective estimated with ``M`` weight
draws: 500 full-batch steps, not epochs of minibatches. The paper trains with
Autograd from a random start and does not say more; here the step is Adam's
(the "variant of gradient descent" the paper allows; plain gradient descent at
0.01 on an unscaled 50-point log-likelihood diverges), the start is the
library's Glorot draw with ``sigma_0`` of :mod:`sigmabnn.vi.meanfield`, no MAP
pretraining, and the noise std is fixed at its true value 0.25 (the paper
states the noise, not how its likelihood treats it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn import dtypes as _dtypes  # noqa: F401  (float policy before any array is made)
from sigmabnn.api import fit
from sigmabnn.data.transforms import TargetTransform
from sigmabnn.errors import InputError
from sigmabnn.map import MAPConfig
from sigmabnn.plots import toy_figure
from sigmabnn.predict import predict

Array = jax.Array

__all__ = [
    "MAZ_SETTINGS",
    "METHODS",
    "TOY_FUNCTIONS",
    "ToyFunction",
    "ToyResult",
    "ToySettings",
    "fit_options",
    "fit_toy_data",
    "make_toy_data",
    "run_toy",
]

METHODS = ("nuts", "bbb", "flipout")
"""Fitting methods of the toy experiment: NUTS, or variational (Bayes by Backprop, Flipout)."""


class ToyFunction(NamedTuple):
    """A noise-free target function ``fn(x) -> y`` (NumPy arrays in, out) with its label for figures."""

    name: str
    label: str
    fn: Callable[[np.ndarray], np.ndarray]


TOY_FUNCTIONS: tuple[ToyFunction, ...] = (
    ToyFunction("linear", r"$y = x$", lambda x: x),
    ToyFunction("quadratic", r"$y = x^2/10$", lambda x: x**2 / 10.0),
    ToyFunction("sine", r"$y = 3\sin x + x$", lambda x: 3.0 * np.sin(x) + x),
    ToyFunction("log", r"$y = 3\log x^2$", lambda x: 3.0 * np.log(x**2)),
    ToyFunction("reciprocal", r"$y = 10/x$", lambda x: 10.0 / x),
    ToyFunction(
        "chirp",
        r"$y = \frac{x^2}{10}\sin(\frac{x^2}{20} + x) + \frac{x}{20} + \cos x$",
        lambda x: x**2 / 10.0 * np.sin(x**2 / 20.0 + x) + x / 20.0 + np.cos(x),
    ),
)


class ToySettings(NamedTuple):
    """Settings of one toy run (defaults: the whole demo in a few minutes on two cores).

    Attributes:
        num_points: training points, equally spaced on ``domain``.
        noise_std: std of the Gaussian noise added to the targets (target units).
        domain: training interval of ``x``.
        grid: prediction interval of ``x`` and number of grid points (even, so
            that 0 is not a grid point).
        architecture: layer widths, input and output included.
        activation: hidden-layer activation.
        num_chains, num_warmup, num_samples: NUTS chains, warm-up steps and
            kept draws per chain.
        max_tree_depth: NUTS maximal tree depth (at most ``2**depth - 1``
            leapfrog steps per draw); bounds the cost of a draw on these
            badly conditioned posteriors, whose adapted step sizes are small.
        map_steps: Adam steps of MAP pretraining (the chains' starting points;
            for VI the start of the means); 0 skips pretraining (VI only).
        method: ``"nuts"``, ``"bbb"`` or ``"flipout"``.
        num_steps, learning_rate, num_mc_samples: VI only: full-batch Adam
            steps, their step size and weight draws ``M`` per step.
        num_draws: VI only: networks drawn from q for prediction.
        fixed_noise: fix the noise std at ``noise_std`` (the truth) instead of learning it.
        level: probability of the central predictive interval.
        num_networks_shown: sampled networks drawn in the left panel.
    """

    num_points: int = 50
    noise_std: float = 0.25
    domain: tuple[float, float] = (-10.0, 10.0)
    grid: tuple[float, float, int] = (-20.0, 20.0, 400)
    architecture: str = "1-20-20-1"
    activation: str = "tanh"
    num_chains: int = 2
    num_warmup: int = 200
    num_samples: int = 150
    max_tree_depth: int = 6
    map_steps: int = 1000
    method: str = "nuts"
    num_steps: int = 5000
    learning_rate: float = 1e-2
    num_mc_samples: int = 10
    num_draws: int = 500
    fixed_noise: bool = False
    level: float = 0.95
    num_networks_shown: int = 10


MAZ_SETTINGS = ToySettings(
    architecture="1-40-40-1",
    activation="rbf",
    method="bbb",
    num_steps=500,
    learning_rate=0.01,
    num_mc_samples=10,
    map_steps=0,
    fixed_noise=True,
)
"""Maz (2018)'s setting: ``1-40-40-1`` rbf network, Bayes by Backprop, ``alpha = 0.01``, ``M = 10``, ``N = 500``."""


class ToyResult(NamedTuple):
    """Outcome for one toy function.

    Attributes:
        name: function name (see :data:`TOY_FUNCTIONS`).
        figure: path of the PNG figure.
        coverage_in_domain: fraction of grid points in the training domain
            where the predictive interval contains the true function.
        coverage_out_of_domain: the same outside the training domain.
        rmse_in_domain: RMS difference between predictive mean and true
            function on the in-domain grid (target units).
        mean_interval_width_in_domain: average width of the interval in-domain (target units).
        mean_interval_width_out_of_domain: the same outside the training domain.
        acceptance_rate: mean NUTS acceptance probability over all draws (``None`` for VI).
        num_divergent: divergent transitions among the kept draws (``None`` for VI).
        noise_std: posterior-mean noise std (target units); the truth is ``settings.noise_std``.
        seconds: wall time for this function (training, prediction, figure).
        method: the fitting method.
        fit_seconds: wall time of the fit alone (MAP pretraining included).
    """

    name: str
    figure: Path
    coverage_in_domain: float
    coverage_out_of_domain: float
    rmse_in_domain: float
    mean_interval_width_in_domain: float
    mean_interval_width_out_of_domain: float
    acceptance_rate: float | None
    num_divergent: int | None
    noise_std: float
    seconds: float
    method: str = "nuts"
    fit_seconds: float = float("nan")


def make_toy_data(
    rng_key: Array, function: ToyFunction, settings: ToySettings | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Training inputs ``x`` ``[num_points]`` (equally spaced on the domain) and noisy targets ``y``, float64."""
    settings = ToySettings() if settings is None else settings
    x = np.linspace(settings.domain[0], settings.domain[1], settings.num_points)
    noise = settings.noise_std * np.asarray(jax.random.normal(rng_key, (settings.num_points,), jnp.float64))
    return x, function.fn(x) + noise


def _select(functions: Sequence[str | ToyFunction] | None) -> list[ToyFunction]:
    by_name = {f.name: f for f in TOY_FUNCTIONS}
    if functions is None:
        return list(TOY_FUNCTIONS)
    chosen = []
    for f in functions:
        if isinstance(f, ToyFunction):
            chosen.append(f)
        elif f in by_name:
            chosen.append(by_name[f])
        else:
            raise InputError(f"unknown toy function {f!r}; choose from {', '.join(by_name)}")
    return chosen


def _fit_one(rng_key: Array, function: ToyFunction, index: int, out_dir: Path, settings: ToySettings, progress: bool):
    start = time.perf_counter()
    key_data, key_pred, key_show = jax.random.split(rng_key, 3)
    x, y = make_toy_data(key_data, function, settings)
    # the run's seed is derived from this function's key
    seed = int(jax.random.randint(jax.random.fold_in(rng_key, 1), (), 0, 2**31 - 1))
    fit_start = time.perf_counter()
    fitted, report = fit_toy_data(x, y, settings, seed, progress)
    fit_seconds = time.perf_counter() - fit_start

    lo, hi, m = settings.grid
    grid = np.linspace(lo, hi, m)
    pred = predict(fitted, grid[:, None], levels=(settings.level,), rng_key=key_pred)
    mean = pred.mean[:, 0]
    lower, upper = pred.lower[settings.level][:, 0], pred.upper[settings.level][:, 0]
    network_means = _network_means(fitted, grid, key_show, settings.num_networks_shown)

    truth = function.fn(grid)
    covered = (lower <= truth) & (truth <= upper)
    inside = (grid >= settings.domain[0]) & (grid <= settings.domain[1])
    figure = toy_figure(
        out_dir / f"toy_{index + 1}_{function.name}.png",
        x_train=x,
        y_train=y,
        x_grid=grid,
        y_true=truth,
        network_means=network_means,
        mean=mean,
        lower=lower,
        upper=upper,
        level=settings.level,
        title=f"({index + 1}) {function.label}   [{settings.method}]",
        domain=settings.domain,
    )
    sampler = report.sampler
    mcmc = settings.method == "nuts"
    return ToyResult(
        name=function.name,
        figure=figure,
        coverage_in_domain=float(covered[inside].mean()),
        coverage_out_of_domain=float(covered[~inside].mean()),
        rmse_in_domain=float(np.sqrt(np.mean((mean - truth)[inside] ** 2))),
        mean_interval_width_in_domain=float(np.mean((upper - lower)[inside])),
        mean_interval_width_out_of_domain=float(np.mean((upper - lower)[~inside])),
        acceptance_rate=float(np.mean(sampler.acceptance)) if mcmc else None,
        num_divergent=int(np.sum(sampler.divergences)) if mcmc else None,
        noise_std=float(report.noise_std),
        seconds=time.perf_counter() - start,
        method=settings.method,
        fit_seconds=fit_seconds,
    )


def fit_toy_data(x: np.ndarray, y: np.ndarray, settings: ToySettings, seed: int, progress: bool = False):
    """Fit one toy data set ``x``, ``y`` ``[n]`` as the demo does: ``(fitted, report)`` of :func:`sigmabnn.api.fit`.

    The library's product path: every point trains (no validation split); NUTS after MAP
    pretraining with the noise precision Gibbs-sampled, or VI (:func:`fit_options`).
    """
    import pandas as pd

    return fit(
        pd.DataFrame({"x": x, "y": y}),
        "y",
        ["x"],
        architecture=settings.architecture,
        activation=settings.activation,
        split=(1.0, 0.0, 0.0),
        seed=seed,
        progress=progress,
        **fit_options(settings, y),
    )


def fit_options(settings: ToySettings, y: np.ndarray) -> dict:
    """Keyword arguments of :func:`sigmabnn.api.fit` for ``settings.method`` (``y``: the training targets).

    The method, its settings, the MAP pretraining and the noise: learned, or with
    ``settings.fixed_noise`` fixed at ``settings.noise_std`` converted to the standardised
    units the model sees (the scale of :class:`~sigmabnn.data.transforms.TargetTransform` fitted on ``y``).
    """

    if settings.method not in METHODS:
        raise InputError(f"unknown toy method {settings.method!r}; choose from {', '.join(METHODS)}")
    pretrain = MAPConfig(num_steps=settings.map_steps) if settings.map_steps > 0 else None
    options: dict = {"method": settings.method, "learn_noise": not settings.fixed_noise}
    if settings.fixed_noise:  # the true noise std, in the standardised units the model sees
        scale = float(TargetTransform.fit(y).scale[0])
        options["noise_precision"] = (scale / settings.noise_std) ** 2
    if settings.method == "nuts":
        if pretrain is None:
            raise InputError("NUTS starts from MAP fits: map_steps must be positive")
        return options | {
            "num_chains": settings.num_chains,
            "num_warmup": settings.num_warmup,
            "num_samples": settings.num_samples,
            "max_tree_depth": settings.max_tree_depth,
            "map": pretrain,
        }
    return options | {
        "num_samples": settings.num_draws,
        "num_steps": settings.num_steps,
        "learning_rate": settings.learning_rate,
        "num_mc_samples": settings.num_mc_samples,
        "map": pretrain,
        "noise_estimate": "map" if pretrain is not None else "elbo",
    }


def _network_means(fitted, grid: np.ndarray, rng_key: Array, k: int) -> np.ndarray:
    """Outputs ``[k, m]`` (target units) of ``k`` networks drawn without replacement from the posterior draws."""
    positions = np.asarray(fitted.draws.positions).reshape(fitted.num_networks, -1)
    chosen = np.asarray(jax.random.choice(rng_key, positions.shape[0], (min(k, positions.shape[0]),), replace=False))
    bnn = fitted.bnn
    z = jnp.asarray(fitted.x_transform.forward(grid[:, None]), bnn.jdtype)
    out = jax.vmap(lambda p: bnn.likelihood.mean(bnn.apply(bnn.unflatten(p), z))[:, 0])(
        jnp.asarray(positions[chosen], bnn.jdtype)
    )
    return fitted.y_transform.inverse(np.asarray(out))


def run_toy(
    rng_key: Array,
    out_dir: str | os.PathLike[str],
    functions: Sequence[str | ToyFunction] | None = None,
    settings: ToySettings | None = None,
    progress: bool = False,
    callback: Callable[[ToyResult], None] | None = None,
) -> list[ToyResult]:
    """Fit, predict and plot each toy function; one PNG per function in ``out_dir``.

    Args:
        rng_key: JAX PRNG key; split into one key per function (in the order
            of :data:`TOY_FUNCTIONS`, so a subset reproduces the full run's
            numbers for the functions it keeps).
        out_dir: directory for the figures (created if needed).
        functions: names (or :class:`ToyFunction` objects) to run; default all six.
        settings: network, sampler and grid settings (default :class:`ToySettings`).
        progress: show the sampler's progress bars.
        callback: called with each :class:`ToyResult` as soon as it is ready.

    Returns:
        One :class:`ToyResult` per function, in the order given.
    """
    settings = ToySettings() if settings is None else settings
    chosen = _select(functions)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    keys = jax.random.split(rng_key, max(len(TOY_FUNCTIONS), len(chosen)))
    order = {f.name: i for i, f in enumerate(TOY_FUNCTIONS)}
    results = []
    for j, function in enumerate(chosen):
        i = order.get(function.name, j)
        result = _fit_one(keys[i], function, i, out, settings, progress)
        if callback is not None:
            callback(result)
        results.append(result)
    return results
