"""Selection from a candidate table: streamed chunks give the one-table answer; columns pass through."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest

import sigmabnn
from sigmabnn.acquisition import select
from sigmabnn.errors import InputError


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(60, 2))
    df = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": np.sin(3 * x[:, 0]) + 0.1 * rng.normal(size=60)})
    fitted, _ = sigmabnn.fit(df, "y", ["a", "b"], method="ensemble", architecture="2-8-1", num_members=4,
                             num_steps=200, progress=False, seed=0)  # fmt: skip
    return fitted


@pytest.fixture(scope="module")
def candidates():
    rng = np.random.default_rng(2)
    x = rng.uniform(-3, 3, size=(500, 2))
    return pd.DataFrame({"id": np.arange(500) + 1000, "a": x[:, 0], "b": x[:, 1], "note": ["c"] * 500})


@pytest.mark.parametrize("criterion", ["bald", "variance", "relative_std", "random"])
@pytest.mark.parametrize("batch", ["greedy", "top"])
def test_streamed_chunks_select_what_one_table_selects(model, candidates, criterion, batch):
    whole = select(model, candidates, 20, criterion=criterion, batch=batch, pool_size=100)
    chunks = (candidates.iloc[i : i + 37] for i in range(0, len(candidates), 37))
    streamed = select(model, chunks, 20, criterion=criterion, batch=batch, pool_size=100)
    assert streamed.num_candidates == 500
    assert list(streamed.rows.index) == list(whole.rows.index)
    assert np.allclose(streamed.scores, whole.scores)
    out = streamed.rows
    assert list(out.columns) == ["id", "a", "b", "note", "score"]
    pd.testing.assert_frame_equal(out.drop(columns="score"), candidates.loc[out.index])


@pytest.mark.parametrize("batch", ["greedy", "top"])
def test_epig_with_given_targets_streams_like_one_table(model, candidates, batch):
    targets = candidates.iloc[::10][["a", "b"]]
    whole = select(model, candidates, 10, criterion="epig", batch=batch, pool_size=100, targets=targets)
    chunks = (candidates.iloc[i : i + 37] for i in range(0, len(candidates), 37))
    streamed = select(model, chunks, 10, criterion="epig", batch=batch, pool_size=100, targets=targets)
    assert list(streamed.rows.index) == list(whole.rows.index) and np.allclose(streamed.scores, whole.scores)
    assert whole.rows.index.is_unique and np.all(whole.scores >= 0)


def test_epig_targets_default_to_a_seeded_sample_of_the_first_chunk(model, candidates):
    """Without targets, EPIG's are EPIG_TARGETS rows of the first chunk drawn by default_rng(seed): the same
    selection as passing those rows, and another seed draws other targets."""
    from sigmabnn.acquisition.epig import EPIG_TARGETS

    first = candidates.iloc[:300]
    rows = np.sort(np.random.default_rng(3).choice(len(first), size=EPIG_TARGETS, replace=False))
    chunks = (candidates.iloc[i : i + 300] for i in range(0, len(candidates), 300))
    default = select(model, chunks, 10, criterion="epig", seed=3)
    given = select(model, candidates, 10, criterion="epig", targets=first.iloc[rows][["a", "b"]])
    assert list(default.rows.index) == list(given.rows.index) and np.allclose(default.scores, given.scores)
    other = select(model, candidates.iloc[:300], 10, criterion="epig", seed=4)
    assert not np.allclose(other.scores, select(model, candidates.iloc[:300], 10, criterion="epig", seed=3).scores)


def test_top_scores_are_sorted_and_greedy_starts_at_the_best(model, candidates):
    top = select(model, candidates, 10, criterion="bald", batch="top")
    assert np.all(np.diff(top.scores) <= 0)
    greedy = select(model, candidates, 10, criterion="bald")
    assert greedy.rows.index[0] == top.rows.index[0]
    assert greedy.scores[0] == pytest.approx(top.scores[0])


def test_random_selection_is_uniform(candidates):
    counts = np.zeros(len(candidates))
    for seed in range(200):
        counts[select(None, candidates, 50, criterion="random", seed=seed).rows.index] += 1
    # 200 draws of 50 of 500: each row chosen 20 times on average, binomial sd ~4.2
    assert abs(counts.mean() - 20) < 1e-9 and counts.std() < 6.0 and counts.min() > 0


def test_bad_arguments(model, candidates):
    with pytest.raises(InputError, match="criterion"):
        select(model, candidates, 5, criterion="nope")
    with pytest.raises(InputError, match="positive integer"):
        select(model, candidates, 0)
    with pytest.raises(InputError, match="score"):
        select(model, candidates.assign(score=1.0), 5)
    with pytest.raises(InputError, match="missing|column"):
        select(model, candidates.drop(columns="b"), 5)
    with pytest.raises(InputError, match="'max_entropy' is not one for a regression model"):
        select(model, candidates, 5, criterion="max_entropy")
    with pytest.raises(InputError, match="'power' is not one for a regression model"):
        select(model, candidates, 5, batch="power")


# --------------------------------------------------------------------------- a classifier


@pytest.fixture(scope="module")
def classifier():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=(80, 2))
    label = np.where(x[:, 0] + 0.3 * rng.normal(size=80) > 0, "up", "down")
    df = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "label": label})
    fitted, _ = sigmabnn.fit(df, "label", ["a", "b"], likelihood="categorical", method="ensemble",
                             architecture="2-8-2", num_members=4, num_steps=200, progress=False, seed=0)  # fmt: skip
    return fitted


@pytest.mark.parametrize("criterion", ["bald", "max_entropy", "variation_ratios"])
def test_a_classifiers_top_batch_is_the_best_scores_of_its_networks_probabilities(classifier, candidates, criterion):
    from sigmabnn.acquisition import classification
    from sigmabnn.predict import network_probabilities

    p = network_probabilities(classifier, candidates[["a", "b"]], calibrated=False)
    expected = np.asarray(getattr(classification, criterion)(p))
    chunks = (candidates.iloc[i : i + 37] for i in range(0, len(candidates), 37))
    chosen = select(classifier, chunks, 12, criterion=criterion, batch="top", pool_size=100)
    best = np.lexsort((np.arange(expected.size), -expected))[:12]
    assert list(chosen.rows.index) == list(best)
    np.testing.assert_allclose(chosen.scores, expected[best], rtol=1e-12)
    assert list(chosen.rows.columns) == ["id", "a", "b", "note", "score"]


def test_a_classifiers_scores_are_computed_a_block_of_rows_at_a_time(classifier, candidates, monkeypatch):
    module = importlib.import_module("sigmabnn.acquisition.select")
    whole = module.class_scores(classifier, candidates, "bald")
    monkeypatch.setattr(module, "CLASS_PROBABILITIES_AT_ONCE", classifier.num_networks * 2 * 7)  # 7 rows a block
    np.testing.assert_allclose(module.class_scores(classifier, candidates, "bald"), whole, rtol=1e-12)


def test_a_classifiers_default_batch_is_drawn_in_proportion_to_the_scores(classifier, candidates):
    """The power batch: distinct rows of the pool, reproducible by seed, written best first; one pick's frequency over
    seeds follows score / sum of the pool's scores (Gumbel-top-k), within 4 binomial standard errors."""
    first = select(classifier, candidates, 5, seed=3)
    again = select(classifier, candidates, 5, seed=3)
    assert list(first.rows.index) == list(again.rows.index) and first.rows.index.is_unique
    assert np.all(np.diff(first.rows["score"].to_numpy()) <= 0)  # a drawn set, written best first
    pool = candidates.iloc[:40]
    scores = select(classifier, pool, 40, batch="top").rows["score"]  # every row's score, by index
    weights = scores.sort_index().to_numpy() / scores.sum()
    draws = 400
    counts = np.bincount([select(classifier, pool, 1, seed=s).rows.index[0] for s in range(draws)], minlength=40)
    top = np.argsort(-weights)[:3]
    se = np.sqrt(weights[top] * (1 - weights[top]) / draws)
    assert np.all(np.abs(counts[top] / draws - weights[top]) < 4 * se)


