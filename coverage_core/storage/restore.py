"""Transparent restore: a compacted snapshot's detail, readable by the same SQL as relational rows.

On a read connection that meets a compacted snapshot, each detail table name
(``lines``, ``branches``, ...) becomes a TEMP VIEW: the store's own table
UNION ALL, per restored snapshot, a scan of its decoded NumPy columns
registered on that connection (``_restored_<table>_<snap>``, with the
snapshot's key a constant of the view, so a filter on ``snap`` skips the other
snapshots' arrays without reading them). DuckDB resolves an unqualified name
to the temp catalog first, so every query of the review tasks, the gate and
file detail runs unchanged over any mix of relational and compacted
snapshots. Restoring is decoding: no rows are copied into a table. The temp
objects belong to that connection alone (a pooled connection keeps them for
the next request); the store's own write connection never gets them.

``_restored`` lists what a connection holds, by snapshot id: a snapshot key
reused after a deletion is purged before it can mix with another snapshot's
rows. Past ``MAX_RESTORED_ROWS`` the least recently used snapshots are
dropped (never one the current request asked for). A table asked for brings
the snapshot's other tables along (but ``ON_DEMAND``), so one answer
decompresses a payload once. Several snapshots asked
for at once (a comparison's two sides) are decoded in parallel threads (zstd
and NumPy release the GIL).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import duckdb

from . import payload_tables
from .payload import _FLOOR, _SLACK, DETAIL, Columns, _corrupt, decode

MAX_RESTORED_ROWS = 6_000_000
# Restored only when asked for; a snapshot's other tables come along with any one asked for, decoded
# from the one decompression (they are small beside its lines, and each answer reads several).
ON_DEMAND = ("test_observations",)
# The SQL type of each column kind of ``DETAIL`` (the restored arrays are cast to the table's types).
_SQL = {
    "<i1": "TINYINT",
    "<i2": "SMALLINT",
    "<i4": "INTEGER",
    "<i8": "BIGINT",
    "text": "VARCHAR",
    "blob": "BLOB",
}


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> list[tuple[Any, ...]]:
    """Execute and drain: DuckDB refuses more work on a connection with an unfinished result."""
    return con.execute(sql, params).fetchall() if params is not None else con.execute(sql).fetchall()


def _installed(con: duckdb.DuckDBPyConnection) -> bool:
    try:
        _run(con, "SELECT 1 FROM temp.main._restored LIMIT 0")
        return True
    except duckdb.CatalogException:
        return False


def _install(con: duckdb.DuckDBPyConnection) -> None:
    _run(
        con,
        "CREATE TEMP TABLE _restored (snap INTEGER, snapshot_id VARCHAR, tbl VARCHAR, row_count BIGINT, "
        "used DOUBLE)",
    )  # a table's view appears with its first restored rows (``_define``)


def _registered(table: str, snap_key: int) -> str:
    return f"_restored_{table}_{int(snap_key)}"


def _define(con: duckdb.DuckDBPyConnection, tables: Iterable[str]) -> None:
    """(Re)define the temp views of ``tables``: the store's rows and every restored snapshot holding rows."""
    db = _run(con, "SELECT current_database()")[0][0].replace('"', '""')
    tables = list(tables)
    held = _run(
        con,
        "SELECT tbl, list(snap ORDER BY snap) FROM temp.main._restored "
        "WHERE row_count > 0 AND list_contains(?, tbl) GROUP BY tbl",
        [tables],
    )
    snaps = dict(held)
    for table in tables:
        names = ", ".join(c for c, _k in DETAIL[table])
        parts = [f'SELECT snap, {names} FROM "{db}".main.{table}']
        cast = ", ".join(f"{c}::{_SQL[k]} AS {c}" for c, k in DETAIL[table])
        parts += [
            f"SELECT {int(s)}::INTEGER AS snap, {cast} FROM {_registered(table, s)}"
            for s in snaps.get(table, [])
        ]
        _run(con, f"CREATE OR REPLACE TEMP VIEW {table} AS " + " UNION ALL ".join(parts))


def _drop(con: duckdb.DuckDBPyConnection, snaps: list[int], tables: Iterable[str] = DETAIL) -> None:
    tables = list(tables)
    held = _run(
        con,
        "SELECT snap, tbl FROM temp.main._restored WHERE list_contains(?, snap) AND "
        "list_contains(?, tbl) AND row_count > 0",
        [snaps, tables],
    )
    _run(
        con,
        "DELETE FROM temp.main._restored WHERE list_contains(?, snap) AND list_contains(?, tbl)",
        [snaps, tables],
    )
    _define(con, sorted({t for _s, t in held}))
    for snap_key, table in held:
        con.unregister(_registered(table, snap_key))


