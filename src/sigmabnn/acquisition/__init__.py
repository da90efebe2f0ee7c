"""Which points to label next: acquisition scores of a fitted model's draws and batch selection.

This package only re-exports from its submodules:

- :mod:`~sigmabnn.acquisition.regression`: single-point scores of a regression model's predictive
  mixture (epistemic variance, relative epistemic std, BALD).
- :mod:`~sigmabnn.acquisition.batch`: greedy batch selection conditioning on the picks.
- :mod:`~sigmabnn.acquisition.epig`: EPIG, the information a label gives about the predictions at
  target inputs (Bickford Smith et al. 2023), and its greedy conditioned batch.
- :mod:`~sigmabnn.acquisition.select`: :func:`select`, the streamed selection from a candidate table.
- :mod:`~sigmabnn.acquisition.classification`: scores of a classifier's candidates from every
  network's class probabilities (BALD, maximum entropy, variation ratios, random) and the stochastic
  (power or softmax) batch draw; its BALD is
  :func:`sigmabnn.acquisition.classification.bald` (``bald`` here is the regression one).
- :mod:`~sigmabnn.acquisition.batchbald`: BatchBALD, a classifier's batch picked greedily by its
  joint mutual information with the networks (Kirsch et al. 2019).
"""

from sigmabnn.acquisition.batch import BatchPicks, greedy_batch, top_scores
from sigmabnn.acquisition.batchbald import batchbald_batch
from sigmabnn.acquisition.classification import (
    CLASSIFICATION_CRITERIA,
    classification_scores,
    max_entropy,
    predictive_entropy,
    select_batch,
    stochastic_batch,
    variation_ratios,
)
from sigmabnn.acquisition.epig import greedy_epig_batch
from sigmabnn.acquisition.regression import (
    aleatoric_variance,
    bald,
    epistemic_variance,
    relative_epistemic_std,
)
from sigmabnn.acquisition.select import BATCH_MODES, CRITERIA, Selection, Targets, candidate_scores, select

__all__ = [
    "BATCH_MODES",
    "CLASSIFICATION_CRITERIA",
    "CRITERIA",
    "BatchPicks",
    "Selection",
    "Targets",
    "aleatoric_variance",
    "bald",
    "batchbald_batch",
    "candidate_scores",
    "classification_scores",
    "epistemic_variance",
    "greedy_batch",
    "greedy_epig_batch",
    "max_entropy",
    "predictive_entropy",
    "relative_epistemic_std",
    "select",
    "select_batch",
    "stochastic_batch",
    "top_scores",
    "variation_ratios",
]
