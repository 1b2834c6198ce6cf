"""Compaction: old snapshots' detail rows become one zstd payload each, restored transparently.

A pass picks the snapshots older than the threshold that are still relational
and not protected (the newest snapshot of each suite, and the incremental
bases of the runs in the window ``in_use`` names: queued and running runs and
the newest ``protect_recent_runs`` finished ones), oldest first, at most
``limit`` of them.
Each snapshot is one DuckDB transaction: insert the payload, delete the
detail rows, commit. Until the commit the rows are untouched and the payload
invisible; after it the payload is durable and the rows gone, so a crash at
any point leaves the snapshot fully relational or fully compacted.

The detail is read and encoded under the store's write lock (no ingest or
deletion in between), then the commit takes the store's read gate alone for
the length of one transaction: a reader that decided a snapshot is relational
finishes before its rows go. ``on_stage`` hears each step (``encoded``,
``payload_written``, ``rows_deleted``, ``committed``) for tests that stop a
process there.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import duckdb

from ..errors import CoverageError, ErrorCode
from . import payload_tables, project_settings
from .payload import DETAIL, FORMAT_VERSION, digest, encode
from .transactions import transaction

# How long a commit waits for readers to finish before it leaves the snapshot for a later pass.
GATE_TIMEOUT_S = 30.0
STAGES = ("encoded", "payload_written", "rows_deleted", "committed")


@attrs.frozen
class Policy:
    after_days: int = 30
    cadence_minutes: int = 60
    batch_size: int = 8
    protect_recent_runs: int = 10

    def to_dict(self) -> dict[str, int]:
        return {
            "after_days": self.after_days,
            "cadence_minutes": self.cadence_minutes,
            "batch_size": self.batch_size,
            "protect_recent_runs": self.protect_recent_runs,
        }


def read_policy(con: duckdb.DuckDBPyConnection) -> Policy:
    """The project's persisted policy (defaults for keys never set; a bad stored value falls back too)."""
    values = project_settings.read(con, [s.key for s in project_settings.COMPACTION])
    return Policy(*(values[s.key] for s in project_settings.COMPACTION))


def write_policy(con: duckdb.DuckDBPyConnection, values: dict[str, Any]) -> Policy:
    """Check and persist policy settings (keys of ``project_settings.COMPACTION``) in one transaction."""
    known = {s.key for s in project_settings.COMPACTION}
    unknown = sorted(set(values) - known)
    if unknown:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown compaction setting(s): {', '.join(unknown)}",
            f"Compaction settings are: {', '.join(sorted(known))}.",
            {"unknown": unknown},
        )
    project_settings.write(con, {k: project_settings.SETTINGS[k].check(v) for k, v in values.items()})
    return read_policy(con)


_AGE = re.compile(r"^\s*(\d{1,6})\s*([dhm]?)\s*$")


def parse_age(text: str) -> dt.timedelta:
    """``30``/``30d`` (days), ``12h`` (hours), ``45m`` (minutes), ``0`` (any age): an --older-than value."""
    match = _AGE.match(text) if isinstance(text, str) else None
    if match is None:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"--older-than {text!r} is not an age",
            "Give a number of days (30 or 30d), hours (12h) or minutes (45m); 0 means any age.",
            {"older_than": str(text)[:100]},
        )
    n, unit = int(match[1]), match[2] or "d"
    return dt.timedelta(**{{"d": "days", "h": "hours", "m": "minutes"}[unit]: n})


@attrs.frozen
class Candidate:
    snap_key: int
    snapshot_id: str
    suite: str
    created_at: dt.datetime


@attrs.frozen
class Plan:
    """What a pass would do: the eligible snapshots, oldest first, and the protected ones (id -> why)."""

    eligible: tuple[Candidate, ...]
    protected: dict[str, str]


InUse = Callable[[Sequence[str], duckdb.DuckDBPyConnection], dict[str, str]]


def plan(
    con: duckdb.DuckDBPyConnection,
    older_than: dt.timedelta,
    in_use: InUse | None = None,
    now: dt.datetime | None = None,
) -> Plan:
    """The relational snapshots older than ``older_than``, minus the protected ones (``in_use(ids, con)``
    names the snapshots work in progress needs, id -> why)."""
    return _planned(_relational(con), older_than, lambda ids: (in_use or _nothing_in_use)(ids, con), now)


