"""One comparison of a current measurement with a baseline: load, diff, categorize, cache.

Both sides are loaded as columns from the store (or the current side comes
from an unstored report), the diff runs from the baseline commit to the
current commit, and ``categories.compare`` places every line. The current
side is read against the *working tree* instead when it measured a dirty
checkout at HEAD, since its line numbers are then those of uncommitted files.

Snapshots and commits are immutable, so a finished comparison is cached (a
few, per process) under the store, the snapshot ids and both commits: the
next page of an answer, or the gate after a diff, does not recompute it. A
working-tree comparison is never cached; the tree may change.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

import attrs

from ..diffmap import DiffMap, diff_trees
from ..memo import Memo
from ..model import MappingSummary, Snapshot
from ..parsers import Limits, parse_bytes, read_report
from ..project import Project
from ..storage.paths import AMBIGUOUS, MAPPED, UNMAPPED, map_paths
from . import evidence, measured
from .baseline import Baseline, one_commit
from .call import Call
from .categories import SIDE_READS, Comparison, Side, compare, load_side, side_from_report
from .selection import Selection

# Comparisons of stored sides by (store, scope, both commits): immutable, so kept; a 1,000,000-line
# comparison holds about 40 MB, so only the last two.
_COMPARED: Memo[Compared] = Memo(2)


T = TypeVar("T")


@attrs.frozen(eq=False)
class Compared:
    comparison: Comparison
    diff: DiffMap
    cur: Side  # the current side's keys line up with comparison.cur_* (attribution reads them)
    notes: tuple[str, ...]
    # What answers derive from this comparison alone (a page's ranges in order), kept while it is.
    derived: dict[Hashable, Any] = attrs.field(factory=dict)

    def kept(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once for this comparison: every page and repeat of its answers reuses it."""
        if key not in self.derived:
            self.derived[key] = compute()
        value: T = self.derived[key]
        return value


def empty_side() -> Side:
    import numpy as np

    i64, obj = np.empty(0, dtype=np.int64), np.empty(0, dtype=object)
    return Side(
        (),
        i64,
        i64,
        {"pid": i64, "line": i64, "block": i64, "branch": obj, "taken": i64},
        {"pid": i64, "name": obj, "start_line": i64, "hits": i64},
    )


def unstored(
    project: Project,
    report: str | os.PathLike[str],
    *,
    suite: str,
    scope: str = "complete",
    format: str | None = None,
    commit: str | None = None,
) -> tuple[Selection, Side]:
    """A report of the checkout as a current side, parsed and mapped in memory and never stored.

    Its record says what an ingest would have stored (HEAD, dirty state); its id
    is ``report:`` and the first hex digits of the report's SHA-256. Unless
    ``commit`` names the commit it measured, the report is taken as a
    measurement of the working tree only as far as ``evidence.report_identity``
    shows it: what is missing limits the claim (``Selection.limits``).
    """
    raw = read_report(report, Limits(project.settings.max_report_bytes))
    sha = hashlib.sha256(raw.data).hexdigest()
    parsed = parse_bytes(raw, format)
    git = project.git
    head = git.resolve(commit) if commit is not None else git.head_commit()
    tracked = git.tracked_files(head)
    # A report of the working tree may measure a module not committed yet: mapped as an ingest maps it.
    new = (
        project.new_files([f.path for f in parsed.files], git.blob_ids(head))
        if commit is None and head
        else set()
    )
    mapping = map_paths(
        [f.path for f in parsed.files],
        checkout_root=str(project.checkout.worktree_path),
        tracked=[*tracked, *sorted(new)],
        source_roots=parsed.source_roots,
    )
    measured_new = any(p in new for p in mapping.paths)
    counts = mapping.counts()
    record = Snapshot(
        snapshot_id=f"report:{sha[:16]}",
        created_at=dt.datetime.now(dt.UTC),
        suite=suite,
        format=parsed.format,
        tool=parsed.tool,
        scope=scope,
        provenance="unstored",
        commit=head,
        branch=git.branch() if commit is None else None,
        dirty=(git.is_dirty() or measured_new) if commit is None else False,
        worktree=project.checkout.worktree_name,
        worktree_path=str(project.checkout.worktree_path),
        artifact_path=str(report),
        artifact_sha256=sha,
        artifact_bytes=raw.stored_bytes,
        files=len(parsed.files),
        tests=len(parsed.tests),
        path_mapping=MappingSummary(counts[MAPPED], counts[AMBIGUOUS], counts[UNMAPPED]),
        totals=dict(parsed.totals),
    )
    limits: tuple[str, ...] = ()
    if commit is None:
        found = evidence.report_identity(git, parsed, mapping, raw.data, Path(report))
        limits = tuple(
            f"the report is not shown to describe the working tree: {m} (name the commit it measured with "
            "--commit to compare it as that commit's)"
            for m in found.missing
        )
    return Selection((record,), (), limits=limits), side_from_report(parsed, mapping.paths)


