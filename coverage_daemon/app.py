"""The aiohttp application: one route table, the loopback guard, hardened responses.

``ROUTES`` is the only declaration of the HTTP surface and of who may use
each route. ``guard`` runs before every handler: it refuses a Host or Origin
that is not this daemon on loopback (403, against DNS rebinding), a caller
without the route's secret (403, ``auth``), bounds the request by
``COVERAGE_MCP_HTTP_TIMEOUT_S``, and turns any failure into the canonical error
body (REST) or a JSON-RPC error (the MCP endpoints). Every response, errors
included, carries restrictive headers and closes its connection: keep-alive
is off so idle clients cannot hold server tasks, and there is never a CORS
header.
"""

from __future__ import annotations

import asyncio
import logging

import attrs
from aiohttp import web
from aiohttp.typedefs import Handler

from coverage_core import faults
from coverage_core.errors import CoverageError, ErrorCode

from . import dashboard, mcp_http, rest
from .answer_context import attach_context
from .auth import Access
from .errors_http import error_body, status_of
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
    """Stop gracefully (an admin route: the capability written in the locked daemon.lock)."""
    daemon = request.app[DAEMON]
    # Answer first: the stop begins once this response has left.
    asyncio.get_running_loop().call_later(0.05, daemon.stop.set)
    return json_response({"stopping": True, "pid": daemon.pid, "instance_id": daemon.instance_id}, 202)


@attrs.frozen
class Route:
    method: str
    path: str
    handler: Handler
    access: Access
    # A long-lived response (the dashboard's event stream): not cut off by COVERAGE_MCP_HTTP_TIMEOUT_S.
    streaming: bool = False


_PROJECT = "/api/projects/{project_id:[0-9a-f]{16}}"
_OPERATION = _PROJECT + "/ops/{name:[a-z_]{1,64}}"
_CLIENT, _ADMIN, _ROW = Access.CLIENT, Access.ADMIN, Access.ROW

# The HTTP surface and who may use each route (``auth``). Every row of the operation table is reached
# through ``_OPERATION`` and decides who may call it (``Access.ROW``: the guard only refuses a request with
# no credential at all); nothing here names one. A project's POST, GET and PATCH are aliases of its
# settings rows.
ROUTES: tuple[Route, ...] = (
    Route("GET", "/health", health, Access.PUBLIC),
    Route("POST", "/api/shutdown", shutdown, _ADMIN),
    Route("POST", "/mcp", mcp_http.post, _CLIENT),
    Route("DELETE", "/mcp", mcp_http.delete, _CLIENT),
    Route("POST", "/p/{project_id:[0-9a-f]{16}}/mcp", mcp_http.post, _CLIENT),
    Route("DELETE", "/p/{project_id:[0-9a-f]{16}}/mcp", mcp_http.delete, _CLIENT),
    Route("GET", "/api/projects", rest.list_projects, _CLIENT),
    Route("POST", "/api/projects", rest.register_project, _CLIENT),
    Route("GET", _PROJECT, rest.get_project, _CLIENT),
    Route("PATCH", _PROJECT, rest.patch_project, _ROW),
    Route("GET", _OPERATION, rest.operation, _ROW),
    Route("POST", _OPERATION, rest.operation, _ROW),
    # The dashboard (coverage_daemon.dashboard): a browser session, started by a one-time link. Its
    # Approve is the command_approve row (a session with its CSRF token).
    Route("POST", "/api/dashboard/ticket", dashboard.mint_ticket, _ADMIN),
    Route("GET", "/session", dashboard.start_session, Access.TICKET),
    Route("GET", "/", dashboard.page, Access.SESSION),
    Route("GET", "/dashboard.js", dashboard.asset, Access.SESSION),
    Route("GET", "/dashboard.css", dashboard.asset, Access.SESSION),
    # Its reads are aliases of the dashboard rows: past the guard (a session or the client token; without
    # either, the page's sign-in advice), the row decides what the request proves.
    Route("GET", "/api/dashboard", dashboard.data, Access.SESSION_READ),
    Route("GET", "/api/dashboard/file", dashboard.file_source, Access.SESSION_READ),
    Route("GET", "/api/dashboard/run", dashboard.run_logs, Access.SESSION_READ),
    Route("GET", "/api/dashboard/events", dashboard.events, Access.SESSION, streaming=True),
)
ACCESS = web.AppKey("access", dict)
STREAMING = web.AppKey("streaming", set)


def _access(request: web.Request) -> Access:
    """The matched route's level; an unknown path or method needs the client token too (no route probing)."""
    route = request.match_info.route
    known = request.app[ACCESS].get((route.method, getattr(route.resource, "canonical", None)))
    return known or Access.CLIENT


def _is_mcp(request: web.Request) -> bool:
    return request.path == "/mcp" or (request.path.startswith("/p/") and request.path.endswith("/mcp"))


