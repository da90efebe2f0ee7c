"""Exact-posterior sampling: kernels, adaptation, warm-up and the multi-chain runner."""

from sigmabnn import dtypes as _dtypes  # noqa: F401  (float policy before any array is made)
