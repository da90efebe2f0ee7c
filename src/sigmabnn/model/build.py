"""The BNN a fit trains: its likelihood and its architecture, chosen from the fit's options.

- The likelihood: a deep ensemble learns its variance (:class:`HeteroscedasticGaussian`); a known
  per-row noise std uses :class:`KnownNoiseGaussian`; otherwise the named noise model
  (``"gaussian"``, ``"student_t"``, ``"hetero_student_t"``) with the given noise precision
  (the start, or the fixed value when it is not learnt) and degrees of freedom; ``"categorical"``
  is a classifier's softmax over one logit per class (for every method).
- The architecture: ``"auto"`` is ``P-20-20-k`` for ``P`` inputs and ``k`` outputs, ``tanh``
  hidden units; a heteroscedastic likelihood widens the mean network's last layer to a mean and
  a scale output per target (:func:`with_variance_head`).
- The prior: Gaussian with precision 1.0 on every kernel and bias entry, a unit-scale prior that
  matches standardised inputs and targets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sigmabnn.errors import InputError
from sigmabnn.model.likelihoods import (
    Categorical,
    Gaussian,
    HeteroscedasticGaussian,
    HeteroscedasticStudentT,
    KnownNoiseGaussian,
    StudentT,
)
from sigmabnn.model.mlp import MLP, parse_architecture
from sigmabnn.model.posterior import BNN
from sigmabnn.model.priors import GaussianPrior

__all__ = [
    "DEFAULT_HIDDEN",
    "DEFAULT_NOISE_DF",
    "PRIOR_PRECISION",
    "architecture",
    "build_bnn",
    "likelihood_for",
    "with_variance_head",
]

DEFAULT_HIDDEN = (20, 20)
"""Hidden widths of the ``"auto"`` architecture."""
DEFAULT_NOISE_DF = 4.0
"""Degrees of freedom of Student-t noise when none are given."""
PRIOR_PRECISION = 1.0
"""Precision of the Gaussian prior on every weight and bias (standardised units)."""


def likelihood_for(
    name: str,
    *,
    ensemble: bool = False,
    known_noise: bool = False,
    noise_df: float | None = None,
    noise_precision: float | None = None,
    learn_noise: bool = True,
    num_classes: int = 2,
) -> Any:
    """The likelihood of a fit (module docstring); ``InputError`` for invalid degrees of freedom.

    ``"categorical"`` is a :class:`Categorical` of ``num_classes`` classes, whatever the method.
    """
    if name == "categorical":
        return Categorical(num_classes=int(num_classes))
    if ensemble:
        return HeteroscedasticGaussian()
    if known_noise:
        return KnownNoiseGaussian()
    df = float(DEFAULT_NOISE_DF if noise_df is None else noise_df)
    try:
        if name == "hetero_student_t":
            return HeteroscedasticStudentT(df=df)
        if name == "student_t":
            precision = float(noise_precision) if noise_precision is not None else StudentT.precision
            return StudentT(df=df, precision=precision, learn_precision=bool(learn_noise))
    except (TypeError, ValueError) as err:
        raise InputError(str(err)) from None
    precision = float(noise_precision) if noise_precision is not None else Gaussian.precision
    return Gaussian(precision=precision, learn_precision=bool(learn_noise))


def with_variance_head(mlp: MLP, likelihood: HeteroscedasticGaussian | HeteroscedasticStudentT | None = None) -> MLP:
    """``mlp`` (whose last width is the number of targets) widened to the likelihood's outputs.

    A ``13-50-1`` mean network becomes ``13-50-2``: per target a mean and a raw
    scale output (``softplus(raw)`` plus the likelihood's minimum: a std for
    :class:`HeteroscedasticGaussian`, a t scale for :class:`HeteroscedasticStudentT`).
    """
    likelihood = HeteroscedasticGaussian() if likelihood is None else likelihood
    return mlp._replace(widths=mlp.widths[:-1] + (likelihood.output_dim(mlp.widths[-1]),))


def without_variance_head(bnn: BNN) -> BNN:
    """The mean network of a mean-and-scale ``bnn`` (the inverse of :func:`with_variance_head`): the same hidden
    layers, one output per target, the homoscedastic Gaussian likelihood at its default precision and the prior
    without the scale head's precision group (its MAP fit is where a scale head's starts begin)."""
    t = bnn.mlp.widths[-1] // 2
    mlp = bnn.mlp._replace(widths=bnn.mlp.widths[:-1] + (t,))
    return BNN(mlp=mlp, prior=replace(bnn.prior, scale_outputs=0), likelihood=Gaussian(), dtype=bnn.dtype)


def architecture(spec: Any, features: Sequence[str], output_dim: int, activation: str | None) -> MLP:
    """The MLP of ``spec`` (``"auto"``/``None``, ``"5-50-50-1"`` or widths) for ``features`` and ``output_dim`` outputs.

    Raises:
        InputError: an unreadable architecture, or one whose input or output width does not fit.
    """
    num_features = len(features)
    if spec is None or spec == "auto":
        spec = (num_features, *DEFAULT_HIDDEN, output_dim)
    try:
        mlp = parse_architecture(spec, "tanh" if activation is None else activation)
    except ValueError as err:
        raise InputError(str(err)) from None
    if mlp.widths[0] != num_features:
        raise InputError(
            f"architecture {mlp.describe()} has {mlp.widths[0]} inputs but there are {num_features} features "
            f"({', '.join(features)})"
        )
    if mlp.widths[-1] != output_dim:
        raise InputError(f"architecture {mlp.describe()} must end in {output_dim} output(s)")
    return mlp


def build_bnn(
    likelihood: Any, spec: Any, features: Sequence[str], activation: str | None, dtype: str, ard: bool = False
) -> BNN:
    """The BNN of a fit: ``likelihood``, the architecture ``spec`` for ``features``, the unit Gaussian prior
    (with ``ard``, a precision group per input for the first layer: ``GaussianPrior.input_groups``).

    A heteroscedastic likelihood (an ensemble's, ``hetero_student_t``) takes ``spec`` as the mean
    network's (ending in one output) and adds the scale outputs, whose kernel and bias entries are a
    precision group of their own (:class:`~sigmabnn.model.priors.GaussianPrior`, ``scale_outputs``).
    """
    scale_outputs = 0
    if isinstance(likelihood, HeteroscedasticGaussian | HeteroscedasticStudentT):
        mlp = with_variance_head(architecture(spec, features, 1, activation), likelihood)
        scale_outputs = mlp.widths[-1] // 2  # the scale head: a precision group of its own
    else:
        mlp = architecture(spec, features, likelihood.output_dim(1), activation)
    prior = GaussianPrior(PRIOR_PRECISION, PRIOR_PRECISION, scale_outputs=scale_outputs, input_groups=bool(ard))
    return BNN(mlp=mlp, prior=prior, likelihood=likelihood, dtype=dtype)
