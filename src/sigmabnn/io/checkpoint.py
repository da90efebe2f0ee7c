"""Checkpoints: a training run's draws streamed to disk and its resumable state, inside the model directory.

While a model is being trained with a checkpoint, its directory holds::

    MODEL/checkpoint/run.json        what the run is: format "sigmabnn-checkpoint", version 1, and the
                                     caller's record (fit arguments, data fingerprint, source path, ...)
    MODEL/checkpoint/draws/<name>.npy one preallocated array per name, [C, S, ...] (positions, hyper-
                                     parameters, per-draw records, warm-up records), filled chunk by
                                     chunk through a memory map: draws never accumulate in memory
    MODEL/checkpoint/state.npz       the commit: iterations done and the chains' complete state
    MODEL/checkpoint/<extra>.npz     other saved results (the MAP starts, so a resumed run skips MAP)
    MODEL/model.json, arrays.npz     only after an interruption: a partial model (see model_file)

The commit protocol makes every instant safe. After a chunk, its slices are
written into the memory maps and flushed, then ``state.npz`` is replaced
atomically (write, fsync, rename). A kill at any instant therefore leaves the
previous or the new commit; slices written after the last commit are ignored
and rewritten, identically, when the run resumes. The finished model replaces
the whole directory (checkpoint included) atomically.

The files are read as untrusted: ``run.json`` is size-limited strict JSON;
every ``.npy`` header (member of ``state.npz`` or memory-mapped array) is
checked against its file size before anything is allocated, never unpickled,
and the arrays are checked against the shapes the run expects.
"""

from __future__ import annotations

import json
import math
import os
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from sigmabnn.draws import PosteriorDraws
from sigmabnn.errors import ModelFileError
from sigmabnn.io.atomic import atomic_directory, atomic_write, atomic_write_json, fsync_directory
from sigmabnn.io.npy import read_npy_header
from sigmabnn.model.posterior import Hyperparameters

__all__ = ["CHECKPOINT_DIR", "Checkpoint", "TrainingInterrupted", "has_checkpoint"]

CHECKPOINT_DIR = "checkpoint"
FORMAT_NAME = "sigmabnn-checkpoint"
FORMAT_VERSION = 1
RUN_NAME = "run.json"
STATE_NAME = "state.npz"
DRAWS_DIR = "draws"
MAX_RUN_BYTES = 2**20
MAX_ARRAY_BYTES = 2**40
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.]{0,127}$")


class TrainingInterrupted(KeyboardInterrupt):
    """A checkpointed run was interrupted; its partial model and checkpoint are at :attr:`path`.

    Attributes:
        path: the model directory (resume it with ``sigmabnn train --resume PATH``).
        training: how far it got (:class:`~sigmabnn.fitting.report.TrainingProgress`: ``phase``,
            ``iterations_done``, ``iterations_planned``, ``draws_done``, ``draws_planned``; draws per chain).
        cause: what stopped it (``"SIGINT"``, ``"SIGTERM"``).
    """

    def __init__(self, path: str, training: Any, cause: str = "SIGINT") -> None:
        super().__init__(f"training interrupted ({cause}) at {path}")
        self.path = path
        self.training = training
        self.cause = cause


def has_checkpoint(model_path: str | os.PathLike[str]) -> bool:
    """Whether ``model_path`` holds the checkpoint of an unfinished run."""
    return (Path(model_path) / CHECKPOINT_DIR / RUN_NAME).is_file()


def _fail(message: str) -> ModelFileError:
    return ModelFileError(" ".join(str(message).split()))


def _check_name(name: str) -> str:
    if not _NAME.match(name) or ".." in name:
        raise ValueError(f"invalid checkpoint array name {name!r}")
    return name


def _npy_header(f: Any, where: str) -> tuple[tuple[int, ...], np.dtype, int]:
    """Shape, dtype and data offset of a ``.npy`` stream, parsed without allocating or unpickling."""
    shape, fortran, dtype, offset = read_npy_header(f, where)
    if dtype.hasobject or fortran:
        raise _fail(f"{where}: object or Fortran-ordered arrays are not accepted")
    return shape, dtype, offset


