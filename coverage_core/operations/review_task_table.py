"""The review tasks of ``coverage_review``: one ``Task`` record each, the one declaration of a task.

A task's record owns what every surface says of it: the arguments it reads
(everything else is refused, naming the tasks that read it), the keys of its
``data`` and the counts of its page (the output schema and docs/operations.md),
the line ``review --help`` shows for it, and whether it reads a measurement
(the CLI sends ``--snapshot``/``--suite`` to a task's ``filter`` when not).
The tables the surfaces read (``TASK_NAMES``, ``ARGUMENTS``, ``TASK_DATA``,
``TASK_PAGE``, ``COVERAGE_REVIEW``) derive from the records; the handlers are
in ``review_tasks``, keyed by the same names.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..output_schemas import (
    ARRAY,
    BOOLEAN,
    CLAIM,
    DETAIL_INTEGER,
    DETAIL_STRING,
    INTEGER,
    NULLABLE_STRING,
    OBJECT,
    STRING,
    UNLISTED,
    envelope,
    obj,
    page,
    unlisted,
)
from ..vocabulary import FILE_ORDERS


@attrs.frozen
class Task:
    """One coverage_review task as every surface declares it.

    ``reads``: the arguments it reads, besides ``task``; ``summary``: what it answers, for ``review --help``;
    ``data``: its own ``data`` keys and their schemas (each may be absent when nothing is measured);
    ``page``: what its page counts (all integers) beside next_cursor, null when there is one page;
    ``measured``: it reads ``measurement`` (False: a listing across snapshots, read through ``filter``).
    """

    name: str
    reads: frozenset[str]
    summary: str
    data: dict[str, Any]
    page: tuple[str, ...]
    measured: bool = True


def keys(**properties: Any) -> dict[str, Any]:
    """A task's data keys, written as keywords."""
    return properties


_READ = ("measurement", "limits", "representation", "cursor")

# In the order the output schema and docs/operations.md list them.
REVIEW_TASKS: tuple[Task, ...] = (
    Task(
        "insight",
        reads=frozenset({*_READ, "file"}),
        summary="where the untested code is: files and functions ranked by uncovered and partly covered lines",
        data=keys(
            snapshot_ids=ARRAY,
            commit=unlisted(NULLABLE_STRING),
            files_with_gaps=DETAIL_INTEGER,
            targets=ARRAY,
            target_count=INTEGER,
            targets_truncated=BOOLEAN,
            files=ARRAY,
            legend=OBJECT,
            composite=OBJECT,
        ),
        page=("offset", "files", "total_files", "target_offset", "targets", "total_targets"),
    ),
    Task(
        "change",
        reads=frozenset({*_READ, "baseline", "file"}),
        summary="what a change did to coverage against a baseline (--baseline; default: the previous snapshot): "
        "new lines uncovered (UNC), baseline coverage lost (LBC), ... in lcov's categories, and patch "
        "coverage",
        data=keys(
            baseline=OBJECT,
            current=OBJECT,
            diff=OBJECT,
            categories=OBJECT,
            branches=OBJECT,
            functions=OBJECT,
            patch=OBJECT,
            regression=OBJECT,
            not_measured=OBJECT,
            outside_scope=OBJECT,
            files=ARRAY,
            ranges=ARRAY,
            ranges_truncated=BOOLEAN,
            ranges_cursor=NULLABLE_STRING,
            legend=OBJECT,
            comparison=OBJECT,
        ),
        page=("offset", "files", "total_files"),
    ),
    Task(
        "incremental",
        reads=frozenset({*_READ, "baseline"}),
        summary="one run's snapshots (--snapshot) against an explicit baseline snapshot (--baseline snap-...)",
        data=keys(
            projection=DETAIL_STRING,
            baseline=OBJECT,
            current=OBJECT,
            lines=OBJECT,
            branches=OBJECT,
            functions=OBJECT,
            categories=OBJECT,
            regression=OBJECT,
            tests=OBJECT,
            attribution=OBJECT,
            diff=OBJECT,
            files=ARRAY,
            ranges=ARRAY,
            ranges_truncated=BOOLEAN,
            legend=OBJECT,
            comparison=OBJECT,
        ),
        page=("offset", "files", "total_files"),
    ),
    Task(
        "history",
        reads=frozenset({*_READ, "file", "lines"}),
        summary="the coverage of a suite (or a --file) over its stored snapshots, newest first",
        data=keys(
            suite=DETAIL_STRING,
            subject=DETAIL_STRING,
            counter=DETAIL_STRING,
            points=ARRAY,
            rows=ARRAY,
            rows_truncated=BOOLEAN,
            all_points=ARRAY,
            window=OBJECT,
            legend=OBJECT,
        ),
        page=("offset", "rows", "total_rows", "snapshots"),
    ),
    Task(
        "source",
        reads=frozenset({"measurement", "limits", "representation", "file", "lines", "ranges", "cursor"}),
        summary="a --file's source lines (or --lines A-B), each marked covered, uncovered, partial, excluded or not code",
        data=keys(
            snapshot_id=STRING,
            commit=unlisted(NULLABLE_STRING),
            file=DETAIL_STRING,
            ranges=ARRAY,
            lines_truncated=BOOLEAN,
            legend=OBJECT,
        ),
        page=("total",),
    ),
    Task(
        "tests",
        reads=frozenset({*_READ, "file", "lines"}),
        summary="which named tests ran (per-test contexts), and tests whose coverage is identical",
        data=keys(
            snapshot_id=STRING,
            named_tests=DETAIL_INTEGER,
            status=DETAIL_STRING,
            duplicate_groups=DETAIL_INTEGER,
            duplicates=ARRAY,
            duplicates_truncated=BOOLEAN,
            legend=OBJECT,
        ),
        page=("offset", "groups", "total_groups"),
    ),
    Task(
        "audit",
        reads=frozenset({"measurement", "limits", "cursor", "file"}),
        summary="the snapshot's exact stored records: totals and every file's counts, paged",
        data=keys(
            snapshot_id=STRING, commit=unlisted(NULLABLE_STRING), totals=OBJECT, files=ARRAY, legend=OBJECT
        ),
        page=("offset", "records", "total"),
    ),
    Task(
        "all",
        reads=frozenset({*_READ, "baseline", "file"}),
        summary="change, insight and history in one answer (change when a baseline is found)",
        data=keys(change=OBJECT, insight=OBJECT, history=OBJECT),
        # insight's page, and which parts have more (parts_truncated: part -> true)
        page=(
            "offset",
            "files",
            "total_files",
            "target_offset",
            "targets",
            "total_targets",
            "parts_truncated",
        ),
    ),
    Task(
        "snapshots",
        reads=frozenset({"filter", "page_size", "representation", "cursor", "limits"}),
        summary="the stored snapshots, newest first (filter with --suite, --branch, --commit, --snapshot)",
        data=keys(filter=OBJECT, snapshots=ARRAY, legend=OBJECT),
        page=("offset", "returned"),
        measured=False,
    ),
    Task(
        "files",
        reads=frozenset({*_READ, "order", "page_size"}),
        summary="one snapshot's files with their counts (as `show` lists them)",
        data=keys(
            snapshot_id=STRING,
            order=unlisted({"enum": list(FILE_ORDERS)}),
            total=DETAIL_INTEGER,
            files=ARRAY,
            legend=OBJECT,
        ),
        page=("offset", "returned"),
    ),
    Task(
        "file",
        reads=frozenset({"measurement", "limits", "cursor", "file", "lines"}),
        summary="one --file's exact lines, branches, functions, regions and tests (as `show --file`)",
        data=keys(
            snapshot_id=STRING,
            summary=OBJECT,
            tests=ARRAY,
            lines=OBJECT,
            branches=OBJECT,
            functions=OBJECT,
            regions=OBJECT,
        ),
        page=("from_line", "to_line", "offset", "records", "total"),
    ),
)

