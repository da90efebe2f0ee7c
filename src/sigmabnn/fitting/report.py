"""The fit report, typed: what :func:`sigmabnn.api.fit` returns beside the model, read by attribute.

A :class:`FitReport` has the sections ``data``, ``model``, ``method``, ``sampler`` (typed per
method: :class:`MCMCSummary`, :class:`VISummary`, :class:`EnsembleSummary`), ``noise_std``,
``timings`` and ``metrics``; a model recalibrated after training adds ``recalibration``, the
partial model of an interrupted run holds only ``training``. The field names are the keys of the
JSON a model file stores as its ``diagnostics``: :meth:`FitReport.to_json` writes that JSON and
:meth:`FitReport.from_json` reads it back, also from files written by earlier versions (keys
this version does not know are kept in ``extra`` and written back unchanged).

Pure data: this module imports nothing that trains or predicts, so the model file's reader
(:attr:`sigmabnn.fitted.FittedModel.report`) can use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sigmabnn.names import ENSEMBLE_METHODS, MCMC_METHODS, VI_METHODS

__all__ = [
    "DataSummary",
    "EnsembleSummary",
    "FitReport",
    "MCMCSummary",
    "ModelSummary",
    "NoiseChoiceSummary",
    "RecalibrationSummary",
    "Timings",
    "TrainingProgress",
    "VISummary",
]


def _plain(value: Any) -> Any:
    """JSON form of a field: nested reports by their ``to_json``, tuples as lists."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class _Section:
    """Shared JSON conversion of the report's sections (frozen dataclasses).

    Fields named in ``OPTIONAL`` are left out of the JSON when ``None`` (keys written only
    sometimes); ``extra`` holds keys of a stored report this version does not know and
    ``absent`` the fields a stored report lacks (written by an earlier version): both are
    written back as they were read.
    """

    OPTIONAL: ClassVar[tuple[str, ...]] = ()
    LISTS: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def names(cls) -> tuple[str, ...]:
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        return tuple(f.name for f in fields if f.name not in ("extra", "absent"))

    def to_json(self) -> dict[str, Any]:
        out = {}
        absent = getattr(self, "absent", ())
        for name in self.names():
            value = getattr(self, name)
            if name in absent or (value is None and name in self.OPTIONAL):
                continue
            out[name] = _plain(value)
        out.update(getattr(self, "extra", None) or {})
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Any:
        fields = cls.names()
        values = {k: (_tuple(d[k]) if k in cls.LISTS else d[k]) for k in fields if k in d}
        absent = frozenset(k for k in fields if k not in d and k not in cls.OPTIONAL)
        return cls(**values, extra={k: v for k, v in d.items() if k not in fields}, absent=absent)


@dataclass(frozen=True)
class DataSummary(_Section):
    """The rows a fit learnt from.

    Attributes:
        source: the table's path (``None``: a DataFrame).
        rows: rows in the table; dropped: rows dropped for a missing or non-finite value;
        dropped_by_column: column -> rows with a bad value there.
        train, val, test: rows in each split; split: ``"column:<name>"`` or ``"random:seed=<seed>"``.
        features: the network's inputs; skipped_columns: non-numeric columns left out.
        fingerprint: ``"sha256:..."`` of the training arrays.
    """

    source: str | None = None
    rows: int | None = None
    dropped: int | None = None
    dropped_by_column: Mapping[str, int] | None = None
    train: int | None = None
    val: int | None = None
    test: int | None = None
    split: str | None = None
    features: tuple[str, ...] = ()
    skipped_columns: tuple[str, ...] = ()
    fingerprint: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    LISTS: ClassVar[tuple[str, ...]] = ("features", "skipped_columns")


@dataclass(frozen=True)
class ModelSummary(_Section):
    """The network: ``architecture`` (``"2-20-20-1"``), ``num_params``, ``likelihood`` name, ``dtype``,
    ``networks`` (draws in all)."""

    architecture: str | None = None
    num_params: int | None = None
    likelihood: str | None = None
    dtype: str | None = None
    networks: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = field(default=frozenset(), repr=False, compare=False)


