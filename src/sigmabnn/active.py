"""Active learning: which points to label next, and the loop that fits, chooses, labels and refits.

Nothing is defined here: the loop is :mod:`sigmabnn.workflows.active`, the scores and the batch
selection :mod:`sigmabnn.acquisition`.
"""

from __future__ import annotations

from sigmabnn.acquisition import CRITERIA, Selection, select
from sigmabnn.workflows.active import CommandOracle, LoopConfig, LoopResult, Oracle, refit_starts, run_loop

__all__ = [
    "CRITERIA",
    "CommandOracle",
    "LoopConfig",
    "LoopResult",
    "Oracle",
    "Selection",
    "refit_starts",
    "run_loop",
    "select",
]
