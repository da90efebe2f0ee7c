"""The ChEES warm-up trace benchmark: its estimate of log T from the recorded steps, its split of T's change
into window-end rescalings and in-window steps, and the page's claims against its committed JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import load_benchmark

from sigmabnn.mcmc.chees import halton


def _steps(log_t: np.ndarray, eps: np.ndarray) -> np.ndarray:
    u = np.array([float(halton(i)) for i in range(len(log_t))])
    return np.ceil(u * np.exp(log_t) / eps).astype(int)


def test_log_trajectory_recovers_the_length_from_the_jittered_step_counts():
    bench = load_benchmark("chees_warmup")
    n = 200
    log_t = np.linspace(-2.0, 1.0, n)
    eps = np.full(n, 1e-3)
    est = bench.log_trajectory(_steps(log_t, eps), eps)
    u = np.array([float(halton(i)) for i in range(n)])
    assert np.all(np.isnan(est[u < bench.MIN_JITTER])) and np.all(np.isfinite(est[u >= bench.MIN_JITTER]))
    ok = np.isfinite(est)
    # ceil adds less than one step: at least 33 steps here, so under 3 % of T
    assert np.all(est[ok] >= log_t[ok] - 1e-9) and np.all(est[ok] - log_t[ok] < 0.031)


def test_summarise_splits_the_change_of_log_t_into_window_ends_and_in_window_steps():
    """log T flat at -5 for 100 iterations, +4 at the first window end, then climbing 0.01 per iteration
    through two windows (with +0.5 at the second end) and -1 at the last end, flat in the terminal buffer."""
    bench = load_benchmark("chees_warmup")
    w, ends = 300, [99, 149, 249]
    log_t = np.full(w, -5.0)
    log_t[100:150] = -1.0 + 0.01 * np.arange(50)
    log_t[150:250] = log_t[149] + 0.5 + 0.01 * np.arange(1, 101)
    log_t[250:] = log_t[249] - 1.0
    eps = np.full(w, 1e-4)
    eps[100:] = 1e-2
    sample_ld = np.stack([np.linspace(0.0, 10.0, 125), np.linspace(0.0, 14.0, 125)])
    out = bench.summarise(_steps(log_t, eps), eps, ends, np.full(125, 50), sample_ld, (0.01, 0.5))
    # each edge is the median of 10 estimates spanning about 13 iterations, so at a slope of 0.01 it sits up to
    # about 0.07 inside its segment; two edges per window end, three ends
    assert out["log_t_change_at_window_ends"] == pytest.approx(4.0 + 0.5 - 1.0, abs=0.45)
    assert out["log_t_change_inside_windows"] == pytest.approx(0.01 * (50 + 100), abs=0.45)
    total = out["log_t_end"] - out["log_t_start"]
    assert out["log_t_change_at_window_ends"] + out["log_t_change_inside_windows"] == pytest.approx(total, abs=1e-9)
    assert out["slope_last_window"] == pytest.approx(0.01, abs=1e-3)
    assert out["slope_over_cap"] == pytest.approx(0.01 / bench.LEARNING_RATE, abs=0.05)
    assert out["last_window"] == [150, 249]
    assert out["step_size_before_first_update"] == pytest.approx(1e-4)
    assert out["step_size_after_first_update"] == pytest.approx(1e-2)
    assert out["adapted_steps"] == pytest.approx(50.0)
    per_chain = [10.0 * (100 / 124), 14.0 * (100 / 124)]  # last 25 minus first 25 draws of a straight line
    assert out["ld_trend"] == pytest.approx(np.mean(per_chain))


def test_an_unknown_table_is_one_line_and_exit_2(tmp_path, capsys):
    bench = load_benchmark("chees_warmup")
    assert bench.main(["--tables", "energy,nosuch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("chees_warmup: unknown table 'nosuch'") and "\n" not in err
    assert not list(tmp_path.iterdir())


def _cells() -> dict[str, dict]:
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "chees_warmup.json"
    if not path.exists():
        pytest.skip("benchmarks/results/chees_warmup.json is not committed")
    return {c["table"]: c for c in json.loads(path.read_text())["cells"]}


def test_the_docstrings_claims_hold_in_the_committed_json():
    cells = _cells()
    hetero = {t for t, c in cells.items() if c["likelihood"] == "hetero_student_t"}
    assert hetero == {"steep6d-300", "energy"}
    for t, c in cells.items():
        ratio = c["step_size_after_first_update"] / c["step_size_before_first_update"]
        flat = abs(c["log_t_before_first_update"] - c["log_t_start"])
        if t in hetero:  # 40 to 75 times smaller before the first update, log T where it started
            assert 40 <= ratio <= 75 and flat <= 0.05, (t, ratio, flat)
        else:
            assert ratio <= 4 and c["log_t_before_first_update"] > c["log_t_start"], (t, ratio)
        assert 0.14 <= round(c["slope_over_cap"], 2) <= 0.43, (t, c["slope_over_cap"])  # still climbing
        assert abs(c["ld_trend"]) < 2 * c["ld_trend_se"], t
    assert max(cells, key=lambda t: cells[t]["slope_over_cap"]) == "steep6d-300"
    e = cells["energy"]
    assert e["log_t_change_at_window_ends"] == pytest.approx(3.4, abs=0.05)
    assert e["log_t_change_inside_windows"] == pytest.approx(0.65, abs=0.05)
    others = [c["adapted_steps"] for t, c in cells.items() if t != "energy"]
    assert round(e["adapted_steps"]) == 78 and 124 <= min(others) and round(max(others)) <= 183
    assert max(abs(c["ld_trend"]) / c["ld_trend_se"] for c in cells.values()) == pytest.approx(
        abs(cells["lin2d-120"]["ld_trend"]) / cells["lin2d-120"]["ld_trend_se"]
    )
    assert not any(math.isnan(c["slope_last_window"]) for c in cells.values())
