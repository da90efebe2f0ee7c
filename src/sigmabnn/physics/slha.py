"""SLHA spectrum files in, SLHA ``XSECTION`` blocks out.

Reading (:func:`read_points`) turns SLHA spectrum files into feature rows with
the column names of the built-in data set:

============== ============================================================
column         SLHA entry
============== ============================================================
``m_<pdg>``    ``BLOCK MASS``, entry ``<pdg>`` (GeV, sign kept as written)
``N<pdg>_<j>`` ``BLOCK NMIX``, entry ``(i, j)``; ``i`` = 1..4 for neutralino
               ``<pdg>`` = 1000022, 1000023, 1000025, 1000035
``U<pdg>_<j>`` ``BLOCK UMIX``, entry ``(i, j)``; ``i`` = 1 (1000024), 2 (1000037)
``V<pdg>_<j>`` ``BLOCK VMIX``, entry ``(i, j)``
============== ============================================================

Mass sign convention: SLHA1 (and SLHA2 without ``IMNMIX``) uses a real
neutralino mixing matrix, so some neutralino masses in ``MASS`` are negative;
the built-in data keeps those signs and so does this reader. A file with
non-zero imaginary mixing entries (``IMNMIX``, ``IMUMIX``, ``IMVMIX``) uses
the complex convention with positive masses; its features would not mean what
the model was trained on, so it is rejected.

Writing (:func:`write_xsections`) appends one ``XSECTION`` block per process to
a copy of the spectrum file, in the Les Houches 2013 format read by pyslha and
SModelS::

    XSECTION  SQRTS  2212 2212  2  PDG1 PDG2
       SCALE_SCHEME QCD_ORDER EW_ORDER KAPPA_F KAPPA_R PDF_ID VALUE CODE VERSION

with ``SQRTS`` in GeV and ``VALUE`` the central prediction (SLHA expects pb;
sigmabnn writes the number in the unit of the training data, see
:mod:`sigmabnn.datasets` for what is known about the built-in data's unit).
The format has no field for an uncertainty, so the predictive standard
deviation and the central intervals follow the value line as indented comment
lines, ignored by SLHA readers and read back by :func:`read_xsections`::

       # sigmabnn central = mean
       # sigmabnn std = 1.2300000E-04
       # sigmabnn interval 0.68 = 1.1000000E-03 1.3500000E-03
       # sigmabnn interval 0.95 = 9.8000000E-04 1.5100000E-03

Writing again replaces the blocks sigmabnn wrote before for the same energy
and process (recognised by ``CODE`` = ``sigmabnn``); other ``XSECTION`` blocks
(e.g. Prospino's own) are kept. Files are written atomically (temporary file,
then :func:`os.replace`).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyslha

from sigmabnn._version import __version__
from sigmabnn.errors import InputError
from sigmabnn.physics.processes import CHARGINOS, NEUTRALINOS, Process, parse_process, process_features

SLHA_SUFFIXES = (".slha", ".spc", ".slha1", ".slha2")
"""File suffixes treated as SLHA when a directory is given to :func:`read_points`."""
TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".pq")
"""File suffixes treated as tables of points (passed through) by :func:`read_points`."""
SOURCE_COLUMN = "source"
"""Column of :func:`read_points` output naming the file each row came from."""
CODE = "sigmabnn"
"""``CODE`` field of the ``XSECTION`` lines sigmabnn writes."""
PROTON = 2212

DATASET_MASSES: tuple[int, ...] = (
    24, 25, 35, 36, 37, 1000021, 1000022, 1000023, 1000024, 1000025, 1000035, 1000037,
    1000001, 1000002, 1000003, 1000004, 1000005, 1000006, 1000011, 1000012, 1000013, 1000014, 1000015, 1000016,
    2000001, 2000002, 2000003, 2000004, 2000005, 2000006, 2000011, 2000013, 2000015,
)  # fmt: skip
"""PDG ids of the 33 ``m_<pdg>`` columns of the built-in data set, in its column order."""


def dataset_columns() -> list[str]:
    """The 57 spectrum columns of the built-in data set: 33 masses, then N, U, V rows (its column order)."""
    cols = [f"m_{p}" for p in DATASET_MASSES]
    cols += [f"N{p}_{j}" for p in NEUTRALINOS for j in range(1, 5)]
    cols += [f"U{p}_{j}" for p in CHARGINOS for j in range(1, 3)]
    cols += [f"V{p}_{j}" for p in CHARGINOS for j in range(1, 3)]
    return cols


_COLUMN_RE = re.compile(r"^(?:m_(\d+)|([NUV])(\d+)_(\d+))$")


def slha_entry(column: str) -> tuple[str, int | tuple[int, int]]:
    """The SLHA ``(block, key)`` holding a feature column, e.g. ``"N1000023_4" -> ("NMIX", (2, 4))``.

    Raises:
        InputError: the column is not a mass or mixing-matrix column.
    """
    match = _COLUMN_RE.match(column)
    if match:
        if match.group(1) is not None:
            return "MASS", int(match.group(1))
        letter, pdg, j = match.group(2), int(match.group(3)), int(match.group(4))
        if letter == "N" and pdg in NEUTRALINOS and 1 <= j <= 4:
            return "NMIX", (NEUTRALINOS.index(pdg) + 1, j)
        if letter in "UV" and pdg in CHARGINOS and 1 <= j <= 2:
            return f"{letter}MIX", (CHARGINOS.index(pdg) + 1, j)
    raise InputError(
        f"column {column!r} cannot be read from an SLHA file (readable: m_<pdg>, N<neutralino>_<1..4>, "
        "U<chargino>_<1..2>, V<chargino>_<1..2>)"
    )


def columns_for(processes: Iterable[Process | str] | None = None, columns: Iterable[str] | None = None) -> list[str]:
    """Columns to read: the union of the processes' features and ``columns`` (default: all 57 data-set columns)."""
    if processes is None and columns is None:
        return dataset_columns()
    out: list[str] = []
    for process in processes or ():
        out.extend(process_features(parse_process(process)))
    out.extend(columns or ())
    return list(dict.fromkeys(out))


