"""BNN-level training by MCMC: MAP starts, warm-up, sampling with Gibbs updates of the precisions.

:mod:`sigmabnn.train.mcmc` holds :func:`fit_mcmc` and its configuration; :mod:`sigmabnn.train.gibbs`
the conjugate Gibbs updates of a BNN's noise and prior precisions (the runner's ``gibbs_fn``).
"""

from sigmabnn.train.gibbs import HyperPrior
from sigmabnn.train.mcmc import MCMCConfig, TrainInfo, default_config, fit_mcmc

__all__ = ["HyperPrior", "MCMCConfig", "TrainInfo", "default_config", "fit_mcmc"]
