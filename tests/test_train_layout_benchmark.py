"""The layout benchmark's own code: its leapfrog cell, and a smoke run that leaves the committed results alone."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest
from tests.conftest import load_benchmark

_BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def benchmarks_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(_BENCHMARKS))  # the scripts import each other as top-level modules


def test_leapfrog_loop_is_the_leapfrog_integrator(benchmarks_on_path):
    """On a harmonic oscillator (grad = -q) the loop equals a plain numpy leapfrog and follows the flow p cos t."""
    import jax.numpy as jnp

    core = load_benchmark("core_gradient")
    p = np.array([1.0, -0.5, 2.0])
    got = np.asarray(core.leapfrog_loop(lambda q: -q, 1000)(jnp.asarray(p)))
    q, m = p.copy(), np.zeros(3)
    for _ in range(1000):
        m = m + 0.0005 * -q
        q = q + 0.001 * m
        m = m + 0.0005 * -q
    np.testing.assert_allclose(got, q, rtol=1e-9)
    assert not np.allclose(got, p, atol=0.1)  # one time unit later: the positions have moved (cos 1)
    np.testing.assert_allclose(got, p * np.cos(1.0), rtol=1e-5)  # the exact flow, to the integrator's O(h^2)


def test_smoke_run_writes_beside_the_results_not_over_them(benchmarks_on_path, tmp_path, monkeypatch):
    bench = load_benchmark("train_layout")
    results = tmp_path / "results"
    monkeypatch.setattr(bench._results, "RESULTS_DIR", results)
    monkeypatch.setattr(bench, "SMOKE_DIR", tmp_path / "smoke")
    try:
        assert bench.main(["--smoke"]) == 0
    finally:  # the float32 cell switches JAX's x64 flag off; the suite runs under sigmabnn's float64 policy
        jax.config.update("jax_enable_x64", True)
    assert not results.exists()
    out = json.loads((tmp_path / "smoke" / "train_layout.json").read_text())
    layouts = {(r["head"], r["layout"]) for r in out["records"]}
    assert layouts == {(h, lay) for h in ("gaussian", "hetero_student_t") for lay in ("points_first", "points_last")}
    assert all(r["max_rel_grad_diff"] < 1e-4 for r in out["records"])  # both layouts: the same gradient
    assert (tmp_path / "smoke" / "train_layout.md").is_file()
