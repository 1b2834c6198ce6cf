"""Resolving the ``baseline`` selector of a comparison to stored snapshots at a known commit.

Kinds:

- ``explicit``: ``snapshot_id`` or ``snapshot_ids`` (unioned; one commit).
- ``previous_snapshot``: the newest snapshot of the current suite stored before
  the current one.
- ``parent_commit``: the newest snapshot of the suite at the current commit's
  first parent.
- ``ref``: ... at the commit ``ref`` names (a branch, tag or hash).
- ``merge_base``: ... at the merge-base of ``ref`` and the current commit
  (what a pull request from the current commit into ``ref`` changes).
- ``worktree_base``: ... at the commit this line of work started from: the
  merge-base of the current commit with the repository's main branch. The main
  branch is the remote's default branch (``refs/remotes/origin/HEAD``) when it
  is known, else the first of ``main``, ``master``, ``trunk``, ``origin/main``,
  ``origin/master`` that exists. On the main branch itself the base is the
  current commit: the comparison is then with an earlier snapshot of that
  commit (e.g. the clean run before uncommitted edits).
- ``none``: no baseline: nothing is new, lost or deleted; every line is
  "included" code, split into covered (GIC) and uncovered (UIC).

A snapshot "at" a commit is the newest of the suite that measured it, clean
snapshots first; the current snapshots are never their own baseline. The
baseline commit must be one git knows and must share history with the current
commit; otherwise, and when no snapshot measured it, the answer is a
``baseline_unavailable`` (or ``not_found``) error that names the commit and
says how to store one. When only the snapshot is missing (``unmeasured_commit``),
``nearest_measured`` finds the nearest ancestor that has one, for callers that
ask to fall back to it (``ci``'s ``baseline_fallback="ancestor"``, Codecov's
behaviour).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import attrs
import pygit2

from ..errors import CoverageError, ErrorCode, Remedy
from ..model import Snapshot
from ..storage.store import chosen_side
from .call import Call
from .selection import Selection

if TYPE_CHECKING:
    from ..git import Git

MAIN_BRANCHES = ("main", "master", "trunk", "origin/main", "origin/master")
# ``details.missing`` of the error when nothing but a snapshot of the baseline commit is missing.
UNMEASURED_COMMIT = "snapshot_at_commit"
MAX_FALLBACK_COMMITS = 1000  # ancestors looked at for a measured one (``nearest_measured``)


@attrs.frozen
class Baseline:
    kind: str
    snapshots: tuple[Snapshot, ...]
    snaps: tuple[int, ...]
    commit: str | None
    ref: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def scope_key(self) -> str:
        return ",".join(s.snapshot_id for s in self.snapshots) or self.kind


def one_commit(snapshots: tuple[Snapshot, ...], side: str) -> str | None:
    """The commit a set of unioned snapshots measures; they must agree."""
    commits = {s.commit for s in snapshots}
    if len(commits) > 1:
        raise CoverageError(
            ErrorCode.INCOMPATIBLE_SNAPSHOTS,
            f"the {side} snapshots measure {len(commits)} different commits "
            f"({', '.join(sorted((c or 'none')[:12] for c in commits))}); a union needs one commit",
            f"Select {side} snapshots of one commit, or compare them one at a time.",
            {"commits": sorted(c or "" for c in commits)},
        )
    return next(iter(commits))


def resolve(call: Call, current: Selection, spec: dict[str, Any], *, same_suite: bool = True) -> Baseline:
    """The baseline ``spec`` names for the ``current`` measurement."""
    kind = spec["kind"]
    if "composite_snapshot_id" in spec:
        raise CoverageError(
            ErrorCode.INCOMPATIBLE_SNAPSHOTS,
            "baseline.composite_snapshot_id compares with a composite measurement, not ordinary snapshots",
            'Pass measurement={"composite_snapshot_id": ...} as well, or name an ordinary baseline snapshot.',
        )
    if kind == "none":
        return Baseline("none", (), (), None, notes=("no baseline: nothing is new, lost or deleted",))
    suite = current.primary.suite
    if same_suite:
        _same_suite(current.snapshots, suite, "current measurement")
    cur_commit = one_commit(current.snapshots, "current")
    if kind == "explicit":
        found = _explicit(call, spec)
        if same_suite:
            _same_suite(found, suite, "baseline")
            _same_format(found, current.primary)
        base_commit = one_commit(found, "baseline")
        notes = _lineage(call, base_commit, cur_commit, f"baseline snapshot {found[0].snapshot_id}")
        return _baseline(call, kind, found, base_commit, None, notes)
    if cur_commit is None:
        raise CoverageError(
            ErrorCode.BASELINE_UNAVAILABLE,
            f"the current snapshot {current.primary.snapshot_id} records no commit, so no commit can be its baseline",
            "Commit first, or name the baseline snapshot by its id.",
        )
    if kind == "previous_snapshot":
        before = min(current.snaps, default=2**31 - 1)
        # A subset a complete snapshot of its commit outranks is never the default baseline (chosen_side).
        row = _first(
            call,
            f"SELECT snapshot_id FROM snapshots WHERE suite = ? AND snap < ? AND format = ? AND {chosen_side()} "
            "ORDER BY snap DESC LIMIT 1",
            [suite, before, current.primary.format],
        )
        if row is None:
            _other_format(
                call, current.primary, "snap < ?", [before], f"stored before {current.primary.snapshot_id}"
            )
        if row is None:
            raise CoverageError(
                ErrorCode.BASELINE_UNAVAILABLE,
                f"no snapshot of suite {suite!r} was stored before {current.primary.snapshot_id}",
                "Store a report of an earlier commit with its commit, or compare with a git ref whose commit "
                "has a snapshot of this suite.",
                {"suite": suite},
                Remedy(
                    operation="coverage_import",
                    arguments={"report_path": "REPORT", "suite": suite, "commit": "<its sha>"},
                ),
            )
        previous = call.project.store.snapshot(row[0], call.con)
        notes = _lineage(call, previous.commit, cur_commit, f"previous snapshot {previous.snapshot_id}")
        return _baseline(call, kind, (previous,), previous.commit, None, notes)
    commit, ref, how = _commit_for(call, kind, spec, cur_commit)
    notes = _lineage(call, commit, cur_commit, how)
    at = _snapshot_at(call, current.primary, commit, current.snaps, how)
    return _baseline(call, kind, (at,), commit, ref, notes)


def _baseline(
    call: Call, kind: str, found: tuple[Snapshot, ...], commit: str | None, ref: str | None, notes: list[str]
) -> Baseline:
    snaps = tuple(call.project.store.snap_key(s.snapshot_id, call.con) for s in found)
    return Baseline(kind, found, snaps, commit, ref, tuple(notes))


def check_spec(spec: dict[str, Any]) -> None:
    """Refuse a baseline that names no side by its own shape, before anything is read from the store."""
    kind = spec.get("kind")
    if kind in ("ref", "merge_base") and not spec.get("ref"):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"baseline.kind={kind!r} needs baseline.ref",
            "Name a branch, tag or commit as the baseline's ref (for example main).",
            {"argument": "baseline.ref"},
        )
    if kind == "explicit" and not (
        spec.get("snapshot_id") or spec.get("snapshot_ids") or spec.get("composite_snapshot_id")
    ):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "baseline.kind='explicit' needs snapshot_id or snapshot_ids",
            "Name the baseline snapshot by its id (the snapshots listing shows them).",
            {"argument": "baseline.snapshot_id"},
            Remedy(operation="coverage_review", arguments={"task": "snapshots"}),
        )


def _explicit(call: Call, spec: dict[str, Any]) -> tuple[Snapshot, ...]:
    ids = (
        [spec["snapshot_id"]]
        if "snapshot_id" in spec
        else list(dict.fromkeys(spec.get("snapshot_ids") or []))
    )
    if not ids:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "baseline.kind='explicit' needs snapshot_id or snapshot_ids",
            "Name the baseline snapshot by its id (the snapshots listing shows them).",
            remedy=Remedy(operation="coverage_review", arguments={"task": "snapshots"}),
        )
    return tuple(call.project.store.snapshot(i, call.con) for i in ids)


def _same_suite(found: tuple[Snapshot, ...], suite: str, what: str) -> None:
    other = sorted({s.suite for s in found} - {suite})
    if other:
        raise CoverageError(
            ErrorCode.INCOMPATIBLE_SNAPSHOTS,
            f"the {what} includes suite {other[0]!r}, the current measurement suite {suite!r}; "
            "a change review compares one suite",
            f"Pick a baseline snapshot of suite {suite!r}, or ask the incremental review, which compares "
            "across suites.",
            {"baseline_suites": other, "current_suite": suite},
        )


def _same_format(found: tuple[Snapshot, ...], current: Snapshot) -> None:
    """Refuse a baseline of another report format: their lines, branches and functions are not counted alike."""
    other = next((s for s in found if s.format != current.format), None)
    if other is not None:
        raise _formats_differ(other, current, f"the baseline snapshot {other.snapshot_id}")


def _first(call: Call, sql: str, params: list[Any]) -> tuple[Any, ...] | None:
    """The first row of a query over the snapshots' records (``Call.listed``: once per generation)."""
    rows = call.listed(sql, params)
    return rows[0] if rows else None