def _parse_slha(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise InputError(f"cannot read SLHA file {path}: {err.strerror or err}") from None
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            return pyslha.readSLHA(text, ignorenomass=True)
    except Exception as err:  # pyslha raises assorted exception types on malformed input
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"cannot parse SLHA file {path}: {message}") from None


def _check_real_mixing(doc: Any, path: Path) -> None:
    for block in ("IMNMIX", "IMUMIX", "IMVMIX"):
        if block in doc.blocks:
            values = [v for v in doc.blocks[block].values() if isinstance(v, int | float)]
            if any(v != 0 for v in values):
                raise InputError(
                    f"{path}: block {block} has non-zero entries (complex mixing, positive masses); sigmabnn "
                    "expects the real-mixing convention with signed neutralino masses"
                )


def read_slha(path: str | os.PathLike[str], columns: Sequence[str]) -> dict[str, float]:
    """Feature values of one SLHA spectrum file: ``{column: value}`` for each requested column.

    Raises:
        InputError: unreadable or unparsable file, a missing block or entry
            (named, with the file), a non-numeric entry, or complex mixing.
    """
    p = Path(path)
    entries = [(col, *slha_entry(col)) for col in columns]
    doc = _parse_slha(p)
    _check_real_mixing(doc, p)
    row: dict[str, float] = {}
    for col, block, key in entries:
        if block not in doc.blocks:
            raise InputError(f"{p}: no BLOCK {block} (needed for {col})")
        entries_of_block = doc.blocks[block]
        if key not in entries_of_block:
            shown = key if isinstance(key, int) else " ".join(str(k) for k in key)
            raise InputError(f"{p}: BLOCK {block} has no entry {shown} (needed for {col})")
        value = entries_of_block[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
            raise InputError(f"{p}: BLOCK {block} entry for {col} is not a finite number: {value!r}")
        row[col] = float(value)
    return row


def _is_table(path: Path) -> bool:
    name = path.name.lower()
    return any(name.endswith(s) for s in TABLE_SUFFIXES)


def _read_table(path: Path) -> pd.DataFrame:
    try:
        if path.name.lower().endswith((".parquet", ".pq")):
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except Exception as err:  # pandas/pyarrow raise many types for bad files
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"cannot read table {path}: {message}") from None


def _expand(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    out: list[Path] = []
    for item in paths:
        p = Path(item)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in SLHA_SUFFIXES)
            if not files:
                raise InputError(f"no SLHA files ({', '.join(SLHA_SUFFIXES)}) in directory {p}")
            out.extend(files)
        elif p.exists():
            out.append(p)
        else:
            raise InputError(f"input not found: {p}")
    if not out:
        raise InputError("no input files given")
    return out


