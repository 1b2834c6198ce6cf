"""The library's front door: open a repository's coverage store and use it.

    from coverage_core import open_project
    with open_project(".") as project:
        snap = project.ingest("coverage.json", suite="unit")
        page = project.files(snap.snapshot_id)

``open_project`` finds the checkout from any path inside it (any linked
worktree), takes the store's lease and opens it; reads and ingests are then
plain method calls. While another process holds the store this waits up to
``wait_ms`` (0: not at all), then raises ``store_locked`` naming the holder;
``coverage_daemon.client.open_project`` routes to the daemon when the daemon
holds it, with identical results.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import duckdb
import zstandard

from .checkout import Checkout
from .config import Settings
from .errors import CoverageError, ErrorCode, Remedy
from .git import Git, discover
from .locks import describe_holder, how_to_release
from .model import FileDetail, FilesPage, Snapshot
from .parsers import Limits, parse_bytes, parse_stream, read_report, streamed_format
from .parsers.memory_budget import PARSE_BUDGET
from .parsers.opening import OpenedReport, open_report
from .parsers.opening import changed as report_changed
from .parsers.reading import ReportStream, claim_bytes
from .report import NormalizedReport, ReportWarning
from .storage import compaction, project_settings, run_index
from .storage.paths import MAPPED, Mapping, map_paths
from .storage.paths import normalize as norm_report_path
from .storage.store import Deletion, MeasuredText, ProjectStore, Provenance
from .vocabulary import SCOPES

DEFAULT_SUITE = "default"
# Where the working tree cannot be watched (worktree_watch.py), HEAD and dirty state are re-read at most
# this often: a status scan of a big worktree costs far more than a compact answer should.
CHECKOUT_STATE_TTL_S = 1.0
# A measured working-tree text larger than this keeps its identity (blob id) but not its text.
MAX_STORED_TEXT_BYTES = 32 * 1024 * 1024


@attrs.frozen
class CheckoutState:
    """HEAD's commit (None before the first commit), the branch (None when detached) and whether tracked files have uncommitted changes."""

    head: str | None
    branch: str | None
    dirty: bool


