"""The project store: one DuckDB file per repository, owned through a lease.

``ProjectStore.open`` takes ``<database>.lock`` before DuckDB opens the file,
migrates the schema, and keeps both for the store's life. An ingest is one
transaction: the snapshot row, its totals, files and every detail row commit
together or not at all. Detail goes in from NumPy columns, never row by row.
Nothing here deletes a lock, a WAL or a database to recover from an error.

The store folder is the repository's, so anything in it may have been
committed: every entry is checked (never a link, only our own files) before
anything is written, and again under the lease for the paths DuckDB opens
itself. A WAL is copied aside before DuckDB replays it (DuckDB truncates a
WAL with a damaged tail to its last valid record and deletes it); after each
committed ingest ``coverage.duckdb.committed`` records the newest snapshot,
so an open that lost it fails closed instead of quietly serving less. A
DuckDB file with tables but without our ``schema_revision`` is another
program's store and is refused unopened for writing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import secrets
import threading
import weakref
from collections import abc
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import duckdb

from .. import headline
from ..errors import CoverageError, ErrorCode, Remedy
from ..ids import is_snapshot_id, new_snapshot_id
from ..locks import Lease, how_to_release, instance_metadata, lease_of, this_process
from ..memo import Memo
from ..model import FileDetail, FilesPage, FileSummary, MappingSummary, Snapshot
from ..report import Counter, NormalizedReport, Table
from ..vocabulary import COUNTERS
from . import payload_tables
from .guard import entries, note_latest, open_verified, prepare_dir, record_committed
from .paths import AMBIGUOUS, MAPPED, UNMAPPED, Mapping
from .payload import DETAIL
from .restore import ReadGate, ensure
from .transactions import transaction

if TYPE_CHECKING:
    import numpy as np

MAX_CANDIDATES = 10  # ids an ambiguous prefix error lists


def chosen_side(alias: str = "snapshots") -> str:
    """SQL true for a snapshot row (``alias``) that may be chosen for a caller who names none (the latest,
    HEAD's measurement, a default baseline, a history point): never a ``subset`` snapshot when a
    ``complete`` one of the same commit and suite exists, however much newer the subset is. A subset
    side is used only where the caller names it (README, "Complete by default")."""
    # Uncorrelated: a semi-join on the complete snapshots' (suite, commit) pairs, whose struct equality holds
    # for two missing commits as IS NOT DISTINCT FROM does. DuckDB answers it in about half the time of the
    # correlated EXISTS it replaces (tests/test_chosen_side.py), and every default side asks it.
    return (
        f"NOT ({alias}.scope = 'subset' AND ({alias}.suite, {alias}.commit_sha) IN "
        "(SELECT (outranks.suite, outranks.commit_sha) FROM snapshots outranks "
        "WHERE outranks.scope = 'complete'))"
    )


@attrs.frozen
class Provenance:
    """Where a snapshot came from: git state, artifact, how it was recorded."""

    suite: str
    scope: str
    provenance: str
    commit: str | None
    branch: str | None
    dirty: bool
    worktree_id: str
    worktree_path: str
    worktree_name: str
    artifact_path: str | None
    artifact_sha256: str
    artifact_bytes: int


@attrs.frozen
class MeasuredText:
    """The content identity of a snapshot's files: per report file, the git blob id of the
    text it was measured on (None: unknown), and, zstd-compressed, the texts that are not
    the commit's (the working-tree files of a report made with uncommitted edits)."""

    blobs: tuple[str | None, ...]
    texts: dict[int, bytes] = attrs.field(factory=dict)  # file_id -> zstd frame of the file's bytes


@attrs.frozen
class Deletion:
    """What ``delete_snapshots`` deleted (or, ``dry_run``, would delete): the snapshots and, per
    detail table, how many of their rows."""

    snapshots: tuple[Snapshot, ...]
    rows: dict[str, int]
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "deleted": [] if self.dry_run else [s.snapshot_id for s in self.snapshots],
            "snapshots": [
                {
                    "snapshot_id": s.snapshot_id,
                    "suite": s.suite,
                    "commit": s.commit,
                    "created_at": s.created_at.isoformat(),
                    "format": s.format,
                }
                for s in self.snapshots
            ],
            "rows": dict(self.rows),
        }


