"""``coverage_review(task="history")``: how coverage moved over a suite's snapshots.

The series is every snapshot of the selected snapshot's suite ingested no
later than it, for the whole project, one file (``file``) or one line range
(``file`` + ``lines``). Its points are ordered by commit ancestry, newest
first, not by ingest time (a backfilled older commit takes its place in the
line of commits):

- along the line of commits through the selected snapshot's commit: commits
  that descend from it (farthest first), then it, then its ancestors (nearest
  first), distances counted in commits as git counts them;
- snapshots of one commit, newest ingest first;
- then the snapshots whose commits are neither ancestors nor descendants of
  it (another branch, a commit git does not have, no commit), newest ingest
  first.

The answer carries two detailed points (the first and the last of the
series, so the change across it is explicit), an aggregate of the whole
series (count, first/last/min/max covered share as exact ``[hit, found]``
pairs) and one compact row ``[commit, hit, found]`` for every other point, in
order, as many as the budget allows; ``page.next_cursor`` continues the rows.
In the audit representation every point of the series is a full record
(``all_points``), paged the same way.
"""

from __future__ import annotations

import copy
from typing import Any

from ..storage.store import chosen_side
from . import cursors, provenance
from .budget import RECORD_CAP, Budget, size
from .call import Call
from .context import claim_for_selection, main_counter
from .selection import Selection, line_range


def _series(call: Call, sel: Selection) -> list[tuple[Any, ...]]:
    """(snapshot_id, created_at, commit, hit, found, snap, scope) of the whole series, newest ingest first:
    read once per generation of the store (which snapshots are points changes only with a write)."""
    key = ("history_series", sel.scope_key, call.args.get("file"), call.args.get("lines"))
    series: list[tuple[Any, ...]] = call.as_of_generation(key, lambda: _read_series(call, sel))
    return series


def _read_series(call: Call, sel: Selection) -> list[tuple[Any, ...]]:
    primary = sel.primary
    file = call.args.get("file")
    lines = line_range(call.args.get("lines"))
    head = primary.headline
    counters = list(head.rule.counters) if head else [main_counter(primary) or "lines"]
    # The series a reader is shown: subset runs a complete snapshot of their commit outranks are no points
    # (a named one is its own first point).
    base = f"SELECT s.snap FROM snapshots s WHERE s.suite = ? AND s.snap <= ? AND ({chosen_side('s')} OR s.snap = ?)"
    params: list[Any] = [primary.suite, sel.snaps[0], sel.snaps[0]]
    reads: tuple[str, ...] = ()  # the detail tables the query reads
    if file is None:
        # The headline of each point: the primary's rule's counters summed (coverage.py: statements and
        # branches), the first of them required.
        sql = f"""
            SELECT s.snapshot_id, s.created_at, s.commit_sha, sum(t.hit), sum(t.found), s.snap, s.scope
            FROM snapshots s JOIN snapshot_totals t ON t.snap = s.snap AND list_contains(?, t.counter)
            WHERE s.snap IN ({base}) GROUP BY s.snap, s.snapshot_id, s.created_at, s.commit_sha, s.scope
            HAVING bool_or(t.counter = ?) ORDER BY s.snap DESC"""
        params = [counters, *params, counters[0]]
    elif lines is None:
        sql = f"""
            SELECT s.snapshot_id, s.created_at, s.commit_sha, coalesce(f.headline_hit, f.lines_hit),
                   coalesce(f.headline_found, f.lines_found), s.snap, s.scope
            FROM snapshots s JOIN files f ON f.snap = s.snap AND f.path = ?
            WHERE s.snap IN ({base}) ORDER BY s.snap DESC"""
        params = [file, *params]
    else:
        # Line-level history reads the lines of every snapshot of the series, not only those the call
        # resolved: compacted ones among them are restored first.
        reads = ("lines",)
        call.restore(reads, call.project.store.series(call.con, primary.suite, sel.snaps[0]))
        sql = f"""
            SELECT s.snapshot_id, s.created_at, s.commit_sha,
                   count(*) FILTER (WHERE l.hits > 0), count(l.line), s.snap, s.scope
            FROM snapshots s JOIN files f ON f.snap = s.snap AND f.path = ?
                 LEFT JOIN lines l ON l.snap = s.snap AND l.file_id = f.file_id AND l.line BETWEEN ? AND ?
            WHERE s.snap IN ({base}) GROUP BY s.snap, s.snapshot_id, s.created_at, s.commit_sha, s.scope
            ORDER BY s.snap DESC"""
        params = [file, lines[0], lines[1], *params]
    return call.rows(sql, params, detail=reads)