class Project:
    """One repository's store, opened from one of its checkouts."""

    def __init__(self, checkout: Checkout, store: ProjectStore, settings: Settings) -> None:
        self.checkout = checkout
        self.store = store
        self.settings = settings
        self.git = Git(checkout)
        self._state_lock = threading.Lock()
        self._analysis: duckdb.DuckDBPyConnection | None = None
        self._state: tuple[float, CheckoutState] | None = None

    # -- lifecycle ----------------------------------------------------------
    def close(self) -> None:
        """Close the store and release its lease (``with open_project(...)`` does this on exit)."""
        if self._analysis is not None:
            self._analysis.close()
        self.git.close()
        self.store.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def state(self) -> CheckoutState:
        """HEAD, branch and dirty state of this checkout: as they are now where the working tree is watched,
        else at most CHECKOUT_STATE_TTL_S old."""
        with self._state_lock:
            git = self.git
            now = time.monotonic()
            if git.watching or self._state is None or now - self._state[0] >= CHECKOUT_STATE_TTL_S:
                self._state = (now, CheckoutState(*git.state()))
            return self._state[1]

    # -- writes -------------------------------------------------------------
    def ingest(
        self,
        report: str | os.PathLike[str] | OpenedReport,
        *,
        suite: str = DEFAULT_SUITE,
        format: str | None = None,
        scope: str = "complete",
        commit: str | None = None,
        branch: str | None = None,
        path_map: Sequence[tuple[str, str]] = (),
        provenance: str = "import",
        progress: Callable[[str], None] | None = None,
        require_mapped: bool = False,
        also: Callable[[duckdb.DuckDBPyConnection, str], None] | None = None,
    ) -> Snapshot:
        """Parse ``report``, map its paths and store it as one snapshot.

        With ``require_mapped`` (every import through the operations), a report
        whose files all fail to map to this repository is refused and nothing
        is stored; the library alone may store one, with a warning saying so.

        Re-importing an identical artifact (same SHA-256, commit and suite)
        returns the existing snapshot with ``duplicate=True``. ``report`` is a
        path (opened here, without blocking, regular files only) or a report
        the caller already opened (the daemon opens from inside the checkout).
        The read and parse hold a share of the process's parse budget.
        """
        _check_name("suite", suite)
        if scope not in SCOPES:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"scope must be one of {SCOPES}, got {scope!r}",
                "Use 'complete' for a whole test run, 'subset' for a run of selected tests.",
            )
        head = self.git.head_commit()
        commit = self.git.resolve(commit) if commit else head
        opened = report if isinstance(report, OpenedReport) else open_report(report)
        cap = self.settings.max_report_bytes
        with opened, PARSE_BUDGET.claim(claim_bytes(opened, cap)):
            try:
                return self._ingest_opened(
                    opened,
                    suite,
                    format,
                    scope,
                    commit,
                    head,
                    branch,
                    path_map,
                    provenance,
                    progress,
                    require_mapped,
                    also,
                )
            except CoverageError as exc:
                raise _shed(exc) from None

    def _ingest_opened(
        self,
        opened: OpenedReport,
        suite: str,
        format: str | None,
        scope: str,
        commit: str | None,  # None: an unborn HEAD and no commit named
        head: str | None,
        branch: str | None,
        path_map: Sequence[tuple[str, str]],
        provenance: str,
        progress: Callable[[str], None] | None,
        require_mapped: bool = False,
        also: Callable[[duckdb.DuckDBPyConnection, str], None] | None = None,
    ) -> Snapshot:
        if progress:
            progress("reading")
        cap = Limits(self.settings.max_report_bytes)
        stream = ReportStream(opened, cap)
        first = stream.head()
        if first.startswith(SQLITE_MAGIC):
            raise _coverage_data_file(opened.path)
        streamed = streamed_format(first, format)

        def prepare(
            parsed: NormalizedReport, sha: str, stored_bytes: int
        ) -> tuple[NormalizedReport, Mapping, Provenance, MeasuredText]:
            return self._prepare(
                parsed,
                opened,
                sha,
                stored_bytes,
                suite,
                scope,
                commit,
                head,
                branch,
                path_map,
                provenance,
                progress,
                require_mapped,
            )

        if streamed is not None:
            # Never held whole: one pass for the identity (and the cap), one that parses as it reads.
            scan = stream.scan()
            existing = self.store.find_duplicate(scan.sha256, commit, suite)
            if existing is not None:
                return existing
            if progress:
                progress("parsing")
            with self.store.writer() as writer:
                parsed = parse_stream(stream.chunks(), scan.origin, streamed, writer)
                if stream.sha256 != scan.sha256:
                    raise report_changed(opened.path, "its content changed between two reads")
                parsed, mapping, prov, measured = prepare(parsed, scan.sha256, scan.stored_bytes)
                snapshot_id = writer.finish(
                    parsed, mapping, prov, progress=progress, measured=measured, also=also
                )
            snapshot = self.store.snapshot(snapshot_id)
        else:
            opened.stream.seek(0)
            raw = read_report(opened, cap)
            sha = hashlib.sha256(raw.data).hexdigest()
            existing = self.store.find_duplicate(sha, commit, suite)
            if existing is not None:
                return existing
            if progress:
                progress("parsing")
            parsed = parse_bytes(raw, format)
            stored_bytes = raw.stored_bytes
            del raw  # what is stored is the parsed report
            parsed, mapping, prov, measured = prepare(parsed, sha, stored_bytes)
            snapshot = self.store.ingest(
                parsed, mapping, prov, progress=progress, measured=measured, also=also
            )
        self._state = None  # HEAD was just read fresh: claims must not use an older view
        return snapshot

    def _prepare(
        self,
        parsed: NormalizedReport,
        opened: OpenedReport,
        sha: str,
        stored_bytes: int,
        suite: str,
        scope: str,
        commit: str | None,
        head: str | None,
        branch: str | None,
        path_map: Sequence[tuple[str, str]],
        provenance: str,
        progress: Callable[[str], None] | None,
        require_mapped: bool,
    ) -> tuple[NormalizedReport, Mapping, Provenance, MeasuredText]:
        """A parsed report's path mapping, provenance and measured text: what its snapshot is stored with."""
        on_head = commit == head
        unused = unused_path_maps([f.path for f in parsed.files], path_map)
        if unused:
            parsed = attrs.evolve(
                parsed,
                warnings=parsed.warnings
                + tuple(
                    ReportWarning("path_map_unused", f"--path-map {old}={new} matched no path of the report")
                    for old, new in unused
                ),
            )
        if progress:
            progress("mapping")
        blobs = self.git.blob_ids(commit) if commit else {}
        # A report of HEAD may measure a module not committed yet (staged or untracked): a file of this
        # checkout, mapped at the path the report names, and measured from the working tree.
        new = self.new_files([f.path for f in parsed.files], blobs) if on_head and commit else set()
        mapping = map_paths(
            [f.path for f in parsed.files],
            checkout_root=str(self.checkout.worktree_path),
            tracked=[*blobs, *sorted(new)] if commit else self.git.tracked_files(None),
            source_roots=parsed.source_roots,
            prefix_map=path_map,
        )
        if require_mapped and parsed.files and MAPPED not in mapping.status:
            raise _nothing_mapped([f.path for f in parsed.files], str(self.checkout.worktree_path), unused)
        # Dirty describes the checkout, so it only applies to a report of HEAD:
        # then the measured text of a changed file is the working tree's.
        changed = self.git.changed_paths() if on_head else set()
        measured_new = {p for p, st in zip(mapping.paths, mapping.status) if st == MAPPED and p in new}
        changed |= measured_new  # its measured text is not the commit's: the snapshot describes a dirty tree
        measured = self._measured_text(mapping, blobs, changed)
        prov = Provenance(
            suite=suite,
            scope=scope,
            provenance=provenance,
            commit=commit,
            branch=branch if branch is not None else (self.git.branch() if on_head else None),
            dirty=bool(changed),
            worktree_id=self.checkout.worktree_id,
            worktree_path=str(self.checkout.worktree_path),
            worktree_name=self.checkout.worktree_name,
            artifact_path=self._artifact_label(opened.path),
            artifact_sha256=sha,
            artifact_bytes=stored_bytes,
        )
        return parsed, mapping, prov, measured

    def _measured_text(self, mapping: Mapping, blobs: dict[str, str], changed: set[str]) -> MeasuredText:
        """Each mapped file's content identity: the commit's blob id (read from the tree, no file is
        read), or for a file with uncommitted changes the blob id of its working-tree bytes, whose
        text is kept (zstd) when it differs from the commit's."""
        ids: list[str | None] = []
        texts: dict[int, bytes] = {}
        compressor = None
        for i, (path, status) in enumerate(zip(mapping.paths, mapping.status)):
            blob = blobs.get(path) if status == MAPPED else None
            if status == MAPPED and path in changed:  # a file HEAD lacks (a new module) is changed too
                data = self.git.worktree_file(path)
                blob = None if data is None else Git.blob_id(data)
                if data is not None and blob != blobs.get(path) and len(data) <= MAX_STORED_TEXT_BYTES:
                    compressor = compressor or zstandard.ZstdCompressor(level=3)
                    texts[i] = compressor.compress(data)
            ids.append(blob)
        return MeasuredText(tuple(ids), texts)

    def new_files(self, report_paths: Sequence[str], blobs: dict[str, str]) -> set[str]:
        """The repository-relative paths of the files the report names that HEAD's tree lacks and this
        checkout has, not ignored by git (``Git.new_file``)."""
        root = norm_report_path(str(self.checkout.worktree_path)).rstrip("/") + "/"
        out: set[str] = set()
        for raw in report_paths:
            path = norm_report_path(raw)
            if path.startswith(root):
                path = path[len(root) :]
            if path not in blobs and self.git.new_file(path):
                out.add(path)
        return out

    def measured_matches_worktree(
        self, snapshot: Snapshot, con: duckdb.DuckDBPyConnection | None = None
    ) -> bool:
        """Whether the text ``snapshot`` measured is the working tree's now: its commit is HEAD and every
        measured (mapped) file's recorded content identity equals the blob id of the working-tree file.

        For a dirty-tree snapshot this says whether it still describes the checkout. False when any
        measured file's identity is unknown (snapshots stored before identities were recorded, a
        working-tree file that could not be read). Files the report did not measure (tests, say) are
        not part of the identity. ``con``: the read connection to use (a handler's cursor).
        """
        head = self.git.head_commit()
        if snapshot.commit is None or snapshot.commit != head:
            return False
        recorded = self.store.content_blobs(snapshot.snapshot_id, con)
        if not recorded or any(blob is None for blob in recorded.values()):
            return False
        changed = self.git.changed_paths()
        at_head = self.git.blob_ids(head)
        for path, blob in recorded.items():
            if path in changed or path not in at_head:  # a new module, measured from the working tree
                data = self.git.worktree_file(path)
                if data is None or Git.blob_id(data) != blob:
                    return False
            elif at_head.get(path) != blob:
                return False
        return True

    def _artifact_label(self, artifact: Path) -> str:
        try:
            return str(artifact.resolve().relative_to(self.checkout.worktree_path))
        except ValueError:
            return str(artifact.resolve())

    # -- reads --------------------------------------------------------------
    def snapshots(
        self,
        *,
        suite: str | None = None,
        branch: str | None = None,
        commit: str | None = None,
        limit: int | None = None,
    ) -> list[Snapshot]:
        """Snapshots, newest first, filtered by suite, branch and commit (a hash prefix); at most ``limit``.

        Example: ``project.snapshots(suite="unit", limit=5)``.
        """
        return self.store.snapshots(suite=suite, branch=branch, commit=commit, limit=limit)

    def snapshot(self, snapshot_id: str) -> Snapshot:
        """The snapshot with this id (``snap-...``); ``not_found`` when the store has none."""
        return self.store.snapshot(snapshot_id)

    def latest(self, suite: str = DEFAULT_SUITE) -> Snapshot | None:
        """The newest snapshot of ``suite``, or None before its first ingest."""
        return self.store.latest(suite)

    def files(
        self, snapshot_id: str, *, offset: int = 0, limit: int = 1000, order: str = "path"
    ) -> FilesPage:
        """One page of a snapshot's files with their counts.

        ``order`` is ``"path"``, ``"uncovered"`` (most uncovered lines first) or
        ``"coverage"`` (lowest headline first: the producing tool's figure per file). Example:
        ``project.files(snap.snapshot_id, order="uncovered", limit=20).files``.
        """
        return self.store.files(snapshot_id, offset=offset, limit=limit, order=order)

    def file_detail(self, snapshot_id: str, path: str) -> FileDetail:
        """One file of a snapshot (by repository path or the report's own path): its lines, branches,
        functions, regions and named tests as NumPy columns."""
        return self.store.file_detail(snapshot_id, path)

    # -- deletion -----------------------------------------------------------
    def delete_snapshots(self, ids: Sequence[str], *, force: bool = False, dry_run: bool = False) -> Deletion:
        """Delete these snapshots (full ids or unique prefixes) with every detail row, in one transaction.

        The newest snapshot of a suite is refused unless ``force``; a snapshot
        work in progress still needs (``in_use_by_active_runs``) is refused
        always. ``dry_run`` answers what would go and deletes nothing. Example:
        ``project.delete_snapshots(["snap-1a2b"], dry_run=True).rows``.
        """
        return self.store.delete_snapshots(
            ids, force=force, dry_run=dry_run, in_use=self.in_use_by_active_runs
        )

    def prune_snapshots(
        self, suite: str, keep: int, *, force: bool = False, dry_run: bool = False
    ) -> Deletion:
        """Delete every snapshot of ``suite`` but its ``keep`` newest (``keep=0`` needs ``force``), as
        ``delete_snapshots`` does. Example: ``project.prune_snapshots("unit", keep=10)``."""
        if keep < 0:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"keep must be 0 or more, got {keep}",
                "Say how many of the newest snapshots to keep, e.g. --keep 10.",
            )
        return self.store.delete_snapshots(
            prune=(suite, keep), force=force, dry_run=dry_run, in_use=self.in_use_by_active_runs
        )

    # -- compaction -----------------------------------------------------------
    def compact(
        self,
        *,
        older_than: str | None = None,
        dry_run: bool = False,
        limit: int | None = None,
        trigger: str = "manual",
        on_stage: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        record_idle: bool = True,
    ) -> compaction.PassResult:
        """Compact the snapshots older than ``older_than`` (``"30d"``, ``"12h"``, ``"0"``; default: the
        policy's ``after_days``) into zstd payloads, oldest first, at most ``limit``; the newest snapshot
        of each suite and the incremental bases of active runs and of the policy's ``protect_recent_runs``
        newest finished runs are left alone. Answers stay identical: detail is
        restored transparently. ``dry_run`` says what would be compacted. Example:
        ``project.compact(older_than="90d", dry_run=True).eligible``."""
        age = (
            compaction.parse_age(older_than)
            if older_than is not None
            else dt.timedelta(days=self.compaction_policy().after_days)
        )
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"limit must be a positive whole number, got {limit!r}",
                "Give how many snapshots to compact at most, e.g. 10.",
            )
        return compaction.run_pass(
            self.store,
            older_than=age,
            limit=limit,
            dry_run=dry_run,
            trigger=trigger,
            in_use=self._in_use_ids,
            on_stage=on_stage,
            should_stop=should_stop,
            record_idle=record_idle,
        )

    def compaction_policy(self) -> compaction.Policy:
        """The persisted compaction policy (``after_days``, ``cadence_minutes``, ``batch_size``,
        ``protect_recent_runs``)."""
        con = self.store.con.cursor()  # its own: the store's connection may be in another thread's write
        try:
            return compaction.read_policy(con)
        finally:
            con.close()

    def set_compaction_policy(self, **values: int) -> compaction.Policy:
        """Persist policy values, e.g. ``project.set_compaction_policy(after_days=14, batch_size=4)``."""
        keys = {s.key.removeprefix("compaction_"): s.key for s in project_settings.COMPACTION}
        unknown = sorted(set(values) - set(keys))
        if unknown:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"unknown compaction policy field(s): {', '.join(unknown)}",
                f"Policy fields are: {', '.join(keys)}.",
            )
        con = self.store.con.cursor()
        try:
            with self.store._write_lock:
                return compaction.write_policy(con, {keys[k]: v for k, v in values.items()})
        finally:
            con.close()

    def compaction_inventory(self, con: duckdb.DuckDBPyConnection | None = None) -> dict[str, Any]:
        """Relational vs compacted snapshots, bytes before and after, eligible/protected counts, last pass."""
        if con is not None:
            return compaction.inventory(con, in_use=self._in_use_ids)
        own = self.store.con.cursor()
        try:
            return compaction.inventory(own, in_use=self._in_use_ids)
        finally:
            own.close()

    def _in_use_ids(self, ids: Sequence[str], con: duckdb.DuckDBPyConnection) -> dict[str, str]:
        """Which of ``ids`` compaction keeps relational as incremental bases (id -> why): those of queued
        and running runs and of the policy's ``protect_recent_runs`` newest finished runs. A deletion asks
        ``in_use_by_active_runs`` instead: a finished run's review is stored with it."""
        if not ids:
            return {}
        recent = run_index.recent_baselines(self.store, compaction.read_policy(con).protect_recent_runs)
        held = {i: recent[i] for i in ids if i in recent}
        return {**held, **self.in_use_by_active_runs([self.store.snapshot(i, con) for i in ids])}

    def in_use_by_active_runs(self, snapshots: Sequence[Snapshot]) -> dict[str, str]:
        """The hook deletion asks which of ``snapshots`` work in progress still needs (id -> why):
        the incremental baselines of queued or running managed runs."""
        held = self.active_run_baseline_snaps()
        return {s.snapshot_id: held[s.snapshot_id] for s in snapshots if s.snapshot_id in held}

    def active_run_baseline_snaps(self) -> dict[str, str]:
        """Snapshot id -> why, for every snapshot a queued or running run uses as its baseline."""
        return run_index.active_baselines(self.store)

    def relation(self, sql: str, params: Sequence[object] = ()) -> duckdb.DuckDBPyRelation:
        """A DuckDB relation over the store, for notebooks (on the project's own cursor, kept until it closes:
        a relation is read lazily). A cursor of the store's own connection, never ``store.cursor()``: a
        daemon's store lends that from its bounded read pool."""
        if self._analysis is None:
            self._analysis = self.store.con.cursor()
        return self._analysis.sql(sql, params=list(params)) if params else self._analysis.sql(sql)


