"""Resolving the ``measurement`` selector to stored snapshots, and argument helpers."""

from __future__ import annotations

import difflib
from typing import Any

import attrs

from ..errors import CoverageError, ErrorCode, Remedy
from ..model import Snapshot
from ..project import DEFAULT_SUITE
from ..storage.store import chosen_side
from .call import Call


@attrs.frozen
class Selection:
    snapshots: tuple[Snapshot, ...]
    snaps: tuple[int, ...]  # internal keys, same order
    notes: tuple[str, ...] = ()
    # Reasons that limit any claim drawn from this side (an unstored report's missing identity evidence).
    limits: tuple[str, ...] = ()

    @property
    def primary(self) -> Snapshot:
        return self.snapshots[0]

    @property
    def scope_key(self) -> str:
        """What a cursor is bound to: the snapshot ids it pages over."""
        return ",".join(s.snapshot_id for s in self.snapshots)


def select(call: Call) -> Selection | None:
    """The snapshot(s) ``measurement`` names; None when nothing is stored yet."""
    m: dict[str, Any] = call.args.get("measurement") or {}
    store = call.project.store
    if "composite_snapshot_id" in m:
        # coverage_review answers composites before selecting (coverage_core/composite/review.py);
        # what reaches here reads ordinary snapshots only.
        raise CoverageError(
            ErrorCode.NOT_SUPPORTED,
            "this answer reads ordinary snapshots; composites answer coverage_review task=insight, change and "
            "incremental",
            "Ask one of those tasks of the composite, or select ordinary snapshots.",
        )
    ids: list[str] = []
    notes: list[str] = []
    if "run_id" in m:  # the union of the snapshots the run ingested
        from ..execution import runs  # only here: a CI diff never names a run (50 ms of start-up)

        ids = runs.measured_by(store, m["run_id"])
    elif "snapshot_id" in m:
        ids = [m["snapshot_id"]]
    elif "snapshot_ids" in m:
        ids = list(dict.fromkeys(m["snapshot_ids"]))
    else:
        suite = m.get("suite") or DEFAULT_SUITE
        found = store.latest(suite, call.con)
        if found is None and "suite" not in m:
            found = store.latest(None, call.con)
            if found is not None and _other_suites(call, found.suite):
                notes.append(
                    f"no snapshot in suite {suite!r}; using the latest snapshot, of suite {found.suite!r}"
                )
        if found is None:
            return None
        ids = [found.snapshot_id]
    snapshots = tuple(store.snapshot(i, call.con) for i in ids)
    commits = {s.commit for s in snapshots}
    if len(commits) > 1:
        # Line numbers of different commits do not line up: a union would mix versions of a file.
        raise CoverageError(
            ErrorCode.INCOMPATIBLE_SNAPSHOTS,
            "measurement.snapshot_ids must all measure one commit; these measure "
            + ", ".join(sorted((c or "none")[:12] for c in commits)),
            "Union snapshots of one commit (e.g. the artifacts of one run); compare commits with task=change.",
            {"commits": sorted(c or "" for c in commits)},
        )
    call.suite = snapshots[0].suite
    snaps = tuple(store.snap_key(i, call.con) for i in ids)
    return Selection(snapshots, snaps, tuple(notes))


def _other_suites(call: Call, suite: str) -> bool:
    """Whether the store holds a suite besides ``suite`` (the fallback is news only when there is a choice)."""
    return bool(call.rows("SELECT 1 FROM snapshots WHERE suite <> ? LIMIT 1", [suite]))


def names_current(call: Call) -> bool:
    """Whether ``measurement`` names its snapshots (an explicit current side of a comparison)."""
    m: dict[str, Any] = call.args.get("measurement") or {}
    return "snapshot_id" in m or "snapshot_ids" in m


