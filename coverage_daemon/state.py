"""What one running daemon holds, shared by its HTTP handlers: settings, stores, sessions, identity.

Kept apart from ``app`` (which declares the routes) so the handler modules
(``rest``, ``mcp_http``) can depend on it without importing the route table.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from typing import TYPE_CHECKING, Any

import attrs
from aiohttp import web

from coverage_core.config import Settings
from coverage_core.storage.schema import SCHEMA_REVISION

from .auth import Authorizer
from .errors_http import compact
from .identity import REPO_HEADER, VERSION
from .project_registry import Registry
from .projects import Projects, Target

if TYPE_CHECKING:
    from .mcp_sessions import Sessions


@attrs.define(eq=False)
class StreamCount:
    """The dashboard's event streams: open now, and closed so far (so a test can see the server notice)."""

    open: int = 0
    closed: int = 0


@attrs.define(eq=False)
class Daemon:
    """One daemon's shared state; the handlers reach it through ``request.app[DAEMON]``."""

    settings: Settings
    projects: Projects
    registry: Registry
    authorizer: Authorizer
    instance_id: str
    build_fingerprint: str
    stop: asyncio.Event
    mcp_slots: asyncio.Semaphore
    sessions: Sessions
    # MCP calls that write get slots of their own (as many): a write holds its slot while it waits for the
    # store's write gate, and imports queued there once took the slots reads were waiting for (issue 29).
    mcp_write_slots: asyncio.Semaphore = attrs.field(
        default=attrs.Factory(lambda self: asyncio.Semaphore(self.settings.mcp_concurrency), takes_self=True)
    )
    port: int = 0
    pid: int = attrs.field(factory=os.getpid)
    last_request: float = attrs.field(factory=time.monotonic)
    streams: StreamCount = attrs.field(factory=StreamCount)

    @property
    def capability(self) -> str:
        return self.authorizer.capability

    def touch(self) -> None:
        """A request arrived (the idle exit counts from the last one)."""
        self.last_request = time.monotonic()

    def health(self) -> dict[str, Any]:
        """``GET /health``: enough for a connector to decide whether this is its daemon, never the capability."""
        return {
            "name": "coverage-mcp",
            "version": VERSION,
            "build_fingerprint": self.build_fingerprint,
            "schema_revision": SCHEMA_REVISION,
            "common_db": str(self.settings.common_db),
            "home": str(self.settings.home),
            "pid": self.pid,
            "instance_id": self.instance_id,
            "handoff_supported": True,
            "port": self.port,
        }

    def allowed_hosts(self) -> frozenset[str]:
        """Host header values a browser on this machine sends for this daemon (DNS-rebinding guard)."""
        configured = f"[{self.settings.host}]" if ":" in self.settings.host else self.settings.host
        names = {"127.0.0.1", "localhost", "[::1]", configured}
        return frozenset(f"{name}:{self.port}" for name in names)

    def host_allowed(self, request: web.Request) -> bool:
        """The Host header names this daemon; on its Unix socket (no browser reaches it) any loopback name does."""
        host = request.headers.get("Host")
        if host in self.allowed_hosts():
            return True
        sock = request.transport.get_extra_info("socket") if request.transport is not None else None
        return sock is not None and sock.family == socket.AF_UNIX and host in ("localhost", "127.0.0.1")

    def allowed_origins(self) -> frozenset[str]:
        return frozenset(f"http://{host}" for host in self.allowed_hosts())


DAEMON = web.AppKey("daemon", Daemon)


def target_of(request: web.Request) -> Target:
    """The repository a request selects: the repo header, the project id in its path, or both."""
    path = request.headers.get(REPO_HEADER) or None
    return Target(path=path, project_id=request.match_info.get("project_id"))


def json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    try:
        body = compact(payload).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate the client sent (a non-UTF-8 header byte, a "\udcff"
        # escape in its JSON) echoed in a message: spell it out instead.
        body = compact(_encodable(payload)).encode("utf-8")
    return web.Response(
        body=body, status=status, content_type="application/json", charset="utf-8", headers=headers
    )


def _encodable(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encodable(v) for v in value]
    return value