def open_project(
    path: str | os.PathLike[str] = ".",
    *,
    settings: Settings | None = None,
    owner: str | None = None,
    wait_ms: int = 0,
    waiting: Callable[[dict[str, Any]], None] | None = None,
) -> Project:
    """Open the coverage store of the repository containing ``path``.

    The returned Project holds the store (one process at a time) until it is
    closed: use it in a ``with`` block, so a notebook lets go at the end of
    each cell. While another process holds the store this waits up to
    ``wait_ms`` (``waiting(holder)`` is called once when the wait begins),
    then raises ``store_locked`` naming the holder.
    """
    settings = settings or Settings.from_env()
    checkout = discover(path)
    store = wait_for_store(lambda: ProjectStore.open(checkout.store_path, owner=owner), wait_ms, waiting)
    return Project(checkout, store, settings)


T = TypeVar("T")
# How often a waiting opener retries: a lease is released in microseconds, so
# this is the delay a waiting command adds at most, not a cost it pays.
STORE_RETRY_S = 0.05


def wait_for_store(
    open_store: Callable[[], T],
    wait_ms: int,
    waiting: Callable[[dict[str, Any]], None] | None = None,
    *,
    limit_name: str | None = None,
) -> T:
    """``open_store()``, retried while it raises ``store_locked``, for up to ``wait_ms``.

    After the limit the error says whom it waited for, how that holder lets
    go of the store, and (``limit_name``: the setting that sets ``wait_ms``)
    how to wait longer; any other error is raised at once.
    """
    give_up = time.monotonic() + wait_ms / 1000
    told = False
    while True:
        try:
            return open_store()
        except CoverageError as error:
            if error.code != ErrorCode.STORE_LOCKED:
                raise
            holder = error.details.get("holder", {})
            if time.monotonic() >= give_up:
                if wait_ms <= 0:
                    raise
                raise _not_released(error, holder, wait_ms, limit_name) from None
            if waiting is not None and not told:
                waiting(holder)
                told = True
        time.sleep(STORE_RETRY_S)