@dataclass(frozen=True)
class MCMCSummary(_Section):
    """The health of an MCMC run (measured at the end of training).

    Attributes:
        acceptance: mean acceptance rate per chain; divergences: divergent transitions in all chains.
        step_size: adapted step size per chain; mean_integration_steps: leapfrog steps per draw.
        ebfmi: E-BFMI per chain.
        rhat_predictions, ess_bulk_predictions: worst R-hat and bulk ESS of the networks'
            predictions at training points; rhat_log_posterior, ess_bulk_log_posterior: of the log posterior.
        num_grad_evals: gradient evaluations of the whole fit (MAP included).
        learn_noise: whether the noise precision was sampled.
        tree_depth_saturation: fraction of NUTS transitions at the maximal tree depth (NUTS only).
        warnings: plain-sentence warnings (:func:`sigmabnn.evaluate.diagnostics.warnings`).
    """

    acceptance: tuple[float | None, ...] | None = None
    divergences: int | None = None
    step_size: tuple[float, ...] | None = None
    mean_integration_steps: float | None = None
    ebfmi: tuple[float | None, ...] | None = None
    rhat_predictions: float | None = None
    ess_bulk_predictions: float | None = None
    rhat_log_posterior: float | None = None
    ess_bulk_log_posterior: float | None = None
    num_grad_evals: int | None = None
    learn_noise: bool | None = None
    tree_depth_saturation: float | None = None
    warnings: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    OPTIONAL: ClassVar[tuple[str, ...]] = ("tree_depth_saturation",)
    LISTS: ClassVar[tuple[str, ...]] = ("acceptance", "step_size", "ebfmi", "warnings")


@dataclass(frozen=True)
class VISummary(_Section):
    """A variational fit: ``final_loss`` and ``final_kl`` (means over the last 5 % of steps), ``num_steps``."""

    final_loss: float | None = None
    final_kl: float | None = None
    num_steps: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = field(default=frozenset(), repr=False, compare=False)


@dataclass(frozen=True)
class EnsembleSummary(_Section):
    """A deep ensemble: per member its ``final_loss`` (best monitored loss), ``best_step`` and ``num_steps_run``."""

    num_members: int | None = None
    final_loss: tuple[float, ...] = ()
    best_step: tuple[int, ...] = ()
    num_steps_run: tuple[int, ...] = ()
    num_grad_evals: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    LISTS: ClassVar[tuple[str, ...]] = ("final_loss", "best_step", "num_steps_run")


@dataclass(frozen=True)
class Timings(_Section):
    """Wall times of the stages (s); a method's own phases only for that method."""

    map_seconds: float | None = None
    sample_seconds: float | None = None
    vi_seconds: float | None = None
    ensemble_seconds: float | None = None
    fit_seconds: float | None = None
    metrics_seconds: float | None = None
    total_seconds: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "map_seconds", "sample_seconds", "vi_seconds", "ensemble_seconds", "fit_seconds", "metrics_seconds",
        "total_seconds",
    )  # fmt: skip


@dataclass(frozen=True)
class TrainingProgress(_Section):
    """How far an interrupted run got (the ``training`` section of a partial model)."""

    complete: bool = False
    phase: str | None = None
    iterations_done: int | None = None
    iterations_planned: int | None = None
    draws_done: int | None = None
    draws_planned: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = field(default=frozenset(), repr=False, compare=False)


@dataclass(frozen=True)
class RecalibrationSummary(_Section):
    """The rows a recalibration used (:func:`sigmabnn.recalibration.recalibrate`).

    Attributes:
        rows_kind: ``"heldout"``, ``"loo"`` or ``"loo+heldout"``; rows: PIT values in the map.
        loo_rows, loo_dropped_high_k, loo_k_threshold, loo_max_k, relative_efficiency: the
            leave-one-out part (``loo`` rows only; ``loo_max_k`` ``None`` when a tail was not fitted).
        heldout_rows: held-out rows used (``heldout`` rows only).
    """

    rows_kind: str | None = None
    rows: int | None = None
    loo_rows: int | None = None
    loo_dropped_high_k: int | None = None
    loo_k_threshold: float | None = None
    loo_max_k: float | None = None
    relative_efficiency: float | None = None
    heldout_rows: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rows_kind": self.rows_kind, "rows": self.rows}
        if self.loo_rows is not None:
            out.update({k: getattr(self, k) for k in self.names()[2:7] if k not in self.absent})
        if self.heldout_rows is not None:
            out["heldout_rows"] = self.heldout_rows
        return {**out, **self.extra}


