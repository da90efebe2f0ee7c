"""sigmabnn.io"""

from sigmabnn import dtypes as _dtypes  # noqa: F401  (float policy before any array is made)
