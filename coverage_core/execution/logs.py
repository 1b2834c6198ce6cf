"""Run logs kept within bounds: the newest ``COVERAGE_MCP_RUN_LOGS_KEEP_RUNS`` ended runs of a project, and at most
``COVERAGE_MCP_RUN_LOGS_KEEP_MIB`` of them, newest first; the maintenance worker removes the rest.

A run's logs are ``.coverage-mcp/runs/RUN_ID/`` (``worker``); a queued or running
run's are never touched. The run's row keeps its byte counts, so a pruned run
still says how much it printed; ``run_review view=logs`` then has no text.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..config import MIB
from ..project import Project
from ..storage.exec_db import exec_db


def folder(project: Project) -> Path:
    return project.store.path.parent / "runs"


def _size(path: Path) -> int:
    total = 0
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    return total


def prune(project: Project) -> list[str]:
    """Remove the logs of ended runs past the project's bounds (the settings); the run ids whose logs went."""
    settings = project.settings
    keep_runs, keep_bytes = settings.run_logs_keep_runs, settings.run_logs_keep_mib * MIB
    root = folder(project)
    if not root.is_dir():
        return []
    ended = exec_db(project.store).rows(
        "SELECT run_id FROM runs WHERE state NOT IN ('queued', 'running') ORDER BY ended_at DESC NULLS LAST, run_id"
    )
    kept, used, removed = 0, 0, []
    for (run_id,) in ended:
        path = root / run_id
        if path.is_symlink() or not path.is_dir():
            continue
        size = _size(path)
        if kept < keep_runs and used + size <= keep_bytes:
            kept, used = kept + 1, used + size
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(str(run_id))
    return removed
