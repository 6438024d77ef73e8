"""Writes that leave no half-written file: the data goes to a temporary file beside the target, which
replaces the target only once the write has completed (``os.replace`` is atomic within a file system).
A write that fails, or a Ctrl-C during it, leaves the target as it was and removes the temporary file.

A target that cannot be replaced is written directly: one that exists and is not a regular file
(``/dev/stdout``, a named pipe), or a writable file in a folder that is not writable.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from typing import IO, Any


def _replaceable(target: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        return True


def _direct(target: str) -> bool:
    """Whether ``target`` is written in place rather than replaced (see the module doc); raises the error
    the write would meet when its folder is missing or not writable."""
    if not _replaceable(target):
        return True
    directory = os.path.dirname(os.path.abspath(target))
    # Errors name the target, not the temporary file.
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, f"no folder {directory}", target)
    if not os.access(directory, os.W_OK):
        if os.access(target, os.W_OK):  # a writable file in a folder that is not: it cannot be replaced
            return True
        raise PermissionError(errno.EACCES, f"the folder {directory} is not writable", target)
    return False


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise now the error :func:`atomic_path` would raise for ``path``'s folder, so that a command can
    refuse an output before its work rather than after it (``mrc --plot`` into a missing folder)."""
    target = os.fspath(path)
    _direct(os.path.realpath(target) if os.path.islink(target) else target)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """A path to write the whole of ``path``'s new content to; it becomes ``path`` when the block ends
    without an exception. It keeps the target's extension (writers such as matplotlib choose the format
    by it) and, when the target exists, its permissions."""
    target = os.fspath(path)
    if os.path.islink(target):  # replace the file the link points to, not the link
        target = os.path.realpath(target)
    if _direct(target):
        yield target
        return
    directory, name = os.path.split(os.path.abspath(target))
    stem, ext = os.path.splitext(name)
    tmp = os.path.join(directory, f".{stem}.{os.getpid()}-{os.urandom(4).hex()}.partial{ext}")
    try:
        yield tmp
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(tmp, target)
    except OSError as e:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        if e.filename not in (None, tmp) or e.errno is None:
            raise
        # A full disk fails a write or the close with no file name ("[Errno 28] No space left on
        # device"), or names the temporary file the user never saw: name the output.
        raise OSError(e.errno, e.strerror, os.fspath(path)) from e
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """``open(path, mode)`` through :func:`atomic_path`: the file is closed, then put in place."""
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as f:
        yield f


def write_csv(df: Any, path: str | os.PathLike[str]) -> str:
    """A pandas DataFrame as CSV (no index), written whole or not at all; returns the path."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)
    return os.fspath(path)
