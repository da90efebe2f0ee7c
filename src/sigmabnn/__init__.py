"""sigmabnn: Bayesian neural network surrogates with error bars you can trust.

The public API is re-exported here and loaded lazily, so that ``import
sigmabnn`` (and ``sigmabnn --version``) stays fast and does not import JAX.
Any sigmabnn module that touches JAX switches on 64-bit mode first (see
:mod:`sigmabnn.dtypes`). Nothing is defined in this file.
"""

from __future__ import annotations

import importlib
from typing import Any

from sigmabnn._version import __version__ as __version__

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "BNN": "sigmabnn.model",
    "Categorical": "sigmabnn.model",
    "Data": "sigmabnn.model",
    "Gaussian": "sigmabnn.model",
    "GaussianPrior": "sigmabnn.model",
    "HeteroscedasticGaussian": "sigmabnn.model",
    "Hyperparameters": "sigmabnn.model",
    "KnownNoiseGaussian": "sigmabnn.model",
    "parse_architecture": "sigmabnn.model",
    "PosteriorDraws": "sigmabnn.draws",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sigmabnn' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
