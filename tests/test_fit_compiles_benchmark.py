"""The compilation-log benchmark's own code: the parsing of JAX's messages and the totals per thread."""

from __future__ import annotations

import pytest
from tests.conftest import load_benchmark


def test_parse_compile_reads_function_and_seconds_and_ignores_other_messages():
    bench = load_benchmark("fit_compiles")
    message = "Finished XLA compilation of jit(chunk) in 4.560892820 sec"
    assert bench.parse_compile(message) == ("jit(chunk)", 4.56089282)
    assert bench.parse_compile("Finished XLA compilation of jit(<lambda>) in 2e-05 sec") == ("jit(<lambda>)", 2e-05)
    assert bench.parse_compile("Finished tracing + transforming jit(chunk) in 0.3 sec") is None
    assert bench.parse_compile("Compiling jit(chunk) with global shapes and types") is None


def test_summarize_splits_the_seconds_by_thread_and_finds_the_chunk():
    bench = load_benchmark("fit_compiles")
    compiles = [
        {"function": "jit(one)", "thread": "MainThread", "ended": 1.0, "seconds": 0.5},
        {"function": "jit(chunk)", "thread": "sigmabnn-compile", "ended": 9.0, "seconds": 4.0},
        {"function": "jit(add)", "thread": "MainThread", "ended": 2.0, "seconds": 0.25},
    ]
    out = bench.summarize(compiles, "MainThread")
    assert out["num_compilations"] == 3 and out["chunk_ready"] == 9.0
    assert out["sampler_compile_start"] == 5.0  # the other thread's first compilation: ended at 9 after 4 s
    assert out["calling_thread_seconds"] == pytest.approx(0.75) and out["other_threads_seconds"] == pytest.approx(4.0)
    alone = bench.summarize(compiles[:1], "MainThread")
    assert alone["chunk_ready"] is None and alone["sampler_compile_start"] is None


def test_an_unknown_table_is_one_line_and_exit_2(tmp_path, capsys):
    bench = load_benchmark("fit_compiles")
    assert bench.main(["--tables", "sin1d-100,nosuch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fit_compiles: unknown table 'nosuch'") and "\n" not in err
    assert not list(tmp_path.iterdir())  # nothing written


def test_threads_summary_compares_the_median_pairs():
    bench = load_benchmark("fit_compiles")
    out = bench.threads_summary([2.0, 1.0, 3.0, 2.2], [1.0, 1.2, 1.1, 5.0])
    assert out["sequential_median"] == pytest.approx(2.1) and out["threaded_median"] == pytest.approx(1.15)
    assert out["ratio"] == pytest.approx(1.15 / 2.1)
    text = bench.threads_markdown({"sequential_seconds": [1.0] * 4, **out})
    assert "over 4 pairs" in text and "ratio 0.55" in text


def test_the_committed_run_shows_where_the_noise_choice_delays_the_samplers_compilation():
    """The committed run: without validation rows (no noise choice) the sampler compiles beside the MAP fits, from
    the fit's first second; with them (smooth6d-300) its compilation starts after the choice's MAP fits."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "fit_compiles.json"
    cells = {c["table"]: c for c in json.loads(path.read_text())["cells"]}
    assert set(cells) == {"sin1d-100", "lin2d-120", "smooth6d-300"}
    for name in ("sin1d-100", "lin2d-120"):
        assert cells[name]["sampler_compile_start"] < 1.0
    late = cells["smooth6d-300"]
    assert late["sampler_compile_start"] > late["seconds"] / 3 and late["chunk_ready"] > late["sampler_compile_start"]
