"""Freshness by content: a measured file is fresh while the working tree has the text it was measured on.

Every stored file carries its content identity, the git blob id of the text the
report measured (``files.content_blob``). Each file is judged against the
checkout as it is now: the working tree's text for a file with uncommitted
changes (modified or staged) or that HEAD lacks (a module not committed yet), HEAD's for every
other. Per file:

- ``fresh``: the checkout's text of the file is the measured text, however far
  HEAD has moved on since the snapshot's commit;
- ``stale``: the checkout's text differs (a file modified since it was
  measured, committed or not; or the file is gone); an answer about it is
  never ``supported``, and its reasons name it (``stale_reason``);
- ``unknown``: no identity was recorded (unmapped files, and snapshots stored
  before schema revision 4).

A snapshot's claim keeps DESIGN.md's rule (another commit than HEAD is
``stale``); these per-file states say which of its files still describe HEAD.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import CoverageError
from ..memo import Memo
from ..model import Snapshot
from .call import Call

FRESH, STALE, UNKNOWN = "fresh", "stale", "unknown"
ORDER = (STALE, UNKNOWN, FRESH)
# project_context lists at most this many files per suite that are not fresh, stale ones first.
MAX_LISTED_FILES = 10
# Whole-snapshot answers by (repository, snapshot, HEAD, uncommitted edits): both sides are immutable.
_WHOLE: Memo[tuple[dict[str, str], tuple[str, ...]]] = Memo(32)


def _states(recorded: dict[str, str | None], now: dict[str, str | None]) -> dict[str, str]:
    return {
        path: UNKNOWN if blob is None else (FRESH if now.get(path) == blob else STALE)
        for path, blob in recorded.items()
    }


def _checkout_now(call: Call, head: str | None) -> tuple[dict[str, str | None], tuple[Any, ...]]:
    """Path -> blob id of every tracked file as the checkout has it now (HEAD's, the working tree's where it
    has uncommitted changes), and a key that changes whenever that view does. Read once per call."""
    now: tuple[dict[str, str | None], tuple[Any, ...]] = call.once(
        ("checkout_now", head), lambda: _read_checkout(call, head)
    )
    return now


def _read_checkout(call: Call, head: str | None) -> tuple[dict[str, str | None], tuple[Any, ...]]:
    git = call.project.git
    at_head: dict[str, str | None] = dict(git.blob_ids(head)) if head else {}
    # Read now, not through the checkout state's short cache: an edit made a moment ago makes a file stale.
    changed = git.changed_paths()
    if not changed:
        return at_head, ()
    edits: list[tuple[str, str | None]] = []
    for path in sorted(changed):
        data = git.worktree_file(path)
        edits.append((path, None if data is None else git.blob_id(data)))
    return {**at_head, **dict(edits)}, tuple(edits)


def file_freshness(call: Call, snapshot: Snapshot, paths: Sequence[str] | None = None) -> dict[str, str]:
    """Path -> ``fresh`` | ``stale`` | ``unknown`` for the mapped files of ``snapshot`` (only ``paths``
    among them when given). A snapshot that is not stored (a report compared unstored) gives ``{}``."""
    return _judged(call, snapshot, paths)[0]


def _judged(
    call: Call, snapshot: Snapshot, paths: Sequence[str] | None
) -> tuple[dict[str, str], tuple[str, ...]]:
    """``file_freshness``'s states and the stale paths among them, in the same order."""
    head = call.project.state().head
    now, edits = _checkout_now(call, head)
    key = (call.project.checkout.repo_key, snapshot.snapshot_id, head, edits)
    whole = _WHOLE.peek(key)
    if whole is None:
        try:
            recorded = call.project.store.content_blobs(snapshot.snapshot_id, call.con, paths)
        except CoverageError:
            return {}, ()
        call.rows_scanned += len(recorded)
        # A measured file HEAD lacks (a module not committed yet) is judged by the working tree's text;
        # git's status does not track an untracked file, so an answer that read one is never kept.
        git = call.project.git
        added = {p: data for p in recorded if p not in now and (data := git.worktree_file(p)) is not None}
        states = _states(recorded, {**now, **{p: git.blob_id(data) for p, data in added.items()}})
        judged = (states, tuple(p for p, state in states.items() if state == STALE))
        if paths is not None or added:
            return judged
        whole = _WHOLE.get(key, lambda: judged)
    if paths is None:
        return whole
    states = {p: whole[0][p] for p in paths if p in whole[0]}
    return states, tuple(p for p, state in states.items() if state == STALE)


MAX_NAMED_STALE = 5  # stale files a reason names


def stale_reason(call: Call, snapshot: Snapshot, paths: Sequence[str] | None = None) -> str | None:
    """The reason naming the measured files (of ``paths``, when given) the checkout no longer has the measured
    text of, or None when there is none."""
    stale = _judged(call, snapshot, paths)[1]
    if not stale:
        return None
    named = ", ".join(stale[:MAX_NAMED_STALE]) + (
        f" and {len(stale) - MAX_NAMED_STALE} more" if len(stale) > MAX_NAMED_STALE else ""
    )
    return (
        f"modified since {snapshot.snapshot_id} measured them (the checkout's text is not the measured text, so "
        f"line numbers may not match): {named}"
    )


def content_summary(call: Call, snapshot: Snapshot) -> dict[str, Any]:
    """What project_context shows per suite: counts of each state, and up to MAX_LISTED_FILES of the files
    that are not fresh, ``[path, state]``, stale first (``files_truncated`` when cut). Fresh files are
    counted only: nearly every file is fresh, and a list of them says nothing an agent acts on."""
    states = file_freshness(call, snapshot)
    counts = {state: 0 for state in ORDER}
    for state in states.values():
        counts[state] += 1
    ranked = sorted(
        ((path, state) for path, state in states.items() if state != FRESH),
        key=lambda item: (ORDER.index(item[1]), item[0]),
    )
    return {
        **counts,
        "files": [[path, state] for path, state in ranked[:MAX_LISTED_FILES]],
        "files_truncated": len(ranked) > MAX_LISTED_FILES,
    }
