"""``coverage_review(task="insight")``: where the uncovered code is, ranked.

Files with gaps are ranked by uncovered lines, then by partial lines
(executed lines with an untaken branch): a file whose statements all ran but
whose branches did not is a file with gaps, as coverage.py reports it.
``file`` focuses the answer on one file.

Inside a file, gaps are grouped into targets: the innermost function that
encloses each line (the function with the latest start whose
``start_line..end_line`` holds the line; a function of unknown end, e.g. an
LCOV ``FN`` without one, reaches to the end of the file), or the file itself
(``function: null``) for code outside any function. A range is a run of
consecutive uncovered executable lines of one function (a run crossing into a
nested or a sibling function is split there), or one partial line. Targets are
ranked by their uncovered plus partial lines; each shows up to three ranges
(the largest), with ``region_count`` and ``regions_truncated`` saying what was
left out. Several snapshots (``measurement.snapshot_ids``) are unioned: a line
counts as covered when any of them covered it, a branch as taken when any of
them took it.

Paging, never a silent cut: a page starts a group of files (``files``, up to
``limits.max_files``) and lists their targets, most uncovered first, up to
``limits.max_regions`` and the budget; ``targets_truncated`` says the group
has more, and ``page.next_cursor`` continues with them (a page that only
continues targets lists no files), then with the next group of files. A target
whose ranges are cut carries its own cursor (``ranges_cursor``); the same call
with it answers that target with its following ranges.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from . import cursors, missed
from .budget import RECORD_CAP, Budget, record_cap_exceeded, size
from .call import Call
from .context import claim_for_selection
from .selection import Selection, unknown_file

RANGES_PER_TARGET = 3
KIND_NAMES = {0: "uncovered", 1: "partial"}
# A function whose end is unknown (end_line 0) reaches past any line.
_OPEN_END = 2**62


# The detail tables ``_union_view`` and ``_union_partials`` read, for the queries built on them to declare.
UNION_READS = ("lines", "branches")


def _union_view(sel: Selection) -> str:
    """SQL for (path, line, hits) over the selected snapshots, unioned by path."""
    snaps = ",".join(str(s) for s in sel.snaps)
    return f"""
        SELECT f.path, l.line, max(l.hits) AS hits
        FROM lines l JOIN files f ON f.snap = l.snap AND f.file_id = l.file_id
        WHERE l.snap IN ({snaps}) GROUP BY f.path, l.line
    """


def _union_partials(sel: Selection) -> str:
    """SQL for (path, line, missed): executed lines with branches no selected snapshot took."""
    snaps = ",".join(str(s) for s in sel.snaps)
    return f"""
        SELECT b.path, b.line, count(*) FILTER (WHERE b.taken <= 0) AS missed FROM (
            SELECT f.path, br.line, br.block, br.branch, max(br.taken) AS taken
            FROM branches br JOIN files f ON f.snap = br.snap AND f.file_id = br.file_id
            WHERE br.snap IN ({snaps}) GROUP BY ALL) b
        JOIN ({_union_view(sel)}) l ON l.path = b.path AND l.line = b.line
        WHERE l.hits > 0 GROUP BY b.path, b.line HAVING count(*) FILTER (WHERE b.taken <= 0) > 0
    """


def ranked_files(
    call: Call, sel: Selection, offset: int, limit: int, path: str | None = None
) -> tuple[list[dict[str, Any]], int]:
    """Files with uncovered or partial lines, most uncovered first: one page and the total.

    ``path`` keeps only that file (matched by repository or report path). Read once per snapshots and
    page (stored snapshots never change): every page of insight, source and all asks for it.
    """
    key = ("ranked_files", sel.scope_key, offset, limit, path)
    found: tuple[list[dict[str, Any]], int] = call.project.store.derived.get(
        key, lambda: _ranked_files(call, sel, offset, limit, path)
    )
    return found


def _ranked_files(
    call: Call, sel: Selection, offset: int, limit: int, path: str | None
) -> tuple[list[dict[str, Any]], int]:
    if len(sel.snaps) == 1:
        # Uncovered and partial lines as the detail holds them (the stored runs), so a file's figures are
        # the sums of its targets' figures.
        only = "AND (f.path = $path OR f.report_path = $path)" if path is not None else ""
        rows = call.rows(
            f"""SELECT f.file_id, f.path, f.lines_found, p.uncovered, p.partial, count(*) OVER () AS total
                FROM files f JOIN (
                    SELECT file_id, coalesce(sum(line_count) FILTER (WHERE kind = 0), 0) AS uncovered,
                           count(*) FILTER (WHERE kind = 1) AS partial
                    FROM uncovered_ranges WHERE snap = $snap GROUP BY file_id) p ON p.file_id = f.file_id
                WHERE f.snap = $snap {only}
                ORDER BY p.uncovered DESC, p.partial DESC, f.path, f.file_id
                LIMIT $limit OFFSET $offset""",
            {"snap": sel.snaps[0], "limit": limit, "offset": offset, **({"path": path} if path else {})},
        )
    else:
        only = "WHERE l.path = $path" if path is not None else ""
        rows = call.rows(
            f"""SELECT NULL, l.path, count(*) AS found, count(*) FILTER (WHERE l.hits = 0) AS uncovered,
                       coalesce(any_value(p.partial), 0) AS partial, count(*) OVER () AS total
                FROM ({_union_view(sel)}) l
                LEFT JOIN (SELECT path, count(*) AS partial FROM ({_union_partials(sel)}) GROUP BY path) p
                  ON p.path = l.path
                {only}
                GROUP BY l.path
                HAVING count(*) > count(*) FILTER (WHERE l.hits > 0) OR coalesce(any_value(p.partial), 0) > 0
                ORDER BY uncovered DESC, partial DESC, l.path LIMIT $limit OFFSET $offset""",
            {"limit": limit, "offset": offset, **({"path": path} if path else {})},
            detail=UNION_READS,
        )
    total = int(rows[0][5]) if rows else 0
    return [
        {"file_id": r[0], "path": r[1], "found": int(r[2]), "uncovered": int(r[3]), "partial": int(r[4])}
        for r in rows
    ], total


def _detail(
    call: Call, sel: Selection, files: list[dict[str, Any]]
) -> dict[str, dict[str, list[tuple[Any, ...]]]]:
    """Per path: its executable lines (line, hits), partial lines (line, missed) and
    functions (start, end, name), each sorted by line."""
    out: dict[str, dict[str, list[tuple[Any, ...]]]] = {
        f["path"]: {"lines": [], "partial": [], "functions": [], "branches": []} for f in files
    }
    paths = list(out)
    if len(sel.snaps) == 1:
        snap = sel.snaps[0]
        by_id = {int(f["file_id"]): f["path"] for f in files}
        ids = list(by_id)
        for fid, line, hits in call.rows(
            "SELECT file_id, line, hits FROM lines WHERE snap = ? AND list_contains(?, file_id) ORDER BY file_id, line",
            [snap, ids],
            detail=("lines",),
        ):
            out[by_id[fid]]["lines"].append((int(line), int(hits)))
        for fid, line, missed in call.rows(
            """SELECT file_id, start_line, missed FROM uncovered_ranges
               WHERE snap = ? AND kind = 1 AND list_contains(?, file_id) ORDER BY file_id, start_line""",
            [snap, ids],
        ):
            out[by_id[fid]]["partial"].append((int(line), int(missed)))
        functions = call.rows(
            """SELECT file_id, start_line, end_line, name FROM functions
               WHERE snap = ? AND start_line > 0 AND list_contains(?, file_id)""",
            [snap, ids],
            detail=("functions",),
        )
        functions = [(by_id[r[0]], *r[1:]) for r in functions]
        # The untaken branches of partial lines only, each with its line's branch count.
        branches = call.rows(
            """SELECT b.file_id, b.line, b.block, b.branch, b.taken, b.total FROM (
                   SELECT *, count(*) OVER (PARTITION BY file_id, line) AS total FROM branches
                   WHERE snap = ? AND list_contains(?, file_id)) b
               SEMI JOIN uncovered_ranges u
                 ON u.snap = ? AND u.kind = 1 AND u.file_id = b.file_id AND u.start_line = b.line
               WHERE b.taken <= 0 ORDER BY b.file_id, b.line, b.block""",
            [snap, ids, snap],
            detail=("branches",),
        )
        branches = [(by_id[r[0]], *r[1:]) for r in branches]
    else:
        for path, line, hits in call.rows(
            f"SELECT path, line, hits FROM ({_union_view(sel)}) WHERE list_contains(?, path) ORDER BY path, line",
            [paths],
            detail=UNION_READS,
        ):
            out[path]["lines"].append((int(line), int(hits)))
        for path, line, missed in call.rows(
            f"SELECT path, line, missed FROM ({_union_partials(sel)}) WHERE list_contains(?, path) ORDER BY path, line",
            [paths],
            detail=UNION_READS,
        ):
            out[path]["partial"].append((int(line), int(missed)))
        snaps = ",".join(str(s) for s in sel.snaps)
        functions = call.rows(
            f"""SELECT DISTINCT f.path, fn.start_line, fn.end_line, fn.name FROM functions fn
                JOIN files f ON f.snap = fn.snap AND f.file_id = fn.file_id
                WHERE fn.snap IN ({snaps}) AND fn.start_line > 0 AND list_contains(?, f.path)""",
            [paths],
            detail=("functions",),
        )
        branches = call.rows(
            f"""SELECT b.* FROM (
                    SELECT *, count(*) OVER (PARTITION BY path, line) AS total FROM (
                        SELECT f.path, br.line, br.block, br.branch, max(br.taken) AS taken FROM branches br
                        JOIN files f ON f.snap = br.snap AND f.file_id = br.file_id
                        WHERE br.snap IN ({snaps}) AND list_contains(?, f.path) GROUP BY ALL)) b
                SEMI JOIN ({_union_partials(sel)}) p ON p.path = b.path AND p.line = b.line
                WHERE b.taken <= 0 ORDER BY ALL""",
            [paths],
            detail=UNION_READS,
        )
    for path, line, block, branch, taken, total in branches:
        out[path]["branches"].append((int(line), int(block), str(branch), int(taken), int(total)))
    for path, start, end, name in functions:
        start, end = int(start), int(end)
        out[path]["functions"].append((start, end if end >= start else _OPEN_END, str(name)))
    for d in out.values():
        # Of functions starting on one line the widest first, so the innermost is pushed last.
        d["functions"].sort(key=lambda f: (f[0], -f[1], f[2]))
    return out


class _Innermost:
    """The innermost function enclosing each of an increasing sequence of lines.

    A stack of the functions started so far: a function whose end lies before
    the line can never enclose a later one, so it is dropped from the top; what
    is left on top is the latest-starting function that still encloses the line.
    """

    def __init__(self, functions: list[tuple[int, int, str]]) -> None:
        self.functions = functions
        self.next = 0
        self.stack: list[tuple[int, int, str]] = []

    def at(self, line: int) -> str | None:
        while self.next < len(self.functions) and self.functions[self.next][0] <= line:
            self.stack.append(self.functions[self.next])
            self.next += 1
        while self.stack and self.stack[-1][1] < line:
            self.stack.pop()
        return self.stack[-1][2] if self.stack else None


def _file_targets(path: str, d: dict[str, list[tuple[Any, ...]]], fmt: str) -> list[dict[str, Any]]:
    """One file's targets; each range is (start, end, line_count, kind, missed, missing): kind 0 a run of
    uncovered lines, 1 a partial line with ``missed`` untaken branches, described in ``missing``."""
    partial = dict(d["partial"])
    on_line: dict[int, list[tuple[int, str, int]]] = {}
    totals: dict[int, int] = {}
    for line, block, branch, taken, total in d["branches"]:  # the untaken branches of partial lines
        on_line.setdefault(line, []).append((block, branch, taken))
        totals[line] = total
    inner = _Innermost(d["functions"])
    groups: dict[str | None, list[tuple[Any, ...]]] = {}
    run: list[Any] | None = None  # [function, start, end, count]

    def close() -> None:
        if run is not None:
            groups.setdefault(run[0], []).append((run[1], run[2], run[3], 0, run[3], None))

    for line, hits in d["lines"]:
        if hits > 0:
            close()
            run = None
            if line in partial:
                function = inner.at(line)
                untaken = sorted(on_line.get(line, []), key=lambda r: (r[0], len(r[1]), r[1]))
                missing = missed.describe(fmt, untaken, totals.get(line, len(untaken)), function)
                groups.setdefault(function, []).append((line, line, 1, 1, partial[line], missing))
            continue
        function = inner.at(line)
        if run is not None and run[0] == function:
            run[2], run[3] = line, run[3] + 1
        else:
            close()
            run = [function, line, line, 1]
    close()
    targets = []
    for function, ranges in groups.items():
        ranges.sort(key=lambda r: (-r[2], r[0]))  # largest first
        targets.append(
            {
                "path": path,
                "function": function,
                "uncovered_lines": sum(r[2] for r in ranges if r[3] == 0),
                "partial_lines": sum(1 for r in ranges if r[3] == 1),
                "ranges": ranges,
                "region_count": len(ranges),
            }
        )
    return targets


# Target counts by (repository, snapshot ids, file): a snapshot never changes, and counting walks every
# gap line of the snapshot.
_COUNTS: OrderedDict[tuple[str, str, str | None], int] = OrderedDict()
_COUNTS_SIZE = 64
_counts_lock = threading.Lock()


def target_count(call: Call, sel: Selection, path: str | None) -> int:
    key = (call.project.checkout.repo_key, sel.scope_key, path)
    with _counts_lock:
        if key in _COUNTS:
            _COUNTS.move_to_end(key)
            return _COUNTS[key]
    count = _count_targets(call, sel, path)
    with _counts_lock:
        _COUNTS[key] = count
        while len(_COUNTS) > _COUNTS_SIZE:
            _COUNTS.popitem(last=False)
    return count


def _count_targets(call: Call, sel: Selection, path: str | None) -> int:
    """How many targets the files with gaps (or ``path``) have in all, whatever a page shows: the distinct
    innermost functions (``_Innermost``, as ``_file_targets`` groups them) of their uncovered and partial
    lines, read as two sorted columns and walked once per file."""
    if len(sel.snaps) == 1:
        only = "AND (f.path = $path OR f.report_path = $path)" if path is not None else ""
        gaps = f"""SELECT u.file_id AS k, u.start_line AS line FROM uncovered_ranges u
                   JOIN files f ON f.snap = u.snap AND f.file_id = u.file_id
                   WHERE u.snap = $snap AND u.kind = 1 {only}
                   UNION ALL SELECT l.file_id, l.line FROM lines l
                   JOIN files f ON f.snap = l.snap AND f.file_id = l.file_id
                   WHERE l.snap = $snap AND l.hits = 0 {only}"""
        functions = """SELECT file_id AS k, start_line, end_line, name FROM functions
                       WHERE snap = $snap AND start_line > 0"""
        params: dict[str, Any] = {"snap": sel.snaps[0]}
    else:
        snaps = ",".join(str(s) for s in sel.snaps)
        only = "WHERE path = $path" if path is not None else ""
        gaps = f"""SELECT path AS k, line FROM (
                       SELECT path, line FROM ({_union_partials(sel)})
                       UNION ALL SELECT path, line FROM ({_union_view(sel)}) WHERE hits = 0) {only}"""
        functions = f"""SELECT DISTINCT f.path AS k, fn.start_line, fn.end_line, fn.name FROM functions fn
                        JOIN files f ON f.snap = fn.snap AND f.file_id = fn.file_id
                        WHERE fn.snap IN ({snaps}) AND fn.start_line > 0"""
        params = {}
    if path is not None:
        params["path"] = path
    lines: dict[Any, list[int]] = {}
    for k, line in call.rows(f"SELECT k, line FROM ({gaps}) ORDER BY k, line", params, detail=UNION_READS):
        lines.setdefault(k, []).append(int(line))
    by_file: dict[Any, list[tuple[int, int, str]]] = {k: [] for k in lines}
    for k, start, end, name in call.rows(
        f"SELECT * FROM ({functions}) WHERE k IN (SELECT DISTINCT k FROM ({gaps}))",
        params,
        detail=(*UNION_READS, "functions"),
    ):
        start, end = int(start), int(end)
        by_file[k].append((start, end if end >= start else _OPEN_END, str(name)))
    count = 0
    for k, numbers in lines.items():
        fns = sorted(by_file[k], key=lambda f: (f[0], -f[1], f[2]))
        inner = _Innermost(fns)
        count += len({inner.at(n) for n in numbers})
    return count


def _rank(t: dict[str, Any]) -> tuple[Any, ...]:
    return (-(t["uncovered_lines"] + t["partial_lines"]), t["path"], t["function"] or "")


def all_targets(call: Call, sel: Selection, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every target of ``files``, ranked, with every range (largest first). Computed once per snapshots and
    files (stored snapshots never change; the store forgets it when snapshots are deleted): a walk over
    every line of the files, 0.1-1 s on the SQLite amalgamation, that every page and repeat would redo (kept
    with the other whole-file values: the last few only).
    Callers copy what they change (``targets_for``)."""
    if not files:
        return []
    key = ("insight_targets", sel.scope_key, tuple(f["path"] for f in files))
    targets: list[dict[str, Any]] = call.project.store.whole_files.get(
        key, lambda: _targets(call, sel, files)
    )
    return targets


