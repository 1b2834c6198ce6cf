"""Opening a report file once, so that it cannot be raced, hang the reader or be a device.

Every report is opened exactly once and then judged from its descriptor:

- ``O_NONBLOCK``: opening a FIFO (or a device waiting for a peer) returns at
  once instead of blocking a worker thread forever;
- ``fstat`` of the open descriptor: anything but a regular file (FIFO,
  socket, device, directory) is refused before a byte is read;
- ``O_NOFOLLOW`` on the last component where the caller is not the file's
  owner (the daemon): a link planted where the report was is not followed;
- ``open_within`` walks from a descriptor of the checkout root one component
  at a time (``O_NOFOLLOW | O_DIRECTORY`` relative to the parent's
  descriptor), so the file read is inside the checkout by construction: a
  directory swapped for a symlink after the path was checked makes the walk
  fail instead of leaving the checkout.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import attrs

from ..errors import CoverageError, ErrorCode

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | _NONBLOCK | _CLOEXEC | getattr(os, "O_BINARY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
# Walking by descriptors needs openat(); where it is missing (Windows) the
# walk falls back to comparing the opened file with the checked path.
_WALKS = os.open in os.supports_dir_fd and bool(_NOFOLLOW)

# Test hook: called with the report path after it was checked and before it is
# opened, so a test can swap the path in exactly that window. None in production.
BEFORE_OPEN: Callable[[Path], None] | None = None


@attrs.frozen
class OpenedReport:
    """An open regular file and the path it was opened as (for messages and provenance)."""

    stream: BinaryIO
    path: Path
    size: int

    def close(self) -> None:
        self.stream.close()

    def __enter__(self) -> OpenedReport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_report(path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> OpenedReport:
    """Open ``path`` once without blocking; only a regular file is accepted.

    ``follow_symlinks=False`` refuses a final symbolic link (the daemon's owner
    import: the CLI resolves its user's own links before sending the path).
    """
    path = Path(path)
    check_path_text(str(path))
    _hook(path)
    flags = _FILE_FLAGS | (0 if follow_symlinks else _NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _open_error(path, exc, final=True) from None
    return _adopt(fd, path)


def open_within(root: Path, path: Path) -> OpenedReport:
    """Open ``path`` (absolute, already resolved and checked to be under ``root``)
    from a descriptor of ``root``, never following a link on the way."""
    check_path_text(str(path))
    parts = path.relative_to(root).parts
    if not parts:
        raise not_regular(path, "a directory")
    _hook(path)
    if not _WALKS:
        return _open_compared(path)
    try:
        dir_fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise _open_error(root, exc, final=False) from None
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                next_fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                raise _open_error(root.joinpath(*parts[: i + 1]), exc, final=False, report=path) from None
            os.close(dir_fd)
            dir_fd = next_fd
        try:
            fd = os.open(parts[-1], _FILE_FLAGS | _NOFOLLOW, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):  # resolved without links: one now is a swap
                raise changed(path, "its file became a symbolic link") from None
            raise _open_error(path, exc, final=True) from None
    finally:
        os.close(dir_fd)
    return _adopt(fd, path)


def changed(path: Path, why: str) -> CoverageError:
    """``report_changed``: the file named was swapped while it was being opened."""
    return CoverageError(
        ErrorCode.REPORT_CHANGED,
        f"{path}: changed while the report was being opened ({why}); nothing was read",
        "Import the report once nothing is moving or relinking it; pass its real path inside the checkout.",
        {"path": str(path)},
    )


def _open_compared(path: Path) -> OpenedReport:
    """Without openat: open, then require the file to be the one the resolved path names."""
    try:
        fd = os.open(path, _FILE_FLAGS | _NOFOLLOW)
    except OSError as exc:
        raise _open_error(path, exc, final=True) from None
    try:
        same = os.path.samestat(os.fstat(fd), os.stat(os.path.realpath(path)))
    except OSError:
        same = False
    if not same:
        os.close(fd)
        raise _moved(path, path)
    return _adopt(fd, path)


def _adopt(fd: int, path: Path) -> OpenedReport:
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(path, _kind(st.st_mode))
        os.set_blocking(fd, True)  # a regular file: reads never wait, and readers expect blocking semantics
    except BaseException:
        os.close(fd)
        raise
    return OpenedReport(os.fdopen(fd, "rb"), path, st.st_size)


def _hook(path: Path) -> None:
    if BEFORE_OPEN is not None:
        BEFORE_OPEN(path)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def not_regular(path: Path, kind: str) -> CoverageError:
    return CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        f"{path}: is {kind}, not a regular report file",
        "Write the report to a regular file first (e.g. coverage.json or lcov.info) and import that; "
        "to import a stream from the command line, use `coverage-mcp ingest -` and pipe the report in.",
        {"path": str(path), "file_type": kind},
    )


def _moved(where: Path, report: Path) -> CoverageError:
    return CoverageError(
        ErrorCode.PATH_OUTSIDE_CHECKOUT,
        f"{report}: {where} is a symbolic link or changed while the report was being opened",
        "Pass the report's real path inside the checkout (no symbolic links on the way), and do not move "
        "its directories during the import.",
        {"path": str(report), "component": str(where)},
    )


def _open_error(path: Path, exc: OSError, *, final: bool, report: Path | None = None) -> CoverageError:
    report = report or path
    if exc.errno == errno.ENOENT:
        return CoverageError(
            ErrorCode.NOT_FOUND,
            f"{report}: no such report file",
            "Check the path; relative paths are taken from the checkout root (the current directory on the CLI).",
            {"path": str(report)},
        )
    if exc.errno in (errno.ELOOP, errno.EMLINK) and final:
        return CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{report}: is a symbolic link; links are not followed when opening a report",
            "Pass the link's target path instead.",
            {"path": str(report)},
        )
    if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR) and not final:
        return _moved(path, report)
    if exc.errno == errno.ENXIO:  # a socket, or a device with nothing behind it
        return not_regular(report, "a socket or device")
    if exc.errno == errno.EISDIR:
        return not_regular(report, "a directory")
    return CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        f"{report}: cannot be read ({exc.strerror})",
        "Check the file's permissions.",
        {"path": str(report)},
    )


def check_path_text(path: str) -> None:
    """A path the OS cannot even name is the caller's mistake, not a crash."""
    try:
        encoded = os.fsencode(path)
    except UnicodeError:
        encoded = None
    if encoded is None or b"\0" in encoded:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"report path contains {'a NUL byte' if encoded is not None else 'characters no file name can hold'}",
            "Pass the report's path as plain text, without NUL bytes or invalid characters.",
        )
