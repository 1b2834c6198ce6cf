"""What the operating system and DuckDB say when a file fails us, as coded errors.

A full disk, a store file that is truncated or garbage, a read the kernel
refuses: none is a bug, so none may reach a user as ``internal`` or a
traceback. ``classify`` turns such an exception into ``disk_full``,
``store_damaged`` or ``io_error`` naming the file; every catch-all (the
service, the daemon's middleware, its MCP dispatch and store pool, the CLI's
handler) asks it before calling anything a bug.

DuckDB reports these as ``IOException``/``Error``/``TransactionException``
whose only structure is the message, so the message is read here, in this
one place (the phrases DuckDB 1.x writes); ``OSError`` is judged by its errno.
A damaged store is named and never touched: the suggestion says how to
restore it.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

from .errors import CoverageError, ErrorCode

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# DuckDB's words for bytes that are not what it wrote (a file cut short, not a database, a failed checksum).
_DAMAGED = (
    "Could not read enough bytes",
    "not a valid DuckDB database file",
    "Corrupt database file",
    "Corrupt WAL file",
    "does not match stored checksum",
    "Failed to read database header",
    "INTERNAL Error: Failed to load metadata",
)
_FULL_WORDS = ("No space left on device", "Disk quota exceeded", "File too large")
_FILE = re.compile(r'file "([^"]+)"')


def disk_full(path: str | Path, doing: str = "writing") -> CoverageError:
    return CoverageError(
        ErrorCode.DISK_FULL,
        f"no space left on the device holding {path} while {doing}; nothing partial was kept",
        "Free space on that file system (or move COVERAGE_MCP_HOME / the checkout's .coverage-mcp elsewhere), "
        "then retry: the store is as it was before this operation.",
        {"path": str(path)},
    )


def store_damaged(path: str | Path, why: str) -> CoverageError:
    return CoverageError(
        ErrorCode.STORE_DAMAGED,
        f"the store {path} is damaged ({why}); it was not changed",
        f"Restore {path} from a backup, or move it aside (keeping it for inspection) so that the next ingest "
        "creates a new store, and re-import the reports you need.",
        {"path": str(path), "reason": "store_damaged"},
    )


def io_error(path: str | Path | None, error: BaseException, doing: str = "using") -> CoverageError:
    code = getattr(error, "errno", None)
    where = f" {path}" if path else ""
    return CoverageError(
        ErrorCode.IO_ERROR,
        f"the operating system refused{(' ' + doing) if doing else ''}{where}: {_text(error)}",
        "Check the file's permissions, its file system and the kernel log; retry once it is readable.",
        {"path": None if path is None else str(path), "errno": code},
    )


def _text(error: BaseException) -> str:
    return (getattr(error, "strerror", None) or str(error) or type(error).__name__)[:300]


def classify(
    error: BaseException, path: str | Path | None = None, doing: str = "writing"
) -> CoverageError | None:
    """The coded error for a file-system or storage failure (``path``: the file the caller was using, when
    the error does not name one), or None when ``error`` is none of those (then it is a bug)."""
    if isinstance(error, CoverageError):
        return error
    if isinstance(error, OSError):
        named = error.filename or path
        if error.errno in _FULL:
            return disk_full(named or "?", doing)
        return io_error(named, error, doing)
    try:
        import duckdb
    except ImportError:  # pragma: no cover - duckdb is a dependency
        return None
    if not isinstance(error, duckdb.Error) or isinstance(error, duckdb.InterruptException):
        return None
    text = str(error)
    found = _FILE.search(text)
    named = found.group(1) if found else path
    if any(w in text for w in _FULL_WORDS):
        return disk_full(named or "?", doing)
    if any(w in text for w in _DAMAGED):
        return store_damaged(named or "?", text.split("\n")[0][:200])
    if isinstance(error, duckdb.IOException):
        return io_error(named, error, doing)
    return None
