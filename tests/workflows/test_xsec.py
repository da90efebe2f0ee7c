"""``sigmabnn xsec``: surrogate directories, SLHA / CSV points, XSECTION write-back, one-line errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main
from sigmabnn.datasets import load_ewino
from sigmabnn.io.model_file import save_model
from sigmabnn.physics.processes import Process, process_features
from sigmabnn.physics.slha import dataset_columns, read_xsections, spectrum_text, write_spectrum
from sigmabnn.predict import predict
from sigmabnn.workflows.surrogates import load_surrogates, predict_xsections, required_inputs
from test_predict import make_fitted

PROCESSES = (Process(1000022, 1000022), Process(1000023, 1000024))


def _model(process: Process, seed: int):
    raw = process_features(process)
    derived = ((f"lam{seed}", f"log(abs(m_{process.pdg1}))"),)
    names = (*raw, derived[0][0])
    fitted = make_fitted(f"{len(names)}-3-1", log10=True, seed=seed, feature_names=names, derived=derived)
    return dataclasses.replace(fitted, target_name=process.target)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("xsec")
    models = root / "models"
    models.mkdir()
    fitted = {}
    for i, process in enumerate(PROCESSES):
        fitted[process] = _model(process, i)
        save_model(fitted[process], models / f"{process.target}.model")
    (models / "other").mkdir()  # unrelated entries are ignored
    rows = load_ewino().iloc[[0, 2, 3]].reset_index(drop=True)
    points = root / "points"
    points.mkdir()
    for i in range(3):
        write_spectrum(points / f"p{i}.slha", rows.loc[i, dataset_columns()].to_dict())
    rows.to_csv(root / "points.csv", index=False)
    return root, models, points, rows, fitted


def test_predictions_match_predict_and_csv_equals_slha(setup, capsys):
    root, models, points, rows, fitted = setup
    surrogates = load_surrogates(models)
    assert [s.process for s in surrogates] == sorted(PROCESSES, key=lambda p: p.target)
    need = required_inputs(surrogates)
    assert "m_1000024" in need and not any(n.startswith("lam") for n in need)
    frame = predict_xsections(surrogates, rows, levels=(0.68, 0.95))
    for process in PROCESSES:
        mine = frame[frame["process"] == str(process)]
        pred = predict(fitted[process], rows, levels=(0.68, 0.95))
        np.testing.assert_allclose(mine["xsec"], pred.mean[:, 0], rtol=1e-12)
        np.testing.assert_allclose(mine["upper_0.95"], pred.upper[0.95][:, 0], rtol=1e-12)
    assert main(["xsec", str(models), str(points), "-o", str(root / "a.csv")]) == 0
    assert main(["xsec", str(models), str(root / "points.csv"), "-o", str(root / "b.csv")]) == 0
    a, b = pd.read_csv(root / "a.csv"), pd.read_csv(root / "b.csv")
    assert len(a) == 6 and a["source"].str.endswith(".slha").all()
    np.testing.assert_allclose(a["xsec"], b["xsec"], rtol=1e-9)
    np.testing.assert_allclose(a["lower_0.68"], b["lower_0.68"], rtol=1e-9)
    capsys.readouterr()
    assert main(["xsec", str(models), str(points / "p0.slha"), str(points / "p1.slha"), "--process", "n1,n1"]) == 0
    out = capsys.readouterr().out
    assert out.count("chi1^0 chi1^0") == 2 and "chi2^0 chi1^+" not in out and "68% interval" in out


def test_write_xsection_blocks(setup, tmp_path):
    root, models, points, rows, fitted = setup
    files = [tmp_path / f"q{i}.slha" for i in range(2)]
    for i, f in enumerate(files):
        f.write_text((points / f"p{i}.slha").read_text())
    before = files[0].read_text()
    for _ in range(2):  # writing again replaces sigmabnn's blocks, no duplicates
        assert main(["xsec", str(models), *map(str, files), "--write", "--sqrt-s", "13000"]) == 0
    text = files[0].read_text()
    assert text.startswith(before) and text.count("XSECTION") == 2
    back = read_xsections(files[1])
    pred = predict(fitted[PROCESSES[1]], rows.iloc[[0, 1]], levels=(0.68, 0.95))  # the same batch as the CLI's
    got = back[PROCESSES[1]]
    assert got.value == pytest.approx(pred.mean[1, 0], rel=1e-7)
    assert got.std == pytest.approx(pred.std[1, 0], rel=1e-7)
    assert got.intervals[0.95][1] == pytest.approx(pred.upper[0.95][1, 0], rel=1e-7)


def _one_line_error(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err


def test_errors_are_one_line(setup, tmp_path, capsys):
    root, models, points, rows, _ = setup
    broken = {k: v for k, v in rows.loc[0, dataset_columns()].items() if not k.startswith("N1000023")}
    bad = tmp_path / "no_nmix2.slha"
    bad.write_text(spectrum_text(broken))
    _one_line_error(capsys, ["xsec", str(models), str(bad)], "NMIX has no entry 2 1")
    nomix = tmp_path / "no_block.slha"
    nomix.write_text("BLOCK MASS\n   1000022   1.0E+02\n")
    _one_line_error(capsys, ["xsec", str(models), str(nomix), "--process", "1000022,1000022"], "no BLOCK NMIX")
    _one_line_error(capsys, ["xsec", str(models), str(root / "points.csv"), "--write"], "--write needs SLHA")
    _one_line_error(capsys, ["xsec", str(models), str(points), "--process", "n3,n3"], "no model for process")
    _one_line_error(capsys, ["xsec", str(tmp_path), str(points)], "no cross-section models")
    _one_line_error(capsys, ["xsec", str(models), str(tmp_path / "missing.slha")], "not found")
    assert not list(Path(tmp_path).glob(".*tmp"))


def test_points_outside_a_models_training_domain_are_flagged_with_one_warning(setup, tmp_path, capsys):
    from sigmabnn.data.domain import Domain
    from sigmabnn.predict import feature_matrix_for

    root, _, _, rows, fitted = setup
    process = PROCESSES[0]
    f = fitted[process]
    train = load_ewino().iloc[10:410]
    domain = Domain.fit(f.x_transform.forward(feature_matrix_for(f, train)))
    models = tmp_path / "models"
    models.mkdir()
    save_model(dataclasses.replace(f, domain=domain), models / f"{process.target}.model")
    points = pd.concat([rows, rows.iloc[[0]]], ignore_index=True)
    points.loc[3, "m_1000022"] = 50.0 * points["m_1000022"].abs().max()  # far beyond the training masses
    frame = predict_xsections(load_surrogates(models), points)
    expected = domain.contains(f.x_transform.forward(feature_matrix_for(f, points)))
    assert frame["in_domain"].tolist() == expected.tolist() and not expected[3]
    np.testing.assert_allclose(frame["domain_distance"], domain.distance(f.x_transform.forward(
        feature_matrix_for(f, points))), rtol=1e-12)  # fmt: skip
    points.to_csv(tmp_path / "points.csv", index=False)
    capsys.readouterr()
    assert main(["xsec", str(models), str(tmp_path / "points.csv"), "-o", str(tmp_path / "o.csv")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"warning: {int((~expected).sum())} of 4 points lie outside the training domain of at least one process "
        "(in_domain false); their error bars are extrapolations, not to be trusted"
    ]
