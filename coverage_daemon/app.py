"""The aiohttp application: one route table, the loopback guard, hardened responses.

``ROUTES`` is the only declaration of the HTTP surface. ``guard`` runs before
every handler: it refuses a Host or Origin that is not this daemon on loopback
(403, against DNS rebinding), bounds the request by
``COVERAGE_MCP_HTTP_TIMEOUT_S``, and turns any failure into the canonical error
body (REST) or a JSON-RPC error (the MCP endpoints). Every response, errors
included, carries restrictive headers and closes its connection: keep-alive
is off so idle clients cannot hold server tasks, and there is never a CORS
header.
"""

from __future__ import annotations

import asyncio
import hmac
import logging

from aiohttp import web
from aiohttp.typedefs import Handler

from coverage_core.errors import CoverageError, ErrorCode

from . import mcp_http, rest
from .errors_http import error_body, status_of
from .identity import CAPABILITY_HEADER
from .mcp import INTERNAL_ERROR, INVALID_REQUEST, RpcError, error_response
from .state import DAEMON, Daemon, json_response

log = logging.getLogger("coverage_daemon")

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


async def health(request: web.Request) -> web.Response:
    return json_response(request.app[DAEMON].health())


async def shutdown(request: web.Request) -> web.Response:
    """Stop gracefully, for the holder of the capability written in the locked daemon.lock only."""
    daemon = request.app[DAEMON]
    offered = request.headers.get(CAPABILITY_HEADER, "")
    if not hmac.compare_digest(offered.encode(), daemon.capability.encode()):
        return json_response(error_body(CoverageError(
            ErrorCode.INVALID_ARGUMENT, "shutdown needs this daemon's capability",
            "Use `coverage-mcp stop`, which reads it from the daemon's lock file.",
        )), 403)
    # Answer first: the stop begins once this response has left.
    asyncio.get_running_loop().call_later(0.05, daemon.stop.set)
    return json_response({"stopping": True, "pid": daemon.pid, "instance_id": daemon.instance_id}, 202)


_PROJECT = "/api/projects/{project_id:[0-9a-f]{16}}"
_SNAPSHOT = _PROJECT + "/snapshots/{snapshot_id:snap-[0-9a-f]{1,64}}"

ROUTES = [
    web.get("/health", health),
    web.post("/api/shutdown", shutdown),
    web.post("/mcp", mcp_http.post),
    web.delete("/mcp", mcp_http.delete),
    web.post("/p/{project_id:[0-9a-f]{16}}/mcp", mcp_http.post),
    web.delete("/p/{project_id:[0-9a-f]{16}}/mcp", mcp_http.delete),
    web.get("/api/projects", rest.list_projects),
    web.post("/api/projects", rest.register_project),
    web.get(_PROJECT, rest.get_project),
    web.patch(_PROJECT, rest.patch_project),
    web.get(_PROJECT + "/context", rest.context),
    web.post(_PROJECT + "/review", rest.review),
    web.post(_PROJECT + "/ingest", rest.ingest),
    web.get(_PROJECT + "/snapshots", rest.list_snapshots),
    web.get(_SNAPSHOT, rest.get_snapshot),
    web.get(_SNAPSHOT + "/files", rest.list_files),
    web.get(_SNAPSHOT + "/files/detail", rest.file_detail),
]


def _is_mcp(request: web.Request) -> bool:
    return request.path == "/mcp" or (request.path.startswith("/p/") and request.path.endswith("/mcp"))


def _failure(request: web.Request, status: int, error: CoverageError,
             headers: dict[str, str] | None = None) -> web.Response:
    """An error in the shape the endpoint speaks: JSON-RPC for MCP, the canonical body for REST."""
    if _is_mcp(request):
        code = INTERNAL_ERROR if status >= 500 else INVALID_REQUEST
        answer = error_response(None, RpcError(code, f"{error.message}. {error.suggestion}".strip()))
        return json_response(answer, status, headers)
    return json_response(error_body(error), status, headers)


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    daemon = request.app[DAEMON]
    if request.headers.get("Host") not in daemon.allowed_hosts():
        return _failure(request, 403, CoverageError(
            ErrorCode.INVALID_ARGUMENT, f"Host {request.headers.get('Host')!r} is not this daemon",
            f"Address the daemon as 127.0.0.1:{daemon.port} or localhost:{daemon.port}.",
        ))
    origin = request.headers.get("Origin")
    if origin is not None and origin not in daemon.allowed_origins():
        return _failure(request, 403, CoverageError(
            ErrorCode.INVALID_ARGUMENT, f"Origin {origin!r} may not call this daemon",
            "Only pages served by this daemon itself may call it from a browser.",
        ))
    try:
        async with asyncio.timeout(daemon.settings.http_timeout_s):
            return await handler(request)
    except CoverageError as error:
        return _failure(request, status_of(error), error)
    except TimeoutError:
        return _failure(request, 504, CoverageError(
            ErrorCode.DEADLINE_EXCEEDED,
            f"the request ran longer than COVERAGE_MCP_HTTP_TIMEOUT_S={daemon.settings.http_timeout_s}",
            "Narrow the request, or raise COVERAGE_MCP_HTTP_TIMEOUT_S.",
        ))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = ErrorCode.NOT_FOUND if exc.status == 404 else ErrorCode.INVALID_ARGUMENT
        allow = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        return _failure(request, exc.status, CoverageError(code, f"{exc.reason}: {request.method} {request.path}",
                                                           _HTTP_SUGGESTIONS.get(exc.status, "")), allow)
    except Exception as exc:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return _failure(request, 500, CoverageError(
            ErrorCode.INTERNAL, f"internal error: {type(exc).__name__}",
            "This is a bug in coverage-mcp; the daemon's log (stderr) has the traceback.",
        ))


_HTTP_SUGGESTIONS = {
    404: "See the routes: /health, /mcp, /api/projects[/{id}[/snapshots|/context|/review|/ingest]].",
    405: "Use the method the Allow header names.",
    413: "Send a smaller body, or raise COVERAGE_MCP_HTTP_MAX_BODY_BYTES.",
    415: "Send Content-Type: application/json.",
}


async def _harden(_request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(SECURITY_HEADERS)
    response.headers["Server"] = "coverage-mcp"
    # aiohttp has already chosen the Connection header when this hook runs:
    # close the connection and say so.
    response.headers["Connection"] = "close"
    response.force_close()


def create_app(daemon: Daemon) -> web.Application:
    app = web.Application(client_max_size=daemon.settings.http_max_body_bytes, middlewares=[guard])
    app[DAEMON] = daemon
    app.add_routes(ROUTES)
    app.on_response_prepare.append(_harden)
    return app
