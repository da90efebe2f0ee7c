"""The predictive distribution of a classifier: class probabilities and the split of their uncertainty.

For ``T`` networks with class probabilities ``p_t(x) = softmax(f_t(x))``, at every point:

- ``probabilities = mean_t p_t`` ``[n, K]``: the posterior predictive, averaged over the networks;
- ``predicted``: its most probable class (the first of ties);
- ``entropy = H[mean_t p_t]`` (total uncertainty), ``H[p] = -sum_k p_k log p_k``, in nats;
- ``expected_entropy = mean_t H[p_t]`` (aleatoric: what every network is unsure of);
- ``mutual_information = entropy - expected_entropy`` (epistemic: the networks' disagreement; the
  BALD score of Houlsby et al. 2011 and Gal, Islam & Ghahramani 2017), clipped at 0 against rounding.

With a fitted temperature ``tau != 1`` (:mod:`sigmabnn.temperature`; ``calibrated=False`` ignores it):

- the ``"pooled"`` map (what a fit stores): ``probabilities = softmax(log(mean_t p_t) / tau)``, ``entropy``
  its entropy. The temperature corrects the predictive as a whole, not any one network, so there are no
  tempered networks to split it with: the tempered total is split in the untempered posterior's proportions,
  ``mutual_information = entropy * s`` and ``expected_entropy = entropy * (1 - s)`` with ``s`` the untempered
  mutual information over the untempered entropy (0 where that is 0). The parts stay non-negative and sum to
  the total. The acquisition scores (:mod:`sigmabnn.acquisition`) read the untempered networks, as does
  ``calibrated=False``.
- the ``"networks"`` map (model files written before the pooled map): every ``p_t`` is
  ``softmax(f_t / tau)`` and the definitions above hold as written.

The networks run as in the regression path: a model's networks on the device in groups
(:func:`~sigmabnn.predict.device.device_model`), a ``lax.scan`` over the groups inside one jitted
function per chunk shape, points in chunks. Probabilities and entropies are float64.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn import compiler
from sigmabnn.errors import InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.model.mlp import forward_ensemble
from sigmabnn.model.posterior import BNN
from sigmabnn.predict.device import device_model
from sigmabnn.predict.inputs import domain_columns, feature_matrix_for

Array = jax.Array

__all__ = [
    "CLASS_CHUNK",
    "ClassPrediction",
    "class_probabilities",
    "entropy",
    "network_probabilities",
    "pooled_temperature",
    "predict_classes",
    "tempered_softmax",
]

#: Points per chunk of a classifier's prediction.
CLASS_CHUNK = 4096


class ClassPrediction(NamedTuple):
    """A classifier's prediction at ``n`` points (module docstring for the definitions).

    Attributes:
        labels: the ``K`` class labels; column ``k`` of :attr:`probabilities` is ``labels[k]``.
        probabilities: ``[n, K]`` float64 posterior predictive class probabilities.
        predicted: ``[n]`` object, the most probable class's label.
        predicted_index: ``[n]`` int64, its column.
        entropy: ``[n]`` float64 total predictive entropy (nats).
        expected_entropy: ``[n]`` float64 mean entropy of the networks (aleatoric, nats; under a pooled
            temperature, its share of the tempered entropy: module docstring).
        mutual_information: ``[n]`` float64 their difference (epistemic, BALD, nats; the same).
        num_networks: networks averaged over.
        temperature: the temperature used (1 for none).
        domain_distance: ``[n]`` float64 distance of each point from the training inputs, as for a regression
            (:class:`~sigmabnn.data.domain.Domain`), or ``None`` for a model without a stored domain.
        in_domain: ``[n]`` bool, ``domain_distance`` within the threshold fitted on the training rows: outside,
            the class probabilities (and the BALD score) are extrapolations; ``None`` without a domain.
        temperature_map: where the temperature applied, ``"pooled"`` or ``"networks"`` (module docstring).
    """

    labels: tuple[Any, ...]
    probabilities: np.ndarray
    predicted: np.ndarray
    predicted_index: np.ndarray
    entropy: np.ndarray
    expected_entropy: np.ndarray
    mutual_information: np.ndarray
    num_networks: int
    temperature: float
    domain_distance: np.ndarray | None = None
    in_domain: np.ndarray | None = None
    temperature_map: str = "pooled"

    def columns(self) -> dict[str, np.ndarray]:
        """The per-row columns ``sigmabnn predict`` writes: ``prob_<label>``, the summaries, then ``in_domain``
        and ``domain_distance`` when the prediction has them."""
        out = {f"prob_{label}": self.probabilities[:, k] for k, label in enumerate(self.labels)}
        out |= {
            "predicted": self.predicted,
            "entropy": self.entropy,
            "expected_entropy": self.expected_entropy,
            "mutual_information": self.mutual_information,
        }
        if self.in_domain is not None:
            out |= {"in_domain": self.in_domain, "domain_distance": self.domain_distance}
        return out

    def to_frame(self, index: Any = None) -> Any:
        """:meth:`columns` as a pandas DataFrame (``index``: e.g. the input table's index)."""
        import pandas as pd

        return pd.DataFrame(self.columns(), index=index)


def _log_probs(bnn: BNN, layers: Any, z: Array, inv_temperature: Array) -> Array:
    """``log p_t`` ``[G, c, K]`` float64 of a group of networks at ``z`` ``[c, p]``."""
    f = forward_ensemble(bnn.mlp, layers, z).astype(jnp.float64)
    return jax.nn.log_softmax(f * inv_temperature, axis=-1)


@functools.lru_cache(maxsize=32)
def _moments_fn(bnn: BNN, num_networks: int):
    """Jitted ``(params, z, 1/tau) -> (mean_t p_t [c, K], mean_t H[p_t] [c])`` over groups of networks."""

    def fn(params: Any, z: Array, inv_temperature: Array) -> tuple[Array, Array]:
        k, g = jax.tree.leaves(params)[0].shape[:2]
        index = jnp.arange(k * g).reshape(k, g)

        def group(carry: tuple[Array, Array], xs: tuple[Any, Array]) -> tuple[tuple[Array, Array], None]:
            logp = _log_probs(bnn, xs[0], z, inv_temperature)
            p = jnp.exp(logp)
            h = jnp.maximum(-jnp.sum(jnp.where(p > 0, p * logp, 0.0), axis=-1), 0.0)  # >= 0 against rounding
            w = (xs[1] < num_networks).astype(jnp.float64)  # padding networks weigh nothing
            return (carry[0] + jnp.einsum("g,gck->ck", w, p), carry[1] + w @ h), None

        c = z.shape[0]
        out_dim = bnn.mlp.widths[-1]
        init = (jnp.zeros((c, out_dim), jnp.float64), jnp.zeros((c,), jnp.float64))
        (sp, sh), _ = jax.lax.scan(group, init, (params, index))
        return sp / num_networks, sh / num_networks

    return compiler.jit_prediction(fn)


@functools.lru_cache(maxsize=32)
def _per_network_fn(bnn: BNN, num_networks: int):
    """Jitted ``(params, z, 1/tau) -> p_t`` ``[T, c, K]``."""

    def fn(params: Any, z: Array, inv_temperature: Array) -> Array:
        def group(carry: None, layers: Any) -> tuple[None, Array]:
            return None, jnp.exp(_log_probs(bnn, layers, z, inv_temperature))

        _, p = jax.lax.scan(group, None, params)
        return p.reshape((-1,) + p.shape[2:])[:num_networks]

    return compiler.jit_prediction(fn)


def _prepared(fitted: FittedModel, x_raw: Any, calibrated: bool) -> tuple[np.ndarray, Any, jnp.ndarray]:
    if not fitted.is_classifier or fitted.classes is None:
        raise InputError("class probabilities need a classifier (a model trained with the categorical likelihood)")
    x = feature_matrix_for(fitted, x_raw)
    z = fitted.x_transform.forward(x, dtype=fitted.bnn.dtype)
    per_network = calibrated and fitted.classes.temperature_map == "networks"
    temperature = fitted.classes.temperature if per_network else 1.0
    return z, device_model(fitted).params, jnp.asarray(1.0 / temperature, jnp.float64)


def _chunks(n: int, chunk_size: int) -> list[tuple[int, int]]:
    size = max(1, int(chunk_size))
    return [(i, min(n, i + size)) for i in range(0, n, size)]


def network_probabilities(
    fitted: FittedModel, x_raw: Any, *, chunk_size: int = CLASS_CHUNK, calibrated: bool = True
) -> np.ndarray:
    """Every network's class probabilities ``p_t`` ``[T, n, K]`` float64 (memory ``T n K`` floats).

    What the acquisition scores (:mod:`sigmabnn.acquisition.classification`) take. ``calibrated`` divides
    the logits by the temperature of the ``"networks"`` map; a pooled temperature applies to the networks'
    mean, not to any one of them, so under that map the networks' probabilities are the untempered ones.
    """
    z, params, inv_t = _prepared(fitted, x_raw, calibrated)
    fn = _per_network_fn(fitted.bnn, fitted.num_networks)
    parts = [np.asarray(fn(params, jnp.asarray(z[a:b]), inv_t)) for a, b in _chunks(z.shape[0], chunk_size)]
    k = fitted.bnn.mlp.widths[-1]
    return np.concatenate(parts, axis=1) if parts else np.zeros((fitted.num_networks, 0, k))


def class_probabilities(
    fitted: FittedModel, x_raw: Any, *, chunk_size: int = CLASS_CHUNK, calibrated: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``(probabilities [n, K], expected_entropy [n])`` float64 as :func:`predict_classes` defines them."""
    p, _, exp_h, _ = _summaries(fitted, _prepared(fitted, x_raw, calibrated), chunk_size, calibrated)
    return p, exp_h


def _summaries(fitted: FittedModel, prepared: tuple, chunk_size: int, calibrated: bool) -> tuple[Any, Any, Any, Any]:
    """``(probabilities, entropy, expected_entropy, mutual_information)`` (module docstring) from what
    :func:`_prepared` gives."""
    p, exp_h = _moments(fitted, *prepared, chunk_size)
    h = entropy(p)
    mi = np.maximum(h - exp_h, 0.0)
    classes = fitted.classes
    if calibrated and classes.temperature_map == "pooled" and classes.temperature != 1.0:
        share = np.divide(mi, h, out=np.zeros_like(h), where=h > 0)  # the epistemic share, untempered
        p = pooled_temperature(p, classes.temperature)
        h = entropy(p)
        exp_h, mi = h * (1.0 - share), h * share
    return p, h, exp_h, mi


def pooled_temperature(p: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(log p / T)`` over the last axis of probabilities ``p`` ``[..., K]`` (float64; a zero stays 0)."""
    with np.errstate(divide="ignore"):
        return tempered_softmax(np.log(np.asarray(p, np.float64)), temperature)


def tempered_softmax(log_p: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(log_p / T)`` over the last axis of log-probabilities (or logits) ``log_p`` ``[..., K]``."""
    z = log_p / temperature
    q = np.exp(z - z.max(axis=-1, keepdims=True))
    return q / q.sum(axis=-1, keepdims=True)


def _moments(fitted: FittedModel, z: np.ndarray, params: Any, inv_t: Array, chunk_size: int) -> tuple[Any, Any]:
    """:func:`class_probabilities` at standardised inputs ``z`` ``[n, p]`` (what :func:`_prepared` gives)."""
    fn = _moments_fn(fitted.bnn, fitted.num_networks)
    k = fitted.bnn.mlp.widths[-1]
    probs, exp_h = [np.zeros((0, k))], [np.zeros(0)]
    for a, b in _chunks(z.shape[0], chunk_size):
        p, h = fn(params, jnp.asarray(z[a:b]), inv_t)
        probs.append(np.asarray(p))
        exp_h.append(np.asarray(h))
    return np.concatenate(probs), np.concatenate(exp_h)


def entropy(p: np.ndarray) -> np.ndarray:
    """``-sum_k p_k log p_k`` over the last axis (nats; ``0 log 0 = 0``)."""
    p = np.asarray(p, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.sum(np.where(p > 0, p * np.log(p), 0.0), axis=-1)


def predict_classes(
    fitted: FittedModel, x_raw: Any, *, chunk_size: int = CLASS_CHUNK, calibrated: bool = True
) -> ClassPrediction:
    """The classifier's prediction at raw inputs ``x_raw`` (``[n, p]`` or a DataFrame; module docstring).

    ``calibrated=False`` ignores the model's fitted temperature (uses ``tau = 1``).

    Raises:
        InputError: a regression model; DataError: bad features.
    """
    prepared = _prepared(fitted, x_raw, calibrated)
    p, h, exp_h, mi = _summaries(fitted, prepared, chunk_size, calibrated)
    index = np.argmax(p, axis=1) if p.shape[0] else np.zeros(0, np.int64)
    classes = fitted.classes
    return ClassPrediction(
        labels=classes.labels,
        probabilities=p,
        predicted=classes.decode(index),
        predicted_index=index.astype(np.int64),
        entropy=h,
        expected_entropy=exp_h,
        mutual_information=mi,
        num_networks=int(fitted.num_networks),
        temperature=float(classes.temperature if calibrated else 1.0),
        **domain_columns(fitted, prepared[0]),
        temperature_map=classes.temperature_map,
    )
