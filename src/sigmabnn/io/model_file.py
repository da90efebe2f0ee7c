"""Model files: a directory holding ``model.json`` (everything but arrays) and ``arrays.npz``.

Layout of a model directory::

    model.json   format "sigmabnn-model", format_version 1, complete (false for the
                 partial model of an interrupted run), network (widths,
                 activations, dtype, num_params, prior, likelihood), features,
                 target, derived, transforms, method, settings, diagnostics,
                 data_fingerprint, created, optionally "calibration" (the
                 quantile recalibration map: method, split, n, pit rows; see
                 sigmabnn.calibration; absent in files saved without one),
                 optionally "domain" (the training domain's metric, k,
                 threshold and quantile; see sigmabnn.data.domain; absent in
                 files saved before it existed),
                 "classes" for a classifier (sorted labels, temperature and
                 temperature_map, sigmabnn.classes; required with the
                 categorical likelihood; a file without temperature_map
                 reads as "networks", the map it was fitted with),
                 and "arrays": the manifest
                 name -> {"shape": [...], "dtype": "float64"}
    arrays.npz   one .npy member per manifest entry (uncompressed; never pickled):
                 positions [C, S, num_params], noise_precision [C, S],
                 weight_precision [C, S, L], bias_precision [C, S, L],
                 adapted.<name> (adapted sampler parameters, optional),
                 domain_reference [m, p] float64 (the domain's standardised
                 reference inputs; with "domain" only)

Saving is atomic (:func:`sigmabnn.io.atomic.atomic_directory`): the directory
appears complete or not at all. A run trained with a checkpoint
(:mod:`sigmabnn.io.checkpoint`) keeps it in ``checkpoint/`` inside the model
directory; an interrupted run leaves there a partial model
(:func:`save_partial_model`, ``"complete": false``) holding the draws so far.

Loading treats the files as untrusted and validates *before* allocating:
JSON size and syntax, format name and version, every field and its type,
the architecture and its parameter count against the declared shapes, sizes
against fixed bounds and against the size of ``arrays.npz``, the member list
of the archive, and the ``.npy`` header (shape, dtype, order) of every member
against the manifest, all before any array data is read. Object dtypes are
refused and nothing is ever unpickled. Any problem raises
:class:`~sigmabnn.errors.ModelFileError` with a one-line message.

:func:`load_model` returns NumPy arrays; JAX converts them on first use.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from sigmabnn._version import __version__
from sigmabnn.calibration import Calibration
from sigmabnn.classes import ClassLabels
from sigmabnn.data.domain import Domain
from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.errors import ModelFileError
from sigmabnn.fitted import FittedModel
from sigmabnn.io.atomic import atomic_directory, atomic_write, atomic_write_text
from sigmabnn.io.checkpoint import has_checkpoint
from sigmabnn.io.npy import MAX_NPY_HEADER, read_npy_header
from sigmabnn.model.likelihoods import LIKELIHOODS
from sigmabnn.model.mlp import ACTIVATIONS, MLP, num_params
from sigmabnn.model.posterior import BNN, Hyperparameters
from sigmabnn.model.priors import GaussianPrior

__all__ = [
    "ARRAYS_NAME",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "HEADER_NAME",
    "load_model",
    "read_header",
    "save_model",
    "save_partial_model",
    "to_jsonable",
]

FORMAT_NAME = "sigmabnn-model"
FORMAT_VERSION = 1
HEADER_NAME = "model.json"
ARRAYS_NAME = "arrays.npz"

#: Bounds that reject absurd declarations before anything is allocated.
MAX_HEADER_BYTES = 64 * 2**20
MAX_LAYERS = 64
MAX_WIDTH = 1_000_000
MAX_NUM_PARAMS = 2**31
MAX_ARRAY_BYTES = 16 * 2**30
MAX_NDIM = 4

_ARRAY_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
_DRAW_ARRAYS = ("positions", "noise_precision", "weight_precision", "bias_precision")
_ADAPTED_PREFIX = "adapted."
_DOMAIN_ARRAY = "domain_reference"
#: The one domain metric so far (:mod:`sigmabnn.data.domain`); a file naming another is refused.
DOMAIN_METRIC = "knn_mean_euclidean_standardised"
_ADAPTED_DTYPES = {"float32", "float64", "int32", "int64", "bool"}
_LIKELIHOOD_CLASSES = {cls.__name__: cls for cls in LIKELIHOODS.values()}
_PRIOR_CLASSES = {"GaussianPrior": GaussianPrior}
_REQUIRED = {
    "format": str,
    "format_version": int,
    "network": dict,
    "features": list,
    "target": str,
    "derived": list,
    "transforms": dict,
    "method": str,
    "settings": dict,
    "diagnostics": dict,
    "data_fingerprint": str,
    "created": str,
    "arrays": dict,
}


# --------------------------------------------------------------------------- JSON helpers


def to_jsonable(value: Any) -> Any:
    """NumPy/JAX scalars and arrays -> lists and Python numbers; NaN/inf -> ``None``; keys -> str."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "tolist"):
        return to_jsonable(np.asarray(value).tolist())
    return str(value)


