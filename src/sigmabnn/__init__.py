"""sigmabnn: Bayesian neural network surrogates with error bars you can trust.

Importing this package switches on JAX's 64-bit mode (see :mod:`sigmabnn.dtypes`).
The public API is re-exported here; nothing is defined in this file.
"""

from sigmabnn._version import __version__
from sigmabnn import dtypes as _dtypes  # noqa: F401  (sets the float policy first)
from sigmabnn.model import (
    BNN,
    Categorical,
    Data,
    Gaussian,
    GaussianPrior,
    HeteroscedasticGaussian,
    Hyperparameters,
    KnownNoiseGaussian,
    parse_architecture,
)

__all__ = [
    "BNN",
    "Categorical",
    "Data",
    "Gaussian",
    "GaussianPrior",
    "HeteroscedasticGaussian",
    "Hyperparameters",
    "KnownNoiseGaussian",
    "__version__",
    "parse_architecture",
]