def _load_npz(path: Path) -> dict[str, np.ndarray]:
    """The members of a small ``.npz`` written by this module, each checked against its size first."""
    try:
        with zipfile.ZipFile(path) as zf:
            out = {}
            for info in zf.infolist():
                name = info.filename[:-4] if info.filename.endswith(".npy") else ""
                _check_name(name)
                with zf.open(info) as f:
                    shape, dtype, offset = _npy_header(f, f"{path.name}:{name}")
                    nbytes = dtype.itemsize * math.prod(shape)
                    if info.file_size != offset + nbytes:
                        raise _fail(f"{path}: member {name!r} does not match its declared shape")
                    data = f.read(nbytes)
                if len(data) != nbytes:
                    raise _fail(f"{path}: member {name!r} is truncated")
                out[name] = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
            return out
    except ModelFileError:
        raise
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as err:
        raise _fail(f"cannot read {path}: {type(err).__name__}: {err}") from None


def _save_npz(path: Path, arrays: Mapping[str, Any]) -> None:
    for name in arrays:
        _check_name(name)
    atomic_write(path, lambda f: np.savez(f, **{k: np.asarray(v) for k, v in arrays.items()}))


class Checkpoint:
    """The checkpoint of one training run in ``MODEL/checkpoint/``; a :class:`~sigmabnn.mcmc.run.RunStore`.

    Create it with :meth:`create` (fresh run) or :meth:`open` (resume). ``record`` is the
    JSON object the run was created with.
    """

    def __init__(self, model_path: str | os.PathLike[str], record: dict[str, Any]) -> None:
        self.model_path = Path(model_path)
        self.directory = self.model_path / CHECKPOINT_DIR
        self.record = record
        self._arrays: dict[str, np.memmap] = {}

    # ------------------------------------------------------------------ creating and opening

    @classmethod
    def create(cls, model_path: str | os.PathLike[str], record: Mapping[str, Any]) -> Checkpoint:
        """Start a run at ``model_path``: a new directory (replacing a finished model there) holding ``run.json``.

        Raises :class:`~sigmabnn.errors.ModelFileError` if ``model_path`` holds an unfinished run
        (resume it or remove it) or something that is not a model.
        """
        path = Path(model_path)
        if has_checkpoint(path):
            raise _fail(f"{path} holds an interrupted training run; continue it with 'sigmabnn train --resume {path}'")
        if path.exists() and (not path.is_dir() or (any(path.iterdir()) and not (path / "model.json").is_file())):
            raise _fail(f"refusing to replace {path}: it exists and is not a model")
        full = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, **dict(record)}
        text = json.dumps(full, indent=1, allow_nan=False) + "\n"
        with atomic_directory(path) as tmp:
            (tmp / CHECKPOINT_DIR / DRAWS_DIR).mkdir(parents=True)
            (tmp / CHECKPOINT_DIR / RUN_NAME).write_text(text, encoding="utf-8")
        return cls(path, full)

    @classmethod
    def open(cls, model_path: str | os.PathLike[str]) -> Checkpoint:
        """The checkpoint at ``model_path`` (:class:`~sigmabnn.errors.ModelFileError` if none or corrupt)."""
        path = Path(model_path)
        run = path / CHECKPOINT_DIR / RUN_NAME
        if not path.is_dir():
            raise _fail(f"model not found: {path}")
        if not run.is_file():
            if (path / "model.json").is_file():
                raise _fail(f"{path} is a finished model; there is nothing to resume")
            raise _fail(f"{path} holds no training checkpoint to resume")
        size = run.stat().st_size
        if size > MAX_RUN_BYTES:
            raise _fail(f"{run} is too large ({size} bytes) for a checkpoint record")
        try:
            record = json.loads(run.read_bytes().decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as err:
            raise _fail(f"{run} is not valid JSON: {err}") from None
        if not isinstance(record, dict) or record.get("format") != FORMAT_NAME:
            raise _fail(f"{run} is not a sigmabnn checkpoint record")
        if record.get("format_version") != FORMAT_VERSION:
            raise _fail(
                f"unsupported checkpoint format_version {record.get('format_version')!r} "
                f"(this sigmabnn reads version {FORMAT_VERSION})"
            )
        return cls(path, record)

    # ------------------------------------------------------------------ RunStore

    def _path(self, name: str) -> Path:
        return self.directory / DRAWS_DIR / f"{_check_name(name)}.npy"

    def allocate(self, specs: Mapping[str, tuple[tuple[int, ...], np.dtype]]) -> None:
        """Create the arrays (fresh run: no commit yet) or map and check the existing ones (resume)."""
        fresh = not (self.directory / STATE_NAME).is_file()
        (self.directory / DRAWS_DIR).mkdir(parents=True, exist_ok=True)
        arrays = {}
        for name, (shape, dtype) in specs.items():
            shape, dtype = tuple(int(n) for n in shape), np.dtype(dtype)
            if dtype.itemsize * math.prod(shape) > MAX_ARRAY_BYTES:
                raise ValueError(f"checkpoint array {name!r} of shape {list(shape)} is too large")
            path = self._path(name)
            if fresh:
                arrays[name] = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
            else:
                arrays[name] = self._map_existing(path, name, shape, dtype)
        if fresh:
            fsync_directory(self.directory / DRAWS_DIR)
        self._arrays = arrays

    def _map_existing(self, path: Path, name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.memmap:
        if not path.is_file():
            raise _fail(f"the checkpoint in {self.model_path} lacks its array {name!r}")
        with open(path, "rb") as f:
            got_shape, got_dtype, offset = _npy_header(f, f"checkpoint array {name!r}")
        if got_shape != shape or got_dtype != dtype:
            raise _fail(
                f"the checkpoint in {self.model_path} does not match this run: array {name!r} is "
                f"{got_dtype.str}{list(got_shape)}, expected {dtype.str}{list(shape)}"
            )
        if path.stat().st_size != offset + dtype.itemsize * math.prod(shape):
            raise _fail(f"checkpoint array {name!r} in {self.model_path} is truncated")
        return np.load(path, mmap_mode="r+", allow_pickle=False)

    def write(self, name: str, start: int, values: np.ndarray) -> None:
        self._arrays[name][:, start : start + values.shape[1]] = values

    def read(self, name: str) -> np.ndarray:
        return self._arrays[name]

    def commit(self, iteration: int, state: dict[str, np.ndarray]) -> None:
        """Flush the arrays, then replace ``state.npz`` atomically (the commit point)."""
        for a in self._arrays.values():
            a.flush()
        _save_npz(self.directory / STATE_NAME, {"iteration": np.int64(iteration), **state})

    def restore(self) -> tuple[int, dict[str, np.ndarray]] | None:
        path = self.directory / STATE_NAME
        if not path.is_file():
            return None
        state = _load_npz(path)
        iteration = state.pop("iteration", None)
        if iteration is None or iteration.shape != () or iteration.dtype != np.int64:
            raise _fail(f"{path} lacks its iteration count")
        return int(iteration), state

    # ------------------------------------------------------------------ other saved results

    def save_arrays(self, name: str, arrays: Mapping[str, Any]) -> None:
        """Save a small set of named arrays as ``<name>.npz`` (atomically)."""
        _save_npz(self.directory / f"{_check_name(name)}.npz", arrays)

    def load_arrays(self, name: str) -> dict[str, np.ndarray] | None:
        """The arrays saved under ``name``, or ``None``."""
        path = self.directory / f"{_check_name(name)}.npz"
        return _load_npz(path) if path.is_file() else None

    def has_arrays(self) -> bool:
        """Whether the draw arrays exist (the run got past MAP to its first commit)."""
        return (self.directory / STATE_NAME).is_file()

    def _committed_array(self, name: str) -> np.ndarray:
        if name in self._arrays:
            return self._arrays[name]
        path = self._path(name)
        with open(path, "rb") as f:
            shape, dtype, offset = _npy_header(f, f"checkpoint array {name!r}")
        if path.stat().st_size != offset + dtype.itemsize * math.prod(shape):
            raise _fail(f"checkpoint array {name!r} in {self.model_path} is truncated")
        return np.load(path, mmap_mode="r", allow_pickle=False)

    def committed_draws(
        self, num_draws: int, num_chains: int, num_params: int, num_groups: int, dtype: str
    ) -> PosteriorDraws:
        """The first ``num_draws`` committed draws of a BNN run (memory-mapped; empty before sampling)."""
        if num_draws == 0 or not self.has_arrays():
            per_layer = np.zeros((num_chains, 0, num_groups), dtype)
            return PosteriorDraws(
                positions=np.zeros((num_chains, 0, num_params), dtype),
                hyper=Hyperparameters(np.zeros((num_chains, 0), dtype), per_layer, per_layer),
            )
        leaves = [self._committed_array(f"hyper.{i}")[:, :num_draws] for i in range(len(Hyperparameters._fields))]
        return PosteriorDraws(self._committed_array("positions")[:, :num_draws], Hyperparameters(*leaves))

    def iteration(self) -> int:
        """Iterations committed (0 before the first commit)."""
        restored = self.restore()
        return 0 if restored is None else restored[0]

    def update_record(self, **entries: Any) -> None:
        """Merge ``entries`` into ``run.json`` (atomically)."""
        self.record = {**self.record, **entries}
        atomic_write_json(self.directory / RUN_NAME, self.record, indent=1)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")