def _dataclass_json(obj: Any) -> dict[str, Any]:
    return {"name": type(obj).__name__, "fields": {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}}


# --------------------------------------------------------------------------- saving


def _as_dtype(a: Any, dtype: np.dtype) -> np.ndarray:
    """``a`` as a NumPy array of ``dtype``, without copying when it already is one (draws may be
    memory-mapped and larger than memory: ``np.savez`` streams them in C order)."""
    a = np.asarray(a)
    return a if a.dtype == dtype else a.astype(dtype)


def _arrays_of(fitted: FittedModel) -> dict[str, np.ndarray]:
    dtype = np.dtype(fitted.bnn.dtype)
    d = fitted.draws
    arrays = {
        "positions": _as_dtype(d.positions, dtype),
        "noise_precision": _as_dtype(d.hyper.noise_precision, dtype),
        "weight_precision": _as_dtype(d.hyper.weight_precision, dtype),
        "bias_precision": _as_dtype(d.hyper.bias_precision, dtype),
    }
    for name, value in fitted.adapted.items():
        if not _ARRAY_NAME.match(str(name)):
            raise ValueError(f"adapted parameter name {name!r} is not a valid array name")
        a = np.ascontiguousarray(np.asarray(value))
        if a.dtype.name not in _ADAPTED_DTYPES:
            raise ValueError(f"adapted parameter {name!r} has unsupported dtype {a.dtype}")
        arrays[_ADAPTED_PREFIX + str(name)] = a
    if fitted.domain is not None:
        arrays[_DOMAIN_ARRAY] = np.ascontiguousarray(fitted.domain.reference, dtype=np.float64)
    return arrays


def _domain_header(domain: Domain) -> dict[str, Any]:
    return {"metric": DOMAIN_METRIC, "k": int(domain.k), "threshold": float(domain.threshold),
            "quantile": float(domain.quantile)}  # fmt: skip


def _header_of(fitted: FittedModel, arrays: dict[str, np.ndarray], complete: bool = True) -> dict[str, Any]:
    bnn = fitted.bnn
    return {
        "complete": complete,
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "sigmabnn_version": __version__,
        "created": fitted.created,
        "network": {
            "widths": list(bnn.mlp.widths),
            "activations": list(bnn.mlp.activations),
            "dtype": bnn.dtype,
            "num_params": num_params(bnn.mlp),
            "prior": _dataclass_json(bnn.prior),
            "likelihood": _dataclass_json(bnn.likelihood),
        },
        "features": list(fitted.feature_names),
        "target": fitted.target_name,
        "derived": [[str(n), str(e)] for n, e in fitted.derived],
        "transforms": {"x": fitted.x_transform.to_json(), "y": fitted.y_transform.to_json()},
        "method": fitted.method,
        "settings": to_jsonable(fitted.settings),
        "diagnostics": to_jsonable(fitted.diagnostics),
        "data_fingerprint": fitted.data_fingerprint,
        **({} if fitted.calibration is None else {"calibration": fitted.calibration.to_json()}),
        **({} if fitted.domain is None else {"domain": _domain_header(fitted.domain)}),
        **({} if fitted.classes is None else {"classes": fitted.classes.to_json()}),
        "draws": {"num_chains": fitted.draws.num_chains, "num_draws": fitted.draws.num_draws},
        "arrays": {name: {"shape": list(a.shape), "dtype": a.dtype.name} for name, a in arrays.items()},
    }


