"""Freshness by content: a measured file is fresh while HEAD has the text it was measured on.

Every stored file carries its content identity, the git blob id of the text the
report measured (``files.content_blob``). Per file:

- ``fresh``: HEAD's blob of the file is the measured blob, however far HEAD has
  moved on since the snapshot's commit;
- ``stale``: HEAD's text differs (or HEAD no longer has the file), uncommitted
  edits the report measured included;
- ``unknown``: no identity was recorded (unmapped files, and snapshots stored
  before schema revision 4).

A snapshot's claim keeps DESIGN.md's rule (another commit than HEAD is
``stale``); these per-file states say which of its files still describe HEAD.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..errors import CoverageError
from ..model import Snapshot
from .call import Call

FRESH, STALE, UNKNOWN = "fresh", "stale", "unknown"
ORDER = (STALE, UNKNOWN, FRESH)
# project_context lists at most this many files per suite, stale ones first.
MAX_LISTED_FILES = 10
# Whole-snapshot answers by (repository, snapshot, HEAD): both sides are immutable.
_CACHE: OrderedDict[tuple[str, str, str | None], dict[str, str]] = OrderedDict()
_CACHE_SIZE = 32
_lock = threading.Lock()


def _states(recorded: dict[str, str | None], at_head: dict[str, str]) -> dict[str, str]:
    return {
        path: UNKNOWN if blob is None else (FRESH if at_head.get(path) == blob else STALE)
        for path, blob in recorded.items()
    }


def file_freshness(call: Call, snapshot: Snapshot, paths: Sequence[str] | None = None) -> dict[str, str]:
    """Path -> ``fresh`` | ``stale`` | ``unknown`` for the mapped files of ``snapshot`` (only ``paths``
    among them when given). A snapshot that is not stored (a report compared unstored) gives ``{}``."""
    head = call.project.state().head
    key = (call.project.checkout.repo_key, snapshot.snapshot_id, head)
    with _lock:
        whole = _CACHE.get(key)
    if whole is None:
        try:
            recorded = call.project.store.content_blobs(snapshot.snapshot_id, call.con, paths)
        except CoverageError:
            return {}
        call.rows_scanned += len(recorded)
        states = _states(recorded, call.project.git.blob_ids(head) if head else {})
        if paths is not None:
            return states
        whole = states
        with _lock:
            _CACHE[key] = whole
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return whole if paths is None else {p: whole[p] for p in paths if p in whole}


def content_summary(call: Call, snapshot: Snapshot) -> dict[str, Any]:
    """What project_context shows per suite: counts of each state, and up to MAX_LISTED_FILES
    ``[path, state]`` rows, stale first, then unknown, then fresh (``files_truncated`` when cut)."""
    states = file_freshness(call, snapshot)
    counts = {state: 0 for state in ORDER}
    for state in states.values():
        counts[state] += 1
    ranked = sorted(states.items(), key=lambda item: (ORDER.index(item[1]), item[0]))
    return {
        **counts,
        "files": [[path, state] for path, state in ranked[:MAX_LISTED_FILES]],
        "files_truncated": len(ranked) > MAX_LISTED_FILES,
    }
