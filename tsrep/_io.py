"""Atomic file writes: a reader sees the old file or the new one, never a part of either.

Every file tsrep saves (encoder checkpoints, pretraining states, model configurations) goes through
:func:`atomic_write`: the bytes go to a temporary file of a unique name in the target's directory,
are flushed to disk, and the file is renamed onto the target with ``os.replace``, which POSIX and
Windows perform atomically within one file system. Several processes may save to one path at once:
each writes its own temporary file, and the last rename wins with a complete file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

import torch


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Read once, at import: os.umask can only be read by setting it, which is not thread-safe later on.
_UMASK = _read_umask()


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, write: Callable[[IO[bytes]], object]) -> Path:
    """Write a file atomically: ``write(file)`` fills a fresh temporary file, which then replaces `path`.

    Parameters
    ----------
    path : str or path-like
        The file to write. Missing parent directories are created.
    write : callable
        Called with the temporary file, opened for writing in binary mode.

    Returns
    -------
    Path
        `path`.

    Raises
    ------
    OSError
        (of the underlying kind: IsADirectoryError, NotADirectoryError, PermissionError, ...) naming
        `path`, when it is an existing directory or its directory cannot be created or written. Any
        error leaves `path` as it was and no temporary file behind.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"cannot save to {str(path)!r}: it is an existing directory; give a file path")
    directory = path.parent
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(f"cannot save to {str(path)!r}: {str(directory)!r} is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise type(exc)(
            f"cannot save to {str(path)!r}: its directory {str(directory)!r} cannot be created or written ({reason})"
        ) from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        # mkstemp creates the file readable by its owner only; give it the mode a plain open() would.
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_directory(directory)
    return path


def atomic_torch_save(obj, path) -> Path:
    """``torch.save(obj, path)`` through :func:`atomic_write`; returns `path`."""
    return atomic_write(path, lambda file: torch.save(obj, file))
