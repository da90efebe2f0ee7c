"""Atomic writes: a file or a directory appears complete under its final name, or not at all.

Files are written to a temporary name in the destination directory, flushed
and ``fsync``-ed, then moved into place with :func:`os.replace` (atomic on
POSIX within one file system). A directory is built as a temporary sibling
directory and renamed into place; an existing directory of the same name is
first renamed aside and removed only after the new one is in place. On any
exception (including ``KeyboardInterrupt``) the temporary files are removed,
so a failed write never leaves a half-written result behind. A hard crash
(power loss, ``SIGKILL``) can leave a hidden ``.<name>.tmp-*`` entry, never a
partial file under the final name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "atomic_directory",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "fsync_directory",
]


def fsync_directory(path: str | os.PathLike[str]) -> None:
    """Flush a directory entry to disk (best effort: not every platform/file system supports it)."""
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _temp_prefix(path: Path) -> str:
    return f".{path.name}.tmp-"


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], Any]) -> Path:
    """Call ``write(binary_file)`` on a temporary file, then move it to ``path`` atomically.

    Returns the final path. On any exception the temporary file is removed and
    ``path`` is left as it was (absent or its previous content).
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(directory)
    return path


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    return atomic_write(path, lambda f: f.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(path: str | os.PathLike[str], obj: Any, indent: int | None = 2) -> Path:
    """Write ``obj`` as strict JSON (no NaN/Infinity) to ``path`` atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=indent, allow_nan=False) + "\n")


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Context manager yielding a temporary directory that becomes ``path`` on success.

    Write every file into the yielded directory (plainly; it is not visible
    under ``path`` yet). When the block exits normally the files and the
    directory are fsync-ed and the directory is renamed to ``path``; an
    existing directory ``path`` is replaced. If the block raises, the
    temporary directory is removed and ``path`` is untouched. ``path`` must
    not be an existing regular file (``FileExistsError``).
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"{path} exists and is not a directory")
    tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(path), dir=directory))
    try:
        yield tmp
        for child in tmp.iterdir():
            if child.is_file():
                with open(child, "rb") as f:
                    os.fsync(f.fileno())
        fsync_directory(tmp)
        old: Path | None = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=directory))
            os.rmdir(old)
            os.rename(path, old)
        try:
            os.rename(tmp, path)
        except BaseException:
            if old is not None:
                os.rename(old, path)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_directory(directory)