def snap_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every table but ``snapshots`` keyed by a snapshot's ``snap``, read from the schema itself, so a
    detail table added by a later revision is deleted with its snapshot without being listed here."""
    rows = con.execute(
        "SELECT DISTINCT table_name FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND column_name = 'snap' AND table_name <> 'snapshots' ORDER BY table_name"
    ).fetchall()
    return [r[0] for r in rows]


def _locked_suggestion(holder: dict[str, Any]) -> str:
    """What to do about a held store, in terms every surface can read (no API names, no call syntax)."""
    if holder.get("owner") == "daemon":
        return (
            "The coverage-mcp daemon owns this store: coverage-mcp commands and the MCP tools go through "
            "it; stop it with `coverage-mcp stop` to open the store directly."
        )
    return (
        f"Retry when the holder has released it: {how_to_release(holder)}. To use one store from "
        "several programs at once, run the coverage-mcp daemon (`coverage-mcp serve`): commands then go "
        "through it instead of holding the store."
    )


class _Writes:
    """The store's write lock: a writer commits while holding it, and its release moves the store to a new
    ``generation`` (after the commit, so a reader that sees the new generation sees the write)."""

    def __init__(self, store: ProjectStore) -> None:
        self._store = store
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._store.new_generation()
        self._lock.release()


class ProjectStore:
    """An open project store. Not thread-safe for writes; use one writer."""

    def __init__(self, path: Path, con: duckdb.DuckDBPyConnection, lease: Lease | None) -> None:
        self.path = path
        self.con = con
        self._lease = lease
        # Every writer of the store's own tables holds it; each release is a new ``generation``.
        self._write_lock = _Writes(self)
        self.cursor_secret = b""
        # Snapshots are immutable, so their records are cached for good; ``generation`` moves on every
        # write (an ingest, a deletion, a compaction, a setting, a composite, a command's or run's change)
        # for the values read from the whole store (``per_generation``: ``latest`` and the reads' own).
        self._snapshots: dict[str, tuple[int, Snapshot]] = {}
        self.generation = 0
        self._generation_lock = threading.Lock()
        # Values read from the whole store, keyed by the generation they were read at: the last few only.
        self.per_generation: Memo[Any] = Memo(64)
        # Values the reads derive from one snapshot's content alone (a file's id, its measured text), keyed
        # by the snapshot's id and key: cleared when snapshots are deleted, since a key is then reused.
        self.derived: Memo[Any] = Memo(256)
        # The same for whole-file values (a measured text, its marks, its detail as NumPy columns: megabytes
        # for a file of 100,000 lines): the last few only, so a daemon's memory does not grow with the files read.
        self.whole_files: Memo[Any] = Memo(12)
        # Called first by close() (managed execution stops its runs and closes its connection).
        self.on_close: list[Callable[[], None]] = []
        # The execution runtime running this store's runs in this process (execution.worker.Runtime), kept on
        # the store itself: a process-wide table keyed by id(store) would hand a closed store's runtime to a
        # new store that reuses its id.
        self.runtime: Any = None
        # Compacted snapshots (snap -> id): their detail is restored on the read connection that needs it.
        # Once any was, every read connection is checked for rows restored under a reused key.
        self._compacted: dict[int, str] = {}
        self._ever_compacted = False
        self.gate = ReadGate()
        # Per read connection: the snapshots resolved on it (snap -> id) and the (snap, table) pairs readable.
        self._pending: weakref.WeakKeyDictionary[Any, tuple[dict[int, str], set[tuple[int, str]]]] = (
            weakref.WeakKeyDictionary()
        )
        self._pending_lock = threading.Lock()
        self.compacting: duckdb.DuckDBPyConnection | None = (
            None  # the connection of a running compaction pass
        )

    @classmethod
    def open(cls, path: Path, *, owner: str | None = None, command: str | None = None) -> ProjectStore:
        """Take the lease (its metadata names ``owner`` and ``command``; by default this process's,
        ``locks.this_process``) and open the store; ``store_locked`` at once when it is held."""
        prepare_dir(path.parent, entries(path))
        found_owner, found_command = this_process()
        lease_path = lease_of(path)
        try:
            lease = Lease.acquire(
                lease_path,
                instance_metadata(
                    owner=owner or found_owner, command=command or found_command, database=str(path)
                ),
                what=f"coverage store {path}",
                suggestion="",
            )
        except CoverageError as error:
            if error.code == ErrorCode.STORE_LOCKED:
                error.suggestion = _locked_suggestion(error.details.get("holder", {}))
            raise

        try:
            con = open_verified(path)
        except BaseException:
            lease.release()
            raise
        store = cls(path, con, lease)
        try:
            store.cursor_secret = store._ensure_secret()
            note_latest(con, path)
            store._compacted = dict(
                con.execute(
                    "SELECT p.snap, s.snapshot_id FROM snapshot_payloads p JOIN snapshots s USING (snap)"
                ).fetchall()
            )
            store._ever_compacted = bool(store._compacted)
        except BaseException:
            store.close()
            raise
        return store

    def _ensure_secret(self) -> bytes:
        """The per-store HMAC key that makes answer cursors tamper-evident."""
        self.con.execute(
            "INSERT INTO settings VALUES ('cursor_secret', ?) ON CONFLICT (key) DO NOTHING",
            [json.dumps(secrets.token_hex(32))],
        )
        row = self.con.execute("SELECT value FROM settings WHERE key = 'cursor_secret'").fetchall()[0]
        secret: str = json.loads(row[0])  # stored as a JSON string of hex digits
        return secret.encode()

    def close(self) -> None:
        while self.on_close:
            self.on_close.pop()()
        try:
            self.con.close()
        finally:
            if self._lease is not None:
                self._lease.release()
                self._lease = None

    def __enter__(self) -> ProjectStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A separate connection to the same database (for concurrent reads)."""
        return self.con.cursor()

    # -- writes -------------------------------------------------------------
    def find_duplicate(self, sha256: str, commit: str | None, suite: str) -> Snapshot | None:
        row = self.con.execute(
            "SELECT snapshot_id FROM snapshots WHERE artifact_sha256 = ? AND commit_sha IS NOT DISTINCT FROM ? "
            "AND suite = ? ORDER BY snap LIMIT 1",
            [sha256, commit, suite],
        ).fetchone()
        return None if row is None else attrs.evolve(self.snapshot(row[0]), duplicate=True)

    def ingest(
        self,
        report: NormalizedReport,
        mapping: Mapping,
        prov: Provenance,
        *,
        progress: Callable[[str], None] | None = None,
        measured: MeasuredText | None = None,
        also: Callable[[duckdb.DuckDBPyConnection, str], None] | None = None,
    ) -> Snapshot:
        """Store ``report`` as one immutable snapshot, in one transaction (``also(con, snapshot_id)``
        writes its own rows in that same transaction: a managed run's artifact record)."""
        with self.writer() as writer:
            snapshot_id = writer.finish(
                report, mapping, prov, progress=progress, measured=measured, also=also
            )
        return self.snapshot(snapshot_id)

    @contextlib.contextmanager
    def writer(self) -> Iterator[SnapshotWriter]:
        """One snapshot's transaction, open while its detail is streamed in (``SnapshotWriter``): it commits
        when the block ends after ``finish``, and rolls back, leaving nothing, on any failure or without
        ``finish``. The store's write lock is held throughout."""
        with self._write_lock:
            con = self.con
            stage = _Stage(con)
            try:
                with transaction(con):
                    # An aggregate: always one row.
                    query = "SELECT coalesce(max(snap), 0) + 1 FROM snapshots"
                    snap_key: int = con.execute(query).fetchall()[0][0]
                    writer = SnapshotWriter(self, con, snap_key, stage)
                    yield writer
                    if writer.snapshot_id is None:
                        raise RuntimeError("a snapshot writer ended without finish()")
            finally:
                stage.close()
            record_committed(self.path, writer.snapshot_id)

    def _insert(
        self,
        con: duckdb.DuckDBPyConnection,
        snap_key: int,
        report: NormalizedReport,
        mapping: Mapping,
        prov: Provenance,
        progress: Callable[[str], None] | None,
        measured: MeasuredText | None = None,
        streamed_observations: int = 0,
    ) -> str:
        import numpy as np

        now = dt.datetime.now(dt.UTC)
        snapshot_id = new_snapshot_id()
        counts = mapping.counts()
        con.execute(
            "INSERT INTO worktrees VALUES (?, ?, ?, ?, ?) ON CONFLICT (worktree_id) DO UPDATE SET last_seen = excluded.last_seen",
            [prov.worktree_id, prov.worktree_path, prov.worktree_name, now, now],
        )
        con.execute(
            "INSERT INTO snapshots VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                snap_key,
                snapshot_id,
                now,
                prov.suite,
                report.format,
                report.tool,
                prov.scope,
                prov.provenance,
                prov.commit,
                prov.branch,
                prov.dirty,
                prov.worktree_id,
                prov.artifact_path,
                prov.artifact_sha256,
                prov.artifact_bytes,
                len(report.files),
                counts[MAPPED],
                counts[AMBIGUOUS],
                counts[UNMAPPED],
                len(report.tests),
                json.dumps(
                    [w.to_dict() for w in report.warnings] + _mapping_warnings(counts, len(report.files))
                ),
                json.dumps({"source_roots": list(report.source_roots), **_jsonable(report.metadata)}),
            ],
        )
        totals: dict[str, list[Any]] = {"counter": [], "found": [], "hit": []}
        for name in COUNTERS:
            if name in report.totals:
                totals["counter"].append(name)
                totals["found"].append(report.totals[name].found)
                totals["hit"].append(report.totals[name].hit)
        _bulk(
            con,
            "snapshot_totals",
            snap_key,
            {
                "counter": np.array(totals["counter"], dtype=object),
                "found": np.array(totals["found"], dtype=np.int64),
                "hit": np.array(totals["hit"], dtype=np.int64),
            },
        )
        if progress:
            progress("files")
        n = len(report.files)
        zeros = np.zeros(n, dtype=np.int64)

        def per_file(counter: str, i: int) -> np.ndarray:
            pair = report.file_totals.get(counter)
            return zeros if pair is None else pair[i]

        head_found, head_hit = _headline_per_file(
            headline.rule_for(report.format, report.tool), report.file_totals, n
        )
        excluded = report.excluded_lines

        _bulk(
            con,
            "files",
            snap_key,
            {
                "file_id": np.arange(n, dtype=np.int32),
                "path": np.array(mapping.paths, dtype=object),
                "report_path": np.array([f.path for f in report.files], dtype=object),
                "mapping": np.array(mapping.status, dtype=object),
                "lines_found": per_file("lines", 0),
                "lines_hit": per_file("lines", 1),
                "branches_found": per_file("branches", 0),
                "branches_hit": per_file("branches", 1),
                "functions_found": per_file("functions", 0),
                "functions_hit": per_file("functions", 1),
                "source_sha256": np.array([f.source_sha256 for f in report.files], dtype=object),
                "logical_source_id": np.array([f.logical_source_id for f in report.files], dtype=object),
                "variant": np.array([f.variant for f in report.files], dtype=object),
                "content_blob": np.array(
                    measured.blobs if measured is not None else [None] * n, dtype=object
                ),
                "headline_found": head_found,
                "headline_hit": head_hit,
                "excluded": np.bincount(excluded["file"], minlength=n).astype(np.int32),
            },
        )
        if len(excluded):
            _bulk(con, "excluded_lines", snap_key, {"file_id": excluded["file"], "line": excluded["line"]})
        if measured is not None and measured.texts:
            ids = sorted(measured.texts)
            _bulk(
                con,
                "file_texts",
                snap_key,
                {
                    "file_id": np.array(ids, dtype=np.int32),
                    "text": np.array([measured.texts[i] for i in ids], dtype=object),
                },
            )
        for table, columns in (
            ("lines", report.lines),
            ("branches", report.branches),
            ("functions", report.functions),
            ("regions", report.regions),
        ):
            if progress:
                progress(table)
            if len(columns):
                cols = dict(columns.columns)
                cols["file_id"] = cols.pop("file")
                _bulk(con, table, snap_key, cols)
        self._store_uncovered_ranges(con, snap_key, report.lines)
        if report.tests:
            if progress:
                progress("tests")
            _bulk(
                con,
                "test_names",
                snap_key,
                {
                    "test_id": np.arange(len(report.tests), dtype=np.int32),
                    "name": np.array(report.tests, dtype=object),
                },
            )
            obs = report.test_observations
            if len(obs):
                _bulk(con, "test_observations", snap_key, _observation_columns(obs.columns))
            if len(obs) or streamed_observations:
                self._store_signatures(con, snap_key)
        return snapshot_id

    @staticmethod
    def _store_uncovered_ranges(con: duckdb.DuckDBPyConnection, snap_key: int, lines: Table) -> None:
        # Runs of consecutive uncovered executable lines, found in one pass over
        # the (file, line)-sorted columns: a run starts at an uncovered line
        # whose predecessor is covered or belongs to another file.
        import numpy as np

        if len(lines):
            files, numbers, zero = lines["file"], lines["line"], lines["hits"] == 0
            continues = np.zeros(len(zero), dtype=bool)
            continues[1:] = zero[:-1] & (files[1:] == files[:-1])
            starts = np.flatnonzero(zero & ~continues)
            if len(starts):
                run_of = np.cumsum(zero & ~continues) - 1  # run index of every uncovered row
                members = np.flatnonzero(zero)
                counts = np.bincount(run_of[members], minlength=len(starts)).astype(np.int32)
                ends = starts + counts - 1
                _bulk(
                    con,
                    "uncovered_ranges",
                    snap_key,
                    {
                        "file_id": files[starts],
                        "start_line": numbers[starts],
                        "end_line": numbers[ends],
                        "line_count": counts,
                        "kind": np.zeros(len(starts), dtype=np.int8),
                        "missed": counts,
                    },
                )
        con.execute(
            """
            INSERT INTO uncovered_ranges
            SELECT ?, b.file_id, b.line, b.line, 1, 1, b.missed
            FROM (SELECT file_id, line, count(*) FILTER (WHERE taken <= 0) AS missed
                  FROM branches WHERE snap = ? GROUP BY file_id, line) b
            JOIN lines l ON l.snap = ? AND l.file_id = b.file_id AND l.line = b.line
            WHERE b.missed > 0 AND l.hits > 0
            """,
            [snap_key, snap_key, snap_key],
        )
        # ASOF join: each range belongs to the last function starting at or before it.
        con.execute(
            """
            INSERT INTO uncovered_targets
            WITH fn AS (
                SELECT file_id, start_line, min(name) AS name FROM functions
                WHERE snap = $snap AND start_line > 0 GROUP BY ALL),
            r AS (SELECT * FROM uncovered_ranges WHERE snap = $snap),
            j AS (SELECT r.*, fn.name FROM r ASOF LEFT JOIN fn
                  ON r.file_id = fn.file_id AND r.start_line >= fn.start_line)
            SELECT $snap, file_id, name,
                   coalesce(sum(line_count) FILTER (WHERE kind = 0), 0),
                   count(*) FILTER (WHERE kind = 1),
                   count(*),
                   list([start_line, end_line, line_count, kind, missed] ORDER BY line_count DESC, start_line)
            FROM j GROUP BY file_id, name
            """,
            {"snap": snap_key},
        )

    @staticmethod
    def _store_signatures(con: duckdb.DuckDBPyConnection, snap_key: int) -> None:
        # A test's signature is its full ordered list of (kind, file, line,
        # item) observations; file_id stands for the file's path, one to one
        # within a snapshot. A sum of per-item hashes only pre-selects the
        # candidates; groups are decided by comparing the whole lists.
        con.execute(
            """
            INSERT INTO test_signatures
            WITH fp AS (
                SELECT test_id, count(*) AS n, sum(hash(kind, file_id, line, item)::HUGEINT) AS h
                FROM test_observations WHERE snap = $snap GROUP BY test_id),
            candidates AS (
                SELECT test_id FROM fp QUALIFY count(*) OVER (PARTITION BY n, h) > 1),
            exact AS (
                SELECT test_id, min(test_id) OVER (PARTITION BY items) AS grp FROM (
                    SELECT o.test_id,
                           list(struct_pack(k := o.kind, f := o.file_id, l := o.line, r := o.item)
                                ORDER BY o.file_id, o.kind, o.line, o.item) AS items
                    FROM test_observations o
                    WHERE o.snap = $snap AND o.test_id IN (SELECT test_id FROM candidates)
                    GROUP BY o.test_id))
            SELECT $snap, fp.test_id, fp.n, coalesce(exact.grp, fp.test_id)
            FROM fp LEFT JOIN exact USING (test_id)
            """,
            {"snap": snap_key},
        )

    # -- deletion -------------------------------------------------------------
    def delete_snapshots(
        self,
        ids: Sequence[str] = (),
        *,
        prune: tuple[str, int] | None = None,
        force: bool = False,
        dry_run: bool = False,
        in_use: Callable[[Sequence[Snapshot]], dict[str, str]] | None = None,
    ) -> Deletion:
        """Delete snapshots (ids or unique prefixes; with ``prune=(suite, keep)``, every snapshot of
        ``suite`` but its ``keep`` newest) and all their detail rows, in one transaction.

        The newest snapshot of a suite is refused unless ``force``, and so is any
        snapshot ``in_use`` names (id -> why), whatever ``force`` says. The choice,
        the refusals and the deletion happen under the write lock, so an ingest
        cannot slip between them. ``dry_run`` decides the same and deletes nothing.
        """
        with self._write_lock:
            con = self.con
            if prune is not None:
                suite, keep = prune
                rows = con.execute(
                    "SELECT snapshot_id FROM snapshots WHERE suite = ? ORDER BY snap DESC OFFSET ?",
                    [suite, int(keep)],
                ).fetchall()
                ids = [r[0] for r in rows]
            full = list(dict.fromkeys(self.resolve_id(i, con) for i in ids))
            chosen = [self.snapshot(i, con) for i in full]
            keys = [self.snap_key(i, con) for i in full]
            newest = dict(
                con.execute(
                    "SELECT suite, max(snap) FROM snapshots WHERE list_contains(?, suite) GROUP BY suite",
                    [sorted({s.suite for s in chosen})],
                ).fetchall()
            )
            latest = [s.snapshot_id for s, k in zip(chosen, keys) if newest.get(s.suite) == k]
            if latest and not force:
                raise CoverageError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{', '.join(latest)} {'is the newest snapshot of its suite' if len(latest) == 1 else 'are the newest snapshots of their suites'}"
                    "; nothing was deleted",
                    "Comparisons use the newest snapshot of a suite: keep it, or delete it anyway with force "
                    "(--force; the library's force=True).",
                    {"latest": latest, "reason": "latest_of_suite"},
                )
            busy = (in_use or (lambda _: {}))(chosen)
            if busy:
                raise CoverageError(
                    ErrorCode.INVALID_ARGUMENT,
                    "; ".join(f"{i} is in use: {why}" for i, why in busy.items()) + "; nothing was deleted",
                    "Wait until the work using it has finished, then retry.",
                    {"in_use": busy, "reason": "in_use"},
                )
            tables = snap_tables(con)
            rows_per_table = {
                t: int(
                    con.execute(f"SELECT count(*) FROM {t} WHERE list_contains(?, snap)", [keys]).fetchall()[
                        0
                    ][0]
                )
                for t in tables
            }
            deletion = Deletion(tuple(chosen), rows_per_table, dry_run)
            if dry_run or not keys:
                return deletion
            before = con.execute("SELECT snapshot_id FROM snapshots ORDER BY snap DESC LIMIT 1").fetchone()
            moved = False
            try:
                with transaction(con):
                    # Detail first, the snapshot rows last: an id is never left without its rows' owner.
                    for table in tables:
                        con.execute(f"DELETE FROM {table} WHERE list_contains(?, snap)", [keys])
                    payload_tables.drop(con, keys)
                    con.execute("DELETE FROM snapshots WHERE list_contains(?, snap)", [keys])
                    after = con.execute(
                        "SELECT snapshot_id FROM snapshots ORDER BY snap DESC LIMIT 1"
                    ).fetchone()
                    # The newest-snapshot marker moves back before the commit: a crash in between leaves it
                    # naming a snapshot that is still there (note_latest brings it forward at the next open).
                    if after != before:
                        record_committed(self.path, None if after is None else after[0])
                        moved = True
            except BaseException as error:
                if moved and before is not None:
                    record_committed(self.path, before[0])
                if isinstance(error, duckdb.Error):
                    raise CoverageError(
                        ErrorCode.STORE_UNAVAILABLE,
                        f"deleting {len(keys)} snapshot(s) failed ({type(error).__name__}: "
                        f"{str(error).splitlines()[0][:300]}); the transaction was rolled back and nothing was deleted",
                        "Nothing was changed. Check the store's snapshots; retry, or report this as a bug if it "
                        "fails again.",
                        {"snapshot_ids": full},
                        Remedy(operation="coverage_review", arguments={"task": "snapshots"}),
                    ) from None
                raise
            for i in full:
                self._snapshots.pop(i, None)
            for k in keys:
                self._compacted.pop(k, None)
            self.derived.clear()
            self.whole_files.clear()
            return deletion

    # -- reads --------------------------------------------------------------
    _SNAPSHOT_SQL = """
        SELECT s.snap, s.snapshot_id, s.created_at, s.suite, s.format, s.tool, s.scope, s.provenance,
               s.commit_sha, s.branch, s.dirty, w.name, w.path, s.artifact_path, s.artifact_sha256,
               s.artifact_bytes, s.file_count, s.test_count, s.mapped_files, s.ambiguous_files,
               s.unmapped_files, s.warnings,
               (SELECT list(struct_pack(c := t.counter, f := t.found, h := t.hit))
                  FROM snapshot_totals t WHERE t.snap = s.snap) AS totals
        FROM snapshots s JOIN worktrees w USING (worktree_id)
    """

    def _row_to_snapshot(self, row: tuple[Any, ...]) -> Snapshot:
        totals = {t["c"]: Counter(int(t["f"]), int(t["h"])) for t in (row[22] or [])}
        return Snapshot(
            snapshot_id=row[1],
            created_at=row[2],
            suite=row[3],
            format=row[4],
            tool=row[5],
            scope=row[6],
            provenance=row[7],
            commit=row[8],
            branch=row[9],
            dirty=bool(row[10]),
            worktree=row[11],
            worktree_path=row[12],
            artifact_path=row[13],
            artifact_sha256=row[14],
            artifact_bytes=int(row[15]),
            files=int(row[16]),
            tests=int(row[17]),
            path_mapping=MappingSummary(int(row[18]), int(row[19]), int(row[20])),
            totals=totals,
            warnings=tuple(json.loads(row[21])),
        )

    def _load(self, ids: Sequence[str], con: duckdb.DuckDBPyConnection | None = None) -> None:
        missing = [i for i in dict.fromkeys(ids) if i not in self._snapshots]
        if not missing:
            return
        rows = (
            (con or self.con)
            .execute(self._SNAPSHOT_SQL + " WHERE list_contains(?, s.snapshot_id)", [missing])
            .fetchall()
        )
        for row in rows:
            self._snapshots[row[1]] = (int(row[0]), self._row_to_snapshot(row))

    def resolve_id(self, snapshot_id: str, con: duckdb.DuckDBPyConnection | None = None) -> str:
        """The full id of the one snapshot whose id is ``snapshot_id`` or starts with it, as git takes
        an abbreviated hash (``snap-1a2b``); ``not_found`` when none does, ``invalid_argument`` listing
        the candidates when several do. Every surface that takes an id comes through here."""
        if snapshot_id in self._snapshots:
            return snapshot_id
        # Never cached: a later ingest can make a unique prefix ambiguous, a deletion unknown.
        rows = (
            (con or self.con)
            .execute(
                "SELECT snapshot_id FROM snapshots WHERE starts_with(snapshot_id, ?) "
                "ORDER BY snapshot_id = ? DESC, snap DESC LIMIT ?",
                [snapshot_id, snapshot_id, MAX_CANDIDATES + 1],
            )
            .fetchall()
            if isinstance(snapshot_id, str) and is_snapshot_id(snapshot_id)
            else []
        )
        if rows and (len(rows) == 1 or rows[0][0] == snapshot_id):
            return str(rows[0][0])
        if not rows:
            raise CoverageError(
                ErrorCode.NOT_FOUND,
                f"no snapshot {snapshot_id!r} in this repository's store",
                "List the snapshots and use one of their ids (a unique prefix such as snap-1a2b is enough).",
                {"snapshot_id": snapshot_id},
                Remedy(operation="coverage_review", arguments={"task": "snapshots"}),
            )
        candidates = [str(r[0]) for r in rows[:MAX_CANDIDATES]]
        more = " and more" if len(rows) > MAX_CANDIDATES else ""
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"snapshot id prefix {snapshot_id!r} is ambiguous: it starts {', '.join(candidates)}{more}",
            "Give more characters of the id, enough for one snapshot.",
            {"snapshot_id": snapshot_id, "candidates": candidates, "reason": "ambiguous_prefix"},
        )

    def snap_key(self, snapshot_id: str, con: duckdb.DuckDBPyConnection | None = None) -> int:
        """The internal key of the snapshot ``snapshot_id`` names (a full id or a unique prefix)."""
        full = self.resolve_id(snapshot_id, con)
        self._load([full], con)
        found = self._snapshots.get(full)
        if found is None:  # deleted between the lookup and the load
            raise CoverageError(
                ErrorCode.NOT_FOUND,
                f"no snapshot {snapshot_id!r} in this repository's store",
                "List the snapshots and use one of their ids.",
                {"snapshot_id": snapshot_id},
                Remedy(operation="coverage_review", arguments={"task": "snapshots"}),
            )
        if self._ever_compacted and con is not None and con is not self.con:
            with self._pending_lock:  # restored when a query of detail first runs on ``con`` (materialize)
                self._pending.setdefault(con, ({}, set()))[0][found[0]] = full
        return found[0]

    # -- compaction -------------------------------------------------------------
    def materialize(
        self,
        con: duckdb.DuckDBPyConnection | None,
        tables: Iterable[str] | None = None,
        snaps: dict[int, str] | None = None,
    ) -> None:
        """The one way detail is restored: before a query of detail ``tables`` (default: all) on the read
        connection ``con``, make them readable for the compacted snapshots among ``snaps`` (snap -> snapshot
        id; default: those its caller resolved there, ``snap_key``), restoring them there (``restore``).
        Compact answers never get here, so they never pay for a restore; a table already restored on ``con``
        for this caller costs no query. The store's own connection is never given restored rows: its callers
        read no detail of an old snapshot."""
        if con is None or con is self.con or not self._ever_compacted:
            return
        if snaps is not None:
            ensure(con, snaps, self._compacted, tables)
            return
        with self._pending_lock:
            entry = self._pending.get(con)
        if entry is None:
            return
        wanted, done = entry
        asked = set(DETAIL if tables is None else tables)
        if all((s, t) in done for s in wanted for t in asked):
            return
        done |= ensure(con, dict(wanted), self._compacted, asked)

    def series(self, con: duckdb.DuckDBPyConnection, suite: str, upto: int) -> dict[int, str]:
        """Every snapshot of ``suite`` up to the key ``upto`` (snap -> snapshot id): a history series, whose
        detail a caller restores with ``materialize(con, tables, snaps=...)``."""
        rows = con.execute(
            "SELECT snap, snapshot_id FROM snapshots WHERE suite = ? AND snap <= ?", [suite, upto]
        ).fetchall()
        return {int(snap_key): str(snapshot_id) for snap_key, snapshot_id in rows}

    def new_generation(self) -> None:
        """A write committed: caches of answers about the whole store read it again. Under a lock, since the
        execution tables' commits move it from other threads: two moves never collapse into one."""
        with self._generation_lock:
            self.generation += 1

    def compacted_now(self, snap_key: int, snapshot_id: str) -> None:
        """Called by compaction after its commit (under the write lock and the read gate). What reads derived
        from the snapshot's detail is read again from its payload: equal by design, and so it is checked
        (the compaction tests compare answers across the move), never served from before it."""
        self._compacted[snap_key] = snapshot_id
        self._ever_compacted = True
        self.derived.clear()
        self.whole_files.clear()

    def is_compacted(self, snapshot_id: str) -> bool:
        return snapshot_id in self._compacted.values()

    def snapshot(self, snapshot_id: str, con: duckdb.DuckDBPyConnection | None = None) -> Snapshot:
        """The snapshot ``snapshot_id`` names (a full id or a unique prefix)."""
        full = self.resolve_id(snapshot_id, con)
        self.snap_key(full, con)
        return self._snapshots[full][1]

    def latest(self, suite: str | None, con: duckdb.DuckDBPyConnection | None = None) -> Snapshot | None:
        """The newest snapshot of ``suite`` (of any suite when None) that may be chosen for a caller
        (``chosen_side``: a complete snapshot outranks newer subset ones of its commit), read once per
        generation (every write starts a new one)."""

        def read() -> Snapshot | None:
            found = self.snapshots(suite=suite, limit=1, con=con, chosen=True)
            return found[0] if found else None

        latest: Snapshot | None = self.per_generation.get((self.generation, "latest", suite), read)
        return latest

    def newest_per_suite(self, limit: int, con: duckdb.DuckDBPyConnection | None = None) -> list[Snapshot]:
        """The newest snapshot of each suite that may be chosen for a caller (``chosen_side``), newest first,
        at most ``limit``; read once per generation, as ``latest`` is."""

        def read() -> list[str]:
            rows = (con or self.con).execute(
                f"""SELECT snapshot_id FROM (
                   SELECT snapshot_id, row_number() OVER (PARTITION BY suite ORDER BY snap DESC) AS r, snap
                   FROM snapshots WHERE {chosen_side()}) WHERE r = 1 ORDER BY snap DESC LIMIT ?""",
                [int(limit)],
            )
            return [r[0] for r in rows.fetchall()]

        ids: list[str] = self.per_generation.get((self.generation, "newest_per_suite", int(limit)), read)
        return [self.snapshot(i, con) for i in ids]

    def snapshots(
        self,
        *,
        snapshot_id: str | None = None,
        suite: str | None = None,
        branch: str | None = None,
        commit: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        con: duckdb.DuckDBPyConnection | None = None,
        chosen: bool = False,
    ) -> list[Snapshot]:
        """Snapshots, newest first, filtered by id (prefix), suite, branch and commit (prefix); with
        ``chosen`` only those that may be chosen for a caller (``chosen_side``)."""
        where: list[str] = [chosen_side() if chosen else "TRUE"]
        params: list[Any] = []
        if snapshot_id is not None:  # an id, or a prefix: every snapshot it starts
            where.append("starts_with(snapshot_id, ?)")
            params.append(snapshot_id)
        if suite is not None:
            where.append("suite = ?")
            params.append(suite)
        if branch is not None:
            where.append("branch = ?")
            params.append(branch)
        if commit is not None:
            where.append("starts_with(commit_sha, ?)")
            params.append(commit)
        sql = f"SELECT snapshot_id FROM snapshots WHERE {' AND '.join(where)} ORDER BY snap DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        if offset:
            sql += " OFFSET ?"
            params.append(int(offset))
        ids = [r[0] for r in (con or self.con).execute(sql, params).fetchall()]
        self._load(ids, con)
        return [self._snapshots[i][1] for i in ids]

    def files(
        self,
        snapshot_id: str,
        *,
        offset: int = 0,
        limit: int = 1000,
        order: str = "path",
        con: duckdb.DuckDBPyConnection | None = None,
    ) -> FilesPage:
        """One page of a snapshot's files, sorted by path or by uncovered lines."""
        con = con or self.con
        snapshot_id = self.resolve_id(snapshot_id, con)  # answers name the full id
        snap_key = self.snap_key(snapshot_id, con)
        orders = {
            "path": "path, file_id",
            "uncovered": "lines_found - lines_hit DESC, path, file_id",
            "coverage": "CASE WHEN coalesce(headline_found, lines_found) = 0 THEN 1.0 "
            "ELSE coalesce(headline_hit, lines_hit) / coalesce(headline_found, lines_found) END, path, file_id",
        }
        if order not in orders:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"unknown file order {order!r}",
                f"Use one of: {', '.join(orders)}.",
            )
        total = con.execute("SELECT count(*) FROM files WHERE snap = ?", [snap_key]).fetchall()[0][0]
        rows = con.execute(
            f"""SELECT path, report_path, mapping, lines_found, lines_hit, branches_found, branches_hit,
                       functions_found, functions_hit, headline_found, headline_hit, excluded
                FROM files WHERE snap = ? ORDER BY {orders[order]} LIMIT ? OFFSET ?""",
            [snap_key, int(limit), int(offset)],
        ).fetchall()
        return FilesPage(snapshot_id, int(total), offset, tuple(_file_summary(r) for r in rows))

    def measured_text(
        self, snap_key: int, file_id: int, con: duckdb.DuckDBPyConnection | None = None
    ) -> tuple[str | None, bytes | None]:
        """(content blob id, zstd-compressed stored text) of one file; None where not recorded."""
        self.materialize(con, ("file_texts",))
        row = (
            (con or self.con)
            .execute(
                """SELECT f.content_blob, t.text FROM files f
               LEFT JOIN file_texts t ON t.snap = f.snap AND t.file_id = f.file_id
               WHERE f.snap = ? AND f.file_id = ?""",
                [snap_key, file_id],
            )
            .fetchone()
        )
        return (None, None) if row is None else (row[0], row[1])

    def content_blobs(
        self,
        snapshot_id: str,
        con: duckdb.DuckDBPyConnection | None = None,
        paths: Sequence[str] | None = None,
    ) -> dict[str, str | None]:
        """Path -> content blob id (None: unknown) of a snapshot's mapped files, or of ``paths`` among them."""
        con = con or self.con
        snapshot_id = self.resolve_id(snapshot_id, con)  # answers name the full id
        snap_key = self.snap_key(snapshot_id, con)
        sql = f"SELECT path, content_blob FROM files WHERE snap = ? AND mapping = '{MAPPED}'"
        params: list[Any] = [snap_key]
        if paths is not None:
            sql += " AND list_contains(?, path)"
            params.append(list(paths))
        return dict(con.execute(sql + " ORDER BY path", params).fetchall())

    def file_detail(
        self,
        snapshot_id: str,
        path: str,
        con: duckdb.DuckDBPyConnection | None = None,
        lines: tuple[int, int] | None = None,
    ) -> FileDetail:
        """One file's detail; ``lines`` (first, last) keeps the lines, branches, functions and regions
        that start in that window (the named tests are the whole file's)."""
        if con is None or con is self.con:
            own = self.cursor()
            try:
                return self.file_detail(snapshot_id, path, own, lines)
            finally:
                own.close()
        with self.gate.reading():
            return self._file_detail(snapshot_id, path, con, lines)

    def _file_detail(
        self,
        snapshot_id: str,
        path: str,
        con: duckdb.DuckDBPyConnection,
        lines: tuple[int, int] | None,
    ) -> FileDetail:
        snapshot_id = self.resolve_id(snapshot_id, con)  # answers name the full id
        snap_key = self.snap_key(snapshot_id, con)
        whole: FileDetail = self.whole_files.get(
            ("file_detail", snapshot_id, snap_key, path),
            lambda: self._whole_file_detail(snapshot_id, snap_key, path, con),
        )
        if lines is None:
            return whole
        low, high = lines

        def window(table: dict[str, np.ndarray], line: str) -> dict[str, np.ndarray]:
            keep = (table[line] >= low) & (table[line] <= high)
            return {column: values[keep] for column, values in table.items()}

        return attrs.evolve(
            whole,
            lines=window(whole.lines, "line"),
            branches=window(whole.branches, "line"),
            functions=window(whole.functions, "start_line"),
            regions=window(whole.regions, "start_line"),
        )

    def _whole_file_detail(
        self, snapshot_id: str, snap_key: int, path: str, con: duckdb.DuckDBPyConnection
    ) -> FileDetail:
        self.materialize(
            con, ("lines", "branches", "functions", "regions", "test_names", "test_observations")
        )
        row = con.execute(
            """SELECT file_id, path, report_path, mapping, lines_found, lines_hit, branches_found,
                      branches_hit, functions_found, functions_hit, headline_found, headline_hit, excluded
               FROM files WHERE snap = ? AND (path = ? OR report_path = ?) ORDER BY path = ? DESC LIMIT 1""",
            [snap_key, path, path, path],
        ).fetchone()
        if row is None:
            raise CoverageError(
                ErrorCode.NOT_FOUND,
                f"{path!r} is not a file of snapshot {snapshot_id}",
                "Use a repository-relative path as the snapshot's file listing shows it.",
                {"path": path, "snapshot_id": snapshot_id},
                Remedy(
                    operation="coverage_review",
                    arguments={"task": "files", "measurement": {"snapshot_id": snapshot_id}, "order": "path"},
                ),
            )
        file_id = row[0]

        def table(columns: str, name: str, order: str) -> dict[str, np.ndarray]:
            out = con.execute(
                f"SELECT {columns} FROM {name} WHERE snap = ? AND file_id = ? ORDER BY {order}",
                [snap_key, file_id],
            ).fetchnumpy()
            for values in out.values():  # kept for the snapshot's life and shared: never changed in place
                values.flags.writeable = False
            return out

        tests = con.execute(
            """SELECT n.name FROM test_names n WHERE n.snap = ? AND n.test_id IN
                 (SELECT DISTINCT test_id FROM test_observations WHERE snap = ? AND file_id = ?)
               ORDER BY n.name""",
            [snap_key, snap_key, file_id],
        ).fetchall()
        return FileDetail(
            snapshot_id=snapshot_id,
            summary=_file_summary(row[1:]),
            lines=table("line, hits", "lines", "line"),
            branches=table("line, block, branch, taken", "branches", "line, block"),
            functions=table("name, start_line, end_line, hits", "functions", "start_line"),
            regions=table(
                "start_line, start_col, end_line, end_col, hits, kind", "regions", "start_line, start_col"
            ),
            tests=tuple(t[0] for t in tests),
            excluded_lines=tuple(
                int(r[0])
                for r in con.execute(
                    "SELECT line FROM excluded_lines WHERE snap = ? AND file_id = ? ORDER BY line",
                    [snap_key, file_id],
                ).fetchall()
            ),
        )


