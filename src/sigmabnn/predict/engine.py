"""The device engine: one jitted function per chunk of points, run chunk by chunk in threads.

Every prediction and every score goes through :func:`run`: the points are processed in chunks
whose size is a power of two (the last chunk is padded), at most the memory budget's and
``chunk_size``, and for a small call the next power of two of ``n / PREDICT_THREADS`` (so ten
points are two chunks of 8, not one padded to a large chunk). A function is compiled once per
:class:`Request` and chunk size and reused across calls and models of the same shape; memory per
chunk is bounded (about ``CHUNK_ELEMENT_BUDGET`` floats for the largest intermediate:
``G x chunk x width`` or ``S x chunk x t``).

Inside a chunk the networks run in groups (:func:`~sigmabnn.predict.device.per_draw`); the
moments, scores and noise samples follow in the same jitted function, whose results come back to
the host packed in one array (one transfer, :class:`PackedChunkFunction`); the samples are
handed to the caller's host function (the quantiles are sorted on the host). Chunks run side by
side in ``PREDICT_THREADS`` threads (one XLA computation keeps about one core busy); with one
thread, the device computes the next chunk while the host works on this one. Without samples
(``Request.num_samples == 0``) no noise is drawn: the network pass and the moments are all the
work.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn import compiler
from sigmabnn.errors import InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.model.likelihoods import noise_df
from sigmabnn.model.posterior import BNN
from sigmabnn.predict.device import device_model, log_offset, network_groups, per_draw, streamed_moments, to_log_space
from sigmabnn.predict.mixture import (
    component_cdf,
    component_log_density,
    component_scale,
    lognormal_moments,
    mixture_cdf,
    mixture_log_density,
    moments,
)
from sigmabnn.predict.sampling import standard_noise

Array = jax.Array

__all__ = [
    "CHUNK_ELEMENT_BUDGET",
    "PREDICT_THREADS",
    "PackedChunkFunction",
    "Points",
    "Request",
    "chunk_function",
    "chunk_points",
    "effective_chunk",
    "packed_chunk_function",
    "run",
]

#: Bound on the largest per-chunk intermediate, in array elements (for 1,000 5-20-20-1
#: networks: chunks of 256 points, bounded by the ``[T, chunk, t]`` per-network moments).
CHUNK_ELEMENT_BUDGET = 2**21
#: Chunks run side by side in this many threads (one XLA computation per chunk keeps about one
#: core busy on a CPU; the host's sort for the intervals runs in the same threads). The usable
#: cores, at most 4.
PREDICT_THREADS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))


class Request(NamedTuple):
    """What a chunk function computes per point (static: one compiled function per request and chunk size).

    Attributes:
        num_samples: predictive samples per point, log space (``"samples"`` ``[c, t, S]``);
            0 draws no noise at all.
        log10: the target is ``log10 y``: the moments come in the original space too.
        moments: the mixture moments, ``{"log": {...}, "orig": {...}}`` (``mean``,
            ``epistemic_var``, ``aleatoric_var`` ``[c, t]``; :func:`~sigmabnn.predict.mixture.moments`).
        covariance: with the moments, ``covariance`` ``[c, t, t]`` across outputs.
        density: ``"lpd"`` ``[c]``, the mixture's log predictive density of the log-space
            target (nats).
        pit: ``"pit"`` ``[c, t]``, the mixture's exact CDF at the target.
        per_network: ``"per_network"``, a pair: ``[c, T]`` each network's log density of the
            log-space target and ``[c, T, t]`` each network's CDF at the target.
        components: ``"components"``, a pair ``[c, T, t]``: each network's log-space mean and
            aleatoric variance (the mixture's components, what acquisition scores are made of).
        stream_moments: when only moments are asked for, accumulate them inside the network scan
            (:func:`~sigmabnn.predict.device.streamed_moments`); ``False`` materialises every
            network's values first (the two routes are compared by tests and benchmarks).

    The scores (``density``, ``pit``, ``per_network``) are computed from the networks' components
    in the space the chunk holds them: in log space (targets ``y_log``) when it computes moments
    or samples, which need them there, else in model space (targets ``y_model``), the log
    densities minus the log Jacobian of the affine model -> log space map. The two agree up to
    rounding (the CDF is invariant under the map).
    """

    num_samples: int = 0
    log10: bool = False
    moments: bool = True
    covariance: bool = False
    density: bool = False
    pit: bool = False
    per_network: bool = False
    components: bool = False
    stream_moments: bool = True


class Points(NamedTuple):
    """The checked inputs of one call, ``n`` points.

    Attributes:
        z: ``[n, p]`` standardised inputs, model dtype.
        noise_std: ``[n, t]`` known-noise std in model units, model dtype, or ``None``.
        y_log, y_model: ``[n, t]`` float64 targets in log space and in model space (scores: see
            :class:`Request` for which is used), or ``None`` without scores.
    """

    z: np.ndarray
    noise_std: np.ndarray | None = None
    y_log: np.ndarray | None = None
    y_model: np.ndarray | None = None


# --------------------------------------------------------------------------- chunking


def _next_pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def effective_chunk(n: int, chunk_size: int, per_point: int) -> int:
    """Points per chunk for ``n`` points with ``per_point`` elements of the largest intermediate each."""
    if chunk_size < 1:
        raise InputError(f"chunk_size must be >= 1, got {chunk_size}")
    cap = max(1, CHUNK_ELEMENT_BUDGET // max(1, per_point))
    # A small call is split over the threads, each chunk padded only to the next power of two
    # (a few compiled shapes, 1 .. cap, instead of padding every small call to one large chunk).
    c = min(int(chunk_size), cap, _next_pow2(-(-n // PREDICT_THREADS)))
    return 1 << (c.bit_length() - 1)  # round down to a power of two


def chunk_points(fitted: FittedModel, n: int, chunk_size: int, num_samples: int) -> int:
    """Points per chunk of a call on ``n`` points drawing ``num_samples`` noise samples per point
    (0: none), within ``CHUNK_ELEMENT_BUDGET``: the largest network-side intermediate is a group's
    hidden units (``G x width``) or the per-network moments and their transforms (``~6 T t``)."""
    t_nets = fitted.num_networks
    group = network_groups(t_nets)[1]
    per_point = max(group * max(fitted.bnn.mlp.widths), 6 * t_nets * fitted.target_dim)
    return effective_chunk(n, chunk_size, max(per_point, 2 * num_samples * fitted.target_dim))


def _map_chunks(n: int, c: int, launch: Callable, finish: Callable) -> Iterator:
    """``finish(*launch(start, stop))`` for every chunk of ``n`` points in chunks of ``c``, yielded in order.

    ``launch`` dispatches a chunk's jitted computation (asynchronous), ``finish`` waits for it and
    does the host's part. Chunks run side by side in ``PREDICT_THREADS`` threads; with one thread
    the next chunk is launched before this one is finished, so the device computes while the host
    works. No value depends on the threads: a point's noise depends on its index alone.
    """
    bounds = [(start, min(start + c, n)) for start in range(0, n, c)]
    threads = min(PREDICT_THREADS, len(bounds))
    if threads > 1:
        # The first chunk is dispatched here (asynchronously), so that a shape not compiled yet is
        # compiled before the threads start rather than by threads reaching it together.
        first = launch(*bounds[0])
        with ThreadPoolExecutor(threads) as pool:
            rest = pool.map(lambda b: finish(*launch(*b)), bounds[1:])
            yield finish(*first)
            yield from rest
        return
    pending = None
    for start, stop in bounds:
        launched = launch(start, stop)
        if pending is not None:
            yield finish(*pending)
        pending = launched
    yield finish(*pending)


def _pad(a: np.ndarray | None, c: int) -> np.ndarray | None:
    if a is None or a.shape[0] == c:
        return a
    pad = np.zeros((c - a.shape[0],) + a.shape[1:], a.dtype)
    return np.concatenate([a, pad], axis=0)


# --------------------------------------------------------------------------- the chunk function


def _chunk_body(bnn: BNN, num_networks: int, request: Request) -> Callable:
    """``(model, z, noise_std, key, start, y_log, y_model) -> dict`` for one chunk of points (to be jitted).

    ``model`` is the :class:`~sigmabnn.predict.device.DeviceModel`; ``z`` ``[c, p]`` the
    standardised inputs of the points ``start .. start + c - 1`` (their indices pick the noise
    keys); ``y_log``, ``y_model`` ``[c, t]`` the targets when ``request`` scores them. Returns the
    outputs :class:`Request` lists; the samples are points-major (``[c, t, S]``), so that the host
    sorts contiguous rows.
    """
    df = noise_df(bnn.likelihood)
    scored = request.density or request.pit or request.per_network
    stream = (
        request.stream_moments
        and request.num_samples == 0
        and not scored
        and not request.covariance
        and not request.components
    )
    log_space = request.moments or request.num_samples > 0 or request.components

    def scores(mu: Array, var: Array, y: Array, jacobian: Array | None) -> dict[str, Array]:
        """The scores of ``y`` under components ``mu``, ``var``; ``jacobian``: the log Jacobian to
        take off the log densities (model-space components), or ``None`` (log-space ones)."""
        out = {}
        if request.density:
            lpd = mixture_log_density(mu, var, y, df)
            out["lpd"] = lpd if jacobian is None else lpd - jacobian
        if request.pit:
            out["pit"] = mixture_cdf(mu, component_scale(var, df), y, df)
        if request.per_network:
            scale = component_scale(var, df)
            logp = component_log_density(mu, var, y, df)
            logp = logp if jacobian is None else logp - jacobian
            out["per_network"] = (logp.T, jnp.moveaxis(component_cdf(mu, scale, y, df), 0, 1))
        return out

    def samples(key: Array, start: Array, mu: Array, var: Array) -> Array:
        s, t_nets = request.num_samples, mu.shape[0]
        index = start + jnp.arange(mu.shape[1])
        which = jnp.arange(s) % t_nets
        eps = standard_noise(key, index, (s, mu.shape[2]), df, s % (2 * t_nets) == 0)
        draws = mu[which] + jnp.sqrt(var[which]) * jnp.swapaxes(eps, 0, 1)  # [S, c, t]
        return jnp.transpose(draws, (1, 2, 0))

    def run(model, z, noise_std, key, start, y_log, y_model):
        if stream and z.shape[0] > 1:
            return streamed_moments(bnn, model, z, noise_std, num_networks, request.log10)
        mu, var = per_draw(bnn, model, z, noise_std, num_networks)
        if not log_space:
            return scores(mu, var, y_model, jnp.sum(jnp.log(model.y_scale)))
        mu, var = to_log_space(model, log_offset(model, z), mu, var)
        out = {"log": moments(mu, var, request.covariance)} if request.moments else {}
        out.update(scores(mu, var, y_log, None))
        if request.components:
            out["components"] = (jnp.swapaxes(mu, 0, 1), jnp.swapaxes(var, 0, 1))
        if request.moments and request.log10:
            out["orig"] = lognormal_moments(mu, var, request.covariance)
        if request.num_samples > 0:
            out["samples"] = samples(key, start, mu, var)
        return out

    return run


@functools.lru_cache(maxsize=64)
def chunk_function(bnn: BNN, num_networks: int, request: Request) -> Callable:
    """The jitted chunk function of :func:`_chunk_body` returning a plain dict (cached per
    configuration); :func:`run` uses its packed form, :func:`packed_chunk_function`."""
    return compiler.jit_prediction(_chunk_body(bnn, num_networks, request))


class PackedChunkFunction:
    """A chunk function with its results packed into one ``[c, K]`` float64 array (and the samples).

    ``jitted(model, z, noise_std, key, start, y_log, y_model) -> (columns, samples or None)``; on
    the host, :meth:`unpack` ``(columns)`` gives the same dict as :func:`chunk_function` without
    ``"samples"``, as views of the one array. One device-to-host transfer per chunk instead of one
    per result (a log target's moments are six arrays), which matters on the one-point (latency)
    path. The layout (tree structure and each result's trailing shape) does not depend on the
    chunk size; it is recorded when the function is traced.
    """

    def __init__(self, run: Callable) -> None:
        self._run = run
        self._layout: tuple[Any, list[tuple[int, ...]]] | None = None
        self.jitted = compiler.jit_prediction(self._packed)

    def _packed(self, model, z, noise_std, key, start, y_log, y_model):
        out = self._run(model, z, noise_std, key, start, y_log, y_model)
        samples = out.pop("samples", None)
        leaves, treedef = jax.tree.flatten(out)
        c = z.shape[0]
        self._layout = (treedef, [tuple(leaf.shape[1:]) for leaf in leaves])  # static: trace-time metadata
        columns = jnp.concatenate([leaf.astype(jnp.float64).reshape(c, -1) for leaf in leaves], axis=1)
        return columns, samples

    def to_host(self, result: tuple) -> tuple[dict, np.ndarray | None]:
        """``(results, samples)`` of a chunk on the host from what :attr:`jitted` returned."""
        columns, samples = result
        return self.unpack(np.asarray(columns)), None if samples is None else np.asarray(samples)

    def unpack(self, columns: np.ndarray) -> dict:
        """The results of a chunk from its ``[c, K]`` columns (NumPy views)."""
        treedef, shapes = self._layout
        parts, k = [], 0
        for shape in shapes:
            size = math.prod(shape)
            parts.append(columns[:, k : k + size].reshape(columns.shape[:1] + shape))
            k += size
        return jax.tree.unflatten(treedef, parts)


@functools.lru_cache(maxsize=64)
def packed_chunk_function(bnn: BNN, num_networks: int, request: Request) -> PackedChunkFunction:
    """The :class:`PackedChunkFunction` of ``request`` (cached per configuration)."""
    return PackedChunkFunction(_chunk_body(bnn, num_networks, request))


class _PlainChunkFunction(NamedTuple):
    """:func:`chunk_function` with the interface of :class:`PackedChunkFunction`: its results come
    to the host one array each (scores without moments are one or two arrays)."""

    jitted: Callable

    def to_host(self, result: dict) -> tuple[dict, np.ndarray | None]:
        samples = result.pop("samples", None)
        return jax.tree.map(np.asarray, result), None if samples is None else np.asarray(samples)


def _chunk_runner(bnn: BNN, num_networks: int, request: Request) -> PackedChunkFunction | _PlainChunkFunction:
    """The chunk function :func:`run` calls: packed when the request has moments (up to seven arrays
    per chunk, which the packing brings back in one transfer), else plain."""
    if request.moments:
        return packed_chunk_function(bnn, num_networks, request)
    return _PlainChunkFunction(chunk_function(bnn, num_networks, request))


# --------------------------------------------------------------------------- running a call


def run(
    fitted: FittedModel,
    points: Points,
    request: Request,
    *,
    key: Array,
    chunk_size: int,
    host: Callable[[np.ndarray], dict[str, np.ndarray]] | None = None,
) -> dict:
    """The outputs of ``request`` at every point: a dict (nested as :class:`Request` says) of NumPy
    float64 arrays with the points on the leading axis, in order.

    ``host(samples)``, given a chunk's samples ``[m, t, S]`` (``request.num_samples > 0``), returns
    more per-point arrays (leading axis ``m``) to keep, e.g. the interval quantiles; it runs in the
    chunk's thread and the samples themselves are not kept. ``key`` seeds the noise
    (``fold_in(key, i)`` for point ``i``).
    """
    n = points.z.shape[0]
    model = device_model(fitted)
    if n == 0:  # nothing to compute: empty arrays of the traced shapes
        z, noise_std, y_log, y_model = (_pad(a, 1) for a in points)
        shapes = jax.eval_shape(
            chunk_function(fitted.bnn, fitted.num_networks, request), model, z, noise_std, key, 0, y_log, y_model
        )
        return jax.tree.map(lambda a: np.zeros((0,) + a.shape[1:]), shapes)
    fn = _chunk_runner(fitted.bnn, fitted.num_networks, request)
    c = chunk_points(fitted, n, chunk_size, request.num_samples)

    def launch(start: int, stop: int) -> tuple[int, Any]:
        # NumPy chunks go straight to the jitted function (its argument transfer is cheaper
        # than a separate jnp.asarray per array).
        z, noise_std, y_log, y_model = (_pad(None if a is None else a[start:stop], c) for a in points)
        return stop - start, fn.jitted(model, z, noise_std, key, start, y_log, y_model)

    def finish(m: int, result: Any) -> dict:
        out, samples = fn.to_host(result)
        out = jax.tree.map(lambda a: a[:m], out)
        if samples is not None and host is not None:
            out.update(host(samples[:m]))
        return out

    parts = list(_map_chunks(n, c, launch, finish))
    # one chunk (every small call): its arrays copied, not views of the chunk's buffer
    return jax.tree.map(lambda *a: np.concatenate(a, axis=0), *parts)
