"""sigmabnn.physics: electroweakino processes, couplings and amplitude features; SLHA input and cross-section output.

The couplings live in :mod:`sigmabnn.physics.couplings` (quarks, squarks, neutralinos, the Z and W)
and :mod:`sigmabnn.physics.chargino_couplings`, the derived amplitude features in
:mod:`sigmabnn.physics.amplitude_features` (which dispatches to
:mod:`sigmabnn.physics.neutralino_chargino_features` and
:mod:`sigmabnn.physics.chargino_pair_features` for processes with a chargino), the integrated
proxy ``lpint`` in :mod:`sigmabnn.physics.threshold_proxy`.
"""

from sigmabnn.physics.processes import (
    CHARGINOS,
    NEUTRALINOS,
    Process,
    find_target_column,
    parse_process,
    particle_features,
    process_features,
    process_table,
    processes_in,
)
from sigmabnn.physics.slha import (
    XSectionResult,
    dataset_columns,
    read_points,
    read_slha,
    read_xsections,
    slha_entry,
    spectrum_text,
    write_spectrum,
    write_xsections,
)

__all__ = [
    "CHARGINOS",
    "NEUTRALINOS",
    "Process",
    "XSectionResult",
    "dataset_columns",
    "find_target_column",
    "parse_process",
    "particle_features",
    "process_features",
    "process_table",
    "processes_in",
    "read_points",
    "read_slha",
    "read_xsections",
    "slha_entry",
    "spectrum_text",
    "write_spectrum",
    "write_xsections",
]
