"""The predictive distribution of a fitted BNN: mean, epistemic and aleatoric spread, intervals, scores.

The predictive distribution is the equally weighted mixture over the sampled networks of each
network's Gaussian (or Student-t) predictive. The package, from the mathematics to the public layer:

- :mod:`~sigmabnn.predict.mixture`: the mixture's moments (log space; exact log-normal moments in
  the original space of a log target), log densities and CDFs; the definitions.
- :mod:`~sigmabnn.predict.sampling`: predictive noise samples (antithetic pairs, Student-t pool),
  the interval quantiles read off them, the default sample counts, recalibrated levels.
- :mod:`~sigmabnn.predict.device`: a model's networks on the device (cached per model object) and
  the network pass over a chunk of points, networks in groups.
- :mod:`~sigmabnn.predict.engine`: one jitted function per chunk and :class:`~sigmabnn.predict.engine.Request`
  (what it computes), chunk sizing, threads; every call below runs through
  :func:`~sigmabnn.predict.engine.run`.
- :mod:`~sigmabnn.predict.inputs`: features, targets and known noise, checked once.
- :mod:`~sigmabnn.predict.prediction`: :func:`predict` and :class:`Prediction`.
- :mod:`~sigmabnn.predict.classes`: a classifier's prediction (:class:`ClassPrediction`: class
  probabilities, predicted class, total/aleatoric/epistemic entropies), what :func:`predict`
  returns for the categorical likelihood, and every network's probabilities.
- :mod:`~sigmabnn.predict.scoring`: :func:`score` (prediction and per-point scores of labelled
  data, what :mod:`sigmabnn.evaluate` uses), :func:`log_predictive_density`,
  :func:`predictive_cdf` (the exact PIT) and :func:`per_draw_predictive`.
"""

from __future__ import annotations

from sigmabnn.predict.classes import ClassPrediction, network_probabilities, predict_classes
from sigmabnn.predict.inputs import feature_matrix_for
from sigmabnn.predict.mixture import component_cdf, mixture_cdf
from sigmabnn.predict.prediction import DEFAULT_LEVELS, Prediction, predict
from sigmabnn.predict.sampling import DEFAULT_SEED
from sigmabnn.predict.scoring import Scores, log_predictive_density, per_draw_predictive, predictive_cdf, score

__all__ = [
    "ClassPrediction",
    "network_probabilities",
    "predict_classes",
    "DEFAULT_LEVELS",
    "DEFAULT_SEED",
    "Prediction",
    "Scores",
    "component_cdf",
    "feature_matrix_for",
    "log_predictive_density",
    "mixture_cdf",
    "per_draw_predictive",
    "predict",
    "predictive_cdf",
    "score",
]
