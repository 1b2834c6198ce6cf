"""``coverage_review(task="audit")``: exact records, paged, deliberately larger.

Without ``file``: every file of the snapshot with its exact counters, in path
order. With ``file``: its line records ``[line, hits]``, with the branches and
functions on those lines. Pages never exceed the record cap or the budget;
``page.next_cursor`` continues exactly where the page stopped.
"""

from __future__ import annotations

from typing import Any

from . import cursors
from .budget import RECORD_CAP, Budget, size
from .call import Call
from .context import claim_for_selection
from .select import Selection, file_id

FILES_PAGE = 100


def audit(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    primary, snap = sel.primary, sel.snaps[0]
    offset = cursors.decode(call, "audit", sel.scope_key, call.args.get("cursor"))
    data: dict[str, Any] = {"task": "audit", "snapshot_id": primary.snapshot_id, "commit": primary.commit}
    data.update(claim_for_selection(call, sel))
    if call.args.get("file"):
        fid, path = file_id(call, snap, call.args["file"], primary.snapshot_id)
        data["file"] = path
        total = call.one("SELECT count(*) FROM lines WHERE snap = ? AND file_id = ?", [snap, fid])[0]
        rows = call.rows(
            "SELECT line, hits FROM lines WHERE snap = ? AND file_id = ? ORDER BY line LIMIT ? OFFSET ?",
            [snap, fid, RECORD_CAP, offset],
        )
        records: list[Any] = [[int(r[0]), int(r[1])] for r in rows]
        data["legend"] = {"lines": "[line, hits]", "branches": "[line, block, branch, taken (-1: never evaluated)]",
                          "functions": "[name, start_line, end_line, hits]"}
        data["branches"] = []
        data["functions"] = []
        shown = budget.fit_list(data, "lines", records)
        if shown:
            first, last = records[0][0], records[shown - 1][0]
            data["branches"] = [
                [int(a), int(b), str(c), int(d)] for a, b, c, d in call.rows(
                    "SELECT line, block, branch, taken FROM branches WHERE snap = ? AND file_id = ? "
                    "AND line BETWEEN ? AND ? ORDER BY line, block, branch", [snap, fid, first, last])
            ]
            data["functions"] = [
                [str(a), int(b), int(c), int(d)] for a, b, c, d in call.rows(
                    "SELECT name, start_line, end_line, hits FROM functions WHERE snap = ? AND file_id = ? "
                    "AND start_line BETWEEN ? AND ? ORDER BY start_line, name", [snap, fid, first, last])
            ]
            # Branch and function records share the budget: give lines back until all fit.
            while shown and not budget.fits(data):
                shown -= 1
                data["lines"] = records[:shown]
                last = records[shown - 1][0] if shown else 0
                data["branches"] = [b for b in data["branches"] if b[0] <= last]
                data["functions"] = [f for f in data["functions"] if f[1] <= last]
        if not shown and total > offset:
            raise budget.too_small(*size(data))
    else:
        total = call.one("SELECT count(*) FROM files WHERE snap = ?", [snap])[0]
        rows = call.rows(
            """SELECT path, report_path, mapping, lines_found, lines_hit, branches_found, branches_hit,
                      functions_found, functions_hit
               FROM files WHERE snap = ? ORDER BY path, file_id LIMIT ? OFFSET ?""",
            [snap, min(FILES_PAGE, RECORD_CAP), offset],
        )
        data["legend"] = {"files": "[path, report_path, mapping, lines [hit, found], branches [hit, found], functions [hit, found]]"}
        records = [[r[0], r[1], r[2], [int(r[4]), int(r[3])], [int(r[6]), int(r[5])], [int(r[8]), int(r[7])]] for r in rows]
        data["totals"] = {k: v.to_dict() for k, v in primary.totals.items()}
        shown = budget.fit_list(data, "files", records)
    next_offset = offset + shown
    return {
        "data": data,
        "page": {
            "offset": offset,
            "records": shown,
            "total": int(total),
            "next_cursor": cursors.encode(call, "audit", sel.scope_key, next_offset) if next_offset < total else None,
        },
    }
