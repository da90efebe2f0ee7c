"""``train-all --dask``: processes as tasks on a real LocalCluster, a worker killed mid-fit, models as serial."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main
from sigmabnn.datasets import load_ewino
from sigmabnn.io.model_file import load_model
from sigmabnn.workflows.surrogates import train_all

TINY = {
    "hidden": (3,),
    "map_steps": 30,
    "map_lbfgs_steps": 5,
    "num_warmup": 8,
    "num_samples": 4,
    "num_chains": 1,
    "max_tree_depth": 2,
}
PROCESSES = ("1000022,1000022", "1000022,1000024")
TARGETS = ("nlo_1000022_1000022", "nlo_1000022_1000024")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """240 rows of the built-in data (80 per split), as a CSV."""
    df = load_ewino().groupby("split", group_keys=False).head(80).reset_index(drop=True)
    path = tmp_path_factory.mktemp("data") / "small.csv"
    df.to_csv(path, index=False)
    return df, path


def _kill_one_busy_worker(client, after_seconds: float, killed: list[int]) -> None:
    """Wait until a task has run ``after_seconds`` on a worker, then SIGKILL that worker's process."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        busy = [addr for addr, keys in client.processing().items() if keys]
        if busy:
            time.sleep(after_seconds)
            busy = [addr for addr, keys in client.processing().items() if keys]
            if busy:
                pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
        time.sleep(0.2)


@pytest.mark.heavy
@pytest.mark.slow
def test_worker_killed_mid_fit_run_completes_and_models_equal_serial(small, client, tmp_path, capsys):
    df, path = small
    out = tmp_path / "sur"
    killed: list[int] = []
    killer = threading.Thread(target=_kill_one_busy_worker, args=(client, 5.0, killed), daemon=True)
    killer.start()
    argv = ["train-all", str(path), "--out", str(out), "--process", PROCESSES[0], "--process", PROCESSES[1]]
    argv += ["--hidden", "3", "--map-steps", "30", "--map-lbfgs-steps", "5", "--warmup", "8", "--draws", "4"]
    argv += ["--chains", "1", "--max-tree-depth", "2", "-q", f"--dask={client.scheduler.address}"]
    assert main(argv) == 0
    killer.join(timeout=5)
    assert killed, "no worker was killed: the test did not exercise a failure"
    assert killed[0] not in client.run(os.getpid).values()
    lines = [line for line in capsys.readouterr().out.splitlines() if "trained in" in line]
    assert len(lines) == 2 and all("test R^2 log" in line for line in lines)  # one progress line per process
    # every model complete and valid; no temporaries left by the killed worker
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
    assert list(pd.read_csv(out / "summary.csv")["process"]) == list(PROCESSES)
    # the same draws as a serial run with the same seed
    serial = train_all(0, df, tmp_path / "serial", processes=PROCESSES, progress=False, **TINY)
    assert [r["process"] for r in serial] == list(PROCESSES)
    for target in TARGETS:
        got, want = load_model(out / f"{target}.model"), load_model(tmp_path / "serial" / f"{target}.model")
        assert got.target_name == target and got.draws.positions.shape == (1, 4, got.draws.positions.shape[-1])
        np.testing.assert_array_equal(got.draws.positions, want.draws.positions)
    # a rerun skips every finished process
    assert main(argv) == 0
    assert capsys.readouterr().out.count("already done") == 2


def test_stale_temporaries_of_the_run_are_removed(tmp_path):
    from sigmabnn.physics.processes import parse_process
    from sigmabnn.workflows.surrogates import _remove_stale_temporaries

    (tmp_path / ".nlo_1000022_1000022.model.tmp-abc").mkdir()
    (tmp_path / ".nlo_1000022_1000022.model.tmp-abc" / "arrays.npz").write_bytes(b"partial")
    (tmp_path / ".nlo_1000022_1000022.json.tmp-x").write_text("{")
    (tmp_path / ".nlo_1000022_1000024.model.tmp-y").mkdir()  # not a process of this run: kept
    (tmp_path / "nlo_1000022_1000022.model").mkdir()  # a final name: kept
    _remove_stale_temporaries(tmp_path, [parse_process(PROCESSES[0])])
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert kept == [".nlo_1000022_1000024.model.tmp-y", "nlo_1000022_1000022.model"]
