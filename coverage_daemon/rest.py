"""The REST API under ``/api/projects``: the same envelopes as MCP, the same records as the library.

Operations that ``coverage_core.service`` declares (context, review, ingest)
go through ``Service.call`` like MCP's tools; plain reads (snapshot lists,
files, file detail) call the store with a pooled connection and wrap the
library's records in the same ``{context, data, page}`` envelope. A
``CoverageError`` raised here becomes the canonical error body in the app's
middleware. Query strings and bodies refuse unknown keys.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.model import FileDetail, converter, snapshot_to_dict
from coverage_core.project import Project
from coverage_core.service import envelope_for
from coverage_core.storage.schema import SCHEMA_REVISION

from .auth import forbidden
from .identity import CAPABILITY_HEADER
from .projects import Projects, Target, validate_project_settings
from .state import DAEMON, json_response, target_of

MAX_PAGE = 1000
DEFAULT_PAGE = 100


def envelope(project: Project, data: dict[str, Any], *, suite: str | None, page: dict[str, Any] | None,
             started: float, rows: int) -> dict[str, Any]:
    """The service's envelope around a plain store read."""
    return envelope_for(project, data, page, suite=suite, started=started, rows=rows)


async def snapshot_envelope(projects: Projects, target: Target, snapshot_id: str) -> dict[str, Any]:
    """One snapshot's record and totals (also the MCP resource ``coverage://snapshot/{id}/summary``)."""
    started = time.perf_counter()

    def read(project: Project, con: Any) -> dict[str, Any]:
        snap = project.store.snapshot(snapshot_id, con)
        return envelope(project, {"snapshot": snapshot_to_dict(snap)}, suite=snap.suite, page=None,
                        started=started, rows=1)

    return await projects.read(target, read)


# -- inputs ----------------------------------------------------------------------------

def _query(request: web.Request, allowed: Mapping[str, type]) -> dict[str, Any]:
    unknown = sorted(set(request.query) - set(allowed))
    if unknown:
        raise CoverageError(ErrorCode.INVALID_ARGUMENT, f"unknown query parameter(s): {', '.join(unknown)}",
                            f"Allowed here: {', '.join(allowed) or 'none'}.")
    out: dict[str, Any] = {}
    for key, kind in allowed.items():
        if key in request.query:
            raw = request.query[key]
            if kind is int:
                try:
                    out[key] = int(raw)
                except ValueError:
                    raise CoverageError(ErrorCode.INVALID_ARGUMENT, f"{key} must be an integer, got {raw!r}",
                                        f"Pass {key}=<integer>.") from None
            else:
                out[key] = raw
    return out


def _bounded(value: int | None, name: str, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    if not low <= value <= high:
        raise CoverageError(ErrorCode.INVALID_ARGUMENT, f"{name}={value} is out of range [{low}, {high}]",
                            f"Pass {name} between {low} and {high}.")
    return value


async def _body(request: web.Request, allowed: frozenset[str] | None = None) -> dict[str, Any]:
    """The JSON object a POST or PATCH carries; unknown keys refused when ``allowed`` is given."""
    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(text="send Content-Type: application/json")
    limit = request.app[DAEMON].settings.http_max_body_bytes
    if (request.content_length or 0) > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=request.content_length or 0)
    raw = await request.read()
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise CoverageError(ErrorCode.INVALID_ARGUMENT, "the request body is not valid JSON",
                            "Send one JSON object.") from None
    if not isinstance(body, dict):
        raise CoverageError(ErrorCode.INVALID_ARGUMENT, "the request body must be a JSON object",
                            "Send one JSON object.")
    if allowed is not None and set(body) - allowed:
        raise CoverageError(ErrorCode.INVALID_ARGUMENT,
                            f"unknown field(s): {', '.join(sorted(set(body) - allowed))}",
                            f"Allowed here: {', '.join(sorted(allowed))}.")
    return body


# -- projects ----------------------------------------------------------------------------

async def list_projects(request: web.Request) -> web.Response:
    _query(request, {})
    daemon = request.app[DAEMON]
    records = await daemon.projects.run(daemon.registry.all)
    opened = daemon.projects.open_stores
    projects = [{**r.to_dict(), "open": r.repo_key in opened} for r in records]
    return json_response({"context": {"schema_revision": SCHEMA_REVISION, "common_db": str(daemon.settings.common_db)},
                          "data": {"projects": projects}, "page": None})


async def register_project(request: web.Request) -> web.Response:
    """POST /api/projects {"path", "settings"?}: open (and register) a checkout's project."""
    daemon = request.app[DAEMON]
    body = await _body(request, frozenset({"path", "settings"}))
    path = body.get("path")
    if not isinstance(path, str) or not path:
        raise CoverageError(ErrorCode.INVALID_ARGUMENT, "path must be an absolute path inside a git checkout",
                            "Send {\"path\": \"/abs/path/to/checkout\"}.")
    if "settings" in body:
        _require_admin(request, "settings")
    overrides = validate_project_settings(body["settings"]) if "settings" in body else None
    target = Target(path=path)
    checkout = await daemon.projects.checkout_for(target)
    known = await daemon.projects.run(daemon.registry.get, checkout.project_id) is not None
    if overrides and known:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"project {checkout.project_id} already exists; settings here apply at creation",
            f"Change them with PATCH /api/projects/{checkout.project_id} {{\"settings\": {{...}}}}.",
        )
    settings = (await daemon.projects.update_settings(target, overrides) if overrides
                else await daemon.projects.settings_of(target))
    return json_response(await _project_body(request, checkout.project_id, settings), 200 if known else 201)


