"""The execution tables' own connection to a project store, one per open store.

Commands, runs and their events are written through this connection under
its lock, never through the store's ingest connection, so a run's state can
change while an ingest or a long read is in flight. The store is leased to
one process, so the lock is the only writer of these tables.

Reads of these tables made for an answer go on the answer's own connection
(``reader(store, con)``: in the daemon a pooled one, with its checkout bound,
tracking and query deadline), never behind this lock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb

from .store import ProjectStore
from .transactions import transaction

_MADE = threading.Lock()


class ExecDB:
    """A dedicated DuckDB connection to one store and the lock its writers take."""

    def __init__(self, store: ProjectStore) -> None:
        self.store = store
        self.con = store.con.cursor()
        self.lock = threading.RLock()
        self.closed = False

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            return self.con.execute(sql, list(params)).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        with self.lock:
            return self.con.execute(sql, list(params)).fetchone()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The connection inside one transaction, committed on success and rolled back otherwise; a commit
        moves the store to a new generation (caches of its answers read it again)."""
        try:
            with self.lock, transaction(self.con) as con:
                yield con
        finally:
            self.store.new_generation()

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                with contextlib.suppress(duckdb.Error):
                    self.con.close()


class OnConnection:
    """The execution tables read on a caller's connection (``ExecDB``'s read methods, without its lock)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.con.execute(sql, list(params)).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self.con.execute(sql, list(params)).fetchone()


def reader(store: ProjectStore, con: duckdb.DuckDBPyConnection | None = None) -> ExecDB | OnConnection:
    """Where a read of the execution tables goes: ``con`` (an answer's connection) when given, else the
    execution connection (the runtime's own reads, between its writes)."""
    return exec_db(store) if con is None else OnConnection(con)


def exec_db(store: ProjectStore) -> ExecDB:
    """The execution connection of ``store``, made on first use and closed with the store."""
    found: ExecDB | None = getattr(store, "_exec_db", None)
    if found is not None:
        return found
    with _MADE:
        found = getattr(store, "_exec_db", None)
        if found is None:
            found = ExecDB(store)
            store._exec_db = found  # type: ignore[attr-defined]  # carried by the store it serves, made here
            store.on_close.insert(0, found.close)  # after the runtime stops (close pops from the end)
        return found
