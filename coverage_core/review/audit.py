"""``coverage_review(task="audit")``: exact records, paged, deliberately larger.

Without ``file``: every file of the snapshot with its exact counters, in path
order. With ``file``: its line records ``[line, hits]``, with the branches and
functions on those lines. Pages never exceed the record cap, the budget or
``limits.max_files`` (files per page; 100 when not given). Cursors are keysets
(the last path or line shown), so ``page.next_cursor`` continues exactly after
the page, and a page always shows at least one record when records remain: a
budget too small for one is ``budget_too_small`` stating what the page needs.
"""

from __future__ import annotations

from typing import Any

from . import cursors
from .budget import RECORD_CAP, Budget, size
from .call import Call
from .context import claim_for_selection
from .selection import Selection, file_id

FILES_PAGE = 100


def audit(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    primary, snap = sel.primary, sel.snaps[0]
    after = cursors.decode_key(call, "audit", sel.scope_key, call.args.get("cursor"))
    data: dict[str, Any] = {"task": "audit", "snapshot_id": primary.snapshot_id, "commit": primary.commit}
    data.update(claim_for_selection(call, sel))
    if call.args.get("file"):
        fid, path = file_id(call, snap, call.args["file"], primary.snapshot_id)
        data["file"] = path
        total = call.value(
            "SELECT count(*) FROM lines WHERE snap = ? AND file_id = ?", [snap, fid], detail=("lines",)
        )
        last_line = _key(after, (int,))[0] if after is not None else 0
        done = call.value(
            "SELECT count(*) FROM lines WHERE snap = ? AND file_id = ? AND line <= ?",
            [snap, fid, last_line],
            detail=("lines",),
        )
        rows = call.rows(
            "SELECT line, hits FROM lines WHERE snap = ? AND file_id = ? AND line > ? ORDER BY line LIMIT ?",
            [snap, fid, last_line, RECORD_CAP],
            detail=("lines",),
        )
        records: list[Any] = [[int(r[0]), int(r[1])] for r in rows]
        data["legend"] = {
            "lines": "[line, hits]",
            "branches": "[line, block, branch, taken (-1: never evaluated)]",
            "functions": "[name, start_line, end_line, hits]",
        }
        data["branches"] = []
        data["functions"] = []
        # Branches and functions go with the page whose lines reach them: those
        # after the previous page's last line, up to this page's last (the last
        # page takes the rest, on lines that are not executable too).
        branches: list[list[Any]] = [
            [int(a), int(b), str(c), int(d)]
            for a, b, c, d in call.rows(
                "SELECT line, block, branch, taken FROM branches WHERE snap = ? AND file_id = ? "
                "AND line > ? ORDER BY line, block, branch",
                [snap, fid, last_line],
                detail=("branches",),
            )
        ]
        functions: list[list[Any]] = [
            [str(a), int(b), int(c), int(d)]
            for a, b, c, d in call.rows(
                "SELECT name, start_line, end_line, hits FROM functions WHERE snap = ? AND file_id = ? "
                "AND start_line > ? ORDER BY start_line, name",
                [snap, fid, last_line],
                detail=("functions",),
            )
        ]

        def page_of(n: int) -> None:
            end = 2**62 if done + n >= total else records[n - 1][0] if n else last_line
            data["lines"] = records[:n]
            data["branches"] = [b for b in branches if b[0] <= end]
            data["functions"] = [f for f in functions if f[1] <= end]

        # Sizes grow with the number of lines: the largest page that fits, by bisection.
        page_of(0)
        if not budget.fits(data):
            raise budget.too_small(*size(data))
        shown, hi = 0, len(records)
        while shown < hi:
            mid = (shown + hi + 1) // 2
            page_of(mid)
            if budget.fits(data):
                shown = mid
            else:
                hi = mid - 1
        if records and not shown:
            page_of(1)  # what this page needs: its first line with its branches and functions
            raise budget.too_small(*size(data))
        page_of(shown)
        following = [records[shown - 1][0]] if shown else None
    else:
        total = call.value("SELECT count(*) FROM files WHERE snap = ?", [snap])
        last_path, last_id = _key(after, (str, int)) if after is not None else ("", -1)
        done = (
            call.value(
                "SELECT count(*) FROM files WHERE snap = ? AND (path, file_id) <= (?, ?)",
                [snap, last_path, last_id],
            )
            if after is not None
            else 0
        )
        given = (call.args.get("limits") or {}).get("max_files")
        rows = call.rows(
            """SELECT path, report_path, mapping, lines_found, lines_hit, branches_found, branches_hit,
                      functions_found, functions_hit, file_id
               FROM files WHERE snap = ? AND (path, file_id) > (?, ?) ORDER BY path, file_id LIMIT ?""",
            [snap, last_path, last_id, min(given or FILES_PAGE, RECORD_CAP)],
        )
        data["legend"] = {
            "files": "[path, report_path, mapping, lines [hit, found], branches [hit, found], functions [hit, found]]"
        }
        records = [
            [r[0], r[1], r[2], [int(r[4]), int(r[3])], [int(r[6]), int(r[5])], [int(r[8]), int(r[7])]]
            for r in rows
        ]
        data["totals"] = {k: v.to_dict() for k, v in primary.totals.items()}
        shown = budget.fit_page(data, "files", records)
        following = [rows[shown - 1][0], int(rows[shown - 1][9])] if shown else None
    more = done + shown < total
    return {
        "data": data,
        "page": {
            "offset": int(done),
            "records": shown,
            "total": int(total),
            # Records remaining means this page showed some (an empty page raised above).
            "next_cursor": cursors.encode_key(call, "audit", sel.scope_key, following)
            if more and following is not None
            else None,
        },
    }


def _key(after: list[Any], kinds: tuple[type, ...]) -> list[Any]:
    """A keyset position of the expected shape, or ``invalid_cursor``."""
    if len(after) != len(kinds) or not all(isinstance(k, t) for k, t in zip(after, kinds)):
        raise cursors.invalid("it carries no valid position")
    return after
