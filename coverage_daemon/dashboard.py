"""The dashboard's HTTP side: the page, its assets, the session it signs in with, its data and events.

The page (``static/``) is plain HTML, CSS and JavaScript shipped in the
package, served at ``/`` under its own Content-Security-Policy: scripts,
styles and connections from this daemon only, no inline script. It reads one
bounded projection, ``GET /api/dashboard``, and listens to
``GET /api/dashboard/events``: every ``COVERAGE_MCP_DASHBOARD_REFRESH_S``
seconds the server compares the project's revision and sends a ``refresh``
event only when it changed. The page keeps that stream open only while its tab
is visible and never polls.

Its reads are rows of the operation table (``coverage_core.operations.dashboard_view``):
``GET /api/dashboard``, ``/api/dashboard/file`` and ``/api/dashboard/run`` are
thin aliases of the ``dashboard``, ``dashboard_file`` and ``dashboard_run``
rows (``project=`` picks the project, the rest of the query string is the
row's arguments, coerced by its schema, the row's principals checked from the
request), and the event stream reads the ``dashboard_revision`` row; the same
rows answer at ``/api/projects/{id}/ops/{name}``.

Signing in (``auth.BrowserSessions``): ``POST /api/dashboard/ticket`` (admin:
the CLI) mints a one-time ticket; ``GET /session?ticket=...`` redeems it for
an HttpOnly, SameSite=Strict cookie and sends the browser on to ``/``.
The page's Approve is the ``command_approve`` row
(``POST /api/projects/{id}/ops/command_approve``), which admits a session
only with its CSRF token (recorded ``via dashboard``, by the daemon's user);
no client token and no MCP call can approve.
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from functools import cache
from importlib import resources
from typing import Any

from aiohttp import web

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.operations.dashboard_view import SELECTION as CHOICES
from coverage_core.operations.table import OPERATIONS

from . import dashboard_streams
from .auth import CSRF_HEADER, SESSION_COOKIE, SESSION_TTL_S, TICKET_TTL_S
from .projects import Target
from .rest import query_arguments
from .state import DAEMON, json_response

PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
ASSETS = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}
# How long one stream lasts: then the browser reconnects by itself (``retry``), its session checked again.
# Streams share one revision check per project and are bounded (``dashboard_streams``).
STREAM_MAX_S = 3600.0
STREAM_RETRY_MS = 2000
_ID = "0123456789abcdef"
# What the page's address and GET /api/dashboard select: the project, ordinary and composite snapshots.
SELECTION = frozenset({"project", *CHOICES})


@cache
def asset_text(name: str) -> str:
    return resources.files("coverage_daemon").joinpath("static", name).read_text("utf-8")


def _page_headers() -> dict[str, str]:
    return {"Content-Security-Policy": PAGE_CSP}


# -- signing in -------------------------------------------------------------------------------


def dashboard_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


async def mint_ticket(request: web.Request) -> web.Response:
    """POST /api/dashboard/ticket (admin): a one-time sign-in link for ``coverage-mcp dashboard``."""
    """``?project=ID`` (the repository the command ran in) goes into the link: the page opens on that project."""
    _no_query(request, frozenset({"project"}))
    project_id = _project_param(request)
    daemon = request.app[DAEMON]
    ticket = daemon.authorizer.sessions.mint_ticket()
    url = f"{dashboard_url(daemon.settings.host, daemon.port)}/session?ticket={ticket}"
    if project_id is not None:
        url += f"&project={project_id}"
    return json_response({"data": {"url": url, "expires_in_s": int(TICKET_TTL_S)}}, 201)


_SIGNED_IN = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={target}">
<link rel="icon" href="data:,"><title>coverage-mcp: signed in</title></head>
<body><p>Signed in. <a href="{target}">Open the dashboard</a>.</p></body></html>
"""


