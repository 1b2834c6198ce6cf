"""The REST API under ``/api/projects``: projects, and every declared operation from the one table.

``/api/projects/{id}/ops/{name}`` dispatches any operation of
``coverage_core.service.OPERATIONS`` (POST with a JSON object; GET too for
read-only ones, the query string coerced by the operation's schema), through
``Projects.call`` like MCP's tools: same validation, same envelope. Nothing
here re-declares an operation's arguments. ``owner-import`` is the store
owner's import (an admin route). A ``CoverageError`` raised here becomes the
canonical error body in the app's middleware.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from coverage_core import nesting
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.project import Project
from coverage_core.service import OPERATIONS
from coverage_core.storage import project_settings
from coverage_core.storage.schema import SCHEMA_REVISION

from .auth import forbidden
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
    """POST /api/projects {"path", "settings"?}: open (and register) a checkout's project."""
    daemon = request.app[DAEMON]
    body = await read_object(request, frozenset({"path", "settings"}))
    path = body.get("path")
    if not isinstance(path, str) or not path:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "path must be an absolute path inside a git checkout",
            'Send {"path": "/abs/path/to/checkout"}.',
        )
    if "settings" in body:
        _require_admin(request, "settings")
    overrides = project_settings.validate(body["settings"]) if "settings" in body else None
    target = Target(path=path)
    checkout = await daemon.projects.checkout_for(target)
    known = await daemon.projects.run(daemon.registry.get, checkout.project_id) is not None
    if overrides and known:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"project {checkout.project_id} already exists; settings here apply at creation",
            f'Change them with PATCH /api/projects/{checkout.project_id} {{"settings": {{...}}}}.',
        )
    settings = (
        await daemon.projects.update_settings(target, overrides)
        if overrides
        else await daemon.projects.settings_of(target)
    )
    return json_response(await _project_body(request, checkout.project_id, settings), 200 if known else 201)


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
    _no_query(request)
    target = target_of(request)
    settings = await request.app[DAEMON].projects.settings_of(target)
    return json_response(await _project_body(request, request.match_info["project_id"], settings))


async def patch_project(request: web.Request) -> web.Response:
    body = await read_object(request, frozenset({"settings"}))
    settings = await request.app[DAEMON].projects.update_settings(target_of(request), body.get("settings"))
    return json_response(await _project_body(request, request.match_info["project_id"], settings))


def _require_admin(request: web.Request, what: str) -> None:
    if not request.app[DAEMON].authorizer.admin_ok(request):
        raise forbidden(
            f"{what} needs the daemon's admin capability",
            "Use the coverage-mcp command line (it reads the capability from the daemon's lock file), "
            "or drop the option.",
        )


# -- declared operations -------------------------------------------------------------------


async def operation(request: web.Request) -> web.Response:
    """Any operation of the table: POST /ops/{name} with a JSON object, or GET for a read-only one."""
    name = request.match_info["name"]
    op = OPERATIONS.get(name)
    if op is None:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            f"unknown operation {name!r}",
            f"Operations: {', '.join(OPERATIONS)}.",
            {"operation": name},
        )
    if request.method == "GET":
        if not op.read_only:
            raise web.HTTPMethodNotAllowed("GET", ["POST"])
        args = query_arguments(request, op.input_schema)
    else:
        _no_query(request)
        args = await read_object(request)
    answer = await request.app[DAEMON].projects.call(target_of(request), name, args)
    # A write that stored something new is 201; a read, or a write that found it stored already, 200.
    created = not op.read_only and not answer["data"].get("duplicate", False)
    return json_response(answer, 201 if created else 200)


async def owner_import(request: web.Request) -> web.Response:
    """The store owner's import (an admin route): any report path, path maps; coverage_import's envelope."""
    _no_query(request)
    args = await read_object(request)
    answer = await request.app[DAEMON].projects.owner_import(target_of(request), args)
    return json_response(answer, 200 if answer["data"].get("duplicate") else 201)


async def delete_snapshots(request: web.Request) -> web.Response:
    """An admin route: ``Project.delete_snapshots`` (``snapshot_ids``) or ``prune_snapshots`` (``suite``,
    ``keep``), with ``force`` and ``dry_run``, under the store's write gate; ``{"data": deletion}``."""
    _no_query(request)
    body = await read_object(request, frozenset({"snapshot_ids", "suite", "keep", "force", "dry_run"}))
    force, dry_run = body.get("force", False), body.get("dry_run", False)
    ids, suite, keep = body.get("snapshot_ids"), body.get("suite"), body.get("keep")
    well_formed = (
        isinstance(force, bool)
        and isinstance(dry_run, bool)
        and (
            (
                isinstance(ids, list)
                and ids
                and all(isinstance(i, str) for i in ids)
                and suite is None
                and keep is None
            )
            or (
                ids is None
                and isinstance(suite, str)
                and isinstance(keep, int)
                and not isinstance(keep, bool)
            )
        )
    )
    if not well_formed:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "send snapshot_ids (a list of ids), or suite and keep",
            'e.g. {"snapshot_ids": ["snap-1a2b"], "dry_run": true} or {"suite": "unit", "keep": 10}',
        )
    projects = request.app[DAEMON].projects
    handle, project = await projects.resolve(target_of(request))

    def delete() -> Any:
        if ids is not None:
            return project.delete_snapshots(ids, force=force, dry_run=dry_run)
        assert suite is not None and keep is not None  # well formed: ids, or suite and keep
        return project.prune_snapshots(suite, keep, force=force, dry_run=dry_run)

    deletion = await projects.write(handle, delete)
    return json_response({"data": deletion.to_dict()})


