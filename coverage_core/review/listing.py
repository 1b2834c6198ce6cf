"""``coverage_review`` tasks that list what is stored: ``snapshots``, ``files`` and ``file``.

Plain store reads as operations, so an agent, REST, the Python client and the
CLI get one answer, with the same budgets, record cap and query-scoped
cursors as every other task:

- ``snapshots``: snapshots newest first, filtered by ``filter`` (suite,
  branch, commit prefix); no measurement needed.
- ``files``: one snapshot's files (``measurement``) with their counters, in
  ``order`` (path, uncovered, coverage).
- ``file``: one file's exact detail (``file``): lines, branches, functions
  and regions as named columns, paged by line windows, and the named tests
  that ran it.

``page_size`` bounds a page of snapshots or files; the word and byte budget
may cut it shorter, never silently: ``page.next_cursor`` continues.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import CoverageError, ErrorCode
from ..model import snapshot_to_dict, summary_to_dict
from . import cursors, provenance
from .budget import DEFAULT_PAGE_SIZE, RECORD_CAP, Budget, record_cap_exceeded, size
from .call import Call
from .context import claim_for_file, claim_for_selection
from .selection import Selection, file_id, line_range

if TYPE_CHECKING:
    import numpy as np

SNAPSHOT_LEGEND = (
    "[snapshot_id, created_at, suite, format, commit, branch, dirty, scope, counter, hit, found, provenance, "
    "run, percent]; counter, hit, found, percent: the producing tool's headline, as it rounds; run is "
    "[run_id, command, case args] for a run's snapshot, null for an import"
)
FILE_LEGEND = (
    "[path, lines_hit, lines_found, branches_hit, branches_found, functions_hit, functions_found, mapping, "
    "headline_hit, headline_found, excluded]"
)


def _page(call: Call, operation: str, scope: str, offset: int, shown: int, more: bool) -> dict[str, Any]:
    following = offset + shown
    return {
        "offset": offset,
        "returned": shown,
        "next_cursor": cursors.encode(call, operation, scope, following) if more else None,
    }


def snapshots(call: Call, budget: Budget) -> dict[str, Any]:
    """The stored snapshots, newest first."""
    wanted = call.args.get("filter") or {}
    offset = cursors.decode(call, "snapshots", "all", call.args.get("cursor"))
    size_ = call.args.get("page_size", DEFAULT_PAGE_SIZE)
    found = call.project.store.snapshots(
        snapshot_id=wanted.get("snapshot_id"),
        suite=wanted.get("suite"),
        branch=wanted.get("branch"),
        commit=wanted.get("commit"),
        chosen=bool(wanted.get("chosen")),
        limit=size_ + 1,
        offset=offset,
        con=call.con,
    )
    call.rows_scanned += len(found)
    compact = call.args.get("representation", "compact") == "compact"
    runs = provenance.runs_of(call.con, [s.snapshot_id for s in found[:size_]])

    def record(s: Any) -> Any:
        if not compact:
            return {**snapshot_to_dict(s), "run": runs.get(s.snapshot_id)}
        head = s.headline
        return [
            s.snapshot_id,
            s.created_at.isoformat(timespec="seconds"),
            s.suite,
            s.format,
            s.commit,
            s.branch,
            s.dirty,
            s.scope,
            head and head.counter,
            head.hit if head else 0,
            head.found if head else 0,
            s.provenance,
            provenance.compact(runs.get(s.snapshot_id)),
            head.percent if head else "-",
        ]

    data: dict[str, Any] = {"task": "snapshots", "filter": wanted}
    if compact:
        data["legend"] = {"snapshots": SNAPSHOT_LEGEND}
    items = [record(s) for s in found[:size_]]
    data["claim_status"], data["reasons"] = "supported", []
    shown = budget.fit_list(data, "snapshots", items)
    if items and not shown:
        raise budget.too_small(*size({**data, "snapshots": items[:1]}))
    return {"data": data, "page": _page(call, "snapshots", "all", offset, shown, len(found) > shown)}


def _one(sel: Selection, task: str) -> str:
    if len(sel.snapshots) != 1:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"task={task} reads one snapshot; measurement names {len(sel.snapshots)}",
            "Name one snapshot by its id (or a suite, for its latest snapshot).",
        )
    return sel.primary.snapshot_id


def files(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    """One snapshot's files and their counters."""
    snapshot_id = _one(sel, "files")
    order = call.args.get("order", "path")
    offset = cursors.decode(call, "files", snapshot_id, call.args.get("cursor"))
    size_ = call.args.get("page_size", DEFAULT_PAGE_SIZE)
    page = call.project.store.files(snapshot_id, offset=offset, limit=size_, order=order, con=call.con)
    call.rows_scanned += len(page.files)
    compact = call.args.get("representation", "compact") == "compact"
    items = [
        [
            f.path,
            f.lines.hit,
            f.lines.found,
            f.branches.hit,
            f.branches.found,
            f.functions.hit,
            f.functions.found,
            f.mapping,
            *((f.headline.hit, f.headline.found) if f.headline else (f.lines.hit, f.lines.found)),
            f.excluded,
        ]
        if compact
        else summary_to_dict(f)
        for f in page.files
    ]
    data: dict[str, Any] = {"task": "files", "snapshot_id": snapshot_id, "order": order, "total": page.total}
    if compact:
        data["legend"] = {"files": FILE_LEGEND}
    data.update(claim_for_selection(call, sel))
    shown = budget.fit_list(data, "files", items)
    if items and not shown:
        raise budget.too_small(*size({**data, "files": items[:1]}))
    return {
        "data": data,
        "page": _page(call, "files", snapshot_id, offset, shown, offset + shown < page.total),
    }


