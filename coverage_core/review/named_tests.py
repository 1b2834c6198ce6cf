"""``coverage_review(task="tests")``: which named tests cover what, and duplicates.

Named tests come from LCOV ``TN:`` sections and coverage.py contexts. For a
file (and optionally ``lines``) the answer lists the tests that ran it and the
lines only one test covers. Without a file it gives the snapshot's duplicate
candidates: tests whose full ordered ``{kind, file_path, line_number,
region_key}`` item lists are identical, as grouped at ingest by comparing the
whole lists inside DuckDB (see storage.store). Reports without named tests answer
``status: unavailable``.

Both answers page with ``page.next_cursor``: duplicate groups, and for a file
its covering tests then its single-test ranges, as one stream of records.
"""

from __future__ import annotations

from typing import Any

from . import cursors
from .budget import RECORD_CAP, Budget
from .call import Call
from .context import claim_for_selection
from .selection import Selection, file_id, line_range

MAX_GROUPS_SCAN = 1000


def _ranges_by_test(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    """[(line, test)] sorted by line -> [[start, end, line_count, test], ...] of consecutive lines."""
    out: list[list[Any]] = []
    for line, test in rows:
        if out and out[-1][3] == test and line == out[-1][1] + 1:
            out[-1][1] = line
            out[-1][2] += 1
        else:
            out.append([line, line, 1, test])
    return out


def tests(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    primary, snap = sel.primary, sel.snaps[0]
    data: dict[str, Any] = {"task": "tests", "snapshot_id": primary.snapshot_id, "named_tests": primary.tests}
    data.update(claim_for_selection(call, sel))
    if primary.tests == 0:
        data["status"] = "unavailable"
        data["reasons"] = [
            f"this {primary.format} snapshot carries no named tests (LCOV TN: sections or coverage.py "
            "contexts give them: coverage run --context / dynamic_context = test_function)"
        ] + data["reasons"]
        return {"data": data, "page": None}
    data["status"] = "available"
    representation = call.args.get("representation", "compact")
    if call.args.get("file"):
        return _for_file(call, sel, budget, data, representation)
    offset = cursors.decode(call, "tests", sel.scope_key, call.args.get("cursor"))
    total_groups = call.value(
        """SELECT count(*) FROM (SELECT dup_group FROM test_signatures WHERE snap = ?
                                 GROUP BY dup_group HAVING count(*) > 1)""",
        [snap],
    )
    page_size = min(budget.max_regions, MAX_GROUPS_SCAN)
    groups = call.rows(
        """SELECT list(n.name ORDER BY n.name), any_value(s.item_count), count(*)
           FROM test_signatures s JOIN test_names n ON n.snap = s.snap AND n.test_id = s.test_id
           WHERE s.snap = ? GROUP BY s.dup_group HAVING count(*) > 1
           ORDER BY count(*) DESC, any_value(s.item_count) DESC, min(n.name) LIMIT ? OFFSET ?""",
        [snap, page_size, offset],
        detail=("test_names",),
    )
    data["duplicate_groups"] = int(total_groups)
    if representation == "compact":
        data["legend"] = {"duplicates": "[item_count, tests [names of the tests with identical coverage]]"}
        items: list[Any] = [[int(g[1]), list(g[0])] for g in groups]
    else:
        items = [{"item_count": int(g[1]), "tests": list(g[0])} for g in groups]
    data["duplicates_truncated"] = False
    shown = budget.fit_page(data, "duplicates", items)
    data["duplicates_truncated"] = shown < len(items)
    next_offset = offset + shown
    return {
        "data": data,
        "page": {
            "offset": offset,
            "groups": shown,
            "total_groups": int(total_groups),
            "next_cursor": cursors.encode(call, "tests", sel.scope_key, next_offset)
            if next_offset < total_groups
            else None,
        },
    }


def _for_file(
    call: Call, sel: Selection, budget: Budget, data: dict[str, Any], representation: str
) -> dict[str, Any]:
    snap = sel.snaps[0]
    fid, path = file_id(call, snap, call.args["file"], sel.primary.snapshot_id)
    lo, hi = line_range(call.args.get("lines")) or (1, 2**31 - 1)
    data["file"] = path
    if call.args.get("lines"):
        data["lines"] = call.args["lines"]
    covering, unique = call.project.store.derived.get(
        ("named_tests", sel.primary.snapshot_id, fid, lo, hi), lambda: _file_tests(call, snap, fid, lo, hi)
    )
    data["covering_tests"] = len(covering)
    data["single_test_lines"] = len(unique)
    ranges = _ranges_by_test(unique)
    if representation == "compact":
        data["legend"] = {"tests": "[test, lines covered]", "only_one_test": "[start, end, line_count, test]"}
        tests_list: list[Any] = [[r[0], int(r[1])] for r in covering]
        only: list[Any] = ranges
    else:
        tests_list = [{"test": r[0], "lines": int(r[1])} for r in covering]
        only = [{"start": a, "end": b, "line_count": n, "test": t} for a, b, n, t in ranges]
    # One stream: the covering tests, then the single-test ranges; the cursor is a place in it.
    scope = f"{sel.scope_key}:{path}"
    at = cursors.decode(call, "tests", scope, call.args.get("cursor"))
    data["tests"] = []
    data["only_one_test"] = []
    data["truncated"] = False  # "false" is no shorter than "true": the fit holds whatever it ends as
    from_tests = tests_list[at : at + RECORD_CAP]
    shown_tests = budget.fit_page(data, "tests", from_tests) if from_tests else 0
    shown_only = 0
    skip = max(0, at - len(tests_list))
    if at + shown_tests >= len(tests_list):
        rest = only[skip : skip + RECORD_CAP]
        fit = budget.fit_page if not shown_tests else budget.fit_list
        shown_only = fit(data, "only_one_test", rest) if rest else 0
    following = at + shown_tests + shown_only
    total = len(tests_list) + len(only)
    data["truncated"] = following < total
    return {
        "data": data,
        "page": {
            "offset": at,
            "records": shown_tests + shown_only,
            "total": total,
            "next_cursor": cursors.encode(call, "tests", scope, following) if following < total else None,
        },
    }


def _file_tests(
    call: Call, snap: int, fid: int, lo: int, hi: int
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The tests that ran lines ``lo``-``hi`` of one file (name, lines), and the lines only one test ran
    (line, name): read once per snapshot and range (a stored snapshot never changes), whichever page asks.
    """
    # Each aggregates the file's observations by test id first and names the few groups after (a test's
    # name is unique in its snapshot: the report builder interns names), never joining every observation
    # row to its name (930k rows for sqlite3.c).
    covering = call.rows(
        """SELECT n.name, c.lines FROM (
               SELECT test_id, count(DISTINCT line) AS lines FROM test_observations
               WHERE snap = ? AND file_id = ? AND kind = 0 AND line BETWEEN ? AND ? GROUP BY test_id) c
           JOIN test_names n ON n.snap = ? AND n.test_id = c.test_id
           ORDER BY c.lines DESC, n.name""",
        [snap, fid, lo, hi, snap],
        detail=("test_names", "test_observations"),
    )
    unique = call.rows(
        """SELECT u.line, n.name FROM (
               SELECT line, min(test_id) AS test_id FROM test_observations
               WHERE snap = ? AND file_id = ? AND kind = 0 AND line BETWEEN ? AND ?
               GROUP BY line HAVING count(DISTINCT test_id) = 1) u
           JOIN test_names n ON n.snap = ? AND n.test_id = u.test_id
           ORDER BY u.line""",
        [snap, fid, lo, hi, snap],
        detail=("test_names", "test_observations"),
    )
    return covering, unique