def _other_format(call: Call, current: Snapshot, where: str, params: list[Any], what: str) -> None:
    """When no snapshot of the current side's format qualifies but one of another format does, say so."""
    row = _first(
        call,
        f"SELECT snapshot_id FROM snapshots WHERE suite = ? AND {where} AND format <> ? ORDER BY snap DESC LIMIT 1",
        [current.suite, *params, current.format],
    )
    if row is not None:
        raise _formats_differ(
            call.project.store.snapshot(row[0], call.con),
            current,
            f"the baseline snapshot of suite {current.suite!r} {what} ({row[0]})",
        )


def _formats_differ(base: Snapshot, current: Snapshot, what: str) -> CoverageError:
    return CoverageError(
        ErrorCode.INCOMPATIBLE_SNAPSHOTS,
        f"{what} is a {base.format} report and the current measurement ({current.snapshot_id}) a "
        f"{current.format} report: a comparison needs one format, whose lines, branches and functions "
        "are counted alike",
        f"Store a {current.format} report of the baseline commit (the same tool's output as the current side), "
        f"or compare with a {base.format} report of the current commit as --current.",
        {
            "baseline_format": base.format,
            "current_format": current.format,
            "baseline_snapshot_id": base.snapshot_id,
            "current_snapshot_id": current.snapshot_id,
        },
    )


