"""benchmarks/README.md indexes every benchmark script: a reader finds each one, what it measures and how to run it."""

from __future__ import annotations

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_every_benchmark_script_is_described_in_the_index_with_its_command():
    index = (BENCHMARKS / "README.md").read_text()
    scripts = sorted(p.name for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))
    assert len(scripts) > 40
    assert [s for s in scripts if f"`{s}`" not in index] == []  # named where it is described
    assert [s for s in scripts if f"python benchmarks/{s}" not in index] == []  # and how it runs