class SnapshotWriter:
    """One ingest in progress (``ProjectStore.writer``): named-test observations arrive batch by batch
    (it is the parser's ``ObservationSink``) and go straight into the open transaction, so a report's
    largest table is never held whole; ``finish`` writes the snapshot row, its totals, files and the
    rest of the detail. Until the transaction commits, no reader sees any of it."""

    def __init__(
        self, store: ProjectStore, con: duckdb.DuckDBPyConnection, snap_key: int, stage: _Stage
    ) -> None:
        self._store = store
        self._con = con
        self.snap_key = snap_key
        self._stage = stage
        self.observations = 0  # rows streamed in
        self.snapshot_id: str | None = None

    def add(self, columns: dict[str, np.ndarray]) -> None:
        n = len(columns["test"])
        for at in range(0, n, STAGE_ROWS):
            self._stage.insert(self.snap_key, {k: v[at : at + STAGE_ROWS] for k, v in columns.items()})
        self.observations += n

    def merge(self) -> bool:
        """Sum the rows that name one (test, file, kind, line, item) more than once: a test's several records of
        one file, streamed in different batches. Sums clamp at 2^63-1 (``counts``); True if one did."""
        con, snap = self._con, self.snap_key
        con.execute(
            "CREATE TEMP TABLE _merged_observations AS SELECT test_id, file_id, kind, line, item, "
            "sum(hits) AS hits FROM test_observations WHERE snap = ? GROUP BY ALL",
            [snap],
        )
        try:
            over = con.execute(f"SELECT max(hits) > {INT64_MAX} FROM _merged_observations").fetchall()[0][0]
            con.execute("DELETE FROM test_observations WHERE snap = ?", [snap])
            con.execute(
                f"INSERT INTO test_observations SELECT ?, test_id, file_id, kind, line, item, "
                f"least(hits, {INT64_MAX})::BIGINT FROM _merged_observations "
                "ORDER BY test_id, file_id, kind, line, item",
                [snap],
            )
            self.observations = con.execute("SELECT count(*) FROM _merged_observations").fetchall()[0][0]
        finally:
            con.execute("DROP TABLE _merged_observations")
        return bool(over)

    def finish(
        self,
        report: NormalizedReport,
        mapping: Mapping,
        prov: Provenance,
        *,
        progress: Callable[[str], None] | None = None,
        measured: MeasuredText | None = None,
        also: Callable[[duckdb.DuckDBPyConnection, str], None] | None = None,
    ) -> str:
        """Write the snapshot of ``report`` (whose observations, if streamed, are already in); its id."""
        snapshot_id = self._store._insert(
            self._con, self.snap_key, report, mapping, prov, progress, measured, self.observations
        )
        if also is not None:
            also(self._con, snapshot_id)
        self.snapshot_id = snapshot_id
        return snapshot_id


