"""The daemon's project stores: opened lazily, one per canonical repository, never blocking the loop.

A request names its repository by a path inside a checkout or by project id
(``Target``). ``Projects`` finds the checkout, opens that repository's store on
first use (waiting up to ``COVERAGE_MCP_STORE_WAIT_MS`` while another process,
say a CLI ingest, holds it, then ``store_locked``), records it in the common
registry and keeps it open until shutdown. Linked worktrees share their
repository's store; each worktree gets its own ``Project`` view of it.

Every DuckDB, git and filesystem call runs on the bounded worker pool. Reads
borrow pooled cursors (``pool.ReadPool``); writes (operations not declared
read-only) pass one asyncio write gate per store, released only when the
worker thread has really finished, so a cancelled ingest never overlaps the
next one. A watchdog interrupts queries past their deadline; shutdown
interrupts everything, waits for it, and closes stores and leases.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import attrs
import duckdb

from coverage_core import faults
from coverage_core.checkout import Checkout
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode, Remedy
from coverage_core.execution.worker import Runtime, runtime_of
from coverage_core.git import discover
from coverage_core.locks import describe_holder, how_to_release, read_metadata
from coverage_core.model import snapshot_to_dict
from coverage_core.operations.table import OPERATIONS
from coverage_core.principals import Principal
from coverage_core.project import Project
from coverage_core.service import Service, admitting, answer_review, envelope_for
from coverage_core.storage import project_settings
from coverage_core.storage.store import ProjectStore

from .answer_context import attach_context
from .discovered import Discovered
from .pool import CANCELLED, SHUTDOWN, CallToken, ReadPool, bound, interrupted_error
from .project_registry import Registry

log = logging.getLogger("coverage_daemon")

T = TypeVar("T")

# How often the watchdog looks for overdue queries, and how long shutdown
# waits for interrupted work to hand its connections back.
WATCHDOG_INTERVAL_S = 0.05
SHUTDOWN_GRACE_S = 5.0
_STORE_RETRY_S = 0.05


@attrs.frozen
class Target:
    """How a request selects its repository: a path inside a checkout, a project id, or both."""

    path: str | None = None
    project_id: str | None = None


# PATH_MAX on Linux: no path longer than this names a directory.
MAX_REPOSITORY_PATH_BYTES = 4096


def check_repository_path(path: str) -> None:
    """Refuse a repository selection no checkout can have, before git or the filesystem sees it."""
    shown = path if len(path) <= 200 else f"{path[:200]}... ({len(path)} characters)"
    if "\x00" in path:
        raise CoverageError(
            ErrorCode.NOT_A_REPOSITORY,
            f"repository path {shown!r} contains a NUL character",
            "Send the absolute path of a directory inside a git checkout in x-coverage-mcp-repo.",
        )
    size = len(path.encode("utf-8", "surrogateescape"))
    if size > MAX_REPOSITORY_PATH_BYTES:
        raise CoverageError(
            ErrorCode.NOT_A_REPOSITORY,
            f"repository path {shown!r} is {size} bytes long, over the {MAX_REPOSITORY_PATH_BYTES}-byte limit",
            "Send the absolute path of a directory inside a git checkout in x-coverage-mcp-repo.",
            {"bytes": size, "limit": MAX_REPOSITORY_PATH_BYTES},
        )
    if not Path(path).is_absolute():
        raise CoverageError(
            ErrorCode.NOT_A_REPOSITORY,
            f"repository path {shown!r} is not absolute",
            "Send an absolute path inside a git checkout in x-coverage-mcp-repo.",
        )


class DaemonStore(ProjectStore):
    """A project store whose ``cursor()`` lends a connection of the daemon's bounded read pool."""

    pool: ReadPool

    def cursor(self) -> duckdb.DuckDBPyConnection:
        # A stand-in with DuckDB's API whose close() gives the connection back:
        # Service.call and every store read keep working unchanged.
        return cast(duckdb.DuckDBPyConnection, self.pool.checkout())


@attrs.define(eq=False)
class ProjectHandle:
    """One open repository store, its write gate, and a ``Project`` per worktree."""

    store: DaemonStore
    write_gate: asyncio.Lock
    worktrees: dict[Path, Project] = attrs.field(factory=dict)


def no_repository_selected() -> CoverageError:
    return CoverageError(
        ErrorCode.NOT_A_REPOSITORY,
        "no repository is selected for this request",
        "Send the header x-coverage-mcp-repo: <absolute path inside a git checkout>, or use "
        "/p/{project_id}/mcp (ids from GET /api/projects); `coverage-mcp connect --repo PATH` does this for you.",
    )