def by_ancestry(
    call: Call, reference: str | None, rows: list[tuple[Any, ...]], commit_of: Any
) -> list[tuple[Any, ...]]:
    """``rows`` (newest ingest first) ordered along the line of commits through ``reference``."""
    git = call.project.git
    known = reference if reference is not None and git.has_commit(reference) else None
    place: dict[str | None, tuple[int, int]] = {}
    for commit in dict.fromkeys(commit_of(r) for r in rows):
        if known is None or commit is None or not git.has_commit(commit):
            place[commit] = (1, 0)
        elif git.is_ancestor(commit, known):
            place[commit] = (0, git.distance(commit, known)[0])
        elif git.is_ancestor(known, commit):
            place[commit] = (0, -git.distance(known, commit)[0])
        else:
            place[commit] = (1, 0)
    order = {id(r): i for i, r in enumerate(rows)}
    return sorted(rows, key=lambda r: (*place[commit_of(r)], order[id(r)]))


def _counter(primary: Any, subject: str) -> str | None:
    """What a history point counts: the headline's counters for the project and a file, lines for lines."""
    if subject == "line":
        return "lines"
    head = primary.headline
    return head.counter if head else main_counter(primary)


def _share(hit: int, found: int) -> float | None:
    return None if not found else hit / found


def history(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    representation = call.args.get("representation", "compact")
    offset = cursors.decode(call, "history", sel.scope_key, call.args.get("cursor"))
    rows = by_ancestry(call, sel.primary.commit, _series(call, sel), lambda r: r[2])
    subject = "project" if not call.args.get("file") else ("line" if call.args.get("lines") else "file")
    data: dict[str, Any] = {
        "task": "history",
        "suite": sel.primary.suite,
        "subject": subject,
        "counter": _counter(sel.primary, subject),
    }
    if call.args.get("file"):
        data["file"] = call.args["file"]
    if call.args.get("lines"):
        data["lines"] = call.args["lines"]

    # Scope and provenance per snapshot: a subset run shown in a series says so, with its run and command.
    # Which run stored a point changes with the execution tables (a run that re-ingests a stored report
    # records it later): read once per generation. Each answer gets its own copy of the records.
    points = tuple(r[0] for r in rows)
    runs = call.as_of_generation(("runs_of", points), lambda: provenance.runs_of(call.con, points))

    def point(r: tuple[Any, ...]) -> Any:
        run = copy.deepcopy(runs.get(r[0]))
        if representation == "compact":
            return [
                r[0],
                r[1].isoformat(timespec="seconds"),
                (r[2] or "")[:12],
                int(r[3]),
                int(r[4]),
                r[6],
                provenance.compact(run),
            ]
        return {
            "snapshot_id": r[0],
            "created_at": r[1].isoformat(),
            "commit": r[2],
            "hit": int(r[3]),
            "found": int(r[4]),
            "scope": r[6],
            "run": run,
        }

    audit = representation == "audit"
    if representation == "compact":
        data["legend"] = {
            "points": "[snapshot_id, created_at, commit, hit, found, scope, run]; run is [run_id, command, "
            "case args] or null for an import",
            "rows": "[snapshot_id, commit, hit, found, scope, run_id] of the points between the first and the "
            "last, in order",
            "window": "change: covered units of the counter (e.g. lines), the newest's minus the oldest's",
        }
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
    else:
        data["points"] = []
        data["window"] = {"snapshots": 0}
    data.update(claim_for_selection(call, sel))
    if not rows and subject != "project":
        data["claim_status"] = "not_measured"
        data["reasons"] = [f"{call.args['file']!r} is in no snapshot of suite {sel.primary.suite!r}"] + data[
            "reasons"
        ]
    # The records the cursor pages over: every point in audit, else the points between the two detailed ones.
    paged = rows if audit else rows[1:-1]
    key = "all_points" if audit else "rows"
    items = [
        point(r)
        if audit
        else [r[0], (r[2] or "")[:12], int(r[3]), int(r[4]), r[6], (runs.get(r[0]) or {}).get("run_id")]
        for r in paged[offset : offset + RECORD_CAP]
    ]
    data["rows_truncated"] = False  # "false" is no shorter than "true": the fit holds whatever it ends as
    shown = budget.fit_page(data, key, items)
    following = offset + shown
    data["rows_truncated"] = following < len(paged)
    if not budget.fits(data):
        raise budget.too_small(*size(data))
    return {
        "data": data,
        "page": {
            "offset": offset,
            "rows": shown,
            "total_rows": len(paged),
            "snapshots": len(rows),
            "next_cursor": cursors.encode(call, "history", sel.scope_key, following)
            if following < len(paged)
            else None,
        },
    }