def _not_released(
    error: CoverageError, holder: dict[str, Any], wait_ms: int, limit_name: str | None
) -> CoverageError:
    limit = f"{limit_name}={wait_ms}" if limit_name else f"{wait_ms} ms"
    database = holder.get("database") or "the coverage store"
    message = (
        f"{database} is held by {describe_holder(holder)} and was not released within {limit}: "
        f"{how_to_release(holder)}"
    )
    if holder.get("owner") == "cli" and limit_name:
        longer = max(4 * wait_ms, 120_000)
        return CoverageError(
            ErrorCode.STORE_LOCKED,
            message,
            f"Retry when that command has finished, or wait longer: {limit_name}={longer}.",
            error.details,
            Remedy(setting=limit_name, value=longer),
        )
    return CoverageError(
        ErrorCode.STORE_LOCKED, message, "Release the store in the holder, then retry.", error.details
    )


def _shed(exc: CoverageError) -> CoverageError:
    """The error without its traceback and context, whose frames would keep the
    report's bytes alive until the caller is done with the error."""
    exc.__traceback__ = exc.__context__ = exc.__cause__ = None
    return exc


def _nothing_mapped(paths: list[str], root: str, unused: Sequence[tuple[str, str]] = ()) -> CoverageError:
    """No file of the report is a file of this repository: most often a report of another checkout."""
    examples = paths[:3]
    unmatched = "".join(f"; path map {old}={new} matched no report path" for old, new in unused)
    return CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        f"none of the report's {len(paths)} files maps to a file of this repository "
        f"(e.g. {', '.join(map(repr, examples))}){unmatched}; nothing was stored",
        f"Map the report's prefix onto the checkout with a path map (CLI: --path-map OLD_PREFIX={root}), "
        "or import the report into the repository it was made in.",
        {"unmapped": len(paths), "examples": examples, "checkout_path": root},
    )


