"""The handlers of the person's and the store owner's rows: decisions on commands, listings, deletion,
compaction, per-repository settings and the notebooks' analyses.

Their rows (``operations.table.OPERATIONS``) admit the client token for reads and the admin capability (or, for an
approval, a dashboard session with its CSRF token) for writes; no agent reaches them.
"""

from __future__ import annotations

import getpass
from typing import Any

from .. import analysis as analyses
from ..errors import CoverageError, ErrorCode
from ..execution import commands, runs
from ..execution.worker import settle_orphans
from ..principals import Principal
from ..review.call import Call
from ..storage import project_settings
from .table import ANALYSIS_ARGUMENTS

# -- managed execution: what a person reads and decides ------------------------------------------


def command_list(call: Call) -> dict[str, Any]:
    found = commands.list_commands(call.project, call.args.get("status"), con=call.con)
    return {"data": {"commands": found}}


def command_show(call: Call) -> dict[str, Any]:
    return {"data": {"command": commands.show_command(call.project, call.args["command_id"])}}


def _decider(call: Call) -> tuple[str, str]:
    """(who, via) of a decision: a dashboard session decides as the daemon's user, the CLI names its person."""
    if call.principal is Principal.SESSION_WRITE:
        if "by" in call.args:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                "a dashboard decision is recorded as the daemon's user; it takes no by",
                "Drop by: the dashboard's Approve sends only command_id.",
                {"argument": "by"},
            )
        return getpass.getuser(), "dashboard"
    return call.args.get("by") or getpass.getuser(), "cli"


def command_approve(call: Call) -> dict[str, Any]:
    who, via = _decider(call)
    found = commands.approve(
        call.project, call.args["command_id"], approved_by=who, via=via, note=call.args.get("note")
    )
    return {"data": {"command": found}}


def command_reject(call: Call) -> dict[str, Any]:
    who, via = _decider(call)
    found = commands.reject(
        call.project, call.args["command_id"], rejected_by=who, via=via, note=call.args.get("note")
    )
    return {"data": {"command": found}}


def run_list(call: Call) -> dict[str, Any]:
    # With no runtime of this process running the store's runs (the CLI holds the store), a run still
    # ``running`` lost its daemon: it is recovered first, so the list says what it is.
    settle_orphans(call.project.store)
    found = runs.list_runs(
        call.project,
        call.args.get("status"),
        limit=call.args.get("limit", 50),
        command_id=call.args.get("command_id"),
        con=call.con,
    )
    return {"data": {"runs": found}}


# -- the store's upkeep ------------------------------------------------------------------------------


def snapshot_delete(call: Call) -> dict[str, Any]:
    """``Project.delete_snapshots`` (``snapshot_ids``) or ``prune_snapshots`` (``suite``, ``keep``)."""
    args, project = call.args, call.project
    force, dry_run = args.get("force", False), args.get("dry_run", False)
    by_ids = "snapshot_ids" in args
    if by_ids == ("suite" in args or "keep" in args) or (not by_ids and not {"suite", "keep"} <= set(args)):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "send snapshot_ids (a list of ids), or suite and keep",
            'e.g. {"snapshot_ids": ["snap-1a2b"], "dry_run": true} or {"suite": "unit", "keep": 10}',
        )
    if by_ids:
        deletion = project.delete_snapshots(args["snapshot_ids"], force=force, dry_run=dry_run)
    else:
        deletion = project.prune_snapshots(args["suite"], args["keep"], force=force, dry_run=dry_run)
    return {"data": deletion.to_dict()}


def compact(call: Call) -> dict[str, Any]:
    """One compaction pass (``Project.compact``)."""
    args = call.args
    found = call.project.compact(
        older_than=args.get("older_than"), dry_run=args.get("dry_run", False), limit=args.get("limit")
    )
    return {"data": found.to_dict()}


def compaction_inventory(call: Call) -> dict[str, Any]:
    return {"data": call.project.compaction_inventory(call.con)}


# -- per-repository settings ---------------------------------------------------------------------------


def settings_read(call: Call) -> dict[str, Any]:
    return {"data": {"settings": project_settings.read(call.con)}}


def settings_update(call: Call) -> dict[str, Any]:
    checked = project_settings.validate(call.args["settings"])
    con = call.project.store.con
    with call.project.store._write_lock:
        project_settings.write(con, checked)
    return {"data": {"settings": project_settings.read(con)}}


# -- the notebooks' relations, computed where the store is --------------------------------------------


def analysis(call: Call) -> dict[str, Any]:
    """One ``coverage_core.analysis`` helper run on this project: its answer's columns
    (``analysis.to_columns``), for the caller to rebuild in memory (``analysis.from_columns``)."""
    name, arguments = call.args["name"], call.args.get("arguments", {})
    allowed = ANALYSIS_ARGUMENTS[name]
    if set(arguments) - allowed:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"analysis {name} takes the arguments {', '.join(sorted(allowed))}",
            "Pass only those, as a JSON object.",
            {"argument": "arguments"},
        )
    return {"data": analyses.to_columns(analyses.ANALYSES[name](call.project, call.con, **arguments))}