INT64_MAX = 2**63 - 1
STAGE_ROWS = 65_536  # observation rows per staged insert (1.6 MB of columns)


class _Stage:
    """NumPy columns registered with DuckDB once, before the ingest's transaction, and refilled for each
    batch of observations.

    A view registered and dropped inside a transaction stays in DuckDB's catalog, and keeps its arrays
    alive, until the transaction ends; one registration per batch would hold every batch of a report
    until the commit. The stage holds one batch at most.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        import numpy as np

        self._con = con
        self.columns = {"_row": np.arange(STAGE_ROWS, dtype=np.int32)} | {
            name: np.zeros(STAGE_ROWS, dtype)
            for name, dtype in (
                ("test_id", np.int32),
                ("file_id", np.int32),
                ("kind", np.int8),
                ("line", np.int32),
                ("item", np.int32),
                ("hits", np.int64),
            )
        }
        con.register("_stage_observations", self.columns)

    def insert(self, snap_key: int, obs: dict[str, np.ndarray]) -> None:
        n = len(obs["test"])
        for name, values in _observation_columns(obs).items():
            self.columns[name][:n] = values
        self._con.execute(
            "INSERT INTO test_observations (snap, test_id, file_id, kind, line, item, hits) "
            "SELECT ?, test_id, file_id, kind, line, item, hits FROM _stage_observations WHERE _row < ?",
            [snap_key, n],
        )

    def close(self) -> None:
        try:
            self._con.unregister("_stage_observations")
        except duckdb.Error:
            pass  # the connection is gone with it


def _observation_columns(obs: abc.Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A report's observation columns under the store's names."""
    return {
        "test_id": obs["test"],
        "file_id": obs["file"],
        "kind": obs["kind"],
        "line": obs["line"],
        "item": obs["item"],
        "hits": obs["hits"],
    }