def input_files(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The files :func:`read_points` reads from ``paths``: a directory contributes its SLHA files, sorted by name.

    Raises:
        InputError: a missing path, a directory without SLHA files, no path.
    """
    return _expand(paths)


def read_points(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    processes: Iterable[Process | str] | None = None,
    columns: Iterable[str] | None = None,
) -> pd.DataFrame:
    """Read parameter points from SLHA files, directories of SLHA files, or tables.

    Args:
        paths: one path or several. A directory contributes its SLHA files
            (suffixes :data:`SLHA_SUFFIXES`, sorted by name); a ``.csv``,
            ``.csv.gz`` or ``.parquet`` file is a table of points and passes
            through unchanged (all its columns, one row per point); any other
            file is read as SLHA.
        processes: read the features these processes need (see
            :func:`~sigmabnn.physics.processes.process_features`).
        columns: read these columns too (e.g. the raw inputs of derived
            features). With neither ``processes`` nor ``columns``, all 57
            spectrum columns of the built-in data set are read.

    Returns:
        One row per SLHA file (and per table row), with column
        :data:`SOURCE_COLUMN` (the file path; tables keep their own ``source``
        column if they have one) and the requested columns as float64.

    Raises:
        InputError: missing path, empty directory, a file lacking a needed block
            or entry (named, with the file), or a table lacking a needed column.
    """
    wanted = columns_for(processes, columns)
    for col in wanted:
        slha_entry(col)  # fail fast on a column no SLHA file can provide
    frames: list[pd.DataFrame] = []
    slha_rows: list[dict[str, Any]] = []

    def flush() -> None:
        if slha_rows:
            frames.append(pd.DataFrame(slha_rows, columns=[SOURCE_COLUMN, *wanted]))
            slha_rows.clear()

    for path in _expand(paths):
        if _is_table(path):
            flush()
            table = _read_table(path)
            missing = [c for c in wanted if c not in table.columns]
            if missing:
                raise InputError(f"table {path} lacks column(s) {', '.join(missing)}")
            if SOURCE_COLUMN not in table.columns:
                table.insert(0, SOURCE_COLUMN, str(path))
            frames.append(table)
        else:
            slha_rows.append({SOURCE_COLUMN: str(path), **read_slha(path, wanted)})
    flush()
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)
    for col in wanted:
        try:
            out[col] = pd.to_numeric(out[col], errors="raise").astype(np.float64)
        except (TypeError, ValueError):
            raise InputError(f"column {col} of the input points is not numeric") from None
    return out


# ------------------------------------------------------------------ writing spectra (tests, examples)


def _num(value: float) -> str:
    return f"{float(value): .16E}"


def spectrum_text(row: Mapping[str, float], comment: str = "written by sigmabnn") -> str:
    """A minimal SLHA spectrum (``MASS``, ``NMIX``, ``UMIX``, ``VMIX``) from a feature row.

    Only the columns present in ``row`` are written (masses of any PDG id;
    mixing entries via :func:`slha_entry`); other keys are ignored. Values are
    written with 17 significant digits, so reading back gives the same floats.
    """
    blocks: dict[str, list[tuple[Any, float]]] = {"MASS": [], "NMIX": [], "UMIX": [], "VMIX": []}
    for col, value in row.items():
        try:
            block, key = slha_entry(str(col))
        except InputError:
            continue
        if value is None or not math.isfinite(float(value)):
            continue
        blocks[block].append((key, float(value)))
    lines = [f"# {comment}"]
    for name, items in blocks.items():
        if not items:
            continue
        lines.append(f"BLOCK {name}")
        for key, value in sorted(items, key=lambda kv: kv[0]):
            index = f"{key:>9d}" if isinstance(key, int) else f"{key[0]:>3d} {key[1]:>3d}"
            lines.append(f"   {index}   {_num(value)}")
    return "\n".join(lines) + "\n"


def write_spectrum(path: str | os.PathLike[str], row: Mapping[str, float]) -> Path:
    """Write :func:`spectrum_text` of ``row`` to ``path`` atomically; returns the path."""
    p = Path(path)
    _atomic_write(p, spectrum_text(row))
    return p


# ------------------------------------------------------------------ cross sections


class XSectionResult(NamedTuple):
    """A predicted cross section for one process, as written to an ``XSECTION`` block.

    Attributes:
        value: the central value (written as ``VALUE``), in the training data's unit.
        std: predictive standard deviation in the same unit, or ``None``.
        intervals: ``{level: (low, high)}`` central predictive intervals, e.g. ``{0.68: (lo, hi), 0.95: (lo, hi)}``.
        central: what ``value`` is (``"mean"`` of the predictive distribution, or ``"median"``).
    """

    value: float
    std: float | None = None
    intervals: Mapping[float, tuple[float, float]] = {}
    central: str = "mean"


def _atomic_write(path: Path, text: str) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"directory does not exist: {directory}")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        if path.exists():
            with contextlib.suppress(OSError):
                os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_HEADER_RE = re.compile(r"^XSECTION\s+(\S+)\s+(-?\d+)\s+(-?\d+)\s+(\d+)((?:\s+-?\d+)*)", re.IGNORECASE)


def _blocks_to_drop(lines: list[str], sqrt_s: float, final: tuple[int, ...], code: str) -> set[int]:
    """Line numbers of XSECTION blocks (header + indented lines) for this process/energy written by ``code``."""
    drop: set[int] = set()
    i = 0
    while i < len(lines):
        match = _HEADER_RE.match(lines[i])
        if not match:
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and (not lines[i].strip() or lines[i][:1] in (" ", "\t")):
            i += 1
        end = i
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1  # leave trailing blank lines alone
        try:
            same_energy = math.isclose(float(match.group(1)), sqrt_s, rel_tol=1e-9)
        except ValueError:
            continue
        finals = tuple(sorted(int(t) for t in match.group(5).split()))
        initial = tuple(sorted((int(match.group(2)), int(match.group(3)))))
        if not (same_energy and initial == (PROTON, PROTON) and finals == final):
            continue
        value_lines = [ln.split("#")[0].split() for ln in lines[start + 1 : end]]
        value_lines = [v for v in value_lines if v]
        if value_lines and all(len(v) >= 8 and v[7] == code for v in value_lines):
            drop.update(range(start, end))
            if start > 0 and not lines[start - 1].strip():
                drop.add(start - 1)  # the blank line that separated the block
    return drop


def xsection_block(
    process: Process,
    result: XSectionResult,
    *,
    sqrt_s: float,
    scale_scheme: int = 0,
    qcd_order: int = 1,
    ew_order: int = 0,
    kappa_f: float = 1.0,
    kappa_r: float = 1.0,
    pdf_id: int = 0,
    code: str = CODE,
    version: str = __version__,
) -> str:
    """The text of one ``XSECTION`` block (see the module docstring for the layout)."""
    value = float(result.value)
    if not math.isfinite(value) or value < 0:
        raise InputError(f"cross section for {process} must be a finite non-negative number, got {result.value!r}")
    lines = [
        f"XSECTION  {sqrt_s:.8E}  {PROTON} {PROTON}  2  {process.pdg1} {process.pdg2}"
        f"   # p p -> {process.label}, sigmabnn prediction",
        f"   {scale_scheme:d}  {qcd_order:d}  {ew_order:d}  {kappa_f:.8E}  {kappa_r:.8E}  {pdf_id:d}  "
        f"{value:.8E}  {code}  {version}",
        f"   # {code} central = {result.central}",
    ]
    if result.std is not None:
        lines.append(f"   # {code} std = {float(result.std):.8E}")
    for level in sorted(result.intervals):
        low, high = result.intervals[level]
        lines.append(f"   # {code} interval {float(level):g} = {float(low):.8E} {float(high):.8E}")
    return "\n".join(lines) + "\n"


def write_xsections(
    slha_path: str | os.PathLike[str],
    results: Mapping[Process | str, XSectionResult | float],
    out_path: str | os.PathLike[str] | None = None,
    *,
    sqrt_s: float,
    qcd_order: int = 1,
    scale_scheme: int = 0,
    pdf_id: int = 0,
    code: str = CODE,
    version: str = __version__,
) -> Path:
    """Write ``XSECTION`` blocks for predicted cross sections into a copy of an SLHA file.

    Args:
        slha_path: the spectrum file the predictions were made for.
        results: ``{process: XSectionResult}`` (a bare float is a central value
            without uncertainty).
        out_path: where to write (default: replace ``slha_path`` itself,
            atomically).
        sqrt_s: collider energy in GeV, written in the block header. Required:
            it is a property of the training data, which sigmabnn cannot know.
        qcd_order: ``QCD_ORDER`` code (1 = NLO, the order of the built-in data).
        scale_scheme: ``SCALE_SCHEME`` code (0: central scale = average mass of
            the produced particles, Prospino's choice).
        pdf_id: LHAPDF id of the PDF set of the training data (0 = not known).
        code, version: ``CODE`` and ``VERSION`` fields.

    The text of ``slha_path`` is kept byte for byte, except that blocks this
    function wrote earlier for the same energy and process are replaced; the new
    blocks are appended at the end.

    Returns:
        The path written.

    Raises:
        InputError: unreadable input, bad values, or an unwritable output.
    """
    src = Path(slha_path)
    dest = Path(out_path) if out_path is not None else src
    if not (isinstance(sqrt_s, int | float) and math.isfinite(sqrt_s) and sqrt_s > 0):
        raise InputError(f"sqrt_s must be a positive energy in GeV, got {sqrt_s!r}")
    if not code or any(ch.isspace() for ch in code) or "#" in code:
        raise InputError(f"code must be one word, got {code!r}")
    try:
        text = src.read_text(encoding="utf-8")
    except OSError as err:
        raise InputError(f"cannot read SLHA file {src}: {err.strerror or err}") from None
    parsed: list[tuple[Process, XSectionResult]] = []
    for key, res in results.items():
        process = parse_process(key)
        result = res if isinstance(res, XSectionResult) else XSectionResult(float(res))
        parsed.append((process, result))
    lines = text.splitlines()
    drop: set[int] = set()
    for process, _ in parsed:
        drop |= _blocks_to_drop(lines, float(sqrt_s), tuple(sorted(process.particles)), code)
    kept = [ln for i, ln in enumerate(lines) if i not in drop]
    while kept and not kept[-1].strip():
        kept.pop()
    out = "\n".join(kept) + "\n" if kept else ""
    for process, result in parsed:
        out += "\n" + xsection_block(
            process, result, sqrt_s=float(sqrt_s), scale_scheme=scale_scheme, qcd_order=qcd_order,
            pdf_id=pdf_id, code=code, version=version,
        )  # fmt: skip
    try:
        _atomic_write(dest, out)
    except OSError as err:
        raise InputError(f"cannot write {dest}: {err.strerror or err}") from None
    return dest


_COMMENT_RE = re.compile(r"^\s+#\s*(\S+)\s+(central|std|interval)\s*(\S*)\s*=\s*(.*)$")


def read_xsections(
    path: str | os.PathLike[str], code: str = CODE, sqrt_s: float | None = None
) -> dict[Process, XSectionResult]:
    """Read back the ``XSECTION`` blocks written by :func:`write_xsections` (lines whose ``CODE`` is ``code``).

    Returns ``{process: XSectionResult}`` with the uncertainty comments parsed.
    With ``sqrt_s`` given, only blocks at that energy (GeV) are returned.
    """
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise InputError(f"cannot read SLHA file {p}: {err.strerror or err}") from None
    out: dict[Process, XSectionResult] = {}
    current: Process | None = None
    fields: dict[str, Any] = {}

    def finish() -> None:
        if current is not None and "value" in fields:
            out[current] = XSectionResult(
                fields["value"], fields.get("std"), dict(fields.get("intervals", {})), fields.get("central", "mean")
            )

    for line in lines:
        match = _HEADER_RE.match(line)
        if match:
            finish()
            current, fields = None, {}
            finals = [int(t) for t in match.group(5).split()]
            if len(finals) == 2 and (sqrt_s is None or math.isclose(float(match.group(1)), sqrt_s, rel_tol=1e-9)):
                with contextlib.suppress(InputError):
                    current = Process(*finals)
            continue
        if current is None:
            continue
        if line[:1] not in (" ", "\t") and line.strip():
            finish()
            current, fields = None, {}
            continue
        comment = _COMMENT_RE.match(line)
        if comment:
            if comment.group(1) != code:
                continue
            kind, arg, rhs = comment.group(2), comment.group(3), comment.group(4).split()
            if kind == "central" and rhs:
                fields["central"] = rhs[0]
            elif kind == "std" and rhs:
                fields["std"] = float(rhs[0])
            elif kind == "interval" and len(rhs) == 2:
                fields.setdefault("intervals", {})[float(arg)] = (float(rhs[0]), float(rhs[1]))
            continue
        items = line.split("#")[0].split()
        if len(items) >= 8 and items[7] == code:
            fields["value"] = float(items[6])
    finish()
    return out
