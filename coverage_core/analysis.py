"""Coverage over time as DuckDB relations: the questions notebooks and scripts ask of a store.

    from coverage_core import open_project, history, coverage_loss
    with open_project(".") as project:
        trend = history(project, suite="unit")
        worst = coverage_loss(project, last=10, suite="unit")
    trend.fetchnumpy()["percent"]          # NumPy columns; trend.df() with pandas installed
    worst.limit(5).show()

Owned here: which snapshots a question reads (a suite's history, the latest
complete snapshot of each of the last N first-parent commits) and the
arithmetic of a loss. Every answer is a DuckDB relation with documented
columns, detached from the store: it is copied into its own in-memory
database, so it stays usable after the project is closed and never holds the
store. Counts are exact integers (``hit``, ``found``); ``percent`` is a DOUBLE
for plotting (NULL when nothing was found), never used for arithmetic here.

While the daemon holds the store, ``coverage_daemon.client.open_project``
gives a project the daemon owns (anything with ``analysis(name, arguments)``):
each helper then asks the daemon to run itself there (``ANALYSES``), receives
the answer's columns (``to_columns``) and builds the same relation in memory
(``from_columns``): the same rows, names and types as without a daemon.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import duckdb

from . import headline as headlines
from .diffmap import diff_trees
from .errors import CoverageError, ErrorCode, Remedy
from .storage.store import chosen_side
from .vocabulary import COUNTERS

if TYPE_CHECKING:
    from .project import Project

# The per-file counters the store keeps (files.<counter>_found/_hit). For a
# coverage.py report "lines" are its statements.
# "headline" is each file's figure by its producing tool's rule (coverage_core.headline).
FILE_COUNTERS = ("headline", "lines", "branches", "functions")

_PERCENT = "100 * {hit}::DOUBLE / nullif({found}, 0)"


class Owned(Protocol):
    """A project another process owns (the daemon): it runs an analysis there and returns its columns."""

    def analysis(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


def _routed(project: Any, name: str, arguments: dict[str, Any]) -> duckdb.DuckDBPyRelation | None:
    """The answer of the daemon that owns ``project``'s store, or None when this process has the store."""
    ask = getattr(project, "analysis", None)
    return None if ask is None else from_columns(ask(name, arguments))


def to_columns(rel: duckdb.DuckDBPyRelation) -> dict[str, Any]:
    """A relation as JSON-ready columns: ``names``, DuckDB ``types`` and ``values`` (one list per column;
    timestamps as ISO 8601 text, NULL as None), in row order."""
    names, types = list(rel.columns), [str(t) for t in rel.types]
    rows = rel.fetchall()

    def plain(v: Any) -> Any:
        return v.isoformat() if isinstance(v, (dt.datetime, dt.date)) else v

    return {
        "names": names,
        "types": types,
        "values": [[plain(r[i]) for r in rows] for i in range(len(names))],
    }


def from_columns(columns: dict[str, Any]) -> duckdb.DuckDBPyRelation:
    """The relation ``to_columns`` describes, in a private in-memory database (same names, types, order)."""
    names, types, values = columns["names"], columns["types"], columns["values"]
    memory = duckdb.connect()
    n = len(values[0]) if values else 0
    select = ", ".join(
        f"CAST(c{i}[k] AS {kind}) AS {_quote(name)}" for i, (name, kind) in enumerate(zip(names, types))
    )
    args = ", ".join(
        f"?::VARCHAR[] AS c{i}" if "TIME" in kind else f"?::{kind}[] AS c{i}" for i, kind in enumerate(types)
    )
    memory.execute(
        f"CREATE TABLE answer AS SELECT {select} FROM (SELECT {args}) t, range(1, ? + 1) r(k) ORDER BY k",
        [*values, n],
    )
    return memory.table("answer")


def history(project: Project, suite: str | None = None, counter: str = "lines") -> duckdb.DuckDBPyRelation:
    """Every snapshot's total for one counter, oldest first; a ``subset`` run is left out when a
    complete snapshot of its commit and suite exists (it would plot as a dip that no change made).

    Columns: ``snapshot_id``, ``created_at`` (TIMESTAMPTZ), ``suite``,
    ``commit`` (full hash; NULL in a repository without commits), ``branch``,
    ``scope`` (``complete`` or ``subset``),
    ``hit``, ``found`` (exact BIGINTs) and ``percent`` (DOUBLE, NULL when
    ``found`` is 0). ``suite=None`` takes every suite (tell them apart by the
    ``suite`` column). Snapshots whose report has no such counter (a report
    without branch data, for ``counter="branches"``) are left out. ``counter``
    is one of ``coverage_core.report.COUNTERS``; for coverage.py reports
    ``"lines"`` equals ``"statements"``.

    Example::

        >>> trend = history(project, suite="unit")
        >>> trend.project("commit, percent").fetchall()
        [('3f1c...', 62.5), ('9a0e...', 77.1), ('c47d...', 83.3)]
    """
    routed = _routed(project, "history", {"suite": suite, "counter": counter})
    if routed is not None:
        return routed
    with _reading(project) as con:
        return _history(project, con, suite=suite, counter=counter)


