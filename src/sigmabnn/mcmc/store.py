"""Where the runner's draws go, chunk by chunk: the :class:`RunStore` protocol and its in-memory default.

Every chunk ends in a *commit*: the chunk's kept draws (and warm-up records) are written to
preallocated arrays ``[C, S, ...]`` and the chains' complete state is recorded with the number of
iterations done. :class:`MemoryStore` keeps the arrays in memory and discards commits;
:class:`sigmabnn.io.checkpoint.Checkpoint` writes them to disk, so draws never accumulate in
memory and a killed run can be resumed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.mcmc.algorithm import ChainState, IterationInfo

ArraySpecs = Mapping[str, tuple[tuple[int, ...], np.dtype]]


class RunStore(Protocol):
    """Where :func:`sigmabnn.mcmc.run.sample` puts its draws and commits its state, chunk by chunk.

    Array names: ``positions`` ``[C, S, d]``, ``hyper.<i>`` (leaves of the hyperparameters)
    ``[C, S, ...]``, ``info.<field>`` ``[C, S]`` and ``warmup.<field>`` ``[C, num_warmup]``
    (:class:`~sigmabnn.mcmc.algorithm.IterationInfo` fields). State names: ``state.<i>`` (leaves
    of the :class:`~sigmabnn.mcmc.algorithm.ChainState` ``[C, ...]``).
    """

    def allocate(self, specs: ArraySpecs) -> None:
        """Provide arrays of the given ``{name: (shape, dtype)}`` (create, or check existing ones)."""

    def write(self, name: str, start: int, values: np.ndarray) -> None:
        """``array[name][:, start : start + values.shape[1]] = values``."""

    def read(self, name: str) -> np.ndarray:
        """The whole array ``name``."""

    def commit(self, iteration: int, state: dict[str, np.ndarray]) -> None:
        """Record that ``iteration`` iterations are done, every write so far included, and the chains' state."""

    def restore(self) -> tuple[int, dict[str, np.ndarray]] | None:
        """The last commit ``(iteration, state)``, or ``None`` for a fresh run."""


class MemoryStore:
    """The default :class:`RunStore`: arrays in memory, commits discarded.

    Args:
        commit: ``(iteration, state)`` the run resumes from (e.g. the chains at the end of a warm-up
            run elsewhere, :func:`sigmabnn.mcmc.run.warm_up`); ``None``: a fresh run.
    """

    def __init__(self, commit: tuple[int, dict[str, np.ndarray]] | None = None) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.start = commit

    def allocate(self, specs: ArraySpecs) -> None:
        self.arrays = {name: np.zeros(shape, dtype) for name, (shape, dtype) in specs.items()}

    def write(self, name: str, start: int, values: np.ndarray) -> None:
        self.arrays[name][:, start : start + values.shape[1]] = values

    def read(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def commit(self, iteration: int, state: dict[str, np.ndarray]) -> None:
        pass

    def restore(self) -> tuple[int, dict[str, np.ndarray]] | None:
        return self.start


def state_arrays(chains: ChainState) -> dict[str, np.ndarray]:
    """The chains' state as the commit's ``{"state.<i>": leaf}``."""
    return {f"state.{i}": np.asarray(leaf) for i, leaf in enumerate(jax.tree_util.tree_leaves(chains))}


def restore_chains(template: Any, state: Mapping[str, np.ndarray]) -> ChainState:
    """The chains from a commit's state, checked leaf by leaf against ``template`` (shapes and dtypes)."""
    leaves, treedef = jax.tree_util.tree_flatten(template)
    if set(state) != {f"state.{i}" for i in range(len(leaves))}:
        raise ValueError("the checkpointed chain state does not match this run (different sampler settings?)")
    restored = []
    for i, spec in enumerate(leaves):
        a = np.asarray(state[f"state.{i}"])
        if a.shape != tuple(spec.shape) or a.dtype != spec.dtype:
            raise ValueError(
                f"the checkpointed chain state does not match this run: state.{i} is {a.dtype}{list(a.shape)}, "
                f"expected {spec.dtype}{list(spec.shape)}"
            )
        restored.append(jnp.asarray(a))
    return jax.tree_util.tree_unflatten(treedef, restored)


def write_piece(store: RunStore, prefix: str, start: int, tree: Any) -> None:
    """Write a ``[t, C, ...]`` pytree piece as ``[C, t, ...]`` slices of the arrays ``prefix.<i>``."""
    leaves = jax.tree_util.tree_leaves(tree)
    names = tree._fields if isinstance(tree, IterationInfo) else [str(i) for i in range(len(leaves))]
    for name, leaf in zip(names, leaves):
        store.write(f"{prefix}.{name}", start, np.swapaxes(leaf, 0, 1))


def store_specs(out: Any, num_warmup: int, num_samples: int) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Array specs from the chunk function's output shapes ``(positions, hyper, info)`` ``[T, C, ...]``."""

    def spec(leaf, length):
        return (int(leaf.shape[1]), length) + tuple(int(n) for n in leaf.shape[2:]), np.dtype(leaf.dtype)

    positions, hyper, info = out
    specs = {"positions": spec(positions, num_samples)}
    specs.update({f"hyper.{i}": spec(leaf, num_samples) for i, leaf in enumerate(jax.tree_util.tree_leaves(hyper))})
    specs.update({f"info.{name}": spec(leaf, num_samples) for name, leaf in zip(info._fields, info)})
    specs.update({f"warmup.{name}": spec(leaf, num_warmup) for name, leaf in zip(info._fields, info)})
    return specs


def read_records(store: RunStore, prefix: str) -> IterationInfo:
    """The ``prefix.<field>`` arrays as an :class:`IterationInfo` (NumPy copies)."""
    return IterationInfo(*(np.array(store.read(f"{prefix}.{name}")) for name in IterationInfo._fields))
