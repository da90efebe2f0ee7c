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


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the repository (or ``$SIGMABNN_SHARED/data``); skips when absent."""
    path = _shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path}: clone ../shared beside the repository to run this test")
    return path
