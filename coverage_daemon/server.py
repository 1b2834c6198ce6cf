"""Run the daemon: refuse non-loopback hosts, take ``daemon.lock`` before binding, stop gracefully.

The order matters and is the contract connectors rely on:

1. settings were validated once by the caller; a non-loopback host is refused;
2. ``$COVERAGE_MCP_HOME/daemon.lock`` is taken (a second daemon on the same
   home fails here, naming the holder) with metadata a connector or
   ``coverage-mcp stop`` reads: pid, instance id, build, common database and
   the shutdown capability (the file is mode 0600);
3. the loopback TCP address is bound before anything else is made (a port
   in use fails here, leaving the home as it was but for the released
   lock), then the listeners start (TCP, and the private Unix socket
   ``daemon.sock`` in the 0700 home, where our own clients send their
   secrets), and the bound port is written into the locked file;
4. on SIGINT, SIGTERM, an authorized ``POST /api/shutdown`` or the idle exit:
   stop accepting, interrupt queries and cancel in-flight calls, close stores
   (releasing their leases), close the registry, remove ``daemon.sock``,
   release ``daemon.lock``.

The idle exit (``COVERAGE_MCP_IDLE_EXIT_S``; 0, never, for a daemon a person
runs, ``launcher.CONNECTOR_IDLE_EXIT_S`` for one a connector started) counts
from the last moment the daemon was busy: a request arriving, any open
connection (a request in flight), or a store write still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import secrets
import signal
import socket
import stat
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from coverage_core import safefs
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.locks import Lease, instance_metadata

from .credentials import MAX_SOCKET_PATH, HomeError, private_home, socket_path
from .identity import VERSION, build_fingerprint, is_loopback_host

if TYPE_CHECKING:
    from aiohttp import web

    from .state import Daemon

log = logging.getLogger("coverage_daemon")

# Handlers still running at shutdown get this long once their queries were interrupted.
HANDLER_GRACE_S = 5.0
# How often the idle exit looks for work in progress.
IDLE_POLL_S = 1.0


def check_loopback(host: str) -> None:
    """Refuse a host the connector would not call either (``identity.is_loopback_host``, the one rule)."""
    if not is_loopback_host(host):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{host!r} is not a loopback address; the daemon serves this machine only",
            "Use 127.0.0.1 (the default), localhost or ::1. Exposing the daemon beyond this machine needs an "
            "authentication and isolation design this project does not provide.",
        )


def take_daemon_lock(settings: Settings, fingerprint: str) -> Lease:
    """``daemon.lock`` with the metadata connectors and ``stop`` read; fails fast when another daemon holds it."""
    metadata = instance_metadata(
        owner="daemon",
        version=VERSION,
        build_fingerprint=fingerprint,
        common_db=str(settings.common_db),
        capability=secrets.token_urlsafe(32),
        host=settings.host,
        port=0,
        home=str(settings.home),
    )
    try:
        return Lease.acquire(settings.daemon_lock, metadata, what="daemon lock", suggestion="")
    except CoverageError as error:
        if error.code != ErrorCode.STORE_LOCKED:
            raise
        holder = error.details.get("holder", {})
        raise CoverageError(
            ErrorCode.DAEMON_CONFLICT,
            f"a coverage-mcp daemon already runs for {settings.home} (pid {holder.get('pid', 'unknown')}, "
            f"port {holder.get('port', 'unknown')})",
            "Use it (`coverage-mcp status`), stop it first (`coverage-mcp stop`), or choose another "
            "COVERAGE_MCP_HOME.",
            error.details,
        ) from None


def publish_port(lease: Lease, port: int) -> None:
    """Rewrite the locked file with the bound port (the lock stays held throughout)."""
    lease.update(port=port)


@contextlib.asynccontextmanager
async def running(settings: Settings, lease: Lease, fingerprint: str) -> AsyncIterator[Daemon]:
    """A bound, serving daemon for the body's duration; the graceful stop on the way out."""
    # Imported here, after the lock: a daemon that loses the race for
    # daemon.lock exits without paying for aiohttp.
    from aiohttp import web

    from .app import create_app
    from .auth import Authorizer
    from .maintenance import Maintenance
    from .mcp_sessions import Sessions
    from .project_registry import Registry
    from .projects import Projects
    from .state import Daemon

    listeners = _bind(settings)  # first: a port in use must leave nothing behind
    executor = ThreadPoolExecutor(
        max_workers=settings.mcp_concurrency + settings.db_pool_size + 4, thread_name_prefix="coverage-mcp"
    )
    loop = asyncio.get_running_loop()
    registry = await loop.run_in_executor(executor, Registry, settings.common_db)
    projects = Projects(settings, registry, executor, maintenance=Maintenance)
    authorizer = await loop.run_in_executor(executor, Authorizer, settings.home, lease.metadata["capability"])
    # No variable carrying the client token or the capability reaches a run, whatever its name.
    projects.run_secrets = lambda: (authorizer.token(), authorizer.capability)
    daemon = Daemon(
        settings=settings,
        projects=projects,
        registry=registry,
        authorizer=authorizer,
        instance_id=lease.metadata["instance_id"],
        build_fingerprint=fingerprint,
        stop=asyncio.Event(),
        mcp_slots=asyncio.Semaphore(settings.mcp_concurrency),
        sessions=Sessions(),
    )
    # keepalive_timeout also closes a connection that has not sent a complete
    # request head in time (aiohttp arms it when the connection is made):
    # idle or slow-header clients cannot pile up to the descriptor limit.
    runner = web.AppRunner(
        create_app(daemon),
        handler_cancellation=True,
        access_log=None,
        shutdown_timeout=HANDLER_GRACE_S,
        keepalive_timeout=settings.http_idle_timeout_s,
    )
    await runner.setup()
    idle_exit: asyncio.Task[None] | None = None
    started: list[web.BaseSite] = []
    private_made = False
    try:
        for listener in listeners:
            site = web.SockSite(runner, listener)
            await site.start()
            started.append(site)
        private = web.UnixSite(runner, str(_fresh_socket(settings)))
        private_made = True
        await private.start()
        started.append(private)
        os.chmod(socket_path(settings.home), 0o600, follow_symlinks=False)
        daemon.port = runner.addresses[0][1]
        publish_port(lease, daemon.port)
        projects.start()
        if settings.idle_exit_s:
            idle_exit = loop.create_task(_exit_when_idle(daemon, lambda: _busy(daemon, runner)))
        yield daemon
    finally:
        if idle_exit is not None:
            idle_exit.cancel()
        for listening in reversed(started):
            await listening.stop()
        for listener in listeners:
            listener.close()  # never started ones too; a started one is closed already
        if private_made:
            _remove_socket(settings)
        daemon.sessions.close_all()
        await projects.close()
        await runner.cleanup()
        await loop.run_in_executor(executor, registry.close)
        executor.shutdown(wait=False, cancel_futures=True)


