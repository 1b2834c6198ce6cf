"""The runtime of one open store: worker threads that take queued runs, run them, ingest what they wrote.

``Runtime.start`` first recovers (runs left ``running`` by a dead owner are
killed by their recorded group and marker, then marked ``interrupted``;
queued runs stay queued), then starts ``concurrency`` worker threads. A
worker claims the oldest queued run, starts its process group, waits for
its exit, its timeout or a cancel, stops whatever of the group is left,
ingests each declared artifact the run created or modified (scope ``subset``
when the run was given case arguments; an unchanged or
absent one is ``skipped_stale``, a report that fails to parse is ``failed``
with its error code; each ingested snapshot and its artifact row commit in
one transaction; a composite artifact is built from the reports the run
refreshed, ``composite.build`` with provenance ``run``), attaches a bounded incremental review when the run named
a baseline, and writes the terminal state by the one precedence rule
(``terminal.settle``: a timeout or cancel keeps its state, a later failure in
its detail; any other setup, capture, drain or persistence failure makes it
``failed`` with the reason), known to readers at once and written as soon as
the store takes it. The command gets its declared environment
(``environment``) and, where a delegated cgroup v2 subtree exists, a cgroup of
its own (``containment``).

An owner that executes none of the store's runs (no runtime: the command
line holding the store) recovers runs still ``running`` before it reads them
(``settle_orphans``): the store's lease is exclusive, so their owner died.

``stop`` (daemon shutdown, store close) cancels running runs (their groups
stopped, state ``cancelled``, reason ``shutdown``) and leaves queued runs
queued for the next owner. Every run is announced to the process's watchdog
(``watchdog.WATCHDOG``) before its command starts, so a ``kill -9`` of this
process still stops all of its processes at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from .. import safefs
from ..composite.build import ReportSpec, build
from ..config import Settings
from ..errors import CoverageError, ErrorCode
from ..git import discover
from ..model import to_json
from ..parsers.opening import open_within
from ..project import Project
from ..storage import project_settings
from ..storage.exec_db import exec_db
from ..storage.store import ProjectStore
from . import case_selectors, commands, containment, environment, runner, runs, terminal
from .records import CommandSpec, CompositeArtifact, ReportArtifact, ReportUse, Run
from .watchdog import WATCHDOG

log = logging.getLogger("coverage_core.execution")
T = TypeVar("T")
POLL_S = 0.05  # how often a worker looks at its process, its deadline and cancels
IDLE_POLL_S = 1.0  # a sleeping worker looks at the queue at least this often
END_RETRY_MAX_S = 2.0
STOP_RETRY_S = 5.0  # how long a stopping runtime still tries to write a run's end  # the longest wait between two attempts to write a run's end
# Errors of the store rather than of the report: an artifact that meets one makes its run failed.
STORE_FAILURES = (ErrorCode.STORE_UNAVAILABLE, ErrorCode.STORE_LOCKED, ErrorCode.INTERNAL)
NOT_FOUND_EXIT = 127  # what a shell and the supervisor exit with when a program cannot be found
REVIEW_LIMITS = {"max_files": 5, "max_regions": 5, "max_words": 600}


Identity = tuple[int, int, str] | None  # (mtime_ns, size, sha256) of a report file, None when absent


def _identity(path: Path) -> Identity:
    """(mtime_ns, size, sha256) of a regular file, None when absent or not a regular file."""
    try:
        st = os.lstat(path)
        if not os.path.isfile(path) or os.path.islink(path):
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        return (st.st_mtime_ns, st.st_size, digest.hexdigest())
    except OSError:
        return None


def command_env(spec: CommandSpec, withheld: Iterable[str] = ()) -> dict[str, str]:
    """The environment a registered command gets (``environment.build``; the runner adds the run's marker)."""
    return environment.build(spec, os.environ, withheld)


def scope_of(run: Run, artifact: ReportArtifact) -> str:
    """The scope a run's report is stored with: ``subset`` when the run was given case arguments (it ran a
    selection of the suite, so what it did not reach is not observed, never lost), else the registration's."""
    return "subset" if run.args else artifact.scope


# Which runtime executes a store's runs is the store's own attribute (``ProjectStore.runtime``); the lock makes
# "one runtime per store" atomic. Every runtime this process started and has not stopped yet, for a test
# harness that stops what a test left running (``running_runtimes``).
_RUNTIMES_LOCK = threading.Lock()
_STARTED: weakref.WeakSet[Runtime] = weakref.WeakSet()


ORPHAN_REASON = "its daemon (the process that ran it) died before it ended; its processes were killed"


def recover(store: ProjectStore) -> list[str]:
    """Runs left ``running`` by a dead owner: their processes killed (recorded group and marker), then
    ``interrupted`` (detail ``recovered``). Their ids. Only a store's owner calls it, for runs no runtime of its
    own executes."""
    done = []
    for run_id, pgid in runs.stale_running(store):
        runner.kill_group(pgid, run_id, grace=0.5)
        containment.remove(containment.path_for(run_id))  # the cgroup a dead owner made for it, if any
        if runs.transition(
            store,
            run_id,
            "interrupted",
            expect=("running",),
            ended_at=runs.now(),
            reason=ORPHAN_REASON,
            detail="recovered",
        ):
            done.append(run_id)
    return done


def settle_orphans(store: ProjectStore) -> list[str]:
    """Before a read of runs by an owner that executes none (the command line, or a library process, holding the
    store without a runtime): a run still ``running`` is an orphan, since the store's lease is exclusive and no
    runtime of this process runs it, so its owner died. It is recovered now (``recover``), so the read says what
    it is rather than what a dead daemon left. Nothing when this process runs the store's runs."""
    if runtime_of(store) is not None or not runs.stale_running(store):
        return []
    return recover(store)


def runtime_of(store: ProjectStore) -> Runtime | None:
    """The runtime executing this store's runs in this process, if one was started."""
    runtime: Runtime | None = store.runtime
    return runtime


def running_runtimes() -> list[Runtime]:
    """The runtimes of this process that were started and not stopped yet."""
    with _RUNTIMES_LOCK:
        return list(_STARTED)


# How the runtime answers a finished run's attached review: (project, coverage_review arguments, read
# connection) -> coverage_review's envelope. The service passes its own: the runtime imports no projection.
ReviewAnswer = Callable[[Project, dict[str, Any], duckdb.DuckDBPyConnection], dict[str, Any]]


class Runtime:
    """Executes one store's queued runs on ``concurrency`` threads."""

    def __init__(
        self,
        store: ProjectStore,
        settings: Settings,
        *,
        write: Callable[[Callable[[], Any]], Any] | None = None,
        concurrency: int | None = None,
        secrets: Callable[[], Iterable[str]] | None = None,
        review: ReviewAnswer,
    ) -> None:
        self.store = store
        # How a finished run's incremental review is answered (the service's coverage_review, injected).
        self._answer_review = review
        # The daemon's secrets (client token, capability): no variable carrying one reaches a run, whatever its name.
        self.secrets = secrets or (lambda: ())
        self.settings = settings
        self.concurrency = concurrency or settings.run_concurrency
        # How a store write (an ingest) is made: the daemon passes one through its write gate.
        self._write = write or (lambda fn: fn())
        self._cv = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._cancels: dict[str, threading.Event] = {}
        self._early_cancels: set[str] = set()
        self._projects: dict[str, Project] = {}
        self._stopping = False
        self._kicked = False  # a run was queued since a worker last looked

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> Runtime:
        with _RUNTIMES_LOCK:
            if self.store.runtime is not None:
                raise RuntimeError("a runtime already executes this store's runs")
            self.store.runtime = self
            _STARTED.add(self)
        exec_db(self.store)  # made before the stop hook, so closed after it
        self.store.on_close.append(self.stop)
        WATCHDOG.acquire()  # started at the first run; its pipe closed when the last runtime stops
        self.recover()
        for i in range(self.concurrency):
            thread = threading.Thread(target=self._loop, name=f"coverage-mcp-run-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def recover(self) -> list[str]:
        """Runs a dead owner left ``running``: their processes killed, then ``interrupted``. Their ids."""
        return recover(self.store)

    def stop(self, grace: float = runner.KILL_GRACE_S) -> None:
        """Cancel running runs (state ``cancelled``, reason shutdown), leave queued ones queued, join the workers."""
        with self._cv:
            if self._stopping:
                return
            self._stopping = True
            for event in self._cancels.values():
                event.set()
            self._cv.notify_all()
        for thread in self._threads:
            thread.join(grace + 15)
        with _RUNTIMES_LOCK:
            if self.store.runtime is self:
                self.store.runtime = None
            _STARTED.discard(self)
        WATCHDOG.release()

    @property
    def busy(self) -> bool:
        """Whether a run is executing (a daemon must not exit idle under it)."""
        with self._cv:
            return bool(self._cancels)

    def wake(self) -> None:
        with self._cv:
            self._kicked = True
            self._cv.notify_all()

    def cancel(self, run_id: str) -> bool:
        """Signal a run this runtime is executing; False when it holds no such run. Nothing is written, so a
        cancel works on a full disk: the worker stores the end as soon as a write can succeed."""
        with self._cv:
            event = self._cancels.get(run_id)
            if event is None:  # queued, or claimed and not registered yet: its worker sets its event at once
                self._early_cancels.add(run_id)
                return False
            event.set()
            return True

    def forget_cancel(self, run_id: str) -> None:
        """A cancel that ended the run in the store before any worker claimed it."""
        with self._cv:
            self._early_cancels.discard(run_id)

    def wait(self, run_id: str, timeout: float | None) -> Run:
        """The run once it is terminal, or as it is after ``timeout`` seconds (None: once it is terminal)."""
        give_up = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cv:  # read under the lock the worker notifies with: no wake-up is lost
                run = runs.get(self.store, run_id)
                left = IDLE_POLL_S if give_up is None else give_up - time.monotonic()
                if run.state not in runs.ACTIVE or left <= 0:
                    return run
                self._cv.wait(min(left, IDLE_POLL_S))

    def add_project(self, project: Project) -> None:
        self._projects.setdefault(str(project.checkout.worktree_path), project)

    def _project(self, worktree_path: str) -> Project:
        found = self._projects.get(worktree_path)
        if found is None:
            found = self._projects.setdefault(
                worktree_path, Project(discover(worktree_path), self.store, self.settings)
            )
        return found

    # -- workers -----------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cv:
                if self._stopping:
                    return
            try:
                run = runs.claim(self.store)
            except Exception:  # the store is closing, or a transient store failure
                log.exception("claiming a queued run failed")
                run = None
            if run is None:
                with self._cv:
                    if not self._stopping and not self._kicked:
                        self._cv.wait(IDLE_POLL_S)
                    self._kicked = False
                continue
            event = threading.Event()
            with self._cv:
                self._cancels[run.run_id] = event
                if self._stopping or run.run_id in self._early_cancels:
                    event.set()
            try:
                self._execute(run, event)
            except BaseException as exc:  # never leave a run running behind a dead worker
                log.exception("run %s failed in its worker", run.run_id)
                with contextlib.suppress(Exception):
                    self._fail(run.run_id, f"internal failure: {type(exc).__name__}: {str(exc)[:300]}")
            finally:
                with self._cv:
                    self._cancels.pop(run.run_id, None)
                    self._early_cancels.discard(run.run_id)
                    self._cv.notify_all()

    def _log_cap(self) -> int:
        """Bytes of each stream a run keeps: the repository's ``run_log_max_bytes``, else the process-wide one."""
        db = exec_db(self.store)
        with db.lock:
            cap, _ = project_settings.bound(
                db.con, project_settings.RUN_LOG_MAX_BYTES, self.settings.run_log_max_bytes
            )
        return cap

    def _fail(self, run_id: str, reason: str, **fields: Any) -> None:
        self._end(run_id, terminal.settle("failed", reason, []), ended_at=runs.now(), **fields)

    def _end(self, run_id: str, ended: terminal.Ended, **fields: Any) -> None:
        """Write the run's end; known (and read) at once, written as soon as the store takes a write.

        A store that refuses the write (a full disk) is retried, less and less often, for as long as this runtime
        runs; stopped with the write still refused, the next owner recovers the run (``interrupted``)."""
        columns = {"state": ended.state, "reason": ended.reason, **fields}
        terminal.remember(run_id, columns)
        self.store.new_generation()  # reads show the known end at once: what they cached before is old
        with self._cv:
            self._cv.notify_all()  # a waiter reads the end now, written or not
        delay, said, give_up = 0.05, False, None
        while True:
            try:
                runs.transition(
                    self.store, run_id, ended.state, detail=ended.detail, reason=ended.reason, **fields
                )
                terminal.forget(run_id)
                return
            except Exception as exc:
                if self._stopping:  # a few more seconds, then the store's next owner recovers the run
                    give_up = give_up or time.monotonic() + STOP_RETRY_S
                if give_up is not None and time.monotonic() > give_up:
                    log.error("the end of %s (%s) could not be written: %s", run_id, ended.state, exc)
                    terminal.forget(run_id)
                    self.store.new_generation()
                    return
                if not said:
                    log.warning(
                        "writing the end of %s failed (%s); retrying until the store takes it", run_id, exc
                    )
                    said = True
                time.sleep(delay)
                delay = min(delay * 2, END_RETRY_MAX_S)

    def _execute(self, run: Run, cancel: threading.Event) -> None:
        run_id = run.run_id
        try:
            project = self._project(run.worktree_path)
            spec, _, status = commands.spec_of(project, run.command_id)
        except CoverageError as error:
            self._fail(run_id, f"setup failed: {error.message}")
            return
        if status != "approved":
            self._fail(run_id, f"its command {run.command_id} is {status}, no longer approved")
            return
        root = project.checkout.worktree_path
        args = list(run.args)
        # What was checked when the run was queued is checked again now that it starts: the registration's
        # characters, the approved executable, the cwd and artifact paths, the selectors.
        real_root = Path(os.path.realpath(root))
        try:
            program = commands.runnable_executable(project, run.command_id, spec)
        except CoverageError as error:
            self._fail(run_id, f"not started: {error.message}")
            return
        problem = case_selectors.recheck_paths(
            real_root, spec, spec.artifact_paths()
        ) or case_selectors.recheck(real_root, spec, args)
        if problem is not None:
            self._fail(run_id, f"not started: {problem}")
            return
        try:
            runs_dir = self.store.path.parent / "runs"
            safefs.private_dir(runs_dir)
            log_dir = runs_dir / run_id
            safefs.private_dir(log_dir)
            before = {path: _identity(root / path) for path in spec.artifact_paths()}
            WATCHDOG.begin(run_id)  # from here a kill -9 of this process still stops the run's processes
            started = False
            cgroup = None if self.settings.run_force_subreaper else containment.create(run_id)
            try:
                process = runner.Process(
                    [program.path, *spec.argv[1:], *args],  # the approved executable, by its absolute path
                    cwd=root / spec.cwd,
                    env=command_env(spec, self.secrets()),
                    marker=run_id,
                    log_dir=log_dir,
                    cap_bytes=self._log_cap(),
                    cgroup=cgroup,
                )
                started = True
            finally:
                if not started:
                    containment.remove(cgroup)
                    WATCHDOG.end(run_id)
        except (OSError, CoverageError) as exc:
            message = exc.message if isinstance(exc, CoverageError) else f"{type(exc).__name__}: {exc}"
            self._fail(
                run_id, f"could not start {spec.argv[0]!r}: {message}; {environment.missing_line(spec)}"
            )
            return
        state, reason, code = "", None, None
        try:
            WATCHDOG.group(run_id, process.pgid)
            runs.record_pgid(self.store, run_id, process.pgid)
            deadline = time.monotonic() + spec.timeout_s
            while True:
                code = process.wait(POLL_S)
                if code is not None:
                    state = "succeeded" if code == 0 else "failed"
                    reason = (
                        None
                        if code == 0
                        else (f"exit code {code}" if code > 0 else f"killed by signal {-code}")
                    )
                    if (
                        code == NOT_FOUND_EXIT
                    ):  # a shell's (or the supervisor's) "not found": say what it lacked
                        reason = (
                            f"exit code {code} (a program was not found); {environment.missing_line(spec)}"
                        )
                    break
                if cancel.is_set():  # cancel_run and shutdown, in this process (the store's one owner)
                    state = "cancelled"
                    reason = "the daemon shut down" if self._stopping else "cancel_run"
                    break
                if time.monotonic() >= deadline:
                    state, reason = "timed_out", f"still running after timeout_s={spec.timeout_s}"
                    break
        finally:
            # The leader has exited or is being stopped: nothing of the run may outlive it.
            if state in ("succeeded", "failed") and not _group_alive(process.pgid):
                pass
            else:
                process.stop()
            process.finish()
            containment.remove(process.cgroup)  # a second layer: cgroup.kill of whatever is left, then rmdir
            WATCHDOG.end(run_id)
        ended = runs.now()
        outputs: dict[str, Any] = {
            "stdout_bytes": process.stdout.total,
            "stderr_bytes": process.stderr.total,
            "stdout_truncated": process.stdout.truncated,
            "stderr_truncated": process.stderr.truncated,
        }
        failures = []
        for stream in (process.stdout, process.stderr):
            if stream.error:
                failures.append(f"capturing its output failed: {stream.error}")
        finished = state in ("succeeded", "failed")
        review = None
        try:
            ingested, lost = self._ingest(project, run_id, run, spec, before, finished)
            failures.extend(lost)
            review = self._review(project, run, ingested) if run.baseline and ingested else None
        except Exception as exc:
            log.exception("ingesting the artifacts of %s failed", run_id)
            failures.append(f"persisting its results failed: {type(exc).__name__}: {str(exc)[:300]}")
        self._end(
            run_id,
            terminal.settle(state, reason, failures),
            ended_at=ended,
            exit_code=code,
            incremental_review=None if review is None else json.dumps(review),
            **outputs,
        )

    def _ingest(
        self,
        project: Project,
        run_id: str,
        run: Run,
        spec: CommandSpec,
        before: dict[str, Identity],
        finished: bool,
    ) -> tuple[list[str], list[str]]:
        """The snapshots ingested, and the persistence failures met (a store error, never a bad report)."""
        root = project.checkout.worktree_path
        db = exec_db(self.store)
        ingested: list[str] = []
        lost: list[str] = []

        def record(
            path: str,
            status: str,
            snapshot_id: str | None = None,
            code: str | None = None,
            detail: str | None = None,
        ) -> None:
            with db.transaction() as con:
                con.execute(
                    "INSERT INTO run_artifacts (run_id, path, status, snapshot_id, error_code, detail) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [run_id, path, status, snapshot_id, code, detail],
                )

        for artifact in spec.artifacts:
            if isinstance(artifact, CompositeArtifact):
                self._composite(project, run, artifact, before, finished)
                continue
            path = artifact.path
            after = _identity(root / path)
            if not finished:
                record(path, "skipped_stale", detail="the run did not finish; nothing it wrote is ingested")
                continue
            if after is None or after == before[path]:
                record(
                    path,
                    "skipped_stale",
                    detail="absent" if after is None else "not created or modified by the run",
                )
                continue

            scope = scope_of(run, artifact)
            why = (
                "stored with scope subset: the run was given case arguments, so it measured a selection of the "
                "suite"
                if scope == "subset" and artifact.scope != "subset"
                else None
            )

            def also(con: Any, snapshot_id: str, path: str = path, why: str | None = why) -> None:
                con.execute(
                    "INSERT INTO run_artifacts (run_id, path, status, snapshot_id, detail) "
                    "VALUES (?, ?, 'ingested', ?, ?)",
                    [run_id, path, snapshot_id, why],
                )
                # The snapshot says which run made it: run id, command (and its content hash), arguments.
                con.execute(
                    "UPDATE snapshots SET metadata = json_merge_patch(metadata, ?) WHERE snapshot_id = ?",
                    [
                        json.dumps({"run": to_json(run.registration())}),
                        snapshot_id,
                    ],
                )

            def ingest(artifact: ReportArtifact = artifact, scope: str = scope) -> Any:
                return project.ingest(
                    open_within(root, root / artifact.path),
                    suite=artifact.suite,
                    format=artifact.format,
                    scope=scope,
                    provenance="run",
                    require_mapped=True,
                    also=also,
                )

            try:
                snap = self._write(ingest)
            except CoverageError as error:
                if error.code in STORE_FAILURES:  # the store failed, not the report: the run failed
                    lost.append(f"persisting {path} failed: {error.message[:300]}")
                record(path, "failed", code=str(error.code), detail=error.message[:500])
                continue
            if snap.duplicate:
                record(
                    path,
                    "ingested",
                    snap.snapshot_id,
                    detail="an identical report of this commit was stored already",
                )
            ingested.append(snap.snapshot_id)
        return ingested, lost

    def _composite(
        self,
        project: Project,
        run: Run,
        composite: CompositeArtifact,
        before: dict[str, Identity],
        finished: bool,
    ) -> None:
        """A composite artifact: built from the reports the run refreshed (provenance ``run``, the registration
        recorded); a report present but not refreshed is stale evidence (its entries ``stale``, denominator kept),
        an absent one leaves its entries ``missing``. No report refreshed (or the run did not finish): the
        artifact is ``skipped_stale`` and nothing is built. An inventory or assignment error: ``failed`` with its
        code. The composite and its artifact row commit in one transaction."""
        root = project.checkout.worktree_path
        run_id, inventory = run.run_id, composite.inventory
        db = exec_db(self.store)

        def record(
            status: str, reports: list[ReportUse], code: str | None = None, detail: str | None = None
        ) -> None:
            with db.transaction() as con:
                con.execute(
                    "INSERT INTO run_artifacts (run_id, path, status, error_code, detail, kind, reports) "
                    "VALUES (?, ?, ?, ?, ?, 'composite', ?)",
                    [run_id, inventory, status, code, detail, json.dumps(to_json(reports))],
                )

        reports: list[ReportUse] = []
        specs: list[ReportSpec] = []
        for item in composite.reports:
            view = (item.component, item.variant, item.path)
            after = _identity(root / item.path)
            if not finished:
                reports.append(ReportUse(*view, "skipped_stale", "the run did not finish"))
            elif after is None:
                reports.append(ReportUse(*view, "skipped_stale", "absent"))
            elif after == before[item.path]:
                reports.append(ReportUse(*view, "skipped_stale", "not created or modified by the run"))
                specs.append(
                    ReportSpec(
                        str(root / item.path),
                        item.component,
                        item.variant,
                        stale=f"not refreshed by run {run_id}",
                    )
                )
            else:
                reports.append(ReportUse(*view, "used"))
                specs.append(ReportSpec(str(root / item.path), item.component, item.variant))
        if not any(r.status == "used" for r in reports):
            record(
                "skipped_stale",
                reports,
                detail="the run did not finish; nothing it wrote is used"
                if not finished
                else "the run refreshed none of its reports",
            )
            return
        registration = run.registration()

        def also(con: Any, composite_id: str) -> None:
            con.execute(
                "INSERT INTO run_artifacts (run_id, path, status, kind, composite_snapshot_id, reports) "
                "VALUES (?, ?, 'ingested', 'composite', ?, ?)",
                [run_id, inventory, composite_id, json.dumps(to_json(reports))],
            )

        try:
            for item in composite.reports:  # still inside the checkout (no link placed since registration)
                commands.inside_checkout(root, item.path, "composite report path")
            self._write(
                lambda: build(
                    project, inventory, specs, provenance="run", registration=registration, also=also
                )
            )
        except CoverageError as error:
            record("failed", reports, code=str(error.code), detail=error.message[:500])

    def _review(self, project: Project, run: Run, ingested: list[str]) -> dict[str, Any]:
        """The same projection coverage_review(task="incremental") answers, over the union of the run's snapshots.

        A comparison takes one normalized format, so reports of several formats get one group each
        (``{"task": "incremental", "groups": [{"format", "review"} | {"format", "error"}]}``), each current
        side against the baseline snapshots of its own format (all of them when none is: the comparison
        then says why it cannot be made)."""
        con = self.store.con.cursor()
        try:
            baseline = list(run.baseline or ())
            formats = _formats(project, ingested, con)
            if len(set(formats.values())) <= 1:
                return self._one_review(project, ingested, baseline, con)
            base_formats = _formats(project, baseline, con)
            groups = []
            for fmt in sorted(set(formats.values())):
                current = [i for i in ingested if formats[i] == fmt]
                base = [i for i in baseline if base_formats.get(i) == fmt] or baseline
                answer = self._one_review(project, current, base, con)
                groups.append(
                    {
                        "format": fmt,
                        **({"error": answer["error"]} if "error" in answer else {"review": answer}),
                    }
                )
            return {"task": "incremental", "groups": groups}
        finally:
            con.close()

    def _one_review(
        self, project: Project, current: list[str], baseline: list[str], con: duckdb.DuckDBPyConnection
    ) -> dict[str, Any]:
        try:
            answer = self._answer_review(
                project,
                {
                    "task": "incremental",
                    "measurement": {"snapshot_ids": current},
                    "baseline": {"kind": "explicit", "snapshot_ids": baseline},
                    "limits": REVIEW_LIMITS,
                },
                con,
            )
            data: dict[str, Any] = answer["data"]
            return data
        except CoverageError as error:
            return {"error": {"code": str(error.code), "message": error.message}}


def _formats(project: Project, ids: list[str], con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Snapshot id -> its normalized format, for the ids that name a stored snapshot."""
    out = {}
    for snapshot_id in ids:
        try:
            out[snapshot_id] = project.store.snapshot(snapshot_id, con).format
        except CoverageError:  # gone or never there: the comparison says so
            continue
    return out


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
