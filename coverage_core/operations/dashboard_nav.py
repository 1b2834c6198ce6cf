"""The dashboard's navigation rows: the file table over all files, the directory tree, the function index.

Three rows of ``operations.table.OPERATIONS``, each over one snapshot and read
on demand (the page asks when a person sorts, filters, opens a directory or
the function index), so ``dashboard`` itself stays the size it was:

- ``dashboard_files``: the snapshot's files filtered (``search``: a
  case-insensitive part of the path; ``dir``: under a directory;
  ``hide_covered``: leave out files with nothing left uncovered) and sorted
  by any column of the table, in DuckDB before the page is cut; a page of at
  most ``limit`` rows with ``page.next_cursor`` (the query-scoped cursors of
  ``review.cursors``) and the count of every file that matched.
- ``dashboard_tree``: the directories directly under ``dir`` with their
  files' figures summed (a directory's counts are its whole subtree's), and
  the figures of ``dir`` itself.
- ``dashboard_functions``: the function index of the snapshot or of one
  file, filtered (``search`` in the name, ``uncovered`` only) and sorted by
  name, file, line or hits, paged the same way.

Counts are exact integers; a percentage exists only on the page.
"""

from __future__ import annotations

from typing import Any

from .. import headline as headlines
from ..review import cursors
from ..review.call import Call
from ..vocabulary import FILE_SORTS, FUNCTION_SORTS

DEFAULT_LIMIT = 500
MAX_DIRECTORIES = 2000
COUNTERS = ("lines", "branches", "functions", "headline")


def _ratio(hit: str, found: str) -> str:
    return f"CASE WHEN {found} = 0 THEN NULL ELSE {hit}::DOUBLE / {found} END"


_HEAD_HIT, _HEAD_FOUND = "coalesce(headline_hit, lines_hit)", "coalesce(headline_found, lines_found)"
# Each column of the file table as the store orders it (a file with nothing of a counter sorts last either way).
FILE_ORDER_SQL: dict[str, str] = {
    "path": "path",
    "lines": _ratio("lines_hit", "lines_found"),
    "missed": "lines_found - lines_hit",
    "branches": _ratio("branches_hit", "branches_found"),
    "functions": _ratio("functions_hit", "functions_found"),
    "headline": _ratio(_HEAD_HIT, _HEAD_FOUND),
}
FUNCTION_ORDER_SQL: dict[str, str] = {
    "name": "fn.name",
    "file": "f.path",
    "line": "f.path, fn.start_line",
    "hits": "fn.hits",
}
assert tuple(FILE_ORDER_SQL) == FILE_SORTS and tuple(FUNCTION_ORDER_SQL) == FUNCTION_SORTS
# Nothing left to cover: every line, branch and function a file has is hit (a file with none has nothing left).
_FULLY_COVERED = (
    "lines_hit = lines_found AND branches_hit = branches_found AND functions_hit = functions_found "
    f"AND {_HEAD_HIT} = {_HEAD_FOUND}"
)


def _filters(call: Call, snap: int) -> tuple[str, list[Any]]:
    where: list[str] = ["snap = ?"]
    params: list[Any] = [snap]
    if call.args.get("dir"):
        where.append("starts_with(path, ?)")
        params.append(_directory(call.args["dir"]))
    if call.args.get("search"):
        where.append("contains(lower(path), lower(?))")
        params.append(call.args["search"])
    if call.args.get("hide_covered"):
        where.append(f"NOT ({_FULLY_COVERED})")
    return " AND ".join(where), params


def _directory(value: str) -> str:
    return value if value.endswith("/") else value + "/"


def _counts(row: tuple[Any, ...], at: int) -> dict[str, Any]:
    """The four counters of a result row whose columns from ``at`` are found, hit pairs in COUNTERS order."""
    return {
        name: {"found": int(row[at + 2 * i] or 0), "hit": int(row[at + 2 * i + 1] or 0)}
        for i, name in enumerate(COUNTERS)
    }


