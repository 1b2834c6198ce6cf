"""Opening a store file without trusting what is already at its path.

The store folder lives in the checkout, so a repository can commit anything
there: links to files outside it, a directory where the lock goes, or the
Python predecessor's own ``coverage.duckdb``. ``prepare_dir`` checks every
entry before it writes anything; ``open_verified`` runs under the lease:

1. the paths DuckDB opens itself (the database, ``.wal``, ``.tmp``) are
   ``lstat``-checked again;
2. a WAL is copied aside (``<db>.wal.preserved-<UTC time>``) before DuckDB
   sees it: DuckDB truncates a WAL with a damaged tail to its last valid
   record while replaying, then deletes it, and that loss exits cleanly;
3. an existing file is opened read-only first (skipped when there is no WAL
   to replay and ``<db>.committed`` shows we opened it before): tables
   without our ``schema_revision`` mean someone else's store (refused, never
   altered), and a missing newest committed snapshot (``<db>.committed``,
   rewritten after each committed ingest) means the replay lost data
   (refused, the WAL and its copy both kept);
4. the writable open checks both once more (the replay it did is the one
   that counts), then migrates, and only then removes our copy of the WAL.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import duckdb

from .. import faults, safefs
from ..errors import CoverageError, ErrorCode
from ..locks import LEASE_SUFFIX
from ..settings_table import setting
from . import schema

# Suffixes beside the database: DuckDB's own files, then ours.
WAL, TEMP, COMMITTED = ".wal", ".tmp", ".committed"
PRESERVED = ".wal.preserved-"
_LOST = "lost_snapshots"


def entries(path: Path) -> dict[str, str]:
    """Every name the store folder holds for ``path``, with the kind it must be."""
    kinds = {".gitignore": safefs.FILE, path.name: safefs.FILE, path.name + TEMP: safefs.DIRECTORY}
    kinds.update({path.name + suffix: safefs.FILE for suffix in (WAL, LEASE_SUFFIX, COMMITTED)})
    return kinds


def prepare_dir(folder: Path, kinds: dict[str, str]) -> None:
    # 0700: the database holds the cursor-signing secret, and DuckDB creates
    # its files (the WAL too) with the umask's mode.
    safefs.private_dir(folder, kinds)
    ignore = folder / ".gitignore"
    if safefs.check_entry(ignore) is None:
        safefs.write_atomic(ignore, b"*\n")


def open_database(path: Path, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open a DuckDB file with ``COVERAGE_MCP_DB_THREADS`` worker threads (0: DuckDB's default, one per
    core), turning any failure into a clear, non-destructive error. A store answers with many small
    queries, each of whose fixed cost grows with the threads DuckDB wakes for it (benchmarks/db_threads.py);
    a machine that runs several stores' processes at once may want fewer."""
    threads = setting("db_threads")
    try:
        return duckdb.connect(str(path), read_only=read_only, config={"threads": threads} if threads else {})
    except (duckdb.Error, OSError) as exc:
        coded = faults.classify(exc, path, "opening the store")
        if coded is not None and coded.code is not ErrorCode.IO_ERROR:
            raise coded from None  # store_damaged (named, never touched) or disk_full
        raise CoverageError(
            ErrorCode.STORE_UNAVAILABLE,
            f"{path}: the coverage store will not open ({type(exc).__name__}: {str(exc).splitlines()[0][:300]})",
            "Nothing was changed or deleted. Stop any other process using the store; if the database or its "
            f"WAL ({path.name}.wal) is damaged, restore them from a backup, or move them aside to start a new history.",
            {"path": str(path)},
        ) from None


def check_duckdb_paths(path: Path) -> bool:
    """lstat the files DuckDB opens by name (it would follow a link); True when the database exists."""
    safefs.check_entry(path.with_name(path.name + WAL))
    safefs.check_entry(path.with_name(path.name + TEMP), safefs.DIRECTORY)
    return safefs.check_entry(path) is not None


def open_verified(path: Path) -> duckdb.DuckDBPyConnection:
    """The writable, migrated connection, or a refusal that left the folder as it was (but for a kept WAL copy)."""
    exists = check_duckdb_paths(path)
    wal = path.with_name(path.name + WAL)
    preserved, made = _preserve(wal)
    marked = safefs.check_entry(path.with_name(path.name + COMMITTED)) is not None
    try:
        # Read-only first unless this is a store we already opened and no WAL waits to be replayed:
        # that case needs no replay, so the same checks on the writable connection come before any write.
        if exists and (preserved is not None or not marked):
            _inspect(path, preserved)
        con = open_database(path)
        try:
            safefs.make_private(path)
            foreign = schema.foreign_tables(con)
            if foreign:
                raise _foreign(path, foreign)
            _check_newest(con, path, preserved)
            schema.migrate(con, where=str(path))
        except BaseException:
            con.close()
            raise
    except BaseException as error:
        # Our copy stays when data went missing, or when the WAL it copies changed or went.
        lost = isinstance(error, CoverageError) and error.details.get("reason") == _LOST
        if made and preserved is not None and not lost and safefs.same_bytes(wal, preserved):
            preserved.unlink(missing_ok=True)
        raise
    if made and preserved is not None:
        preserved.unlink(missing_ok=True)  # the open proved nothing was lost; it is our copy, not the WAL
    return con


def preserved_copies(path: Path) -> list[Path]:
    """The WAL copies kept beside the store ``path`` (each the bytes of a WAL whose replay lost data)."""
    prefix = path.name + PRESERVED
    try:
        names = sorted(n for n in os.listdir(path.parent) if n.startswith(prefix))
    except OSError:
        return []
    return [path.with_name(n) for n in names]