def _commit_for(call: Call, kind: str, spec: dict[str, Any], cur_commit: str) -> tuple[str, str | None, str]:
    """(commit, ref, description) of a commit-based baseline kind."""
    git = call.project.git
    if kind == "parent_commit":
        parent = git.parent(cur_commit)
        if parent is None:
            raise CoverageError(
                ErrorCode.BASELINE_UNAVAILABLE,
                f"commit {cur_commit[:12]} has no parent (it is a root commit)",
                "Name a baseline snapshot by its id, or compare with no baseline (none).",
                {"commit": cur_commit},
            )
        return parent, None, f"parent commit {parent[:12]} of {cur_commit[:12]}"
    if kind in ("ref", "merge_base"):
        ref = spec.get("ref")
        if not ref:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"baseline.kind={kind!r} needs baseline.ref",
                "Name a branch, tag or commit as the baseline's ref (for example main).",
            )
        commit = _resolve_ref(call, ref)
        if kind == "ref":
            return commit, ref, f"ref {ref!r} ({commit[:12]})"
        base = git.merge_base(commit, cur_commit)
        if base is None:
            raise _unrelated(commit, cur_commit, f"ref {ref!r}")
        return str(base), ref, f"merge-base {str(base)[:12]} of {ref!r} and {cur_commit[:12]}"
    main = main_branch(call)
    if main is None:
        raise CoverageError(
            ErrorCode.BASELINE_UNAVAILABLE,
            "this repository has no main branch to find the worktree base from "
            f"(no origin/HEAD and none of {', '.join(MAIN_BRANCHES)})",
            "Choose baseline.kind='merge_base' with the ref of your main branch.",
        )
    base = git.merge_base(main, cur_commit)
    if base is None:
        raise _unrelated(git.resolve(main), cur_commit, f"main branch {main!r}")
    return str(base), main, f"worktree base {str(base)[:12]} (merge-base of {main!r} and {cur_commit[:12]})"


def main_branch(call: Call) -> str | None:
    """The repository's main branch, as ``worktree_base`` defines it."""
    git = call.project.git
    with git.lock:  # libgit2 objects are not safe to share across threads
        try:
            return git.repo.lookup_reference("refs/remotes/origin/HEAD").resolve().shorthand
        except (KeyError, ValueError):
            pass
        for name in MAIN_BRANCHES:
            try:
                git.resolve(name)
            except CoverageError:
                continue
            return name
    return None


def _resolve_ref(call: Call, ref: str) -> str:
    try:
        return call.project.git.resolve(ref)
    except CoverageError:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            f"baseline ref {ref!r} does not name a commit of this repository",
            "Use a branch, tag or commit hash that exists here (git log --oneline; fetch it first in a shallow "
            "CI clone: git fetch origin <branch>), or a snapshot id (snap-...).",
            {"ref": ref},
        ) from None