def _bind(settings: Settings) -> list[socket.socket]:
    """Bound (not yet listening) sockets for every address the host names, all on one port.

    Bound before anything else is made, so a port in use fails while there is
    nothing to undo; not listening yet, so a connector probing the port is
    refused (and waits on the lease) rather than left unanswered until the
    daemon serves.
    """
    try:
        infos = socket.getaddrinfo(
            settings.host, settings.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"cannot resolve {settings.host!r}: {exc.strerror}",
            "Use 127.0.0.1 (the default), localhost or ::1.",
        ) from None
    bound: list[socket.socket] = []
    port = settings.port
    try:
        for family, kind, proto, _name, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_REUSEADDR, 1
            )  # as aiohttp's TCPSite: restart after TIME_WAIT
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address[0], port, *address[2:]))
            port = sock.getsockname()[1]  # port 0: the others take the one the first got
    except OSError as exc:
        for sock in bound:
            sock.close()
        raise CoverageError(
            ErrorCode.DAEMON_CONFLICT,
            f"cannot listen on {settings.host}:{settings.port}: {exc.strerror}",
            "Another program uses this port: choose another with --port or COVERAGE_MCP_PORT "
            "(0 picks a free one).",
        ) from None
    return bound


def _remove_socket(settings: Settings) -> None:
    """Remove our private socket on the way out (we still hold daemon.lock, so it is ours)."""
    path = socket_path(settings.home)
    with contextlib.suppress(OSError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)


