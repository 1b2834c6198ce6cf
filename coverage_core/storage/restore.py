"""Transparent restore: a compacted snapshot's detail, readable by the same SQL as relational rows.

On a read connection that meets a compacted snapshot, each detail table name
(``lines``, ``branches``, ...) becomes a TEMP VIEW: the store's own table
UNION ALL a TEMP table of restored rows. DuckDB resolves an unqualified name
to the temp catalog first, so every query of the review tasks, the gate and
file detail runs unchanged over any mix of relational and compacted snapshots,
and a filter on ``snap`` reaches both sides. The temp objects belong to that
connection alone (a pooled connection keeps them for the next request); the
store's own write connection never gets them.

``_restored`` lists what a connection holds, by snapshot id: a snapshot key
reused after a deletion is purged before it can mix with another snapshot's
rows. Past ``MAX_RESTORED_ROWS`` the least recently used snapshots are
dropped (never one the current request asked for).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import duckdb
import numpy as np

from .payload import DETAIL, decode

MAX_RESTORED_ROWS = 6_000_000
# Decompressed frames are capped at this multiple of the recorded detail size (and this floor).
_SLACK = 1.01
_FLOOR = 1 << 20


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> list[tuple]:
    """Execute and drain: DuckDB refuses more work on a connection with an unfinished result."""
    return con.execute(sql, params).fetchall() if params is not None else con.execute(sql).fetchall()


def _installed(con: duckdb.DuckDBPyConnection) -> bool:
    try:
        _run(con, "SELECT 1 FROM temp.main._restored LIMIT 0")
        return True
    except duckdb.CatalogException:
        return False


def _install(con: duckdb.DuckDBPyConnection) -> None:
    db = _run(con, "SELECT current_database()")[0][0].replace('"', '""')
    _run(con, "CREATE TEMP TABLE _restored (snap INTEGER, snapshot_id VARCHAR, tbl VARCHAR, row_count BIGINT, "
              "used DOUBLE)")
    for table in DETAIL:
        _run(con, f'CREATE TEMP TABLE _restored_{table} AS SELECT * FROM "{db}".main.{table} LIMIT 0')
        _run(con, f'CREATE TEMP VIEW {table} AS SELECT * FROM "{db}".main.{table} '
                  f"UNION ALL SELECT * FROM temp.main._restored_{table}")


def _drop(con: duckdb.DuckDBPyConnection, snaps: list[int], tables: Iterable[str] = DETAIL) -> None:
    tables = list(tables)
    for table in tables:
        _run(con, f"DELETE FROM temp.main._restored_{table} WHERE list_contains(?, snap)", [snaps])
    _run(con, "DELETE FROM temp.main._restored WHERE list_contains(?, snap) AND list_contains(?, tbl)",
         [snaps, tables])


def ensure(con: duckdb.DuckDBPyConnection, wanted: dict[int, str], compacted: dict[int, str],
           tables: Iterable[str] | None = None) -> set[tuple[int, str]]:
    """Make ``tables`` (default: every detail table) of the ``wanted`` snapshots (snap -> snapshot id)
    readable on ``con``: restore what compacted ones (``compacted``: snap -> snapshot id of every compacted
    snapshot) lack there, and purge rows restored for an earlier snapshot that had the same key. Returns the
    (snap, table) pairs now readable, for the caller to skip next time."""
    names = [t for t in DETAIL if tables is None or t in set(tables)]
    todo = {s: i for s, i in wanted.items() if compacted.get(s) == i}
    installed = _installed(con)
    if not installed and not todo:
        return {(s, t) for s in wanted for t in DETAIL}
    if not installed:
        _install(con)
    held = _run(con, "SELECT snap, snapshot_id, tbl FROM temp.main._restored WHERE list_contains(?, snap)",
                [list(wanted)])
    stale = sorted({s for s, i, _t in held if wanted[s] != i or s not in todo})
    if stale:
        _drop(con, stale)
    have = {(s, t) for s, _i, t in held if s not in stale}
    now = time.time()
    if have:
        _run(con, "UPDATE temp.main._restored SET used = ? WHERE list_contains(?, snap)", [now, sorted(todo)])
    restored = False
    for snap, snapshot_id in todo.items():
        need = [t for t in names if (snap, t) not in have]
        if need:
            _restore_one(con, snap, snapshot_id, need, now)
            have.update((snap, t) for t in need)
            restored = True
    if restored:
        _evict(con, set(wanted))
    return {(s, t) for s in wanted for t in DETAIL if s not in todo} | have


def _restore_one(con: duckdb.DuckDBPyConnection, snap: int, snapshot_id: str, tables: list[str],
                 now: float) -> None:
    found = _run(con, "SELECT payload, detail_bytes FROM snapshot_payloads WHERE snap = ?", [snap])
    if not found:  # compacted and deleted since: nothing to restore, no rows either
        return
    frame, detail = found[0]
    decoded = decode(frame, max_bytes=max(_FLOOR, int(detail * _SLACK)), only=tables)
    for table, columns in decoded.items():
        n = len(next(iter(columns.values())))
        if n:
            name = f"_restore_{table}"
            cols = {"snap": np.full(n, snap, dtype=np.int32), **columns}
            con.register(name, cols)
            try:
                _run(con, f"INSERT INTO temp.main._restored_{table} ({', '.join(cols)}) "
                          f"SELECT {', '.join(cols)} FROM {name}")
            finally:
                con.unregister(name)
        _run(con, "INSERT INTO temp.main._restored VALUES (?, ?, ?, ?, ?)", [snap, snapshot_id, table, n, now])


def _evict(con: duckdb.DuckDBPyConnection, pinned: Iterable[int]) -> None:
    held = _run(con, "SELECT snap, sum(row_count) FROM temp.main._restored GROUP BY snap ORDER BY max(used) DESC")
    total, drop = 0, []
    pinned = set(pinned)
    for snap, rows in held:
        total += int(rows)
        if total > MAX_RESTORED_ROWS and snap not in pinned:
            drop.append(snap)
    if drop:
        _drop(con, drop)


class ReadGate:
    """Readers of detail share it; a compaction's commit takes it alone, briefly.

    Readers never wait for a writer that is only waiting (a reader inside a
    reader is fine), so reads are never starved; the writer gives up after
    its timeout instead, and tries again on a later pass. Between deciding
    that a snapshot is relational and reading its rows, a reader holds the
    gate, so a compaction cannot remove the rows in between.
    """

    def __init__(self) -> None:
        import threading

        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    def reading(self) -> _Reading:
        return _Reading(self)

    def _enter(self) -> None:
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._readers += 1

    def _exit(self) -> None:
        with self._cond:
            self._readers -= 1
            if not self._readers:
                self._cond.notify_all()

    def acquire_alone(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` until no reader holds the gate, then hold it alone."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._readers or self._writer:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            self._writer = True
            return True

    def release_alone(self) -> None:
        with self._cond:
            self._writer = False
            self._cond.notify_all()


class _Reading:
    def __init__(self, gate: ReadGate) -> None:
        self._gate = gate

    def __enter__(self) -> None:
        self._gate._enter()

    def __exit__(self, *exc: object) -> None:
        self._gate._exit()