def _targets(call: Call, sel: Selection, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    detail = _detail(call, sel, files)
    fmt = sel.primary.format
    targets = [t for f in files for t in _file_targets(f["path"], detail[f["path"]], fmt)]
    targets.sort(key=_rank)
    return targets


def targets_for(
    call: Call, sel: Selection, files: list[dict[str, Any]], *, limit: int, per_target: int | None
) -> list[dict[str, Any]]:
    """The files' targets, ranked by uncovered size; ``per_target`` ranges each (None: all)."""
    targets = all_targets(call, sel, files)[:limit]
    if per_target is not None:
        targets = [{**t, "ranges": t["ranges"][:per_target]} for t in targets]
    return targets


def _render_target(
    t: dict[str, Any], representation: str, shown: list[tuple[Any, ...]], more: str | None
) -> Any:
    """``shown``: the target's ranges on this page; ``more``: the cursor to its following ranges."""
    truncated = more is not None
    if representation == "compact":
        return [
            t["path"],
            t["function"],
            t["uncovered_lines"],
            t["partial_lines"],
            [_compact_range(r) for r in sorted(shown)],
            t["region_count"],
            truncated,
            more,
        ]
    out: dict[str, Any] = {
        "path": t["path"],
        "function": t["function"],
        "uncovered_lines": t["uncovered_lines"],
        "partial_lines": t["partial_lines"],
        "region_count": t["region_count"],
        "regions_truncated": truncated,
        "ranges_cursor": more,
    }
    out["ranges"] = []
    for r in sorted(shown):
        entry: dict[str, Any] = {"start": r[0], "end": r[1], "line_count": r[2], "kind": KIND_NAMES[r[3]]}
        if representation != "review":
            entry["missed_branches"] = r[4] if r[3] else 0
        if r[3]:
            entry["missing"] = r[5]
        out["ranges"].append(entry)
    return out


def _compact_range(r: tuple[Any, ...]) -> list[Any]:
    """[start, end, line_count] for uncovered lines; [line, line, 1, "partial", missing] for a partial one."""
    return [r[0], r[1], r[2]] if r[3] == 0 else [r[0], r[1], r[2], "partial", r[5]]


def _head(call: Call, sel: Selection, total: int, representation: str) -> dict[str, Any]:
    primary = sel.primary
    data: dict[str, Any] = {
        "task": "insight",
        "snapshot_ids": [s.snapshot_id for s in sel.snapshots],
        "commit": (primary.commit or "")[:12],
        "files_with_gaps": total,
    }
    if call.args.get("file"):
        data["file"] = call.args["file"]
    if representation == "compact":
        data["legend"] = {
            "files": "[path, uncovered_lines, executable_lines, partial_lines]",
            "targets": "[path, function, uncovered_lines, partial_lines, ranges, region_count, regions_truncated, "
            "ranges_cursor]",
            "ranges": "[start,end,line_count] uncovered; [line,line,1,partial,[missed branches]] partial",
        }
    data.update(claim_for_selection(call, sel))
    return data


def _file_item(f: dict[str, Any], representation: str) -> Any:
    if representation == "compact":
        return [f["path"], f["uncovered"], f["found"], f["partial"]]
    return {
        "path": f["path"],
        "uncovered_lines": f["uncovered"],
        "executable_lines": f["found"],
        "partial_lines": f["partial"],
    }


def _ranges_cursor(call: Call, sel: Selection, t: dict[str, Any], at: int) -> str:
    return cursors.encode_key(call, "insight", sel.scope_key, ["ranges", t["path"], t["function"], at])


def insight(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    representation = call.args.get("representation", "compact")
    if budget.max_files > RECORD_CAP:
        raise record_cap_exceeded("insight", budget.max_files)
    # Position: ["group", first file, files in the group (0: a new group), first target] or
    # ["ranges", path, function, first range] for one target's following ranges.
    key = cursors.decode_key(call, "insight", sel.scope_key, call.args.get("cursor")) or ["group", 0, 0, 0]
    try:
        if key[0] == "ranges":
            return _ranges_page(call, sel, budget, representation, str(key[1]), key[2], int(key[3]))
        first, group, skip = (int(k) for k in key[1:4])
    except (IndexError, TypeError, ValueError):
        raise cursors.invalid("it carries no valid position") from None
    path = call.args.get("file")
    if path is not None:
        _known_file(call, sel, path)
    files, total = ranked_files(call, sel, first, group or budget.max_files, path)
    data = _head(call, sel, total, representation)
    data["files"] = []
    data["target_count"] = target_count(call, sel, path) if total else 0
    # "false" is no shorter than "true": fitting the files first keeps the fit.
    data["targets_truncated"] = False
    data["targets"] = []
    continuing = group > 0
    if continuing:
        files = files[:group]
    else:
        shown_files = budget.fit_page(data, "files", [_file_item(f, representation) for f in files])
        files = files[:shown_files]
        group = shown_files
    if group == 0 or first >= total:
        data["files"], data["targets_truncated"] = [], False
        return {"data": data, "page": _page(first, 0, 0, 0, 0, total, None)}
    targets = all_targets(call, sel, files)
    per_target = None if representation == "audit" else RANGES_PER_TARGET
    rendered = []
    for t in targets[skip : skip + budget.max_regions]:
        shown = t["ranges"] if per_target is None else t["ranges"][:per_target]
        more = _ranges_cursor(call, sel, t, len(shown)) if len(shown) < t["region_count"] else None
        rendered.append(_render_target(t, representation, shown, more))
    # A page that only continues targets must show one, or it would never advance.
    fit = budget.fit_page if continuing else budget.fit_list
    listed = fit(data, "targets", rendered)
    done = skip + listed
    data["targets_truncated"] = done < len(targets)
    if done < len(targets):
        following = cursors.encode_key(call, "insight", sel.scope_key, ["group", first, group, done])
    elif first + group < total:
        following = cursors.encode_key(call, "insight", sel.scope_key, ["group", first + group, 0, 0])
    else:
        following = None
    return {
        "data": data,
        "page": _page(first, 0 if continuing else group, skip, listed, len(targets), total, following),
    }


def _page(
    first: int, files: int, skip: int, listed: int, targets: int, total: int, following: str | None
) -> dict[str, Any]:
    return {
        "offset": first,
        "files": files,
        "total_files": total,
        "target_offset": skip,
        "targets": listed,
        "total_targets": targets,
        "next_cursor": following,
    }


def _known_file(call: Call, sel: Selection, path: str) -> None:
    snaps = ",".join(str(s) for s in sel.snaps)
    if (
        call.one(
            f"SELECT 1 FROM files WHERE snap IN ({snaps}) AND (path = ? OR report_path = ?) LIMIT 1",
            [path, path],
        )
        is None
    ):
        raise unknown_file(call, sel.snaps, path, sel.scope_key)


def _ranges_page(
    call: Call, sel: Selection, budget: Budget, representation: str, path: str, function: Any, skip: int
) -> dict[str, Any]:
    """One target's ranges from ``skip`` on, largest first, as many as the budget allows."""
    files, total = ranked_files(call, sel, 0, 1, path)
    target = next((t for t in all_targets(call, sel, files) if t["function"] == function), None)
    if target is None or skip >= target["region_count"]:
        raise cursors.invalid("it carries no valid position")
    data = _head(call, sel, total, representation)
    data["files"] = []
    data["target_count"] = target_count(call, sel, call.args.get("file"))
    data["targets_truncated"] = False
    rest = target["ranges"][skip:]
    if representation != "audit":
        rest = rest[: max(RANGES_PER_TARGET, budget.max_regions)]

    def render(n: int) -> Any:
        after = _ranges_cursor(call, sel, target, skip + n) if skip + n < target["region_count"] else None
        return _render_target(target, representation, rest[:n], after)

    # The ranges of one target are the records of this page: as many as fit, and at least one.
    data["targets"] = [render(1)]
    if not budget.fits(data):
        raise budget.too_small(*size(data))
    lo, hi = 1, len(rest)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        data["targets"] = [render(mid)]
        if budget.fits(data):
            lo = mid
        else:
            hi = mid - 1
    data["targets"] = [render(lo)]
    after = _ranges_cursor(call, sel, target, skip + lo) if skip + lo < target["region_count"] else None
    page = {
        "offset": 0,
        "files": 0,
        "total_files": total,
        "target_offset": 0,
        "targets": 1,
        "total_targets": 1,
        "range_offset": skip,
        "ranges": lo,
        "total_ranges": target["region_count"],
        "next_cursor": after,
    }
    return {"data": data, "page": page}
