"""The one list of training methods and likelihood names (what :func:`sigmabnn.api.fit` offers).

Pure data, no imports: the CLI reads it without starting JAX.
"""

from __future__ import annotations

__all__ = [
    "CLI_METHODS",
    "ENSEMBLE_METHODS",
    "LIKELIHOOD_NAMES",
    "MCMC_METHODS",
    "METHODS",
    "RECALIBRATION_ROWS",
    "STUDENT_T_LIKELIHOODS",
    "VI_METHODS",
]

MCMC_METHODS: tuple[str, ...] = ("nuts", "hmc", "mh", "chees")
"""Methods that sample with MCMC (:func:`sigmabnn.train.fit_mcmc`)."""
VI_METHODS: tuple[str, ...] = ("bbb", "flipout")
"""Variational methods (:func:`sigmabnn.vi.fit_vi`)."""
ENSEMBLE_METHODS: tuple[str, ...] = ("ensemble",)
"""Deep ensembles (:func:`sigmabnn.ensemble.fit_ensemble`)."""
METHODS: tuple[str, ...] = MCMC_METHODS + VI_METHODS + ENSEMBLE_METHODS
"""Every method, in the order error messages list them."""
CLI_METHODS: tuple[str, ...] = ("nuts", "hmc", "chees", "mh", *VI_METHODS, *ENSEMBLE_METHODS)
"""The same methods in the order ``sigmabnn train --method`` lists them (ChEES beside the other HMC samplers)."""
LIKELIHOOD_NAMES: tuple[str, ...] = ("gaussian", "student_t", "hetero_student_t", "categorical")
"""Likelihoods :func:`sigmabnn.api.fit` offers: noise models of a regression (a known per-row noise is chosen by
``noise_column``) and ``categorical`` (a classifier of integer or string labels)."""
STUDENT_T_LIKELIHOODS: tuple[str, ...] = ("student_t", "hetero_student_t")
"""The likelihoods with a degrees-of-freedom option (``noise_df``)."""
RECALIBRATION_ROWS: tuple[str, ...] = ("heldout", "loo", "loo+heldout")
"""The PIT rows a fit can recalibrate on (``recalibrate`` of :func:`sigmabnn.api.fit`)."""
