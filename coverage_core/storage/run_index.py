"""What the run tables say about stored snapshots, as store queries: the project asks them before a deletion
without the execution runtime."""

from __future__ import annotations

import json

from .exec_db import exec_db
from .store import ProjectStore


def active_baselines(store: ProjectStore) -> dict[str, str]:
    """Snapshot id -> why, for each incremental baseline of a queued or running run."""
    out: dict[str, str] = {}
    for run_id, state, baseline in exec_db(store).rows(
        "SELECT run_id, state, baseline FROM runs WHERE state IN ('queued', 'running') AND baseline IS NOT NULL"
    ):
        for snapshot_id in json.loads(baseline):
            out.setdefault(snapshot_id, f"incremental baseline of {state} run {run_id}")
    return out
