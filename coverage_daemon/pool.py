"""Bounded DuckDB read connections with checkout deadlines and query interruption.

A ``ReadPool`` lends at most ``COVERAGE_MCP_DB_POOL_SIZE`` cursors of one
store's connection. A checkout waits at most ``COVERAGE_MCP_DB_ACQUIRE_TIMEOUT_MS``
(then ``deadline_exceeded``); every lent connection is tracked, so the
daemon's watchdog can interrupt one whose query runs past
``COVERAGE_MCP_DB_QUERY_TIMEOUT_MS``, a cancelled call can interrupt its own,
and shutdown can interrupt them all and wait for their return.

Everything here blocks and runs in the daemon's worker threads. A
``CallToken`` ties the connections one call checks out to the coroutine that
awaits it, which is how a cancellation on the event loop reaches DuckDB.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import duckdb

from coverage_core.errors import CoverageError, ErrorCode

# Why a connection was interrupted, and what the call that used it answers.
DEADLINE, SHUTDOWN, CANCELLED = "deadline", "shutdown", "cancelled"


class _Lent:
    """One checked-out connection and why, if ever, it was interrupted."""

    __slots__ = ("con", "deadline", "reason")

    def __init__(self, con: duckdb.DuckDBPyConnection, deadline: float | None) -> None:
        self.con = con
        self.deadline = deadline
        self.reason: str | None = None

    def interrupt(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.con.interrupt()


class CallToken:
    """What one call has checked out, so the coroutine awaiting it can interrupt it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lent: list[_Lent] = []
        self.cancelled = False

    def attach(self, lent: _Lent) -> None:
        with self._lock:
            self._lent.append(lent)
            cancelled = self.cancelled
        if cancelled:
            lent.interrupt(CANCELLED)

    def interrupt(self, reason: str) -> None:
        with self._lock:
            self.cancelled = self.cancelled or reason == CANCELLED
            lent = list(self._lent)
        for item in lent:
            item.interrupt(reason)

    def reason(self) -> str | None:
        with self._lock:
            return next((item.reason for item in self._lent if item.reason), None)


_bound = threading.local()


@contextlib.contextmanager
def bound(token: CallToken, *, unbounded: bool = False) -> Iterator[None]:
    """Run the body with ``token`` as this thread's call; ``unbounded`` exempts it from the query deadline."""
    _bound.token, _bound.unbounded = token, unbounded
    try:
        yield
    finally:
        _bound.token, _bound.unbounded = None, False


def interrupted_error(reason: str | None, settings_ms: int) -> CoverageError:
    """The error a call answers when its query was interrupted."""
    if reason == SHUTDOWN:
        return CoverageError(
            ErrorCode.STORE_UNAVAILABLE,
            "the daemon is shutting down; the query was interrupted",
            "Retry in a moment: the next request starts a daemon again (or run `coverage-mcp serve`).",
        )
    if reason == CANCELLED:
        return CoverageError(
            ErrorCode.DEADLINE_EXCEEDED, "the call was cancelled", "Send the call again if needed."
        )
    return CoverageError(
        ErrorCode.DEADLINE_EXCEEDED,
        f"the query ran longer than COVERAGE_MCP_DB_QUERY_TIMEOUT_MS={settings_ms} and was interrupted",
        "Narrow the question (one snapshot, a file, smaller limits), or raise COVERAGE_MCP_DB_QUERY_TIMEOUT_MS "
        "(it must stay below COVERAGE_MCP_HTTP_TIMEOUT_S).",
        {"timeout_ms": settings_ms},
    )


class PooledConnection:
    """A lent connection: DuckDB's API, except that ``close`` gives it back to the pool."""

    # __weakref__: the store keys what a request resolved on this connection by it (restore of compacted detail).
    __slots__ = ("__weakref__", "_lent", "_pool")

    def __init__(self, pool: ReadPool, lent: _Lent) -> None:
        self._pool = pool
        self._lent = lent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lent.con, name)

    def close(self) -> None:
        self._pool._give_back(self._lent)


class ReadPool:
    """At most ``size`` cursors of one store, lent with deadlines; thread-safe."""

    def __init__(
        self,
        connect: Callable[[], duckdb.DuckDBPyConnection],
        *,
        size: int,
        acquire_timeout_ms: int,
        query_timeout_ms: int,
    ) -> None:
        self._connect = connect
        self.size = size
        self._acquire_timeout_ms = acquire_timeout_ms
        self.query_timeout_ms = query_timeout_ms
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._returned = threading.Condition(self._lock)
        self._idle: list[duckdb.DuckDBPyConnection] = []
        self._lent: set[_Lent] = set()
        self._closed = False

    def checkout(self) -> PooledConnection:
        if self._closed:
            raise interrupted_error(SHUTDOWN, self.query_timeout_ms)
        if not self._slots.acquire(timeout=self._acquire_timeout_ms / 1000):
            raise CoverageError(
                ErrorCode.DEADLINE_EXCEEDED,
                f"no read connection came free within COVERAGE_MCP_DB_ACQUIRE_TIMEOUT_MS={self._acquire_timeout_ms} "
                f"(all {self.size} are busy)",
                "Retry shortly, or raise COVERAGE_MCP_DB_POOL_SIZE / COVERAGE_MCP_DB_ACQUIRE_TIMEOUT_MS.",
                {"pool_size": self.size},
            )
        with self._lock:
            if self._closed:
                self._slots.release()
                raise interrupted_error(SHUTDOWN, self.query_timeout_ms)
            con = self._idle.pop() if self._idle else self._connect()
            unbounded = getattr(_bound, "unbounded", False)
            deadline = None if unbounded else time.monotonic() + self.query_timeout_ms / 1000
            lent = _Lent(con, deadline)
            self._lent.add(lent)
        token: CallToken | None = getattr(_bound, "token", None)
        if token is not None:
            token.attach(lent)
        return PooledConnection(self, lent)

    def _give_back(self, lent: _Lent) -> None:
        with self._lock:
            if lent not in self._lent:
                return  # closed twice
            self._lent.discard(lent)
            if not self._closed and _reusable(lent.con):
                self._idle.append(lent.con)
            else:
                lent.con.close()
            self._returned.notify_all()
        self._slots.release()

    def interrupt_overdue(self, now: float) -> int:
        """Interrupt every lent connection past its query deadline; how many were."""
        with self._lock:
            overdue = [
                lent
                for lent in self._lent
                if lent.deadline is not None and lent.deadline <= now and lent.reason is None
            ]
        for lent in overdue:
            lent.interrupt(DEADLINE)
        return len(overdue)

    @property
    def busy(self) -> int:
        with self._lock:
            return len(self._lent)

    def close(self, grace_s: float) -> bool:
        """Refuse new checkouts, interrupt lent ones, wait for them; True when all came back."""
        with self._lock:
            self._closed = True
            lent = list(self._lent)
        for item in lent:
            item.interrupt(SHUTDOWN)
        with self._lock:
            done = self._returned.wait_for(lambda: not self._lent, timeout=grace_s)
            for con in self._idle:
                con.close()
            self._idle.clear()
        return done


def _reusable(con: duckdb.DuckDBPyConnection) -> bool:
    """Drop a half-read result, which would refuse the next borrower's work; False if the connection is broken."""
    try:
        con.abort()
    except duckdb.Error:
        return False
    return True
