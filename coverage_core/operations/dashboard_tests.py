"""The dashboard's tests view: named tests grouped by test function, and duplicate candidates as groups.

A test function's cases are the names that differ only in what the format's
naming rule calls a case:

- coverage.py contexts (``coveragepy``): pytest node ids as pytest-cov records
  them, ``path::[Class::]function[parameters]|phase``. The function is the
  node id without its ``[parameters]`` and its ``|setup``, ``|run`` or
  ``|teardown`` phase; ``dynamic_context = test_function`` names
  (``tests.test_cart.test_total``) carry neither and stand alone.
- LCOV ``TN:`` names, and every other format: the name as given (a test
  name in LCOV has no grammar to split), so each is its own function.

The grouping runs in DuckDB over all of the snapshot's names before the cut
(``MAX_FUNCTIONS`` functions, ``MAX_CASES`` cases each, both flagged), so a
function's case count is exact however many cases it has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb

from ..model import Snapshot
from ..project import Project

MAX_FUNCTIONS = 200
MAX_CASES = 50
MAX_DUPLICATES = 100
MAX_TESTS = 200
PHASES = ("setup", "run", "teardown", "call")
PYTEST_FORMATS = frozenset({"coveragepy"})

# The phase suffix, then the parameters: the first "[" of a node id opens them (a path or a function name
# has none), and they run to the end of the name.
_PHASE = r"\|(" + "|".join(PHASES) + r")$"
_PARAMS = r"^([^\[]*)\[.*\]$"


def family_sql(fmt: str, column: str = "name") -> str:
    """The SQL expression naming the test function of ``column`` under ``fmt``'s naming rule."""
    if fmt not in PYTEST_FORMATS:
        return column
    return f"regexp_replace(regexp_replace({column}, '{_PHASE}', ''), '{_PARAMS}', '\\1')"


def family_of(fmt: str, name: str) -> str:
    """``family_sql`` in Python, for one name (the page's duplicate groups, tests)."""
    if fmt not in PYTEST_FORMATS:
        return name
    stem, bar, phase = name.rpartition("|")
    if bar and phase in PHASES:
        name = stem
    if name.endswith("]") and "[" in name:
        name = name[: name.index("[")]
    return name


def functions(project: Project, con: duckdb.DuckDBPyConnection, current: Snapshot) -> dict[str, Any]:
    """The snapshot's test functions, those whose cases hit the most items first, each with its cases."""
    snap = project.store.snap_key(current.snapshot_id, con)
    project.store.materialize(con, ("test_names",))
    family = family_sql(current.format, "n.name")
    rows = con.execute(
        f"""WITH t AS (
                SELECT n.name, coalesce(s.item_count, 0) AS items, {family} AS family
                FROM test_names n LEFT JOIN test_signatures s ON s.snap = n.snap AND s.test_id = n.test_id
                WHERE n.snap = ?)
            SELECT family, count(*) AS cases, max(items) AS most,
                   list(struct_pack(name := name, items := items) ORDER BY name)[1:{MAX_CASES}],
                   count(*) OVER () AS functions
            FROM t GROUP BY family ORDER BY most DESC, family LIMIT ?""",
        [snap, MAX_FUNCTIONS],
    ).fetchall()
    total = int(rows[0][4]) if rows else 0
    items = [
        {
            "function": r[0],
            "cases": int(r[1]),
            "items": int(r[2]),
            # a case is what differs from the function's name: the parameters and the phase (a test that is
            # its function's only case, named as it, lists none: the row says it all)
            "shown": []
            if int(r[1]) == 1 and r[3][0]["name"] == r[0]
            else [
                {"name": c["name"], "case": _case(r[0], c["name"]), "items": int(c["items"])} for c in r[3]
            ],
            "cases_truncated": int(r[1]) > MAX_CASES,
        }
        for r in rows
    ]
    return {
        "rule": "pytest node ids: parameters and phase are a case"
        if current.format in PYTEST_FORMATS
        else "names as given",
        "count": total,
        "items": items,
        "truncated": total > len(items),
    }


def _case(function: str, name: str) -> str:
    return name[len(function) :] if name.startswith(function) and name != function else ""


def duplicate_groups(fmt: str, groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Duplicate candidates as groups a person reads: each group's tests gathered by function."""
    out = []
    for group in groups[:MAX_DUPLICATES]:
        by: dict[str, list[str]] = {}
        for name in group.get("tests") or []:
            function = family_of(fmt, name)
            by.setdefault(function, []).append(_case(function, name))
        out.append(
            {
                "item_count": group.get("item_count"),
                "tests": len(group.get("tests") or []),
                "functions": [
                    {"function": f, "cases": [c for c in cases if c], "count": len(cases)}
                    for f, cases in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))
                ],
            }
        )
    return out


def tests(
    project: Project,
    con: duckdb.DuckDBPyConnection,
    review: Callable[[dict[str, Any]], dict[str, Any]],
    current: Snapshot,
    whole: dict[str, int],
) -> dict[str, Any]:
    """The tests section: counts, the named tests (most items first), their functions, duplicate groups."""
    snap = project.store.snap_key(current.snapshot_id, con)
    # Items each test hit (lines, branches and functions), as counted at ingest for duplicate detection:
    # a read of one row per test, never a scan of the observations.
    project.store.materialize(con, ("test_names",))
    rows = con.execute(
        """SELECT n.name, coalesce(s.item_count, 0) AS items
           FROM test_names n LEFT JOIN test_signatures s ON s.snap = n.snap AND s.test_id = n.test_id
           WHERE n.snap = ? ORDER BY items DESC, n.name LIMIT ?""",
        [snap, MAX_TESTS + 1],
    ).fetchall()
    data = review(
        {
            "task": "tests",
            "representation": "review",
            "limits": whole,
            "measurement": {"snapshot_id": current.snapshot_id},
        }
    )
    duplicates = data.get("duplicates") or []
    return {
        "count": current.tests,
        "status": data.get("status"),
        "named": [{"name": r[0], "items": int(r[1])} for r in rows[:MAX_TESTS]],
        "named_truncated": len(rows) > MAX_TESTS,
        # where names are taken as given (LCOV), each test is its own function: the page groups nothing
        "functions": functions(project, con, current)
        if current.tests and current.format in PYTEST_FORMATS
        else None,
        "duplicate_groups": data.get("duplicate_groups", 0),
        # the review's groups, as the page reads them: each group's tests gathered by function
        "duplicate_families": duplicate_groups(current.format, duplicates),
        "duplicates_truncated": len(duplicates) > MAX_DUPLICATES or bool(data.get("duplicates_truncated")),
    }
