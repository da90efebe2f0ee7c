"""Checkpoints: draws streamed to disk per chunk, commits, interrupt anywhere, resume bit for bit, hostile files."""

from __future__ import annotations

import json
import tracemalloc

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.errors import ModelFileError
from sigmabnn.io.checkpoint import CHECKPOINT_DIR, STATE_NAME, Checkpoint, has_checkpoint
from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import RunConfig, sample

SCALES = jnp.array([0.5, 2.0, 1.0])


def _ld(x, h):
    return -0.5 * h * jnp.sum((x / SCALES.astype(x.dtype)) ** 2)


def _gibbs(key, x, h):  # a real random update, so the hyperparameter draws depend on the keys
    return jax.random.gamma(key, 2.0 + x.shape[0] / 2) / (1.0 + 0.5 * jnp.sum((x / SCALES) ** 2))


def _sample(store=None, kernel="mh", **kw):
    config = RunConfig(**{"num_warmup": 40, "num_samples": 30, "chunk_size": 10, "thin": 2, **kw})
    algorithm = make_algorithm(kernel, num_integration_steps=3, max_tree_depth=4)
    return sample(
        jax.random.key(0), algorithm, _ld, jnp.zeros((2, 3)), jnp.asarray(1.0), config, gibbs_fn=_gibbs,
        progress=False, store=store,
    )  # fmt: skip


class _StopAt(Checkpoint):
    """A checkpoint whose run is interrupted (``KeyboardInterrupt``) right after the commit of ``stop``."""

    stop = -1

    def commit(self, iteration, state):
        super().commit(iteration, state)
        if iteration == self.stop:
            raise KeyboardInterrupt


def _assert_same_run(a, b):
    np.testing.assert_array_equal(np.asarray(a.positions), np.asarray(b.positions))
    np.testing.assert_array_equal(np.asarray(a.hyper), np.asarray(b.hyper))
    for name in a.info._fields:
        np.testing.assert_array_equal(np.asarray(getattr(a.info, name)), np.asarray(getattr(b.info, name)), name)
        np.testing.assert_array_equal(
            np.asarray(getattr(a.warmup_info, name)), np.asarray(getattr(b.warmup_info, name)), name
        )
    np.testing.assert_array_equal(np.asarray(a.adapted.step_size), np.asarray(b.adapted.step_size))
    np.testing.assert_array_equal(np.asarray(a.adapted.inverse_mass_matrix), np.asarray(b.adapted.inverse_mass_matrix))


@pytest.mark.parametrize(
    ("kernel", "stops"),
    [
        ("mh", [0]),  # before the first chunk
        ("mh", [20, 40, 70]),  # mid warm-up, at its end (before the final step size), mid sampling
        ("hmc", [30, 60]),
    ],
)
def test_interrupted_and_resumed_run_equals_uninterrupted_run(tmp_path, kernel, stops):
    reference = _sample(kernel=kernel)
    path = tmp_path / "m"
    _StopAt.create(path, {"what": "test"})
    for stop in stops:
        store = _StopAt.open(path)
        store.stop = stop
        with pytest.raises(KeyboardInterrupt):
            _sample(store, kernel=kernel)
        assert Checkpoint.open(path).iteration() == stop
    resumed = _sample(Checkpoint.open(path), kernel=kernel)
    _assert_same_run(reference, resumed)
    assert isinstance(resumed.positions, np.memmap)  # the draws stay on disk


def test_draws_are_on_disk_after_every_chunk_and_nothing_accumulates(tmp_path):
    """Each commit finds the chunk's draws in the file (read by a separate reader), before the run ends."""
    seen = []

    class Watch(Checkpoint):
        def commit(self, iteration, state):
            super().commit(iteration, state)
            kept = max(iteration - 40, 0) // 2
            on_disk = np.load(self.directory / "draws" / "positions.npy", mmap_mode="r")
            seen.append((kept, np.array(on_disk[:, :kept])))

    result = _sample(Watch.create(tmp_path / "m", {}))
    assert [k for k, _ in seen] == [0, 0, 0, 0, 0, 5, 10, 15, 20, 25, 30]
    final = np.asarray(result.positions)
    for kept, positions in seen:
        np.testing.assert_array_equal(positions, final[:, :kept])