def _file_summary(r: Sequence[Any]) -> FileSummary:
    return FileSummary(
        path=r[0],
        report_path=r[1],
        mapping=r[2],
        lines=Counter(int(r[3]), int(r[4])),
        branches=Counter(int(r[5]), int(r[6])),
        functions=Counter(int(r[7]), int(r[8])),
        headline=None if r[9] is None else Counter(int(r[9]), int(r[10])),
        excluded=int(r[11] or 0),
    )


def _bulk(con: duckdb.DuckDBPyConnection, table: str, snap_key: int, columns: dict[str, np.ndarray]) -> None:
    bulk_insert(con, table, ("snap", snap_key), columns)


def bulk_insert(
    con: duckdb.DuckDBPyConnection, table: str, key: tuple[str, int], columns: dict[str, np.ndarray]
) -> None:
    """INSERT a table's rows from NumPy columns in one statement (never row by row); ``key`` is
    the (column, value) every row shares, e.g. ``("snap", 7)``."""
    name = f"_bulk_{table}"
    con.register(name, columns)
    try:
        cols = ", ".join(columns)
        con.execute(f"INSERT INTO {table} ({key[0]}, {cols}) SELECT {int(key[1])}, {cols} FROM {name}")
    finally:
        try:
            con.unregister(name)
        except duckdb.Error:
            pass  # an aborted transaction: the ROLLBACK that follows drops the view too


