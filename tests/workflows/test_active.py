"""The active-learning loop: rounds, warm starts, a command oracle, and resuming a killed loop."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

from sigmabnn.errors import InputError
from sigmabnn.fitting.spec import build_spec
from sigmabnn.workflows.active import CommandOracle, LoopConfig, run_loop

TARGET = "y"


def truth(x: np.ndarray) -> np.ndarray:
    return np.sin(3 * x[:, 0]) + 0.5 * x[:, 1]


@pytest.fixture(scope="module")
def pool():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(300, 2))
    return pd.DataFrame({"id": np.arange(300), "a": x[:, 0], "b": x[:, 1]})


def oracle(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.assign(**{TARGET: truth(rows[["a", "b"]].to_numpy())})


def config(**kw) -> LoopConfig:
    spec = build_spec(TARGET, ["a", "b"], method="ensemble", architecture="2-6-1", num_members=2, num_steps=60,
                      split=(0.8, 0.2, 0.0), seed=0)  # fmt: skip
    return LoopConfig(**{"spec": spec, "batch_size": 10, "max_labelled": 50, "initial_size": 30, **kw})


def test_loop_rounds_label_new_rows_and_warm_start(pool, tmp_path):
    result = run_loop(tmp_path / "loop", pool, oracle, config())
    assert [h["n_labelled"] for h in result.history] == [30, 40, 50]
    assert [h["warm_start"] for h in result.history] == [False, True, True]
    ids = result.labelled["id"]
    assert len(ids) == 50 and ids.is_unique and set(ids) <= set(pool["id"])
    assert np.allclose(result.labelled[TARGET], truth(result.labelled[["a", "b"]].to_numpy()))
    assert result.fitted is not None and result.fitted.num_networks == 2


class Killed(Exception):
    pass


def test_a_killed_loop_resumes_where_it_stopped(pool, tmp_path):
    full = run_loop(tmp_path / "full", pool, oracle, config())
    calls = []

    def dying(rows):
        calls.append(len(rows))
        if len(calls) == 3:  # the second acquired batch: after two fits
            raise Killed
        return oracle(rows)

    with pytest.raises(Killed):
        run_loop(tmp_path / "resumed", pool, dying, config())
    fits = []
    resumed = run_loop(tmp_path / "resumed", pool, oracle, config(), evaluate=lambda f: fits.append(1) or {})
    assert len(fits) == 1  # the two finished fits are not redone: only the last round's
    pd.testing.assert_frame_equal(resumed.labelled, full.labelled)
    assert [h["n_labelled"] for h in resumed.history] == [30, 40, 50]


def test_command_oracle(pool, tmp_path):
    script = tmp_path / "label.py"
    script.write_text(
        "import sys, numpy as np, pandas as pd\n"
        "d = pd.read_csv(sys.argv[1])\n"
        "d['y'] = np.sin(3 * d['a']) + 0.5 * d['b']\n"
        "d[['id', 'y']].to_csv(sys.argv[2], index=False)\n"
    )
    cmd = CommandOracle(f"{sys.executable} {script} {{input}} {{output}}", TARGET, tmp_path / "oracle")
    result = run_loop(tmp_path / "loop", pool, cmd, config(max_labelled=40))
    assert len(result.labelled) == 40 and cmd.calls == 2
    assert np.allclose(result.labelled[TARGET], truth(result.labelled[["a", "b"]].to_numpy()))
    failing = CommandOracle("exit 3 # {input} {output}", TARGET, tmp_path / "bad")
    with pytest.raises(InputError, match="exit code 3"):
        failing(pool.head(2))
    with pytest.raises(InputError, match="input"):
        CommandOracle("echo", TARGET, tmp_path)


def test_bad_configs(pool, tmp_path):
    with pytest.raises(InputError, match="criterion"):
        config(criterion="best")
    with pytest.raises(InputError, match="initial"):
        run_loop(tmp_path / "x", pool, oracle, config(initial_size=0))
    with pytest.raises(InputError, match="give initial labelled rows"):  # an empty table is no start either
        run_loop(tmp_path / "y", pool, oracle, config(initial_size=0), initial=oracle(pool.head(0)))


def test_an_oracle_whose_labels_are_all_missing_is_named(pool, tmp_path):
    """All labels missing (a Prospino run that failed on every point): one line naming the target and a value,
    not the fit's "only 0 usable training rows". Some missing: those rows are dropped by the fit, the loop goes on."""
    with pytest.raises(
        InputError, match=r"30 labels of 'y' are all missing or not finite numbers \(the first: 'failed'\)"
    ):
        run_loop(tmp_path / "none", pool, lambda rows: rows.assign(y="failed"), config())

    def some(rows):
        out = oracle(rows)
        out.loc[out.index[:2], TARGET] = np.nan
        return out

    result = run_loop(tmp_path / "some", pool, some, config())
    assert result.history[-1]["n_labelled"] == 50


