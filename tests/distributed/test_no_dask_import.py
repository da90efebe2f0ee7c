"""Dask is imported only on request: not by ``import sigmabnn``, nor by ``sigmabnn --help``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
REPORT = "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
HELP = """
from sigmabnn.cli.main import main
for argv in (['--help'], ['train', '--help'], ['train-all', '--help'], ['predict', '--help']):
    try:
        main(argv)
    except SystemExit:
        pass
"""


def _dask_modules_after(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\n{REPORT}"], capture_output=True, text=True, env=env, check=True
    )
    return run.stdout.strip().splitlines()[-1]


def test_import_sigmabnn_does_not_import_dask():
    assert _dask_modules_after("import sigmabnn") == "[]"


def test_cli_help_does_not_import_dask():
    assert _dask_modules_after(HELP) == "[]"
