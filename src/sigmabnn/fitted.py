"""FittedModel: everything a trained surrogate is, and everything a model file holds.

A :class:`FittedModel` bundles the network definition (:class:`~sigmabnn.model.BNN`),
the posterior draws, the fitted input and target transforms, and the metadata
needed to use and audit the model: input and target names, derived-feature
expressions, the training method and its settings, adapted sampler parameters,
a diagnostics summary and a fingerprint of the training data. It has no
behaviour beyond small accessors: prediction lives in :mod:`sigmabnn.predict`,
saving and loading in :mod:`sigmabnn.io.model_file`.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sigmabnn.calibration import Calibration
from sigmabnn.classes import ClassLabels
from sigmabnn.data.domain import Domain
from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.dtypes import resolve
from sigmabnn.fitting.report import FitReport
from sigmabnn.model.posterior import BNN

__all__ = ["FittedModel", "now_iso"]


def now_iso() -> str:
    """Current UTC time as ISO 8601 with seconds, e.g. ``"2026-01-31T12:00:00+00:00"``."""
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


@dataclass(frozen=True, eq=False)
class FittedModel:
    """A trained BNN surrogate.

    Attributes:
        bnn: architecture, prior, likelihood and dtype of the network.
        draws: posterior draws; positions ``[chain, draw, num_params]`` (NumPy
            or JAX arrays) in the model space of the transforms.
        x_transform: standardisation of the inputs (fitted on training rows).
        y_transform: optional log10 + standardisation of the target.
        feature_names: network inputs in order (may include derived names).
        target_name: the target column.
        derived: ``(name, expression)`` pairs of derived features, in order of
            evaluation; may be empty.
        method: how the draws were made (``"nuts"``, ``"hmc"``, ``"mh"``, ``"bbb"``, ...).
        settings: JSON-able method settings (chains, warm-up, ...).
        adapted: adapted sampler parameters, name -> NumPy array (may be empty),
            e.g. ``step_size`` ``[C]``, ``inverse_mass_matrix`` ``[C, d]``.
        diagnostics: the training report as JSON (acceptance, divergences, timings, metrics;
            what the model file stores); :attr:`report` reads it by attribute.
        data_fingerprint: ``"sha256:..."`` of the training arrays.
        created: ISO 8601 creation time (UTC).
        calibration: quantile recalibration of the predictive intervals learned on held-out
            rows (:class:`~sigmabnn.calibration.Calibration`, made by
            :func:`sigmabnn.recalibration.recalibrate`), or ``None``.
        domain: the training domain (:class:`~sigmabnn.data.domain.Domain`: standardised
            reference inputs and the threshold of the in-domain test), or ``None`` (a model
            saved before domains were stored, or trained on fewer than 3 rows): then
            predictions carry no ``in_domain`` flag.
        classes: a classifier's label set and temperature (:class:`~sigmabnn.classes.ClassLabels`;
            logit ``k`` is ``classes.labels[k]``), ``None`` for a regression.
    """

    bnn: BNN
    draws: PosteriorDraws
    x_transform: Standardizer
    y_transform: TargetTransform
    feature_names: tuple[str, ...]
    target_name: str
    derived: tuple[tuple[str, str], ...] = ()
    method: str = "nuts"
    settings: dict[str, Any] = field(default_factory=dict)
    adapted: dict[str, np.ndarray] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    data_fingerprint: str = ""
    created: str = field(default_factory=now_iso)
    calibration: Calibration | None = None
    domain: Domain | None = None
    classes: ClassLabels | None = None

    @property
    def num_features(self) -> int:
        return len(self.feature_names)

    def __repr__(self) -> str:
        """One line naming what the model is, not its arrays (the dataclass default printed every draw)."""
        widths = "-".join(str(w) for w in self.bnn.mlp.widths)
        d = self.draws
        parts = [
            f"target={self.target_name!r}{' (log10)' if self.log_target else ''}",
            f"features={list(self.feature_names)!r}",
            f"method={self.method!r}",
            f"draws={d.num_chains}x{d.num_draws}",
            f"network={widths} {self.bnn.likelihood.name} {self.bnn.dtype}",
        ]
        if self.classes is not None:
            parts.append(f"classes={list(self.classes.labels)!r}")
        if self.calibration is not None:
            parts.append(f"calibrated on {self.calibration.n} rows ({self.calibration.split})")
        return f"FittedModel({', '.join(parts)})"

    @property
    def num_networks(self) -> int:
        """Sampled networks in total (chains x draws)."""
        return self.draws.num_networks

    @property
    def report(self) -> FitReport:
        """The training report, typed (:class:`~sigmabnn.fitting.report.FitReport` of :attr:`diagnostics`)."""
        return FitReport.from_json(self.diagnostics)

    @property
    def is_classifier(self) -> bool:
        """Whether the model is a classifier (categorical likelihood)."""
        return self.bnn.likelihood.name == "categorical"

    @property
    def log_target(self) -> bool:
        """Whether the target is modelled as ``log10``."""
        return self.y_transform.log10

    @property
    def target_dim(self) -> int:
        """Number of target columns ``t``."""
        return self.y_transform.standardizer.dim

    def input_relevance(self) -> dict[str, float] | None:
        """With automatic relevance determination (``fit(..., ard=True)``): per input (its feature name), the
        posterior median over the networks of the prior std ``1 / sqrt(precision)`` of its first-layer weights,
        in units of the standardised input; an input the fit shrank has a small value. ``None`` without ARD."""
        prior, mlp = self.bnn.prior, self.bnn.mlp
        if not prior.input_groups:
            return None
        first = prior.first_input_group(mlp)
        precision = np.asarray(self.draws.hyper.weight_precision, np.float64)[..., first : first + mlp.widths[0]]
        std = np.median(1.0 / np.sqrt(precision.reshape(-1, mlp.widths[0])), axis=0)
        return {name: float(s) for name, s in zip(self.feature_names, std)}

    def with_diagnostics(self, **entries: Any) -> FittedModel:
        """A copy with ``entries`` merged into :attr:`diagnostics`."""
        return replace(self, diagnostics={**self.diagnostics, **entries})

    def with_dtype(self, dtype: str) -> FittedModel:
        """The same model, its networks evaluated in ``dtype`` (``"float32"`` or ``"float64"``).

        The draws and transforms are unchanged (float64 on the host); :func:`sigmabnn.predict.predict`
        casts the weights to ``dtype`` on the device and evaluates the networks there, then forms the
        moments and intervals in float64 as always. For a float64 model, float32 evaluation trades
        a relative rounding error of about ``1e-7`` per operation (far below any predictive std)
        for speed: the tanh units, which bound prediction on a CPU, run several times faster
        (``benchmarks/predict.py`` measures both dtypes).
        """

        name = str(resolve(dtype))
        if name == self.bnn.dtype:
            return self
        return replace(self, bnn=replace(self.bnn, dtype=name))
