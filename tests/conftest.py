"""Shared test fixtures: where the shared data sets live, and a skip when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sigmabnn.dtypes  # noqa: F401  (switch on the float policy before any test builds arrays)

_REPO = Path(__file__).resolve().parents[1]


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