_PARTS = (
    "lines_found",
    "lines_hit",
    "branches_found",
    "branches_hit",
    "functions_found",
    "functions_hit",
    _HEAD_FOUND,
    _HEAD_HIT,
)
_COLUMNS = ", ".join(_PARTS)
_SUMS = ", ".join(f"sum({c})" for c in _PARTS)


def files(call: Call) -> dict[str, Any]:
    """The dashboard_files row: one page of the snapshot's files, filtered and sorted over all of them."""
    project, con = call.project, call.con
    snap_obj = project.store.snapshot(call.args["snapshot"], con)
    call.suite = snap_obj.suite
    snap = project.store.snap_key(snap_obj.snapshot_id, con)
    sort = call.args.get("sort") or "path"
    descending = bool(call.args.get("descending"))
    limit = int(call.args.get("limit") or DEFAULT_LIMIT)
    offset = cursors.decode(call, "dashboard_files", snap_obj.snapshot_id, call.args.get("cursor"))
    where, params = _filters(call, snap)
    matched = con.execute(f"SELECT count(*) FROM files WHERE {where}", params).fetchone()
    total = con.execute("SELECT count(*) FROM files WHERE snap = ?", [snap]).fetchone()
    way = "DESC" if descending else "ASC"
    rows = con.execute(
        f"""SELECT path, mapping, excluded, {_COLUMNS} FROM files WHERE {where}
            ORDER BY {FILE_ORDER_SQL[sort]} {way} NULLS LAST, path, file_id LIMIT ? OFFSET ?""",
        [*params, limit, offset],
    ).fetchall()
    call.rows_scanned += len(rows)
    style = headlines.rule_for(snap_obj.format, snap_obj.tool).style
    items = []
    for r in rows:
        counts = _counts(r, 3)
        head = counts["headline"]
        items.append(
            {
                "path": r[0],
                "mapping": r[1],
                "excluded": r[2],
                "lines": counts["lines"],
                "branches": counts["branches"],
                "functions": counts["functions"],
                "headline": {**head, "text": headlines.display(style, head["hit"], head["found"])},
            }
        )
    if call.args.get("with_tests") and items and snap_obj.tests:
        # how many named tests ran each file of the page (the static site's compact per-file count)
        counted = dict(
            call.rows(
                """SELECT f.path, count(DISTINCT o.test_id) FROM test_observations o
                   JOIN files f ON f.snap = o.snap AND f.file_id = o.file_id
                   WHERE o.snap = ? AND o.hits > 0 AND list_contains(?, f.path) GROUP BY f.path""",
                [snap, [i["path"] for i in items]],
                detail=("test_observations",),
            )
        )
        for item in items:
            item["tests"] = int(counted.get(item["path"], 0))
    matched_n, total_n = int(matched[0]) if matched else 0, int(total[0]) if total else 0
    following = offset + len(items)
    data = {
        "snapshot_id": snap_obj.snapshot_id,
        "sort": sort,
        "descending": descending,
        "matched": matched_n,
        "total": total_n,
        "offset": offset,
        "rows": items,
        "truncated": following < matched_n,
    }
    more = (
        cursors.encode(call, "dashboard_files", snap_obj.snapshot_id, following)
        if following < matched_n
        else None
    )
    return {"data": data, "page": {"next_cursor": more, "total": matched_n}}


