"""Electroweakino pair-production processes: names, input features and training tables.

A process ``p p -> a b`` is written as a pair of PDG ids, e.g. ``"1000022,1000022"``
(chi_1^0 chi_1^0) or ``"1000022,-1000024"`` (chi_1^0 chi_1^-). Supported particles:

========== ========================================== ==========================
PDG id     particle                                   features
========== ========================================== ==========================
1000022    neutralino chi_1^0                         ``m_1000022``, ``N1000022_1..4``
1000023    neutralino chi_2^0                         ``m_1000023``, ``N1000023_1..4``
1000025    neutralino chi_3^0                         ``m_1000025``, ``N1000025_1..4``
1000035    neutralino chi_4^0                         ``m_1000035``, ``N1000035_1..4``
+-1000024  chargino chi_1^+- (negative id: chi_1^-)   ``m_1000024``, ``U1000024_1..2``, ``V1000024_1..2``
+-1000037  chargino chi_2^+- (negative id: chi_2^-)   ``m_1000037``, ``U1000037_1..2``, ``V1000037_1..2``
========== ========================================== ==========================

Features follow the thesis ("Bayesian neural network estimation of
next-to-leading-order cross sections", Oslo 2022, section "The Features and
Targets"): for each particle its mass and its row of the mixing matrix
(neutralino ``i``: ``m_i, N_i1..N_i4``; chargino: ``m, U_i1, U_i2, V_i1, V_i2``),
the first particle's block before the second's, and a particle that appears
twice (``chi_1^0 chi_1^0``, or ``chi_1^+ chi_1^-``) contributes its block once.
For ``chi_1^0 chi_1^0`` that gives the thesis's 5 inputs
``m_1000022, N1000022_1, N1000022_2, N1000022_3, N1000022_4``.

Conventions (those of the built-in data set, see :mod:`sigmabnn.datasets`):

- Masses in GeV. Neutralino masses carry a sign (SLHA convention with a real
  mixing matrix ``N``); chargino masses are positive. The same mass and mixing
  row serve a chargino and its antiparticle.
- Neutralinos are Majorana particles: ``-1000022`` means the same particle as
  ``1000022`` and is accepted as such.
- Process order does not matter: ``"1000024,1000022"`` is the same process as
  ``"1000022,1000024"``. The canonical order (the one used in target column
  names ``nlo_<pdg1>_<pdg2>``) puts neutralinos before charginos, lighter
  before heavier, and a positive chargino before a negative one.
- Charge conjugates are *different* processes at a proton-proton collider
  (``u dbar`` and ``d ubar`` luminosities differ): ``chi_1^0 chi_1^+`` and
  ``chi_1^0 chi_1^-`` have different cross sections, and one is never used
  in place of the other. When a table lacks the requested process but holds
  its charge conjugate, the error says so.
- The total charge of the pair must be -1, 0 or +1 (``chi^+ chi^+`` is not
  produced in ``p p`` collisions at this order).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sigmabnn.errors import DataError, InputError

NEUTRALINOS: tuple[int, ...] = (1000022, 1000023, 1000025, 1000035)
"""PDG ids of the four neutralinos, lightest first (row ``i`` of ``NMIX`` is ``NEUTRALINOS[i - 1]``)."""

CHARGINOS: tuple[int, ...] = (1000024, 1000037)
"""PDG ids of the two positive charginos, lighter first (row ``i`` of ``UMIX``/``VMIX``)."""

SPLIT_COLUMN = "split"
"""Name of the column that assigns rows to ``train`` / ``val`` / ``test`` in the built-in data."""

TARGET_PREFIX = "nlo_"

_NAMES = {
    1000022: "chi1^0",
    1000023: "chi2^0",
    1000025: "chi3^0",
    1000035: "chi4^0",
    1000024: "chi1^+",
    -1000024: "chi1^-",
    1000037: "chi2^+",
    -1000037: "chi2^-",
}

# Short aliases accepted by parse_process (case-insensitive).
_ALIASES = {
    "n1": 1000022,
    "n2": 1000023,
    "n3": 1000025,
    "n4": 1000035,
    "c1+": 1000024,
    "c1-": -1000024,
    "c2+": 1000037,
    "c2-": -1000037,
}


def _is_chargino(pdg: int) -> bool:
    return abs(pdg) in CHARGINOS


def _charge(pdg: int) -> int:
    return (1 if pdg > 0 else -1) if _is_chargino(pdg) else 0


def _normalise_id(pdg: int, text: str) -> int:
    if abs(pdg) in NEUTRALINOS:
        return abs(pdg)  # Majorana: -1000022 is chi_1^0 itself
    if abs(pdg) in CHARGINOS:
        return pdg
    supported = ", ".join(str(p) for p in NEUTRALINOS + CHARGINOS)
    raise InputError(
        f"unsupported particle id {pdg} in process {text!r}: supported are neutralinos and charginos ({supported}; "
        "negative chargino ids are the negative charginos)"
    )


def _order_key(pdg: int) -> tuple[int, int, int]:
    return (int(_is_chargino(pdg)), int(pdg < 0), abs(pdg))


@dataclass(frozen=True, init=False)
class Process:
    """An electroweakino pair ``p p -> pdg1 pdg2``, stored in canonical order.

    ``Process(1000024, 1000022) == Process(1000022, 1000024)``. Use
    :func:`parse_process` for text input.

    Attributes:
        pdg1, pdg2: PDG ids in canonical order (neutralinos first, lighter first,
            positive chargino before negative).
    """

    pdg1: int
    pdg2: int

    def __init__(self, pdg1: int, pdg2: int) -> None:
        text = f"{pdg1},{pdg2}"
        try:
            a, b = int(pdg1), int(pdg2)
        except (TypeError, ValueError):
            raise InputError(f"process ids must be integers, got {text!r}") from None
        a, b = _normalise_id(a, text), _normalise_id(b, text)
        charge = _charge(a) + _charge(b)
        if abs(charge) > 1:
            raise InputError(
                f"process {text!r} has total charge {charge:+d}: not a pair-production process at a p p collider"
            )
        a, b = sorted((a, b), key=_order_key)
        object.__setattr__(self, "pdg1", a)
        object.__setattr__(self, "pdg2", b)

    @property
    def particles(self) -> tuple[int, int]:
        """``(pdg1, pdg2)``."""
        return (self.pdg1, self.pdg2)

    @property
    def target(self) -> str:
        """Target column name ``nlo_<pdg1>_<pdg2>`` (canonical order, as in the built-in data)."""
        return f"{TARGET_PREFIX}{self.pdg1}_{self.pdg2}"

    @property
    def target_names(self) -> tuple[str, ...]:
        """Column names a table may use for this process: canonical order first, then the reverse."""
        names = [self.target, f"{TARGET_PREFIX}{self.pdg2}_{self.pdg1}"]
        return tuple(dict.fromkeys(names))

    @property
    def label(self) -> str:
        """Readable name, e.g. ``"chi1^0 chi1^-"``."""
        return f"{_NAMES[self.pdg1]} {_NAMES[self.pdg2]}"

    def conjugate(self) -> Process:
        """The charge-conjugate process (itself for neutralino pairs)."""
        flip = [p if abs(p) in NEUTRALINOS else -p for p in self.particles]
        return Process(*flip)

    def features(self) -> list[str]:
        """Input feature names, see :func:`process_features`."""
        return process_features(self)

    def __str__(self) -> str:
        return f"{self.pdg1},{self.pdg2}"

    def __repr__(self) -> str:
        return f"Process({self.pdg1}, {self.pdg2})"


_SPLIT_RE = re.compile(r"[\s,;]+")
_TARGET_RE = re.compile(rf"^{TARGET_PREFIX}(-?\d+)_(-?\d+)$")


def parse_process(text: str | Process | Sequence[int], available: Iterable[str] | None = None) -> Process:
    """Parse a process: ``"1000022,1000022"``, ``"1000022 -1000024"``, ``"n1,c1-"`` or ``"nlo_1000022_1000023"``.

    Args:
        text: two PDG ids separated by a comma or white space (aliases ``n1..n4``,
            ``c1+ c1- c2+ c2-`` are accepted), a target column name
            ``nlo_<pdg1>_<pdg2>``, a pair of ints, or a :class:`Process`.
        available: optional column names of a table; when given, the process's
            target column must be among them.

    Returns:
        The :class:`Process` (canonical order).

    Raises:
        InputError: malformed text, unknown particle id, impossible charge, or
            (with ``available``) a process the table does not hold; the message
            lists the processes the table does hold.
    """
    if isinstance(text, Process):
        process = text
    elif isinstance(text, str):
        raw = text.strip()
        match = _TARGET_RE.match(raw)
        tokens = list(match.groups()) if match else [t for t in _SPLIT_RE.split(raw) if t]
        if len(tokens) != 2:
            raise InputError(f"a process is two particle ids such as '1000022,1000022', got {text!r}")
        ids = []
        for token in tokens:
            if token.lower() in _ALIASES:
                ids.append(_ALIASES[token.lower()])
                continue
            try:
                ids.append(int(token))
            except ValueError:
                raise InputError(f"not a particle id: {token!r} in process {text!r}") from None
        process = Process(ids[0], ids[1])
    else:
        try:
            a, b = text
        except (TypeError, ValueError):
            raise InputError(f"a process is a pair of particle ids, got {text!r}") from None
        process = Process(a, b)
    if available is not None:
        find_target_column(available, process)
    return process


def processes_in(columns: Iterable[str]) -> list[Process]:
    """The processes whose target columns ``nlo_<pdg1>_<pdg2>`` appear in ``columns``, in column order."""
    found: list[Process] = []
    for col in columns:
        match = _TARGET_RE.match(str(col))
        if not match:
            continue
        try:
            process = Process(int(match.group(1)), int(match.group(2)))
        except InputError:
            continue
        if process not in found:
            found.append(process)
    return found


def find_target_column(columns: Iterable[str], process: Process) -> str:
    """The column of ``columns`` holding ``process`` (either particle order); :class:`InputError` if absent."""
    cols = [str(c) for c in columns]
    present = set(cols)
    for name in process.target_names:
        if name in present:
            return name
    held = processes_in(cols)
    conj = process.conjugate()
    hint = ""
    if conj != process and conj in held:
        hint = (
            f"; the table holds the charge conjugate {conj} ({conj.label}), a different cross section at a p p collider"
        )
    listing = " ".join(str(p) for p in held) if held else "none"
    raise InputError(
        f"process {process} ({process.label}) not in the table (no column {process.target}){hint}; available: {listing}"
    )


def particle_features(pdg: int) -> list[str]:
    """Feature names of one particle: ``m_<pdg>`` then its mixing-matrix row (absolute id)."""
    pdg = abs(int(pdg))
    if pdg in NEUTRALINOS:
        return [f"m_{pdg}"] + [f"N{pdg}_{j}" for j in range(1, 5)]
    if pdg in CHARGINOS:
        return [f"m_{pdg}"] + [f"U{pdg}_{j}" for j in range(1, 3)] + [f"V{pdg}_{j}" for j in range(1, 3)]
    raise InputError(f"unsupported particle id {pdg}: expected a neutralino or chargino")


def process_features(process: Process | str) -> list[str]:
    """Input feature names of a process, built the thesis's way (see the module docstring).

    >>> process_features("1000022,1000022")
    ['m_1000022', 'N1000022_1', 'N1000022_2', 'N1000022_3', 'N1000022_4']
    >>> process_features("1000022,-1000024")[5:]
    ['m_1000024', 'U1000024_1', 'U1000024_2', 'V1000024_1', 'V1000024_2']
    """
    process = parse_process(process)
    names: list[str] = []
    for pdg in dict.fromkeys(abs(p) for p in process.particles):
        names.extend(particle_features(pdg))
    return names


def process_table(
    df: pd.DataFrame,
    process: Process | str,
    log_target: bool = True,
) -> tuple[pd.DataFrame, int]:
    """The training table of one process: its features, its target and (if present) the split column.

    Rows where the target is missing (Prospino failed: an empty cell) are dropped
    and counted. With ``log_target=True`` the target is meant to be modelled as
    ``log10``, so rows with a target ``<= 0`` cannot be used either and are
    dropped and counted as failed too. The target values themselves are returned
    unchanged, in the table's unit, under the table's column name: the log10 is
    applied by the model's target transform, never here (no double log).

    Args:
        df: a table with the feature columns and the target column, e.g.
            :func:`sigmabnn.datasets.load_ewino`.
        process: the process (any form :func:`parse_process` accepts).
        log_target: whether the target will be modelled in log10 (see above).

    Returns:
        ``(table, n_failed)``: ``table`` has columns ``features + [target] (+ ["split"])``
        and a fresh ``RangeIndex``; ``n_failed`` is the number of dropped rows.

    Raises:
        InputError: unknown process, target column absent, or feature columns absent.
        DataError: non-numeric or non-finite feature values in the kept rows, or no row left.
    """
    process = parse_process(process)
    target = find_target_column(df.columns, process)
    features = process_features(process)
    missing = [c for c in features if c not in df.columns]
    if missing:
        raise InputError(f"table lacks feature column(s) {', '.join(missing)} needed for process {process}")
    columns = features + [target] + ([SPLIT_COLUMN] if SPLIT_COLUMN in df.columns else [])
    table = df.loc[:, columns]
    try:
        y = pd.to_numeric(table[target], errors="raise").to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(f"target column {target} is not numeric") from None
    ok = np.isfinite(y)
    if log_target:
        ok &= y > 0  # NaN > 0 is False
    n_failed = int((~ok).sum())
    table = table.loc[ok].reset_index(drop=True)
    if table.empty:
        raise DataError(f"no usable rows for process {process}: all {n_failed} target values are missing or invalid")
    for col in features:
        values = pd.to_numeric(table[col], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            raise DataError(f"feature column {col} has {int(bad.sum())} missing or non-numeric value(s)")
    return table, n_failed
