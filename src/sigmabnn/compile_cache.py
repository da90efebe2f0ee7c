"""A persistent cache of compiled code: a second fit of tables of the same shapes starts without compiling.

Every fit compiles its MAP, sampling and scoring functions with XLA, several seconds of a small table's
fit (``benchmarks/results/fit_compiles.md``). JAX's persistent compilation cache keeps the executables
on disk, keyed by the computation (its shapes and dtypes), the compiler options and the versions of
JAX and XLA, so a later process that compiles the same computation loads it instead.
sigmabnn's compiled functions take the training rows as arguments, never as constants folded into the
code (:class:`sigmabnn.compiler.BoundFunction`), so the cache holds code, not data, and a fit of other
rows with the same numbers of rows and columns and the same options reuses it
(``benchmarks/results/compile_cache.md`` times fits with a cold and a warm cache).

Where: the directory ``SIGMABNN_CACHE_DIR`` names (``off`` disables the cache), else
``$XDG_CACHE_HOME/sigmabnn/jax`` (``~/.cache/sigmabnn/jax``). At most :data:`MAX_BYTES` are kept, the
least recently used entries evicted first (JAX's cache, which locks the directory while it reads or
writes, so concurrent processes share it). A directory that cannot be created or written to leaves
the cache off.

The ``sigmabnn`` command turns it on when it starts (:func:`enable_for_process`: environment variables
that JAX reads when it is imported, inherited by the processes it starts). In Python, call
:func:`enable_compilation_cache` once, before the first fit; it applies to every function JAX compiles in the process.
A cache directory the user has set for JAX (``jax_compilation_cache_dir``, ``JAX_COMPILATION_CACHE_DIR``)
is left as it is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_DIR",
    "MAX_BYTES",
    "OFF_VALUES",
    "cache_dir",
    "enable_compilation_cache",
    "enable_for_process",
    "jax_settings",
]

ENV_DIR = "SIGMABNN_CACHE_DIR"
"""Environment variable naming the cache directory; one of :data:`OFF_VALUES` disables the cache."""
OFF_VALUES = ("", "off", "0", "false", "no", "none")
"""Values of :data:`ENV_DIR` (case-insensitive) that disable the cache."""
MAX_BYTES = 1 << 30
"""Size limit of the cache directory (bytes): JAX evicts the least recently used entries beyond it."""


def cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The cache directory the environment asks for (the module docstring), ``None`` when it is disabled."""
    environ = os.environ if environ is None else environ
    value = environ.get(ENV_DIR)
    if value is not None:
        return None if value.strip().lower() in OFF_VALUES else Path(value.strip()).expanduser()
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "sigmabnn" / "jax"


def jax_settings(path: Path) -> dict[str, Any]:
    """JAX's configuration options that put the cache in ``path``: every compilation is kept (JAX keeps only
    those of a second or more unless told otherwise; sigmabnn's are many shorter ones), up to :data:`MAX_BYTES`."""
    return {
        "jax_compilation_cache_dir": str(path),
        "jax_persistent_cache_min_compile_time_secs": 0.0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
        "jax_compilation_cache_max_size": MAX_BYTES,
    }


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def enable_compilation_cache(path: str | os.PathLike[str] | None = None) -> Path | None:
    """Turn the persistent cache on in this process (the module docstring); returns its directory or ``None``.

    ``path``: the directory (``None``: :func:`cache_dir`). Call it before the first fit: JAX reads the
    setting when it first compiles. A directory already set for JAX is kept and returned.
    """
    import jax

    own = jax.config.jax_compilation_cache_dir
    if own:
        return Path(own)
    target = cache_dir() if path is None else Path(path).expanduser()
    if target is None or not _writable(target):
        return None
    for name, value in jax_settings(target).items():
        jax.config.update(name, value)
    return target


def enable_for_process(environ: MutableMapping[str, str] | None = None) -> Path | None:
    """:func:`enable_compilation_cache` through the environment JAX reads when it is imported: for the command
    line, which has not imported JAX yet, and the processes it starts; returns the directory or ``None``. With
    JAX already imported (and ``environ`` the process's), :func:`enable_compilation_cache`."""
    environ = os.environ if environ is None else environ
    if "jax" in sys.modules and environ is os.environ:
        return enable_compilation_cache()
    own = environ.get("JAX_COMPILATION_CACHE_DIR")
    if own:
        return Path(own)
    target = cache_dir(environ)
    if target is None or not _writable(target):
        return None
    for name, value in jax_settings(target).items():
        environ.setdefault(name.upper(), str(value))
    return target
