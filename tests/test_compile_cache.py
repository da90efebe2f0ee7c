"""The persistent cache of compiled code: where it lives, how it is turned on, and that it caches code, not data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sigmabnn import compile_cache

TINY = ["--chains", "2", "--warmup", "30", "--draws", "20", "--arch", "2-6-1", "--seed", "3", "-q"]


def test_the_directory_follows_the_environment(tmp_path):
    assert compile_cache.cache_dir({"SIGMABNN_CACHE_DIR": str(tmp_path)}) == tmp_path
    for off in ("off", "OFF", "0", "", " none ", "false"):
        assert compile_cache.cache_dir({"SIGMABNN_CACHE_DIR": off}) is None
    assert compile_cache.cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "sigmabnn" / "jax"
    assert compile_cache.cache_dir({}) == Path.home() / ".cache" / "sigmabnn" / "jax"


def test_the_command_line_hands_jax_its_settings_through_the_environment(tmp_path):
    env = {"SIGMABNN_CACHE_DIR": str(tmp_path / "c")}
    assert compile_cache.enable_for_process(env) == tmp_path / "c" and (tmp_path / "c").is_dir()
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "c")
    assert float(env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]) == 0.0  # every compilation kept
    assert int(env["JAX_COMPILATION_CACHE_MAX_SIZE"]) == compile_cache.MAX_BYTES
    own = {"JAX_COMPILATION_CACHE_DIR": "/somewhere/else", "SIGMABNN_CACHE_DIR": str(tmp_path)}
    assert compile_cache.enable_for_process(own) == Path("/somewhere/else")  # the user's own choice stays
    assert "JAX_COMPILATION_CACHE_MAX_SIZE" not in own
    off = {"SIGMABNN_CACHE_DIR": "off"}
    assert compile_cache.enable_for_process(off) is None and off == {"SIGMABNN_CACHE_DIR": "off"}
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    blocked = {"SIGMABNN_CACHE_DIR": str(blocker / "cache")}  # cannot be created: the cache stays off
    assert compile_cache.enable_for_process(blocked) is None and "JAX_COMPILATION_CACHE_DIR" not in blocked


def _table(path: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (48, 2))
    pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": x[:, 0] - 2 * x[:, 1] + 0.1 * rng.standard_normal(48)}).to_csv(
        path, index=False
    )
    return path


def _train_and_predict(tmp_path: Path, name: str, seed: int, cache: str) -> str:
    """``sigmabnn train`` then ``predict`` in fresh processes with the cache in ``cache``; the predictions' text."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}  # not the test suite's own cache
    env["SIGMABNN_CACHE_DIR"] = cache
    data, model, out = _table(tmp_path / f"{name}.csv", seed), tmp_path / f"{name}.sbnn", tmp_path / f"{name}_p.csv"
    for argv in (
        ["train", str(data), "--target", "y", *TINY, "--out", str(model)],
        ["predict", str(model), str(data), "-o", str(out)],
    ):
        done = subprocess.run([sys.executable, "-m", "sigmabnn", *argv], env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
    return out.read_text()


def _entries(cache: Path) -> set[str]:
    return {p.name for p in cache.iterdir() if p.name.endswith("-cache")}


def test_a_table_of_the_same_shape_reuses_every_compiled_function_and_gets_the_same_draws(tmp_path):
    """The data are arguments of the compiled code, not constants in it: a second table of the same shape adds
    nothing to the cache; and a cached executable computes what a fresh compilation does."""
    cache = tmp_path / "cache"
    _train_and_predict(tmp_path, "first", 0, str(cache))
    first = _entries(cache)
    assert len(first) > 20  # the fit's and prediction's functions
    cached = _train_and_predict(tmp_path, "second", 1, str(cache))
    assert _entries(cache) == first
    assert cached == _train_and_predict(tmp_path, "fresh", 1, "off")
    assert not (tmp_path / "off").exists()


@pytest.mark.parametrize("value", ["off", "0"])
def test_switched_off_the_command_line_writes_no_cache(tmp_path, value):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env["SIGMABNN_CACHE_DIR"], env["XDG_CACHE_HOME"] = value, str(tmp_path / "xdg")
    code = (
        "import os; from sigmabnn.compile_cache import enable_for_process as e; "
        "print(e(), 'JAX_COMPILATION_CACHE_DIR' in os.environ)"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["None", "False"] and not (tmp_path / "xdg").exists()
