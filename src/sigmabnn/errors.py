"""Error types: what the user did wrong, said in one line.

Library code raises :class:`InputError` (or a subclass) for bad input: a
missing file, an unknown column, a corrupt model file. The CLI turns it into
a one-line message on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input (data, arguments, files). The message is one line naming the problem."""


class ModelFileError(InputError):
    """A model file that is missing, corrupt, truncated, foreign or of an unsupported version."""


class DataError(InputError):
    """A data table that cannot be used as given (columns, types, values, too few rows)."""
