"""A real ``sigmabnn train`` process is interrupted (SIGINT in warm-up, then SIGTERM in sampling) and resumed;
the finished model equals, array for array and bit for bit, an uninterrupted run with the same seed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main
from sigmabnn.errors import ModelFileError
from sigmabnn.io.checkpoint import CHECKPOINT_DIR, Checkpoint
from sigmabnn.io.model_file import load_model

# MH on a 17-parameter network: cheap iterations, so 6,500 of them (130 chunks, each a commit) take
# seconds, long enough to be hit by a signal mid-sampling; warm-up 500. --map-steps: a MAP option the
# checkpoint records (as JSON) and the resumed runs must carry.
ARGS = ["--target", "y", "--arch", "2-4-1", "--chains", "2", "--warmup", "500", "--draws", "6000",
        "--method", "mh", "--seed", "3", "--map-steps", "150", "-q"]  # fmt: skip


def _cli(*argv: str) -> list[str]:
    return [sys.executable, "-m", "sigmabnn.cli.main", *argv]


def _wait_for_commit(path: Path, at_least: int, proc: subprocess.Popen, timeout: float = 300) -> int:
    """Poll the checkpoint until ``at_least`` iterations are committed; returns the count seen."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        assert proc.poll() is None, proc.communicate()
        try:
            commit = Checkpoint.open(path).restore()
        except (ModelFileError, ValueError, OSError):
            commit = None  # not created yet, or being replaced
        done = -1 if commit is None else commit[0]
        if done >= at_least:
            return done
        time.sleep(0.01)
    raise AssertionError(f"no commit at {at_least} iterations within {timeout} s")


def _stop(proc: subprocess.Popen, sig: int) -> tuple[int, str]:
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err


def _header(path: Path) -> dict:
    return json.loads((path / "model.json").read_text())


@pytest.mark.slow
def test_killed_twice_then_resumed_equals_uninterrupted_run(tmp_path, capsys):
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, 40), rng.uniform(-1, 1, 40)
    csv = tmp_path / "t.csv"
    pd.DataFrame({"a": a, "b": b, "y": np.sin(2 * a) + 0.5 * b + 0.05 * rng.normal(size=40)}).to_csv(csv, index=False)
    ref, model = tmp_path / "ref.model", tmp_path / "m.model"
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    reference = subprocess.Popen(_cli("train", str(csv), *ARGS, "--out", str(ref)), **pipes)
    run = subprocess.Popen(_cli("train", str(csv), *ARGS, "--out", str(model)), **pipes)

    # 1. SIGINT right after the first commit (MAP done, chains initialised): interrupted in warm-up
    _wait_for_commit(model, 0, run)
    code, err = _stop(run, signal.SIGINT)
    assert code == 130, err
    assert "interrupted (SIGINT) during warm-up" in err and f"--resume {model}" in err, err
    header = _header(model)
    assert header["complete"] is False and header["diagnostics"]["training"]["draws_done"] == 0
    with pytest.raises(ModelFileError, match="--resume"):  # no draws yet: a clear refusal, not a crash
        load_model(model)

    # settings or data that differ from the run's are refused in one line, before any work
    assert main(["train", "--resume", str(model), "--draws", "5"]) == 2
    other = tmp_path / "other.csv"
    pd.read_csv(csv).assign(y=lambda df: df.y + 1).to_csv(other, index=False)
    assert main(["train", str(other), "--resume", str(model)]) == 2
    assert main(["train", str(csv), *ARGS, "--out", str(model)]) == 2  # a fresh run would overwrite it
    errors = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(errors) == 3 and all(ln.startswith("sigmabnn train: error: ") for ln in errors), errors
    assert "num_samples=6000, not 5" in errors[0] and "data differ" in errors[1] and "--resume" in errors[2]

    # 2. resume, SIGTERM in the middle of sampling: a partial model holding the draws so far
    run = subprocess.Popen(_cli("train", "--resume", str(model), "-q"), **pipes)
    _wait_for_commit(model, 500 + 1500, run)
    code, err = _stop(run, signal.SIGTERM)
    assert code == 143, err
    assert "interrupted (SIGTERM) during sampling" in err, err
    partial = load_model(model)
    done = _header(model)["diagnostics"]["training"]["draws_done"]
    assert partial.draws.positions.shape == (2, done, 17) and 1500 <= done < 6000
    assert _header(model)["complete"] is False
    assert main(["info", str(model)]) == 0
    capsys.readouterr()

    from sigmabnn.predict import predict

    pred = predict(partial, np.array([[0.1, 0.2], [-0.5, 0.3]]))
    assert np.all(np.isfinite(pred.mean)) and np.all(pred.std > 0)

    # 3. resume to the end; compare with the uninterrupted run
    finish = subprocess.run(_cli("train", "--resume", str(model), "-q"), timeout=600, **pipes)
    assert finish.returncode == 0, finish.stderr
    _, err = reference.communicate(timeout=600)
    assert reference.returncode == 0, err
    assert _header(model)["complete"] is True and not (model / CHECKPOINT_DIR).exists()
    with np.load(ref / "arrays.npz") as want, np.load(model / "arrays.npz") as got:
        assert sorted(want.files) == sorted(got.files) and "positions" in want.files
        for name in want.files:
            assert np.array_equal(want[name], got[name]), name
    assert want_draws(ref) == (2, 6000, 17)
    assert load_model(model).settings["map_num_steps"] == 150  # the run's MAP option, recorded and resumed
    assert main(["train", "--resume", str(model)]) == 2
    assert "finished model" in capsys.readouterr().err


def want_draws(path: Path) -> tuple[int, ...]:
    return tuple(_header(path)["arrays"]["positions"]["shape"])
