"""One process-wide budget of report bytes being read and parsed at once.

A report is held whole while it is parsed (an LCOV ingest streams it in
chunks, but claims the same share: its format is known only once it is open),
so memory follows the bytes in flight. Bounding them per repository does not bound the process: a daemon
serving six repositories would hold six capped reports. Every read-and-parse
claims its bytes here first (its size if known, else the whole cap: a
compressed stream's decompressed size is only known once read), waits its turn
in arrival order while the budget is spent, and gives them back after.

CPython frees large buffers to glibc's heap but glibc keeps the pages, so a
process that once parsed a 256 MiB report stays that large; after a large
claim ends, ``release_memory`` asks glibc to hand free pages back to the OS.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..config import MIB, setting

# Below this a claim's garbage is small change: trimming costs more than it returns.
TRIM_AFTER_BYTES = 16 * MIB


class ByteBudget:
    """A FIFO counting semaphore over bytes (a claim larger than the whole budget runs alone)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self._free = self.capacity
        self._cond = threading.Condition()
        self._next_ticket = 0
        self._serving = 0

    @property
    def in_flight(self) -> int:
        with self._cond:
            return self.capacity - self._free

    @contextmanager
    def claim(self, nbytes: int) -> Iterator[int]:
        n = min(max(1, nbytes), self.capacity)
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            # Strict arrival order: small claims never starve a large one.
            self._cond.wait_for(lambda: self._serving == ticket and self._free >= n)
            self._free -= n
            self._serving += 1
            self._cond.notify_all()
        try:
            yield n
        finally:
            with self._cond:
                self._free += n
                self._cond.notify_all()
            if n >= TRIM_AFTER_BYTES:
                release_memory()


# The process's one budget (the daemon serves every repository from one process),
# sized by COVERAGE_MCP_PARSE_BUDGET_BYTES (declared in coverage_core.config).
PARSE_BUDGET = ByteBudget(setting("parse_budget_bytes"))


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None. By its soname, or from the symbols already loaded (the interpreter's
    libc), before asking ``ctypes.util.find_library``: on Linux that runs ``ldconfig -p`` in a subprocess
    (12 ms), which every process importing the project paid at its start when this ran at import."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    def trim_of(name: str | None) -> Callable[[int], int] | None:
        try:
            trim = ctypes.CDLL(name).malloc_trim  # glibc only; musl has none
        except (OSError, AttributeError):
            return None
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
        return trim

    found = trim_of("libc.so.6") or trim_of(None)
    if found is None:
        import ctypes.util

        name = ctypes.util.find_library("c")
        found = trim_of(name) if name else None
    return found


_TRIM: list[Callable[[int], int] | None] = []  # malloc_trim once looked up (on the first release)
_TRIM_LOCK = threading.Lock()


def release_memory() -> None:
    """Return the heap's free pages to the OS (glibc ``malloc_trim(0)``; elsewhere nothing)."""
    if not _TRIM:
        with _TRIM_LOCK:
            if not _TRIM:
                _TRIM.append(_malloc_trim())
    trim = _TRIM[0]
    if trim is not None:
        trim(0)