def file(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    """One file's exact detail as named columns, one line window per page, then the named tests that
    ran those lines, paged by name (the page's ``offset``, ``records`` and ``total`` count them)."""
    import numpy as np

    snapshot_id = _one(sel, "file")
    path = call.args.get("file")
    if not path:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "task=file needs file",
            "Name the file: a repository-relative path as the files listing shows it.",
        )
    fid, _ = file_id(call, sel.snaps[0], path, snapshot_id)
    window = line_range(call.args.get("lines"))
    first, last = window or (1, 2**31 - 1)
    scope = f"{snapshot_id}:{path}"
    # Position: [first line still to show, first test still to show]; past ``last``, only tests are left.
    key = cursors.decode_key(call, "file", scope, call.args.get("cursor")) or [first, 0]
    if len(key) != 2 or not all(isinstance(k, int) for k in key):
        raise cursors.invalid("it carries no valid position")
    start, test_at = max(key[0], first), key[1]
    detail = call.project.store.file_detail(snapshot_id, path, call.con, lines=(start, last))

    def tests_of_window() -> list[str]:
        return [
            r[0]
            for r in call.rows(
                """SELECT n.name FROM test_names n WHERE n.snap = ? AND n.test_id IN
                     (SELECT DISTINCT test_id FROM test_observations
                      WHERE snap = ? AND file_id = ? AND line BETWEEN ? AND ?)
                   ORDER BY n.name""",
                [sel.snaps[0], sel.snaps[0], fid, first, last],
                detail=("test_names", "test_observations"),
            )
        ]

    # The same for every page of the window, and for the snapshot's life.
    tests = call.project.store.derived.get(
        ("tests_of_lines", snapshot_id, sel.snaps[0], fid, first, last), tests_of_window
    )
    tables = {
        "lines": detail.lines,
        "branches": detail.branches,
        "functions": detail.functions,
        "regions": detail.regions,
    }
    line_of = {"lines": "line", "branches": "line", "functions": "start_line", "regions": "start_line"}
    call.rows_scanned += sum(len(next(iter(t.values()), ())) for t in tables.values())
    head: dict[str, Any] = {
        "task": "file",
        "snapshot_id": snapshot_id,
        "summary": summary_to_dict(detail.summary),
        "tests": [],
    }
    if detail.excluded_lines:  # the whole file's, like its tests
        head["excluded_lines"] = list(detail.excluded_lines)
    head.update(claim_for_file(call, sel.primary, detail.summary.path, claim_for_selection(call, sel)))
    # Every line that starts a record, in order: a page ends after the k-th of them. The same for every
    # call on this window of this snapshot (a sort of every record's line: 0.2 s for sqlite3.c).
    starts = call.project.store.whole_files.get(
        ("record_starts", snapshot_id, fid, start, last),
        lambda: np.unique(
            np.concatenate([np.asarray(t[line_of[n]], dtype=np.int64) for n, t in tables.items()])
        ),
    )

    # A page holds no more lines that start records than the budget has words: the search below looks only
    # at the records up to the last such line (a window of a few hundred lines, not the whole file).
    reach = int(starts[min(len(starts), budget.max_words) - 1]) if len(starts) else start - 1
    near: dict[str, dict[str, np.ndarray]] = {}
    for name, table in tables.items():
        keep = np.asarray(table[line_of[name]]) <= reach
        near[name] = {column: np.asarray(values)[keep] for column, values in table.items()}

    def page_through(k: int) -> tuple[dict[str, Any], int]:
        end = int(starts[k - 1]) if k else start - 1
        body = dict(head)
        records = 0
        for name, table in near.items():
            keep = table[line_of[name]] <= end
            body[name] = {column: values[keep].tolist() for column, values in table.items()}
            records += int(keep.sum())
        return body, records

    def fits(k: int) -> bool:
        body, records = page_through(k)
        return records <= RECORD_CAP and budget.fits(body)

    # Each line that starts a record adds a word (its number): no more of them than the budget's words fit.
    lo, hi = 0, min(len(starts), budget.max_words)
    if not fits(lo):  # what a page needs: the fixed part and its first record (a line's, else a test)
        body = page_through(min(1, len(starts)))[0]
        if not len(starts):
            body["tests"] = tests[test_at : test_at + 1]
        raise budget.too_small(*size(body))
    while lo < hi:  # the largest page that fits: sizes grow with k
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    if lo == 0 and len(starts):
        body, records = page_through(1)
        if records > RECORD_CAP:
            raise record_cap_exceeded("one line of this file", records)
        raise budget.too_small(*size(body))
    data, records = page_through(lo)
    shown_tests = 0
    if lo == len(starts):  # every line shown: the tests follow, as many as fit (one at least, alone)
        rest = tests[test_at : test_at + RECORD_CAP - records]
        fit = budget.fit_page if not records else budget.fit_list
        shown_tests = fit(data, "tests", rest) if rest else 0
    more_lines = lo < len(starts)
    more_tests = test_at + shown_tests < len(tests)
    next_start = int(starts[lo - 1]) + 1 if lo else start
    following = [next_start, 0] if more_lines else [last + 1, test_at + shown_tests]
    page = {
        "from_line": start,
        "to_line": int(starts[lo - 1]) if lo else start - 1,  # no line on this page: an empty window
        "offset": test_at,
        "records": shown_tests,
        "total": len(tests),
        "next_cursor": cursors.encode_key(call, "file", scope, following)
        if more_lines or more_tests
        else None,
    }
    return {"data": data, "page": page}
