"""Where a compacted snapshot's payload frame is kept: a table of its own, ``payload_<snap>``, one row.

``snapshot_payloads`` keeps each payload's description (sizes, digest, format); the frame itself lives
apart because of how DuckDB 2.0 checkpoints: a checkpoint rewrites every row group a transaction appended
to, overflow blocks and all, so in one shared table each new payload wrote every older one again, and the
file grew by the whole payload table at every pass (benchmarks/compaction_size.py: 21 of 29 passes grew
it). A table per frame is written once and freed whole by its ``DROP``. Every function here runs inside
the caller's transaction, so a frame and its description are written and deleted together.
"""

from __future__ import annotations

from collections.abc import Iterable

import duckdb

PREFIX = "payload_"


def name(snap_key: int) -> str:
    """The table holding snapshot ``snap_key``'s frame (an integer name: nothing to quote)."""
    return f"{PREFIX}{int(snap_key)}"


def create(con: duckdb.DuckDBPyConnection, snap_key: int) -> str:
    """A new, empty frame table for ``snap_key``; its name."""
    table = name(snap_key)
    con.execute(f"CREATE TABLE {table} (frame BLOB NOT NULL)")
    return table


def write(con: duckdb.DuckDBPyConnection, snap_key: int, frame: bytes) -> None:
    con.execute(f"INSERT INTO {create(con, snap_key)} VALUES (?)", [frame])


def frames(con: duckdb.DuckDBPyConnection, snap_keys: Iterable[int]) -> dict[int, bytes]:
    """Snap -> frame of each of ``snap_keys`` that has one (a snapshot deleted since has none)."""
    present = set(stored(con))
    wanted = [int(s) for s in snap_keys if int(s) in present]
    if not wanted:
        return {}
    union = " UNION ALL ".join(f"SELECT {s} AS snap, frame FROM {name(s)}" for s in wanted)
    return {int(s): bytes(f) for s, f in con.execute(union).fetchall()}


def drop(con: duckdb.DuckDBPyConnection, snap_keys: Iterable[int]) -> None:
    for snap_key in snap_keys:
        con.execute(f"DROP TABLE IF EXISTS {name(snap_key)}")


def stored(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The snaps that have a frame table, in order (with ``snapshot_payloads``, what finds an orphan)."""
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND starts_with(table_name, ?) ORDER BY table_name",
        [PREFIX],
    ).fetchall()
    return sorted(int(r[0][len(PREFIX) :]) for r in rows if r[0][len(PREFIX) :].isdigit())
