"""``sigmabnn acquire``: chosen rows keep their columns, streamed chunks match one read, bad input is one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sigmabnn
from sigmabnn.acquisition import select
from sigmabnn.cli.main import main
from sigmabnn.io.model_file import save_model


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(60, 2))
    df = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": np.sin(3 * x[:, 0]) + 0.1 * rng.normal(size=60)})
    fitted, _ = sigmabnn.fit(df, "y", ["a", "b"], method="ensemble", architecture="2-8-1", num_members=3,
                             num_steps=150, progress=False)  # fmt: skip
    path = tmp_path_factory.mktemp("acq") / "model"
    save_model(fitted, path)
    return path, fitted


@pytest.fixture(scope="module")
def candidates():
    rng = np.random.default_rng(3)
    x = rng.uniform(-3, 3, size=(700, 2))
    return pd.DataFrame({"point_id": np.arange(700) * 7, "a": x[:, 0], "b": x[:, 1], "tag": ["p"] * 700})


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_acquire_writes_the_chosen_rows_best_first(model_dir, candidates, tmp_path, fmt):
    path, fitted = model_dir
    cand = tmp_path / f"cand.{fmt}"
    candidates.to_csv(cand, index=False) if fmt == "csv" else candidates.to_parquet(cand, index=False)
    out = tmp_path / "chosen.csv"
    # chunks of 64 rows: the streamed answer is that of the whole table in memory
    argv = ["acquire", str(path), str(cand), "--n", "12", "--criterion", "bald", "-o", str(out), "--chunk-rows", "64"]
    assert main(argv) == 0
    got = pd.read_csv(out)
    expected = select(fitted, candidates, 12, criterion="bald")
    assert list(got.columns) == ["point_id", "a", "b", "tag", "score"]
    assert got["point_id"].tolist() == candidates.loc[expected.rows.index, "point_id"].tolist()
    assert np.allclose(got["score"], expected.scores, rtol=1e-8)
    assert np.allclose(got[["a", "b"]], candidates.loc[expected.rows.index, ["a", "b"]], rtol=1e-9)


def test_a_regression_model_acquires_by_epig_unless_told(model_dir, candidates, tmp_path):
    path, fitted = model_dir
    cand = tmp_path / "cand.csv"
    candidates.to_csv(cand, index=False)
    out = tmp_path / "chosen.csv"
    assert main(["acquire", str(path), str(cand), "--n", "6", "--seed", "2", "-o", str(out)]) == 0
    epig = select(fitted, candidates, 6, criterion="epig", seed=2)  # one chunk: the same targets
    assert pd.read_csv(out)["point_id"].tolist() == candidates.loc[epig.rows.index, "point_id"].tolist()
    assert select(fitted, candidates, 6, seed=2).rows.index.tolist() == epig.rows.index.tolist()
    bald = select(fitted, candidates, 6, criterion="bald", seed=2)
    assert bald.rows.index.tolist() != epig.rows.index.tolist()  # the default is a choice that matters here


def test_acquire_features_and_parquet_output(model_dir, candidates, tmp_path):
    path, fitted = model_dir
    renamed = candidates.rename(columns={"a": "mass", "b": "mix"})
    cand = tmp_path / "cand.csv"
    renamed.to_csv(cand, index=False)
    out = tmp_path / "chosen.parquet"
    args = ["acquire", str(path), str(cand), "--n", "5", "--features", "mass,mix", "--criterion", "variance"]
    assert main([*args, "-o", str(out)]) == 0
    got = pd.read_parquet(out)
    assert got["point_id"].tolist() == candidates.loc[select(fitted, candidates, 5, criterion="variance").rows.index,
                                                      "point_id"].tolist()  # fmt: skip


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d, c: ["--n", "3", "--features", "a"], "features"),
        (lambda d, c: ["--n", "3", "--features", "a,zz"], "zz"),
        (lambda d, c: ["--n", "0"], "--n: expected a positive integer"),
        (lambda d, c: ["--n", "3", "--criterion", "nope"], "criterion"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(model_dir, candidates, tmp_path, capsys, setup, message):
    cand = tmp_path / "cand.csv"
    candidates.to_csv(cand, index=False)
    with pytest.raises(SystemExit) as exc:
        code = main(["acquire", str(model_dir[0]), str(cand), "-o", str(tmp_path / "o.csv"), *setup(model_dir, cand)])
        raise SystemExit(code)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()


def test_missing_columns_and_files(model_dir, candidates, tmp_path, capsys):
    cand = tmp_path / "cand.csv"
    candidates.drop(columns="b").to_csv(cand, index=False)
    for args in ([str(model_dir[0]), str(cand)], [str(model_dir[0]), str(tmp_path / "none.csv")],
                 [str(tmp_path / "nomodel"), str(cand)]):  # fmt: skip
        assert main(["acquire", *args, "--n", "2", "-o", str(tmp_path / "o.csv")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "o.csv").exists()


def test_acquire_epig_is_reproducible_by_seed(model_dir, candidates, tmp_path):
    path, fitted = model_dir
    cand = tmp_path / "cand.csv"
    candidates.to_csv(cand, index=False)
    outs = []
    for name in ("a.csv", "b.csv"):
        out = tmp_path / name
        args = ["acquire", str(path), str(cand), "--n", "6", "--criterion", "epig", "--seed", "2", "-o", str(out)]
        assert main(args) == 0
        outs.append(pd.read_csv(out))
    pd.testing.assert_frame_equal(outs[0], outs[1])
    expected = select(fitted, candidates.iloc[:100_000], 6, criterion="epig", seed=2)
    assert outs[0]["point_id"].tolist() == candidates.loc[expected.rows.index, "point_id"].tolist()


def test_fewer_candidates_than_asked_writes_them_all_with_a_note(model_dir, candidates, tmp_path, capsys):
    path, _ = model_dir
    cand, out = tmp_path / "few.csv", tmp_path / "chosen.csv"
    candidates.head(3).to_csv(cand, index=False)
    assert main(["acquire", str(path), str(cand), "--n", "5", "-o", str(out)]) == 0
    assert sorted(pd.read_csv(out)["point_id"]) == [0, 7, 14]
    assert "note: only 3 candidate rows for --n 5: all 3 are written" in capsys.readouterr().err


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, size=(80, 2))
    df = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "kind": np.where(x[:, 0] > 0, "up", "down")})
    fitted, _ = sigmabnn.fit(df, "kind", ["a", "b"], likelihood="categorical", method="ensemble",
                             architecture="2-8-2", num_members=3, num_steps=150, progress=False)  # fmt: skip
    path = tmp_path_factory.mktemp("acq_class") / "model"
    save_model(fitted, path)
    return path, fitted


@pytest.mark.parametrize(
    ("criterion", "batch"), [("bald", None), ("max_entropy", "top"), ("variation_ratios", "power")]
)
def test_acquire_scores_a_classifiers_candidates(classifier_dir, candidates, tmp_path, criterion, batch):
    path, fitted = classifier_dir
    cand, out = tmp_path / "cand.csv", tmp_path / "chosen.csv"
    candidates.to_csv(cand, index=False)
    argv = ["acquire", str(path), str(cand), "--n", "8", "--criterion", criterion, "-o", str(out), "--chunk-rows", "64"]
    assert main([*argv, *(["--batch", batch] if batch else []), "--seed", "5"]) == 0
    got = pd.read_csv(out)
    expected = select(fitted, candidates, 8, criterion=criterion, batch=batch, seed=5)  # default batch: power
    assert list(got.columns) == ["point_id", "a", "b", "tag", "score"]
    assert got["point_id"].tolist() == candidates.loc[expected.rows.index, "point_id"].tolist()
    assert np.allclose(got["score"], expected.scores, rtol=1e-8) and np.all(got["score"] >= 0)


def test_acquire_picks_a_classifiers_batchbald_batch(classifier_dir, candidates, tmp_path, capsys):
    path, fitted = classifier_dir
    cand, out = tmp_path / "cand.csv", tmp_path / "chosen.csv"
    candidates.to_csv(cand, index=False)
    argv = ["acquire", str(path), str(cand), "--n", "5", "-o", str(out), "--chunk-rows", "64", "--seed", "1"]
    assert main([*argv, "--batch", "batchbald"]) == 0
    got = pd.read_csv(out)
    expected = select(fitted, candidates, 5, batch="batchbald", seed=1)
    assert got["point_id"].tolist() == candidates.loc[expected.rows.index, "point_id"].tolist()
    np.testing.assert_allclose(got["score"], expected.scores, rtol=1e-8)
    assert main([*argv, "--batch", "batchbald", "--criterion", "max_entropy"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'batchbald'" in err[0]


@pytest.mark.parametrize(
    ("option", "message"), [(["--criterion", "variance"], "variance"), (["--batch", "greedy"], "greedy")]
)
def test_acquire_refuses_a_regression_option_for_a_classifier(
    classifier_dir, candidates, tmp_path, capsys, option, message
):
    cand = tmp_path / "cand.csv"
    candidates.to_csv(cand, index=False)
    assert main(["acquire", str(classifier_dir[0]), str(cand), "--n", "3", *option, "-o", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "for a classifier" in err
    assert not (tmp_path / "o.csv").exists()


def test_acquire_says_how_many_candidates_bald_was_computed_for(model_dir, candidates, tmp_path, capsys, monkeypatch):
    import sigmabnn.acquisition.regression as regression

    monkeypatch.setattr(regression, "TOP_BALD_BLOCK", 16)  # blocks small beside 700 rows
    path, fitted = model_dir
    cand = tmp_path / "cand.csv"
    candidates.to_csv(cand, index=False)
    out = tmp_path / "chosen.csv"
    argv = ["acquire", str(path), str(cand), "--n", "5", "--criterion", "bald", "--pool-size", "20", "-o", str(out)]
    assert main(argv) == 0
    scored = select(fitted, candidates, 5, criterion="bald", pool_size=20).num_scored
    assert scored < 700
    assert f"note: bald computed for {scored:,} of 700 candidates" in capsys.readouterr().err


def test_the_help_states_the_pool_default_the_library_uses(capsys):
    from sigmabnn.acquisition.select import MIN_POOL, POOL_PER_PICK

    with pytest.raises(SystemExit):
        main(["acquire", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"the larger of {POOL_PER_PICK} N and {MIN_POOL:,}" in text