BY_NAME = {task.name: task for task in REVIEW_TASKS}
# The task enum: the tasks that read a measurement, then the listings across snapshots.
TASK_NAMES = (
    *[t.name for t in REVIEW_TASKS if t.measured],
    *[t.name for t in REVIEW_TASKS if not t.measured],
)
ARGUMENTS: dict[str, frozenset[str]] = {name: BY_NAME[name].reads for name in TASK_NAMES}
# Arguments that only mean something beside another one.
NEEDS = {"lines": "file", "ranges": "file"}
# Arguments the CLI's ``review`` has no option for: asked by agents only (MCP, REST).
MCP_ONLY = frozenset({"ranges"})

TASK_DATA: dict[str, dict[str, Any]] = {
    t.name: {"properties": {"task": {"const": t.name}, **t.data}} for t in REVIEW_TASKS
}
TASK_PAGE: dict[str, tuple[str, ...]] = {t.name: t.page for t in REVIEW_TASKS}


def tasks_using(argument: str) -> list[str]:
    """The tasks that read ``argument``, in TASK_NAMES order."""
    return [t for t in TASK_NAMES if argument in ARGUMENTS[t]]


def _union(tasks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every task's keys in one object: a key two tasks share has one schema, or is unlisted in both."""
    union: dict[str, Any] = {}
    for data in tasks.values():
        for key, schema in data["properties"].items():
            if key == "task" or union.get(key, schema) == schema:
                union[key] = schema
            elif union[key].get("$comment") == schema.get("$comment") == UNLISTED:
                union[key] = unlisted({})
            else:
                raise AssertionError(f"task key {key!r} has two published shapes")
    union.pop("task")
    return union


# One schema for every task (the declared keys of all of them); ``task_envelope`` is one task's, exact.
COVERAGE_REVIEW = envelope(
    # task: the one the call named
    obj(
        "task",
        "claim_status",
        "reasons",
        task=unlisted({"enum": list(TASK_DATA)}),
        **CLAIM,
        **_union(TASK_DATA),
    ),
    page(*dict.fromkeys(count for counts in TASK_PAGE.values() for count in counts)),
)


def task_envelope(task: str) -> dict[str, Any]:
    """The envelope of one coverage_review task alone, its page exact (for tests and documentation)."""
    data = obj("task", "claim_status", "reasons", **CLAIM, **TASK_DATA[task]["properties"])
    return envelope(data, page(*TASK_PAGE[task]))