# -- managed execution: commands and runs (approval only on admin routes) ------------------------

_COMMAND_ID = "command_id"


async def _with_project(request: web.Request, fn: Any) -> Any:
    projects = request.app[DAEMON].projects
    _, project = await projects.resolve(target_of(request))
    return await projects.run(fn, project)


async def list_commands(request: web.Request) -> web.Response:
    """GET .../commands?status=: the registered commands (approved, pending, then rejected)."""
    from coverage_core.execution import commands

    unknown = set(request.query) - {"status"}
    if unknown:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown query parameter(s): {', '.join(sorted(unknown))}",
            "This route takes status=pending|approved|rejected.",
        )
    status = request.query.get("status")
    found = await _with_project(request, lambda project: commands.list_commands(project, status))
    return json_response({"data": {"commands": found}, "page": None})


async def show_command(request: web.Request) -> web.Response:
    from coverage_core.execution import commands

    _no_query(request)
    command_id = request.match_info[_COMMAND_ID]
    found = await _with_project(request, lambda project: commands.show_command(project, command_id))
    return json_response({"data": {"command": found}, "page": None})


async def _decide(request: web.Request, decision: str) -> web.Response:
    """An admin route: a person's approval or rejection (the CLI, or the dashboard's session)."""
    from coverage_core.execution import commands

    _no_query(request)
    body = await read_object(request, frozenset({"by", "via", "note"}))
    by, via, note = body.get("by"), body.get("via", "cli"), body.get("note")
    if (
        via not in ("cli", "dashboard")
        or not isinstance(by, str)
        or (note is not None and not isinstance(note, str))
    ):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            'send {"by": who, "via": "cli"|"dashboard", "note"?}',
            "Name the person deciding; attested approvals come only with a registration.",
        )
    command_id = request.match_info[_COMMAND_ID]

    def decide(project: Project) -> dict[str, Any]:
        if decision == "approved":
            return commands.approve(project, command_id, approved_by=by, via=via, note=note)
        return commands.reject(project, command_id, rejected_by=by, via=via, note=note)

    found = await _with_project(request, decide)
    return json_response({"data": {"command": found}, "page": None})


async def approve_command(request: web.Request) -> web.Response:
    return await _decide(request, "approved")


async def reject_command(request: web.Request) -> web.Response:
    return await _decide(request, "rejected")


async def list_runs(request: web.Request) -> web.Response:
    """GET .../runs?status=&limit=: runs, newest first."""
    from coverage_core.execution import runs

    unknown = set(request.query) - {"status", "limit"}
    if unknown:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown query parameter(s): {', '.join(sorted(unknown))}",
            "This route takes status and limit.",
        )
    status = request.query.get("status")
    try:
        limit = int(request.query.get("limit", "50"))
    except ValueError:
        limit = -1
    if not 1 <= limit <= 1000:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT, "limit must be an integer from 1 to 1000", "e.g. limit=50"
        )
    found = await _with_project(request, lambda project: runs.list_runs(project, status, limit=limit))
    return json_response({"data": {"runs": found}, "page": None})


# -- analysis: the notebooks' relations, computed where the store is ---------------------------------

# Each analysis helper's keyword arguments (coverage_core.analysis), checked before it runs.
_ANALYSIS_ARGUMENTS = {
    "history": frozenset({"suite", "counter"}),
    "file_history": frozenset({"last_commits", "suite", "counter", "ref"}),
    "coverage_loss": frozenset({"last", "suite", "counter", "ref"}),
}


async def analysis(request: web.Request) -> web.Response:
    """POST .../analysis {name, arguments}: one ``coverage_core.analysis`` helper run on the project the
    daemon holds; its answer's columns (``analysis.to_columns``), for the helper to rebuild in memory."""
    from coverage_core import analysis as helpers

    _no_query(request)
    body = await read_object(request, frozenset({"name", "arguments"}))
    name, arguments = body.get("name"), body.get("arguments", {})
    if name not in _ANALYSIS_ARGUMENTS:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown analysis {str(name)[:100]!r}",
            f"Analyses: {', '.join(_ANALYSIS_ARGUMENTS)}.",
        )
    if not isinstance(arguments, dict) or set(arguments) - _ANALYSIS_ARGUMENTS[name]:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"analysis {name} takes the arguments {', '.join(sorted(_ANALYSIS_ARGUMENTS[name]))}",
            "Pass only those, as a JSON object.",
        )
    columns = await _with_project(
        request, lambda project: helpers.to_columns(helpers.ANALYSES[name](project, **arguments))
    )
    return json_response({"data": columns, "page": None})
