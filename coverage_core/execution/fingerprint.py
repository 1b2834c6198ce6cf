"""The execution fingerprint: what makes two runs the same execution.

It covers the command's content hash, the case arguments, HEAD, the tracked
changes (path and working-tree blob id of every tracked file that differs
from HEAD, which determines the tracked diff), the untracked files git does
not ignore (an agent's new test file is untracked; path and blob id), the
environment the command gets, and the incremental baseline. The declared
artifacts are left out: the run itself rewrites them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pygit2

from ..git import Git
from ..project import Project

# A file larger than this is identified by its size and mtime instead of its bytes.
MAX_HASHED_BYTES = 8 * 1024 * 1024
_TRACKED_CHANGE = (
    pygit2.GIT_STATUS_INDEX_NEW
    | pygit2.GIT_STATUS_INDEX_MODIFIED
    | pygit2.GIT_STATUS_INDEX_DELETED
    | pygit2.GIT_STATUS_INDEX_RENAMED
    | pygit2.GIT_STATUS_INDEX_TYPECHANGE
    | pygit2.GIT_STATUS_WT_MODIFIED
    | pygit2.GIT_STATUS_WT_DELETED
    | pygit2.GIT_STATUS_WT_TYPECHANGE
    | pygit2.GIT_STATUS_WT_RENAMED
)


def _file_identity(root: str, path: str) -> str:
    full = os.path.join(root, path)
    try:
        st = os.lstat(full)
    except OSError:
        return "absent"
    if not os.path.isfile(full) or os.path.islink(full):
        return f"special:{st.st_mode:o}"
    if st.st_size > MAX_HASHED_BYTES:
        return f"large:{st.st_size}:{st.st_mtime_ns}"
    try:
        with open(full, "rb") as handle:
            return Git.blob_id(handle.read())
    except OSError:
        return "unreadable"


def worktree_state(project: Project, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """HEAD, the changed tracked files and the untracked non-ignored files, each with its blob id."""
    git = project.git
    skip = set(exclude)
    with git.lock:
        head = None if git.repo.head_is_unborn else str(git.repo.head.target)
        status = git.repo.status(untracked_files="all", ignored=False)
    root = str(project.checkout.worktree_path)
    tracked, untracked = {}, {}
    for path, flags in sorted(status.items()):
        if path in skip or path.startswith(".coverage-mcp/"):
            continue
        if flags & pygit2.GIT_STATUS_WT_NEW:
            untracked[path] = _file_identity(root, path)
        elif flags & _TRACKED_CHANGE:
            tracked[path] = _file_identity(root, path)
    return {"head": head, "tracked_changes": tracked, "untracked": untracked}


def fingerprint(
    project: Project,
    *,
    command_hash: str,
    args: Sequence[str],
    env: Mapping[str, str],
    baseline: Sequence[str] | None,
    artifacts: Sequence[str],
) -> tuple[str, dict[str, Any]]:
    """(hex digest, the parts it was computed from, summarized)."""
    state = worktree_state(project, artifacts)
    diff = hashlib.sha256(json.dumps(state["tracked_changes"], sort_keys=True).encode()).hexdigest()
    untracked = hashlib.sha256(json.dumps(state["untracked"], sort_keys=True).encode()).hexdigest()
    env_hash = hashlib.sha256(json.dumps(sorted(env.items())).encode("utf-8", "surrogateescape")).hexdigest()
    parts = {
        "command_hash": command_hash,
        "args": list(args),
        "head": state["head"],
        "tracked_diff": diff,
        "untracked": untracked,
        "env": env_hash,
        "baseline": list(baseline) if baseline else None,
    }
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    summary = {
        **parts,
        "tracked_changes": len(state["tracked_changes"]),
        "untracked_files": len(state["untracked"]),
    }
    return digest, summary
