"""Built-in data: electroweakino NLO cross sections (the thesis data set) and handwritten digits.

>>> from sigmabnn.datasets import load_digits, load_idx
>>> digits = load_digits()                  # 1,797 8x8 digits: pixel_0..pixel_63, digit, split

>>> from sigmabnn.datasets import load_ewino, processes, ewino_table
>>> df = load_ewino()                       # 12,100 rows x 81 columns
>>> table, n_failed = ewino_table("1000022,1000022")   # thesis benchmark: 5 inputs + target + split

``ewino_info()`` returns the facts about the data (source, columns, the thesis's
results, conventions); ``ewino_readme()`` the same as Markdown text. The file
is read with :mod:`importlib.resources`, so it works from a wheel or a zip.
"""

from __future__ import annotations

import gzip
import io
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from sigmabnn.datasets.idx import idx_frame, load_idx
from sigmabnn.physics.processes import Process, process_features, process_table, processes_in

EWINO_FILE = "ewino_nlo.csv.gz"
EWINO_README = "ewino_nlo.md"
THESIS_PROCESS = Process(1000022, 1000022)
"""The thesis's benchmark process, chi_1^0 chi_1^0."""
THESIS_FEATURES: tuple[str, ...] = ("m_1000022", "N1000022_1", "N1000022_2", "N1000022_3", "N1000022_4")
"""The thesis's 5 inputs for chi_1^0 chi_1^0."""
SPLIT_FRACTIONS = {"train": 0.80, "val": 0.05, "test": 0.15}
"""Proportions of the fixed ``split`` column (the thesis's)."""

__all__ = [
    "DIGITS_SPLIT",
    "EWINO_FILE",
    "SPLIT_FRACTIONS",
    "THESIS_FEATURES",
    "THESIS_PROCESS",
    "ewino_info",
    "ewino_readme",
    "ewino_table",
    "digits_readme",
    "idx_frame",
    "load_digits",
    "load_ewino",
    "load_idx",
    "processes",
]


def _resource(name: str) -> Any:
    return resources.files(__name__).joinpath(name)


@lru_cache(maxsize=1)
def _load_cached() -> pd.DataFrame:
    with _resource(EWINO_FILE).open("rb") as fh:
        data = fh.read()
    return pd.read_csv(io.BytesIO(data), compression="gzip")


DIGITS_FILE = "digits.csv.gz"
DIGITS_README = "digits.md"
DIGITS_SPLIT = {"train": 0.6, "val": 0.2, "test": 0.2}
"""Proportions of the digits' fixed ``split`` column, per class."""
DIGITS_SPLIT_SEED = 27


def _digits_split(labels: np.ndarray) -> np.ndarray:
    """The fixed stratified split: in each class a seeded permutation, 60 % train, 20 % val, the rest test."""
    split = np.empty(labels.size, dtype=object)
    rng = np.random.default_rng(DIGITS_SPLIT_SEED)
    for label in np.unique(labels):
        rows = rng.permutation(np.flatnonzero(labels == label))
        n_train, n_val = round(DIGITS_SPLIT["train"] * rows.size), round(DIGITS_SPLIT["val"] * rows.size)
        split[rows[:n_train]], split[rows[n_train : n_train + n_val]], split[rows[n_train + n_val :]] = (
            "train", "val", "test",
        )  # fmt: skip
    return split


@lru_cache(maxsize=1)
def _digits_cached() -> pd.DataFrame:
    with _resource(DIGITS_FILE).open("rb") as fh:
        frame = pd.read_csv(io.BytesIO(fh.read()), compression="gzip")
    frame["split"] = _digits_split(frame["digit"].to_numpy())
    return frame


def load_digits() -> pd.DataFrame:
    """The built-in handwritten digits as a new DataFrame: 1,797 rows, ``pixel_0`` .. ``pixel_63`` (an 8x8
    image row by row, integer counts 0..16), ``digit`` (the label 0..9, int64) and ``split``
    (``train``/``val``/``test``, a fixed split stratified by class, :data:`DIGITS_SPLIT`).

    Real data: the test set of the UCI "Optical Recognition of Handwritten Digits" (Alpaydin & Kaynak
    1998, CC BY 4.0); :func:`digits_readme` has the provenance.
    """
    return _digits_cached().copy()


def digits_readme() -> str:
    """The digits' provenance (Markdown)."""
    return _resource(DIGITS_README).read_text(encoding="utf-8")