def current_at_head(call: Call, suite: str) -> Selection | None:
    """The current side of a comparison whose ``measurement`` names no snapshot: the newest snapshot of
    ``suite`` whose commit is HEAD, a dirty-tree one only while it still describes the working tree.
    None when no snapshot measured HEAD (or HEAD is unborn)."""
    head = call.project.state().head
    if head is None:
        return None
    store = call.project.store
    # A complete snapshot of HEAD outranks newer subset ones (chosen_side): a subset is read only when named.
    rows = call.listed(
        f"SELECT snapshot_id, dirty FROM snapshots WHERE suite = ? AND commit_sha = ? AND {chosen_side()} "
        "ORDER BY snap DESC",
        [suite, head],
    )
    for snapshot_id, dirty in rows:
        found = store.snapshot(snapshot_id, call.con)
        if not dirty or _describes_worktree(call, found):
            return Selection((found,), (store.snap_key(snapshot_id, call.con),))
    return None


def _describes_worktree(call: Call, snapshot: Snapshot) -> bool:
    """Whether a dirty-tree snapshot's measured text is the working tree's now (its recorded content identity)."""
    return call.project.measured_matches_worktree(snapshot, call.con)


def line_range(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    a, _, b = text.partition("-")
    start, end = int(a), int(b or a)
    if start < 1 or end < start:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"line range {text!r} is empty or starts before line 1",
            "Write a range as 'A-B' with 1 <= A <= B, or a single line 'A'.",
        )
    return start, end


def file_id(call: Call, snap_key: int, path: str, snapshot_id: str) -> tuple[int, str]:
    """(file_id, repository path) of ``path`` (a repository or a report path) in the snapshot."""

    def lookup() -> tuple[int, str] | None:
        row = call.one(
            "SELECT file_id, path FROM files WHERE snap = ? AND (path = ? OR report_path = ?) "
            "ORDER BY path = ? DESC LIMIT 1",
            [snap_key, path, path, path],
        )
        return None if row is None else (int(row[0]), row[1])

    found: tuple[int, str] | None = call.project.store.derived.get(
        ("file_id", snapshot_id, snap_key, path), lookup
    )
    if found is None:
        raise unknown_file(call, snap_key, path, snapshot_id)
    return found


NEAREST = 3


def nearest_paths(call: Call, snaps: tuple[int, ...] | list[int], path: str) -> list[str]:
    """The measured paths of ``snaps`` closest to ``path`` (a typo, a missing folder), best first."""
    paths = [
        r[0]
        for r in call.rows(
            "SELECT DISTINCT path FROM files WHERE list_contains(?, snap) ORDER BY path", [list(snaps)]
        )
    ]
    close = difflib.get_close_matches(path, paths, n=NEAREST, cutoff=0.6)
    if not close:  # the right name in another folder
        name = path.rsplit("/", 1)[-1]
        close = [p for p in paths if p.rsplit("/", 1)[-1] == name][:NEAREST]
    return close


def unknown_file(call: Call, snap_key: int | tuple[int, ...], path: str, snapshot_id: str) -> CoverageError:
    """``not_found`` for a path the snapshot(s) do not measure, naming the nearest measured paths; the
    remedy is the same call with the nearest one."""
    snaps = (snap_key,) if isinstance(snap_key, int) else snap_key
    close = nearest_paths(call, snaps, path)
    fixed = {k: v for k, v in call.args.items() if k != "cursor"}
    remedy = (
        Remedy(operation="coverage_review", arguments={**fixed, "file": close[0]})
        if close
        else Remedy(
            operation="coverage_review",
            arguments={"task": "files", "measurement": {"snapshot_id": snapshot_id.split(",")[0]}},
        )
    )
    return CoverageError(
        ErrorCode.NOT_FOUND,
        f"{path!r} is not a file of snapshot {snapshot_id}"
        + (f"; did you mean {', '.join(map(repr, close))}?" if close else ""),
        f"Use {close[0]!r}." if close else "Use a repository-relative path as task=files lists it.",
        {"path": path, "nearest": close},
        remedy,
    )