def _nothing_in_use(_ids: Sequence[str], _con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return {}


def _relational(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """(snap, snapshot id, suite, created_at, newest of its suite) of every relational snapshot, by key."""
    return con.execute(
        """SELECT s.snap, s.snapshot_id, s.suite, s.created_at,
                  s.snap = max(s.snap) OVER (PARTITION BY s.suite) AS newest
           FROM snapshots s WHERE s.snap NOT IN (SELECT snap FROM snapshot_payloads)
           ORDER BY s.snap"""
    ).fetchall()


def _planned(
    rows: list[tuple[Any, ...]],
    older_than: dt.timedelta,
    busy_of: Callable[[list[str]], dict[str, str]],
    now: dt.datetime | None,
) -> Plan:
    now = now or dt.datetime.now(dt.UTC)
    old = [r for r in rows if r[3] <= now - older_than]
    protected = {r[1]: "the newest snapshot of its suite" for r in old if r[4]}
    busy = busy_of([r[1] for r in old if not r[4]])
    protected.update({i: f"in use: {why}" for i, why in busy.items()})
    eligible = tuple(Candidate(int(r[0]), r[1], r[2], r[3]) for r in old if r[1] not in protected)
    return Plan(eligible, protected)


@attrs.frozen
class Compacted:
    snapshot_id: str
    rows: int
    detail_bytes: int
    payload_bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "snapshot_id": self.snapshot_id,
            "rows": self.rows,
            "detail_bytes": self.detail_bytes,
            "payload_bytes": self.payload_bytes,
        }


def compact_snapshot(
    store: Any,
    candidate: Candidate,
    on_stage: Callable[[str], None] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> Compacted | None:
    """Compact one snapshot of ``store`` (a ProjectStore) on ``con`` (a connection of the store's own, never
    a read connection with restored detail; default: a new cursor of the store's connection); None when it is
    gone, already compacted, or readers kept the gate past ``GATE_TIMEOUT_S`` (left for a later pass)."""
    if con is None:
        own = store.con.cursor()
        try:
            return compact_snapshot(store, candidate, on_stage, own)
        finally:
            own.close()
    stage = on_stage or (lambda _s: None)
    started = time.perf_counter()
    with store._write_lock:
        if not _still_relational(con, candidate):
            return None
        tables = {
            table: con.execute(
                f"SELECT {', '.join(c for c, _ in cols)} FROM {table} WHERE snap = ? ORDER BY rowid",
                [candidate.snap_key],
            ).fetchnumpy()
            for table, cols in DETAIL.items()
        }
    frame, detail_bytes, rows = encode(tables)
    del tables
    content = digest(frame, max_bytes=detail_bytes)
    stage("encoded")
    if not store.gate.acquire_alone(GATE_TIMEOUT_S):
        return None
    try:
        with store._write_lock:
            if not _still_relational(con, candidate):  # deleted (or compacted) while we encoded
                return None
            with transaction(con):
                con.execute(
                    "INSERT INTO snapshot_payloads (snap, format_version, row_count, detail_bytes, "
                    "payload_bytes, created_at, content_sha256, digest_origin) "
                    "VALUES (?, ?, ?, ?, ?, now(), ?, 'compaction')",
                    [candidate.snap_key, FORMAT_VERSION, rows, detail_bytes, len(frame), content],
                )
                payload_tables.write(con, candidate.snap_key, frame)
                stage("payload_written")
                for table in DETAIL:
                    con.execute(f"DELETE FROM {table} WHERE snap = ?", [candidate.snap_key])
                stage("rows_deleted")
            store.compacted_now(candidate.snap_key, candidate.snapshot_id)
    finally:
        store.gate.release_alone()
    stage("committed")
    return Compacted(candidate.snapshot_id, rows, detail_bytes, len(frame), time.perf_counter() - started)


def checkpoint(con: duckdb.DuckDBPyConnection) -> None:
    """Write a finished pass into the database file now, so the deleted rows' blocks are free.

    A DELETE only marks rows: DuckDB frees their blocks at a checkpoint (a VACUUM frees nothing), and new
    rows reuse only blocks already free. Left to the automatic checkpoint (a WAL past 16 MB, or the close),
    a smaller pass leaves its deletes and payloads in the WAL, on disk beside the file, and the next ingest
    cannot reuse the compacted snapshots' blocks. Once per pass, not per snapshot: a checkpoint rewrites every
    row group a transaction appended to (the payload descriptions, the pass record); the frames, each in a
    table of its own (payload_tables), are written once. Run after the commits and outside the read gate: readers that
    began after a commit never see its deleted rows, so DuckDB may drop them (it keeps what an older reader
    still sees, and frees it at a later checkpoint of the same table). In DuckDB 2.0 a CHECKPOINT neither
    fails nor waits while other transactions run (nor does FORCE CHECKPOINT): it does what they allow. One
    that another writer's transaction refuses, or the daemon's shutdown interrupts, loses nothing
    committed: the next checkpoint (or the close) writes it."""
    try:
        con.execute("CHECKPOINT")
    except (duckdb.TransactionException, duckdb.InterruptException):
        pass


def _still_relational(con: duckdb.DuckDBPyConnection, c: Candidate) -> bool:
    row = con.execute(
        "SELECT snapshot_id, snap IN (SELECT snap FROM snapshot_payloads) FROM snapshots WHERE snap = ?",
        [c.snap_key],
    ).fetchone()
    return row is not None and row[0] == c.snapshot_id and not row[1]


@attrs.frozen
class PassResult:
    dry_run: bool
    trigger: str
    older_than_s: int
    eligible: tuple[Candidate, ...]
    protected: dict[str, str]
    compacted: tuple[Compacted, ...]
    left: int  # eligible but not compacted in this pass (batch limit, stop, or busy readers)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "trigger": self.trigger,
            "older_than_seconds": self.older_than_s,
            "eligible": [
                {"snapshot_id": c.snapshot_id, "suite": c.suite, "created_at": c.created_at.isoformat()}
                for c in self.eligible
            ],
            "protected": [{"snapshot_id": i, "why": why} for i, why in sorted(self.protected.items())],
            "compacted": [c.to_dict() for c in self.compacted],
            "left": self.left,
            "detail_bytes": sum(c.detail_bytes for c in self.compacted),
            "payload_bytes": sum(c.payload_bytes for c in self.compacted),
        }


def run_pass(
    store: Any,
    *,
    older_than: dt.timedelta,
    limit: int | None = None,
    dry_run: bool = False,
    trigger: str = "manual",
    in_use: InUse | None = None,
    on_stage: Callable[[str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    record_idle: bool = True,
) -> PassResult:
    """One pass over ``store``: compact up to ``limit`` eligible snapshots, oldest first (``dry_run``:
    say which, change nothing). Every finished pass that is not a dry run records its status (with
    ``record_idle=False``, only a pass that found something eligible: the worker's idle ticks leave
    the store untouched)."""
    # Its own connection: the store's is shared with other threads' writes (settings, ingests), and the
    # daemon's shutdown interrupts this one (``store.compacting``) if a snapshot outlasts its grace.
    con = store.con.cursor()
    store.compacting = con
    try:
        found = plan(con, older_than, in_use)
        chosen = found.eligible if limit is None else found.eligible[:limit]
        done: list[Compacted] = []
        if not dry_run and (record_idle or found.eligible):
            for candidate in chosen:
                if should_stop is not None and should_stop():
                    break
                result = compact_snapshot(store, candidate, on_stage, con)
                if result is not None:
                    done.append(result)
            with store._write_lock:
                con.execute(
                    "INSERT INTO compaction_passes VALUES (now(), ?, ?, ?, ?, ?)",
                    [
                        trigger,
                        len(done),
                        sum(c.detail_bytes for c in done),
                        sum(c.payload_bytes for c in done),
                        len(found.eligible) - len(done),
                    ],
                ).fetchall()
                if done:
                    checkpoint(con)  # with the pass's own row: nothing of it is left in the WAL
    finally:
        store.compacting = None
        con.close()
    return PassResult(
        dry_run,
        trigger,
        int(older_than.total_seconds()),
        found.eligible,
        found.protected,
        tuple(done),
        len(found.eligible) - len(done),
    )


def inventory(
    con: duckdb.DuckDBPyConnection, policy: Policy | None = None, in_use: InUse | None = None
) -> dict[str, Any]:
    """Snapshots relational vs compacted, bytes before and after, the eligible count (past the policy's
    ``after_days``), the protected count (every snapshot a pass of any age would keep) split into
    ``protected_newest`` (the newest of each suite) and ``protected_incremental_bases`` (the bases of the
    runs in the window ``in_use`` names; a snapshot can be both), ``protected_past_threshold`` (those a
    pass at the policy's threshold holds back), the last pass, and the inconsistencies: ``inconsistent``
    (compacted snapshots that still have rows in any of the payload's tables) and ``orphan_payloads`` (the
    keys of payloads no snapshot owns)."""
    db = con.execute("SELECT current_database()").fetchall()[0][0].replace('"', '""')
    policy = policy or read_policy(con)
    total, compacted, detail, payload = con.execute(
        """SELECT (SELECT count(*) FROM snapshots), count(p.snap), coalesce(sum(p.detail_bytes), 0),
                  coalesce(sum(p.payload_bytes), 0)
           FROM snapshot_payloads p JOIN snapshots s USING (snap)"""
    ).fetchall()[0]
    # A payload's snapshot must hold no relational detail any more, in any table the payload holds (the
    # stored tables by name: a read connection's views of the same names add the restored rows). Nothing
    # to look for when no payload exists (the common case: on SQLite this scan read 2.15M observation rows
    # per call); a semi-join per table reads only the payloads' keys of each.
    payloads = int(con.execute("SELECT count(*) FROM snapshot_payloads").fetchall()[0][0])
    held = " UNION ".join(
        f'SELECT snap FROM "{db}".main.{table} WHERE snap IN (SELECT snap FROM snapshot_payloads)'
        for table in DETAIL
    )
    both = (
        con.execute(
            f"SELECT list(s.snapshot_id ORDER BY s.snap) FROM snapshots s WHERE s.snap IN ({held})"
        ).fetchall()[0][0]
        if payloads
        else None
    ) or []
    orphans = (
        con.execute(
            "SELECT list(snap ORDER BY snap) FROM snapshot_payloads WHERE snap NOT IN (SELECT snap FROM snapshots)"
        ).fetchall()[0][0]
        if payloads > int(compacted)
        else None
    ) or []
    # A frame's table whose description is gone (payload_tables) is an orphan too.
    frames = payload_tables.stored(con)
    if len(frames) > payloads:
        described = {int(r[0]) for r in con.execute("SELECT snap FROM snapshot_payloads").fetchall()}
        orphans = sorted({*map(int, orphans), *(s for s in frames if s not in described)})
    last = con.execute(
        "SELECT finished_at, trigger, compacted, detail_bytes, payload_bytes, skipped FROM compaction_passes "
        "ORDER BY finished_at DESC LIMIT 1"
    ).fetchone()
    # Protected now, whatever its age: the newest relational snapshot of each suite, and every relational
    # snapshot a run in the window uses as its base (``found.protected`` holds only those past the threshold).
    rows = _relational(con)
    ids = [r[1] for r in rows]
    bases = (in_use or _nothing_in_use)(ids, con) if ids else {}
    newest = {r[1] for r in rows if r[4]}
    found = _planned(
        rows, dt.timedelta(days=policy.after_days), lambda ids: {i: bases[i] for i in ids if i in bases}, None
    )
    return {
        "relational": int(total) - int(compacted),
        "compacted": int(compacted),
        "detail_bytes": int(detail),
        "payload_bytes": int(payload),
        "eligible": len(found.eligible),
        "protected": len(newest | set(bases)),
        "protected_newest": len(newest),
        "protected_incremental_bases": len(bases),
        "protected_past_threshold": len(found.protected),
        "policy": policy.to_dict(),
        "last_pass": None
        if last is None
        else {
            "finished_at": last[0].isoformat(),
            "trigger": last[1],
            "compacted": int(last[2]),
            "detail_bytes": int(last[3]),
            "payload_bytes": int(last[4]),
            "left": int(last[5]),
        },
        "inconsistent": list(both),
        "orphan_payloads": [int(k) for k in orphans],
    }