def _header_text(fitted: FittedModel, arrays: dict[str, np.ndarray], complete: bool) -> str:
    header = _header_of(fitted, arrays, complete)
    _validate_header(header)  # never write what we could not read back
    return json.dumps(header, indent=1, allow_nan=False) + "\n"


def save_model(fitted: FittedModel, path: str | os.PathLike[str]) -> Path:
    """Write ``fitted`` as a model directory at ``path`` (atomically; replaces an existing model).

    Returns the path. Raises ``ValueError`` if the model is inconsistent
    (e.g. positions that do not match the architecture).
    """
    path = Path(path)
    arrays = _arrays_of(fitted)
    text = _header_text(fitted, arrays, complete=True)
    if path.exists() and path.is_dir() and not (path / HEADER_NAME).is_file() and any(path.iterdir()):
        if not has_checkpoint(path):  # a checkpoint is replaced by the model it was training
            raise ModelFileError(f"refusing to replace {path}: a non-empty directory that is not a model")
    with atomic_directory(path) as tmp:
        (tmp / HEADER_NAME).write_text(text, encoding="utf-8")
        with open(tmp / ARRAYS_NAME, "wb") as f:
            np.savez(f, **arrays)
    return path


def save_partial_model(fitted: FittedModel, path: str | os.PathLike[str]) -> Path:
    """Write the model of an interrupted run into its directory ``path``, beside its checkpoint.

    The header says ``"complete": false``; the draws may be empty (``[C, 0, d]``, interrupted
    before sampling), and :func:`load_model` then refuses the model with a hint to resume it.
    The two files are replaced one by one: ``model.json`` is removed first and written last, so
    a kill in between leaves no header (the checkpoint still resumes), never a header that
    describes other arrays.
    """
    path = Path(path)
    arrays = _arrays_of(fitted)
    text = _header_text(fitted, arrays, complete=False)
    (path / HEADER_NAME).unlink(missing_ok=True)
    atomic_write(path / ARRAYS_NAME, lambda f: np.savez(f, **arrays))
    atomic_write_text(path / HEADER_NAME, text)
    return path


# --------------------------------------------------------------------------- validation


def _fail(message: str) -> ModelFileError:
    return ModelFileError(" ".join(message.split()))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _scalar_fields(spec: Any, what: str, classes: dict[str, type]) -> Any:
    if not isinstance(spec, dict) or set(spec) != {"name", "fields"} or not isinstance(spec["fields"], dict):
        raise _fail(f"{what} must be an object with 'name' and 'fields'")
    cls = classes.get(spec["name"]) if isinstance(spec["name"], str) else None
    if cls is None:
        raise _fail(f"unknown {what} {spec['name']!r}; known: {', '.join(sorted(classes))}")
    allowed = {f.name: f for f in dataclasses.fields(cls)}
    fields = spec["fields"]
    for key, value in fields.items():
        if key not in allowed:
            raise _fail(f"{what} {spec['name']} has no field {key!r}")
        if not (value is None or isinstance(value, bool | int | float | str)):
            raise _fail(f"{what} field {key!r} must be a number, string or boolean")
        if isinstance(value, float) and not math.isfinite(value):
            raise _fail(f"{what} field {key!r} is not finite")
    try:
        return cls(**fields)
    except (TypeError, ValueError) as err:
        raise _fail(f"invalid {what}: {err}") from None


def _prior_groups(spec: Any, mlp: MLP) -> int:
    """The number of precision groups of the header's prior for ``mlp`` (the hyperparameter arrays' last axis)."""
    prior = _scalar_fields(spec, "prior", _PRIOR_CLASSES)
    try:
        prior.groups(mlp)
    except ValueError as err:
        raise _fail(f"invalid prior: {err}") from None
    return prior.num_groups(mlp)


