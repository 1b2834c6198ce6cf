"""The REST API under ``/api/projects``: projects, and every declared operation from the one table.

``/api/projects/{id}/ops/{name}`` dispatches any operation of
``coverage_core.operations.table.OPERATIONS`` (POST with a JSON object; GET too for
read-only ones, the query string coerced by the operation's schema), through
``Projects.call`` like MCP's tools: same validation, same envelope, the row's
principals checked against what the request proves. Nothing here re-declares
an operation's arguments; ``POST``/``GET``/``PATCH`` of a project are thin
aliases of the project_settings rows. A ``CoverageError`` raised here becomes
the canonical error body in the app's middleware.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from coverage_core import nesting
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.operations.table import OPERATIONS
from coverage_core.service import admitting
from coverage_core.storage.schema import SCHEMA_REVISION

from .projects import Target
from .state import DAEMON, json_response, target_of

# -- inputs ----------------------------------------------------------------------------


def _no_query(request: web.Request) -> None:
    if request.query:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown query parameter(s): {', '.join(sorted(request.query))}",
            "This route takes no query parameters.",
        )


async def read_object(
    request: web.Request, allowed: frozenset[str] | None = None, *, limit: int | None = None
) -> dict[str, Any]:
    """The JSON object a POST or PATCH carries: at most ``limit`` bytes (default the HTTP body
    limit), unknown keys refused when ``allowed`` is given."""
    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(text="send Content-Type: application/json")
    limit = request.app[DAEMON].settings.http_max_body_bytes if limit is None else limit
    if (request.content_length or 0) > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=request.content_length or 0)
    raw = await request.read()  # bounded by the application's client_max_size as well
    if len(raw) > limit:
        raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=len(raw))
    nesting.check(raw, "the request body")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT, "the request body is not valid JSON", "Send one JSON object."
        ) from None
    if not isinstance(body, dict):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT, "the request body must be a JSON object", "Send one JSON object."
        )
    if allowed is not None and set(body) - allowed:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown field(s): {', '.join(sorted(set(body) - allowed))}",
            f"Allowed here: {', '.join(sorted(allowed))}.",
        )
    return body


def query_arguments(request: web.Request, schema: dict[str, Any]) -> dict[str, Any]:
    """A GET's query string as arguments, each value coerced by its property's schema.

    Integers and booleans are parsed, objects and arrays are JSON text
    (``measurement={"suite":"unit"}``), anything else stays a string; unknown
    names pass through for the operation's validator to refuse.
    """
    properties = schema.get("properties", {})
    out: dict[str, Any] = {}
    for key in request.query:
        values = request.query.getall(key)
        if len(values) > 1:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"query parameter {key!r} is given {len(values)} times",
                "Give each argument once.",
            )
        raw, spec = values[0], properties.get(key, {})
        kind = spec.get("type")
        try:
            if kind == "integer":
                out[key] = int(raw)
            elif kind == "boolean":
                out[key] = {"true": True, "false": False}[raw]
            elif kind in ("object", "array"):
                nesting.check(raw, f"query parameter {key!r}")
                out[key] = json.loads(raw)
            else:
                out[key] = raw
        except (ValueError, KeyError, RecursionError):
            expected = {"integer": "an integer", "boolean": "true or false"}.get(kind, f"a JSON {kind}")
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"{key} must be {expected}, got {raw[:60]!r}",
                f"Pass {key}=<{expected}>, e.g. as the operation's input schema describes.",
                {"argument": key},
            ) from None
    return out


# -- projects ----------------------------------------------------------------------------


async def list_projects(request: web.Request) -> web.Response:
    _no_query(request)
    daemon = request.app[DAEMON]
    records = await daemon.projects.run(daemon.registry.all)
    opened = daemon.projects.open_stores
    projects = [{**r.to_dict(), "open": r.repo_key in opened} for r in records]
    return json_response(
        {
            "context": {"schema_revision": SCHEMA_REVISION, "common_db": str(daemon.settings.common_db)},
            "data": {"projects": projects},
            "page": None,
        }
    )


async def register_project(request: web.Request) -> web.Response:
    """POST /api/projects {"path", "settings"?}: open (and register) a checkout's project; settings at
    creation are the project_settings_update row (the admin capability)."""
    daemon = request.app[DAEMON]
    body = await read_object(request, frozenset({"path", "settings"}))
    path = body.get("path")
    if not isinstance(path, str) or not path:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "path must be an absolute path inside a git checkout",
            'Send {"path": "/abs/path/to/checkout"}.',
        )
    principals = daemon.authorizer.principals(request)
    if "settings" in body:  # refused before anything is opened or registered
        admitting(OPERATIONS["project_settings_update"], principals)
    target = Target(path=path)
    checkout = await daemon.projects.checkout_for(target)
    known = await daemon.projects.run(daemon.registry.get, checkout.project_id) is not None
    if body.get("settings") and known:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"project {checkout.project_id} already exists; settings here apply at creation",
            f'Change them with PATCH /api/projects/{checkout.project_id} {{"settings": {{...}}}}.',
        )
    if "settings" in body:
        name, args = "project_settings_update", {"settings": body["settings"]}
    else:
        name, args = "project_settings", {}
    answer = await daemon.projects.call(target, name, args, principals=principals)
    body_out = await _project_body(request, checkout.project_id, answer["data"]["settings"])
    return json_response(body_out, 200 if known else 201)


async def _project_body(request: web.Request, project_id: str, settings: dict[str, Any]) -> dict[str, Any]:
    daemon = request.app[DAEMON]
    record = await daemon.projects.run(daemon.registry.get, project_id)
    if record is None:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            f"no project {project_id!r} is known to this daemon",
            "List projects with GET /api/projects.",
        )
    return {
        "context": {
            "repo_key": record.repo_key,
            "project_id": project_id,
            "checkout_path": record.checkout_path,
            "schema_revision": SCHEMA_REVISION,
        },
        "data": {"project": {**record.to_dict(), "settings": settings}},
        "page": None,
    }


async def get_project(request: web.Request) -> web.Response:
    """GET /api/projects/{id}: the registry's record and the project_settings row."""
    _no_query(request)
    daemon = request.app[DAEMON]
    answer = await daemon.projects.call(
        target_of(request), "project_settings", {}, principals=daemon.authorizer.principals(request)
    )
    return json_response(
        await _project_body(request, request.match_info["project_id"], answer["data"]["settings"])
    )


