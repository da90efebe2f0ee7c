"""Reference posteriors from posteriordb as log-densities on an unconstrained flat vector.

Six posteriors (see ``../shared/data/posteriordb/README.md``), each written
in JAX on an unconstrained ``z [d]``:

* positive parameters: ``x = exp(z)``, log-Jacobian ``z``;
* parameters in (0, 1): ``x = sigmoid(z)``, log-Jacobian
  ``log sigmoid(z) + log sigmoid(-z)``;
* garch ``beta1`` in (0, 1 - alpha1): ``beta1 = (1 - alpha1) sigmoid(z)``,
  log-Jacobian ``log(1 - alpha1) + log sigmoid(z) + log sigmoid(-z)`` (the
  map is triangular, so its determinant is the product of the diagonal);
* the ordered mixture means: ``mu_1 = z_1``, ``mu_2 = mu_1 + exp(z_2)``,
  log-Jacobian ``z_2``.

Normalising constants that do not depend on the parameters are dropped
(half-distribution truncation constants included). ``constrain(z)`` maps
``z [..., d]`` to the constrained values under the names used by the
reference draws (``theta[1]``, ``b[24]``, ...), each of shape ``[...]``.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import stats as jstats

from sigmabnn import dtypes as _dtypes  # noqa: F401  (64-bit mode before any array is built)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az

Array = jax.Array

NAMES = (
    "eight_schools-eight_schools_noncentered",
    "diamonds-diamonds",
    "arK-arK",
    "garch-garch11",
    "low_dim_gauss_mix-low_dim_gauss_mix",
    "sblrc-blr",
)


@dataclass(frozen=True)
class Target:
    """One reference posterior.

    Attributes:
        name: posteriordb name (``<posterior>``), the file prefix.
        dim: length of the unconstrained vector.
        logdensity: ``z [d] -> scalar``, log posterior density of the
            unconstrained parameters (Jacobian included, constants dropped).
        constrain: ``z [..., d] -> {reference name: value [...]}``.
        data: the data as numpy arrays (float64).
    """

    name: str
    dim: int
    logdensity: Callable[[Array], Array]
    constrain: Callable[[Array], dict[str, Array]]
    data: dict[str, np.ndarray]


def _log_sigmoid_jacobian(z: Array) -> Array:
    return jax.nn.log_sigmoid(z) + jax.nn.log_sigmoid(-z)


def _norm(x: Array, loc: Array | float, scale: Array | float) -> Array:
    return jnp.sum(jstats.norm.logpdf(x, loc, scale))


def _cauchy(x: Array, scale: float) -> Array:
    return jnp.sum(jstats.cauchy.logpdf(x, 0.0, scale))


def _student_t(x: Array, df: float, loc: float, scale: float) -> Array:
    return jnp.sum(jstats.t.logpdf(x, df, loc, scale))


# --------------------------------------------------------------------------- the six models


def _eight_schools(data: dict) -> tuple[int, Callable, Callable]:
    y = jnp.asarray(data["y"], jnp.float64)
    sigma = jnp.asarray(data["sigma"], jnp.float64)
    j = int(data["J"])

    def unpack(z):
        return z[..., :j], z[..., j], jnp.exp(z[..., j + 1])

    def logdensity(z):
        theta_trans, mu, tau = unpack(z)
        theta = mu + tau * theta_trans
        return (
            _norm(theta_trans, 0.0, 1.0)
            + _norm(mu, 0.0, 5.0)
            + _cauchy(tau, 5.0)
            + z[j + 1]  # d tau / d log tau
            + _norm(y, theta, sigma)
        )

    def constrain(z):
        theta_trans, mu, tau = unpack(z)
        out = {f"theta[{i + 1}]": mu + tau * theta_trans[..., i] for i in range(j)}
        out["mu"] = mu
        out["tau"] = tau
        return out

    return j + 2, logdensity, constrain


def _diamonds(data: dict) -> tuple[int, Callable, Callable]:
    x = np.asarray(data["X"], np.float64)
    y = jnp.asarray(data["Y"], jnp.float64)
    xc = x[:, 1:] - x[:, 1:].mean(axis=0)  # drop the intercept column, centre the rest
    xc = jnp.asarray(xc)
    kc = xc.shape[1]

    def logdensity(z):
        b, intercept, log_sigma = z[:kc], z[kc], z[kc + 1]
        sigma = jnp.exp(log_sigma)
        return (
            _norm(y, intercept + xc @ b, sigma)
            + _norm(b, 0.0, 1.0)
            + _student_t(intercept, 3.0, 8.0, 10.0)
            + _student_t(sigma, 3.0, 0.0, 10.0)
            + log_sigma
        )

    def constrain(z):
        out = {f"b[{i + 1}]": z[..., i] for i in range(kc)}
        out["Intercept"] = z[..., kc]
        out["sigma"] = jnp.exp(z[..., kc + 1])
        return out

    return kc + 2, logdensity, constrain


def _ark(data: dict) -> tuple[int, Callable, Callable]:
    k = int(data["K"])
    y = np.asarray(data["y"], np.float64)
    t = y.size
    # lagged design: row for time index i (0-based, i >= k) holds y[i-1], ..., y[i-k]
    lags = jnp.asarray(np.stack([y[k - m : t - m] for m in range(1, k + 1)], axis=1))
    target = jnp.asarray(y[k:])

    def logdensity(z):
        alpha, beta, log_sigma = z[0], z[1 : k + 1], z[k + 1]
        sigma = jnp.exp(log_sigma)
        return (
            _norm(alpha, 0.0, 10.0)
            + _norm(beta, 0.0, 10.0)
            + _cauchy(sigma, 2.5)
            + log_sigma
            + _norm(target, alpha + lags @ beta, sigma)
        )

    def constrain(z):
        out = {"alpha": z[..., 0]}
        out.update({f"beta[{i + 1}]": z[..., i + 1] for i in range(k)})
        out["sigma"] = jnp.exp(z[..., k + 1])
        return out

    return k + 2, logdensity, constrain


def _garch11(data: dict) -> tuple[int, Callable, Callable]:
    y = jnp.asarray(data["y"], jnp.float64)
    sigma1 = float(data["sigma1"])

    def unpack(z):
        mu = z[..., 0]
        alpha0 = jnp.exp(z[..., 1])
        alpha1 = jax.nn.sigmoid(z[..., 2])
        beta1 = (1.0 - alpha1) * jax.nn.sigmoid(z[..., 3])
        return mu, alpha0, alpha1, beta1

    def logdensity(z):
        mu, alpha0, alpha1, beta1 = unpack(z)

        def step(sigma_prev, y_prev):
            var = alpha0 + alpha1 * (y_prev - mu) ** 2 + beta1 * sigma_prev**2
            sigma = jnp.sqrt(var)
            return sigma, sigma

        _, sigmas = jax.lax.scan(step, jnp.asarray(sigma1, z.dtype), y[:-1])
        sigma = jnp.concatenate([jnp.asarray([sigma1], z.dtype), sigmas])
        log_jac = (
            z[1]
            + _log_sigmoid_jacobian(z[2])
            + jnp.log1p(-alpha1)  # beta1's scale (1 - alpha1)
            + _log_sigmoid_jacobian(z[3])
        )
        return _norm(y, mu, sigma) + log_jac  # flat priors

    def constrain(z):
        mu, alpha0, alpha1, beta1 = unpack(z)
        return {"mu": mu, "alpha0": alpha0, "alpha1": alpha1, "beta1": beta1}

    return 4, logdensity, constrain


def _gauss_mix(data: dict) -> tuple[int, Callable, Callable]:
    y = jnp.asarray(data["y"], jnp.float64)

    def unpack(z):
        mu1 = z[..., 0]
        mu2 = mu1 + jnp.exp(z[..., 1])
        return mu1, mu2, jnp.exp(z[..., 2]), jnp.exp(z[..., 3]), jax.nn.sigmoid(z[..., 4])

    def logdensity(z):
        mu1, mu2, s1, s2, theta = unpack(z)
        mix = jnp.logaddexp(
            jnp.log(theta) + jstats.norm.logpdf(y, mu1, s1),
            jnp.log1p(-theta) + jstats.norm.logpdf(y, mu2, s2),
        )
        prior = (
            _norm(jnp.stack([s1, s2]), 0.0, 2.0)
            + _norm(jnp.stack([mu1, mu2]), 0.0, 2.0)
            + jstats.beta.logpdf(theta, 5.0, 5.0)
        )
        log_jac = z[1] + z[2] + z[3] + _log_sigmoid_jacobian(z[4])
        return jnp.sum(mix) + prior + log_jac

    def constrain(z):
        mu1, mu2, s1, s2, theta = unpack(z)
        return {"mu[1]": mu1, "mu[2]": mu2, "sigma[1]": s1, "sigma[2]": s2, "theta": theta}

    return 5, logdensity, constrain


def _blr(data: dict) -> tuple[int, Callable, Callable]:
    x = jnp.asarray(data["X"], jnp.float64)
    y = jnp.asarray(data["y"], jnp.float64)
    d = int(data["D"])

    def logdensity(z):
        beta, log_sigma = z[:d], z[d]
        sigma = jnp.exp(log_sigma)
        return _norm(beta, 0.0, 10.0) + _norm(sigma, 0.0, 10.0) + log_sigma + _norm(y, x @ beta, sigma)

    def constrain(z):
        out = {f"beta[{i + 1}]": z[..., i] for i in range(d)}
        out["sigma"] = jnp.exp(z[..., d])
        return out

    return d + 1, logdensity, constrain


_BUILDERS = {
    "eight_schools-eight_schools_noncentered": _eight_schools,
    "diamonds-diamonds": _diamonds,
    "arK-arK": _ark,
    "garch-garch11": _garch11,
    "low_dim_gauss_mix-low_dim_gauss_mix": _gauss_mix,
    "sblrc-blr": _blr,
}


# --------------------------------------------------------------------------- loading


def _directory(data_dir: Path) -> Path:
    data_dir = Path(data_dir)
    return data_dir / "posteriordb" if (data_dir / "posteriordb").is_dir() else data_dir


def load_data(name: str, data_dir: Path) -> dict:
    """The raw data dict of ``name`` (``data_dir``: the shared data dir or its ``posteriordb``)."""
    if name not in _BUILDERS:
        raise ValueError(f"unknown posterior {name!r}; known: {', '.join(NAMES)}")
    with open(_directory(data_dir) / f"{name}.data.json") as f:
        return json.load(f)


def load_target(name: str, data_dir: Path) -> Target:
    """Build the :class:`Target` of posterior ``name`` from its data file (cached; ``logdensity`` jitted)."""
    return _load_target(name, str(_directory(data_dir)))


@functools.cache
def _load_target(name: str, directory: str) -> Target:
    raw = load_data(name, Path(directory))
    dim, logdensity, constrain = _BUILDERS[name](raw)
    data = {k: np.asarray(v, np.float64) for k, v in raw.items()}
    return Target(name=name, dim=dim, logdensity=jax.jit(logdensity), constrain=constrain, data=data)


def load_reference(name: str, data_dir: Path) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Reference draws and their bulk ESS.

    Returns:
        ``(draws, ess)``: ``draws[param]`` ``[10, 1000]`` (chains, draws, on
        the constrained scale) and ``ess[param]`` the bulk ESS stated in
        ``reference_info.json``.
    """
    directory = _directory(data_dir)
    with open(directory / f"{name}.reference_draws.json") as f:
        chains = json.load(f)
    with open(directory / f"{name}.reference_info.json") as f:
        info = json.load(f)
    draws = {k: np.asarray([chain[k] for chain in chains], np.float64) for k in chains[0]}
    diagnostics = info["diagnostics"]
    names = diagnostics["diagnostic_information"]["names"]
    ess = dict(zip(names, (float(v) for v in diagnostics["effective_sample_size_bulk"]), strict=True))
    return draws, ess


