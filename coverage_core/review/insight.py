"""``coverage_review(task="insight")``: where the uncovered code is, ranked.

Files are ranked by uncovered lines; inside them, uncovered ranges (runs of
uncovered executable lines, and executed lines with untaken branches,
precomputed at ingest) are grouped into targets: the enclosing function when
the report names functions, otherwise the file. Targets are ranked by their
uncovered lines; each shows up to three ranges (the largest), with
``region_count`` and ``regions_truncated`` saying what was left out.
Several snapshots (``measurement.snapshot_ids``) are unioned: a line counts as
covered when any of them covered it.
"""

from __future__ import annotations

import bisect
from typing import Any

from . import cursors
from .budget import RECORD_CAP, Budget, record_cap_exceeded, size
from .call import Call
from .context import claim_for_selection
from .select import Selection

RANGES_PER_TARGET = 3
KIND_NAMES = {0: "uncovered", 1: "partial"}


def _union_view(sel: Selection) -> str:
    """SQL for (path, line, hits) over the selected snapshots, unioned by path."""
    snaps = ",".join(str(s) for s in sel.snaps)
    return f"""
        SELECT f.path, l.line, max(l.hits) AS hits
        FROM lines l JOIN files f ON f.snap = l.snap AND f.file_id = l.file_id
        WHERE l.snap IN ({snaps}) GROUP BY f.path, l.line
    """


