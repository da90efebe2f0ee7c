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

# public name -> module that defines it. A name here must not also be a submodule's name
# (``predict``, ``evaluate``): the lazy lookup would shadow the submodule. Use
# ``from sigmabnn.predict import predict`` and ``from sigmabnn.evaluate.metrics import evaluate``.
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
    "fit": "sigmabnn.api",
    "recalibrate": "sigmabnn.api",
    "FitSpec": "sigmabnn.fitting.spec",
    "build_spec": "sigmabnn.fitting.spec",
    "FitReport": "sigmabnn.fitting.report",
    "Calibration": "sigmabnn.calibration",
    "FittedModel": "sigmabnn.fitted",
    "load_model": "sigmabnn.io.model_file",
    "save_model": "sigmabnn.io.model_file",
    "Prediction": "sigmabnn.predict",
    "read_table": "sigmabnn.data.tables",
    "prepare": "sigmabnn.data.tables",
    "MAPConfig": "sigmabnn.map",
    "pretrain_map": "sigmabnn.map",
    "MCMCConfig": "sigmabnn.train",
    "fit_mcmc": "sigmabnn.train",
    "default_config": "sigmabnn.train",
    "HyperPrior": "sigmabnn.train.gibbs",
    "VIConfig": "sigmabnn.vi",
    "fit_vi": "sigmabnn.vi",
    "load_ewino": "sigmabnn.datasets",
    "enable_compilation_cache": "sigmabnn.compile_cache",
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