def ensure(
    con: duckdb.DuckDBPyConnection,
    wanted: dict[int, str],
    compacted: dict[int, str],
    tables: Iterable[str] | None = None,
) -> set[tuple[int, str]]:
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
    held = _run(
        con,
        "SELECT snap, snapshot_id, tbl FROM temp.main._restored WHERE list_contains(?, snap)",
        [list(wanted)],
    )
    stale = sorted({s for s, i, _t in held if wanted[s] != i or s not in todo})
    if stale:
        _drop(con, stale)
    have = {(s, t) for s, _i, t in held if s not in stale}
    now = time.time()
    if have:
        _run(con, "UPDATE temp.main._restored SET used = ? WHERE list_contains(?, snap)", [now, sorted(todo)])
    jobs = {}
    for snap_key in todo:
        if any((snap_key, t) not in have for t in names):  # with the rest that is cheap: one decompression
            jobs[snap_key] = [
                t for t in DETAIL if (snap_key, t) not in have and (t in names or t not in ON_DEMAND)
            ]
    if jobs:
        _restore(con, jobs, todo, now)
        have.update((s, t) for s, need in jobs.items() for t in need)
        _evict(con, set(wanted))
    return {(s, t) for s in wanted for t in DETAIL if s not in todo} | have


def _restore(
    con: duckdb.DuckDBPyConnection, jobs: dict[int, list[str]], ids: dict[int, str], now: float
) -> None:
    """Decode the ``jobs`` (snap -> tables) from their payloads (in parallel when several) and register them."""
    described = {
        int(s): (d, h)
        for s, d, h in _run(
            con,
            "SELECT snap, detail_bytes, coalesce(content_sha256, '') FROM snapshot_payloads "
            "WHERE list_contains(?, snap)",
            [list(jobs)],
        )
    }
    frames = payload_tables.frames(con, described)
    missing = sorted(described.keys() - frames.keys())  # described, but the frame's table is gone
    if missing:
        raise _corrupt("its frame is missing from the store", ids[missing[0]])
    found = {s: (frames[s], d, h) for s, (d, h) in described.items()}
    # A snapshot compacted and deleted since has no payload: nothing to restore, no rows either.
    work = [(snap_key, need) for snap_key, need in jobs.items() if snap_key in found]

    def one(job: tuple[int, list[str]]) -> dict[str, Columns]:
        frame, detail, digest = found[job[0]]
        # No digest ('') matches no content: a payload the revision-10 migration could not read stays refused.
        return decode(
            frame,
            max_bytes=max(_FLOOR, int(detail * _SLACK)),
            only=job[1],
            expect=digest,
            snapshot=ids[job[0]],
        )

    if len(work) > 1:
        with ThreadPoolExecutor(max_workers=min(len(work), 4), thread_name_prefix="restore") as pool:
            decoded = list(pool.map(one, work))
    else:
        decoded = [one(job) for job in work]
    rows = []
    for (snap_key, _need), tables in zip(work, decoded):
        for table, columns in tables.items():
            n = len(next(iter(columns.values())))
            if n:
                con.register(_registered(table, snap_key), columns)
            rows.append((snap_key, ids[snap_key], table, n, now))
    if rows:
        con.executemany("INSERT INTO temp.main._restored VALUES (?, ?, ?, ?, ?)", rows)
        _define(con, sorted({r[2] for r in rows if r[3]}))


def _evict(con: duckdb.DuckDBPyConnection, pinned: Iterable[int]) -> None:
    held = _run(
        con, "SELECT snap, sum(row_count) FROM temp.main._restored GROUP BY snap ORDER BY max(used) DESC"
    )
    total, drop = 0, []
    pinned = set(pinned)
    for snap_key, rows in held:
        total += int(rows)
        if total > MAX_RESTORED_ROWS and snap_key not in pinned:
            drop.append(snap_key)
    if drop:
        _drop(con, drop)


class ReadGate:
    """Readers of detail share it; a compaction's commit takes it alone, briefly.

    A waiting writer holds back readers that arrive after it (a reader already
    inside, in its own thread, still nests): readers that keep overlapping
    would otherwise never leave the gate empty, and a compaction would give
    up on its snapshot under steady read load. Readers wait at most for the
    reads inside to end plus the writer's brief commit; a writer that still
    finds readers after its timeout gives up (letting the held-back readers
    in) and tries again on a later pass. Between deciding that a snapshot is
    relational and reading its rows, a reader holds the gate, so a
    compaction cannot remove the rows in between.
    """

    def __init__(self) -> None:
        import threading

        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._waiting = 0  # writers waiting for the readers inside to leave
        self._depth = threading.local()  # this thread's nesting of reads

    @property
    def writer_waiting(self) -> bool:
        """Whether a writer waits for the gate (new readers wait behind it)."""
        with self._cond:
            return bool(self._waiting)

    def reading(self) -> _Reading:
        return _Reading(self)

    def _enter(self) -> None:
        nested = getattr(self._depth, "n", 0)
        with self._cond:
            while self._writer or (self._waiting and not nested):
                self._cond.wait()
            self._readers += 1
        self._depth.n = nested + 1

    def _exit(self) -> None:
        self._depth.n -= 1
        with self._cond:
            self._readers -= 1
            if not self._readers:
                self._cond.notify_all()

    def acquire_alone(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` until no reader holds the gate, then hold it alone."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._waiting += 1
            try:
                while self._readers or self._writer:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    self._cond.wait(left)
                self._writer = True
                return True
            finally:
                self._waiting -= 1
                self._cond.notify_all()  # readers held back behind this writer: it holds the gate or gave up

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