async def start_session(request: web.Request) -> web.Response:
    """GET /session?ticket=...: spend the ticket, set the session cookie, go on to the page.

    A page that refreshes to ``/`` rather than a redirect: a SameSite=Strict
    cookie is not sent on a redirect that a file:// page started, and is on a
    navigation this origin starts.
    """
    if set(request.query) - {"ticket", "project"} or any(
        len(request.query.getall(k, [])) > 1 for k in request.query
    ):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "GET /session takes one ticket (and one project) parameter",
            "Open the link `coverage-mcp dashboard` wrote, unchanged.",
        )
    project_id = _project_param(request)
    cookie, _csrf = request.app[DAEMON].authorizer.sessions.redeem(request.query.get("ticket"))
    target = "/" if project_id is None else f"/?project={project_id}"
    response = web.Response(
        text=_SIGNED_IN.format(target=target),
        content_type="text/html",
        charset="utf-8",
        headers=_page_headers(),
    )
    response.set_cookie(
        SESSION_COOKIE, cookie, httponly=True, samesite="Strict", path="/", max_age=int(SESSION_TTL_S)
    )
    return response


# -- the page ---------------------------------------------------------------------------------


async def page(request: web.Request) -> web.Response:
    """GET /: the dashboard page, with this session's CSRF token for its writes."""
    _no_query(request, allowed=SELECTION)
    csrf = request.app[DAEMON].authorizer.sessions.session_of(request) or ""
    text = asset_text("index.html").replace("{{csrf}}", html.escape(csrf, quote=True))
    return web.Response(text=text, content_type="text/html", charset="utf-8", headers=_page_headers())


async def asset(request: web.Request) -> web.Response:
    _no_query(request)
    name = request.path.lstrip("/")
    return web.Response(
        text=asset_text(name), content_type=ASSETS[name], charset="utf-8", headers=_page_headers()
    )


def _no_query(request: web.Request, allowed: frozenset[str] = frozenset()) -> None:
    unknown = set(request.query) - allowed
    if unknown:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown query parameter(s): {', '.join(sorted(unknown))}",
            f"Allowed here: {', '.join(sorted(allowed)) or 'none'}.",
        )
    for key in request.query:
        if len(request.query.getall(key)) > 1:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"query parameter {key!r} is given more than once",
                "Give each parameter once.",
            )


# -- the data ---------------------------------------------------------------------------------


def _checked(key: str, value: str | None, limit: int) -> str | None:
    if value is None or value == "":
        return None
    if len(value) > limit or "\x00" in value:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{key} is not a valid value",
            f"Pass {key} as the page does (at most {limit} characters).",
            {"argument": key},
        )
    return value


def _project_param(request: web.Request) -> str | None:
    return _project_of(request.query.get("project"))


def _project_of(value: str | None) -> str | None:
    """A ``project`` parameter, checked to be a project id (16 hex digits), or None."""
    wanted = _checked("project", value, 16)
    if wanted is not None and (len(wanted) != 16 or any(c not in _ID for c in wanted)):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"project {wanted!r} is not a project id",
            "Pass a 16-hex-digit id from the dashboard's project list.",
            {"argument": "project"},
        )
    return wanted


async def _project_id(request: web.Request, wanted: str | None) -> str:
    """The project ``wanted`` names (a checked ``project`` parameter), or the project most recently used
    when there is none."""
    if wanted is not None:
        return wanted
    daemon = request.app[DAEMON]
    records = await daemon.projects.run(daemon.registry.all)
    if not records:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            "no project is known to this daemon yet",
            "Import a report (`coverage-mcp ingest REPORT` in a checkout), then reload.",
        )
    return max(records, key=lambda r: r.last_seen).project_id


async def _projects(request: web.Request) -> list[dict[str, Any]]:
    daemon = request.app[DAEMON]
    records = await daemon.projects.run(daemon.registry.all)
    return [{"project_id": r.project_id, "checkout_path": r.checkout_path} for r in records][:200]


