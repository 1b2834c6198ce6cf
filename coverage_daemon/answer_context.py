"""The context of an error answered to an authenticated caller, as every envelope carries it.

``repo_key``, ``project_id``, ``checkout_path``, ``suite`` and
``schema_revision``: the project's when the request chose one, else the schema
revision with the rest null. Set on the error by the daemon's dispatch (a
project's call) or its REST and MCP edges (before any project), never for a
caller the authorizer refused: ``coverage_core.errors.error_body`` then puts
it beside the error.
"""

from __future__ import annotations

from typing import Any

from coverage_core.errors import CoverageError
from coverage_core.project import DEFAULT_SUITE, Project
from coverage_core.service import envelope_for
from coverage_core.storage.schema import SCHEMA_REVISION


def error_context(project: Project | None = None, arguments: Any = None) -> dict[str, Any]:
    """The context of an error answer: the envelope's (without stats) for ``project`` and the suite the
    arguments name (as ``Call.suite`` reads it), or, before any project was chosen, the schema revision
    with the rest null."""
    if project is None:
        return {
            "repo_key": None,
            "project_id": None,
            "checkout_path": None,
            "suite": None,
            "schema_revision": SCHEMA_REVISION,
        }
    args: dict[str, Any] = arguments if isinstance(arguments, dict) else {}
    given = args.get("measurement")
    measurement: dict[str, Any] = given if isinstance(given, dict) else {}
    named = measurement.get("suite") or args.get("suite")
    suite = named if isinstance(named, str) else DEFAULT_SUITE
    context = envelope_for(project, {}, None, suite=suite, started=0.0, rows=0)["context"]
    context.pop("stats")
    return dict(context)


def attach_context(
    error: CoverageError, project: Project | None = None, arguments: Any = None
) -> CoverageError:
    """``error`` with its answer's context (kept when a nearer surface set it already)."""
    if error.context is None:
        error.context = error_context(project, arguments)
    return error