# --------------------------------------------------------------------------- moment comparison


def _ess_mean(x: np.ndarray) -> float:
    """ESS of the mean of ``x [C, S]`` (ArviZ, ``method="mean"``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(az.ess(x, method="mean"))


def compare_moments(
    draws: dict[str, np.ndarray],
    reference: dict[str, np.ndarray],
    reference_ess: dict[str, float],
    num_se: float = 5.0,
) -> tuple[list[str], list[dict[str, float]]]:
    """Compare posterior means and standard deviations with the reference, within Monte-Carlo error.

    For each parameter, with ``s`` the reference standard deviation:

    * mean: ``|m_hat - m_ref| < num_se * sqrt(s^2 / ESS_hat + s^2 / ESS_ref)``, ``ESS_hat`` the
      ArviZ mean-ESS of our draws and ``ESS_ref`` the bulk ESS stated with the reference;
    * sd: ``|s_hat - s_ref| < num_se * sqrt(se_hat^2 + se_ref^2)`` with the delta-method error
      ``se = sd((x - m)^2) / sqrt(ESS((x - m)^2)) / (2 s)`` of each side (ESS of the squared
      centred draws, from ArviZ, for both).

    Args:
        draws: ``name -> [C, S]`` our draws on the constrained scale.
        reference: ``name -> [C_ref, S_ref]`` reference draws.
        reference_ess: ``name -> `` reference bulk ESS.

    Returns:
        ``(failures, rows)``: one sentence per failed comparison, and a row of numbers per parameter.
    """
    failures: list[str] = []
    rows: list[dict[str, float]] = []
    for name, ref in reference.items():
        x = np.asarray(draws[name], np.float64)
        m_ref, s_ref = ref.mean(), ref.std()
        m_hat, s_hat = x.mean(), x.std()
        ess_hat = _ess_mean(x)
        tol_mean = num_se * np.sqrt(s_ref**2 / ess_hat + s_ref**2 / reference_ess[name])
        sq_hat, sq_ref = (x - m_hat) ** 2, (ref - m_ref) ** 2
        se_hat = sq_hat.std() / np.sqrt(_ess_mean(sq_hat)) / (2 * s_hat)
        se_ref = sq_ref.std() / np.sqrt(_ess_mean(sq_ref)) / (2 * s_ref)
        tol_sd = num_se * np.sqrt(se_hat**2 + se_ref**2)
        rows.append(
            {
                "name": name,
                "mean": m_hat,
                "mean_ref": m_ref,
                "tol_mean": tol_mean,
                "sd": s_hat,
                "sd_ref": s_ref,
                "tol_sd": tol_sd,
                "ess": ess_hat,
            }
        )
        if not abs(m_hat - m_ref) < tol_mean:
            failures.append(f"{name}: mean {m_hat:.5g} vs reference {m_ref:.5g} (tolerance {tol_mean:.3g})")
        if not abs(s_hat - s_ref) < tol_sd:
            failures.append(f"{name}: sd {s_hat:.5g} vs reference {s_ref:.5g} (tolerance {tol_sd:.3g})")
    return failures, rows
