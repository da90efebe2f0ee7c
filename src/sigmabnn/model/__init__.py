"""What a BNN is: architecture, priors, likelihoods, log-posterior."""

from sigmabnn import dtypes as _dtypes  # noqa: F401  (float policy before any array is made)
from sigmabnn.model.likelihoods import (
    LIKELIHOODS,
    Categorical,
    Gaussian,
    HeteroscedasticGaussian,
    HeteroscedasticStudentT,
    KnownNoiseGaussian,
    StudentT,
    noise_df,
)
from sigmabnn.model.mlp import (
    MLP,
    Layer,
    OutInLayer,
    Params,
    forward,
    forward_ensemble,
    init_params,
    num_params,
    out_in_layers,
    parse_architecture,
)
from sigmabnn.model.posterior import BNN, Data, Hyperparameters, make_logdensity
from sigmabnn.model.priors import GaussianPrior

__all__ = [
    "BNN",
    "LIKELIHOODS",
    "MLP",
    "Categorical",
    "Data",
    "Gaussian",
    "GaussianPrior",
    "HeteroscedasticGaussian",
    "HeteroscedasticStudentT",
    "Hyperparameters",
    "KnownNoiseGaussian",
    "Layer",
    "OutInLayer",
    "Params",
    "StudentT",
    "forward",
    "forward_ensemble",
    "init_params",
    "make_logdensity",
    "noise_df",
    "num_params",
    "out_in_layers",
    "parse_architecture",
]
