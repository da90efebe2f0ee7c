"""Small helpers shared by the command modules: argument types, path checks, output formatting.

Nothing here imports JAX (``sigmabnn --help`` must stay fast). Path checks run
*before* any expensive work, so a typo in ``--out`` fails in a millisecond,
not after an hour of sampling.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sigmabnn.errors import InputError

STDOUT = "-"


# ---------------------------------------------------------------- argument types


def _checked(text: str, cast: Any, accept: Any, bad_form: str, out_of_range: str | None = None) -> Any:
    """Parse ``text`` with ``cast``; raise argparse's error with ``bad_form`` (or ``out_of_range``
    when the value parses but ``accept(value)`` is false), each followed by ``got 'text'``."""
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{bad_form}, got {text!r}") from None
    if not accept(value):
        raise argparse.ArgumentTypeError(f"{out_of_range or bad_form}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return _checked(text, int, lambda v: v >= 1, "expected a positive integer")


def nonnegative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    return _checked(text, int, lambda v: v >= 0, "expected a non-negative integer")


def seed(text: str) -> int:
    """argparse type: a random seed, an integer from 0 to 2**63 - 1 (what ``jax.random.key`` takes)."""
    return _checked(text, int, lambda v: 0 <= v < 2**63, "expected a seed, an integer from 0 to 2**63 - 1")


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    return _checked(text, float, lambda v: math.isfinite(v) and v > 0, "expected a positive number")


def fraction(text: str) -> float:
    """argparse type: a fraction in ``[0, 1)``."""
    return _checked(text, float, lambda v: 0.0 <= v < 1.0, "expected a fraction from 0 up to (not including) 1")


def level(text: str) -> float:
    """argparse type: a central-interval probability strictly between 0 and 1 (e.g. ``0.95``)."""
    return _checked(
        text,
        float,
        lambda v: 0.0 < v < 1.0,
        "expected a probability such as 0.95",
        "interval level must lie strictly between 0 and 1",
    )


def column_list(text: str) -> list[str]:
    """argparse type: ``a,b,c`` -> ``["a", "b", "c"]`` (no empty names, no repeats)."""
    names = [n.strip() for n in text.split(",")]
    if not names or any(not n for n in names):
        raise argparse.ArgumentTypeError(f"expected comma-separated column names, got {text!r}")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"column listed twice in {text!r}")
    return names


def split_fractions(text: str) -> tuple[float, float, float]:
    """argparse type: ``0.8,0.1,0.1`` -> train/validation/test fractions (non-negative, sum 1)."""
    try:
        parts = tuple(float(p) for p in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected three fractions such as 0.8,0.1,0.1, got {text!r}") from None
    if len(parts) == 2:
        parts = parts + (0.0,)
    if len(parts) != 3 or any(not (0.0 <= p <= 1.0) for p in parts) or parts[0] <= 0.0:
        raise argparse.ArgumentTypeError(f"expected train,val,test fractions such as 0.8,0.1,0.1, got {text!r}")
    if abs(sum(parts) - 1.0) > 1e-6:
        raise argparse.ArgumentTypeError(f"split fractions must add up to 1, got {text!r}")
    return parts  # type: ignore[return-value]


def architecture(text: str) -> str:
    """argparse type: a width list such as ``5-20-20-1`` (checked for form only; the API checks the rest)."""
    parts = text.replace(",", "-").split("-")
    if len(parts) < 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"architecture must look like 5-20-20-1, got {text!r}")
    return text


def derive_expression(text: str) -> str:
    """argparse type: ``name=expression`` (the expression itself is checked by the feature parser)."""
    name, sep, expr = text.partition("=")
    if not sep or not name.strip() or not expr.strip():
        raise argparse.ArgumentTypeError(f"expected name=expression, got {text!r}")
    return text


# ---------------------------------------------------------------- path checks


def input_file(path: str | os.PathLike[str], what: str = "data file") -> Path:
    """The path of an existing, readable regular file, or :class:`InputError`."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{what} not found: {p}")
    if p.is_dir():
        raise InputError(f"{what} is a directory, not a file: {p}")
    if not os.access(p, os.R_OK):
        raise InputError(f"{what} is not readable: {p}")
    return p