class Upkeep(Protocol):
    """What the projects ask of their background workers: start one per opened project, stop them all."""

    def start(self, handle: ProjectHandle, checkout: Checkout) -> None: ...

    async def stop(self, grace_s: float) -> None: ...


class Projects:
    """Lazily opened project stores of one daemon."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        executor: ThreadPoolExecutor,
        *,
        maintenance: Callable[[Projects], Upkeep],
    ) -> None:
        self.settings = settings
        self.registry = registry
        self._executor = executor
        self._handles: dict[str, ProjectHandle] = {}
        self._discovered = Discovered()
        self._opening: dict[str, asyncio.Future[ProjectHandle]] = {}
        self._closing = False
        # The workers of open projects: the server chooses them (maintenance.Maintenance), built on these projects.
        self.maintenance = maintenance(self)
        self.run_secrets: Callable[[], Iterable[str]] = lambda: ()  # the server sets its token and capability
        self._watchdog: asyncio.Task[None] | None = None

    # -- threads ------------------------------------------------------------
    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on a worker thread; a cancellation interrupts its queries."""
        token = CallToken()
        future = asyncio.wrap_future(self._executor.submit(self._bound_call, token, False, fn, args))
        try:
            return await future
        except asyncio.CancelledError:
            token.interrupt(CANCELLED)
            raise

    async def run_unbounded(self, fn: Callable[..., T], *args: Any) -> T:
        """``run`` without the query deadline (maintenance work that bounds itself)."""
        token = CallToken()
        future = asyncio.wrap_future(self._executor.submit(self._bound_call, token, True, fn, args))
        try:
            return await future
        except asyncio.CancelledError:
            token.interrupt(CANCELLED)
            raise

    def _bound_call(
        self, token: CallToken, unbounded: bool, fn: Callable[..., T], args: tuple[Any, ...]
    ) -> T:
        with bound(token, unbounded=unbounded):
            try:
                return fn(*args)
            except duckdb.InterruptException:
                raise interrupted_error(token.reason(), self.settings.db_query_timeout_ms) from None
            except CoverageError:
                raise
            except Exception as exc:
                coded = faults.classify(exc)  # a full disk, a damaged store file: coded, not a bug
                if coded is not None:
                    log.warning("%s: %s", getattr(fn, "__qualname__", fn), coded.message)
                    raise coded from exc
                log.exception("internal error in %s", getattr(fn, "__qualname__", fn))
                raise CoverageError(
                    ErrorCode.INTERNAL,
                    f"internal error: {type(exc).__name__}: {str(exc)[:300]}",
                    "This is a bug in coverage-mcp; the daemon's log (stderr) has the traceback.",
                ) from exc

    # -- lifecycle ------------------------------------------------------------
    def start(self) -> None:
        self._watchdog = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        # The interrupt itself is a flag DuckDB checks; it never blocks the loop.
        while True:
            await asyncio.sleep(WATCHDOG_INTERVAL_S)
            now = time.monotonic()
            for handle in list(self._handles.values()):
                try:
                    handle.store.pool.interrupt_overdue(now)
                except Exception:  # a watchdog that dies silently would let queries run forever
                    log.exception("watchdog failed on %s", handle.store.path)

    async def close(self) -> None:
        """Interrupt every query and ingest, wait for them, close every store and release its lease."""
        self._closing = True
        # Compaction workers first: a running pass ends after its current snapshot.
        await self.maintenance.stop(SHUTDOWN_GRACE_S)
        if self._watchdog is not None:
            self._watchdog.cancel()
        # Stores still opening stop waiting for other processes and close themselves.
        await asyncio.gather(*self._opening.values(), return_exceptions=True)
        for handle in list(self._handles.values()):
            # Running runs are cancelled (their groups stopped), queued ones stay queued for the next
            # daemon. Before the interrupt: a run's last ingest goes through the write gate.
            runtime = runtime_of(handle.store)
            if runtime is not None:
                await asyncio.to_thread(runtime.stop)
        for handle in list(self._handles.values()):
            handle.store.con.interrupt()  # an in-flight ingest rolls back
            await asyncio.to_thread(handle.store.pool.close, SHUTDOWN_GRACE_S)
            try:
                await asyncio.wait_for(handle.write_gate.acquire(), SHUTDOWN_GRACE_S)
            except TimeoutError:
                # Closing a connection a writer still uses is not safe; the
                # process exit releases this store's lease instead.
                log.warning(
                    "a write to %s did not stop within %.0f s of shutdown; leaving it to the exit",
                    handle.store.path,
                    SHUTDOWN_GRACE_S,
                )
                continue
            await asyncio.to_thread(handle.store.close)
        self._handles.clear()

    @property
    def open_stores(self) -> dict[str, Path]:
        return {key: handle.store.path for key, handle in self._handles.items()}

    # -- resolution -------------------------------------------------------------
    async def resolve(self, target: Target) -> tuple[ProjectHandle, Project]:
        checkout = await self.checkout_for(target)
        handle = await self._handle(checkout)
        project = handle.worktrees.get(checkout.worktree_path)
        if project is None:
            project = await self.run(Project, checkout, handle.store, self.settings)
            project = handle.worktrees.setdefault(checkout.worktree_path, project)
        return handle, project

    async def checkout_for(self, target: Target) -> Checkout:
        if target.path is not None:
            check_repository_path(target.path)
            checkout = self._discovered.get(target.path)
            if checkout is None:
                checkout = await self.run(self._discovered.find, target.path, discover)
            if target.project_id is not None and checkout.project_id != target.project_id:
                raise CoverageError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{target.path} belongs to project {checkout.project_id}, not {target.project_id}",
                    "Drop the x-coverage-mcp-repo header, or use the project id of that checkout.",
                )
            return checkout
        if target.project_id is not None:
            record = await self.run(self.registry.get, target.project_id)
            if record is None:
                raise CoverageError(
                    ErrorCode.NOT_FOUND,
                    f"no project {target.project_id!r} is known to this daemon",
                    "List projects with GET /api/projects, or register a checkout with "
                    'POST /api/projects {"path": ...}.',
                    {"project_id": target.project_id},
                )
            return await self.run(discover, record.checkout_path)
        raise no_repository_selected()

    async def _handle(self, checkout: Checkout) -> ProjectHandle:
        key = checkout.repo_key
        handle = self._handles.get(key)
        if handle is not None:
            return handle
        opening = self._opening.get(key)
        if opening is None:
            opening = self._opening[key] = asyncio.ensure_future(self._open(checkout))
            opening.add_done_callback(lambda done: self._opened(key, done))
        # Shielded: a caller that gives up (deadline, disconnect) must not
        # orphan a store the worker thread goes on to open and lease.
        return await asyncio.shield(opening)

    async def _open(self, checkout: Checkout) -> ProjectHandle:
        store = await self.run(self._open_store, checkout)
        if self._closing:
            await asyncio.to_thread(store.close)
            raise interrupted_error(SHUTDOWN, self.settings.db_query_timeout_ms)
        handle = self._handles[checkout.repo_key] = ProjectHandle(store, asyncio.Lock())
        loop = asyncio.get_running_loop()

        def through_gate(fn: Callable[[], T]) -> T:  # a run's ingest, from its worker thread
            return asyncio.run_coroutine_threadsafe(self.write(handle, fn), loop).result()

        # Recovery (killing what a dead daemon's runs left, marking them interrupted) runs here, once.
        await self.run(
            lambda: Runtime(
                store, self.settings, write=through_gate, secrets=self.run_secrets, review=answer_review
            ).start()
        )
        self.maintenance.start(handle, checkout)
        return handle

    def _opened(self, key: str, done: asyncio.Future[ProjectHandle]) -> None:
        del self._opening[key]
        if not done.cancelled():
            done.exception()  # retrieved here: every waiter may have gone

    def _open_store(self, checkout: Checkout) -> DaemonStore:
        path = checkout.store_path
        give_up = time.monotonic() + self.settings.store_wait_ms / 1000
        while True:
            try:
                # ProjectStore.open builds ``cls``: this is a DaemonStore.
                store = cast(DaemonStore, DaemonStore.open(path, owner="daemon"))
                break
            except CoverageError as error:
                if error.code != ErrorCode.STORE_LOCKED or self._closing or time.monotonic() >= give_up:
                    if error.code == ErrorCode.STORE_LOCKED:
                        raise self._still_locked(path, error) from None
                    raise
                time.sleep(_STORE_RETRY_S)
        s = self.settings
        store.pool = ReadPool(
            store.con.cursor,
            size=s.db_pool_size,
            acquire_timeout_ms=s.db_acquire_timeout_ms,
            query_timeout_ms=s.db_query_timeout_ms,
        )
        try:
            project_settings.write_defaults(store.con)
            self.registry.record(checkout, path)
        except BaseException:
            store.close()
            raise
        return store

    def _still_locked(self, path: Path, error: CoverageError) -> CoverageError:
        holder = read_metadata(path.with_name(path.name + ".lock"))
        return CoverageError(
            ErrorCode.STORE_LOCKED,
            f"coverage store {path} is held by {describe_holder(holder)} "
            f"and was not released within COVERAGE_MCP_STORE_WAIT_MS={self.settings.store_wait_ms}",
            f"Retry when it lets go: {how_to_release(holder)}; or raise COVERAGE_MCP_STORE_WAIT_MS to wait longer.",
            error.details,
            Remedy(setting="COVERAGE_MCP_STORE_WAIT_MS", value=max(4 * self.settings.store_wait_ms, 10_000)),
        )

    # -- operations ---------------------------------------------------------------
    async def call(
        self, target: Target, name: str, arguments: dict[str, Any], *, principals: frozenset[Principal]
    ) -> dict[str, Any]:
        """One row of the table (``coverage_core.service``) on the target's project, as the first of the
        caller's ``principals`` it admits (a row admitting none is refused before the project is opened): its
        envelope. A read runs on a pooled connection, a write under the store's write gate, managed
        execution on its own connection."""
        op = OPERATIONS.get(name)
        principal = admitting(op, principals) if op is not None else Principal.AGENT
        handle, project = await self.resolve(target)
        try:
            return await self._call(handle, project, op, name, arguments, principal)
        except CoverageError as error:  # answered with the context of the project it was asked of
            raise attach_context(error, project, arguments) from None

    async def _call(
        self,
        handle: ProjectHandle,
        project: Project,
        op: Any,
        name: str,
        arguments: dict[str, Any],
        principal: Principal,
    ) -> dict[str, Any]:
        service = Service(project)
        if op is not None and op.own_writes:
            # Managed execution writes on its own connection and may wait for a run: never under the
            # write gate (the run's ingest needs it) and never on a pooled read connection.
            # The request's deadline (the HTTP timeout), which the call keeps to where it can answer early.
            deadline = time.monotonic() + self.settings.http_timeout_s
            return await self.run(
                _on_own_connection, handle.store, service, name, arguments, deadline, principal
            )
        if op is None or op.read_only:
            return await self.run(partial(service.call, principal=principal), name, arguments)
        return await self.write(handle, partial(service.call, principal=principal), name, arguments)

    async def write(self, handle: ProjectHandle, fn: Callable[..., T], *args: Any) -> T:
        """Run a write under the store's gate, held until the worker thread has finished."""
        loop = asyncio.get_running_loop()
        await handle.write_gate.acquire()
        if self._closing:  # queued behind shutdown: the store is closing
            handle.write_gate.release()
            raise interrupted_error(SHUTDOWN, self.settings.db_query_timeout_ms)
        token = CallToken()
        try:
            work = self._executor.submit(self._bound_call, token, True, fn, args)
        except BaseException:
            handle.write_gate.release()
            raise
        # A running thread cannot be cancelled: the gate opens when it ends,
        # not when its caller stops waiting.
        work.add_done_callback(lambda _: loop.call_soon_threadsafe(handle.write_gate.release))
        try:
            return await asyncio.wrap_future(work)
        except asyncio.CancelledError:
            token.interrupt(CANCELLED)
            raise

    async def snapshot_summary(self, target: Target, snapshot_id: str) -> dict[str, Any]:
        """One snapshot's record and totals in the envelope (the MCP resource ``coverage://snapshot/{id}/summary``)."""
        started = time.perf_counter()

        def read(project: Project, con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
            snap = project.store.snapshot(snapshot_id, con)
            return envelope_for(
                project, {"snapshot": snapshot_to_dict(snap)}, None, suite=snap.suite, started=started, rows=1
            )

        return await self.read(target, read)

    async def read(self, target: Target, fn: Callable[[Project, duckdb.DuckDBPyConnection], T]) -> T:
        """``fn(project, connection)`` on a worker thread with a pooled read connection."""
        _, project = await self.resolve(target)

        def work() -> T:
            con = project.store.cursor()
            try:
                return fn(project, con)
            finally:
                con.close()

        return await self.run(work)


def _on_own_connection(
    store: ProjectStore,
    service: Service,
    name: str,
    arguments: dict[str, Any],
    deadline: float,
    principal: Principal,
) -> dict[str, Any]:
    con = store.con.cursor()
    try:
        return service.call(name, arguments, con=con, deadline=deadline, principal=principal)
    finally:
        con.close()
