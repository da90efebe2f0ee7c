"""MAP pretraining: Adam on the negative log-posterior, several starts at once.

Samplers mix far better when their chains start near a mode than from a
random initialisation, so every chain is started from its own maximum a
posteriori (MAP) estimate, found by minimising

    ``L(theta) = -log p(theta | h) - (n / m) log p(y_batch | f(x_batch; theta), h)``

with Optax's Adam (Kingma & Ba 2015) at fixed hyperparameters ``h`` (at a
constant step size, or decayed along a cosine to ``final_learning_rate`` over
``num_steps``, Loshchilov & Hutter 2017, which settles into a sharp minimum
that a constant step size only circles): the full
negative log-posterior (minus eq. 4.24's potential energy) when the batch is
the whole data set (``m = n``), an unbiased minibatch estimate of it otherwise.

Starts run in parallel (``jax.vmap`` over a leading start axis, one start per
chain); the step loop is a ``lax.scan`` over chunks of ``eval_every`` steps, and
after each chunk a monitored loss decides early stopping: the validation
negative log-likelihood per point when validation data are given, otherwise
the full training objective per point. Each start keeps its best parameters
(lowest monitored loss), stops after ``patience`` steps without improvement,
and the loop ends when every start has stopped or ``num_steps`` is reached.

Optionally (``lbfgs_steps > 0``, full batch only) each start's best Adam
point is then polished by L-BFGS (Liu & Nocedal 1989; Optax's ``lbfgs`` with
its zoom line search) on the full objective: Adam finds the basin, the
quasi-Newton steps reach its bottom, which first-order steps approach only
slowly where the objective is ill-conditioned (data with tiny noise, e.g.
the UCI naval set, where 1,000 L-BFGS iterations after 4,000 Adam steps fit
more precisely than 40,000 Adam steps). The polished point is kept only when
its log-posterior is finite and its monitored loss is no higher than Adam's.
With ``lbfgs_patience`` the polish is early-stopped like Adam: the monitored
loss is checked every ``eval_every`` iterations, the best point so far kept,
and a start stops after ``lbfgs_patience`` iterations without improvement.

A start whose log-posterior is non-finite (at its initial point, or at the
end of its optimisation) is restarted from a fresh random draw, at most
``max_retries`` times; then :class:`MAPError` is raised.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from sigmabnn import compiler, interrupts
from sigmabnn.compiler import BoundFunction
from sigmabnn.model.mlp import flatten, init_params, num_params
from sigmabnn.model.posterior import BNN, Data, Hyperparameters

Array = jax.Array

__all__ = [
    "MAPConfig", "MAPError", "MAPInfo", "cast_data", "draw_starts", "learning_rate_schedule", "merge_map_infos",
    "pretrain_map",
]  # fmt: skip

_INITS = ("glorot", "prior")


class MAPError(RuntimeError):
    """MAP pretraining could not produce a start with a finite log-posterior."""


class MAPConfig(NamedTuple):
    """Settings of MAP pretraining.

    Attributes:
        learning_rate: Adam step size (units of the parameters per step).
        num_steps: maximum number of optimiser steps.
        num_epochs: if set, overrides ``num_steps`` with
            ``num_epochs * (n // batch_size)`` (one step per epoch when full batch).
        batch_size: minibatch size ``m``; ``None`` (or ``>= n``) is full batch.
            Minibatch log-likelihoods are scaled by ``n / m``.
        patience: stop a start after this many steps without improvement of
            the monitored loss (checked every ``eval_every`` steps); ``None``
            disables early stopping (the best parameters are still kept).
        eval_every: steps per ``lax.scan`` chunk, i.e. between checks of the
            monitored loss.
        init: initial parameters: ``"glorot"`` (Glorot-normal kernels, zero
            biases) or ``"prior"`` (a draw from the BNN's prior at the given
            hyperparameters). Restarts draw afresh from the same distribution.
        max_retries: restarts allowed per start when its log-posterior is
            non-finite, before :class:`MAPError` is raised.
        final_learning_rate: if set, the step size decays from ``learning_rate``
            at step 0 to this value at step ``num_steps`` along a half cosine
            (``optax.cosine_decay_schedule``); ``None`` keeps it constant.
            Early stopping still applies, so a start may stop before the end
            of the schedule.
        lbfgs_steps: L-BFGS iterations polishing each start's best Adam point
            on the full-batch objective (0: none). Each iteration costs one
            gradient plus its line search's extra ones. Full batch only.
        lbfgs_memory: L-BFGS history length (pairs of steps and gradient changes).
        lbfgs_patience: ``None``: all ``lbfgs_steps`` iterations run and the end point replaces the
            Adam point when its monitored loss is not higher. Else the monitored loss is checked every
            ``eval_every`` iterations, the point with the lowest is kept, and a start's polish stops
            after this many iterations without a lower one: L-BFGS on the training objective
            overfits where Adam's early stopping found the validation loss's minimum, and there it
            stops within ``lbfgs_patience + eval_every`` iterations.
    """

    learning_rate: float = 1e-2
    num_steps: int = 2000
    num_epochs: int | None = None
    batch_size: int | None = None
    patience: int | None = 200
    eval_every: int = 50
    init: str = "glorot"
    max_retries: int = 5
    final_learning_rate: float | None = None
    lbfgs_steps: int = 0
    lbfgs_memory: int = 10
    lbfgs_patience: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Every field, JSON-able (what a checkpoint records; :meth:`from_json` reads it back)."""
        return self._asdict()

    @classmethod
    def from_json(cls, fields: Mapping[str, Any], base: MAPConfig | None = None) -> MAPConfig:
        """``base`` (default ``MAPConfig()``) with the ``fields`` given replaced.

        Raises:
            ValueError: a field :class:`MAPConfig` does not have (one line naming it).
        """
        unknown = sorted(set(fields) - set(cls._fields))
        if unknown:
            raise ValueError(f"unknown MAP option {unknown[0]!r}; valid: {', '.join(cls._fields)}")
        return (cls() if base is None else base)._replace(**fields)

    def settings(self) -> dict[str, Any]:
        """The fields as flat ``map_<field>`` settings (the model file's record of the MAP starts)."""
        return {f"map_{k}": v for k, v in self._asdict().items()}


class MAPInfo(NamedTuple):
    """What happened during MAP pretraining (host NumPy arrays).

    Attributes:
        loss_history: ``[num_starts, num_steps_run]`` training objective L at
            every step (minibatch estimate when minibatching), in nats; the
            successful attempt of each start; NaN-padded when starts ran for
            different numbers of steps.
        monitor_history: ``[num_starts, num_checks]`` monitored loss (nats per
            point) at step 0 and after every chunk until the start stopped (NaN after).
        best_step: ``[num_starts]`` step at which the kept parameters were reached.
        best_loss: ``[num_starts]`` monitored loss of the kept parameters (nats per point).
        val_loss: ``[num_starts]`` validation negative log-likelihood per point
            of the kept parameters, or ``None`` without validation data.
        num_steps_run: ``[num_starts]`` steps each start ran before it stopped, in the
            successful attempt (``loss_history`` is NaN after that).
        num_retries: ``[num_starts]`` restarts each start needed.
        num_grad_evals: gradient evaluations computed, all starts and attempts
            (stopped starts keep being evaluated until every start in their batch has stopped),
            L-BFGS iterations and line-search steps included.
        polish_loss_history: ``[num_starts, iterations run]`` training objective L (nats) at every
            L-BFGS iteration (``lbfgs_steps`` of them without ``lbfgs_patience``; NaN after a start's
            polish stopped), or ``None`` without polishing.
        polished: ``[num_starts]`` whether the L-BFGS point replaced the Adam point, or ``None``.
        rounds: ``[r, 2]`` int64, for the first round of starts and each round of restarts: the
            steps the vmapped Adam loop ran and the starts it ran (it computed their product in
            gradients), so the pieces of a run computed apart add up to the run's
            ``num_grad_evals`` (:func:`merge_map_infos`); ``None`` where unknown.
    """

    loss_history: np.ndarray
    monitor_history: np.ndarray
    best_step: np.ndarray
    best_loss: np.ndarray
    val_loss: np.ndarray | None
    num_steps_run: np.ndarray
    num_retries: np.ndarray
    num_grad_evals: int
    polish_loss_history: np.ndarray | None = None
    polished: np.ndarray | None = None
    rounds: np.ndarray | None = None


class _Track(NamedTuple):
    """Per-start early-stopping bookkeeping (leaves carry the start axis when vmapped)."""

    best_position: Array
    best_loss: Array
    best_step: Array
    since: Array  # steps since the last improvement
    stopped: Array


def cast_data(bnn: BNN, data: Data) -> Data:
    """``data`` with floating arrays cast to the BNN's dtype (integer labels are left alone)."""

    def cast(a):
        if a is None:
            return None
        a = jnp.asarray(a)
        return a.astype(bnn.jdtype) if jnp.issubdtype(a.dtype, jnp.floating) else a

    return Data(cast(data.x), cast(data.y), cast(data.noise_std))


def learning_rate_schedule(config: MAPConfig, num_steps: int) -> float | optax.Schedule:
    """Adam's step size: ``config.learning_rate``, or its cosine decay to ``config.final_learning_rate``.

    Args:
        config: the MAP settings.
        num_steps: length of the schedule (the number of optimiser steps it spans).

    Returns:
        A float (constant step size) or an Optax schedule ``step -> step size``.
    """
    if config.final_learning_rate is None:
        return config.learning_rate
    return optax.cosine_decay_schedule(
        config.learning_rate, decay_steps=max(num_steps, 1), alpha=config.final_learning_rate / config.learning_rate
    )


def draw_starts(rng_key: Array, bnn: BNN, hyper: Hyperparameters, num: int, init: str = "glorot") -> Array:
    """``num`` random flat parameter vectors ``[num, num_params]`` (``init``: ``"glorot"`` or ``"prior"``)."""
    if init not in _INITS:
        raise ValueError(f"unknown MAP init {init!r}; choose from {', '.join(_INITS)}")

    def one(key):
        if init == "glorot":
            params = init_params(key, bnn.mlp, bnn.jdtype)
        else:
            params = bnn.prior.sample(key, bnn.mlp, hyper.weight_precision, hyper.bias_precision, bnn.jdtype)
        return flatten(params)

    # jitted: one compilation instead of one per operation of the eager vmap (the same numbers)
    return compiler.jit(jax.vmap(one))(jax.random.split(rng_key, num))


def _take(a: Array, index: np.ndarray) -> Array:
    """Rows ``index`` (increasing int) of ``a``: ``a`` itself when they are all its rows, as in a first round
    where every start is finite, so that round runs no eager gather (each would compile for its shapes)."""
    return a if index.size == a.shape[0] else a[index]


def epoch_permutation(rng_key: Array, step: Array, steps_per_epoch: int, n: int) -> Array:
    """Row order ``[n]`` (int) of the epoch that minibatch step ``step`` belongs to.

    One permutation of all ``n`` rows per epoch, keyed by ``fold_in(rng_key, step // steps_per_epoch)``.
    It is a sort of ``n`` random keys, so training loops draw it once per epoch and carry it
    (:func:`next_minibatch`), instead of once per step.
    """
    return jax.random.permutation(jax.random.fold_in(rng_key, step // steps_per_epoch), n)


def next_minibatch(
    rng_key: Array, perm: Array, step: Array, first_step: Array, steps_per_epoch: int, batch_size: int, n: int
) -> tuple[Array, Array]:
    """``(perm, rows)`` of minibatch step ``step`` inside a ``lax.scan`` that starts at ``first_step``.

    ``perm`` is the carried row order (the scan's initial carry is
    :func:`epoch_permutation` of ``first_step``); it is redrawn at the first step of every
    later epoch. ``rows`` ``[batch_size]`` are the step's slice of it, so each epoch's
    ``steps_per_epoch`` minibatches partition ``steps_per_epoch * batch_size`` of the rows, and
    where a scan starts (mid-epoch or not) does not change them. ``step`` and ``first_step`` must
    not be batched under ``vmap`` (the ``cond`` then stays a branch, not a select of both).
    """
    position = step % steps_per_epoch
    perm = jax.lax.cond(
        (position == 0) & (step != first_step),
        lambda: epoch_permutation(rng_key, step, steps_per_epoch, n),
        lambda: perm,
    )
    return perm, jax.lax.dynamic_slice(perm, (position * batch_size,), (batch_size,))


def take_rows(data: Data, rows: Array) -> Data:
    """The rows ``rows`` (int ``[m]``) of ``x``, ``y`` and (if any) ``noise_std``."""
    take = lambda a: None if a is None else jnp.take(a, rows, axis=0)
    return Data(take(data.x), take(data.y), take(data.noise_std))


def _validate(config: MAPConfig, n: int, num_starts: int) -> None:
    if n < 1:
        raise ValueError("MAP pretraining needs at least one data point")
    if num_starts < 1:
        raise ValueError(f"num_starts must be >= 1, got {num_starts}")
    if not config.learning_rate > 0:
        raise ValueError(f"MAP learning_rate must be positive, got {config.learning_rate}")
    if config.final_learning_rate is not None and not 0 < config.final_learning_rate <= config.learning_rate:
        raise ValueError(
            f"MAP final_learning_rate must be in (0, learning_rate={config.learning_rate}], "
            f"got {config.final_learning_rate}"
        )
    if config.num_steps < 1 and config.num_epochs is None:
        raise ValueError(f"MAP num_steps must be >= 1, got {config.num_steps}")
    if config.num_epochs is not None and config.num_epochs < 1:
        raise ValueError(f"MAP num_epochs must be >= 1, got {config.num_epochs}")
    if config.batch_size is not None and config.batch_size < 1:
        raise ValueError(f"MAP batch_size must be >= 1, got {config.batch_size}")
    if config.eval_every < 1:
        raise ValueError(f"MAP eval_every must be >= 1, got {config.eval_every}")
    if config.lbfgs_steps < 0 or config.lbfgs_memory < 1:
        raise ValueError(
            f"MAP lbfgs_steps must be >= 0 and lbfgs_memory >= 1, got {config.lbfgs_steps}, {config.lbfgs_memory}"
        )
    if config.lbfgs_patience is not None and config.lbfgs_patience < 1:
        raise ValueError(f"MAP lbfgs_patience must be >= 1 or None, got {config.lbfgs_patience}")
    if config.lbfgs_steps > 0 and (config.batch_size is not None and config.batch_size < n):
        raise ValueError("MAP lbfgs_steps needs the full batch (batch_size None or >= the number of rows)")
    if config.patience is not None and config.patience < 1:
        raise ValueError(f"MAP patience must be >= 1 or None, got {config.patience}")
    if config.max_retries < 0:
        raise ValueError(f"MAP max_retries must be >= 0, got {config.max_retries}")
    if config.init not in _INITS:
        raise ValueError(f"unknown MAP init {config.init!r}; choose from {', '.join(_INITS)}")


def pretrain_map(
    rng_key: Array,
    bnn: BNN,
    data: Data,
    hyper: Hyperparameters,
    config: MAPConfig | None = None,
    val_data: Data | None = None,
    num_starts: int = 1,
    initial_positions: Array | None = None,
    starts: Sequence[int] | None = None,
) -> tuple[Array, MAPInfo]:
    """MAP estimates from ``num_starts`` independent starts.

    Args:
        rng_key: PRNG key (initial draws, restarts, minibatch shuffling).
        bnn: the model; its dtype is the dtype of the result.
        data: training data (cast to the BNN's dtype).
        hyper: fixed hyperparameters (unbatched) at which the posterior is maximised.
        config: :class:`MAPConfig` (default settings when ``None``).
        val_data: optional validation data for early stopping.
        num_starts: number of independent starts (one per chain).
        initial_positions: optional ``[num_starts, num_params]`` first starts;
            restarts are still random draws.
        starts: indices (increasing) of the starts to compute, a piece of the run of ``num_starts``
            (``None``: all). Start ``i`` gets the draws and keys it gets in the whole run, so the
            pieces put together (:func:`merge_map_infos`) are the whole run, up to the rounding of
            vectorised code evaluated for fewer starts at a time.

    Returns:
        ``(positions [k, num_params], MAPInfo)`` for the ``k`` starts computed: each start's best
        parameters (lowest monitored loss), all with finite log-posterior.

    Raises:
        ValueError: invalid settings or shapes.
        MAPError: a start still has a non-finite log-posterior after ``max_retries`` restarts.
    """
    config = MAPConfig() if config is None else config
    data = cast_data(bnn, data)
    n = int(data.x.shape[0])
    _validate(config, n, num_starts)
    if val_data is not None:
        val_data = cast_data(bnn, val_data)
        if int(val_data.x.shape[0]) < 1:
            raise ValueError("validation data are empty")
    d = num_params(bnn.mlp)
    if initial_positions is not None:
        initial_positions = jnp.asarray(initial_positions, bnn.jdtype)
        if initial_positions.shape != (num_starts, d):
            raise ValueError(f"initial_positions must have shape ({num_starts}, {d}), got {initial_positions.shape}")
    hyper = jax.tree_util.tree_map(lambda a: jnp.asarray(a, bnn.jdtype), hyper)

    batch_size = config.batch_size if config.batch_size is not None and config.batch_size < n else None
    steps_per_epoch = n // batch_size if batch_size is not None else 1
    num_steps = config.num_epochs * steps_per_epoch if config.num_epochs is not None else config.num_steps
    chunk = min(config.eval_every, num_steps)
    num_chunks = math.ceil(num_steps / chunk)
    patience = config.patience if config.patience is not None else num_steps + chunk

    ctx = _Context(data, val_data, hyper)
    run = _build_runner(bnn, ctx, config, batch_size, steps_per_epoch, num_steps, chunk)
    logpost = BoundFunction(
        compiler.jit(jax.vmap(lambda p, ctx: bnn.log_posterior(p, ctx.hyper, ctx.data), in_axes=(0, None))), ctx
    )

    index = np.arange(num_starts) if starts is None else np.asarray(starts, dtype=np.int64)
    if index.ndim != 1 or not index.size or np.any(np.diff(index) <= 0) or index[0] < 0 or index[-1] >= num_starts:
        raise ValueError(f"starts must be increasing indices in 0..{num_starts - 1}, got {starts}")
    best: dict[int, dict[str, Any]] = {}
    retries = dict.fromkeys(index.tolist(), 0)
    pending = index
    num_grad_evals = 0
    rounds = []
    attempt = 0
    while pending.size:
        if attempt > config.max_retries:
            raise MAPError(
                f"MAP pretraining: {pending.size} of {num_starts} starts still have a non-finite log-posterior "
                f"after {config.max_retries} restarts (check the data for NaN/inf and the hyperparameters)"
            )
        key = jax.random.fold_in(rng_key, attempt)
        key_draw, key_run = jax.random.split(key)
        if attempt == 0 and initial_positions is not None:
            candidates = _take(initial_positions, pending)
        else:
            candidates = _take(draw_starts(key_draw, bnn, hyper, num_starts, config.init), pending)
        retries.update(dict.fromkeys(pending.tolist(), attempt))
        ok_init = np.isfinite(np.asarray(logpost(candidates)))  # on the host: no eager isfinite to compile
        run_idx = pending[ok_init]
        steps_run = 0
        if run_idx.size:
            keys = _take(jax.random.split(key_run, num_starts), run_idx)
            result = run(keys, _take(candidates, np.flatnonzero(ok_init)), num_chunks, patience)
            steps_run = int(result.pop("steps_run"))
            num_grad_evals += steps_run * int(run_idx.size)
            ok_end = np.isfinite(np.asarray(logpost(result["position"])))
            result = jax.device_get(result)  # per-start records are picked on the host
            for j, i in enumerate(run_idx.tolist()):
                if ok_end[j]:
                    best[i] = {k: v[j] for k, v in result.items()}
        rounds.append((steps_run, int(run_idx.size)))
        pending = np.array([i for i in index.tolist() if i not in best], dtype=np.int64)
        attempt += 1

    best = [best[i] for i in index.tolist()]
    positions = jnp.asarray(np.stack([b["position"] for b in best]))
    polish_history = polished = None
    if config.lbfgs_steps > 0:
        polish = _build_polisher(bnn, ctx, config)
        positions, polish_history, polished, evals, monitored = polish(positions)
        num_grad_evals += evals
        for i in np.flatnonzero(polished):
            best[i]["best_loss"] = monitored[i]
            if val_data is not None:
                best[i]["val_loss"] = monitored[i]
    width = max(b["loss_history"].shape[0] for b in best)
    pad = lambda a: np.concatenate([a, np.full(width - a.shape[0], np.nan, a.dtype)])
    width_m = max(b["monitor_history"].shape[0] for b in best)
    pad_m = lambda a: np.concatenate([a, np.full(width_m - a.shape[0], np.nan, a.dtype)])
    info = MAPInfo(
        loss_history=np.stack([pad(b["loss_history"]) for b in best]),
        monitor_history=np.stack([pad_m(b["monitor_history"]) for b in best]),
        best_step=np.array([b["best_step"] for b in best]),
        best_loss=np.array([b["best_loss"] for b in best]),
        val_loss=None if val_data is None else np.array([b["val_loss"] for b in best]),
        num_steps_run=np.array([b["num_steps_run"] for b in best]),
        num_retries=np.array([retries[i] for i in index.tolist()], dtype=np.int64),
        num_grad_evals=num_grad_evals,
        polish_loss_history=polish_history,
        polished=polished,
        rounds=np.array(rounds, dtype=np.int64).reshape(-1, 2),
    )
    return positions, info


def merge_map_infos(pieces: Sequence[MAPInfo]) -> MAPInfo:
    """The :class:`MAPInfo` of a run from those of its pieces (:func:`pretrain_map` ``starts``), in start order.

    Per-start records are concatenated (histories NaN-padded to the longest); ``num_grad_evals`` is
    what the whole run computes: in each round its vmapped loop runs as long as the longest of the
    pieces' loops, for all their starts; the L-BFGS evaluations add up. Every piece needs ``rounds``.
    """
    if not pieces:
        raise ValueError("no MAP pieces to merge")
    if any(p.rounds is None for p in pieces):
        raise ValueError("MAP pieces without their rounds cannot be merged")

    def stack(name: str) -> np.ndarray | None:
        arrays = [getattr(p, name) for p in pieces]
        if any(a is None for a in arrays):
            return None
        width = max(a.shape[1] for a in arrays) if arrays[0].ndim == 2 else None
        if width is not None:
            arrays = [np.pad(a.astype(float), ((0, 0), (0, width - a.shape[1])), constant_values=np.nan)
                      if a.shape[1] < width else a for a in arrays]  # fmt: skip
        return np.concatenate(arrays)

    n_rounds = max(p.rounds.shape[0] for p in pieces)
    padded = np.stack([np.pad(p.rounds, ((0, n_rounds - p.rounds.shape[0]), (0, 0))) for p in pieces])
    rounds = np.stack([padded[:, :, 0].max(axis=0), padded[:, :, 1].sum(axis=0)], axis=1)
    adam = [int(np.sum(p.rounds[:, 0] * p.rounds[:, 1])) for p in pieces]
    lbfgs = sum(int(p.num_grad_evals) - a for p, a in zip(pieces, adam, strict=True))
    return MAPInfo(
        **{name: stack(name) for name in MAPInfo._fields if name not in ("num_grad_evals", "rounds")},
        num_grad_evals=int(np.sum(rounds[:, 0] * rounds[:, 1])) + lbfgs,
        rounds=rounds.astype(np.int64),
    )


def _build_polisher(bnn, ctx, config):
    """L-BFGS from each start; returns ``polish(positions [k, d]) -> (positions, history, kept, evals, monitored)``.

    Without ``config.lbfgs_patience`` the ``lbfgs_steps`` iterations run as one ``lax.scan`` and a start keeps
    its end point when that is finite and its monitored loss is not higher than the given point's. With it, the
    iterations run in chunks of ``eval_every``; after each chunk a start keeps the point if its monitored loss is
    the lowest so far (not higher), and stops once ``lbfgs_patience`` iterations passed without a strictly lower
    one; the loop ends when every start has stopped. ``history [k, iterations run]`` is the objective at each
    iteration (NaN after a start stopped); ``kept [k]`` marks the starts whose returned point is a polished one;
    ``monitored [k]`` is the monitored loss (nats per point) of the returned points.
    """
    full, monitor = _objective(bnn), _monitor(bnn)
    solver = optax.lbfgs(memory_size=config.lbfgs_memory)
    total, patience = config.lbfgs_steps, config.lbfgs_patience
    chunk = total if patience is None else min(config.eval_every, total)

    def chunk_one(position, state, step0, ctx):
        def objective(position):
            return full(position, ctx.data, 1.0, ctx.hyper)

        value_and_grad = optax.value_and_grad_from_state(objective)

        def body(carry, i):
            pos, st = carry
            value, grad = value_and_grad(pos, state=st)
            updates, st_new = solver.update(grad, st, pos, value=value, grad=grad, value_fn=objective)
            pos_new = optax.apply_updates(pos, updates)
            # a failed line search must not poison the carry; iterations past the budget change nothing
            ok = jnp.all(jnp.isfinite(pos_new)) & (step0 + i < total)
            pos = jnp.where(ok, pos_new, pos)
            st = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), st_new, st)
            steps = optax.tree_utils.tree_get(st_new, "num_linesearch_steps")
            return (pos, st), (value, steps)

        (end, state), (values, steps) = jax.lax.scan(body, (position, state), jnp.arange(chunk))
        after = jnp.where(jnp.isfinite(objective(end)), monitor(end, ctx), jnp.nan)
        return end, state, values, jnp.sum(steps), after

    # the solver's initial state holds weak-typed scalars (its line search's info) that its update returns
    # strongly typed: made strong here, every chunk call has the same types and the chunk compiles once
    start_one = lambda p, ctx: (_strongly_typed(solver.init(p)), monitor(p, ctx))  # noqa: E731
    start_all = BoundFunction(compiler.jit(jax.vmap(start_one, in_axes=(0, None))), ctx)
    chunk_all = BoundFunction(compiler.jit(jax.vmap(chunk_one, in_axes=(0, 0, None, None))), ctx)

    def polish(positions):
        states, before = start_all(positions)
        best_loss, best_pos = np.asarray(before).copy(), np.asarray(positions)  # picked on the host: no eager ops
        k = positions.shape[0]
        kept, since, stop = np.zeros(k, bool), np.zeros(k, np.int64), np.full(k, -1)
        values, evals, end = [], 0, positions
        for step0 in range(0, total, chunk):
            end, states, chunk_values, steps, after = chunk_all(end, states, jnp.asarray(step0))
            run = min(chunk, total - step0)
            after, active = np.asarray(after), stop < 0
            evals += k * run + int(np.asarray(steps).sum())
            values.append(np.where(active[:, None], np.asarray(chunk_values)[:, :run], np.nan))
            better = active & np.isfinite(after) & (after <= best_loss)
            since = np.where(active & np.isfinite(after) & (after < best_loss), 0, since + run)
            best_pos = np.where(better[:, None], np.asarray(end), best_pos)
            best_loss, kept = np.where(better, after, best_loss), kept | better
            if patience is not None:
                stop[active & (since >= patience)] = step0 + run
            interrupts.raise_if_pending()  # a signal whose exception was swallowed (sigmabnn.interrupts)
            if np.all(stop >= 0):
                break
        return jnp.asarray(best_pos), np.concatenate(values, axis=1), kept, evals, best_loss

    return polish


def _strongly_typed(tree):
    """``tree`` with every leaf's weak type made strong (the same dtypes and values)."""
    return jax.tree_util.tree_map(lambda x: jax.lax.convert_element_type(x, jnp.asarray(x).dtype), tree)


class _Context(NamedTuple):
    """The arrays a MAP fit's compiled functions take as arguments, not as constants folded into their code, so
    the code is the same for every data set of the same shapes (:class:`sigmabnn.compiler.BoundFunction`)."""

    data: Data
    val_data: Data | None
    hyper: Hyperparameters


def _objective(bnn):
    """``L(position, batch, scale, hyper)``: minus the log prior minus ``scale`` times the batch's log-likelihood
    (nats)."""

    def objective(position, batch, scale, hyper):
        return -(bnn.log_prior(position, hyper) + scale * bnn.log_likelihood(position, hyper, batch))

    return objective


def _monitor(bnn):
    """``monitor(position, ctx)``, the early-stopping loss (nats per point): validation NLL, or the full training
    objective without validation data."""
    objective = _objective(bnn)

    def monitor(position, ctx):
        if ctx.val_data is not None:
            return -bnn.log_likelihood(position, ctx.hyper, ctx.val_data) / ctx.val_data.x.shape[0]
        return objective(position, ctx.data, 1.0, ctx.hyper) / ctx.data.x.shape[0]

    return monitor


def _build_runner(bnn, ctx, config, batch_size, steps_per_epoch, num_steps, chunk):
    """The vmapped, jitted chunk loop; returns ``run(keys [k], starts [k, d], num_chunks, patience) -> dict``."""
    n = int(ctx.data.x.shape[0])
    optimizer = optax.adam(learning_rate_schedule(config, num_steps))
    objective, monitor = _objective(bnn), _monitor(bnn)

    def chunk_one(key, position, opt_state, step0, ctx):
        data = ctx.data
        # one row order per epoch and start, carried (step0 is not batched over starts)
        perm0 = None if batch_size is None else epoch_permutation(key, step0, steps_per_epoch, n)

        def body(carry, i):
            pos, st, perm = carry
            step = step0 + i
            if batch_size is None:
                batch, scale = data, 1.0
            else:
                perm, rows = next_minibatch(key, perm, step, step0, steps_per_epoch, batch_size, n)
                batch, scale = take_rows(data, rows), n / batch_size
            loss, grad = jax.value_and_grad(objective)(pos, batch, scale, ctx.hyper)
            updates, st_new = optimizer.update(grad, st, pos)
            pos_new = optax.apply_updates(pos, updates)
            active = step < num_steps
            pos = jnp.where(active, pos_new, pos)
            st = jax.tree_util.tree_map(lambda a, b: jnp.where(active, a, b), st_new, st)
            return (pos, st, perm), loss

        (position, opt_state, _), losses = jax.lax.scan(body, (position, opt_state, perm0), jnp.arange(chunk))
        return position, opt_state, losses

    def track_one(track, position, step, patience, ctx):
        loss = monitor(position, ctx)
        finite = jnp.isfinite(loss)
        improved = finite & (loss < track.best_loss) & ~track.stopped
        since = jnp.where(improved, 0, track.since + chunk)
        return _Track(
            best_position=jnp.where(improved, position, track.best_position),
            best_loss=jnp.where(improved, loss, track.best_loss),
            best_step=jnp.where(improved, step, track.best_step),
            since=since,
            stopped=track.stopped | ~finite | (since >= patience) | (step >= num_steps),
        ), loss

    def init_one(position, ctx):
        loss = monitor(position, ctx)
        return _Track(
            position,
            jnp.where(jnp.isfinite(loss), loss, jnp.inf),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), jnp.int32),
            ~jnp.isfinite(loss),
        ), loss

    chunk_all = BoundFunction(compiler.jit(jax.vmap(chunk_one, in_axes=(0, 0, 0, None, None))), ctx)
    track_all = BoundFunction(compiler.jit(jax.vmap(track_one, in_axes=(0, 0, None, None, None))), ctx)
    init_all = BoundFunction(compiler.jit(jax.vmap(init_one, in_axes=(0, None))), ctx)
    opt_init_all = compiler.jit(jax.vmap(optimizer.init))

    def val_one(position, ctx):
        return -bnn.log_likelihood(position, ctx.hyper, ctx.val_data) / ctx.val_data.x.shape[0]

    val_all = None if ctx.val_data is None else BoundFunction(compiler.jit(jax.vmap(val_one, in_axes=(0, None))), ctx)

    def run(keys, starts, num_chunks, patience):
        positions = starts
        opt_states = opt_init_all(positions)
        track, loss0 = init_all(positions)
        k = starts.shape[0]
        losses, monitors = [], [np.asarray(loss0)]
        stop_step = np.where(np.asarray(track.stopped), 0, -1)
        steps_run = 0
        for c in range(num_chunks):
            step0 = c * chunk
            positions, opt_states, chunk_losses = chunk_all(keys, positions, opt_states, jnp.asarray(step0))
            steps_run = min(step0 + chunk, num_steps)
            track, mon = track_all(track, positions, jnp.asarray(steps_run, jnp.int32), patience)
            losses.append(np.asarray(chunk_losses))
            # a stopped start keeps being updated (it shares the vmapped loop) but is no longer recorded
            monitors.append(np.where(stop_step >= 0, np.nan, np.asarray(mon)))
            stopped = np.asarray(track.stopped)
            stop_step[(stop_step < 0) & stopped] = steps_run
            interrupts.raise_if_pending()  # a signal whose exception was swallowed (sigmabnn.interrupts)
            if stopped.all():
                break
        stop_step[stop_step < 0] = steps_run
        loss_hist = np.concatenate(losses, axis=1)[:, :steps_run] if losses else np.zeros((k, 0))
        loss_hist = np.where(np.arange(loss_hist.shape[1])[None, :] < stop_step[:, None], loss_hist, np.nan)
        mon_hist = np.stack(monitors, axis=1)
        val = None if val_all is None else np.asarray(val_all(track.best_position))
        out = {
            "position": track.best_position,
            "loss_history": loss_hist,
            "monitor_history": mon_hist,
            "best_step": np.asarray(track.best_step),
            "best_loss": np.asarray(track.best_loss),
            "num_steps_run": stop_step,
            "steps_run": steps_run,
            "val_loss": np.zeros(starts.shape[0]) if val is None else val,
        }
        return out

    return run