def _unrelated(base: str, cur: str, what: str) -> CoverageError:
    return CoverageError(
        ErrorCode.BASELINE_UNAVAILABLE,
        f"{what} ({base[:12]}) shares no history with the current commit {cur[:12]}: there is no diff to compare along",
        "Compare with a commit of this line of history (e.g. baseline.kind='parent_commit'), or fetch the full "
        "history in a shallow clone (git fetch --unshallow).",
        {"baseline_commit": base, "current_commit": cur},
    )


def _lineage(call: Call, base: str | None, cur: str | None, what: str) -> list[str]:
    """Refuse a baseline commit git does not know or that is unrelated; note one that is not an ancestor."""
    git = call.project.git
    if base is None or cur is None:
        if base == cur:
            return []
        raise CoverageError(
            ErrorCode.BASELINE_UNAVAILABLE,
            f"{what} records no commit, so its lines cannot be followed to the current commit",
            "Compare snapshots that record their commit: store their reports with their commit.",
            remedy=Remedy(
                operation="coverage_import", arguments={"report_path": "REPORT", "commit": "<its sha>"}
            ),
        )
    if not git.has_commit(base):
        raise CoverageError(
            ErrorCode.BASELINE_UNAVAILABLE,
            f"{what} measures commit {base[:12]}, which this repository does not have",
            f"Fetch it (git fetch origin {base}) or compare with a snapshot of a commit that exists here.",
            {"commit": base},
        )
    if base == cur:
        return []
    if git.merge_base(base, cur) is None:
        raise _unrelated(base, cur, what)
    if not git.is_ancestor(base, cur):
        return [
            f"{what} is not an ancestor of {cur[:12]}: the diff also undoes changes made only on its side"
        ]
    return []


def _snapshot_at(call: Call, current: Snapshot, commit: str, exclude: tuple[int, ...], how: str) -> Snapshot:
    suite = current.suite
    row = _first(
        call,
        "SELECT snapshot_id FROM snapshots WHERE suite = ? AND commit_sha = ? AND NOT list_contains(?, snap) "
        "AND format = ? ORDER BY scope = 'subset', dirty, snap DESC LIMIT 1",
        [suite, commit, list(exclude), current.format],
    )
    if row is None:
        _other_format(
            call,
            current,
            "commit_sha = ? AND NOT list_contains(?, snap)",
            [commit, list(exclude)],
            f"of the baseline commit ({how})",
        )
    if row is None:
        raise CoverageError(
            ErrorCode.BASELINE_UNAVAILABLE,
            f"no snapshot of suite {suite!r} measures the baseline commit: {how}",
            f"Measure that commit and store it: check out {commit[:12]}, run the tests, then store the report "
            f"with commit {commit}; or import a CI report of that commit.",
            {"commit": commit, "suite": suite, "format": current.format, "missing": UNMEASURED_COMMIT},
            Remedy(
                operation="coverage_import",
                arguments={"report_path": "REPORT", "suite": suite, "commit": commit},
            ),
        )
    return call.project.store.snapshot(row[0], call.con)


def unmeasured_commit(error: CoverageError) -> bool:
    """Whether ``error`` says only that no snapshot measures the baseline commit (so an ancestor could stand in)."""
    return error.code is ErrorCode.BASELINE_UNAVAILABLE and error.details.get("missing") == UNMEASURED_COMMIT


def nearest_measured(git: Git, commit: str, measured: Collection[str]) -> tuple[str, int] | None:
    """(commit, commits back) of the nearest proper ancestor of ``commit`` in ``measured``, or None.

    Breadth first over every parent, so "nearest" is the fewest commits back
    (a merge's second parent counts as much as its first); at most
    ``MAX_FALLBACK_COMMITS`` are looked at. A shallow clone's missing parents
    end the walk there, as Codecov's own search for a measured parent does.
    """
    wanted = set(measured)
    if not wanted:
        return None
    seen = {commit}
    queue: deque[tuple[str, int]] = deque([(commit, 0)])
    with git.lock:  # libgit2 objects are not safe to share across threads
        while queue and len(seen) <= MAX_FALLBACK_COMMITS:
            sha, depth = queue.popleft()
            if depth and sha in wanted:
                return sha, depth
            try:
                parents = git.repo[sha].peel(pygit2.Commit).parent_ids
            except (KeyError, ValueError):  # not in this (shallow) clone
                continue
            for parent in map(str, parents):
                if parent not in seen:
                    seen.add(parent)
                    queue.append((parent, depth + 1))
    return None