def ranked_files(call: Call, sel: Selection, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Files with uncovered lines, most uncovered first: one page and the total."""
    if len(sel.snaps) == 1:
        rows = call.rows(
            """SELECT file_id, path, lines_found, lines_hit, count(*) OVER () AS total
               FROM files WHERE snap = ? AND lines_found > lines_hit
               ORDER BY lines_found - lines_hit DESC, path, file_id LIMIT ? OFFSET ?""",
            [sel.snaps[0], limit, offset],
        )
    else:
        rows = call.rows(
            f"""SELECT NULL, path, count(*) AS found, count(*) FILTER (WHERE hits > 0) AS hit,
                       count(*) OVER () AS total
                FROM ({_union_view(sel)}) GROUP BY path HAVING count(*) > count(*) FILTER (WHERE hits > 0)
                ORDER BY found - hit DESC, path LIMIT ? OFFSET ?""",
            [limit, offset],
        )
    total = int(rows[0][4]) if rows else 0
    return [{"file_id": r[0], "path": r[1], "found": int(r[2]), "hit": int(r[3])} for r in rows], total


def _ranges(call: Call, sel: Selection, files: list[dict[str, Any]]) -> dict[str, list[tuple]]:
    """Per path: (start, end, line_count, kind, missed), largest first."""
    out: dict[str, list[tuple]] = {f["path"]: [] for f in files}
    if len(sel.snaps) == 1:
        by_id = {f["file_id"]: f["path"] for f in files}
        for r in call.rows(
            """SELECT file_id, start_line, end_line, line_count, kind, missed FROM uncovered_ranges
               WHERE snap = ? AND list_contains(?, file_id) ORDER BY line_count DESC, start_line""",
            [sel.snaps[0], list(by_id)],
        ):
            out[by_id[r[0]]].append(tuple(r[1:]))
        return out
    for f in files:
        out[f["path"]] = [tuple(r) for r in call.rows(
            f"""SELECT min(line), max(line), count(*), 0, count(*) FROM (
                    SELECT line, hits, row_number() OVER (ORDER BY line)
                         - row_number() OVER (PARTITION BY hits = 0 ORDER BY line) AS grp
                    FROM ({_union_view(sel)}) WHERE path = ?)
                WHERE hits = 0 GROUP BY grp ORDER BY count(*) DESC, min(line)""",
            [f["path"]],
        )]
    return out


def _functions(call: Call, sel: Selection, files: list[dict[str, Any]]) -> dict[str, tuple[list[int], list[str]]]:
    """Per path: sorted function start lines and their names."""
    out: dict[str, tuple[list[int], list[str]]] = {f["path"]: ([], []) for f in files}
    rows = call.rows(
        """SELECT fi.path, fn.start_line, min(fn.name) FROM functions fn
           JOIN files fi ON fi.snap = fn.snap AND fi.file_id = fn.file_id
           WHERE fn.snap = ? AND list_contains(?, fi.path) AND fn.start_line > 0
           GROUP BY fi.path, fn.start_line ORDER BY fi.path, fn.start_line""",
        [sel.snaps[0], list(out)],
    )
    for path, start, name in rows:
        out[path][0].append(int(start))
        out[path][1].append(str(name))
    return out


def _group_targets(call: Call, sel: Selection, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Union path: group each file's ranges by enclosing function in Python."""
    ranges = _ranges(call, sel, files)
    functions = _functions(call, sel, files)
    targets = []
    for f in files:
        starts, names = functions[f["path"]]
        groups: dict[str | None, list[tuple]] = {}
        for r in ranges[f["path"]]:
            i = bisect.bisect_right(starts, r[0]) - 1
            groups.setdefault(names[i] if i >= 0 else None, []).append(r)
        for name, rs in groups.items():
            targets.append({
                "path": f["path"],
                "function": name,
                "uncovered_lines": sum(r[2] for r in rs if r[3] == 0),
                "partial_lines": sum(1 for r in rs if r[3] == 1),
                "ranges": rs,  # largest first
                "region_count": len(rs),
            })
    return targets


def targets_for(
    call: Call, sel: Selection, files: list[dict[str, Any]], *, limit: int, per_target: int | None
) -> list[dict[str, Any]]:
    """The files' uncovered ranges grouped by enclosing function (or the whole
    file), ranked by uncovered size; ``per_target`` ranges each (None: all)."""
    if not files:
        return []
    if len(sel.snaps) > 1:
        targets = _group_targets(call, sel, files)
        targets.sort(key=lambda t: (-(t["uncovered_lines"] + t["partial_lines"]), t["path"], t["function"] or ""))
        return targets[:limit]
    by_id = {f["file_id"]: f["path"] for f in files}
    rows = call.rows(
        """SELECT file_id, function, uncovered, partial, ranges[1:$per], region_count
           FROM uncovered_targets WHERE snap = $snap AND list_contains($ids, file_id)
           ORDER BY uncovered + partial DESC, file_id, function NULLS FIRST LIMIT $limit""",
        {"snap": sel.snaps[0], "ids": list(by_id), "per": per_target or 2**31 - 1, "limit": limit},
    )
    return [
        {
            "path": by_id[r[0]],
            "function": r[1],
            "uncovered_lines": int(r[2]),
            "partial_lines": int(r[3]),
            "ranges": [tuple(x) for x in r[4]],
            "region_count": int(r[5]),
        }
        for r in rows
    ]


def _render_target(t: dict[str, Any], representation: str) -> Any:
    shown = t["ranges"] if representation == "audit" else t["ranges"][:RANGES_PER_TARGET]
    truncated = len(shown) < t["region_count"]
    if representation == "compact":
        return [
            t["path"], t["function"], t["uncovered_lines"], t["partial_lines"],
            [[r[0], r[1], r[2]] for r in sorted(shown)], t["region_count"], truncated,
        ]
    out: dict[str, Any] = {
        "path": t["path"],
        "function": t["function"],
        "uncovered_lines": t["uncovered_lines"],
        "partial_lines": t["partial_lines"],
        "region_count": t["region_count"],
        "regions_truncated": truncated,
    }
    if representation == "review":
        out["ranges"] = [
            {"start": r[0], "end": r[1], "line_count": r[2], "kind": KIND_NAMES[r[3]]} for r in sorted(shown)
        ]
    else:
        out["ranges"] = [
            {"start": r[0], "end": r[1], "line_count": r[2], "kind": KIND_NAMES[r[3]], "missed_branches": r[4] if r[3] else 0}
            for r in sorted(shown)
        ]
    return out


def insight(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    representation = call.args.get("representation", "compact")
    offset = cursors.decode(call, "insight", sel.scope_key, call.args.get("cursor"))
    if budget.max_files > RECORD_CAP:
        raise record_cap_exceeded("insight", budget.max_files)
    files, total = ranked_files(call, sel, offset, budget.max_files)
    per_target = None if representation == "audit" else RANGES_PER_TARGET
    targets = targets_for(call, sel, files, limit=budget.max_regions, per_target=per_target)
    primary = sel.primary
    data: dict[str, Any] = {
        "task": "insight",
        "snapshot_ids": [s.snapshot_id for s in sel.snapshots],
        "commit": (primary.commit or "")[:12],
        "files_with_gaps": total,
    }
    if representation == "compact":
        data["legend"] = {
            "files": "[path, uncovered_lines, executable_lines]",
            "targets": "[path, function, uncovered_lines, partial_lines, [[start,end,line_count]...], region_count, regions_truncated]",
        }
        file_items: list[Any] = [[f["path"], f["found"] - f["hit"], f["found"]] for f in files]
    else:
        file_items = [
            {"path": f["path"], "uncovered_lines": f["found"] - f["hit"], "executable_lines": f["found"]} for f in files
        ]
    data.update(claim_for_selection(call, sel))
    # "true" is no longer than "false": setting the flag after fitting keeps the fit.
    data["targets_truncated"] = False
    data["targets"] = []
    # Files first (the page the cursor advances over), then targets of the files shown.
    shown_files = budget.fit_list(data, "files", file_items)
    if file_items and not shown_files:
        data["files"] = file_items[:1]
        raise budget.too_small(*size(data))
    kept = {f["path"] for f in files[:shown_files]}
    rendered = [_render_target(t, representation) for t in targets if t["path"] in kept]
    shown = budget.fit_list(data, "targets", rendered)
    data["targets_truncated"] = shown < len(rendered)
    next_offset = offset + shown_files
    page = {
        "offset": offset,
        "files": shown_files,
        "total_files": total,
        "next_cursor": cursors.encode(call, "insight", sel.scope_key, next_offset) if next_offset < total else None,
    }
    return {"data": data, "page": page}