def _history(
    project: Project, con: duckdb.DuckDBPyConnection, *, suite: str | None = None, counter: str = "lines"
) -> duckdb.DuckDBPyRelation:
    """``history`` read on ``con``, detached (the same defaults)."""
    if counter == "headline":
        return _detached(_headline_history(con, suite))
    if counter not in COUNTERS:
        raise _bad_counter(counter, ("headline", *COUNTERS))
    rel = _sql(
        con,
        f"""
        SELECT s.snapshot_id, s.created_at, s.suite, s.commit_sha AS "commit", s.branch, s.scope, t.hit,
               t.found, {_PERCENT.format(hit="t.hit", found="t.found")} AS percent
        FROM snapshots s JOIN snapshot_totals t USING (snap)
        WHERE t.counter = ? AND (?::VARCHAR IS NULL OR s.suite = ?) AND {chosen_side("s")}
        ORDER BY s.snap""",
        [counter, suite, suite],
    )
    return _detached(rel)


def _headline_history(con: duckdb.DuckDBPyConnection, suite: str | None) -> duckdb.DuckDBPyRelation:
    """``history`` of each snapshot's headline: its rule's counters summed, the first of them required."""
    return _sql(
        con,
        f"""
        WITH picked AS (
            SELECT s.*, {headlines.counters_sql("s.format", "s.tool")} AS counters FROM snapshots s
            WHERE (?::VARCHAR IS NULL OR s.suite = ?) AND {chosen_side("s")})
        SELECT p.snapshot_id, p.created_at, p.suite, p.commit_sha AS "commit", p.branch, p.scope,
               sum(t.hit)::BIGINT AS hit, sum(t.found)::BIGINT AS found,
               {_PERCENT.format(hit="sum(t.hit)", found="sum(t.found)")} AS percent
        FROM picked p JOIN snapshot_totals t ON t.snap = p.snap AND list_contains(p.counters, t.counter)
        GROUP BY p.snap, p.snapshot_id, p.created_at, p.suite, p.commit_sha, p.branch, p.scope, p.counters
        HAVING bool_or(t.counter = p.counters[1])
        ORDER BY p.snap""",
        [suite, suite],
    )


def file_history(
    project: Project,
    *,
    last_commits: int = 10,
    suite: str | None = None,
    counter: str = "lines",
    ref: str = "HEAD",
) -> duckdb.DuckDBPyRelation:
    """Each file's coverage on each of the last ``last_commits`` commits of ``ref`` that were measured.

    The commits are ``ref`` and its first-parent ancestors, as ``git log
    --first-parent -n last_commits ref`` lists them (the mainline CI measures;
    commits of merged side branches are not in it). On each commit the newest
    *complete* snapshot of the suite is read (a ``subset`` run of selected
    tests would look like a loss); commits without one are skipped.
    ``suite=None`` takes the one suite measured on those commits, and refuses
    with ``invalid_argument`` when there are several.

    Columns: ``commits_ago`` (0 for ``ref`` itself, 1 for its parent, ...),
    ``snapshot_id``, ``created_at``, ``commit``, ``suite``, ``path``
    (repository-relative when the report's path mapped), ``hit``, ``found``,
    ``percent``; oldest commit first, then by path. ``counter`` is
    ``"lines"``, ``"branches"`` or ``"functions"``.

    Example::

        >>> rows = file_history(project, last_commits=5, suite="unit")
        >>> rows.filter("path = 'inventory/pricing.py'").project("commits_ago, hit, found").fetchall()
        [(2, 13, 18), (1, 11, 18), (0, 4, 18)]
    """
    routed = _routed(
        project,
        "file_history",
        {"last_commits": last_commits, "suite": suite, "counter": counter, "ref": ref},
    )
    if routed is not None:
        return routed
    with _reading(project) as con:
        return _file_history(project, con, last_commits=last_commits, suite=suite, counter=counter, ref=ref)


def _file_history(
    project: Project,
    con: duckdb.DuckDBPyConnection,
    *,
    last_commits: int = 10,
    suite: str | None = None,
    counter: str = "lines",
    ref: str = "HEAD",
) -> duckdb.DuckDBPyRelation:
    """``file_history`` read on ``con``, detached (the same defaults)."""
    rel = _file_rows(project, con, last_commits, suite, counter, ref)
    return _detached(rel.order("commits_ago DESC, path"))


