"""Model files: bit-exact round trip, atomic writes, and hostile files rejected with one line."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.errors import ModelFileError
from sigmabnn.fitted import FittedModel
from sigmabnn.io import model_file
from sigmabnn.io.atomic import atomic_directory, atomic_write_text
from sigmabnn.io.model_file import ARRAYS_NAME, HEADER_NAME, load_model, save_model
from sigmabnn.model import (
    BNN,
    Gaussian,
    GaussianPrior,
    HeteroscedasticGaussian,
    Hyperparameters,
    num_params,
    parse_architecture,
)


def make_fitted(arch="3-4-1", dtype="float64", chains=2, draws=3, likelihood=None, log10=True, seed=0):
    rng = np.random.default_rng(seed)
    mlp = parse_architecture(arch)
    d = num_params(mlp)
    L = mlp.num_layers
    t = 1
    hyper = Hyperparameters(
        rng.gamma(2.0, size=(chains, draws)).astype(dtype),
        rng.gamma(2.0, size=(chains, draws, L)).astype(dtype),
        rng.gamma(2.0, size=(chains, draws, L)).astype(dtype),
    )
    return FittedModel(
        bnn=BNN(mlp, likelihood=likelihood or Gaussian(precision=50.0, learn_precision=True), dtype=dtype),
        draws=PosteriorDraws(rng.normal(size=(chains, draws, d)).astype(dtype), hyper),
        x_transform=Standardizer.fit(rng.normal(size=(20, mlp.widths[0]))),
        y_transform=TargetTransform.fit(rng.uniform(1, 5, size=(20, t)), log10=log10),
        feature_names=tuple(f"f{i}" for i in range(mlp.widths[0] - 1)) + ("msum",),
        target_name="xsec",
        derived=(("msum", "f0+f1"),),
        method="nuts",
        settings={"num_chains": chains, "target_accept": 0.8, "note": None},
        adapted={"step_size": rng.uniform(size=chains), "inverse_mass_matrix": rng.uniform(size=(chains, d))},
        diagnostics={"acceptance": [0.8, 0.9], "rhat": float("nan"), "nested": {"a": np.float64(1.5)}},
        data_fingerprint="sha256:" + "0" * 64,
    )


def _assert_same(a: FittedModel, b: FittedModel) -> None:
    assert a.bnn == b.bnn
    for x, y in [
        (a.draws.positions, b.draws.positions),
        (a.draws.hyper.noise_precision, b.draws.hyper.noise_precision),
        (a.draws.hyper.weight_precision, b.draws.hyper.weight_precision),
        (a.draws.hyper.bias_precision, b.draws.hyper.bias_precision),
        (a.x_transform.mean, b.x_transform.mean),
        (a.x_transform.std, b.x_transform.std),
        (a.y_transform.mean, b.y_transform.mean),
        (a.y_transform.scale, b.y_transform.scale),
    ]:
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()  # bit-exact
    assert a.y_transform.log10 == b.y_transform.log10
    assert a.feature_names == b.feature_names and a.target_name == b.target_name
    assert a.derived == b.derived and a.method == b.method
    assert a.data_fingerprint == b.data_fingerprint and a.created == b.created
    assert set(a.adapted) == set(b.adapted)
    for k in a.adapted:
        assert np.asarray(a.adapted[k]).tobytes() == b.adapted[k].tobytes()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_roundtrip_bit_exact(tmp_path, dtype):
    f = make_fitted(dtype=dtype)
    save_model(f, tmp_path / "m")
    assert sorted(os.listdir(tmp_path / "m")) == [ARRAYS_NAME, HEADER_NAME]
    g = load_model(tmp_path / "m")
    _assert_same(f, g)
    assert g.settings == {"num_chains": 2, "target_accept": 0.8, "note": None}
    assert g.diagnostics == {"acceptance": [0.8, 0.9], "rhat": None, "nested": {"a": 1.5}}  # NaN -> null
    assert g.draws.positions.dtype == np.dtype(dtype)
    _assert_same(f, load_model(tmp_path / "m", verify_checksums=True))


def test_roundtrip_other_likelihood_and_overwrite(tmp_path):
    f = make_fitted(arch="2-3-2", likelihood=HeteroscedasticGaussian(min_std=0.01), log10=False)
    f = FittedModel(**{**f.__dict__, "feature_names": ("a", "b"), "derived": ()})
    path = tmp_path / "m"
    save_model(make_fitted(), path)
    save_model(f, path)  # replaces the existing model
    g = load_model(path)
    _assert_same(f, g)
    assert g.bnn.likelihood == HeteroscedasticGaussian(min_std=0.01)
    assert [p.name for p in tmp_path.iterdir()] == ["m"]  # no temporaries left


def test_scale_head_precision_group_round_trip_and_checked(tmp_path):
    f = make_fitted(arch="2-3-2", likelihood=HeteroscedasticGaussian(min_std=0.01), log10=False)
    rng = np.random.default_rng(1)
    hyper = f.draws.hyper._replace(
        weight_precision=rng.gamma(2.0, size=(2, 3, 3)), bias_precision=rng.gamma(2.0, size=(2, 3, 3))
    )
    bnn = BNN(f.bnn.mlp, GaussianPrior(scale_outputs=1), f.bnn.likelihood, dtype=f.bnn.dtype)
    f = FittedModel(**{**f.__dict__, "bnn": bnn, "draws": f.draws._replace(hyper=hyper),
                       "feature_names": ("a", "b"), "derived": ()})  # fmt: skip
    save_model(f, tmp_path / "m")
    g = load_model(tmp_path / "m")
    _assert_same(f, g)
    assert g.bnn.prior.scale_outputs == 1 and g.bnn.prior.num_groups(g.bnn.mlp) == 3
    # the header's prior decides the groups: without the scale group the arrays no longer fit it
    _edit_header(tmp_path / "m", lambda h: h["network"]["prior"]["fields"].update(scale_outputs=0))
    _load_fails(tmp_path / "m", r"weight_precision' must have shape \[2, 3, 2\]")
    _edit_header(tmp_path / "m", lambda h: h["network"]["prior"]["fields"].update(scale_outputs=2))
    _load_fails(tmp_path / "m", "invalid prior: scale_outputs 2 must be below the last width 2")


def test_header_is_documented_json(tmp_path):
    save_model(make_fitted(), tmp_path / "m")
    h = json.loads((tmp_path / "m" / HEADER_NAME).read_text())
    assert h["format"] == "sigmabnn-model" and h["format_version"] == 1
    assert h["network"]["widths"] == [3, 4, 1] and h["network"]["num_params"] == 21
    assert h["network"]["likelihood"] == {
        "name": "Gaussian",
        "fields": {"precision": 50.0, "learn_precision": True, "name": "gaussian"},
    }
    assert h["arrays"]["positions"] == {"shape": [2, 3, 21], "dtype": "float64"}
    assert h["arrays"]["adapted.inverse_mass_matrix"] == {"shape": [2, 21], "dtype": "float64"}


def test_exception_mid_write_leaves_nothing(tmp_path, monkeypatch):
    f = make_fitted()

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(model_file.np, "savez", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        save_model(f, tmp_path / "m")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    save_model(f, tmp_path / "m")
    before = {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()}
    monkeypatch.setattr(model_file.np, "savez", boom)
    with pytest.raises(RuntimeError):
        save_model(make_fitted(seed=5), tmp_path / "m")
    assert [p.name for p in tmp_path.iterdir()] == ["m"]  # old model intact, no temporaries
    assert {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()} == before


def test_atomic_helpers(tmp_path):
    atomic_write_text(tmp_path / "a.txt", "one")
    atomic_write_text(tmp_path / "a.txt", "two")
    assert (tmp_path / "a.txt").read_text() == "two"
    with pytest.raises(KeyboardInterrupt), atomic_directory(tmp_path / "d") as tmp:
        (tmp / "x").write_text("partial")
        raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


# --------------------------------------------------------------------------- hostile files


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "m"
    save_model(make_fitted(), path)
    return path


def _edit_header(path, fn):
    h = json.loads((path / HEADER_NAME).read_text())
    fn(h)
    (path / HEADER_NAME).write_text(json.dumps(h))


def _load_fails(path, pattern):
    with pytest.raises(ModelFileError, match=pattern) as err:
        load_model(path)
    msg = str(err.value)
    assert "\n" not in msg
    return msg


def test_missing_and_not_a_directory(tmp_path):
    _load_fails(tmp_path / "nope", "not found")
    (tmp_path / "file.sbnn").write_text("x")
    _load_fails(tmp_path / "file.sbnn", "not a sigmabnn model")
    (tmp_path / "emptydir").mkdir()
    _load_fails(tmp_path / "emptydir", "model.json is missing")


def test_non_json_header(saved):
    (saved / HEADER_NAME).write_bytes(b"\x80\x81 not json {")
    _load_fails(saved, "not valid JSON")
    (saved / HEADER_NAME).write_text('{"format": NaN}')
    _load_fails(saved, "not valid JSON")
    (saved / HEADER_NAME).write_text("[" * 100000 + "]" * 100000)
    _load_fails(saved, "JSON")


def test_foreign_or_future_format(saved):
    _edit_header(saved, lambda h: h.update(format="other-model"))
    _load_fails(saved, "not a sigmabnn model")
    _edit_header(saved, lambda h: h.update(format="sigmabnn-model", format_version=2))
    _load_fails(saved, "unsupported model format_version 2")


@pytest.mark.parametrize(
    "edit, pattern",
    [
        (lambda h: h.pop("features"), "lacks the field 'features'"),
        (lambda h: h.update(target=3), "'target' must be a str"),
        (lambda h: h["network"].update(widths=[3, 4, 2]), "num_params"),
        (lambda h: h["network"].update(activations=["tanh", "os.system"]), "activations"),
        (lambda h: h["network"]["likelihood"].update(name="Evil"), "unknown likelihood 'Evil'"),
        (lambda h: h["network"]["likelihood"]["fields"].update(precision=[1]), "must be a number"),
        (lambda h: h["arrays"]["positions"].update(shape=[2, 3, 22]), r"positions must have shape \[chains >= 1"),
        (lambda h: h["arrays"]["noise_precision"].update(shape=[2, 4]), "noise_precision' must have shape"),
        (lambda h: h["arrays"]["positions"].update(dtype="object"), "dtype must be one of"),
        (lambda h: h["arrays"]["positions"].update(shape=[10**9, 10**9, 21]), "absurdly large"),
        (lambda h: h["arrays"].update(evil={"shape": [1], "dtype": "float64"}), "unexpected array 'evil'"),
        (lambda h: h["transforms"]["x"].update(std=[1.0, -1.0, 1.0]), "invalid transforms"),
        (lambda h: h["network"].update(widths=[3] + [1] * 100 + [1]), "network widths"),
    ],
)
def test_bad_header_fields(saved, edit, pattern):
    _edit_header(saved, edit)
    _load_fails(saved, pattern)


def test_truncated_npz(saved):
    data = (saved / ARRAYS_NAME).read_bytes()
    for cut in (len(data) // 2, 100, len(data) - 30):
        (saved / ARRAYS_NAME).write_bytes(data[:cut])
        _load_fails(saved, "npz|truncated|zip")
    (saved / ARRAYS_NAME).unlink()
    _load_fails(saved, "arrays.npz is missing")


def _rewrite_npz(path, arrays):
    with open(path / ARRAYS_NAME, "wb") as f:
        np.savez(f, **arrays)


def _arrays(path):
    with np.load(path / ARRAYS_NAME, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def test_npz_shape_or_dtype_disagrees_with_manifest(saved):
    arrays = _arrays(saved)
    bad = dict(arrays, positions=arrays["positions"][:, :2])
    _rewrite_npz(saved, bad)
    _load_fails(saved, "positions.*declared")
    bad = dict(arrays, positions=arrays["positions"].astype(np.float32))
    _rewrite_npz(saved, bad)
    _load_fails(saved, "positions.*declared")
    bad = dict(arrays, extra=np.zeros(3))
    _rewrite_npz(saved, bad)
    _load_fails(saved, "unexpected member 'extra.npy'")
    bad = {k: v for k, v in arrays.items() if k != "bias_precision"}
    _rewrite_npz(saved, bad)
    _load_fails(saved, "missing member 'bias_precision.npy'")
    bad = dict(arrays, positions=np.asfortranarray(arrays["positions"]))
    _rewrite_npz(saved, bad)
    _load_fails(saved, "positions")


class _Payload:
    marker = ""

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_payload_is_refused_without_execution(saved, tmp_path):
    marker = tmp_path / "pwned"
    _Payload.marker = str(marker)
    evil = np.empty(1, dtype=object)
    evil[0] = _Payload()
    arrays = _arrays(saved)
    # an object array under a manifest name, with the manifest claiming it is float64
    with zipfile.ZipFile(saved / ARRAYS_NAME, "w") as zf:
        for k, v in arrays.items():
            with zf.open(k + ".npy", "w") as f:
                np.lib.format.write_array(f, evil if k == "noise_precision" else v, allow_pickle=True)
    assert b"pwned" in (saved / ARRAYS_NAME).read_bytes()  # the payload is really in the archive
    _load_fails(saved, "Python objects|declared")
    assert not marker.exists()
    # and the same with the manifest also claiming an object dtype
    _edit_header(saved, lambda h: h["arrays"]["noise_precision"].update(dtype="O"))
    _load_fails(saved, "dtype must be")
    assert not marker.exists()


def test_member_with_lying_zip_size(saved):
    # a member whose zip-declared size is far larger than the declared shape allows
    arrays = _arrays(saved)
    with zipfile.ZipFile(saved / ARRAYS_NAME, "w") as zf:
        for k, v in arrays.items():
            with zf.open(k + ".npy", "w") as f:
                np.lib.format.write_array(f, v)
                if k == "positions":
                    f.write(b"\0" * 100_000)
    _load_fails(saved, "member size")


def test_partial_model_beside_its_checkpoint(tmp_path):
    """An interrupted run's model: loadable with its draws, marked incomplete, the checkpoint kept."""
    import dataclasses

    from sigmabnn.io.checkpoint import Checkpoint, has_checkpoint

    path = tmp_path / "m"
    Checkpoint.create(path, {})
    fitted = make_fitted()
    model_file.save_partial_model(fitted, path)
    assert has_checkpoint(path) and json.loads((path / HEADER_NAME).read_text())["complete"] is False
    _assert_same(fitted, load_model(path))

    empty = dataclasses.replace(fitted, draws=PosteriorDraws(
        fitted.draws.positions[:, :0], Hyperparameters(*(a[:, :0] for a in fitted.draws.hyper))))  # fmt: skip
    model_file.save_partial_model(empty, path)
    with pytest.raises(ModelFileError, match=f"without draws yet .*--resume {path}"):
        load_model(path)
    _edit_header(path, lambda h: h.update(complete=True))  # a finished model must hold draws
    _load_fails(path, r"draws >= 1")
    _edit_header(path, lambda h: h.update(complete="no"))
    _load_fails(path, "'complete' must be true or false")

    save_model(fitted, path)  # the finished model replaces the checkpoint
    assert not has_checkpoint(path) and json.loads((path / HEADER_NAME).read_text())["complete"] is True
