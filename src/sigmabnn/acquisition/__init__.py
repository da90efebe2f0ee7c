"""Acquisition functions: which unlabelled points to label next (active learning).

This package only re-exports from its submodules:

- :mod:`~sigmabnn.acquisition.classification`: scores of a classifier's candidates from every
  network's class probabilities (BALD, maximum entropy, variation ratios, random).
"""

from __future__ import annotations

from sigmabnn.acquisition.classification import (
    CLASSIFICATION_CRITERIA,
    bald,
    classification_scores,
    max_entropy,
    predictive_entropy,
    select_batch,
    variation_ratios,
)

__all__ = [
    "CLASSIFICATION_CRITERIA",
    "bald",
    "classification_scores",
    "max_entropy",
    "predictive_entropy",
    "select_batch",
    "variation_ratios",
]