def coverage_loss(
    project: Project,
    *,
    last: int = 10,
    suite: str | None = None,
    counter: str = "lines",
    ref: str = "HEAD",
) -> duckdb.DuckDBPyRelation:
    """The files that lost the most coverage over the last ``last`` commits of ``ref``, most first.

    Compares the oldest and the newest measured commit among those
    ``file_history`` reads (same ``last``, ``suite``, ``counter`` and ``ref``
    rules). ``lost`` is how many more lines (branches, functions) are
    uncovered at the end than at the start: new untested lines count, and so
    do lines whose tests were deleted; deleting covered code does not. Only
    files with ``lost > 0`` are listed, ranked by ``lost``, then by the drop
    in percent, then by path. A file new in the window starts at 0 of 0
    (``first_percent`` NULL). A file git sees renamed between the two commits
    is compared with itself under its old name (``previous_path``), never
    counted as a lost file and a new one.

    Columns: ``path``, ``previous_path`` (NULL unless renamed), ``first_hit``, ``first_found``, ``last_hit``,
    ``last_found``, ``lost``, ``first_percent``, ``last_percent``,
    ``from_commit``, ``to_commit``. Raises ``not_found`` when fewer than two
    of those commits were measured (nothing to compare).

    Example::

        >>> loss = coverage_loss(project, last=3, suite="unit")
        >>> loss.project("path, first_hit, last_hit, lost").fetchall()
        [('inventory/pricing.py', 13, 4, 9), ('inventory/stock.py', 24, 23, 1)]
    """
    routed = _routed(project, "coverage_loss", {"last": last, "suite": suite, "counter": counter, "ref": ref})
    if routed is not None:
        return routed
    with _reading(project) as con:
        return _coverage_loss(project, con, last=last, suite=suite, counter=counter, ref=ref)


def _coverage_loss(
    project: Project,
    con: duckdb.DuckDBPyConnection,
    *,
    last: int = 10,
    suite: str | None = None,
    counter: str = "lines",
    ref: str = "HEAD",
) -> duckdb.DuckDBPyRelation:
    """``coverage_loss`` read on ``con``, detached (the same defaults)."""
    rows = _file_rows(project, con, last, suite, counter, ref)
    ends = rows.aggregate(
        'max(commits_ago) AS first, min(commits_ago) AS last, count(DISTINCT "commit") AS n'
    )
    first, newest, measured = ends.fetchall()[0]
    if measured < 2:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            f"{measured} of the last {last} commits of {ref} measured"
            + (f" by suite {suite!r}" if suite else "")
            + "; a loss compares two",
            "Look further back (a larger `last`), or store a report of an older commit with its commit.",
            {"last": last, "ref": ref, "suite": suite, "measured_commits": measured},
            Remedy(operation="coverage_import", arguments={"report_path": "REPORT", "commit": "<its sha>"}),
        )
    # The two ends are small; join them in the store's connection, then detach the answer.
    first_rows = rows.filter(f"commits_ago = {int(first)}").set_alias("a")
    last_rows = rows.filter(f"commits_ago = {int(newest)}").set_alias("b")
    first_commit = first_rows.aggregate('any_value("commit")').fetchall()[0][0]
    last_commit = last_rows.aggregate('any_value("commit")').fetchall()[0][0]
    # A file renamed between the two commits is one file: its old rows meet its new ones (git's rename
    # detection, as `change` follows renames), never a loss of the old name and a new file.
    renames = {
        c.old_path: c.new_path
        for c in diff_trees(project.git, first_commit, last_commit).changes
        if c.status == "renamed" and c.old_path and c.new_path
    }
    if renames:
        cases = " ".join(f"WHEN {_literal(old)} THEN {_literal(new)}" for old, new in sorted(renames.items()))
        first_rows = first_rows.project(
            f"* EXCLUDE (path), CASE path {cases} ELSE path END AS path, "
            f"CASE WHEN path IN ({', '.join(_literal(o) for o in sorted(renames))}) THEN path END AS previous_path"
        ).set_alias("a")
    else:
        first_rows = first_rows.project("*, NULL::VARCHAR AS previous_path").set_alias("a")
    joined = first_rows.join(last_rows, "a.path = b.path", how="outer")
    answer = joined.project(
        f"""coalesce(a.path, b.path) AS path, a.previous_path AS previous_path,
        coalesce(a.hit, 0) AS first_hit, coalesce(a.found, 0) AS first_found,
        coalesce(b.hit, 0) AS last_hit, coalesce(b.found, 0) AS last_found,
        (coalesce(b.found, 0) - coalesce(b.hit, 0)) - (coalesce(a.found, 0) - coalesce(a.hit, 0)) AS lost,
        {_PERCENT.format(hit="a.hit", found="a.found")} AS first_percent,
        {_PERCENT.format(hit="b.hit", found="b.found")} AS last_percent,
        '{first_commit}' AS from_commit, '{last_commit}' AS to_commit"""
    )
    ranked = answer.filter("lost > 0").order(
        "lost DESC, coalesce(last_percent, 0) - coalesce(first_percent, 0), path"
    )
    return _detached(ranked)