def _as_measured(
    call: Call, current: Selection, baseline: Baseline, cur: Side, diff: DiffMap, worktree: bool
) -> tuple[DiffMap, list[str]]:
    """``diff`` corrected to the texts each side measured where a side was measured on a dirty tree."""
    git = call.project.git
    unstored_current = not current.snaps
    base_ids = measured.identity(call, baseline.snapshots)
    cur_commit = current.primary.commit
    cur_ids = (
        measured.worktree_identity(git, cur.paths, cur_commit, new=True)
        if unstored_current
        else measured.identity(call, current.snapshots)
    )
    base_assumed = git.blob_ids(baseline.commit) if baseline.commit else {}
    if worktree:  # the diff ran to the working tree: the tree's blobs are what it assumed
        cur_assumed = {k: v for k, v in measured.worktree_identity(git, cur_ids, cur_commit).items() if v}
    else:
        cur_assumed = git.blob_ids(cur_commit) if cur_commit else {}
    return measured.as_measured(
        diff,
        base_ids,
        cur_ids,
        base_assumed,
        cur_assumed,
        measured.Texts(call, baseline.snaps, worktree=False),
        measured.Texts(call, current.snaps, worktree=True),
    )


def scope_key(current: Selection, baseline: Baseline) -> str:
    """What a cursor of a comparison is bound to: both sides' snapshot ids."""
    return f"{current.scope_key}|{baseline.scope_key}"


def compared(
    call: Call, current: Selection, baseline: Baseline, current_side: Side | None = None
) -> Compared:
    """The comparison of ``current`` (or ``current_side``, an unstored report) with ``baseline``."""
    cur_commit = one_commit(current.snapshots, "current")
    notes: list[str] = []
    git = call.project.git
    worktree = (
        baseline.kind != "none"
        and baseline.commit is not None
        and current.primary.dirty
        and cur_commit is not None
        and cur_commit == git.head_commit()
    )
    if worktree:
        notes.append(
            "the current measurement was taken on uncommitted changes: lines are followed into "
            "the working tree as it is now"
        )
    if worktree:  # the working tree moves on: compared anew each time
        return _compare(call, current, baseline, current_side, cur_commit, worktree, notes)
    key = (str(call.project.store.path), scope_key(current, baseline), baseline.commit, cur_commit)
    return _COMPARED.get(
        key, lambda: _compare(call, current, baseline, current_side, cur_commit, worktree, notes)
    )


def _compare(
    call: Call,
    current: Selection,
    baseline: Baseline,
    current_side: Side | None,
    cur_commit: str | None,
    worktree: bool,
    notes: list[str],
) -> Compared:
    git = call.project.git
    if baseline.commit is None or cur_commit is None or (baseline.commit == cur_commit and not worktree):
        # No baseline, no history to follow lines along, or nothing changed between the two.
        diff = DiffMap.empty(cur_commit)
    else:
        diff = diff_trees(git, baseline.commit, None if worktree else cur_commit)
    call.restore(SIDE_READS)  # load_side reads on the connection itself
    base = load_side(call.con, baseline.snaps) if baseline.snaps else empty_side()
    cur = current_side if current_side is not None else load_side(call.con, current.snaps)
    if baseline.snaps and (current.primary.dirty or any(s.dirty for s in baseline.snapshots)):
        diff, corrected = _as_measured(call, current, baseline, cur, diff, worktree)
        if corrected:
            notes.append(
                f"{len(corrected)} files are compared as each side measured them (recorded content identity), "
                "not as their commits have them: "
                + ", ".join(corrected[:5])
                + (", ..." if len(corrected) > 5 else "")
            )
    call.rows_scanned += len(base.keys) + len(cur.keys)
    return Compared(compare(base, cur, diff, call.con), diff, cur, tuple(notes))
