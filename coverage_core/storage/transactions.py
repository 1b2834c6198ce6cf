"""One DuckDB transaction as a ``with`` block: committed on success, rolled back on any failure."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import duckdb


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """``con`` inside one transaction; an exception (a KeyboardInterrupt too) rolls it back and goes on."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # a connection already closed or aborted rolls back by itself
            con.execute("ROLLBACK")
        raise
