"""The one list of training methods and likelihood names (what :func:`sigmabnn.api.fit` offers).

Pure data, no imports: the CLI reads it without starting JAX.
"""

from __future__ import annotations

__all__ = [
    "ACQUISITION_BATCH_MODES",
    "ACQUISITION_CRITERIA",
    "CLASS_ACQUISITION_BATCH_MODES",
    "CLASS_ACQUISITION_CRITERIA",
    "CALIBRATION_MAPS",
    "CLI_METHODS",
    "DEFAULT_METHOD",
    "DEFAULT_SPLIT",
    "ENSEMBLE_METHODS",
    "AUTO_NOISE_MODELS",
    "LIKELIHOOD_NAMES",
    "MCMC_METHODS",
    "METHODS",
    "MIN_RECALIBRATION_ROWS",
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
DEFAULT_METHOD: str = "chees"
"""The method of a fit that names none: ChEES-HMC from MAP starts (:func:`sigmabnn.train.default_config`;
chosen on validation rows, ``benchmarks/results/defaults_validation.md``)."""
DEFAULT_SPLIT: tuple[float, float, float] = (0.9, 0.1, 0.0)
"""The random split of a table without a split column: train, validation, test fractions. No internal test
part: on a small table its rows are worth more to the sampler than to a report's test column (chosen on
validation rows, ``benchmarks/results/defaults_validation.md``); the validation part recalibrates the
intervals. A fit given no ``split`` holds that part out only where it can recalibrate on it
(:data:`MIN_RECALIBRATION_ROWS`; ``sigmabnn.fitting.spec.auto_min_val_rows``). Give ``split`` (``--split``)
for a test part."""
MIN_RECALIBRATION_ROWS: int = 20
"""Fewest held-out rows a recalibration accepts (its map resolves levels only to about ``1 / (m + 1)``)."""
CLI_METHODS: tuple[str, ...] = ("nuts", "hmc", "chees", "mh", *VI_METHODS, *ENSEMBLE_METHODS)
"""The same methods in the order ``sigmabnn train --method`` lists them (ChEES beside the other HMC samplers)."""
LIKELIHOOD_NAMES: tuple[str, ...] = ("gaussian", "student_t", "hetero_student_t", "auto", "categorical")
"""Likelihoods :func:`sigmabnn.api.fit` offers: noise models of a regression (a known per-row noise is chosen by
``noise_column``; ``auto`` chooses among :data:`AUTO_NOISE_MODELS` on the validation rows) and ``categorical``
(a classifier of integer or string labels)."""
AUTO_NOISE_MODELS: tuple[str, ...] = ("gaussian", "hetero_student_t")
"""The noise models ``likelihood="auto"`` chooses between (:mod:`sigmabnn.fitting.noise_choice`)."""
NOISE_CHOICE_BY: tuple[str, ...] = ("starts", "calibrated", "sampled")
"""How ``likelihood="auto"`` judges its candidates on the validation rows: by their MAP starts (before sampling), by
the starts with each model's noise scale calibrated on the validation rows, or by both sampled posteriors
(:mod:`sigmabnn.fitting.noise_choice`)."""
STUDENT_T_LIKELIHOODS: tuple[str, ...] = ("student_t", "hetero_student_t")
"""The likelihoods with a degrees-of-freedom option (``noise_df``)."""
RECALIBRATION_ROWS: tuple[str, ...] = ("heldout", "loo", "loo+heldout")
"""The PIT rows a fit can recalibrate on (``recalibrate`` of :func:`sigmabnn.api.fit`)."""
CALIBRATION_MAPS: tuple[str, ...] = ("quantile", "scale")
"""The calibration maps (:mod:`sigmabnn.calibration`): the empirical CDF of the PIT values, or one width
parameter."""

#: Acquisition criteria of :func:`sigmabnn.acquisition.select` and its batch modes, for a regression model.
ACQUISITION_CRITERIA: tuple[str, ...] = ("bald", "epig", "variance", "relative_std", "random")
ACQUISITION_BATCH_MODES: tuple[str, ...] = ("greedy", "top")
#: The same for a classifier (:mod:`sigmabnn.acquisition.classification`): its criteria, and its batch modes
#: (``"power"``: the stochastic batch, drawn with probabilities proportional to the scores; ``"batchbald"``:
#: BALD's greedy joint information).
CLASS_ACQUISITION_CRITERIA: tuple[str, ...] = ("bald", "max_entropy", "variation_ratios", "random")
CLASS_ACQUISITION_BATCH_MODES: tuple[str, ...] = ("power", "top", "batchbald")