def _shape_bytes(name: str, entry: Any) -> tuple[tuple[int, ...], np.dtype, int]:
    if not isinstance(entry, dict) or set(entry) != {"shape", "dtype"}:
        raise _fail(f"array {name!r}: manifest entry must have exactly 'shape' and 'dtype'")
    shape, dtype_name = entry["shape"], entry["dtype"]
    if not isinstance(shape, list) or len(shape) > MAX_NDIM or not all(_is_int(s) and s >= 0 for s in shape):
        raise _fail(f"array {name!r}: shape must be a list of at most {MAX_NDIM} non-negative integers")
    allowed = _ADAPTED_DTYPES if name.startswith(_ADAPTED_PREFIX) else {"float32", "float64"}
    if not isinstance(dtype_name, str) or dtype_name not in allowed:
        raise _fail(f"array {name!r}: dtype must be one of {', '.join(sorted(allowed))}, got {dtype_name!r}")
    dtype = np.dtype(dtype_name)
    nbytes = dtype.itemsize
    for s in shape:
        nbytes *= s
        if nbytes > MAX_ARRAY_BYTES:
            raise _fail(f"array {name!r}: declared shape {shape} is absurdly large (> {MAX_ARRAY_BYTES} bytes)")
    return tuple(shape), dtype, nbytes


def _validate_header(h: Any) -> dict[str, Any]:
    """Check the parsed ``model.json``; returns ``{name: (shape, dtype, nbytes)}`` of the manifest."""
    if not isinstance(h, dict):
        raise _fail("model.json must hold a JSON object")
    if h.get("format") != FORMAT_NAME:
        raise _fail(f"not a sigmabnn model (format {h.get('format')!r}, expected {FORMAT_NAME!r})")
    version = h.get("format_version")
    if not _is_int(version) or version != FORMAT_VERSION:
        raise _fail(f"unsupported model format_version {version!r} (this sigmabnn reads version {FORMAT_VERSION})")
    for key, typ in _REQUIRED.items():
        if key not in h:
            raise _fail(f"model.json lacks the field {key!r}")
        if not isinstance(h[key], typ) or (typ is int and isinstance(h[key], bool)):
            raise _fail(f"model.json field {key!r} must be a {typ.__name__}")
    complete = h.get("complete", True)
    if not isinstance(complete, bool):
        raise _fail("model.json field 'complete' must be true or false")
    net = h["network"]
    for key in ("widths", "activations", "dtype", "num_params", "prior", "likelihood"):
        if key not in net:
            raise _fail(f"network lacks the field {key!r}")
    widths = net["widths"]
    if (
        not isinstance(widths, list)
        or not 2 <= len(widths) <= MAX_LAYERS + 1
        or not all(_is_int(w) and 1 <= w <= MAX_WIDTH for w in widths)
    ):
        raise _fail(f"network widths must be 2 to {MAX_LAYERS + 1} integers in [1, {MAX_WIDTH}]")
    acts = net["activations"]
    if not isinstance(acts, list) or len(acts) != len(widths) - 1 or not all(a in ACTIVATIONS for a in acts):
        raise _fail("network activations must name one known activation per layer")
    if net["dtype"] not in ("float32", "float64"):
        raise _fail(f"network dtype must be float32 or float64, got {net['dtype']!r}")
    mlp = MLP(tuple(widths), tuple(acts))
    d = num_params(mlp)
    if d > MAX_NUM_PARAMS or net["num_params"] != d:
        raise _fail(f"network num_params {net['num_params']!r} does not match the architecture ({d})")
    n_feat = len(h["features"])
    if not all(isinstance(f, str) for f in h["features"]) or n_feat != widths[0]:
        raise _fail(f"features must be {widths[0]} column names (the network's input width)")
    derived = h["derived"]
    if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p) for p in derived):
        raise _fail("derived must be a list of [name, expression] string pairs")
    tr = h["transforms"]
    if set(tr) != {"x", "y"}:
        raise _fail("transforms must have exactly 'x' and 'y'")
    if "calibration" in h:  # optional (files written before recalibration existed lack it)
        cal = h["calibration"]
        rows = cal.get("pit") if isinstance(cal, dict) else None
        width = len(rows[0]) if isinstance(rows, list) and rows and isinstance(rows[0], list) else 0
        try:
            Calibration.from_json(cal, max(width, 1))
        except ValueError as err:
            raise _fail(f"invalid calibration: {err}") from None

    _validate_classes(h)
    manifest = h["arrays"]
    specs: dict[str, tuple[tuple[int, ...], np.dtype, int]] = {}
    for name, entry in manifest.items():
        base = name[len(_ADAPTED_PREFIX) :] if name.startswith(_ADAPTED_PREFIX) else name
        if not _ARRAY_NAME.match(base) or (name == base and name not in (*_DRAW_ARRAYS, _DOMAIN_ARRAY)):
            raise _fail(f"unexpected array {name!r} in the manifest")
        specs[name] = _shape_bytes(name, entry)
    for name in _DRAW_ARRAYS:
        if name not in specs:
            raise _fail(f"the manifest lacks the array {name!r}")
    pos_shape = specs["positions"][0]
    min_draws = 1 if complete else 0  # an interrupted run may not have reached its first draw
    if len(pos_shape) != 3 or pos_shape[0] < 1 or pos_shape[1] < min_draws or pos_shape[2] != d:
        raise _fail(f"positions must have shape [chains >= 1, draws >= {min_draws}, {d}], declared {list(pos_shape)}")
    c, s = pos_shape[:2]
    groups = _prior_groups(net["prior"], MLP(tuple(widths), tuple(net["activations"])))
    expected = {
        "noise_precision": (c, s),
        "weight_precision": (c, s, groups),
        "bias_precision": (c, s, groups),
    }
    for name in _DRAW_ARRAYS:
        shape, dtype, _ = specs[name]
        if dtype.name != net["dtype"]:
            raise _fail(f"array {name!r} has dtype {dtype.name}, the network {net['dtype']}")
        if name in expected and shape != expected[name]:
            raise _fail(f"array {name!r} must have shape {list(expected[name])}, declared {list(shape)}")
    _validate_domain(h, specs, widths[0])
    return specs


