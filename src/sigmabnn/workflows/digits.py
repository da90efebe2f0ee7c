"""The digits demo: a categorical BNN on the built-in 8x8 handwritten digits (``sigmabnn demo digits``).

Trains a classifier of ``digit`` from the 64 pixels on the fixed training rows of
:func:`sigmabnn.datasets.load_digits` (the validation rows early-stop the networks and fit the
temperature), saves the model, scores the test rows once (accuracy, NLL, ECE over 15
equal-width bins) and writes the classification report: a reliability diagram per split and the
most and least certain test digits drawn as images
(:func:`sigmabnn.evaluate.class_report.classification_report`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, NamedTuple

from sigmabnn.datasets import load_digits

__all__ = ["DIGITS_ARCHITECTURE", "DigitsResult", "digits_options", "run_digits"]

DIGITS_ARCHITECTURE = "64-50-10"
"""The demo's network: 64 pixels, 50 tanh units, 10 logits."""


class DigitsResult(NamedTuple):
    """What :func:`run_digits` made: the model, its test metrics, where it wrote, the wall time (s)."""

    fitted: Any
    test: dict[str, Any]
    model_path: Path
    report: Any
    seconds: float


def digits_options(method: str) -> dict[str, Any]:
    """The fit options of the demo's ``method`` (short runs that finish in a minute or a few on one core)."""
    if method == "ensemble":
        return {"num_members": 5, "num_steps": 1500, "patience": 200}
    if method in ("bbb", "flipout"):
        return {"num_steps": 3000, "batch_size": 128, "num_draws": 200}
    if method in ("nuts", "hmc", "chees", "mh"):
        return {"num_chains": 2, "num_warmup": 200, "num_samples": 100}
    raise ValueError(f"unknown method {method!r}")


def run_digits(out: str | Path, method: str = "ensemble", seed: int = 0, progress: bool = False) -> DigitsResult:
    """Train, save and report the digits classifier into ``out`` (``model/`` and ``report/``)."""
    from sigmabnn.api import fit
    from sigmabnn.evaluate.class_report import classification_report
    from sigmabnn.io.model_file import save_model

    start = time.perf_counter()
    table = load_digits()
    features = [c for c in table.columns if c.startswith("pixel_")]
    fitted, _ = fit(
        table, "digit", features, method=method, likelihood="categorical", split_column="split",
        architecture=DIGITS_ARCHITECTURE, seed=seed, progress=progress, **digits_options(method),
    )  # fmt: skip
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model_path = save_model(fitted, out / "model")
    report = classification_report(
        fitted, table, out / "report", title="Handwritten digits (8x8): categorical BNN",
        source="the built-in digits (fixed train/val/test split)", image_shape=(8, 8),
    )  # fmt: skip
    return DigitsResult(fitted, report.metrics["test"], model_path, report, time.perf_counter() - start)
