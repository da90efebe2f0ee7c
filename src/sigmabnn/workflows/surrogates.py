"""A directory of per-process cross-section surrogates: train one per process, predict them all at points.

Layout of a surrogate directory (written by :func:`train_all`)::

    DIR/
      nlo_1000022_1000022.model/    one model per process (sigmabnn model directory)
      nlo_1000022_1000022.json      its record: settings, data counts, test/val metrics, time
      ...
      summary.csv, summary.md       one row per process (generated from the records)

A process is finished when its record exists (the record is written, atomically,
after the model), so an interrupted :func:`train_all` resumes with the next
unfinished process. :func:`load_surrogates` reads every model of a directory and
:func:`predict_xsections` evaluates them at parameter points (SLHA files or
tables, :func:`sigmabnn.physics.slha.read_points`).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from sigmabnn.data.features import required_columns
from sigmabnn.errors import DataError, InputError
from sigmabnn.evaluate.diagnose import mode_mixture_note
from sigmabnn.evaluate.report import score_splits
from sigmabnn.io.atomic import atomic_write_json, atomic_write_text
from sigmabnn.io.model_file import load_model, save_model, to_jsonable
from sigmabnn.physics.processes import SPLIT_COLUMN, Process, find_target_column, parse_process, processes_in
from sigmabnn.predict import predict
from sigmabnn.workflows.nlo import recommended_config, train_process

__all__ = [
    "SUMMARY_COLUMNS",
    "Surrogate",
    "add_random_split",
    "load_surrogates",
    "predict_xsections",
    "required_inputs",
    "summary_markdown",
    "summary_row",
    "train_all",
    "train_surrogate",
]

SUMMARY_COLUMNS: tuple[str, ...] = (
    "process",
    "label",
    "n_train",
    "n_test",
    "n_failed",
    "r2_log",
    "r2_xsec",
    "z_std",
    "coverage_1s",
    "coverage_2s",
    "coverage_3s",
    "median_rel_err",
    "train_seconds",
    "grad_evals",
)
"""Columns of ``summary.csv`` (metrics on the test split; coverage and relative error as fractions)."""
RANDOM_SPLIT = (0.80, 0.05, 0.15)
"""Split fractions used when the table has no ``split`` column (the thesis's proportions)."""


def add_random_split(df: pd.DataFrame, seed: int, fractions: Sequence[float] = RANDOM_SPLIT) -> pd.DataFrame:
    """A copy of ``df`` with a ``split`` column: a reproducible random ``train``/``val``/``test`` assignment."""
    rng = np.random.default_rng(seed)
    n = len(df)
    order = rng.permutation(n)
    labels = np.empty(n, dtype=object)
    n_train, n_val = round(fractions[0] * n), round(fractions[1] * n)
    labels[order[:n_train]] = "train"
    labels[order[n_train : n_train + n_val]] = "val"
    labels[order[n_train + n_val :]] = "test"
    return df.assign(**{SPLIT_COLUMN: labels})


def _record_path(directory: Path, process: Process) -> Path:
    return directory / f"{process.target}.json"


def _model_path(directory: Path, process: Process) -> Path:
    return directory / f"{process.target}.model"


def summary_row(record: dict[str, Any]) -> dict[str, Any]:
    """One ``summary.csv`` row (:data:`SUMMARY_COLUMNS`) from a process record of :func:`train_all`."""
    test = record["metrics"].get("test", {})
    cov = test.get("coverage_interval", {})
    levels = sorted(cov, key=float)
    row = {
        "process": record["process"],
        "label": record["label"],
        "n_train": record["n_train"],
        "n_test": test.get("n"),
        "n_failed": record["n_failed"],
        "r2_log": test.get("r2_log"),
        "r2_xsec": test.get("r2_xsec"),
        "z_std": test.get("z_std"),
        "median_rel_err": test.get("rel_err", {}).get("q0.5"),
        "train_seconds": record["train_seconds"],
        "grad_evals": record["grad_evals"],
    }
    for k, level in enumerate(levels[:3], start=1):
        row[f"coverage_{k}s"] = cov[level]
    return {c: row.get(c) for c in SUMMARY_COLUMNS}


def summary_markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The per-process summary as a Markdown table (test split; percentages for coverage and errors)."""

    def cell(key: str, value: Any) -> str:
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return "-"
        if key.startswith("coverage") or key == "median_rel_err":
            return f"{100 * value:.1f} %" if key.startswith("coverage") else f"{100 * value:.2f} %"
        if key.startswith("r2"):
            return f"{value:.4f}"
        if key in ("z_std",):
            return f"{value:.2f}"
        if key == "train_seconds":
            return f"{value:.0f}"
        return str(value)

    header = ["process", "particles", "train", "test", "failed", "R^2 log", "R^2 xsec", "z std"]
    header += ["cov 1s", "cov 2s", "cov 3s", "median rel. err.", "train s", "grad evals"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(cell(c, row[c]) for c in SUMMARY_COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def _write_summary(directory: Path, records: Sequence[dict[str, Any]]) -> None:
    rows = [summary_row(r) for r in records]
    atomic_write_text(directory / "summary.csv", pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)).to_csv(index=False))
    text = "# Per-process surrogates\n\nMetrics on the test split of each process.\n\n" + summary_markdown(rows)
    atomic_write_text(directory / "summary.md", text)


def _finished_record(directory: Path, process: Process) -> dict[str, Any] | None:
    path = _record_path(directory, process)
    if not (path.is_file() and _model_path(directory, process).is_dir()):
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if record.get("process") == str(process) else None


def train_all(
    seed: int,
    data: pd.DataFrame,
    directory: str | os.PathLike[str],
    *,
    processes: Iterable[Process | str] | None = None,
    progress: bool = True,
    callback: Callable[[dict[str, Any], bool], None] | None = None,
    client: Any = None,
    **config_overrides: Any,
) -> list[dict[str, Any]]:
    """Train the recommended surrogate of every process (or of ``processes``) and write a summary table.

    Args:
        seed: seed of every fit (and of the random split when ``data`` has no ``split`` column).
        data: a table with ``nlo_<pdg1>_<pdg2>`` target columns and the spectrum columns
            the processes' features need (e.g. :func:`sigmabnn.datasets.load_ewino`).
        directory: the surrogate directory (see the module docstring), created if needed once the processes
            and columns are checked. With a ``client`` it must be on a file system the workers share.
        processes: the processes to train (default: every target column of ``data``).
        progress: progress bars on stderr (not with a ``client``: the workers' fits run quietly).
        callback: called as ``callback(record, skipped)`` after each process (with a ``client``,
            in order of completion).
        client: a ``dask.distributed.Client``: every unfinished process is one task on its
            cluster (:mod:`sigmabnn.distributed`); the same seeds and the same models as without.
            A worker killed mid-fit leaves no model under its final name, and its task is retried.
        **config_overrides: fields of :class:`~sigmabnn.workflows.nlo.NLOConfig` (e.g.
            ``hidden=(8,)``, ``num_samples=20``), applied to every process.

    Returns:
        The records of all requested processes (finished earlier or now), in order.
        Each has ``process``, ``label``, ``target``, ``config``, ``n_train``, ``n_failed``,
        ``metrics`` (``val`` and ``test``: :func:`sigmabnn.evaluate.report.split_metrics`),
        ``train_seconds``, ``load_average`` (the 1-minute load average, mean of before and after the
        fit), ``grad_evals``, ``sampler``, ``modes`` (:func:`~sigmabnn.evaluate.diagnose.mode_mixture_note`:
        a sentence when the chains sit in different modes, else ``None``).

    Raises:
        InputError: no process in the table, an unknown process, missing feature columns.
    """

    out = Path(directory)
    wanted = (
        [parse_process(p, data.columns) for p in processes] if processes is not None else processes_in(data.columns)
    )
    if not wanted:
        raise InputError("the table has no cross-section columns nlo_<pdg1>_<pdg2>")
    if SPLIT_COLUMN not in data.columns:
        data = add_random_split(data, seed)
    done: dict[Process, dict[str, Any]] = {}
    for process in wanted:
        record = _finished_record(out, process)
        if record is not None:
            done[process] = record
            if callback is not None:
                callback(record, True)
        else:
            _check_columns(data, process, config_overrides)
    todo = [p for p in wanted if p not in done]
    out.mkdir(parents=True, exist_ok=True)  # only once the request is known to be valid: bad input leaves nothing

    def finished(process: Process, record: dict[str, Any]) -> None:
        done[process] = record
        _write_summary(out, [done[p] for p in wanted if p in done])
        if callback is not None:
            callback(record, False)

    settings = {"seed": seed, "data": data, "directory": out, **config_overrides}
    if client is None:
        for process in todo:
            finished(process, train_surrogate(process, **settings, progress=progress))
    elif todo:
        from sigmabnn.distributed.tasks import map_unordered

        keys = [f"train-all-{p.target}-seed{seed}" for p in todo]
        try:
            for i, record in map_unordered(client, train_surrogate, todo, keys=keys, **settings):
                finished(todo[i], record)
        finally:
            _remove_stale_temporaries(out, todo)
    records = [done[p] for p in wanted]
    _write_summary(out, records)
    return records


def _check_columns(data: pd.DataFrame, process: Process, config_overrides: dict[str, Any]) -> None:
    config = recommended_config(process, **config_overrides)
    find_target_column(data.columns, process)
    missing = [c for c in config.features if c not in data.columns]
    if missing:
        raise InputError(f"table lacks feature column(s) {', '.join(missing)} needed for process {process}")


def _remove_stale_temporaries(directory: Path, processes: Sequence[Process]) -> None:
    """Remove the hidden temporaries (``.<name>.tmp-*``) a worker killed while writing left for ``processes``.

    Called when no task of the run is running any more, so no temporary is still being written.
    """
    import shutil

    for process in processes:
        for name in (_model_path(directory, process).name, _record_path(directory, process).name):
            for stale in directory.glob(f".{name}.tmp-*"):
                if stale.is_dir():
                    shutil.rmtree(stale, ignore_errors=True)
                else:
                    stale.unlink(missing_ok=True)


def train_surrogate(
    process: Process,
    *,
    seed: int,
    data: pd.DataFrame,
    directory: str | os.PathLike[str],
    progress: bool = False,
    **config_overrides: Any,
) -> dict[str, Any]:
    """Train and save one process's surrogate: ``DIR/<target>.model``, then its record ``DIR/<target>.json``.

    The unit of work of :func:`train_all` (a task on a worker with a Dask client). Both files
    are written atomically, the record after the model, so a process is finished exactly when its
    record exists. ``data`` must have a ``split`` column.

    Returns:
        The record (see :func:`train_all`).
    """
    out = Path(directory)
    target = find_target_column(data.columns, process)
    config = recommended_config(process, **config_overrides)._replace(target=target)
    y = pd.to_numeric(data[target], errors="coerce").to_numpy(np.float64)
    valid = np.isfinite(y) & (y > 0)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    result = train_process(seed, process, config, data=data, progress=progress, score=False)
    seconds = time.perf_counter() - t0
    load = (load_before + os.getloadavg()[0]) / 2  # 1-min load average, before and after, meaned
    rows = data.loc[valid]
    parts = {name: rows[rows[SPLIT_COLUMN] == name] for name in ("val", "test")}
    metrics = score_splits(result.fitted, {k: v for k, v in parts.items() if len(v)})
    save_model(result.fitted, _model_path(out, process))
    sampler = result.report.sampler
    record = to_jsonable(
        {
            "process": str(process),
            "label": process.label,
            "target": target,
            "config": result.config._asdict(),
            "n_train": result.report.data.train,
            "n_failed": int((~valid).sum()),
            "metrics": metrics,
            "train_seconds": seconds,
            "load_average": load,
            "grad_evals": sampler.num_grad_evals,
            "sampler": {
                "acceptance": sampler.acceptance,
                "divergences": sampler.divergences,
                "rhat_predictions": sampler.rhat_predictions,
            },
            "modes": mode_mixture_note(result.fitted.report),
        }
    )
    atomic_write_json(_record_path(out, process), record)
    return record


# ------------------------------------------------------------------------------------------ predict


class Surrogate(NamedTuple):
    """One process's model in a surrogate directory."""

    process: Process
    path: Path
    fitted: Any


def load_surrogates(directory: str | os.PathLike[str], processes: Iterable[str] | None = None) -> list[Surrogate]:
    """The process models (``*.model`` with a target ``nlo_<pdg1>_<pdg2>``) of a directory, sorted by process.

    A single model directory is accepted too. ``processes`` restricts the set (each must be present).

    Raises:
        InputError: not a directory, no process models in it, a requested process without a model.
    """

    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"surrogate directory not found: {root}")
    candidates = [root] if (root / "model.json").is_file() else sorted(p for p in root.glob("*.model") if p.is_dir())
    found: dict[Process, Surrogate] = {}
    for path in candidates:
        fitted = load_model(path)
        held = processes_in([fitted.target_name])
        if not held:
            continue
        if not fitted.log_target:
            raise InputError(f"{path}: a cross-section model must have a log10 target")
        found[held[0]] = Surrogate(held[0], path, fitted)
    if not found:
        raise InputError(f"no cross-section models (*.model with a target nlo_<pdg1>_<pdg2>) in {root}")
    if processes is not None:
        chosen = []
        for text in processes:
            process = parse_process(text)
            if process not in found:
                raise InputError(f"no model for process {process} ({process.label}) in {root}")
            chosen.append(found[process])
        return chosen
    return sorted(found.values(), key=lambda s: s.process.target)


def required_inputs(surrogates: Iterable[Surrogate]) -> list[str]:
    """The raw columns the models need (their inputs, with derived inputs replaced by the columns they use)."""

    out: list[str] = []
    for s in surrogates:
        out.extend(required_columns(s.fitted.feature_names, s.fitted.derived))
    return list(dict.fromkeys(out))


def predict_xsections(
    surrogates: Sequence[Surrogate], points: pd.DataFrame, levels: Sequence[float] = (0.68, 0.95)
) -> pd.DataFrame:
    """Every surrogate's predictive summary at every point: one row per (point, process).

    Args:
        surrogates: from :func:`load_surrogates`.
        points: one row per parameter point with the :func:`required_inputs` columns (and
            optionally ``source``, e.g. from :func:`sigmabnn.physics.slha.read_points`).
        levels: central interval probabilities.

    Returns:
        Columns ``point`` (row number), ``source`` (if present), ``process``, ``label``, ``xsec``
        (predictive mean, in the training data's unit), ``std`` (predictive std), ``median``
        (``10**`` of the mean of ``log10 xsec``), ``lower_<level>``, ``upper_<level>``, and for
        models that store their training domain ``in_domain`` and ``domain_distance``
        (:class:`~sigmabnn.predict.Prediction`; empty for a model without one).

    Raises:
        DataError: missing or non-finite inputs.
    """

    if len(points) == 0:
        raise DataError("no points to predict")
    frames = []
    for s in surrogates:
        pred = predict(s.fitted, points, levels=tuple(levels))
        frame = pd.DataFrame({"point": np.arange(len(points))})
        if "source" in points.columns:
            frame["source"] = points["source"].to_numpy()
        frame["process"] = str(s.process)
        frame["label"] = s.process.label
        frame["xsec"] = pred.mean[:, 0]
        frame["std"] = pred.std[:, 0]
        frame["median"] = 10.0 ** pred.log_space.mean[:, 0]
        for lv in pred.levels:
            frame[f"lower_{lv:g}"] = pred.lower[lv][:, 0]
            frame[f"upper_{lv:g}"] = pred.upper[lv][:, 0]
        if pred.in_domain is not None:
            frame["in_domain"] = pred.in_domain
            frame["domain_distance"] = pred.domain_distance
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    return out.sort_values(["point", "process"], kind="stable").reset_index(drop=True)