def _failure(
    request: web.Request, status: int, error: CoverageError, headers: dict[str, str] | None = None
) -> web.Response:
    """An error in the shape the endpoint speaks: JSON-RPC for MCP, the canonical body for REST."""
    if _is_mcp(request):
        code = INTERNAL_ERROR if status >= 500 else INVALID_REQUEST
        answer = error_response(
            None, RpcError(code, f"{error.code.value}: {error.message}. {error.suggestion}".strip())
        )
        return json_response(answer, status, headers)
    return json_response(error_body(error), status, headers)


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    daemon = request.app[DAEMON]
    if not daemon.host_allowed(request):
        return _failure(
            request,
            403,
            CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"Host {request.headers.get('Host')!r} is not this daemon",
                f"Address the daemon as 127.0.0.1:{daemon.port} or localhost:{daemon.port}.",
            ),
        )
    origin = request.headers.get("Origin")
    if origin is not None and origin not in daemon.allowed_origins():
        return _failure(
            request,
            403,
            CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"Origin {origin!r} may not call this daemon",
                "Only pages served by this daemon itself may call it from a browser.",
            ),
        )
    daemon.touch()
    authorized = False
    try:
        daemon.authorizer.check(request, _access(request))
        authorized = True  # from here on an error answer carries its context
        route = request.match_info.route
        streaming = (route.method, getattr(route.resource, "canonical", None)) in request.app[STREAMING]
        async with asyncio.timeout(None if streaming else daemon.settings.http_timeout_s):
            return await handler(request)
    except CoverageError as error:
        return _failure(request, status_of(error), _context_if(authorized, error))
    except TimeoutError:
        return _failure(
            request,
            504,
            _context_if(
                authorized,
                CoverageError(
                    ErrorCode.DEADLINE_EXCEEDED,
                    f"the request ran longer than COVERAGE_MCP_HTTP_TIMEOUT_S={daemon.settings.http_timeout_s}",
                    "Narrow the request, or raise COVERAGE_MCP_HTTP_TIMEOUT_S.",
                ),
            ),
        )
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = ErrorCode.NOT_FOUND if exc.status == 404 else ErrorCode.INVALID_ARGUMENT
        allow = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        return _failure(
            request,
            exc.status,
            _context_if(
                authorized,
                CoverageError(
                    code,
                    f"{exc.reason}: {request.method} {request.path}",
                    _HTTP_SUGGESTIONS.get(exc.status, ""),
                ),
            ),
            allow,
        )
    except Exception as exc:
        coded = faults.classify(exc)  # a full disk (token rotate, sign-in, compaction), a damaged store
        if coded is not None:
            log.warning("%s %s: %s", request.method, request.path, coded.message)
            return _failure(request, status_of(coded), _context_if(authorized, coded))
        log.exception("unhandled error on %s %s", request.method, request.path)
        return _failure(
            request,
            500,
            _context_if(
                authorized,
                CoverageError(
                    ErrorCode.INTERNAL,
                    f"internal error: {type(exc).__name__}",
                    "This is a bug in coverage-mcp; the daemon's log (stderr) has the traceback.",
                ),
            ),
        )


def _context_if(authorized: bool, error: CoverageError) -> CoverageError:
    """``error`` with its answer's context for a caller the authorizer admitted; as it is for any other."""
    return attach_context(error) if authorized else error


_HTTP_SUGGESTIONS = {
    404: "See the routes: /health, /mcp, /api/projects[/{id}[/ops/{operation}]].",
    405: "Use the method the Allow header names.",
    413: "Send a smaller body, or raise COVERAGE_MCP_HTTP_MAX_BODY_BYTES.",
    415: "Send Content-Type: application/json.",
}


async def _harden(_request: web.Request, response: web.StreamResponse) -> None:
    # The dashboard's page sets its own, still strict, policy (dashboard.PAGE_CSP); nothing else does.
    page_policy = response.headers.get("Content-Security-Policy")
    response.headers.update(SECURITY_HEADERS)
    if page_policy == dashboard.PAGE_CSP:
        response.headers["Content-Security-Policy"] = page_policy
    response.headers["Server"] = "coverage-mcp"
    # aiohttp has already chosen the Connection header when this hook runs:
    # close the connection and say so.
    response.headers["Connection"] = "close"
    response.force_close()


def create_app(daemon: Daemon) -> web.Application:
    app = web.Application(client_max_size=daemon.settings.http_max_body_bytes, middlewares=[guard])
    app[DAEMON] = daemon
    app[ACCESS] = {}
    app[STREAMING] = set()
    for route in ROUTES:
        resource = app.router.add_resource(route.path)
        resource.add_route(route.method, route.handler)
        app[ACCESS][(route.method, resource.canonical)] = route.access
        if route.streaming:
            app[STREAMING].add((route.method, resource.canonical))
    app.on_response_prepare.append(_harden)
    return app
