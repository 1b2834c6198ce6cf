"""``coverage_review(task="history")``: how coverage moved over a suite's snapshots.

The answer carries two detailed points (the newest snapshot of the window and
the oldest one, so the change across the window is explicit) and a compact
aggregate of every point in the window: count, first/last/min/max covered
share as exact ``[hit, found]`` pairs. It covers the whole project, one file
(``file``) or one line (``file`` + ``lines``). Older windows continue with
``page.next_cursor``.
"""

from __future__ import annotations

from typing import Any

from ..errors import CoverageError, ErrorCode
from . import cursors
from .budget import Budget, size
from .call import Call
from .context import claim_for_selection, main_counter
from .select import Selection, line_range

WINDOW = 20


def _series(call: Call, sel: Selection, offset: int) -> tuple[list[tuple], bool]:
    """(snapshot_id, created_at, commit, hit, found) newest first, one window."""
    primary = sel.primary
    file = call.args.get("file")
    lines = line_range(call.args.get("lines"))
    counter = main_counter(primary) or "lines"
    base = "SELECT s.snap FROM snapshots s WHERE s.suite = ? AND s.snap <= ?"
    params: list[Any] = [primary.suite, sel.snaps[0]]
    if file is None:
        sql = f"""
            SELECT s.snapshot_id, s.created_at, s.commit_sha, t.hit, t.found
            FROM snapshots s JOIN snapshot_totals t ON t.snap = s.snap AND t.counter = ?
            WHERE s.snap IN ({base}) ORDER BY s.snap DESC LIMIT ? OFFSET ?"""
        params = [counter, *params]
    elif lines is None:
        sql = f"""
            SELECT s.snapshot_id, s.created_at, s.commit_sha, f.lines_hit, f.lines_found
            FROM snapshots s JOIN files f ON f.snap = s.snap AND f.path = ?
            WHERE s.snap IN ({base}) ORDER BY s.snap DESC LIMIT ? OFFSET ?"""
        params = [file, *params]
    else:
        sql = f"""
            SELECT s.snapshot_id, s.created_at, s.commit_sha,
                   count(*) FILTER (WHERE l.hits > 0), count(l.line)
            FROM snapshots s JOIN files f ON f.snap = s.snap AND f.path = ?
                 LEFT JOIN lines l ON l.snap = s.snap AND l.file_id = f.file_id AND l.line BETWEEN ? AND ?
            WHERE s.snap IN ({base}) GROUP BY s.snap, s.snapshot_id, s.created_at, s.commit_sha
            ORDER BY s.snap DESC LIMIT ? OFFSET ?"""
        params = [file, lines[0], lines[1], *params]
    rows = call.rows(sql, [*params, WINDOW + 1, offset])
    return rows[:WINDOW], len(rows) > WINDOW


def _share(hit: int, found: int) -> float | None:
    return None if not found else hit / found


def history(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    representation = call.args.get("representation", "compact")
    offset = cursors.decode(call, "history", sel.scope_key, call.args.get("cursor"))
    if call.args.get("lines") and not call.args.get("file"):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT, "lines needs file: a line's history is asked of one file",
            "Pass file (repository-relative) together with lines.",
        )
    rows, more = _series(call, sel, offset)
    subject = "project" if not call.args.get("file") else ("line" if call.args.get("lines") else "file")
    data: dict[str, Any] = {
        "task": "history",
        "suite": sel.primary.suite,
        "subject": subject,
        "counter": main_counter(sel.primary) if subject == "project" else "lines",
    }
    if call.args.get("file"):
        data["file"] = call.args["file"]
    if call.args.get("lines"):
        data["lines"] = call.args["lines"]

    def point(r: tuple) -> Any:
        if representation == "compact":
            return [r[0], r[1].isoformat(timespec="seconds"), (r[2] or "")[:12], int(r[3]), int(r[4])]
        return {"snapshot_id": r[0], "created_at": r[1].isoformat(), "commit": r[2], "hit": int(r[3]), "found": int(r[4])}

    if representation == "compact":
        data["legend"] = {"points": "[snapshot_id, created_at, commit, hit, found]"}
    if rows:
        shares = [(_share(int(r[3]), int(r[4])), r) for r in rows]
        measured = [(s, r) for s, r in shares if s is not None]
        lo = min(measured, key=lambda x: x[0])[1] if measured else rows[-1]
        hi = max(measured, key=lambda x: x[0])[1] if measured else rows[0]
        data["points"] = [point(rows[0])] + ([point(rows[-1])] if len(rows) > 1 else [])
        data["window"] = {
            "snapshots": len(rows),
            "newest": [int(rows[0][3]), int(rows[0][4])],
            "oldest": [int(rows[-1][3]), int(rows[-1][4])],
            "min": [int(lo[3]), int(lo[4])],
            "max": [int(hi[3]), int(hi[4])],
            "change": int(rows[0][3]) - int(rows[-1][3]),
        }
        if representation == "audit":
            data["all_points"] = [point(r) for r in rows]
    else:
        data["points"] = []
        data["window"] = {"snapshots": 0}
    data.update(claim_for_selection(call, sel))
    if not rows and subject != "project":
        data["claim_status"] = "not_measured"
        data["reasons"] = [f"{call.args['file']!r} is in no snapshot of suite {sel.primary.suite!r}"] + data["reasons"]
    # The page is the points an answer carries in full: in the audit
    # representation every point of the window, cut to the budget, and the
    # cursor continues right after the last point shown.
    paged = len(rows)
    if "all_points" in data:
        data["points_truncated"] = False
        paged = budget.fit_list(data, "all_points", data["all_points"])
        data["points_truncated"] = paged < len(rows)
        if rows and not paged:
            data["all_points"] = [point(rows[0])]
            raise budget.too_small(*size(data))
    if not budget.fits(data):
        raise budget.too_small(*size(data))
    next_offset = offset + paged
    has_more = more or paged < len(rows)
    return {
        "data": data,
        "page": {"offset": offset, "points": paged,
                 "next_cursor": cursors.encode(call, "history", sel.scope_key, next_offset) if has_more else None},
    }