def tree(call: Call) -> dict[str, Any]:
    """The dashboard_tree row: the directories directly under ``dir`` with their subtrees' figures summed."""
    project, con = call.project, call.con
    snap_obj = project.store.snapshot(call.args["snapshot"], con)
    call.suite = snap_obj.suite
    snap = project.store.snap_key(snap_obj.snapshot_id, con)
    prefix = _directory(call.args["dir"]) if call.args.get("dir") else ""
    rows = con.execute(
        f"""WITH f AS (SELECT *, substr(path, {len(prefix) + 1}) AS rest FROM files
                       WHERE snap = ? AND starts_with(path, ?))
            SELECT CASE WHEN contains(rest, '/') THEN split_part(rest, '/', 1) END AS child,
                   count(*), {_SUMS}
            FROM f GROUP BY child ORDER BY child NULLS FIRST""",
        [snap, prefix],
    ).fetchall()
    call.rows_scanned += len(rows)
    whole = {name: {"found": 0, "hit": 0} for name in COUNTERS}
    files_here = 0
    directories = []
    for r in rows:
        counts = _counts(r, 2)
        for name in COUNTERS:
            whole[name]["found"] += counts[name]["found"]
            whole[name]["hit"] += counts[name]["hit"]
        if r[0] is None:
            files_here = int(r[1])
        else:
            directories.append({"name": r[0], "path": prefix + r[0] + "/", "files": int(r[1]), **counts})
    data = {
        "snapshot_id": snap_obj.snapshot_id,
        "dir": prefix,
        "parent": _parent(prefix),
        "files": sum(int(r[1]) for r in rows),
        "files_here": files_here,
        **whole,
        "directories": directories[:MAX_DIRECTORIES],
        "truncated": len(directories) > MAX_DIRECTORIES,
    }
    return {"data": data, "page": None}


def _parent(prefix: str) -> str | None:
    """The directory above ``prefix`` ("" for the top), None at the top."""
    if not prefix:
        return None
    head = prefix.rstrip("/").rpartition("/")[0]
    return head + "/" if head else ""


def functions(call: Call) -> dict[str, Any]:
    """The dashboard_functions row: a page of the function index, of one file or the whole snapshot."""
    project, con = call.project, call.con
    snap_obj = project.store.snapshot(call.args["snapshot"], con)
    call.suite = snap_obj.suite
    snap = project.store.snap_key(snap_obj.snapshot_id, con)
    project.store.materialize(con, ("functions",))
    sort = call.args.get("sort") or "line"
    descending = bool(call.args.get("descending"))
    limit = int(call.args.get("limit") or DEFAULT_LIMIT)
    offset = cursors.decode(call, "dashboard_functions", snap_obj.snapshot_id, call.args.get("cursor"))
    where: list[str] = ["fn.snap = ?"]
    params: list[Any] = [snap]
    if call.args.get("file"):
        where.append("f.path = ?")
        params.append(call.args["file"])
    if call.args.get("search"):
        where.append("contains(lower(fn.name), lower(?))")
        params.append(call.args["search"])
    if call.args.get("uncovered"):
        where.append("fn.hits = 0")
    clause = " AND ".join(where)
    joined = "functions fn JOIN files f ON f.snap = fn.snap AND f.file_id = fn.file_id"
    counted = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE fn.hits > 0) FROM {joined} WHERE {clause}", params
    ).fetchone()
    way = "DESC" if descending else "ASC"
    order = ", ".join(f"{part} {way}" for part in FUNCTION_ORDER_SQL[sort].split(", "))
    rows = con.execute(
        f"""SELECT fn.name, f.path, fn.start_line, fn.end_line, fn.hits FROM {joined} WHERE {clause}
            ORDER BY {order}, f.path, fn.start_line, fn.name LIMIT ? OFFSET ?""",
        [*params, limit, offset],
    ).fetchall()
    call.rows_scanned += len(rows)
    matched = int(counted[0]) if counted else 0
    following = offset + len(rows)
    data = {
        "snapshot_id": snap_obj.snapshot_id,
        "file": call.args.get("file"),
        "sort": sort,
        "descending": descending,
        "matched": matched,
        "hit": int(counted[1]) if counted else 0,
        "offset": offset,
        "rows": [
            {"name": r[0], "path": r[1], "start_line": int(r[2]), "end_line": int(r[3]), "hits": int(r[4])}
            for r in rows
        ],
        "truncated": following < matched,
    }
    more = (
        cursors.encode(call, "dashboard_functions", snap_obj.snapshot_id, following)
        if following < matched
        else None
    )
    return {"data": data, "page": {"next_cursor": more, "total": matched}}