def test_initial_positions_start_mcmc_chains_and_are_checked(pool):
    """An MCMC refit starts its chains (here without MAP) at the previous run's last draws."""
    from sigmabnn.api import fit
    from sigmabnn.workflows.active import refit_starts

    data = oracle(pool.head(40))
    opts = dict(method="mh", architecture="2-4-1", num_chains=2, num_warmup=5, num_samples=4, progress=False, map=None)
    first, _ = fit(data, TARGET, ["a", "b"], **opts)
    starts = refit_starts(first)
    assert starts.shape == (2, first.draws.positions.shape[-1])
    assert np.array_equal(starts, np.asarray(first.draws.positions)[:, -1])
    second, _ = fit(data, TARGET, ["a", "b"], initial_positions=starts, **opts)
    assert second.num_networks == 8
    with pytest.raises(InputError, match="shape"):
        fit(data, TARGET, ["a", "b"], initial_positions=starts[:1], **opts)
    with pytest.raises(InputError, match="VI"):
        fit(data, TARGET, ["a", "b"], method="bbb", architecture="2-4-1", num_steps=5, progress=False,
            initial_positions=starts)  # fmt: skip


def test_audit_rows_are_random_and_are_the_fits_validation_rows(pool, tmp_path):
    """With an audit fraction, a share of every batch is drawn at random and the fits validate on it."""
    from sigmabnn.workflows.active import AUDIT_COLUMN

    vals = []

    def evaluate(fitted):
        vals.append((fitted.report.data.train, fitted.report.data.val, fitted.report.data.split))
        return {}

    runs = {c: run_loop(tmp_path / c, pool, oracle, config(criterion=c, audit_fraction=0.2), evaluate=evaluate)
            for c in ("variance", "random")}  # fmt: skip
    for result in runs.values():
        roles = result.labelled[AUDIT_COLUMN].tolist()
        assert roles == ["val"] * 6 + ["train"] * 24 + (["val"] * 2 + ["train"] * 8) * 2
    # every fit validates on exactly the audit rows labelled so far
    assert vals[:3] == [(24, 6, f"column:{AUDIT_COLUMN}"), (32, 8, f"column:{AUDIT_COLUMN}"),
                        (40, 10, f"column:{AUDIT_COLUMN}")]  # fmt: skip
    # the audit draws do not depend on the criterion: the same rows from the same free pool (round 1)
    ids = {c: r.labelled["id"].to_numpy() for c, r in runs.items()}
    assert np.array_equal(ids["variance"][:40][np.r_[0:6, 30:32]], ids["random"][:40][np.r_[0:6, 30:32]])
    assert not np.array_equal(ids["variance"][32:40], ids["random"][32:40])  # the criteria's own picks differ
    with pytest.raises(InputError, match="audit_fraction"):
        config(audit_fraction=1.0)


def test_user_initial_rows_give_a_seeded_audit_share_and_cold_refits_start_fresh(pool, tmp_path):
    from sigmabnn.workflows.active import AUDIT_COLUMN

    vals = []
    initial = oracle(pool.head(40))
    result = run_loop(tmp_path / "loop", pool.iloc[40:], oracle, config(warm_start=False, audit_fraction=0.25),
                      initial=initial, evaluate=lambda f: vals.append(f.report.data.val) or {})  # fmt: skip
    assert vals == [10, 12]  # 10 of the 40 initial rows, then 2 of the batch of 10
    roles = result.labelled[AUDIT_COLUMN]
    assert len(roles) == 50 and roles[:40].isna().all() and roles[40:].tolist() == ["val"] * 2 + ["train"] * 8
    assert [h["warm_start"] for h in result.history] == [False, False]


def test_an_oracle_that_reorders_or_changes_its_rows_is_refused(pool, tmp_path):
    """A labelled row must be the row it was asked about: an oracle returning its rows in another order
    (a parallel Prospino wrapper collecting results as they finish) would silently mislabel the inputs."""
    with pytest.raises(InputError, match=r"another order or changed them \(column 'id', data row 1\)"):
        run_loop(tmp_path / "shuffled", pool, lambda rows: oracle(rows).iloc[::-1], config())
    with pytest.raises(InputError, match=r"column 'b', data row 3"):
        run_loop(
            tmp_path / "changed",
            pool,
            lambda rows: oracle(rows).assign(b=lambda d: d["b"].mask(d.index == 2, 9.0)),
            config(),
        )
    kept = run_loop(tmp_path / "subset", pool, lambda rows: oracle(rows)[["id", TARGET]], config())
    assert len(kept.labelled) == 50  # returning only an id and the target is fine


def test_a_pool_or_initial_table_without_the_inputs_is_refused_before_any_oracle_call(pool, tmp_path):
    calls = []

    def counting(rows):
        calls.append(len(rows))
        return oracle(rows)

    with pytest.raises(InputError, match=r"candidate pool lacks the column\(s\) 'b'"):
        run_loop(tmp_path / "nob", pool.drop(columns="b"), counting, config())
    initial = oracle(pool.head(20))
    with pytest.raises(InputError, match=r"initial table lacks the column\(s\) 'y'"):
        run_loop(tmp_path / "noy", pool, counting, config(initial_size=0), initial=initial.drop(columns=TARGET))
    assert calls == [] and not (tmp_path / "nob").exists() and not (tmp_path / "noy").exists()