def output_file(path: str | os.PathLike[str], what: str = "output file") -> Path | None:
    """Check that ``path`` can be written (``"-"`` = stdout -> ``None``); raises :class:`InputError`.

    The file itself is not created here: results are written atomically
    (temporary name, then rename) once they exist.
    """
    if str(path) == STDOUT:
        return None
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} is a directory: {p}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise InputError(f"directory of the {what} does not exist: {parent}")
    if not parent.is_dir():
        raise InputError(f"directory of the {what} is not a directory: {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write the {what} (directory not writable): {p}")
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"cannot overwrite the {what} (file not writable): {p}")
    return p


def replaceable_directory(path: str | os.PathLike[str], marker: str, noun: str, kind: str, not_a_dir: str) -> Path:
    """Check that a directory output can be written at ``path``, replacing only an earlier output of its kind.

    ``path`` may be new, an empty directory or a directory holding ``marker``
    (an earlier output, replaced as a whole); any other existing file or
    non-empty directory is refused with an :class:`InputError`, before any work starts.
    ``noun`` names the output in messages ("model"), ``kind`` what an earlier output is
    ("a model"), ``not_a_dir`` the message for an existing file at ``path``.
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"{not_a_dir}: {p}")
    if p.is_dir() and not (p / marker).is_file() and any(p.iterdir()):
        raise InputError(f"refusing to replace {p}: a non-empty directory that is not {kind}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"directory of the {noun} does not exist: {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write the {noun} (directory not writable): {p}")
    return p


def output_model(path: str | os.PathLike[str]) -> Path:
    """Check that a model (a directory, see :mod:`sigmabnn.io.model_file`) can be written at ``path``.

    An existing model at ``path`` may be replaced; any other existing file or
    non-empty directory is refused, before training starts.
    """
    if str(path) == STDOUT:
        raise InputError("--out needs a path (a model cannot go to stdout)")
    return replaceable_directory(path, "model.json", "model", "a model", "model path exists and is not a model")


def directory_size(path: Path) -> int:
    """Bytes in the regular files of ``path`` (a file's own size if it is a file)."""
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def writable_dir(path: str | os.PathLike[str], what: str = "output directory") -> Path:
    """Check, without creating anything, that ``path`` is or can become a writable directory: an existing one,
    or a new one whose nearest existing ancestor is a writable directory; raises :class:`InputError`."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"{what} exists and is not a directory: {p}")
    ancestor = p if p.exists() else next((a for a in p.absolute().parents if a.exists()), Path("/"))
    if not ancestor.is_dir():
        raise InputError(f"cannot create the {what} {p}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"{what} is not writable: {p}" if ancestor == p else f"cannot create the {what} {p}: "
                         f"{ancestor} is not writable")  # fmt: skip
    return p


def output_dir(path: str | os.PathLike[str], what: str = "output directory") -> Path:
    """Create ``path`` (and parents) if needed; raises :class:`InputError` if it cannot be a writable directory."""
    p = writable_dir(path, what)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the {what} {p}: {err.strerror or err}") from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise InputError(f"{what} is not writable: {p}")
    return p


# ---------------------------------------------------------------- formatting


def format_seconds(seconds: float) -> str:
    """``75.3 -> "1 min 15 s"``, ``4.21 -> "4.2 s"``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def relevance_text(relevance: dict[str, float]) -> str:
    """An ARD model's :meth:`~sigmabnn.fitted.FittedModel.input_relevance`, the inputs ranked, as one line."""
    ranked = sorted(relevance.items(), key=lambda kv: -kv[1])
    text = ", ".join(f"{name} {format_value(value)}" for name, value in ranked)
    return f"{text} (ARD: prior std of each input's weights, largest first)"


def format_value(value: Any) -> str:
    """A number or short value as it appears in a summary table."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return ", ".join(format_value(v) for v in value)
    return str(value)


def flatten_mapping(mapping: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested mapping -> ``[("a.b", value), ...]`` in insertion order."""
    rows: list[tuple[str, Any]] = []
    for key, value in mapping.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            rows.extend(flatten_mapping(value, name))
        else:
            rows.append((name, value))
    return rows


def print_table(rows: Iterable[tuple[str, Any]], file=None, indent: str = "  ") -> None:
    """Two aligned columns: name, value."""
    rows = list(rows)
    if not rows:
        return
    out = sys.stdout if file is None else file
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{indent}{name.ljust(width)}  {format_value(value)}", file=out)


def to_builtin(value: Any) -> Any:
    """NumPy / JAX scalars and arrays -> plain Python (for JSON); non-finite floats -> None."""
    if isinstance(value, Mapping):
        return {str(k): to_builtin(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_builtin(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return to_builtin(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value
