"""``sigmabnn active``: the loop end to end from the command line, with a shell-command oracle."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main

ORACLE = (
    "import sys, numpy as np, pandas as pd\n"
    "d = pd.read_csv(sys.argv[1])\n"
    "d['y'] = np.sin(3 * d['a']) + 0.5 * d['b']\n"
    "d.to_csv(sys.argv[2], index=False)\n"
    "open(sys.argv[3], 'a').write(f'{len(d)}\\n')\n"
)


@pytest.fixture()
def setup(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=(200, 2))
    pool = tmp_path / "pool.csv"
    pd.DataFrame({"id": np.arange(200), "a": x[:, 0], "b": x[:, 1]}).to_csv(pool, index=False)
    script = tmp_path / "label.py"
    script.write_text(ORACLE)
    calls = tmp_path / "calls.txt"
    oracle = f"{sys.executable} {script} {{input}} {{output}} {calls}"
    argv = ["active", str(pool), "--target", "y", "--features", "a,b", "--oracle", oracle,
            "--dir", str(tmp_path / "loop"), "--initial-size", "20", "--batch-size", "10",
            "--max-labelled", "40", "--method", "ensemble", "--members", "2", "--steps", "60",
            "--architecture", "2-6-1", "-q"]  # fmt: skip
    return argv, calls, tmp_path / "loop"


def test_active_labels_batches_with_the_command_and_resumes(setup, capsys):
    argv, calls, loop = setup
    assert main(argv) == 0
    *out, last = capsys.readouterr().out.strip().splitlines()
    rounds = [re.fullmatch(r"round (\d+): (\d+) labelled, fit [\d.]+ s", line) for line in out]
    assert [m.groups() for m in rounds] == [("1", "20"), ("2", "30"), ("3", "40")]
    assert last == f"model: {loop / 'round_3' / 'model'}; all 40 labelled rows: {loop / 'labelled.csv'}"
    assert calls.read_text().split() == ["20", "10", "10"]  # one oracle call per batch, the batch's rows
    labels = pd.concat([pd.read_csv(loop / f"round_{k}" / "labels.csv") for k in range(3)], ignore_index=True)
    assert len(labels) == 40 and labels["id"].is_unique
    pd.testing.assert_frame_equal(pd.read_csv(loop / "labelled.csv"), labels)  # every labelled row, in one table
    assert (loop / "round_3" / "model").is_dir()
    assert np.allclose(labels["y"], np.sin(3 * labels["a"]) + 0.5 * labels["b"])
    state = json.loads((loop / "state.json").read_text())
    assert state["round"] == 3 and len(state["chosen"]) == 40
    # The same command again: the loop is complete, nothing is labelled again.
    assert main(argv) == 0
    assert calls.read_text().split() == ["20", "10", "10"]


def test_active_bad_input_is_one_line_and_exit_2(setup, capsys):
    argv, calls, _ = setup
    missing = list(argv)
    missing[1] = str(calls.parent / "nowhere.csv")
    assert main(missing) == 2
    err = capsys.readouterr().err.strip()
    assert "nowhere.csv" in err and len(err.splitlines()) == 1
    failing = [a if not a.startswith(sys.executable) else "exit 3 # {input} {output}" for a in argv]
    assert main(failing) == 2
    err = capsys.readouterr().err.strip()
    assert "exit code 3" in err and len(err.splitlines()) == 1


def test_active_audit_fraction_keeps_random_validation_rows(setup, capsys):
    argv, _, loop = setup
    assert main([*argv, "--audit-fraction", "0.2"]) == 0
    labels = pd.concat([pd.read_csv(loop / f"round_{k}" / "labels.csv") for k in range(3)])
    assert labels["active_split"].tolist() == ["val"] * 4 + ["train"] * 16 + (["val"] * 2 + ["train"] * 8) * 2
    for bad in ("1", "-0.1", "x"):
        with pytest.raises(SystemExit) as exc:
            main([*argv, "--audit-fraction", bad])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip()
        assert "fraction" in err.splitlines()[-1] and "Traceback" not in err


def test_active_runs_with_the_default_architecture(setup, capsys):
    """Without --architecture the loop fits the default network (NFEATURES-20-20-1); the option's default used to
    go through its type check and stop every such run with 'architecture must look like 5-20-20-1'."""
    argv, _, loop = setup
    i = argv.index("--architecture")
    assert main(argv[:i] + argv[i + 2 :]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 4  # three rounds and the final model's line
    widths = json.loads((loop / "round_2" / "model" / "model.json").read_text())["network"]["widths"]
    assert widths[:-1] == [2, 20, 20]  # the ensemble's head adds a scale output to the last layer


def test_no_option_passes_a_string_default_through_its_type_check():
    """argparse converts a string default with the option's ``type`` (the bug above): every option with a type
    has a default that is not a string, so a check meant for user input never sees the program's own value."""
    import argparse

    from sigmabnn.cli.main import build_parser

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    typed = [(name, a.option_strings) for name, p in sub.choices.items() for a in p._actions if a.type is not None]
    assert len(typed) > 20
    assert [
        (name, a.option_strings)
        for name, p in sub.choices.items()
        for a in p._actions
        if a.type is not None and isinstance(a.default, str)
    ] == []
