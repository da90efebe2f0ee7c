"""``sigmabnn xsec ... --dask``: chunks of SLHA files on workers, a Parquet data set equal to the serial predictions."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from sigmabnn.cli.main import main
from sigmabnn.datasets import load_ewino
from sigmabnn.io.model_file import save_model
from sigmabnn.physics.processes import Process, process_features
from sigmabnn.physics.slha import dataset_columns, read_xsections, write_spectrum
from sigmabnn.workflows.surrogates import load_surrogates, predict_xsections
from test_predict import make_fitted

PROCESSES = (Process(1000022, 1000022), Process(1000023, 1000024))


def _model(process: Process, seed: int):
    names = tuple(process_features(process))
    fitted = make_fitted(f"{len(names)}-3-1", log10=True, seed=seed, feature_names=names)
    return dataclasses.replace(fitted, target_name=process.target)


def test_xsec_scan_equals_serial_and_writes_blocks(client, tmp_path, capsys):
    models = tmp_path / "models"
    models.mkdir()
    for i, process in enumerate(PROCESSES):
        save_model(_model(process, i), models / f"{process.target}.model")
    rows = load_ewino().iloc[:5].reset_index(drop=True)
    points = tmp_path / "points"
    points.mkdir()
    for i in range(5):
        write_spectrum(points / f"p{i}.slha", rows.loc[i, dataset_columns()].to_dict())
    out = tmp_path / "xs"
    argv = ["xsec", str(models), str(points), "-o", str(out), "--files-per-task", "2", "--write"]
    assert main([*argv, f"--dask={client.scheduler.address}"]) == 0
    files = sorted(out.glob("part-*.parquet"))
    assert len(files) == 3  # 5 files in chunks of 2
    got = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    want = predict_xsections(load_surrogates(models), rows, levels=(0.68, 0.95))
    assert list(got["point"]) == list(want["point"]) == [p for p in range(5) for _ in PROCESSES]
    assert list(got["process"]) == list(want["process"])
    np.testing.assert_allclose(got["xsec"], want["xsec"], rtol=1e-10)
    np.testing.assert_allclose(got["std"], want["std"], rtol=1e-10)
    # the interval ends come from noise samples: equal to a serial prediction of the same chunk of files
    for start in (0, 2, 4):
        chunk = predict_xsections(load_surrogates(models), rows.iloc[start : start + 2], levels=(0.68, 0.95))
        mine = got[got["point"].between(start, start + 1)]
        np.testing.assert_allclose(mine["upper_0.95"], chunk["upper_0.95"], rtol=1e-10)
        np.testing.assert_allclose(mine["lower_0.68"], chunk["lower_0.68"], rtol=1e-10)
    for i in range(5):  # the XSECTION blocks written by the workers
        back = read_xsections(points / f"p{i}.slha")
        mine = got[got["point"] == i].set_index("process")
        for process in PROCESSES:
            assert np.isclose(back[process].value, mine.loc[str(process), "xsec"], rtol=1e-5)
    # a table is refused with one line (the cluster scan reads SLHA files)
    rows.to_csv(tmp_path / "pts.csv", index=False)
    capsys.readouterr()
    argv = ["xsec", str(models), str(tmp_path / "pts.csv"), "-o", str(tmp_path / "x2")]
    argv.append(f"--dask={client.scheduler.address}")
    assert main(argv) == 2
    assert "is a table" in capsys.readouterr().err
