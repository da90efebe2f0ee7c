"""The fit specification: every option of a fit, checked once where it enters.

:func:`build_spec` takes the keyword arguments of :func:`sigmabnn.api.fit` (the CLI, the NLO
workflow, ``train-all`` and ``resume`` all go through it) and returns a frozen :class:`FitSpec`,
or raises :class:`~sigmabnn.errors.InputError` with a one-line message for an invalid value or
combination. The stages after it read its fields and never re-check them; what only the data
can decide (feature names, the validation rows) is checked by :mod:`sigmabnn.fitting.prepare`
and :mod:`sigmabnn.model.build`.

A checkpointed run records :meth:`FitSpec.to_json` (the fit's keyword arguments as JSON) and
``resume`` rebuilds the spec with :meth:`FitSpec.from_json`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from sigmabnn.dtypes import DEFAULT_DTYPE, resolve
from sigmabnn.ensemble import EnsembleConfig
from sigmabnn.errors import InputError
from sigmabnn.map import MAPConfig
from sigmabnn.model.build import build_bnn, likelihood_for
from sigmabnn.model.mlp import parse_architecture
from sigmabnn.names import (
    CALIBRATION_MAPS,
    DEFAULT_METHOD,
    DEFAULT_SPLIT,
    ENSEMBLE_METHODS,
    LIKELIHOOD_NAMES,
    MCMC_METHODS,
    METHODS,
    MIN_RECALIBRATION_ROWS,
    NOISE_CHOICE_BY,
    RECALIBRATION_ROWS,
    STUDENT_T_LIKELIHOODS,
)
from sigmabnn.train import MCMCConfig, default_config
from sigmabnn.train.gibbs import HyperPrior
from sigmabnn.vi import VIConfig

__all__ = [
    "AUTO_NOISE_CHOICE_BY", "AUTO_NOISE_MARGIN", "AUTO_RECALIBRATION_GATE", "AUTO_RECALIBRATION_MAP", "DataSpec",
    "FitSpec", "MethodSpec",
    "ModelSpec", "auto_min_val_rows", "auto_recalibration", "build_spec", "json_value",
]  # fmt: skip


class DataSpec(NamedTuple):
    """Which rows and columns a fit learns from, and how the target is transformed.

    Attributes:
        target: the column to predict.
        features: input columns, or ``None`` for every other numeric column.
        split_column: column with train/val/test labels, or ``None`` for a random split.
        split: train, validation, test fractions of the random split.
        min_val_rows: the random split's validation part joins the training part when it would hold
            fewer rows than this (0: never; :func:`auto_min_val_rows`).
        log_target: model ``log10`` of the target.
        noise_column: column with a known per-row noise std of the target, or ``None``.
        derive: derived features (``"name=expression"`` strings or ``(name, expression)`` pairs).
        baseline: inputs of the target's linear baseline (empty: none).
    """

    target: str
    features: tuple[str, ...] | None = None
    split_column: str | None = None
    split: tuple[float, ...] = DEFAULT_SPLIT
    min_val_rows: int = 0
    log_target: bool = False
    noise_column: str | None = None
    derive: tuple[Any, ...] = ()
    baseline: tuple[str, ...] = ()


#: ``likelihood="auto"``: the heteroscedastic noise model is chosen only when its MAP starts' mean validation log
#: density beats the Gaussian's by more than this many paired standard errors (:mod:`sigmabnn.fitting.noise_choice`,
#: where the reason is given). Kept by the rule of ``benchmarks/noise_margin_seeds.py`` over 43 training sets of 9
#: tables: no margin from 0 to 3 (or the Gaussian always) scored a higher pooled log-likelihood on fresh rows
#: (``results/noise_margin_seeds.md``).
AUTO_NOISE_MARGIN = 1.0
#: ``likelihood="auto"``: how the candidates are judged (:data:`sigmabnn.names.NOISE_CHOICE_BY`): by the MAP starts.
#: ``"sampled"`` (both sampled, the better on the validation rows kept) passed the log-likelihood rule of
#: ``benchmarks/noise_margin_seeds.py`` over the same 43 training sets, but not the time goals: on the defaults
#: battery it took 1.5 times as long on small tables and 3 times at 10^5 rows (``results/defaults_sampled.md``),
#: and on smooth6d-300 NumPyro's BNN was less than 5 times slower (``results/defaults_speed_sampled.md``).
AUTO_NOISE_CHOICE_BY = "starts"


class ModelSpec(NamedTuple):
    """The network and its noise model.

    Attributes:
        architecture: ``"auto"``, ``"5-50-50-1"`` or a tuple of widths.
        activation: hidden-layer activation (``None``: ``tanh``).
        likelihood: one of :data:`sigmabnn.names.LIKELIHOOD_NAMES`.
        noise_df: degrees of freedom of Student-t noise, or ``None`` (default 4).
        noise_precision: the noise precision's start or fixed value (standardised units), or ``None``.
        learn_noise: learn the noise precision (``False`` for ``hetero_student_t``).
        dtype: ``"float64"`` or ``"float32"``.
        noise_choice: ``likelihood="auto"`` asked for a choice among :data:`sigmabnn.names.AUTO_NOISE_MODELS`
            on the validation rows (:mod:`sigmabnn.fitting.noise_choice`); ``likelihood`` is then the
            fallback (``"gaussian"``) until the fit replaces it with the choice (:meth:`FitSpec.with_likelihood`).
        noise_margin: with ``noise_choice``, how many paired standard errors the heteroscedastic model's
            validation log density must beat the Gaussian's by to be chosen (:data:`AUTO_NOISE_MARGIN`).
        noise_choice_by: with ``noise_choice``, ``"starts"`` (the MAP starts judged, one model sampled),
            ``"calibrated"`` (the same starts judged with each model's noise scale set on the other validation rows:
            :func:`sigmabnn.fitting.noise_choice.loo_calibrated`) or ``"sampled"`` (both models sampled, the one
            whose posterior predicts the validation rows better kept: :mod:`sigmabnn.fitting.sampled_choice`; about
            twice the sampling time; a checkpointed run samples the first model in memory, so an interruption there
            leaves nothing to resume); :data:`AUTO_NOISE_CHOICE_BY`.
        ard: automatic relevance determination: a prior precision per input for the first layer's weights
            (:class:`~sigmabnn.model.priors.GaussianPrior`, ``input_groups``), Gibbs-sampled with the other
            prior precisions (``learn_prior`` true unless given: with ``"auto"`` only where that samples them);
            MCMC methods only.
    """

    architecture: str | tuple[int, ...] = "auto"
    activation: str | None = "tanh"
    likelihood: str = "gaussian"
    noise_df: float | None = None
    noise_precision: float | None = None
    learn_noise: bool = True
    dtype: str = "float64"
    noise_choice: bool = False
    noise_margin: float = AUTO_NOISE_MARGIN
    noise_choice_by: str = "starts"
    ard: bool = False


class MethodSpec(NamedTuple):
    """How the networks are trained.

    Attributes:
        name: one of :data:`sigmabnn.names.METHODS`.
        num_chains: MCMC chains (``None``: the method's default, :func:`~sigmabnn.train.default_config`).
        num_warmup: warm-up iterations per chain (``None``: scaled to the problem).
        num_samples: kept draws per chain (MCMC) or draws from q (VI); ``None``: the default.
        options: further fields of the method's config, as given (names checked; a MAP config as
            its fields, ``map`` replacing fields of the default MAP pretraining). Read-only.
    """

    name: str = DEFAULT_METHOD
    num_chains: int | None = None
    num_warmup: int | None = None
    num_samples: int | None = None
    options: Mapping[str, Any] = {}


class FitSpec(NamedTuple):
    """Everything :func:`sigmabnn.api.fit` is asked to do, validated (:func:`build_spec`).

    Attributes:
        data, model, method: the parts above.
        seed: seed of the split and of the run's key ``jax.random.key(seed)``.
        recalibrate: ``None``, or the PIT rows the intervals are recalibrated on
            (:data:`sigmabnn.names.RECALIBRATION_ROWS`).
        recalibrate_auto: the rows were chosen by ``recalibrate="auto"`` (:func:`auto_recalibration`);
            such a recalibration is skipped, not an error, when too few rows have a PIT value.
        recalibration_map: the map fitted to the PIT values (:data:`sigmabnn.calibration.CALIBRATION_MAPS`).
        recalibration_gate: keep the recalibration only when the PIT values' Kolmogorov-Smirnov test
            against the uniform distribution gives a p-value below this (1.0: always keep it).
    """

    data: DataSpec
    model: ModelSpec
    method: MethodSpec
    seed: int = 0
    recalibrate: str | None = None
    recalibrate_auto: bool = False
    recalibration_map: str = "quantile"
    recalibration_gate: float = 1.0

    @property
    def is_classifier(self) -> bool:
        """Whether the fit is a classifier (the ``categorical`` likelihood)."""
        return self.model.likelihood == "categorical"

    @property
    def learns_noise(self) -> bool:
        """Whether the noise scale is learnt: always for a regression ensemble; never for known noise, classifiers."""
        if self.is_classifier:
            return False
        if self.method.name in ENSEMBLE_METHODS:
            return True
        return False if self.data.noise_column is not None else self.model.learn_noise

    def with_likelihood(self, name: str) -> FitSpec:
        """This spec with the noise model ``name`` (one of :data:`sigmabnn.names.AUTO_NOISE_MODELS`) chosen:
        ``noise_choice`` off, and no learnt noise precision for ``hetero_student_t`` (as :func:`build_spec`)."""
        learn = self.model.learn_noise and name != "hetero_student_t"
        return self._replace(model=self.model._replace(likelihood=name, noise_choice=False, learn_noise=learn))

    def bnn(self, feature_names: Sequence[str], num_classes: int = 2) -> Any:
        """The :class:`~sigmabnn.model.posterior.BNN` of the fit for the data's ``feature_names``
        (:func:`sigmabnn.model.build.build_bnn`; ``num_classes``: a classifier's classes)."""
        mo = self.model
        return build_bnn(self.likelihood(num_classes), mo.architecture, feature_names, mo.activation, mo.dtype, mo.ard)

    def likelihood(self, num_classes: int = 2) -> Any:
        """The likelihood the BNN is built with (:func:`sigmabnn.model.build.likelihood_for`);
        ``num_classes``: a classifier's classes (the data's)."""
        return likelihood_for(
            self.model.likelihood,
            num_classes=num_classes,
            ensemble=self.method.name in ENSEMBLE_METHODS,
            known_noise=self.data.noise_column is not None,
            noise_df=self.model.noise_df,
            noise_precision=self.model.noise_precision,
            learn_noise=self.model.learn_noise,
        )

    @property
    def auto_learns_prior(self) -> bool:
        """``learn_prior="auto"``: the per-layer prior precisions Gibbs-sampled for a classifier and for a
        regression whose noise model is one of :data:`LEARNS_PRIOR_LIKELIHOODS` (the likelihood ``"auto"``
        chose, when it chose)."""
        return self.is_classifier or self.model.likelihood in LEARNS_PRIOR_LIKELIHOODS

    def mcmc_config(self, n_train: int, num_params: int, validation: bool = True) -> MCMCConfig:
        """The MCMC config: :func:`~sigmabnn.train.default_config` for the problem size (``validation``: the fit
        has validation rows), then the options."""
        m = self.method
        config = default_config(n_train, num_params, m.name, validation)._replace(learn_noise=self.learns_noise)
        if self.is_classifier:  # its default: the prior precisions Gibbs-sampled (CLASSIFIER_LEARNS_PRIOR)
            config = config._replace(learn_prior=CLASSIFIER_LEARNS_PRIOR)
        elif m.name in AUTO_PRIOR_METHODS:  # the default fit's: learn_prior="auto" unless told otherwise
            config = config._replace(learn_prior=self.auto_learns_prior)
        if self.model.ard:  # asked for per-input precisions: sampled, unless learn_prior says otherwise
            config = config._replace(learn_prior=True)
        if m.options.get("learn_prior") == "auto":
            m = m._replace(options={**m.options, "learn_prior": self.auto_learns_prior})
        if m.num_chains is not None:
            config = config._replace(num_chains=m.num_chains)
        if m.num_warmup is not None:
            config = config._replace(num_warmup=m.num_warmup)
        if m.num_samples is not None:
            config = config._replace(num_samples=m.num_samples)
        return _with_options(config, m.options, "MCMC")

    def vi_config(self) -> VIConfig:
        """The variational fit's config: ``num_samples`` draws from q, then the options."""
        config = VIConfig(method=self.method.name, learn_noise=self.learns_noise)
        if self.method.num_samples is not None:
            config = config._replace(num_draws=self.method.num_samples)
        return _with_options(config, self.method.options, "VI")

    def ensemble_config(self) -> EnsembleConfig:
        """The ensemble's config: ``num_members`` and the members' :class:`~sigmabnn.map.MAPConfig` fields."""
        try:
            return EnsembleConfig.from_options(**self.method.options)
        except ValueError as err:
            raise InputError(" ".join(str(err).split())) from None

    def to_json(self) -> dict[str, Any]:
        """The fit's keyword arguments as JSON (what a checkpoint records; :meth:`from_json` reads it).

        Raises:
            InputError: an option JSON cannot hold.
        """
        d, mo, me = self.data, self.model, self.method
        args = {
            "target": d.target,
            "features": None if d.features is None else list(d.features),
            "method": me.name,
            "architecture": mo.architecture if isinstance(mo.architecture, str) else list(mo.architecture),
            "activation": mo.activation,
            "log_target": d.log_target,
            "split_column": d.split_column,
            "split": None if d.min_val_rows else list(d.split),  # None: the automatic split
            "seed": self.seed,
            "num_chains": me.num_chains,
            "num_warmup": me.num_warmup,
            "num_samples": me.num_samples,
            "learn_noise": mo.learn_noise,
            "noise_precision": mo.noise_precision,
            "noise_column": d.noise_column,
            "dtype": mo.dtype,
            "derive": list(d.derive),
            "method_options": dict(me.options),
            **({"baseline": list(d.baseline)} if d.baseline else {}),
            **({"likelihood": mo.likelihood, "noise_df": mo.noise_df} if mo.likelihood != "gaussian" else {}),
            **({"likelihood": "auto"} if mo.noise_choice else {}),
            **({"noise_margin": mo.noise_margin} if mo.noise_margin != AUTO_NOISE_MARGIN else {}),
            **({"noise_choice_by": mo.noise_choice_by} if mo.noise_choice_by != AUTO_NOISE_CHOICE_BY else {}),
            **({"ard": True} if mo.ard else {}),
            **self._recalibrate_arg(),
        }
        return _json(args)

    def _recalibrate_arg(self) -> dict[str, Any]:
        """``recalibrate`` as recorded (``"auto"``, the rows, ``True`` for held-out, or no key for none),
        ``recalibration_map`` when it is not ``"quantile"`` and ``recalibration_gate`` when it is not 1."""
        out: dict[str, Any] = {}
        if self.recalibrate_auto:
            out["recalibrate"] = "auto"
        elif self.recalibrate:
            out["recalibrate"] = True if self.recalibrate == "heldout" else self.recalibrate
        if self.recalibration_map != "quantile":
            out["recalibration_map"] = self.recalibration_map
        if self.recalibration_gate != 1.0:
            out["recalibration_gate"] = self.recalibration_gate
        return out

    @classmethod
    def from_json(cls, args: Mapping[str, Any]) -> FitSpec:
        """The spec of recorded fit arguments (:meth:`to_json`, also as written by earlier versions)."""
        args = dict(args)
        args.setdefault("recalibrate", False)  # records before the "auto" default: no key, no recalibration
        args.setdefault("likelihood", "gaussian")  # no key: the Gaussian (an automatic choice records "auto")
        options = dict(args.pop("method_options", None) or {})
        target = args.pop("target")
        args["derive"] = [tuple(d) if isinstance(d, list) else d for d in args.get("derive", [])]
        return build_spec(target, **args, **options)


def _json(args: dict[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(json.dumps(args, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise InputError(f"a checkpointed fit needs arguments that JSON can hold: {err}") from None


def json_value(key: str, value: Any) -> Any:
    """``value`` of the fit argument ``key`` as :meth:`FitSpec.to_json` records it (to compare with a record)."""
    if key == "architecture" and not isinstance(value, str):
        value = [int(w) for w in value]
    if hasattr(value, "_asdict"):  # a MAPConfig: its fields
        value = value._asdict()
    return _json({key: value})[key]


def _with_options(config: Any, options: Mapping[str, Any], what: str) -> Any:
    """``config`` with the named ``options`` replaced (a ``map`` dict replacing fields of ``config.map``)."""
    unknown = sorted(set(options) - set(config._fields))
    if unknown:
        raise InputError(f"unknown {what} option {unknown[0]!r}; valid: {', '.join(config._fields)}")
    try:
        if isinstance(options.get("map"), Mapping):
            options = {**options, "map": MAPConfig.from_json(options["map"], config.map)}
        if "hyperprior" in options:
            given = options["hyperprior"]
            fields = given._asdict() if isinstance(given, HyperPrior) else given
            if not isinstance(fields, Mapping):
                raise ValueError(f"hyperprior must be a HyperPrior or a dict of its fields, got {given!r}")
            options = {**options, "hyperprior": HyperPrior.from_json(fields, config.hyperprior)}
    except ValueError as err:
        raise InputError(str(err)) from None
    return config._replace(**options)


def _check_classifier(noise_column: Any, noise_precision: Any, log_target: Any, baseline: Any, recalibrate: Any):
    """A categorical fit has no noise, no target transform and no interval recalibration."""
    given = [
        name
        for name, value in (
            ("noise_column", noise_column), ("noise_precision", noise_precision), ("log_target", log_target),
            ("baseline", baseline), ("recalibrate", recalibrate),
        )
        if value
    ]  # fmt: skip
    if given:
        raise InputError(f"the categorical likelihood (a classifier) takes no {given[0]} option")


def _check_likelihood(method: str, likelihood: str, noise_column: Any, noise_precision: Any, noise_df: Any) -> None:
    if likelihood not in LIKELIHOOD_NAMES:
        raise InputError(f"unknown likelihood {likelihood!r}; choose from {', '.join(LIKELIHOOD_NAMES)}")
    if likelihood == "student_t" and (noise_column is not None or method in ENSEMBLE_METHODS):
        raise InputError("the student_t likelihood has a learnt homoscedastic scale: no --noise-column, no ensemble")
    if noise_df is not None and likelihood not in STUDENT_T_LIKELIHOODS:
        raise InputError("noise_df (degrees of freedom) is an option of the student_t and hetero_student_t likelihoods")
    if likelihood == "hetero_student_t":
        if method not in MCMC_METHODS:
            raise InputError(f"the hetero_student_t likelihood needs an MCMC method ({', '.join(MCMC_METHODS)})")
        if noise_column is not None or noise_precision is not None:
            raise InputError("the hetero_student_t likelihood learns a scale per point: no noise column or precision")


def auto_noise_choice(method: str, noise_column: Any, noise_precision: Any, learn_noise: bool) -> bool:
    """Whether ``likelihood="auto"`` chooses the noise model on the validation rows: for an MCMC regression
    with a learnt, unknown noise (:mod:`sigmabnn.fitting.noise_choice`). Otherwise ``"auto"`` is the Gaussian
    likelihood: a known per-row noise or a fixed precision are Gaussian, an ensemble learns its own variance
    head, and VI was not measured with another noise model."""
    return method in MCMC_METHODS and noise_column is None and noise_precision is None and bool(learn_noise)


#: The map ``recalibrate="auto"`` fits (:mod:`sigmabnn.calibration`), chosen on validation rows by
#: ``benchmarks/defaults.py --phase validate`` (``results/defaults_validation.md``), and kept over many
#: training sets per table against maps shrunk towards the identity and the training rows' leave-one-out
#: PIT (``benchmarks/recalibration_seeds.py``, ``results/recalibration_seeds.md`` and
#: ``results/recalibration_seeds_lbfgs.md``).
AUTO_RECALIBRATION_MAP = "quantile"
#: ``recalibrate="auto"`` keeps the map only when the validation rows' Kolmogorov-Smirnov test of uniformity
#: rejects it at p < 0.05, so that the few rows of an already calibrated model do not move its intervals by their
#: own noise (a map fitted on ``m`` rows scatters the 68 % coverage by about ``sqrt(0.68 * 0.32 / m)``: 0.085 on
#: 30 rows). Chosen over many training sets per table by ``benchmarks/recalibration_seeds.py``'s rule, fixed
#: before its run, on fresh scoring rows (``results/recalibration_seeds_lbfgs.md``: the default with its MAP
#: polish, whose raw intervals are closer to calibrated than the earlier default's, for which the ungated map
#: had been kept: ``results/recalibration_seeds.md``).
AUTO_RECALIBRATION_GATE = 0.05


def _noise_margin(margin: Any, auto: bool) -> float:
    """The checked ``noise_margin`` of :func:`build_spec` (``None``: :data:`AUTO_NOISE_MARGIN`)."""
    if margin is None:
        return AUTO_NOISE_MARGIN
    if not auto:
        raise InputError(
            "noise_margin applies only to likelihood='auto' (the noise model chosen on the validation rows)"
        )
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not np.isfinite(margin):
        raise InputError(f"noise_margin must be a finite number of standard errors, got {margin!r}")
    return float(margin)


def _check_ard(ard: Any, method: str, options: Mapping[str, Any]) -> None:
    """``ard`` of :func:`build_spec`: a boolean, for an MCMC method that may sample the prior precisions."""
    if not isinstance(ard, bool | np.bool_):
        raise InputError(f"ard must be true or false, got {ard!r}")
    if ard and method not in MCMC_METHODS:
        raise InputError(f"ard (per-input prior precisions, Gibbs-sampled) needs an MCMC method, not {method!r}")
    if ard and options.get("learn_prior") is False:
        raise InputError("ard needs the prior precisions sampled: learn_prior=True or 'auto', not False")


def _noise_choice_by(by: Any, auto: bool) -> str:
    """The checked ``noise_choice_by`` of :func:`build_spec` (``None``: :data:`AUTO_NOISE_CHOICE_BY`)."""
    if by is None:
        return AUTO_NOISE_CHOICE_BY
    if not auto:
        raise InputError(
            "noise_choice_by applies only to likelihood='auto' (the noise model chosen on the validation rows)"
        )
    if by not in NOISE_CHOICE_BY:
        raise InputError(f"noise_choice_by must be one of {', '.join(NOISE_CHOICE_BY)}; got {by!r}")
    return str(by)


def auto_recalibration(method: str, likelihood: str, noise_column: Any) -> str | None:
    """The rows ``recalibrate="auto"`` (fit's default) recalibrates on: ``"heldout"`` for an MCMC regression.

    The validation rows' PIT with the map :data:`AUTO_RECALIBRATION_MAP`; skipped when fewer than
    :data:`sigmabnn.recalibration.MIN_ROWS` validation rows have a PIT value, and not kept when their
    Kolmogorov-Smirnov test does not reject uniformity at :data:`AUTO_RECALIBRATION_GATE`. ``None`` (no
    recalibration) for the other methods (not measured for them), classifiers (their temperature is
    fitted instead) and a known per-row noise. The training rows' leave-one-out PIT was measured as
    the automatic rows too and made the intervals too narrow on validation rows (``defaults_validation.md``).
    """
    if method in MCMC_METHODS and likelihood != "categorical" and noise_column is None:
        return "heldout"
    return None


def auto_min_val_rows(method: str, likelihood: str, noise_column: Any) -> int:
    """The ``min_val_rows`` of a fit given no ``split`` (:data:`sigmabnn.names.DEFAULT_SPLIT`'s validation
    part, which then joins the training rows when it would be smaller).

    :data:`sigmabnn.names.MIN_RECALIBRATION_ROWS` where that part's use is to recalibrate the intervals
    (the fits :func:`auto_recalibration` recalibrates on held-out rows: fewer rows could not, so they train
    the model instead); 0 (the split as it is) for the other fits, whose validation rows also stop the
    training early (VI, ensemble) or fit a classifier's temperature, and were not measured without them.
    Whether a table's few validation rows train better than they check was chosen on validation rows of the
    defaults battery (``benchmarks/results/defaults_validation.md``).
    """
    return MIN_RECALIBRATION_ROWS if auto_recalibration(method, likelihood, noise_column) == "heldout" else 0


#: Whether an MCMC classifier Gibbs-samples its per-layer prior precisions (Gamma(1, 1) hyperpriors) unless
#: told otherwise (``learn_prior``). Measured on 10 splits of the digits' train and val rows with NUTS: the
#: scoring rows' NLL fell by 0.027 nats (paired SE 0.002) against the fixed unit prior, whose 64 inputs
#: saturate the first layer (``benchmarks/results/classifier_prior.md``).
CLASSIFIER_LEARNS_PRIOR = True

#: The regression noise models whose fits Gibbs-sample the per-layer prior precisions under
#: ``learn_prior="auto"`` (:attr:`FitSpec.auto_learns_prior`): the homoscedastic Gaussian, whose single
#: output head Neal's hierarchical prior was built for. Not the heteroscedastic Student-t, whose last layer
#: holds the mean and the scale heads under one sampled precision.
LEARNS_PRIOR_LIKELIHOODS = ("gaussian",)
#: The MCMC methods whose regression fits take ``learn_prior="auto"`` unless told otherwise: ChEES, the
#: library's default method. Measured over ten training sets each of six tables of 100 to 700 rows
#: (``benchmarks/results/candidate_seeds.md``, candidates ``learn-prior`` and ``learn-prior-gaussian``);
#: the other kernels keep the fixed unit prior, on which they were not measured.
AUTO_PRIOR_METHODS = ("chees",)

#: The dtype of a fit that names none, where :func:`auto_dtype` does not give float64.
AUTO_DTYPE = "float32"


def auto_dtype(method: str, likelihood: str) -> str:
    """The dtype of a fit given ``dtype=None`` (fit's default): :data:`AUTO_DTYPE` (float32) for ChEES with
    a Gaussian likelihood, the library's default fit (``likelihood="auto"`` is given here as the Gaussian: its
    choice, the scale head included, was measured in float32), else :data:`sigmabnn.dtypes.DEFAULT_DTYPE`
    (float64).

    Chosen on validation rows of the defaults battery (``benchmarks/results/defaults_validation.md``, step 3
    of its rule): in float32 the default fit was faster on every table and its validation LL did not differ
    from float64's beyond the noise (the file's ``LL - float64 twin's`` and its standard error). The other
    methods and likelihoods were not measured in float32 and keep float64 (:mod:`sigmabnn.dtypes`).
    """
    return AUTO_DTYPE if method == "chees" and likelihood == "gaussian" else DEFAULT_DTYPE


def _recalibration(recalibrate: Any, method: str, noise_column: Any) -> str | None:
    rows = "heldout" if recalibrate is True else recalibrate
    if rows is not False and rows not in RECALIBRATION_ROWS:
        raise InputError(f"recalibrate must be True, False, 'heldout', 'loo' or 'loo+heldout'; got {recalibrate!r}")
    if rows and "loo" in rows and method not in MCMC_METHODS:
        raise InputError(f"recalibrate={rows!r} (leave-one-out PIT) needs MCMC draws ({', '.join(MCMC_METHODS)})")
    if rows and noise_column is not None:
        raise InputError("recalibration is not supported with a known per-row noise (noise_column)")
    return rows or None


def _method_options(method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options with a MAP config given as its fields, the names checked against the method's config."""
    options = dict(options)
    if hasattr(options.get("map"), "_asdict"):  # a MAPConfig: every field, as JSON a checkpoint can hold
        options["map"] = options["map"].to_json()
    if isinstance(options.get("hyperprior"), HyperPrior):  # its fields, as JSON a checkpoint can hold
        options["hyperprior"] = options["hyperprior"]._asdict()
    learn_prior = options.get("learn_prior", False)
    if not (isinstance(learn_prior, bool | np.bool_) or learn_prior == "auto"):
        raise InputError(f"learn_prior must be true, false or 'auto', got {learn_prior!r}")
    if method in MCMC_METHODS:
        _with_options(MCMCConfig(), options, "MCMC")
    return options


def build_spec(
    target: str,
    features: Sequence[str] | None = None,
    *,
    method: str = DEFAULT_METHOD,
    architecture: str | Sequence[int] = "auto",
    activation: str | None = "tanh",
    log_target: bool = False,
    split_column: str | None = None,
    split: Sequence[float] | None = None,
    seed: int = 0,
    num_chains: int | None = None,
    num_warmup: int | None = None,
    num_samples: int | None = None,
    learn_noise: bool = True,
    noise_precision: float | None = None,
    noise_column: str | None = None,
    likelihood: str = "auto",
    noise_df: float | None = None,
    dtype: str | None = None,
    derive: Iterable[Any] = (),
    baseline: Sequence[str] = (),
    recalibrate: bool | str = "auto",
    recalibration_map: str | None = None,
    recalibration_gate: float | None = None,
    noise_margin: float | None = None,
    noise_choice_by: str | None = None,
    ard: bool = False,
    **method_options: Any,
) -> FitSpec:
    """The validated :class:`FitSpec` of :func:`sigmabnn.api.fit`'s arguments (documented there).

    Raises:
        InputError: an invalid value or combination (one line, the same messages ``fit`` gives).
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= int(seed) < 2**63:
        raise InputError(f"seed must be an integer from 0 to 2**63 - 1, got {seed!r}")
    method = str(method).lower()
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    if noise_precision is not None and not (np.isfinite(noise_precision) and noise_precision > 0):
        raise InputError(f"noise_precision must be a positive number, got {noise_precision}")
    likelihood = str(likelihood).lower()
    noise_choice = likelihood == "auto" and auto_noise_choice(method, noise_column, noise_precision, learn_noise)
    margin = _noise_margin(noise_margin, likelihood == "auto")
    choice_by = _noise_choice_by(noise_choice_by, likelihood == "auto")
    _check_ard(ard, method, method_options)
    if likelihood == "auto":
        likelihood = "gaussian"
    try:
        dtype = resolve(auto_dtype(method, likelihood) if dtype is None else dtype).name
    except (TypeError, ValueError) as err:
        raise InputError(str(err)) from None
    _check_likelihood(method, likelihood, noise_column, noise_precision, noise_df)
    auto = isinstance(recalibrate, str) and recalibrate == "auto"
    if auto:
        recalibrate = auto_recalibration(method, likelihood, noise_column) or False
    if likelihood == "categorical":
        _check_classifier(noise_column, noise_precision, log_target, tuple(baseline), recalibrate)
        learn_noise = False
    if likelihood == "hetero_student_t":
        learn_noise = False
    rows = _recalibration(recalibrate, method, noise_column)
    if recalibration_map is None:
        recalibration_map = AUTO_RECALIBRATION_MAP if auto else "quantile"
    if recalibration_map not in CALIBRATION_MAPS:
        raise InputError(f"recalibration_map must be one of {', '.join(CALIBRATION_MAPS)}; got {recalibration_map!r}")
    if recalibration_gate is None:
        recalibration_gate = AUTO_RECALIBRATION_GATE if auto else 1.0
    if isinstance(recalibration_gate, bool) or not (
        isinstance(recalibration_gate, int | float) and 0.0 < recalibration_gate <= 1.0
    ):
        raise InputError(f"recalibration_gate must be a number in (0, 1], got {recalibration_gate!r}")
    if method in ENSEMBLE_METHODS and (noise_column is not None or noise_precision is not None):
        raise InputError("the ensemble learns its noise variance; a fixed or known noise is not supported")
    if not (architecture is None or architecture == "auto"):
        try:
            parse_architecture(architecture, "tanh" if activation is None else activation)
        except ValueError as err:
            raise InputError(str(err)) from None
    spec = FitSpec(
        data=DataSpec(
            target=target,
            features=None if features is None else tuple(features),
            split_column=split_column,
            split=DEFAULT_SPLIT if split is None else tuple(split),
            min_val_rows=auto_min_val_rows(method, likelihood, noise_column) if split is None else 0,
            log_target=bool(log_target),
            noise_column=noise_column,
            derive=tuple(tuple(d) if isinstance(d, list) else d for d in derive),
            baseline=tuple(str(b) for b in baseline),
        ),
        model=ModelSpec(
            architecture=architecture
            if isinstance(architecture, str) or architecture is None
            else tuple(int(w) for w in architecture),
            activation=activation,
            likelihood=likelihood,
            noise_df=noise_df,
            noise_precision=noise_precision,
            learn_noise=bool(learn_noise),
            dtype=dtype,
            noise_choice=noise_choice,
            noise_margin=margin,
            noise_choice_by=choice_by,
            ard=bool(ard),
        ),
        method=MethodSpec(
            name=method,
            num_chains=None if num_chains is None else int(num_chains),
            num_warmup=None if num_warmup is None else int(num_warmup),
            num_samples=None if num_samples is None else int(num_samples),
            options=_method_options(method, method_options),
        ),
        seed=int(seed),
        recalibrate=rows,
        recalibrate_auto=auto,
        recalibration_map=recalibration_map,
        recalibration_gate=float(recalibration_gate),
    )
    spec.likelihood()  # degrees of freedom and precision the likelihood accepts
    if method in ENSEMBLE_METHODS:
        spec.ensemble_config()
    elif method not in MCMC_METHODS:
        spec.vi_config()
    return spec