async def _row(request: web.Request, name: str) -> dict[str, Any]:
    """An alias of the row ``name``: ``project=`` picks the project, the rest of the query string is the
    row's arguments (coerced by its schema, refused by its validator); the row admits the request's
    principals or refuses it. The row's envelope."""
    daemon = request.app[DAEMON]
    args = query_arguments(request, OPERATIONS[name].input_schema)
    project_id = await _project_id(request, _project_of(args.pop("project", None)))
    return await daemon.projects.call(
        Target(project_id=project_id), name, args, principals=daemon.authorizer.principals(request)
    )


async def data(request: web.Request) -> web.Response:
    """GET /api/dashboard?project=&suite=&current=&baseline=&composite=&composite_baseline=&order=: the
    dashboard row, with the projects to switch between and the stream's refresh period."""
    answer = await _row(request, "dashboard")
    answer["data"]["projects"] = await _projects(request)
    answer["data"]["refresh_s"] = request.app[DAEMON].settings.dashboard_refresh_s
    return json_response(answer)


async def file_source(request: web.Request) -> web.Response:
    """GET /api/dashboard/file?project=&snapshot=&file=: the dashboard_file row (the drill-down)."""
    return json_response(await _row(request, "dashboard_file"))


async def run_logs(request: web.Request) -> web.Response:
    """GET /api/dashboard/run?project=&run=: the dashboard_run row (a run's status and first page of logs)."""
    return json_response(await _row(request, "dashboard_run"))


# -- the event stream -------------------------------------------------------------------------


async def events(request: web.Request) -> web.StreamResponse:
    """GET /api/dashboard/events?project=: ``revision`` once, then ``refresh`` whenever it changes (the
    dashboard_revision row, read as the request's principals)."""
    _no_query(request, frozenset({"project"}))
    daemon = request.app[DAEMON]
    project_id = await _project_id(request, _project_param(request))
    target = Target(project_id=project_id)
    principals = daemon.authorizer.principals(request)

    async def current() -> str:
        answer = await daemon.projects.call(target, "dashboard_revision", {}, principals=principals)
        return str(answer["data"]["revision"])

    seen = await current()
    streams, shared = daemon.streams, dashboard_streams.hub(daemon)
    admitted = shared.admit(
        request.cookies.get(SESSION_COOKIE, "")
    )  # 429 past a cap, before anything is sent
    watch = shared.follow(project_id, seen, current)
    streams.open += 1
    try:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
        )
        await response.prepare(request)
        await response.write(
            f"retry: {STREAM_RETRY_MS}\n".encode()
            + _event("revision", {"project_id": project_id, "revision": seen})
        )
        ends = time.monotonic() + STREAM_MAX_S
        quiet = dashboard_streams.keepalive_s(daemon.settings.dashboard_refresh_s)
        stop = asyncio.ensure_future(daemon.stop.wait())
        try:
            while not daemon.stop.is_set() and time.monotonic() < ends:
                transport = request.transport
                if transport is None or transport.is_closing():
                    break
                if watch.revision != seen:
                    seen = watch.revision
                    await response.write(_event("refresh", {"project_id": project_id, "revision": seen}))
                    continue
                changed = asyncio.ensure_future(watch.changed.wait())
                try:
                    done, _ = await asyncio.wait(
                        {changed, stop}, timeout=quiet, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    changed.cancel()
                if not done:
                    await response.write(b": unchanged\n\n")  # a keep-alive; a closed connection fails here
        finally:
            stop.cancel()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        shared.unfollow(project_id, watch)
        shared.release(admitted)
        streams.open -= 1
        streams.closed += 1
    return response


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


__all__ = [
    "CSRF_HEADER",
    "PAGE_CSP",
    "asset",
    "data",
    "events",
    "file_source",
    "mint_ticket",
    "page",
    "run_logs",
    "start_session",
]
