"""Choose the candidate rows to label next: score them in chunks, keep the best, pick a batch.

:func:`select` streams the candidates (a DataFrame or an iterable of DataFrame chunks, e.g.
:func:`sigmabnn.data.tables.read_table_chunks`), scores every row with the criterion, keeps the
``pool_size`` best rows with what the batch step needs (each network's mean and the aleatoric
variance, ``pool_size x T`` floats; a chunk is scored :data:`COMPONENTS_AT_ONCE` network means at a time:
memory grows neither with the number of candidates nor with the chunk's rows), and picks
``n`` of them: greedily with conditioning (:func:`~sigmabnn.acquisition.batch.greedy_batch`,
``batch="greedy"``) or the ``n`` best single-point scores (``batch="top"``).

Criteria (:data:`CRITERIA`): ``"bald"`` (:func:`~sigmabnn.acquisition.regression.bald`; computed only for the rows whose
closed-form upper bound can reach the pool, :func:`~sigmabnn.acquisition.regression.top_bald`: the
same pool as scoring every row),
``"variance"`` (:func:`~sigmabnn.acquisition.regression.epistemic_variance`, log space for a log
target), ``"relative_std"`` (:func:`~sigmabnn.acquisition.regression.relative_epistemic_std`),
``"epig"`` (:mod:`~sigmabnn.acquisition.epig`: the information a label gives about the predictions
at target inputs, by default a seeded sample of :data:`~sigmabnn.acquisition.epig.EPIG_TARGETS`
rows of the first candidate chunk; its batch is picked by
:func:`~sigmabnn.acquisition.epig.greedy_epig_batch`) and ``"random"`` (a uniform score from the
seed and the row's position: a uniformly random batch). The default is ``"epig"``
(:func:`default_criterion`).

A classifier (a model of the categorical likelihood) is scored from every network's class
probabilities (:func:`~sigmabnn.predict.network_probabilities`, the posterior's own: any fitted
temperature is left out, as BALD's mutual information is a property of the weights' posterior)
with the criteria :data:`CLASS_CRITERIA` of :mod:`~sigmabnn.acquisition.classification`
(``"bald"``, the default: ``H[mean_t p_t] - mean_t H[p_t]``; ``"max_entropy"``; ``"variation_ratios"``;
``"random"``). Its batch (:data:`CLASS_BATCH_MODES`) is the stochastic one by default
(``"power"``: drawn without replacement with probabilities proportional to the scores, among the
``pool_size`` best rows; Kirsch et al. 2023, the batch rule ``benchmarks/classification.py``'s pilot
chose on the digits' validation rows), the ``n`` best scores (``"top"``) or, with ``"bald"``, BatchBALD
(``"batchbald"``: :func:`~sigmabnn.acquisition.batchbald.batchbald_batch`, greedy joint mutual
information of the batch, among the :data:`BATCHBALD_PER_PICK` ``n`` (at least
:data:`BATCHBALD_MIN_CANDIDATES`) best BALD rows of the pool, seeded by ``seed``; the pilot measured it
behind ``"power"`` on the digits with an ensemble of 8, whose information ``log 8`` a few picks use up).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from sigmabnn import compiler
from sigmabnn.acquisition.batch import BatchPicks, centred_rows, greedy_batch, kth_best, top_scores
from sigmabnn.acquisition.batchbald import batchbald_batch
from sigmabnn.acquisition.classification import classification_scores, stochastic_batch
from sigmabnn.acquisition.epig import EPIG_TARGETS, epig_from_rows, greedy_epig_batch
from sigmabnn.acquisition.regression import (
    aleatoric_variance,
    bald,
    bald_bound,
    bounded_top,
    epistemic_variance,
    relative_epistemic_std,
)
from sigmabnn.errors import InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.names import (
    ACQUISITION_BATCH_MODES,
    ACQUISITION_CRITERIA,
    CLASS_ACQUISITION_BATCH_MODES,
    CLASS_ACQUISITION_CRITERIA,
)
from sigmabnn.predict.classes import network_probabilities
from sigmabnn.predict.components import draw_components

__all__ = [
    "BATCH_MODES", "CLASS_BATCH_MODES", "CLASS_CRITERIA", "CRITERIA", "Selection", "Targets", "candidate_scores",
    "class_scores", "raw_inputs", "select",
]  # fmt: skip

CRITERIA: tuple[str, ...] = ACQUISITION_CRITERIA
BATCH_MODES: tuple[str, ...] = ACQUISITION_BATCH_MODES
CLASS_CRITERIA: tuple[str, ...] = CLASS_ACQUISITION_CRITERIA
CLASS_BATCH_MODES: tuple[str, ...] = CLASS_ACQUISITION_BATCH_MODES
#: Candidates kept for the batch step per picked point, and at least this many (``pool_size`` default).
POOL_PER_PICK, MIN_POOL = 20, 10_000
#: BatchBALD's candidates: the best BALD rows of the pool, this many per picked point and at least this many.
BATCHBALD_PER_PICK, BATCHBALD_MIN_CANDIDATES = 10, 1000
#: Most per-network class probabilities (networks x rows x classes, float64) held at once while scoring.
CLASS_PROBABILITIES_AT_ONCE = 2**23
#: Most network means (networks x rows, float64; as many aleatoric variances) of a regression model held at once
#: while scoring: a candidate chunk is scored this many at a time.
COMPONENTS_AT_ONCE = 2**23

_SCORES = {"bald": bald, "variance": epistemic_variance, "relative_std": relative_epistemic_std}


class Selection(NamedTuple):
    """The chosen candidates, best first.

    Attributes:
        rows: the chosen rows with all their columns unchanged, plus ``score``; the index is each
            row's position among all candidates (0-based, in streaming order).
        scores: ``[n]`` the score of each when picked (greedy: conditioned on the picks before it).
        num_candidates: candidate rows read in all.
        num_scored: rows whose score was computed (fewer than ``num_candidates`` for ``"bald"`` on a
            regression model: the rows whose upper bound could not reach the pool were skipped).
    """

    rows: pd.DataFrame
    scores: np.ndarray
    num_candidates: int
    num_scored: int


class Targets(NamedTuple):
    """The draws at EPIG's target inputs: ``draw_means`` ``[M, T]`` (log space, first target) and
    ``aleatoric`` ``[M]`` (the networks' mean noise variance), float64."""

    draw_means: np.ndarray
    aleatoric: np.ndarray


class _Pool(NamedTuple):
    rows: pd.DataFrame
    scores: np.ndarray
    draw_means: np.ndarray  # [k, T] (empty [k, 0] for "random")
    aleatoric: np.ndarray


@compiler.jit
def _uniform(key: jax.Array, rows: jax.Array) -> jax.Array:
    """A uniform score per row from ``fold_in(key, row)``: the same however the rows are chunked."""
    return jax.vmap(lambda i: jax.random.uniform(jax.random.fold_in(key, i), dtype=jnp.float64))(rows)


def raw_inputs(fitted: FittedModel) -> list[str]:
    """The model's raw input columns: its features less those it derives from them."""
    derived = {name for name, _ in fitted.derived}
    return [f for f in fitted.feature_names if f not in derived]


def _inputs(fitted: FittedModel, chunk: pd.DataFrame, features: Sequence[str] | None) -> pd.DataFrame:
    """What the model reads from ``chunk``: its raw inputs taken from the ``features`` columns."""
    if features is None:
        return chunk
    raw = raw_inputs(fitted)
    if len(features) != len(raw):
        raise InputError(f"features names {len(features)} columns; the model has {len(raw)} inputs ({', '.join(raw)})")
    missing = [c for c in features if c not in chunk.columns]
    if missing:
        raise InputError(f"candidate column {missing[0]!r} (from features) not found")
    return pd.DataFrame({name: chunk[c].to_numpy() for name, c in zip(raw, features)}, index=chunk.index)


def target_draws(fitted: FittedModel, x: Any) -> Targets:
    """The model's draws at target inputs ``x`` (raw inputs, as for :func:`candidate_scores`)."""
    comps = draw_components(fitted, x)
    return Targets(comps.mean[..., 0], aleatoric_variance(comps))


def candidate_scores(
    fitted: FittedModel, x: Any, criterion: str, targets: Targets | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(scores [n], draw_means [n, T], aleatoric [n])`` of the rows of ``x`` under ``criterion``
    (not ``"random"``; ``"epig"`` needs ``targets``); ``draw_means`` are the networks' log-space
    means of the first target."""
    comps = draw_components(fitted, x)
    means, aleatoric = comps.mean[..., 0], aleatoric_variance(comps)
    if criterion != "epig":
        return _SCORES[criterion](comps), means, aleatoric
    if targets is None:
        raise InputError("the epig criterion needs target inputs")
    t = centred_rows(targets.draw_means)
    return epig_from_rows(centred_rows(means), aleatoric, t, targets.aleatoric), means, aleatoric


def _bald_pool(fitted: FittedModel, chunk: pd.DataFrame, x: Any, pool: _Pool | None, keep: int) -> _Pool:
    """The rows of ``chunk`` that can join the ``keep`` best BALD scores of ``pool`` and the chunk, scored.

    Two passes over the chunk's blocks (:func:`_blocks`): every row's upper bound
    (:func:`~sigmabnn.acquisition.regression.bald_bound`; the draws then dropped), then BALD for the rows
    :func:`~sigmabnn.acquisition.regression.bounded_top` asks for, in decreasing order of the bound over the
    whole chunk, their draws computed again: memory stays that of a block, and the threshold rises as fast as
    with the whole chunk at once.
    """
    blocks = _blocks(fitted, len(chunk))
    bound = np.concatenate([bald_bound(draw_components(fitted, x.iloc[b])) for b in blocks])
    size, seen = blocks[0].stop, []

    def score(rows: np.ndarray) -> np.ndarray:
        out = []
        for a in range(0, len(rows), size):
            comps = draw_components(fitted, x.iloc[rows[a : a + size]])
            seen.append((rows[a : a + size], comps.mean[:, :, 0], aleatoric_variance(comps)))
            out.append(bald(comps))
        return np.concatenate(out)

    rows, scores = bounded_top(bound, score, keep, None if pool is None else pool.scores)
    if not seen:
        return _Pool(chunk.iloc[rows], scores, np.zeros((0, fitted.num_networks)), np.zeros(0))
    by_row = np.argsort(np.concatenate([r for r, _, _ in seen]), kind="stable")  # the order of ``rows``
    means, aleatoric = (np.concatenate([part[i] for part in seen])[by_row] for i in (1, 2))
    return _Pool(chunk.iloc[rows], scores, means, aleatoric)


def _no_draws(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The empty draw means ``[n, 0]`` and zero aleatoric variances of rows without a regression mean."""
    return np.zeros((n, 0)), np.zeros(n)


def _blocks(fitted: FittedModel, n: int) -> list[slice]:
    """The row blocks a regression model scores a chunk of ``n`` rows in: at most :data:`COMPONENTS_AT_ONCE`
    network means at once, so memory does not grow with the chunk; a power of two of rows, so the prediction
    engine's power-of-two chunks fill a block without padding."""
    rows = 1 << max(0, (COMPONENTS_AT_ONCE // fitted.num_networks).bit_length() - 1)
    return [slice(a, min(a + rows, n)) for a in range(0, n, rows)]


def _add_chunk(
    fitted: FittedModel, chunk: pd.DataFrame, x: Any, criterion: str, target_set: Targets | None, pool: _Pool | None,
    keep: int,
) -> tuple[_Pool, int]:  # fmt: skip
    """``pool`` merged with the rows of ``chunk`` (``x``: their model inputs) scored under ``criterion`` (not
    ``"random"``), and how many rows were scored: a classifier's all at once (its scores are blockwise), BALD's
    those that can reach the pool (:func:`_bald_pool`), the other criteria's a block at a time."""
    if _is_classifier(fitted):  # no draws of a regression mean to condition a batch on
        return _merge(pool, _Pool(chunk, class_scores(fitted, x, criterion), *_no_draws(len(chunk))), keep), len(chunk)
    if criterion == "bald":
        new = _bald_pool(fitted, chunk, x, pool, keep)
        return _merge(pool, new, keep), len(new.scores)
    for b in _blocks(fitted, len(chunk)):
        pool = _merge(pool, _Pool(chunk.iloc[b], *candidate_scores(fitted, x.iloc[b], criterion, target_set)), keep)
    return pool, len(chunk)


def class_scores(fitted: FittedModel, x: Any, criterion: str) -> np.ndarray:
    """``[n]`` scores of a classifier's candidate rows ``x`` under ``criterion`` (of :data:`CLASS_CRITERIA`,
    not ``"random"``), float64, from every network's untempered class probabilities, a block of rows at a
    time (at most :data:`CLASS_PROBABILITIES_AT_ONCE` probabilities in memory)."""
    n = len(x)
    rows = max(1, CLASS_PROBABILITIES_AT_ONCE // (fitted.num_networks * fitted.bnn.mlp.widths[-1]))
    take = x.iloc if isinstance(x, pd.DataFrame) else np.asarray(x)
    parts = [
        np.asarray(
            classification_scores(None, criterion, network_probabilities(fitted, take[a : a + rows], calibrated=False))
        )
        for a in range(0, n, rows)
    ]
    return np.concatenate(parts).astype(np.float64) if parts else np.zeros(0)


def _batchbald_picks(
    fitted: FittedModel, pool: _Pool, k: int, key: jax.Array, features: Sequence[str] | None
) -> BatchPicks:
    """BatchBALD's ``k`` picks among the pool's best BALD rows (module docstring); each pick's score is its gain."""
    m = min(len(pool.scores), max(BATCHBALD_PER_PICK * k, BATCHBALD_MIN_CANDIDATES))
    best = top_scores(pool.scores, m).indices
    p = network_probabilities(fitted, _inputs(fitted, pool.rows.iloc[best], features), calibrated=False)
    picks, gains = batchbald_batch(key, np.asarray(p, np.float64), k)
    return BatchPicks(best[np.asarray(picks)], np.asarray(gains, np.float64))


def _default_targets(fitted: FittedModel, chunk: pd.DataFrame, seed: int) -> Targets:
    """EPIG's targets when none are given: a seeded sample of up to ``EPIG_TARGETS`` rows of ``chunk``."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(chunk), size=min(EPIG_TARGETS, len(chunk)), replace=False)
    return target_draws(fitted, chunk.iloc[np.sort(rows)])


def _is_classifier(fitted: FittedModel | None) -> bool:
    return fitted is not None and fitted.bnn.likelihood.name == "categorical"


def default_criterion(fitted: FittedModel | None) -> str:
    """The criterion of ``criterion=None``: ``"bald"`` for a classifier, ``"epig"`` for a regression model
    (on the built-in cross sections it had the lowest validation error of ``epig``, ``variance`` and ``bald``
    on all three processes measured: ``benchmarks/results/active_learning_pilot.md``), ``"random"``
    without a model."""
    if fitted is None:
        return "random"
    return "bald" if _is_classifier(fitted) else "epig"


def default_batch(fitted: FittedModel | None) -> str:
    """The batch mode of ``batch=None``: ``"power"`` for a classifier, ``"greedy"`` for a regression model."""
    return "power" if _is_classifier(fitted) else "greedy"


def _check(fitted: FittedModel | None, n: int, criterion: str, batch: str, pool_size: int | None) -> int:
    kind, criteria, modes = (
        ("a classifier", CLASS_CRITERIA, CLASS_BATCH_MODES)
        if _is_classifier(fitted)
        else ("a regression model", CRITERIA, BATCH_MODES)
    )
    if criterion not in criteria:
        raise InputError(f"criterion {criterion!r} is not one for {kind}; choose one of {', '.join(criteria)}")
    if fitted is None and criterion != "random":
        raise InputError(f"criterion {criterion!r} needs a model")
    if batch not in modes and criterion != "random":
        raise InputError(f"batch mode {batch!r} is not one for {kind}; choose one of {', '.join(modes)}")
    if batch == "batchbald" and criterion not in ("bald", "random"):
        raise InputError(f"batch mode 'batchbald' picks by BALD's joint information: use it with criterion 'bald', "
                         f"not {criterion!r}")  # fmt: skip
    if not isinstance(n, int | np.integer) or n < 1:
        raise InputError(f"the number of points to choose must be a positive integer, got {n!r}")
    pool = max(POOL_PER_PICK * int(n), MIN_POOL) if pool_size is None else int(pool_size)
    if pool < n:
        raise InputError(f"pool_size ({pool}) must be at least the number of points to choose ({n})")
    return pool


def _take(pool: _Pool, rows: np.ndarray) -> _Pool:
    """The rows ``rows`` (positions) of ``pool``."""
    return _Pool(pool.rows.iloc[rows], pool.scores[rows], pool.draw_means[rows], pool.aleatoric[rows])


def _best(pool: _Pool, keep: int) -> _Pool:
    """The ``keep`` best rows of ``pool`` in their order (ties: earlier rows first)."""
    if len(pool.scores) <= keep:
        return pool
    return _take(pool, np.sort(top_scores(pool.scores, keep).indices))


def _merge(pool: _Pool | None, new: _Pool, keep: int) -> _Pool:
    """The ``keep`` best of ``pool`` and ``new`` (ties: earlier rows first). ``new`` is cut first to its rows above
    a full pool's worst score (a tie loses to the earlier row) and to its own best ``keep`` (no row dropped could be
    among the union's best), so a block's draws are not copied whole."""
    if pool is not None and len(pool.scores) >= keep:
        new = _take(new, np.flatnonzero(new.scores > kth_best(pool.scores, keep)))
    new = _best(new, keep)
    if pool is None:
        return new
    merged = _Pool(pd.concat([pool.rows, new.rows]), *(np.concatenate([a, b]) for a, b in zip(pool[1:], new[1:])))
    return _best(merged, keep)


def select(
    fitted: FittedModel | None,
    candidates: pd.DataFrame | Iterable[pd.DataFrame],
    n: int,
    *,
    criterion: str | None = None,
    batch: str | None = None,
    pool_size: int | None = None,
    seed: int = 0,
    features: Sequence[str] | None = None,
    targets: pd.DataFrame | None = None,
) -> Selection:
    """The ``n`` candidates to label next (module docstring), best first.

    Args:
        fitted: a model with draws, regression or classifier (``None`` for ``"random"``).
        candidates: a DataFrame with the model's raw input columns (other columns are carried
            along), or an iterable of such chunks.
        n: how many to choose; fewer candidates than ``n``: all of them, ranked.
        criterion: one of :data:`CRITERIA` (a regression model) or :data:`CLASS_CRITERIA` (a classifier);
            ``None``: :func:`default_criterion` (``"epig"`` for regression, ``"bald"`` for a classifier).
        batch: ``"greedy"`` (conditioned picks; regression), ``"power"`` (drawn in proportion to the
            scores; classifier), ``"batchbald"`` (classifier, criterion ``"bald"``) or ``"top"`` (the best
            single scores); ``None``: :func:`default_batch`; ``"random"`` ignores it.
        pool_size: best rows kept for the batch step (default ``max(20 n, 10,000)``).
        seed: the key of ``"random"``'s scores (``jax.random.key(seed)``), of the ``"power"`` draw and of
            BatchBALD's sampled labels.
        features: the candidate columns holding the model's raw inputs, in the order of
            :func:`raw_inputs` (``None``: the columns named as the model's).
        targets: for ``"epig"``, the inputs where predictions are wanted (the model's raw input
            columns, not mapped by ``features``); ``None``: a sample of the first chunk (seeded by
            ``seed``).

    Raises:
        InputError / DataError: bad arguments (a criterion or batch mode of the other kind of model),
            missing or non-finite inputs.
    """
    criterion = default_criterion(fitted) if criterion is None else criterion
    batch = default_batch(fitted) if batch is None else batch
    keep = _check(fitted, n, criterion, batch, pool_size)
    chunks = [candidates] if isinstance(candidates, pd.DataFrame) else candidates
    key, pool, total, scored = jax.random.key(seed), None, 0, 0
    target_set: Targets | None = None
    for chunk in chunks:
        chunk = chunk.set_axis(pd.RangeIndex(total, total + len(chunk)))
        if len(chunk) == 0:
            continue
        if criterion == "random":
            u = np.asarray(_uniform(key, jnp.arange(total, total + len(chunk))))
            pool, scored = _merge(pool, _Pool(chunk, u, *_no_draws(len(chunk))), keep), scored + len(chunk)
            total += len(chunk)
            continue
        x = _inputs(fitted, chunk, features)
        if criterion == "epig" and target_set is None and not _is_classifier(fitted):
            target_set = _default_targets(fitted, x, seed) if targets is None else target_draws(fitted, targets)
        pool, rows_scored = _add_chunk(fitted, chunk, x, criterion, target_set, pool, keep)
        total, scored = total + len(chunk), scored + rows_scored
    if pool is None or len(pool.scores) == 0:
        raise InputError("no candidate rows to choose from")
    k = min(int(n), len(pool.scores))
    picks: BatchPicks
    if batch == "greedy" and criterion == "epig":
        picks = greedy_epig_batch(pool.draw_means, pool.aleatoric, *target_set, k)
    elif batch == "greedy" and criterion != "random":
        picks = greedy_batch(pool.draw_means, pool.aleatoric, pool.scores, k, criterion)
    elif batch == "power" and criterion != "random":
        drawn = np.asarray(stochastic_batch(jax.random.split(key)[1], pool.scores, k, mode="power"))
        drawn = drawn[np.argsort(-pool.scores[drawn], kind="stable")]  # a drawn set: its draw order means nothing
        picks = BatchPicks(drawn, pool.scores[drawn])
    elif batch == "batchbald" and criterion != "random":
        picks = _batchbald_picks(fitted, pool, k, jax.random.split(key)[1], features)
    else:
        picks = top_scores(pool.scores, k)
    rows = pool.rows.iloc[picks.indices].copy()
    if "score" in rows.columns:
        raise InputError("the candidates already have a column named 'score'")
    rows["score"] = picks.scores
    return Selection(rows, picks.scores, total, scored)