def _mapping_warnings(counts: dict[str, int], n_files: int) -> list[dict[str, str]]:
    if n_files and counts[MAPPED] == 0:
        return [
            {
                "code": "no_files_mapped",
                "message": f"none of the report's {n_files} files maps to a file git tracks here; "
                "check --path-map or that the report belongs to this repository",
            }
        ]
    out = []
    if counts[UNMAPPED]:
        out.append(
            {
                "code": "unmapped_files",
                "message": f"{counts[UNMAPPED]} of {n_files} files do not map to a tracked file",
            }
        )
    if counts[AMBIGUOUS]:
        out.append(
            {
                "code": "ambiguous_files",
                "message": f"{counts[AMBIGUOUS]} of {n_files} files match several tracked files",
            }
        )
    return out


def _jsonable(meta: Any) -> dict[str, Any]:
    try:
        json.dumps(meta)
        return dict(meta)
    except (TypeError, ValueError):
        return {}


def _headline_per_file(
    rule: headline.Rule, file_totals: abc.Mapping[str, tuple[np.ndarray, np.ndarray]], n_files: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each file's headline (found, hit) by ``rule``, as columns; lines where the report has no per-file
    figures of the rule's counters (zeros where it has neither)."""
    import numpy as np

    counters = (
        [c for c in rule.counters if c in file_totals] if rule.counters[0] in file_totals else ["lines"]
    )
    found, hit = np.zeros(n_files, dtype=np.int64), np.zeros(n_files, dtype=np.int64)
    for c in counters:
        if c in file_totals:
            found += np.asarray(file_totals[c][0], dtype=np.int64)
            hit += np.asarray(file_totals[c][1], dtype=np.int64)
    return found, hit