async def _project_body(request: web.Request, project_id: str, settings: dict[str, Any]) -> dict[str, Any]:
    daemon = request.app[DAEMON]
    record = await daemon.projects.run(daemon.registry.get, project_id)
    if record is None:
        raise CoverageError(ErrorCode.NOT_FOUND, f"no project {project_id!r} is known to this daemon",
                            "List projects with GET /api/projects.")
    return {"context": {"repo_key": record.repo_key, "project_id": project_id, "checkout_path": record.checkout_path,
                        "schema_revision": SCHEMA_REVISION},
            "data": {"project": {**record.to_dict(), "settings": settings}}, "page": None}


async def get_project(request: web.Request) -> web.Response:
    _query(request, {})
    target = target_of(request)
    settings = await request.app[DAEMON].projects.settings_of(target)
    return json_response(await _project_body(request, request.match_info["project_id"], settings))


async def patch_project(request: web.Request) -> web.Response:
    body = await _body(request, frozenset({"settings"}))
    settings = await request.app[DAEMON].projects.update_settings(target_of(request), body.get("settings"))
    return json_response(await _project_body(request, request.match_info["project_id"], settings))


# -- snapshots and files ---------------------------------------------------------------------

async def list_snapshots(request: web.Request) -> web.Response:
    q = _query(request, {"suite": str, "branch": str, "commit": str, "limit": int})
    limit = _bounded(q.get("limit"), "limit", DEFAULT_PAGE, 1, MAX_PAGE)
    started = time.perf_counter()

    def read(project: Project, con: Any) -> dict[str, Any]:
        snaps = project.store.snapshots(suite=q.get("suite"), branch=q.get("branch"), commit=q.get("commit"),
                                        limit=limit + 1, con=con)
        shown = snaps[:limit]
        return envelope(project, {"snapshots": [snapshot_to_dict(s) for s in shown]}, suite=q.get("suite"),
                        page={"limit": limit, "returned": len(shown), "truncated": len(snaps) > limit},
                        started=started, rows=len(snaps))

    return json_response(await request.app[DAEMON].projects.read(target_of(request), read))


async def get_snapshot(request: web.Request) -> web.Response:
    _query(request, {})
    daemon = request.app[DAEMON]
    return json_response(await snapshot_envelope(daemon.projects, target_of(request),
                                                 request.match_info["snapshot_id"]))


async def list_files(request: web.Request) -> web.Response:
    q = _query(request, {"offset": int, "limit": int, "order": str})
    offset = _bounded(q.get("offset"), "offset", 0, 0, 2**31)
    limit = _bounded(q.get("limit"), "limit", DEFAULT_PAGE, 1, MAX_PAGE)
    snapshot_id = request.match_info["snapshot_id"]
    started = time.perf_counter()

    def read(project: Project, con: Any) -> dict[str, Any]:
        page = project.store.files(snapshot_id, offset=offset, limit=limit, order=q.get("order", "path"), con=con)
        following = offset + len(page.files)
        return envelope(
            project,
            {"snapshot_id": page.snapshot_id, "total": page.total,
             "files": [converter.unstructure(f) for f in page.files]},
            suite=None, started=started, rows=len(page.files),
            page={"offset": offset, "limit": limit, "next_offset": following if following < page.total else None},
        )

    return json_response(await request.app[DAEMON].projects.read(target_of(request), read))


def detail_to_dict(detail: FileDetail) -> dict[str, Any]:
    """A file's detail as JSON: each table as named columns of equal length."""
    def columns(table: Mapping[str, Any]) -> dict[str, list[Any]]:
        return {name: values.tolist() for name, values in table.items()}

    return {
        "snapshot_id": detail.snapshot_id,
        "summary": converter.unstructure(detail.summary),
        "lines": columns(detail.lines),
        "branches": columns(detail.branches),
        "functions": columns(detail.functions),
        "regions": columns(detail.regions),
        "tests": list(detail.tests),
    }


async def file_detail(request: web.Request) -> web.Response:
    q = _query(request, {"path": str})
    if not q.get("path"):
        raise CoverageError(ErrorCode.INVALID_ARGUMENT, "path is required",
                            "Pass ?path=<repository-relative path> as listed by the files endpoint.")
    snapshot_id = request.match_info["snapshot_id"]
    started = time.perf_counter()

    def read(project: Project, con: Any) -> dict[str, Any]:
        detail = project.store.file_detail(snapshot_id, q["path"], con=con)
        rows = len(next(iter(detail.lines.values()), ()))
        return envelope(project, detail_to_dict(detail), suite=None, page=None, started=started, rows=rows)

    return json_response(await request.app[DAEMON].projects.read(target_of(request), read))


# -- declared operations -------------------------------------------------------------------

async def context(request: web.Request) -> web.Response:
    args = _query(request, {"max_words": int, "cursor": str})
    return json_response(await request.app[DAEMON].projects.call(target_of(request), "project_context", args))


async def review(request: web.Request) -> web.Response:
    args = await _body(request)
    return json_response(await request.app[DAEMON].projects.call(target_of(request), "coverage_review", args))


async def ingest(request: web.Request) -> web.Response:
    """coverage_import; with the admin capability, the owner's import (any report path, path maps)."""
    args = await _body(request)
    daemon = request.app[DAEMON]
    if request.headers.get(CAPABILITY_HEADER) is None:
        answer = await daemon.projects.call(target_of(request), "coverage_import", args)
    else:
        _require_admin(request, "the owner's import")
        answer = await daemon.projects.owner_import(target_of(request), args)
    return json_response(answer, 200 if answer["data"].get("duplicate") else 201)


def _require_admin(request: web.Request, what: str) -> None:
    if not request.app[DAEMON].authorizer.admin_ok(request):
        raise forbidden(f"{what} needs the daemon's admin capability",
                        "Use the coverage-mcp command line (it reads the capability from the daemon's lock file), "
                        "or drop the option.")
