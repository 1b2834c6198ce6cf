"""Compaction over HTTP: the manual pass (an admin route) and the inventory (a client route).

``POST /api/projects/{id}/compact`` runs ``Project.compact`` under the store's
write gate, so the daemon's shutdown waits for it and no other write of the
daemon's runs meanwhile (each snapshot's commit still lets reads finish
first). ``GET /api/projects/{id}/compaction`` answers the inventory
``project_context`` carries: relational vs compacted snapshots, bytes before
and after, the policy and the last pass.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from coverage_core.errors import CoverageError, ErrorCode

from .rest import _no_query, read_object
from .state import DAEMON, json_response, target_of

_PASS_KEYS = frozenset({"older_than", "dry_run", "limit"})


async def compact(request: web.Request) -> web.Response:
    """An admin route: one compaction pass; ``{"data": pass}`` (``PassResult.to_dict``)."""
    _no_query(request)
    body = await read_object(request, _PASS_KEYS)
    older_than, dry_run, limit = body.get("older_than"), body.get("dry_run", False), body.get("limit")
    if not (
        isinstance(dry_run, bool)
        and (older_than is None or isinstance(older_than, str))
        and (limit is None or (isinstance(limit, int) and not isinstance(limit, bool)))
    ):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            'send older_than (an age such as "30d"), dry_run (true/false) and limit (a number)',
            'e.g. {"older_than": "30d", "dry_run": true}',
        )
    projects = request.app[DAEMON].projects
    handle, project = await projects.resolve(target_of(request))

    def run() -> Any:
        return project.compact(older_than=older_than, dry_run=dry_run, limit=limit)

    result = await projects.write(handle, run)
    return json_response({"data": result.to_dict()})


async def inventory(request: web.Request) -> web.Response:
    """A client route: the compaction inventory of the project; ``{"data": inventory}``."""
    _no_query(request)
    projects = request.app[DAEMON].projects
    found = await projects.read(target_of(request), lambda project, con: project.compaction_inventory(con))
    return json_response({"data": found})
