"""sigmabnn.physics: electroweakino processes, couplings and amplitude features; SLHA input and cross-section output.

The couplings live in :mod:`sigmabnn.physics.couplings`, the derived amplitude features in
:mod:`sigmabnn.physics.amplitude_features`.
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
