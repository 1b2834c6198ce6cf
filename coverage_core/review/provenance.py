"""Where each snapshot came from, as lists, history and the dashboard show it.

A snapshot is ``import`` (a report someone stored) or ``run`` (an artifact of
a managed run). For a run's snapshot the provenance names the run, the
registered command (id and name) and the run's case arguments, so a reader
can tell a one-file subset run from the full suite at a glance.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import duckdb


def runs_of(con: duckdb.DuckDBPyConnection, snapshot_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Snapshot id -> ``{run_id, command_id, command, args}`` for those of ``snapshot_ids`` a run ingested."""
    if not snapshot_ids:
        return {}
    rows = con.execute(
        """SELECT a.snapshot_id, r.run_id, r.command_id, c.name, r.args
           FROM run_artifacts a JOIN runs r USING (run_id) LEFT JOIN commands c ON c.command_id = r.command_id
           WHERE list_contains(?, a.snapshot_id)""",
        [list(dict.fromkeys(snapshot_ids))],
    ).fetchall()
    return {
        sid: {"run_id": run_id, "command_id": command_id, "command": name, "args": json.loads(args or "[]")}
        for sid, run_id, command_id, name, args in rows
    }


def compact(run: dict[str, Any] | None) -> list[Any] | None:
    """A run's provenance as a compact row: ``[run_id, command, args]`` (None for an import)."""
    return None if run is None else [run["run_id"], run["command"], run["args"]]