def _busy(daemon: Daemon, runner: web.AppRunner) -> bool:
    """Whether the daemon is doing work the idle exit must wait for.

    Every response closes its connection (``app._harden``), so an open
    connection is a request arriving or in flight, a long MCP call included.
    A store's write gate stays held until the worker thread of a write has
    really finished (a request cut off by its deadline too), and a lent read
    connection is a query still running.
    """
    server = runner.server
    if server is not None and server.connections:
        return True
    for handle in list(daemon.projects._handles.values()):  # no public view of open handles yet
        if handle.write_gate.locked() or handle.store.pool.busy:
            return True
        from coverage_core.execution.worker import runtime_of

        runtime = runtime_of(handle.store)
        if runtime is not None and runtime.busy:  # a managed run is executing
            return True
    return False


def _fresh_socket(settings: Settings) -> Path:
    """The private socket's path, cleared of a dead daemon's socket (we hold daemon.lock, so none lives)."""
    path = socket_path(settings.home)
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise CoverageError(
            ErrorCode.STORE_UNAVAILABLE,
            f"the daemon's socket path {path} is longer than a Unix socket allows ({MAX_SOCKET_PATH} bytes)",
            "Choose a shorter COVERAGE_MCP_HOME.",
            {"path": str(path)},
        )
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return path
    if not (stat.S_ISSOCK(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        raise CoverageError(
            ErrorCode.STORE_UNAVAILABLE,
            f"{path} exists and is not a socket",
            "Move it out of COVERAGE_MCP_HOME; the daemon creates its socket there.",
            {"path": str(path)},
        )
    os.unlink(path)  # never follows a link: unlink removes the entry itself
    return path


async def _exit_when_idle(daemon: Daemon, busy: Callable[[], bool]) -> None:
    """Stop once nothing has happened for ``idle_exit_s``: no request arrived and ``busy()`` was never true."""
    limit = daemon.settings.idle_exit_s
    while True:
        if busy():
            daemon.touch()
        idle = time.monotonic() - daemon.last_request
        if idle >= limit:
            log.info("idle for %d s, no client and no work (COVERAGE_MCP_IDLE_EXIT_S): stopping", limit)
            daemon.stop.set()
            return
        # Often enough that a stretch of work between two looks is seen.
        await asyncio.sleep(min(limit - idle + 0.05, IDLE_POLL_S))


def serve(settings: Settings, *, announce: Callable[[str, str], None]) -> int:
    """Run in the foreground until SIGINT, SIGTERM or ``/api/shutdown``; the exit status.

    ``announce(line, url)`` is called once the listener is bound, with the one
    line that says so (the line connectors and scripts wait for) and the URL.
    """
    check_loopback(settings.host)
    safefs.private_umask()  # its stores' WALs and its log files are 0600, as the README says
    try:
        private_home(settings.home)
    except HomeError as error:
        raise CoverageError(
            ErrorCode.STORE_UNAVAILABLE, error.message, error.suggestion, {"path": str(settings.home)}
        ) from None
    fingerprint = build_fingerprint()
    lease = take_daemon_lock(settings, fingerprint)
    try:
        asyncio.run(_serve(settings, lease, fingerprint, announce))
    finally:
        lease.release()
    return 0


async def _serve(
    settings: Settings, lease: Lease, fingerprint: str, announce: Callable[[str, str], None]
) -> None:
    _log_to_stderr()
    async with running(settings, lease, fingerprint) as daemon:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, daemon.stop.set)
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        url = f"http://{host}:{daemon.port}"
        announce(f"coverage-mcp daemon listening on {url} (home {settings.home})", url)
        # The first tool call should not pay for importing the service layer.
        warm = loop.run_in_executor(None, _warm_imports)
        await daemon.stop.wait()
        warm.cancel()
    log.info("coverage-mcp daemon stopped")


def _warm_imports() -> None:
    import coverage_core.service  # noqa: F401
    from coverage_core.operations.table import load_handlers

    load_handlers()
    # What is loaded by now (modules, classes, schemas: about 80,000 objects) lives as long as the daemon; a
    # full collection walking it on every third or fourth second of load stalled every call in flight (tens of
    # milliseconds: the open loop's p99). Frozen, the collector walks only what calls have made since.
    gc.collect()
    gc.freeze()


def _log_to_stderr() -> None:
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s coverage-mcp %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
