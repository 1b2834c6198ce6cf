"""The dashboard's whole annotated file, read in windows: rows ``dashboard_source`` and ``dashboard_line_tests``.

The page draws a file of any length (the SQLite amalgamation's ~270,000
lines) as a tall scrolling box and asks only for the lines in view, so its
first paint costs one window, never the file. ``dashboard_source`` answers one
``part`` of one file of one snapshot:

- ``lines``: a window (``start``, ``count`` at most ``MAX_WINDOW``) of
  annotated lines, as ``review source`` marks them (covered, uncovered,
  partial, excluded, not code), each partial line with its missed branches
  (``block.branch``: never taken, or never evaluated);
- ``outline``: the whole file's missed blocks (runs of uncovered lines and
  partial lines, merged where they touch), for stepping through them;
- ``categories``: against ``baseline``, the whole file's lines in a
  category other than unchanged (lcov's differential categories, the change
  review's ranges of this file); a line in none is unchanged code (CBC when
  covered, UBC when not). Kept per snapshot pair and file (``_CATEGORIES``).

``dashboard_line_tests`` pages the named tests that ran one line (live
dashboard only: the static report carries no per-line tests).
"""

from __future__ import annotations

from typing import Any

from ..errors import CoverageError, ErrorCode
from ..memo import Memo
from ..review import cursors
from ..review.annotated_source import annotated_lines
from ..review.budget import MAX_BYTES, MAX_WORDS
from ..review.call import Call
from ..review.selection import file_id

MAX_WINDOW = 2000
DEFAULT_WINDOW = 500
DEFAULT_TESTS = 50
WHOLE = {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES}
# The current side's categories (the baseline's removed lines are on no line of this file).
CURRENT_SIDE = ("UNC", "LBC", "UIC", "GNC", "GBC", "GIC")
# (store, generation, current, baseline, path) -> [[category, start, end], ...]
_CATEGORIES: Memo[list[list[Any]]] = Memo(16)


def source(call: Call) -> dict[str, Any]:
    """The dashboard_source row: one part (lines, outline or categories) of one file's annotation."""
    project, con = call.project, call.con
    snap = project.store.snapshot(call.args["snapshot"], con)
    call.suite = snap.suite
    path: str = call.args["file"]
    part = call.args.get("part") or "lines"
    data: dict[str, Any] = {"snapshot_id": snap.snapshot_id, "file": path, "part": part}
    if part == "outline":
        data["blocks"] = _outline(call, snap.snapshot_id, path)
    elif part == "categories":
        baseline = call.args.get("baseline")
        if not baseline:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                "part=categories compares against a baseline, and none is given",
                "Pass baseline=<snapshot id> (the page's baseline).",
                {"argument": "baseline"},
            )
        base = project.store.snapshot(baseline, con)
        data["baseline_snapshot_id"] = base.snapshot_id
        data.update(_categories(call, snap.snapshot_id, base.snapshot_id, path))
    else:
        data.update(_window(call, snap.snapshot_id, path))
    return {"data": data, "page": None}


def _window(call: Call, snapshot_id: str, path: str) -> dict[str, Any]:
    """One window of annotated lines. The review (task=source, one line) answers the window's claim, the
    file's length and its refusals (an empty file, a start past the end, an unknown path); the lines
    themselves are read as it reads them (``annotated_lines``), whole and without its word budget, which
    a bounded window of the page does not need (fitting 2,000 lines to a budget cost more than reading
    them)."""
    start = int(call.args.get("start") or 1)
    count = int(call.args.get("count") or DEFAULT_WINDOW)
    args: dict[str, Any] = {
        "task": "source",
        "representation": "review",
        "limits": WHOLE,
        "file": path,
        "measurement": {"snapshot_id": snapshot_id},
        "lines": f"{start}-{start}",
    }
    try:
        answer = call.ask("coverage_review", args)
    except CoverageError as error:
        if error.details.get("file_lines") == 0:  # an empty file: no lines, not an error
            return {"start": start, "lines": [], "file_lines": 0, "commit": error.details.get("commit")}
        if error.details.get("file_lines") and start > int(error.details["file_lines"]):
            return {"start": start, "lines": [], "file_lines": int(error.details["file_lines"])}
        raise
    data = answer["data"]
    total = (answer.get("page") or {}).get("total")
    lines: list[dict[str, Any]] = []
    if data.get("ranges"):  # the review shows the text: the window, read the same way
        snap = call.project.store.snapshot(snapshot_id, call.con)
        snap_key = call.project.store.snap_key(snapshot_id, call.con)
        try:  # the file as the review finds it (a repository or a report path), or none: the commit's text
            fid, real = file_id(call, snap_key, path, snapshot_id)
        except CoverageError:
            fid, real = None, path
        lines = annotated_lines(call, snap, snap_key, fid, real, start, start + count - 1) or []
    partial = [line["line"] for line in lines if line["status"] == "partial"]
    if partial:
        missed = _missed_branches(call, snapshot_id, path, partial)
        for line in lines:
            if line["line"] in missed:
                line["missed"] = missed[line["line"]]
    return {
        "start": start,
        "lines": lines,
        "file_lines": int(total) if total is not None else (lines[-1]["line"] if lines else 0),
        "commit": data.get("commit"),
        "claim_status": data.get("claim_status"),
        "reasons": data.get("reasons") or [],
    }


