"""A classifier's calibration report: accuracy, NLL, Brier score, ECE and a reliability diagram per split.

:func:`classification_report` scores a classifier (:mod:`sigmabnn.evaluate.classification` for the
definitions; ECE over 15 equal-width confidence bins) on the rows of a labelled table, per split
(the ``train`` / ``val`` / ``test`` labels of a split column, or all rows as one split ``all``), and
writes into a directory, atomically:

- ``report.md``: the metrics per split, the temperature, the figures;
- ``metrics.json``: every number of the report, per split;
- ``reliability.png``: the reliability diagram of each split (accuracy against mean confidence per
  bin, with the diagonal of perfect calibration and the rows per bin);
- ``certain.png`` (with ``image_shape``, when the inputs are images of that shape): the most and
  least certain rows of the last split (lowest and highest total predictive entropy), drawn as
  images with their label, predicted class and probability.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from sigmabnn.errors import DataError, InputError
from sigmabnn.evaluate.classification import ECE_BINS, classification_summary, labels_for, reliability
from sigmabnn.predict.classes import ClassPrediction, predict_classes

__all__ = ["ClassReport", "NUM_IMAGES", "classification_report"]

SPLIT_ORDER = ("train", "val", "test")
#: Most and least certain rows drawn each.
NUM_IMAGES = 8


class ClassReport(NamedTuple):
    """What :func:`classification_report` wrote: the directory, its report and metrics per split."""

    directory: Path
    markdown: Path
    metrics: dict[str, dict[str, Any]]
    figures: tuple[Path, ...]


def _parts(table: pd.DataFrame, split_column: str | None) -> list[tuple[str, pd.DataFrame]]:
    if split_column is not None and split_column in table.columns:
        labels = table[split_column].astype(str)
        names = [s for s in SPLIT_ORDER if (labels == s).any()]
        names += sorted(set(labels) - set(SPLIT_ORDER) - {"nan"})
        return [(s, table[labels == s]) for s in names]
    return [("all", table)]


def _reliability_figure(path: Path, scored: dict[str, tuple[ClassPrediction, np.ndarray]]) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3.4 * len(scored) + 0.4, 3.4), layout="constrained")
    for i, (name, (pred, codes)) in enumerate(scored.items()):
        ax = fig.add_subplot(1, len(scored), i + 1)
        r = reliability(pred.probabilities, codes)
        centres = 0.5 * (r.edges[:-1] + r.edges[1:])
        used = r.count > 0
        ax.bar(centres[used], r.accuracy[used], width=1.0 / ECE_BINS, edgecolor="k", alpha=0.7, label="accuracy")
        ax.plot(r.confidence[used], r.accuracy[used], "o", ms=3, color="C3", label="at mean confidence")
        ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
        for c, a, n in zip(centres[used], r.accuracy[used], r.count[used], strict=True):
            ax.annotate(str(int(n)), (c, a), ha="center", va="bottom", fontsize=6)
        ax.set(xlim=(0, 1), ylim=(0, 1.05), xlabel="confidence (max probability)", ylabel="accuracy")
        ax.set_title(f"{name} ({ECE_BINS} bins; numbers: rows)", fontsize=9)
        if i == 0:
            ax.legend(fontsize=7, loc="upper left")
    fig.savefig(path, dpi=110)


def _images_figure(path: Path, x: np.ndarray, pred: ClassPrediction, codes: np.ndarray, shape: tuple[int, int]):
    """The :data:`NUM_IMAGES` most and least certain rows (by total entropy); returns their records."""
    from matplotlib.figure import Figure

    order = np.argsort(pred.entropy, kind="stable")
    k = min(NUM_IMAGES, order.size)
    rows = [("most certain", order[:k]), ("least certain", order[::-1][:k])]
    fig = Figure(figsize=(1.3 * k + 0.4, 3.2), layout="constrained")
    records = []
    for r, (kind, idx) in enumerate(rows):
        for j, i in enumerate(idx):
            ax = fig.add_subplot(2, k, r * k + j + 1)
            ax.imshow(x[i].reshape(shape), cmap="gray_r")
            ax.set_xticks([])
            ax.set_yticks([])
            label, guess = pred.labels[codes[i]], pred.predicted[i]
            prob = float(pred.probabilities[i, pred.predicted_index[i]])
            ax.set_title(f"{label}->{guess} {prob:.2f}\nH={pred.entropy[i]:.2f}", fontsize=7)
            records.append({"kind": kind, "row": int(i), "label": label, "predicted": guess, "probability": prob,
                            "entropy": float(pred.entropy[i]),
                            "mutual_information": float(pred.mutual_information[i])})  # fmt: skip
        fig.text(0.0, 0.75 - 0.5 * r, kind, rotation=90, va="center", fontsize=8)
    fig.savefig(path, dpi=110)
    return records


def _fmt(v: float) -> str:
    return f"{v:.4f}"


def _markdown(fitted: Any, metrics: dict[str, dict[str, Any]], images: list[dict], title: str, source: str) -> str:
    names = list(metrics)
    rows = [("rows", "n", str)] + [
        (label, key, _fmt)
        for key, label in (
            ("accuracy", "accuracy"), ("error", "test error"), ("nll", "NLL (nats/row)"), ("brier", "Brier score"),
            ("ece", f"ECE ({ECE_BINS} equal-width bins)"), ("mean_entropy", "mean entropy (total)"),
            ("mean_expected_entropy", "mean expected entropy (aleatoric)"),
            ("mean_mutual_information", "mean mutual information (epistemic)"),
        )
    ]  # fmt: skip
    lines = [f"# {title}", "", f"Classifier `{fitted.target_name}` ({len(fitted.classes.labels)} classes, "
             f"{fitted.num_networks} networks, method {fitted.method}) scored on {source}.", ""]  # fmt: skip
    lines += [f"Temperature: {fitted.classes.temperature_text()}; fitted on the validation rows.", ""]
    lines += ["| metric | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, key, fmt in rows:
        lines.append(f"| {label} | " + " | ".join(fmt(metrics[s][key]) for s in names) + " |")
    lines += [
        "",
        "Definitions: accuracy of the most probable class; NLL `-mean log p(y)`; Brier `mean sum_k (p_k - 1[k=y])^2`; "
        f"ECE: rows binned by confidence `max_k p_k` into {ECE_BINS} equal-width bins on [0, 1], "
        "`sum_b n_b/n |accuracy_b - confidence_b|`.",
        "",
        "![reliability diagram](reliability.png)",
        "",
    ]
    if images:
        lines += [f"Most and least certain rows of the {names[-1]} split (label->predicted probability, "
                  "entropy H in nats):", "", "![most and least certain](certain.png)", ""]  # fmt: skip
    return "\n".join(lines)


def classification_report(
    fitted: Any,
    table: pd.DataFrame,
    directory: str | os.PathLike[str],
    *,
    split_column: str | None = "split",
    title: str | None = None,
    source: str = "the given table",
    image_shape: tuple[int, int] | None = None,
) -> ClassReport:
    """Score the classifier ``fitted`` on ``table`` per split and write the report (module docstring).

    Raises:
        InputError / DataError: not a classifier, a missing target column, an unseen label, no rows.
    """
    from sigmabnn.io.atomic import atomic_directory, atomic_write_json
    from sigmabnn.io.model_file import to_jsonable
    from sigmabnn.predict.inputs import feature_matrix_for

    if not fitted.is_classifier:
        raise InputError("the classification report needs a classifier (categorical likelihood)")
    if fitted.target_name not in table.columns:
        raise InputError(f"the data has no target column {fitted.target_name!r}")
    scored, metrics = {}, {}
    for name, rows in _parts(table, split_column):
        rows = rows[rows[fitted.target_name].notna()]
        if len(rows):
            pred = predict_classes(fitted, rows)
            codes = labels_for(fitted, rows, len(rows))
            scored[name] = (pred, codes, rows)
            metrics[name] = classification_summary(pred.probabilities, codes, pred)
    if not scored:
        raise DataError("no rows with a label to score")
    last = list(scored)[-1]
    target = Path(directory)
    images: list[dict] = []
    with atomic_directory(target) as tmp:
        _reliability_figure(tmp / "reliability.png", {k: v[:2] for k, v in scored.items()})
        figures = [target / "reliability.png"]
        if image_shape is not None and int(np.prod(image_shape)) == fitted.num_features:
            pred, codes, rows = scored[last]
            images = _images_figure(tmp / "certain.png", feature_matrix_for(fitted, rows), pred, codes, image_shape)
            figures.append(target / "certain.png")
        text = _markdown(fitted, metrics, images, title or f"Classification report: {fitted.target_name}", source)
        (tmp / "report.md").write_text(text, encoding="utf-8")
        out = {"splits": metrics, "temperature": fitted.classes.temperature,
               "temperature_map": fitted.classes.temperature_map, "certain": images}  # fmt: skip
        atomic_write_json(tmp / "metrics.json", to_jsonable(out))
    return ClassReport(target, target / "report.md", metrics, tuple(figures))
