"""Reports that only exist in the caller's process, copied to a private file first.

``-`` (standard input), ``/dev/fd/N``, ``/dev/stdin``, ``/proc/self/...`` and
process substitution (``<(...)`` is ``/dev/fd/63``) name this process's own
descriptors; a daemon reopening the same name would find its own (or nothing).
A FIFO or other non-regular file is a stream only this reader can drain, and
the daemon refuses it. ``local_report`` copies such a stream, bounded by the
report cap, into a 0600 file inside a 0700 directory it creates under
``COVERAGE_MCP_HOME``, yields that file's path and deletes both afterwards.

Anything else is a regular file: its links are resolved here, by its owner, so
the daemon (which does not follow a final link) gets the real path.
"""

from __future__ import annotations

import os
import select
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..config import MIB
from ..errors import CoverageError, ErrorCode
from .opening import check_path_text
from .reading import too_large

STDIN = "-"
_PROCESS_LOCAL = ("/dev/fd/", "/dev/stdin", "/proc/self/", "/proc/thread-self/")
# gzip or zstd of incompressible data is a little larger than the data itself.
_SLACK = 1 * MIB


def is_process_local(report: str | os.PathLike[str]) -> bool:
    text = os.fspath(report)
    if text == STDIN:
        return True
    absolute = os.path.abspath(text)
    own = f"/proc/{os.getpid()}/"
    if absolute.startswith(_PROCESS_LOCAL) or absolute.startswith(own) or absolute == "/dev/stdin":
        return True
    try:
        return not stat.S_ISREG(os.stat(text).st_mode)
    except OSError:
        return False  # the import reports the missing file with its own message


QUIET_WAIT_S = 1.0  # a stream silent this long gets the "waiting for a writer" line


def _wait_for_writer(fd: int, origin: str, wait_s: float, waiting: Callable[[str], None] | None) -> None:
    """Return once the FIFO or pipe ``fd`` (non-blocking) has data or its writer's end of file; say on ``waiting``
    that it waits when nothing came within ``QUIET_WAIT_S``; give up after ``wait_s`` seconds."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    if poller.poll(int(min(QUIET_WAIT_S, wait_s) * 1000)):
        return
    if waiting is not None:
        waiting(
            f"coverage-mcp: waiting for a writer on {origin} (giving up after {wait_s:g} s, "
            "COVERAGE_MCP_INGEST_WAIT_S)"
        )
    if poller.poll(int(max(0.0, wait_s - QUIET_WAIT_S) * 1000)):
        return
    raise CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        f"no writer sent anything on {origin} within {wait_s:g} s",
        "Start the program that writes the report into it first (or in the same shell line), or raise "
        "COVERAGE_MCP_INGEST_WAIT_S.",
        {"report_path": origin, "waited_s": wait_s},
    )


def _open_stream(
    report: str | os.PathLike[str], wait_s: float | None, waiting: Callable[[str], None] | None
) -> BinaryIO:
    """``report`` opened for reading; a FIFO or pipe without a writer is waited for (bounded), never forever."""
    if wait_s is None:
        return open(report, "rb")
    fd = os.open(report, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            _wait_for_writer(fd, os.fspath(report), wait_s, waiting)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@contextmanager
def local_report(
    report: str | os.PathLike[str],
    home: Path,
    cap: int,
    stdin: BinaryIO | None = None,
    *,
    wait_s: float | None = None,
    waiting: Callable[[str], None] | None = None,
) -> Iterator[str]:
    """A path any process of this user can open for ``report`` (see the module docstring). With ``wait_s``, a FIFO
    or pipe is waited for at most that long for a writer (``waiting`` hears that it waits)."""
    check_path_text(os.fspath(report))
    if not is_process_local(report):
        yield os.path.realpath(report)
        return
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    folder = tempfile.mkdtemp(prefix="ingest-", dir=home)  # 0700
    try:
        target = os.path.join(folder, "report")
        fd = os.open(
            target,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
            0o600,
        )
        with os.fdopen(fd, "wb") as out:
            if os.fspath(report) == STDIN:
                _copy(stdin or sys.stdin.buffer, out, cap, "<stdin>")
            else:
                with _open_stream(report, wait_s, waiting) as source:
                    _copy(source, out, cap, os.fspath(report))
        yield target
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _copy(source: BinaryIO, out: BinaryIO, cap: int, origin: str) -> None:
    limit = cap + _SLACK
    total = 0
    while chunk := source.read(MIB):
        total += len(chunk)
        if total > limit:
            raise too_large(origin, cap)
        out.write(chunk)