@dataclass(frozen=True)
class NoiseChoiceSummary(_Section):
    """The noise model ``likelihood="auto"`` chose (:mod:`sigmabnn.fitting.noise_choice`).

    Attributes:
        likelihood: the chosen noise model (the model's likelihood).
        val_log_density: per candidate, its MAP starts' mean mixture log density on the validation
            rows (nats per row, standardised target units); empty when none was computed.
        reason: one line saying how the choice was made.
        seconds: wall time of the choice (its MAP fits, which the chosen model's chains start from; the
            timings' ``map_seconds`` are then only the chains' set-up).
        gain, gain_se: the heteroscedastic model's mean per-row gain over the Gaussian on the validation
            rows and its paired standard error (nats per row); ``None`` when no choice was made.
        margin: the margin in standard errors the gain had to exceed.
        sampled_val_log_density: with ``noise_choice_by="sampled"``, per candidate, its sampled posterior's mean
            log predictive density on the validation rows (nats per row, original units), which chose.
        calibrated_gain, calibrated_se: with ``noise_choice_by="calibrated"``, ``gain`` and ``gain_se`` with each
            model's noise scale calibrated on the validation rows
            (:func:`sigmabnn.fitting.noise_choice.loo_calibrated`).
        scale_factors: with ``"calibrated"``, per candidate, the factor of its MAP starts' noise scale that fits the
            validation rows best.
    """

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "seconds", "gain", "gain_se", "margin", "sampled_val_log_density", "calibrated_gain", "calibrated_se",
        "scale_factors",
    )  # fmt: skip

    likelihood: str | None = None
    val_log_density: Mapping[str, float] = field(default_factory=dict)
    reason: str | None = None
    seconds: float | None = None
    gain: float | None = None
    gain_se: float | None = None
    margin: float | None = None
    sampled_val_log_density: Mapping[str, float] | None = None
    calibrated_gain: float | None = None
    calibrated_se: float | None = None
    scale_factors: Mapping[str, float] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    absent: frozenset[str] = field(default=frozenset(), repr=False, compare=False)


def _names(obj: Any) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(obj))


SamplerSummary = MCMCSummary | VISummary | EnsembleSummary


def _sampler_from_json(d: Mapping[str, Any], method: str | None) -> SamplerSummary:
    if method in MCMC_METHODS or (method is None and ("acceptance" in d or "divergences" in d)):
        return MCMCSummary.from_json(d)
    if method in VI_METHODS or (method is None and "final_kl" in d):
        return VISummary.from_json(d)
    if method in ENSEMBLE_METHODS or "num_members" in d:
        return EnsembleSummary.from_json(d)
    return MCMCSummary.from_json(d)


@dataclass(frozen=True)
class FitReport:
    """The report of a fit (module docstring); every section may be ``None`` in a partial model's.

    Attributes:
        data: :class:`DataSummary`; model: :class:`ModelSummary`; method: the method's name.
        sampler: the method's summary.
        noise_std: posterior mean of the learnt noise std in log-space target units (log10
            units for a log target; ``hetero_student_t``: its mean over networks and training
            rows); ``None`` for a known noise or an ensemble.
        timings: :class:`Timings`.
        metrics: ``train``/``val`` -> :func:`sigmabnn.evaluate.metrics.evaluate`'s JSON.
        recalibration: :class:`RecalibrationSummary` of a recalibrated model.
        noise_choice: :class:`NoiseChoiceSummary` of a fit given ``likelihood="auto"`` that chose.
        training: :class:`TrainingProgress` of an interrupted run's partial model.
        extra: keys of a stored report this version does not know.
    """

    data: DataSummary | None = None
    model: ModelSummary | None = None
    method: str | None = None
    sampler: SamplerSummary | None = None
    noise_std: float | None = None
    timings: Timings | None = None
    metrics: Mapping[str, Any] | None = None
    recalibration: RecalibrationSummary | None = None
    noise_choice: NoiseChoiceSummary | None = None
    training: TrainingProgress | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether the report is that of a finished fit (not an interrupted run's)."""
        return self.training is None or bool(self.training.complete)

    def to_json(self) -> dict[str, Any]:
        """The JSON a model file stores as ``diagnostics`` (the keys are the field names)."""
        out: dict[str, Any] = {}
        for name in _names(self)[:-1]:
            value = getattr(self, name)
            if value is None and (name != "noise_std" or self.method is None):
                continue
            out[name] = _plain(value)
        return {**out, **self.extra}

    @classmethod
    def from_json(cls, d: Mapping[str, Any] | None) -> FitReport:
        """The report of a stored ``diagnostics`` JSON (empty: an empty report)."""
        d = d or {}
        method = d.get("method")
        parts = {
            "data": DataSummary,
            "model": ModelSummary,
            "timings": Timings,
            "recalibration": RecalibrationSummary,
            "noise_choice": NoiseChoiceSummary,
            "training": TrainingProgress,
        }
        values: dict[str, Any] = {k: t.from_json(d[k]) for k, t in parts.items() if d.get(k) is not None}
        if d.get("sampler") is not None:
            values["sampler"] = _sampler_from_json(d["sampler"], method)
        for key in ("method", "noise_std", "metrics"):
            if key in d:
                values[key] = d[key]
        values["extra"] = {k: v for k, v in d.items() if k not in _names(cls)}
        return cls(**values)
