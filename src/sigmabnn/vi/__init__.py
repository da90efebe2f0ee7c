"""Variational inference for BNNs: mean-field Gaussian q, Bayes by Backprop and Flipout.

- :mod:`~sigmabnn.vi.meanfield`: the family ``q(w | mu, rho)``, ``sigma = softplus(rho)``.
- :mod:`~sigmabnn.vi.priors`: Gaussian (closed-form KL) and scale-mixture (Monte-Carlo KL) priors.
- :mod:`~sigmabnn.vi.bbb`: Bayes by Backprop (Blundell et al. 2015): ``init``, ``step``, ``sample``.
- :mod:`~sigmabnn.vi.flipout`: Flipout perturbations (Wen et al. 2018), same state and API.
- :mod:`~sigmabnn.vi.fit`: :class:`VIConfig` and :func:`fit_vi` -> ``PosteriorDraws`` from q.
"""

from sigmabnn import dtypes as _dtypes  # noqa: F401  (float policy before any array is made)
from sigmabnn.vi import bbb, flipout, meanfield, priors
from sigmabnn.vi.bbb import VIInfo, VIState
from sigmabnn.vi.fit import VIConfig, draws_from_state, fit_vi, kl_weights, predictive_moments, run_vi
from sigmabnn.vi.priors import DiagonalGaussianPrior, ScaleMixturePrior

__all__ = [
    "DiagonalGaussianPrior",
    "ScaleMixturePrior",
    "VIConfig",
    "VIInfo",
    "VIState",
    "bbb",
    "draws_from_state",
    "fit_vi",
    "flipout",
    "kl_weights",
    "meanfield",
    "predictive_moments",
    "priors",
    "run_vi",
]