def test_a_classifiers_batchbald_batch_starts_at_balds_best_and_scores_each_picks_gain(classifier, candidates):
    chunks = (candidates.iloc[i : i + 37] for i in range(0, len(candidates), 37))
    chosen = select(classifier, chunks, 6, batch="batchbald", seed=2)
    best = select(classifier, candidates, 1, batch="top").rows
    assert chosen.rows.index[0] == best.index[0] and chosen.rows.index.is_unique and len(chosen.rows) == 6
    np.testing.assert_allclose(chosen.scores[0], best["score"].iloc[0], rtol=1e-9)  # the first gain: its BALD
    # four networks hold log 4 nats: the batch's gains cannot add up to more (up to Monte-Carlo error)
    assert np.sum(chosen.scores) < np.log(classifier.num_networks) + 0.05
    again = select(classifier, candidates, 6, batch="batchbald", seed=2)
    assert list(again.rows.index) == list(chosen.rows.index)
    with pytest.raises(InputError, match="'batchbald' picks by BALD's joint information"):
        select(classifier, candidates, 5, criterion="max_entropy", batch="batchbald")


def test_a_classifier_refuses_the_criteria_and_batch_of_a_regression_model(classifier, candidates):
    with pytest.raises(InputError, match="'variance' is not one for a classifier"):
        select(classifier, candidates, 5, criterion="variance")
    with pytest.raises(InputError, match="'greedy' is not one for a classifier"):
        select(classifier, candidates, 5, batch="greedy")
    assert len(select(classifier, candidates, 5, criterion="random").rows) == 5


