"""What the run tables say about stored snapshots, as store queries: the project asks them before a deletion
without the execution runtime."""

from __future__ import annotations

import json

from .exec_db import exec_db
from .store import ProjectStore


def recent_baselines(store: ProjectStore, recent: int) -> dict[str, str]:
    """Snapshot id -> why, for each incremental baseline of the ``recent`` newest finished runs (compaction's
    window beside the active runs: not every run there ever was)."""
    out: dict[str, str] = {}
    if recent <= 0:
        return out
    for run_id, state, baseline in exec_db(store).rows(
        "SELECT run_id, state, baseline FROM (SELECT * FROM runs WHERE state NOT IN ('queued', 'running') "
        "ORDER BY queued_at DESC, run_id DESC LIMIT ?) WHERE baseline IS NOT NULL",
        [recent],
    ):
        for snapshot_id in json.loads(baseline):
            out.setdefault(snapshot_id, f"incremental baseline of {state} run {run_id}")
    return out


def active_baselines(store: ProjectStore) -> dict[str, str]:
    """Snapshot id -> why, for each incremental baseline of a queued or running run."""
    out: dict[str, str] = {}
    for run_id, state, baseline in exec_db(store).rows(
        "SELECT run_id, state, baseline FROM runs WHERE state IN ('queued', 'running') AND baseline IS NOT NULL"
    ):
        for snapshot_id in json.loads(baseline):
            out.setdefault(snapshot_id, f"incremental baseline of {state} run {run_id}")
    return out
