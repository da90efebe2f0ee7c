"""A checkpointed fit's run store: opened (new or resumed), and saved as a partial model when interrupted.

A new checkpoint records the fit's arguments (:meth:`~sigmabnn.fitting.spec.FitSpec.to_json`), the
training data's fingerprint, the table's path, the chunk size and the version. Resuming checks
that the arguments and the data are those of the interrupted run. An interruption (``KeyboardInterrupt``,
or ``SIGTERM`` in the CLI) saves the committed draws as a partial model at the model path and
becomes a :class:`~sigmabnn.io.checkpoint.TrainingInterrupted`.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from typing import Any

from sigmabnn._version import __version__
from sigmabnn.errors import InputError
from sigmabnn.fitted import FittedModel, now_iso
from sigmabnn.fitting.report import FitReport, TrainingProgress
from sigmabnn.io.checkpoint import Checkpoint, TrainingInterrupted
from sigmabnn.io.model_file import save_partial_model
from sigmabnn.model.mlp import num_params

__all__ = ["CHUNK_SIZE", "chunk_size", "discard", "interrupted", "open_checkpoint", "recorded_fit_args"]

#: MCMC iterations per jitted chunk: a checkpointed run commits its state after each.
CHUNK_SIZE = 50


def recorded_fit_args(ckpt: Checkpoint, path: Any) -> dict[str, Any]:
    """The fit arguments a checkpoint records (``InputError`` when it holds none)."""
    recorded = ckpt.record.get("fit_args")
    if not isinstance(recorded, dict):
        raise InputError(f"the checkpoint in {path} does not record its fit arguments")
    return recorded


def open_checkpoint(path: Any, resume: bool, fit_args: dict[str, Any], fingerprint: str, source: str | None):
    """A new checkpoint at ``path``, or (``resume``) the existing one after checking it is this run's."""
    if not resume:
        return Checkpoint.create(
            path,
            {
                "fit_args": fit_args,
                "data_fingerprint": fingerprint,
                "source": None if source is None else os.path.abspath(source),
                "chunk_size": CHUNK_SIZE,
                "sigmabnn_version": __version__,
                "created": now_iso(),
            },
        )
    ckpt = Checkpoint.open(path)
    recorded = recorded_fit_args(ckpt, path)
    for key in sorted(set(recorded) | set(fit_args)):
        if recorded.get(key) != fit_args.get(key):
            raise InputError(
                f"cannot resume {path}: it was started with {key}={recorded.get(key)!r}, not {fit_args.get(key)!r}"
            )
    if ckpt.record.get("data_fingerprint") != fingerprint:
        raise InputError(
            f"cannot resume {path}: the training data differ from those of the interrupted run "
            f"({fingerprint} instead of {ckpt.record.get('data_fingerprint')})"
        )
    return ckpt


def chunk_size(ckpt: Checkpoint | None) -> int:
    """MCMC iterations per chunk: the checkpoint's own (a resumed run keeps its commits), else :data:`CHUNK_SIZE`."""
    return int(ckpt.record.get("chunk_size", CHUNK_SIZE)) if ckpt is not None else CHUNK_SIZE


def discard(ckpt: Checkpoint) -> None:
    """Remove a new checkpoint whose run could not start (bad settings leave nothing behind)."""
    shutil.rmtree(ckpt.model_path, ignore_errors=True)


def interrupted(ckpt: Checkpoint, partial: FittedModel, config: Any, err: BaseException) -> TrainingInterrupted:
    """Save the partial model of an interrupted MCMC run (its committed draws) and say how far it got.

    ``partial`` is the model without draws; ``config`` the run's :class:`~sigmabnn.train.MCMCConfig`.
    """
    num_warmup, num_samples, thin = int(config.num_warmup), int(config.num_samples), int(config.thin)
    iteration = ckpt.iteration()
    done = max(iteration - num_warmup, 0) // thin
    bnn = partial.bnn
    groups = bnn.prior.num_groups(bnn.mlp)
    draws = ckpt.committed_draws(done, int(config.num_chains), num_params(bnn.mlp), groups, bnn.dtype)
    phase = "sampling" if iteration > num_warmup else "warm-up" if ckpt.has_arrays() else "MAP"
    training = TrainingProgress(
        complete=False,
        phase=phase,
        iterations_done=iteration,
        iterations_planned=num_warmup + num_samples * thin,
        draws_done=done,
        draws_planned=num_samples,
    )
    diagnostics = FitReport(training=training).to_json()
    save_partial_model(dataclasses.replace(partial, draws=draws, diagnostics=diagnostics), ckpt.model_path)
    return TrainingInterrupted(str(ckpt.model_path), training, getattr(err, "signal_name", "SIGINT"))