# What a daemon runs for a project it owns (coverage_daemon's analysis route), by name: each reads on the
# connection it is given (the call's pooled one), so it never borrows a second one nor keeps one.
ANALYSES: dict[str, Callable[..., duckdb.DuckDBPyRelation]] = {
    "history": _history,
    "file_history": _file_history,
    "coverage_loss": _coverage_loss,
}


@contextlib.contextmanager
def _reading(project: Project) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read connection of ``project``'s store for one helper, given back when its answer is detached."""
    con = project.store.cursor()
    try:
        yield con
    finally:
        con.close()


def _sql(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[object]) -> duckdb.DuckDBPyRelation:
    return con.sql(sql, params=list(params))


# -- helpers ----------------------------------------------------------------------
def _first_parent_commits(project: Project, ref: str, n: int) -> list[str]:
    """``ref`` and its first-parent ancestors, newest first, at most ``n``."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"the number of commits must be a positive integer, got {n!r}",
            "Pass how many recent commits to read, e.g. last=10.",
        )
    commits: list[str] = []
    commit: str | None = project.git.resolve(ref)
    while commit is not None and len(commits) < n:
        commits.append(commit)
        commit = project.git.parent(commit)
    return commits


def _file_rows(
    project: Project, con: duckdb.DuckDBPyConnection, n: int, suite: str | None, counter: str, ref: str
) -> duckdb.DuckDBPyRelation:
    """Per-file rows of the newest complete snapshot on each measured commit of the window (not detached)."""
    if counter not in FILE_COUNTERS:
        raise _bad_counter(counter, FILE_COUNTERS)
    commits = _first_parent_commits(project, ref, n)
    picked = """
        SELECT snap, snapshot_id, created_at, commit_sha, suite,
               list_position(?::VARCHAR[], commit_sha) - 1 AS commits_ago
        FROM snapshots
        WHERE scope = 'complete' AND list_contains(?::VARCHAR[], commit_sha) AND (?::VARCHAR IS NULL OR suite = ?)
        QUALIFY row_number() OVER (PARTITION BY suite, commit_sha ORDER BY snap DESC) = 1"""
    params = [commits, commits, suite, suite]
    if suite is None:
        suites = [
            r[0]
            for r in _sql(con, f"SELECT DISTINCT suite FROM ({picked}) ORDER BY suite", params).fetchall()
        ]
        if len(suites) > 1:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"the last {n} commits of {ref} were measured by several suites ({', '.join(suites)})",
                f"Pick one: suite={suites[0]!r}.",
                {"suites": suites},
            )
    return _sql(
        con,
        f"""
        SELECT p.commits_ago, p.snapshot_id, p.created_at, p.commit_sha AS "commit", p.suite, f.path,
               f.{counter}_hit AS hit, f.{counter}_found AS found,
               {_PERCENT.format(hit=f"f.{counter}_hit", found=f"f.{counter}_found")} AS percent
        FROM ({picked}) p JOIN files f USING (snap)""",
        params,
    )


def _detached(rel: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """``rel``'s rows copied into a private in-memory database, with the same column names and types.

    The copy goes through NumPy columns (no pandas, no pyarrow); those carry
    TIMESTAMPTZ as UTC wall-clock time, which is re-read as UTC.
    """
    names, types = rel.columns, [str(t) for t in rel.types]
    columns = rel.fetchnumpy()
    memory = duckdb.connect()
    memory.register("fetched", columns)
    select = ", ".join(
        f"timezone('UTC', {_quote(name)}) AS {_quote(name)}"
        if kind == "TIMESTAMP WITH TIME ZONE"
        else f"CAST({_quote(name)} AS {kind}) AS {_quote(name)}"
        for name, kind in zip(names, types)
    )
    memory.execute(f"CREATE TABLE answer AS SELECT {select} FROM fetched")
    memory.unregister("fetched")
    return memory.table("answer")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _bad_counter(counter: str, allowed: tuple[str, ...]) -> CoverageError:
    return CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        f"counter must be one of {', '.join(allowed)}; got {counter!r}",
        "Use counter='headline' (the producing tool's own total), 'lines' (coverage.py statements), "
        "'branches' or 'functions'.",
        {"allowed": list(allowed)},
    )