@pytest.mark.parametrize("batch", ["greedy", "top"])
def test_bald_scores_only_the_rows_that_can_reach_the_pool_and_picks_what_scoring_all_picks(
    model, candidates, batch, monkeypatch
):
    """The pruned search (``top_bald``) keeps the pool that every row's score gives, so the batch is the same."""
    import sigmabnn.acquisition.regression as regression
    from sigmabnn.acquisition import candidate_scores, greedy_batch, top_scores

    monkeypatch.setattr(regression, "TOP_BALD_BLOCK", 16)
    chunks = (candidates.iloc[i : i + 100] for i in range(0, len(candidates), 100))
    got = select(model, chunks, 10, criterion="bald", batch=batch, pool_size=40)
    scores, means, aleatoric = candidate_scores(model, candidates, "bald")
    pool = np.sort(top_scores(scores, 40).indices)
    if batch == "top":
        expected = top_scores(scores, 10).indices
    else:
        expected = pool[greedy_batch(means[pool], aleatoric[pool], scores[pool], 10, "bald").indices]
    assert list(got.rows.index) == list(expected)
    assert np.allclose(got.rows["score"].iloc[0], scores[expected[0]], rtol=1e-10)
    assert got.num_candidates == 500 and 40 <= got.num_scored < 500


@pytest.mark.parametrize("criterion", ["bald", "variance", "epig"])
def test_a_chunk_is_scored_a_block_of_rows_at_a_time_with_the_same_choice(model, candidates, criterion, monkeypatch):
    module = importlib.import_module("sigmabnn.acquisition.select")
    whole = select(model, candidates, 10, criterion=criterion, pool_size=60)
    seen = []
    draw_components = module.draw_components
    monkeypatch.setattr(
        module, "draw_components", lambda f, x, **kw: seen.append(len(x)) or draw_components(f, x, **kw)
    )
    monkeypatch.setattr(module, "COMPONENTS_AT_ONCE", 37 * model.num_networks)  # 37-row blocks
    blocked = select(model, candidates, 10, criterion=criterion, pool_size=60)
    blocks = seen[1:] if criterion == "epig" else seen  # epig's first call: its targets, a sample of the chunk
    assert max(blocks) <= 37 and list(blocked.rows.index) == list(whole.rows.index)
    # every row once (bald: every row's bound, then its estimates for the rows whose bound reaches the pool)
    assert (
        sum(blocks) == len(candidates) if criterion != "bald" else len(candidates) < sum(blocks) <= 2 * len(candidates)
    )
    assert np.allclose(blocked.scores, whole.scores, rtol=1e-10)