def _file_key(call: Call, snapshot_id: str, path: str) -> tuple[int, int] | None:
    snap = call.project.store.snap_key(snapshot_id, call.con)
    row = call.con.execute("SELECT file_id FROM files WHERE snap = ? AND path = ?", [snap, path]).fetchone()
    return None if row is None else (snap, int(row[0]))


def _missed_branches(call: Call, snapshot_id: str, path: str, lines: list[int]) -> dict[int, list[str]]:
    """Line -> its branches never taken (``block.branch``, or ``block.branch never evaluated``)."""
    key = _file_key(call, snapshot_id, path)
    if key is None:
        return {}
    rows = call.rows(
        """SELECT line, block, branch, taken FROM branches
           WHERE snap = ? AND file_id = ? AND taken <= 0 AND list_contains(?, line)
           ORDER BY line, block, branch""",
        [key[0], key[1], lines],
        detail=("branches",),
    )
    out: dict[int, list[str]] = {}
    for line, block, branch, taken in rows:
        out.setdefault(int(line), []).append(f"{block}.{branch}" + (" never evaluated" if taken < 0 else ""))
    return out


def _outline(call: Call, snapshot_id: str, path: str) -> list[list[int]]:
    """The file's missed blocks, [[first, last], ...]: uncovered runs and partial lines, merged where they touch."""
    key = _file_key(call, snapshot_id, path)
    if key is None:
        return []
    rows = call.rows(
        "SELECT start_line, end_line FROM uncovered_ranges WHERE snap = ? AND file_id = ? ORDER BY start_line",
        [key[0], key[1]],
    )
    blocks: list[list[int]] = []
    for first, last in rows:
        if blocks and first <= blocks[-1][1] + 1:
            blocks[-1][1] = max(blocks[-1][1], int(last))
        else:
            blocks.append([int(first), int(last)])
    return blocks


def _categories(call: Call, current: str, baseline: str, path: str) -> dict[str, Any]:
    """The file's current-side category ranges against ``baseline``, from the change review of this file."""
    failed: list[CoverageError] = []

    def compute() -> list[list[Any]]:
        args: dict[str, Any] = {
            "task": "change",
            "representation": "audit",
            "file": path,
            "limits": {**WHOLE, "max_files": 1},
            "measurement": {"snapshot_id": current},
            "baseline": {"kind": "explicit", "snapshot_id": baseline},
        }
        out: list[list[Any]] = []
        while True:
            try:
                answer = call.ask("coverage_review", args)
            except CoverageError as error:
                failed.append(error)
                return []
            out += [
                [r["category"], r["start"], r["end"]]
                for r in answer["data"].get("ranges") or []
                if r["path"] == path and r["category"] in CURRENT_SIDE
            ]
            following = answer["data"].get("ranges_cursor")
            if not following:
                return sorted(out, key=lambda r: r[1])
            args["cursor"] = following

    key = (str(call.project.store.path), call.project.store.generation, current, baseline, path)
    ranges = _CATEGORIES.peek(key)
    if ranges is None:
        ranges = compute()
        if failed:
            return {"available": False, "reason": failed[0].message, "ranges": []}
        _CATEGORIES.get(key, lambda: ranges)
    return {"available": True, "ranges": ranges}


def line_tests(call: Call) -> dict[str, Any]:
    """The dashboard_line_tests row: a page of the named tests that ran one line of one file."""
    project, con = call.project, call.con
    snap = project.store.snapshot(call.args["snapshot"], con)
    call.suite = snap.suite
    path, line = call.args["file"], int(call.args["line"])
    limit = int(call.args.get("limit") or DEFAULT_TESTS)
    offset = cursors.decode(call, "dashboard_line_tests", snap.snapshot_id, call.args.get("cursor"))
    key = _file_key(call, snap.snapshot_id, path)
    names: list[str] = []
    total = 0
    if key is not None and snap.tests:
        where = "o.snap = ? AND o.file_id = ? AND o.kind = 0 AND o.line = ? AND o.hits > 0"
        counted = call.rows(
            f"SELECT count(DISTINCT o.test_id) FROM test_observations o WHERE {where}",
            [key[0], key[1], line],
            detail=("test_observations",),
        )
        total = int(counted[0][0]) if counted else 0
        rows = call.rows(
            f"""SELECT DISTINCT n.name FROM test_observations o
                JOIN test_names n ON n.snap = o.snap AND n.test_id = o.test_id
                WHERE {where} ORDER BY n.name LIMIT ? OFFSET ?""",
            [key[0], key[1], line, limit, offset],
            detail=("test_names", "test_observations"),
        )
        names = [r[0] for r in rows]
    following = offset + len(names)
    data = {
        "snapshot_id": snap.snapshot_id,
        "file": path,
        "line": line,
        "named_tests": snap.tests,
        "total": total,
        "tests": names,
        "offset": offset,
    }
    more = (
        cursors.encode(call, "dashboard_line_tests", snap.snapshot_id, following)
        if following < total
        else None
    )
    return {"data": data, "page": {"next_cursor": more, "total": total}}
