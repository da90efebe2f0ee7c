"""Exact conjugate posteriors used as ground truth by the statistical tests.

Bayesian linear regression ``y = X beta + eps``:

* known noise ``eps ~ N(0, sigma^2 I)``, prior ``beta ~ N(0, tau^2 I)``:
  Gaussian posterior with precision ``X^T X / sigma^2 + I / tau^2`` and mean
  ``cov X^T y / sigma^2`` (Bishop 2006, eq. 3.53-3.54);
* Normal-Gamma: noise precision ``lam ~ Gamma(a, b)``, ``beta | lam ~ N(0, (kappa lam)^-1 I)``,
  ``y | beta, lam ~ N(X beta, lam^-1 I)``: ``beta`` is multivariate t, ``lam`` Gamma
  (e.g. Murphy 2007, "Conjugate Bayesian analysis of the Gaussian distribution").
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class GaussianPosterior(NamedTuple):
    mean: np.ndarray  # [d]
    cov: np.ndarray  # [d, d]

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))


def make_regression(seed: int, n: int, d: int, noise_std: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Correlated design ``X [n, d]`` and targets ``y [n]`` from a fixed true ``beta``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) @ (np.eye(d) + 0.5 * rng.normal(size=(d, d)) / np.sqrt(d))
    beta = rng.normal(size=d)
    y = x @ beta + noise_std * rng.normal(size=n)
    return x, y


def known_noise_posterior(x: np.ndarray, y: np.ndarray, noise_std: float, prior_std: float) -> GaussianPosterior:
    """Exact Gaussian posterior of ``beta``."""
    d = x.shape[1]
    precision = x.T @ x / noise_std**2 + np.eye(d) / prior_std**2
    cov = np.linalg.inv(precision)
    mean = cov @ x.T @ y / noise_std**2
    return GaussianPosterior(mean, 0.5 * (cov + cov.T))


def known_noise_logdensity(x: np.ndarray, y: np.ndarray, noise_std: float, prior_std: float):
    """``logdensity(beta, hyper) -> scalar`` (``hyper`` ignored), unnormalised."""
    xj, yj = jnp.asarray(x), jnp.asarray(y)

    def logdensity(beta, hyper=None):
        r = yj - xj @ beta
        return -0.5 * jnp.sum(r**2) / noise_std**2 - 0.5 * jnp.sum(beta**2) / prior_std**2

    return logdensity


class NormalGammaPosterior(NamedTuple):
    beta_mean: np.ndarray  # [d]
    beta_cov: np.ndarray  # [d, d] (multivariate t covariance)
    lam_shape: float
    lam_rate: float

    @property
    def beta_std(self) -> np.ndarray:
        return np.sqrt(np.diag(self.beta_cov))

    @property
    def lam_mean(self) -> float:
        return self.lam_shape / self.lam_rate

    @property
    def lam_std(self) -> float:
        return np.sqrt(self.lam_shape) / self.lam_rate


def normal_gamma_posterior(x: np.ndarray, y: np.ndarray, kappa: float, a: float, b: float) -> NormalGammaPosterior:
    """Exact marginal posteriors of ``beta`` (t) and ``lam`` (Gamma shape/rate)."""
    n, d = x.shape
    lam_mat = x.T @ x + kappa * np.eye(d)
    m = np.linalg.solve(lam_mat, x.T @ y)
    a_n = a + n / 2
    b_n = b + 0.5 * (y @ y - m @ lam_mat @ m)
    cov = b_n / (a_n - 1.0) * np.linalg.inv(lam_mat)
    return NormalGammaPosterior(m, 0.5 * (cov + cov.T), a_n, b_n)


def normal_gamma_model(x: np.ndarray, y: np.ndarray, kappa: float, a: float, b: float):
    """``(logdensity(beta, lam), gibbs_fn(key, beta, lam) -> lam)`` of the Normal-Gamma model.

    The conditional of ``lam`` given ``beta`` is
    ``Gamma(a + (n + d) / 2, b + (|y - X beta|^2 + kappa |beta|^2) / 2)``.
    """
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    n, d = x.shape

    def logdensity(beta, lam):
        r = yj - xj @ beta
        return -0.5 * lam * jnp.sum(r**2) - 0.5 * kappa * lam * jnp.sum(beta**2)

    def gibbs_fn(key, beta, lam):
        r = yj - xj @ beta
        shape = a + 0.5 * (n + d)
        rate = b + 0.5 * (jnp.sum(r**2) + kappa * jnp.sum(beta**2))
        return (jax.random.gamma(key, shape, dtype=beta.dtype) / rate).astype(beta.dtype)

    return logdensity, gibbs_fn


def z_scores(draws: np.ndarray, mean: np.ndarray, std: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Monte-Carlo z-scores of the sample mean and sample std for draws ``[C, S, d]``.

    Mean error divided by ``std / sqrt(ESS)``; variance error divided by its
    Monte-Carlo standard error ``sd((x - mu)^2) / sqrt(ESS((x - mu)^2))`` (bulk ESS, ArviZ).
    """
    import arviz as az

    draws = np.asarray(draws, np.float64)
    ess_mean = az.ess(az.convert_to_dataset(draws))["x"].values
    z_mean = (draws.mean((0, 1)) - mean) / (std / np.sqrt(ess_mean))
    sq = (draws - mean) ** 2
    ess_sq = az.ess(az.convert_to_dataset(sq))["x"].values
    se_var = sq.reshape(-1, sq.shape[-1]).std(0) / np.sqrt(ess_sq)
    z_var = (sq.mean((0, 1)) - std**2) / se_var
    return np.atleast_1d(z_mean), np.atleast_1d(z_var)