def load_ewino() -> pd.DataFrame:
    """The built-in electroweakino data set as a new DataFrame (12,100 rows x 81 columns).

    Columns: ``point_id`` (int), ``split`` (``train``/``val``/``test``), 33 masses
    ``m_<pdg>`` (GeV; neutralino masses signed), mixing-matrix rows
    ``N<pdg>_<j>``, ``U<pdg>_<j>``, ``V<pdg>_<j>`` and 22 cross sections
    ``nlo_<pdg1>_<pdg2>`` (float64; NaN where Prospino failed). See
    :func:`ewino_info` for units and provenance. The file is parsed once per
    process (about 0.3 s) and each call returns a copy, safe to modify.
    """
    return _load_cached().copy()


@lru_cache(maxsize=1)
def _header() -> tuple[str, ...]:
    with _resource(EWINO_FILE).open("rb") as fh, gzip.open(fh, "rt") as text:
        return tuple(text.readline().strip().split(","))


def processes() -> list[Process]:
    """The 22 processes of the built-in data set, in column order (read from the header only)."""
    return processes_in(_header())


def ewino_table(process: Process | str = THESIS_PROCESS, log_target: bool = True) -> tuple[pd.DataFrame, int]:
    """:func:`~sigmabnn.physics.processes.process_table` of the built-in data: ``(table, n_failed)``."""
    return process_table(load_ewino(), process, log_target=log_target)


def ewino_readme() -> str:
    """The data set's documentation (Markdown)."""
    return _resource(EWINO_README).read_text(encoding="utf-8")


def ewino_info() -> dict[str, Any]:
    """Facts about the built-in data set, as a JSON-able dict.

    Keys: ``name``, ``file``, ``source``, ``n_points``, ``n_processes``,
    ``processes`` (``"pdg1,pdg2"`` strings), ``columns`` (what each column family
    means), ``split``, ``units``, ``conventions``, ``thesis`` (benchmark
    process, features, target and the thesis's results).
    """
    procs = processes()
    return {
        "name": "ewino_nlo",
        "file": EWINO_FILE,
        "source": (
            "github.com/reneaas/BNN-Estimation-of-NLO-Cross-Sections, commit 0d6a642 "
            "(code/data/features/*.pkl, code/data/targets/nlo.pkl): data release of the master thesis "
            "'Bayesian neural network estimation of next-to-leading-order cross sections', University of Oslo, 2022. "
            "An earlier release of the thesis scan (the thesis trained on 14,683 points of a later release). "
            "Unchanged apart from column names and Prospino's failure marker -1 written as empty (NaN)."
        ),
        "n_points": 12100,
        "n_processes": len(procs),
        "processes": [str(p) for p in procs],
        "columns": {
            "point_id": "row number 0..12099",
            "split": "train/val/test, fixed random 80/5/15 % split, the same for every process",
            "m_<pdg>": "pole mass in GeV (33 columns); neutralino masses signed (SLHA, real NMIX)",
            "N<pdg>_<j>": "neutralino mixing-matrix row (NMIX row of neutralino pdg), j = 1..4",
            "U<pdg>_<j>, V<pdg>_<j>": "chargino mixing-matrix rows (UMIX, VMIX) of chargino pdg, j = 1..2",
            "nlo_<pdg1>_<pdg2>": "NLO cross section of p p -> pdg1 pdg2 from Prospino; NaN where Prospino failed",
        },
        "split": dict(SPLIT_FRACTIONS),
        "units": {
            "mass": "GeV",
            "cross_section": (
                "not stated in the source; Prospino reports pb, but the values are about 20x the published "
                "13 TeV NLO+NLL wino-like chargino-neutralino values if read as pb, so the unit is unconfirmed"
            ),
            "sqrt_s": (
                "not stated in the source; the thesis repository's harvesting script is set up for 13 TeV, "
                "unconfirmed (see cross_section)"
            ),
        },
        "conventions": {
            "features": "per particle: mass then mixing-matrix row; a particle appearing twice counts once",
            "charge_conjugates": "separate processes (different cross sections in p p); never substituted",
            "target_range_chi1chi1": [3.494e-9, 84.89],
        },
        "thesis": {
            "process": str(THESIS_PROCESS),
            "features": list(THESIS_FEATURES),
            "feature_names_from_process": process_features(THESIS_PROCESS),
            "target": "log10(nlo_1000022_1000022)",
            "valid_points_this_release": 10502,
            "points_in_thesis_release": 14683,
            "architectures": ["5-20-20-1", "5-50-50-50-1"],
            "activation": "tanh",
            "r2_log_space_test": [0.987, 0.992],
            "r2_target_space_test": [0.855, 0.950],
            "coverage_2sigma": "below 96 % (over-confident)",
            "training_time_s": "about 1350 for 1000 networks (HMC, L = 512, 5-20-20-1)",
        },
    }