def _validate_domain(h: dict[str, Any], specs: dict[str, Any], num_features: int) -> None:
    """The optional ``domain`` entry and its ``domain_reference`` array: both or neither, consistent."""
    if "domain" not in h:
        if _DOMAIN_ARRAY in specs:
            raise _fail(f"the manifest has {_DOMAIN_ARRAY!r} but model.json has no 'domain'")
        return
    dom = h["domain"]
    if not isinstance(dom, dict) or set(dom) != {"metric", "k", "threshold", "quantile"}:
        raise _fail("domain must be an object with exactly 'metric', 'k', 'threshold' and 'quantile'")
    if dom["metric"] != DOMAIN_METRIC:
        raise _fail(f"unknown domain metric {dom['metric']!r} (this sigmabnn reads {DOMAIN_METRIC!r})")
    if _DOMAIN_ARRAY not in specs:
        raise _fail(f"model.json has a 'domain' but the manifest lacks the array {_DOMAIN_ARRAY!r}")
    shape, dtype, _ = specs[_DOMAIN_ARRAY]
    if len(shape) != 2 or shape[0] < 2 or shape[1] != num_features or dtype.name != "float64":
        raise _fail(f"array {_DOMAIN_ARRAY!r} must be float64 [m >= 2, {num_features}], declared {list(shape)}")
    k, threshold, quantile = dom["k"], dom["threshold"], dom["quantile"]
    if not _is_int(k) or not 1 <= k < shape[0]:
        raise _fail(f"domain k must be an integer from 1 to {shape[0] - 1}, got {k!r}")
    for key, value in (("threshold", threshold), ("quantile", quantile)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise _fail(f"domain {key} must be a finite number, got {value!r}")
    if threshold < 0 or not 0 < quantile <= 1:
        raise _fail(f"domain threshold must be >= 0 and quantile in (0, 1], got {threshold!r} and {quantile!r}")


def _validate_classes(h: dict[str, Any]) -> ClassLabels | None:
    """The header's label set (``None`` without one); a classifier must have one with a label per output."""
    lik = h["network"]["likelihood"]
    is_classifier = isinstance(lik, dict) and lik.get("name") == "Categorical"
    if "classes" not in h:
        if is_classifier:
            raise _fail("a categorical model lacks its class labels ('classes')")
        return None
    try:
        classes = ClassLabels.from_json(h["classes"])
    except ValueError as err:
        raise _fail(f"invalid classes: {err}") from None
    if not is_classifier or classes.num_classes != h["network"]["widths"][-1]:
        raise _fail("the class labels do not match the network (categorical, one output per class)")
    return classes


def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The validated ``model.json`` of a model directory (no arrays are read)."""
    header, _ = _read_and_validate_header(Path(path))
    return header


def _read_and_validate_header(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    if not path.exists():
        raise _fail(f"model file not found: {path}")
    if not path.is_dir():
        raise _fail(f"{path} is not a sigmabnn model (expected a directory holding {HEADER_NAME} and {ARRAYS_NAME})")
    hp = path / HEADER_NAME
    if not hp.is_file():
        raise _fail(f"{path} is not a sigmabnn model: {HEADER_NAME} is missing")
    size = hp.stat().st_size
    if size > MAX_HEADER_BYTES:
        raise _fail(f"{hp} is too large ({size} bytes) for a model header")
    raw = hp.read_bytes()
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, RecursionError) as err:
        raise _fail(f"{hp} is not valid JSON: {err}") from None
    specs = _validate_header(header)
    return header, specs


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


# --------------------------------------------------------------------------- loading arrays


def _stored_data_offset(raw: Any, info: zipfile.ZipInfo, file_size: int) -> int:
    """Offset in the archive of an uncompressed member's first byte (after its local header)."""
    raw.seek(info.header_offset)
    local = raw.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise _fail(f"member {info.filename!r}: bad local zip header")
    start = info.header_offset + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
    if start + info.file_size > file_size:
        raise _fail(f"member {info.filename!r} is truncated")
    return start


def _read_into(raw: Any, start: int, shape: tuple[int, ...], dtype: np.dtype, nbytes: int, name: str) -> np.ndarray:
    out = np.empty(shape, dtype=dtype)
    if nbytes:
        raw.seek(start)
        got = raw.readinto(memoryview(out.reshape(-1)).cast("B"))
        if got != nbytes:
            raise _fail(f"array {name!r} is truncated")
    return out


def _load_arrays(npz: Path, specs: dict[str, Any], verify_checksums: bool = False) -> dict[str, np.ndarray]:
    if not npz.is_file():
        raise _fail(f"{npz.parent} is not a complete sigmabnn model: {ARRAYS_NAME} is missing")
    file_size = npz.stat().st_size
    try:
        zf = zipfile.ZipFile(npz)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
        raise _fail(f"{npz} is not a valid npz archive ({err})") from None
    with zf:
        infos = {info.filename: info for info in zf.infolist()}
        expected = {name + ".npy" for name in specs}
        if set(infos) != expected:
            extra = sorted(set(infos) - expected)
            missing = sorted(expected - set(infos))
            what = f"unexpected member {extra[0]!r}" if extra else f"missing member {missing[0]!r}"
            raise _fail(f"{npz} does not match the manifest of {HEADER_NAME}: {what}")
        declared_total = 0
        for name, (_, _, nbytes) in specs.items():
            info = infos[name + ".npy"]
            if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                raise _fail(f"array {name!r}: unsupported compression in {npz}")
            if info.file_size < nbytes or info.file_size > nbytes + MAX_NPY_HEADER + 12:
                raise _fail(f"array {name!r}: member size {info.file_size} does not match its declared shape")
            if info.compress_type == zipfile.ZIP_STORED:
                declared_total += info.file_size
        if declared_total > file_size:
            raise _fail(f"{npz} is truncated: it declares more data than the file holds")
        # headers of every member first (cheap), then the data
        offsets = {}
        for name, (shape, dtype, _) in specs.items():
            with zf.open(infos[name + ".npy"]) as f:
                got_shape, fortran, got_dtype, offset = read_npy_header(f, name)
            if got_dtype.hasobject:
                raise _fail(f"array {name!r} holds Python objects (pickles are never loaded)")
            if got_shape != shape or got_dtype != dtype or fortran:
                raise _fail(
                    f"array {name!r} is {got_dtype.str}{list(got_shape)} in {ARRAYS_NAME}, "
                    f"declared {dtype.str}{list(shape)}"
                )
            if infos[name + ".npy"].file_size != offset + dtype.itemsize * math.prod(shape):
                raise _fail(f"array {name!r}: member size does not match its header")
            offsets[name] = offset
        out = {}
        with open(npz, "rb") as raw:
            for name, (shape, dtype, nbytes) in specs.items():
                info = infos[name + ".npy"]
                if info.compress_type == zipfile.ZIP_STORED and not verify_checksums:
                    start = _stored_data_offset(raw, info, file_size) + offsets[name]
                    out[name] = _read_into(raw, start, shape, dtype, nbytes, name)
                else:
                    with zf.open(info) as f:  # decompresses and checks the CRC
                        f.read(offsets[name])
                        data = f.read(nbytes)
                        if len(data) != nbytes or f.read(1):
                            raise _fail(f"array {name!r} is truncated")
                    out[name] = np.frombuffer(data, dtype=dtype).reshape(shape)
    return out


# --------------------------------------------------------------------------- loading


def load_model(path: str | os.PathLike[str], *, verify_checksums: bool = False) -> FittedModel:
    """Read and validate a model directory written by :func:`save_model`.

    Everything structural is always validated (see the module docstring).
    ``verify_checksums=True`` additionally checks the zip CRC-32 of every
    array's bytes (catches bit rot; costs about as much as reading the data
    twice), so by default the array bytes of uncompressed members are read
    straight into their arrays.

    Raises:
        ModelFileError: missing, corrupt, truncated, foreign or unsupported files (one line).
    """
    path = Path(path)
    try:
        header, specs = _read_and_validate_header(path)
        net = header["network"]
        prior = _scalar_fields(net["prior"], "prior", _PRIOR_CLASSES)
        likelihood = _scalar_fields(net["likelihood"], "likelihood", _LIKELIHOOD_CLASSES)
        try:
            x_transform = Standardizer.from_json(header["transforms"]["x"])
            y_transform = TargetTransform.from_json(header["transforms"]["y"])
        except ValueError as err:
            raise _fail(f"invalid transforms: {err}") from None
        if x_transform.dim != net["widths"][0]:
            raise _fail("the input transform does not match the network's input width")
        if likelihood.output_dim(y_transform.standardizer.dim) != net["widths"][-1]:
            raise _fail("the target transform and likelihood do not match the network's output width")
        base = y_transform.baseline
        if base is not None and not set(base.features) <= set(header["features"]):
            raise _fail("the target's baseline reads features that are not inputs of the model")
        if specs["positions"][0][1] == 0:
            raise _fail(
                f"{path} is an interrupted training run without draws yet (stopped before sampling); "
                f"continue it with 'sigmabnn train --resume {path}'"
            )
        calibration = None
        if "calibration" in header:
            try:
                calibration = Calibration.from_json(header["calibration"], y_transform.standardizer.dim)
            except ValueError as err:
                raise _fail(f"invalid calibration: {err}") from None
        classes = _validate_classes(header)
        arrays = _load_arrays(path / ARRAYS_NAME, specs, verify_checksums)
        domain = _domain_of(header, arrays)
    except ModelFileError:
        raise
    except (OSError, zipfile.BadZipFile, EOFError, ValueError, KeyError, TypeError, MemoryError) as err:
        raise _fail(f"cannot read model {path}: {type(err).__name__}: {err}") from None

    bnn = BNN(
        mlp=MLP(tuple(net["widths"]), tuple(net["activations"])),
        prior=prior,
        likelihood=likelihood,
        dtype=net["dtype"],
    )
    draws = PosteriorDraws(
        positions=arrays["positions"],
        hyper=Hyperparameters(
            noise_precision=arrays["noise_precision"],
            weight_precision=arrays["weight_precision"],
            bias_precision=arrays["bias_precision"],
        ),
    )
    adapted = {k[len(_ADAPTED_PREFIX) :]: v for k, v in arrays.items() if k.startswith(_ADAPTED_PREFIX)}
    return FittedModel(
        bnn=bnn,
        draws=draws,
        x_transform=x_transform,
        y_transform=y_transform,
        feature_names=tuple(header["features"]),
        target_name=header["target"],
        derived=tuple((n, e) for n, e in header["derived"]),
        method=header["method"],
        settings=header["settings"],
        adapted=adapted,
        diagnostics=header["diagnostics"],
        data_fingerprint=header["data_fingerprint"],
        created=header["created"],
        calibration=calibration,
        domain=domain,
        classes=classes,
    )


def _domain_of(header: dict[str, Any], arrays: dict[str, np.ndarray]) -> Domain | None:
    """The stored training domain (validated by :func:`_validate_domain`), or ``None``."""
    if "domain" not in header:
        return None
    dom = header["domain"]
    try:
        return Domain(reference=arrays[_DOMAIN_ARRAY], k=dom["k"], threshold=dom["threshold"], quantile=dom["quantile"])
    except ValueError as err:  # e.g. non-finite reference values
        raise _fail(f"invalid domain: {err}") from None
