"""Which points to label next: acquisition scores of a fitted model's draws and batch selection.

- :mod:`~sigmabnn.acquisition.regression`: single-point scores of a regression model's predictive
  mixture (epistemic variance, relative epistemic std, BALD).
- :mod:`~sigmabnn.acquisition.batch`: greedy batch selection conditioning on the picks.
- :mod:`~sigmabnn.acquisition.select`: :func:`select`, the streamed selection from a candidate table.
"""

from __future__ import annotations

from sigmabnn.acquisition.batch import BatchPicks, greedy_batch, top_scores
from sigmabnn.acquisition.regression import (
    aleatoric_variance,
    bald,
    epistemic_variance,
    relative_epistemic_std,
)
from sigmabnn.acquisition.select import BATCH_MODES, CRITERIA, Selection, candidate_scores, select

__all__ = [
    "BATCH_MODES",
    "CRITERIA",
    "BatchPicks",
    "Selection",
    "aleatoric_variance",
    "bald",
    "candidate_scores",
    "epistemic_variance",
    "greedy_batch",
    "relative_epistemic_std",
    "select",
    "top_scores",
]
