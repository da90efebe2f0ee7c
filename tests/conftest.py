"""Shared test fixtures: where the shared data sets live, and a skip when absent."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[1]


def _share_compiled_functions() -> None:
    """Point JAX's persistent compilation cache at one directory for the whole run.

    Most of the suite's time is XLA compiling the same small programs again: in every xdist
    worker, in every fit that builds its functions afresh, and in every subprocess a CLI test
    starts. Set through the environment before JAX is imported, so that subprocesses and dask
    workers share it. A cached executable is the one XLA compiled for the same program, so
    results are unchanged; only compile time is saved. ``SIGMABNN_TEST_JAX_CACHE`` names another
    directory, or ``off`` disables it. The directory is emptied when it passes 2 GB.
    """
    choice = os.environ.get("SIGMABNN_TEST_JAX_CACHE", str(_REPO / ".pytest_cache" / "jax-compilation-cache"))
    if choice.lower() in {"off", "0", "no", "false", ""}:
        return
    path = Path(choice)
    if "PYTEST_XDIST_WORKER" not in os.environ and path.is_dir():  # the controller, before any worker starts
        if sum(f.stat().st_size for f in path.iterdir() if f.is_file()) > 2 * 1024**3:
            shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(path))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.1")


_share_compiled_functions()

import sigmabnn.dtypes  # noqa: E402, F401  (switch on the float policy before any test builds arrays)


def _shared_data_dir() -> Path:
    env = os.environ.get("SIGMABNN_SHARED")
    base = Path(env) if env else _REPO.parent / "shared"
    return base / "data"


def load_benchmark(name: str):
    """The script ``benchmarks/<name>.py`` as a module (tests of a benchmark's own code)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"{name}_benchmark", _REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the repository (or ``$SIGMABNN_SHARED/data``); skips when absent."""
    path = _shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path}: clone ../shared beside the repository to run this test")
    return path


@pytest.fixture
def nlo_fit_kwargs(monkeypatch):
    """``capture(**overrides) -> FitSpec``: the spec :func:`sigmabnn.workflows.nlo.train_process` fits.

    ``api.run_fit`` is replaced by a stub that records the spec and stops the run, so the
    recommended configuration's wiring is checked without training.
    """
    import pandas as pd

    import sigmabnn.api
    from sigmabnn.workflows import nlo

    class Stop(Exception):
        pass

    seen: list = []

    def fake_run_fit(data, spec, **kwargs):
        seen.append(spec)
        raise Stop

    monkeypatch.setattr(sigmabnn.api, "run_fit", fake_run_fit)

    def capture(**overrides):
        with pytest.raises(Stop):
            nlo.train_process(0, data=pd.DataFrame({"split": []}), **overrides)
        return seen[-1]

    return capture
