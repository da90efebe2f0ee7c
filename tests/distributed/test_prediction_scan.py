"""``sigmabnn predict ... --dask``: partitions of a Parquet data set or CSV predicted on workers, written as Parquet."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main
from sigmabnn.io.model_file import save_model
from sigmabnn.predict import predict
from test_predict import make_fitted


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("scan")
    fitted = make_fitted("2-5-1", chains=2, draws=3, seed=1)
    save_model(fitted, root / "m")
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"x0": rng.normal(2, 3, 300), "x1": rng.normal(2, 3, 300), "id": np.arange(300)})
    data = root / "points"
    data.mkdir()
    for i, start in enumerate(range(0, 300, 100)):  # a data set of three files, in order
        table.iloc[start : start + 100].to_parquet(data / f"f{i}.parquet", index=False)
    table.to_csv(root / "points.csv", index=False)
    return root, fitted, table


def _read(directory):
    files = sorted(directory.glob("part-*.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True), len(files)


def test_parquet_data_set_scan_equals_serial_predictions(setup, client, tmp_path):
    root, fitted, table = setup
    out = tmp_path / "pred"
    argv = ["predict", str(root / "m"), str(root / "points"), "-o", str(out), "--with-inputs"]
    assert main([*argv, f"--dask={client.scheduler.address}"]) == 0
    got, parts = _read(out)
    assert parts == 3 and len(got) == len(table)
    assert (got["id"].to_numpy() == table["id"].to_numpy()).all()  # input order kept
    serial = predict(fitted, table, levels=(0.68, 0.95))
    np.testing.assert_allclose(got["mean"], np.asarray(serial.mean)[:, 0], rtol=1e-10)
    np.testing.assert_allclose(got["std"], np.asarray(serial.std)[:, 0], rtol=1e-10)
    assert (got["lower_0.68"] < got["mean"]).all() and (got["mean"] < got["upper_0.68"]).all()
    assert not list(tmp_path.glob(".*"))  # no temporaries left beside it
    # a rerun replaces the earlier scan; a CSV input gives the same numbers
    argv = ["predict", str(root / "m"), str(root / "points.csv"), "-o", str(out), "--dask", client.scheduler.address]
    assert main(argv) == 0
    again, _ = _read(out)
    np.testing.assert_allclose(again["mean"], got["mean"], rtol=1e-12)


def test_failing_partition_leaves_no_output(setup, client, tmp_path, capsys):
    root, _, table = setup
    bad = tmp_path / "bad"
    bad.mkdir()
    table.iloc[:100].to_parquet(bad / "a.parquet", index=False)
    table.iloc[100:200].assign(x1=np.nan).to_parquet(bad / "b.parquet", index=False)  # non-finite inputs
    out = tmp_path / "pred"
    assert main(["predict", str(root / "m"), str(bad), "-o", str(out), f"--dask={client.scheduler.address}"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not out.exists() and not list(tmp_path.glob(".pred*"))


def test_scan_refuses_to_replace_another_directory(setup, client, tmp_path, capsys):
    root, _, _ = setup
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    argv = ["predict", str(root / "m"), str(root / "points"), "-o", str(other), f"--dask={client.scheduler.address}"]
    assert main(argv) == 2
    assert "refusing to replace" in capsys.readouterr().err
    assert (other / "keep.txt").read_text() == "mine"