def _check_name(what: str, value: str) -> None:
    if not isinstance(value, str) or not value or len(value) > 200 or any(c in value for c in "\0\n\r"):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{what} must be a non-empty single-line name of at most 200 characters",
            f"Pick a short {what} name such as 'unit' or 'integration'.",
        )


def parse_path_map(text: str) -> tuple[str, str]:
    """``OLD=NEW`` from the command line, as a (report prefix, repository prefix) pair."""
    if "=" not in text:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"path map {text!r} is not OLD=NEW",
            "Write it as the report's prefix, '=', and the repository-relative prefix: /build/app=src",
        )
    old, new = text.split("=", 1)
    return old, new


# The report files test tools write by default, relative to the checkout root, in the order listed when none is found.
USUAL_REPORTS = (
    "coverage.json",
    "coverage.xml",
    "lcov.info",
    "coverage/lcov.info",
    "coverage-final.json",
    "coverage/coverage-final.json",
    "cover.out",
    "jacoco.xml",
    "target/site/jacoco/jacoco.xml",
)
SQLITE_MAGIC = b"SQLite format 3\x00"


def find_reports(root: str | os.PathLike[str]) -> list[Path]:
    """The usual report files (``USUAL_REPORTS``) present under ``root``, a checkout's root."""
    base = Path(root)
    return [base / name for name in USUAL_REPORTS if (base / name).is_file()]


def unused_path_maps(paths: Sequence[str], path_map: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The path maps whose prefix starts none of the report's ``paths`` (by the rule mapping applies)."""

    normalized = [norm_report_path(p) for p in paths]  # once: each map is tried against every path

    def used(old: str) -> bool:  # storage.paths._map_one's prefix test
        old_n = norm_report_path(old)
        under = old_n.rstrip("/") + "/"
        return any(p == old_n or p.startswith(under) for p in normalized)

    return [(old, new) for old, new in path_map if not used(old)]


def _coverage_data_file(path: Path | None) -> CoverageError:
    """coverage.py's SQLite data file (``.coverage``) is its raw measurement, not a report."""
    name = str(path) if path is not None else "the report"
    return CoverageError(
        ErrorCode.UNKNOWN_FORMAT,
        f"{name} is a SQLite database, most likely coverage.py's data file (.coverage), not a report",
        "Write a report from it first: `coverage json --show-contexts` (the contexts name the tests that ran "
        "each line), then import coverage.json.",
        {"path": name, "reason": "coverage_data_file"},
        Remedy(operation="coverage_import", arguments={"report_path": "coverage.json"}),
    )