async def patch_project(request: web.Request) -> web.Response:
    """PATCH /api/projects/{id} {"settings"}: the project_settings_update row."""
    daemon = request.app[DAEMON]
    body = await read_object(request)
    answer = await daemon.projects.call(
        target_of(request), "project_settings_update", body, principals=daemon.authorizer.principals(request)
    )
    return json_response(
        await _project_body(request, request.match_info["project_id"], answer["data"]["settings"])
    )


# -- the rows ------------------------------------------------------------------------------------


async def operation(request: web.Request) -> web.Response:
    """Any row of the table: POST /ops/{name} with a JSON object, or GET for a read-only one; the row admits
    the principals the request proves (``Authorizer.principals``) or refuses it."""
    daemon = request.app[DAEMON]
    name = request.match_info["name"]
    op = OPERATIONS.get(name)
    if op is None:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            f"unknown operation {name!r}",
            f"Operations: {', '.join(OPERATIONS)}.",
            {"operation": name},
        )
    principals = daemon.authorizer.principals(request)
    admitting(op, principals)  # refused before its arguments are even read
    if request.method == "GET":
        if not op.read_only:
            raise web.HTTPMethodNotAllowed("GET", ["POST"])
        args = query_arguments(request, op.input_schema)
    else:
        _no_query(request)
        args = await read_object(request)
    answer = await daemon.projects.call(target_of(request), name, args, principals=principals)
    # A row that stored something new is 201; a read, another write, or one that found it stored already, 200.
    created = op.stores_new and not answer["data"].get("duplicate", False)
    return json_response(answer, 201 if created else 200)