def test_peak_memory_is_a_few_chunks_whatever_the_number_of_draws(tmp_path):
    """Host memory (tracemalloc: NumPy arrays included) stays at a few chunks of draws on disk; in memory it is all."""
    d, chunk = 5_000, 10
    chunk_bytes = 2 * chunk * d * 8

    def ld(x, h):
        return -0.5 * jnp.sum(x**2)

    def run(store, num_samples):
        return sample(
            jax.random.key(1), make_algorithm("mh"), ld, jnp.zeros((2, d)), None,
            RunConfig(num_warmup=0, num_samples=num_samples, chunk_size=chunk), progress=False, store=store,
        )  # fmt: skip

    def peak(store, num_samples):
        tracemalloc.start()
        try:
            run(store, num_samples)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    run(None, 20)  # compile outside the measurements
    disk = {n: peak(Checkpoint.create(tmp_path / f"m{n}", {}), n) for n in (50, 150)}
    memory = peak(None, 150)
    assert memory >= 2 * 150 * d * 8  # the in-memory store holds every draw (and the measurement sees it)
    assert disk[50] < 4 * chunk_bytes and disk[150] < 4 * chunk_bytes, (disk, chunk_bytes)


def test_a_failed_commit_leaves_the_previous_one(tmp_path, monkeypatch):
    path = tmp_path / "m"
    store = _StopAt.create(path, {})
    store.stop = 20
    with pytest.raises(KeyboardInterrupt):
        _sample(store)
    before = (path / CHECKPOINT_DIR / STATE_NAME).read_bytes()

    def broken_savez(f, **arrays):
        f.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt  # killed in the middle of writing the next commit

    monkeypatch.setattr(np, "savez", broken_savez)
    with pytest.raises(KeyboardInterrupt):
        _sample(Checkpoint.open(path))
    monkeypatch.undo()
    assert (path / CHECKPOINT_DIR / STATE_NAME).read_bytes() == before
    assert not [p for p in (path / CHECKPOINT_DIR).iterdir() if p.name.startswith(".")]  # no temporary left
    _assert_same_run(_sample(), _sample(Checkpoint.open(path)))


def test_create_refuses_an_unfinished_run_and_open_refuses_a_finished_model(tmp_path):
    path = tmp_path / "m"
    Checkpoint.create(path, {})
    assert has_checkpoint(path)
    with pytest.raises(ModelFileError, match="--resume"):
        Checkpoint.create(path, {})
    finished = tmp_path / "done"
    finished.mkdir()
    (finished / "model.json").write_text("{}")
    with pytest.raises(ModelFileError, match="finished model"):
        Checkpoint.open(finished)
    with pytest.raises(ModelFileError, match="no training checkpoint"):
        Checkpoint.open(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ModelFileError, match="not a model"):
        Checkpoint.create(other, {})
    assert (other / "notes.txt").read_text() == "mine"


def _started(tmp_path):
    path = tmp_path / "m"
    store = _StopAt.create(path, {})
    store.stop = 60
    with pytest.raises(KeyboardInterrupt):
        _sample(store)
    return path


def _corrupt_state(path, arrays):
    with open(path / CHECKPOINT_DIR / STATE_NAME, "wb") as f:
        np.savez(f, **arrays)


@pytest.mark.parametrize(
    "damage",
    [
        "truncated_state",
        "pickled_state",
        "absurd_state",
        "no_iteration",
        "non_json_run",
        "wrong_format",
        "wrong_shape_array",
        "truncated_array",
        "missing_array",
        "wrong_state_shape",
    ],
)
def test_damaged_checkpoints_give_one_line_errors(tmp_path, damage):
    path = _started(tmp_path)
    ck = path / CHECKPOINT_DIR
    state = ck / STATE_NAME
    if damage == "truncated_state":
        state.write_bytes(state.read_bytes()[:200])
    elif damage == "pickled_state":
        _corrupt_state(path, {"iteration": np.int64(60), "state.0": np.array([object()], dtype=object)})
    elif damage == "absurd_state":
        raw = bytearray(state.read_bytes())
        i = raw.find(b"'shape': (")
        raw[i + 10 : i + 11] = b"9"  # a leading 9: a declared size far beyond the file
        state.write_bytes(bytes(raw))
    elif damage == "no_iteration":
        _corrupt_state(path, {"state.0": np.zeros(2)})
    elif damage == "non_json_run":
        (ck / "run.json").write_bytes(b"\x80\x04 not json")
    elif damage == "wrong_format":
        (ck / "run.json").write_text(json.dumps({"format": "sigmabnn-checkpoint", "format_version": 99}))
    elif damage == "wrong_shape_array":
        np.save(ck / "draws" / "positions.npy", np.zeros((2, 31, 3)))
    elif damage == "truncated_array":
        p = ck / "draws" / "positions.npy"
        p.write_bytes(p.read_bytes()[:-8])
    elif damage == "missing_array":
        (ck / "draws" / "positions.npy").unlink()
    elif damage == "wrong_state_shape":
        restored = Checkpoint.open(path).restore()[1]
        restored["state.0"] = np.zeros((5, 5))
        _corrupt_state(path, {"iteration": np.int64(60), **restored})
    with pytest.raises(ValueError) as err:  # ModelFileError is a ValueError too
        _sample(Checkpoint.open(path))
    assert "\n" not in str(err.value) and str(err.value)