def preserved_notice(path: Path) -> dict[str, Any] | None:
    """What ``context`` and ``status`` say while WAL copies are kept beside the store ``path`` (None: none
    is). Only the folder is listed: the store is never opened, so it answers for a store that will not open."""
    kept = preserved_copies(path)
    if not kept:
        return None
    return {
        "copies": [str(p) for p in kept],
        "suggestion": "A store's WAL lost data when it was replayed; these copies keep it as found. "
        "Inspect or restore them (see docs/operations.md, store_damaged), then delete them.",
    }


def _preserve(wal: Path) -> tuple[Path | None, bool]:
    """(the copy of ``wal`` beside it, whether this call made it): one copy per distinct WAL, so opening a
    store again and again with the same damaged WAL keeps one copy, not one per open."""
    st = safefs.check_entry(wal)
    if st is None or st.st_size == 0:
        return None, False
    db = wal.with_name(wal.name.removesuffix(WAL))
    for kept in preserved_copies(db):
        found = safefs.check_entry(kept)
        if found is not None and found.st_size == st.st_size and safefs.same_bytes(wal, kept):
            return kept, False
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    copy = wal.with_name(wal.name.removesuffix(WAL) + PRESERVED + stamp)
    safefs.copy_new(wal, copy)
    return copy, True


def _inspect(path: Path, preserved: Path | None) -> None:
    """Read-only: refuse another program's store, or a replay that lost committed data, before any write."""
    con = open_database(path, read_only=True)
    try:
        foreign = schema.foreign_tables(con)
        if foreign:
            raise _foreign(path, foreign)
        _check_newest(con, path, preserved)
    finally:
        con.close()


def _foreign(path: Path, tables: list[str]) -> CoverageError:
    folder = path.parent
    shown = ", ".join(tables[:12]) + (f", ... ({len(tables)} tables)" if len(tables) > 12 else "")
    return CoverageError(
        ErrorCode.STORE_UNAVAILABLE,
        f"{path} is a DuckDB database this coverage-mcp did not create (tables: {shown}; no schema_revision), "
        "perhaps the store of the earlier Python coverage-mcp",
        f"Nothing was changed. Move it aside and retry, and a new store is created: "
        f"`mv {folder} {folder}.old` (keep it for the tool that wrote it).",
        {"path": str(path), "tables": tables, "reason": "foreign_store"},
    )


def _read_committed(path: Path) -> dict[str, Any] | None:
    marker = path.with_name(path.name + COMMITTED)
    if safefs.check_entry(marker) is None:
        return None
    try:
        with os.fdopen(safefs.open_file(marker, os.O_RDONLY), "r") as handle:
            body = json.loads(handle.read())
    except (OSError, ValueError):
        return None  # torn or foreign text: rewritten from the database after the open
    return body if isinstance(body, dict) and isinstance(body.get("snapshot_id"), str) else None


def _check_newest(con: duckdb.DuckDBPyConnection, path: Path, preserved: Path | None) -> None:
    """Refuse a database missing the newest snapshot an ingest committed (a deliberate deletion moves the
    marker back in the same transaction, so only a lost write can make it disappear)."""
    committed = _read_committed(path)
    if committed is None:
        return
    present = (
        "snapshots" in schema.tables(con)
        and con.execute(
            "SELECT count(*) FROM snapshots WHERE snapshot_id = ?", [committed["snapshot_id"]]
        ).fetchall()[0][0]
    )
    if present:
        return
    marker = path.with_name(path.name + COMMITTED)
    if preserved is not None:
        message = (
            f"{path}: snapshot {committed['snapshot_id']} was committed but is missing after DuckDB "
            f"replayed the WAL (damaged or cut short); the WAL as found is kept in {preserved}"
        )
        suggestion = (
            f"Nothing was deleted. Keep {preserved}: it holds the committed data DuckDB could not replay. "
            "Restore the store from a backup, or recover the WAL with DuckDB tooling; to accept the "
            f"loss instead, move the database, its WAL and {marker.name} aside and start a new history."
        )
    else:
        message = (
            f"{path}: snapshot {committed['snapshot_id']} was committed (recorded in {marker.name}) but "
            "the database does not hold it: it was replaced, restored from an older copy or damaged"
        )
        suggestion = (
            f"Nothing was changed. Restore the newest database from a backup; if you restored an older "
            f"one on purpose, remove {marker} to accept it."
        )
    raise CoverageError(
        ErrorCode.STORE_UNAVAILABLE,
        message,
        suggestion,
        {
            "path": str(path),
            "reason": _LOST,
            "missing_snapshot": committed["snapshot_id"],
            "marker": str(marker),
            "preserved_wal": None if preserved is None else str(preserved),
        },
    )


def record_committed(path: Path, snapshot_id: str | None) -> None:
    """Note ``snapshot_id`` (just committed; None: none yet) as the newest one the database must hold."""
    body = json.dumps({"snapshot_id": snapshot_id, "recorded_at": dt.datetime.now(dt.UTC).isoformat()})
    try:
        safefs.write_atomic(path.with_name(path.name + COMMITTED), body.encode())
    except (OSError, CoverageError):
        # The ingest did commit; a marker left behind only weakens the check, never fails an open.
        pass


def note_latest(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """After a verified open: bring the marker up to the newest snapshot (older stores, or a crash after COMMIT)."""
    row = con.execute("SELECT snapshot_id FROM snapshots ORDER BY snap DESC LIMIT 1").fetchone()
    newest = None if row is None else row[0]
    committed = _read_committed(path)
    recorded = None if committed is None else committed["snapshot_id"]
    if recorded != newest or safefs.check_entry(path.with_name(path.name + COMMITTED)) is None:
        record_committed(path, newest)
