"""What each operation answers: one JSON Schema (2020-12) per operation, and per ``coverage_review`` task.

Every answer is the envelope ``{context, data, page}`` (``service.envelope_for``);
what differs is ``data`` and ``page``. Each schema lists the keys an operation
really returns (a test validates real answers of every task, with the keys
closed, so a new key must be declared here) and requires only those present
in every answer, the ``not_measured`` one of an empty store included. The
published schemas stay open to additional keys: an agent's SDK refuses a
result its schema does not admit, and a new key is not a reason to fail.

``service.OPERATIONS`` attaches these as ``Operation.output_schema``; MCP's
``tools/list`` publishes them as each tool's ``outputSchema``.
"""

from __future__ import annotations

from typing import Any

from .review.context import CLAIM_ORDER
from .review.listing import FILE_ORDERS

STRING = {"type": "string"}
INTEGER = {"type": "integer"}
BOOLEAN = {"type": "boolean"}
OBJECT = {"type": "object"}
ARRAY = {"type": "array"}
NULLABLE_STRING = {"type": ["string", "null"]}

# Compact on purpose: tools/list carries these to every agent, so keys and
# types only; what a task means is said once, in the input's description.


def obj(*required: str, **properties: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if required:
        schema["required"] = list(required)
    schema["properties"] = properties
    return schema


CONTEXT = obj(
    "repo_key",
    "project_id",
    "checkout_path",
    "suite",
    "schema_revision",
    "stats",
    repo_key=STRING,
    project_id=STRING,
    checkout_path=STRING,
    suite=NULLABLE_STRING,
    schema_revision=INTEGER,
    stats=OBJECT,
)

# Every data object states how far its evidence goes; ``next`` says what to do when nothing is shown.
# ``reason_codes``: machine-readable codes of reasons that change what a caller should do
# (``current_not_measured``: a comparison's current side is not HEAD's measurement).
CLAIM = {"claim_status": {"enum": list(CLAIM_ORDER)}, "reasons": ARRAY, "reason_codes": ARRAY, "next": STRING}


def _task(name: str, **properties: Any) -> dict[str, Any]:
    """One coverage_review task's own data keys (each may be absent when nothing is measured)."""
    return {"properties": {"task": {"const": name}, **properties}}


TASK_DATA: dict[str, dict[str, Any]] = {
    "insight": _task(
        "insight",
        snapshot_ids=ARRAY,
        commit=NULLABLE_STRING,
        files_with_gaps=INTEGER,
        targets=ARRAY,
        target_count=INTEGER,
        targets_truncated=BOOLEAN,
        files=ARRAY,
        legend=OBJECT,
        composite=OBJECT,
    ),
    "change": _task(
        "change",
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
    "incremental": _task(
        "incremental",
        projection=STRING,
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
    "history": _task(
        "history",
        suite=STRING,
        subject=STRING,
        counter=STRING,
        points=ARRAY,
        rows=ARRAY,
        rows_truncated=BOOLEAN,
        all_points=ARRAY,
        window=OBJECT,
        legend=OBJECT,
    ),
    "source": _task(
        "source",
        snapshot_id=STRING,
        commit=NULLABLE_STRING,
        file=STRING,
        ranges=ARRAY,
        lines_truncated=BOOLEAN,
        legend=OBJECT,
    ),
    "tests": _task(
        "tests",
        snapshot_id=STRING,
        named_tests=INTEGER,
        status=STRING,
        duplicate_groups=INTEGER,
        duplicates=ARRAY,
        duplicates_truncated=BOOLEAN,
        legend=OBJECT,
    ),
    "audit": _task(
        "audit", snapshot_id=STRING, commit=NULLABLE_STRING, totals=OBJECT, files=ARRAY, legend=OBJECT
    ),
    "all": _task("all", change=OBJECT, insight=OBJECT, history=OBJECT),
    "snapshots": _task("snapshots", filter=OBJECT, snapshots=ARRAY, legend=OBJECT),
    "files": _task(
        "files",
        snapshot_id=STRING,
        order={"enum": list(FILE_ORDERS)},
        total=INTEGER,
        files=ARRAY,
        legend=OBJECT,
    ),
    "file": _task(
        "file",
        snapshot_id=STRING,
        summary=OBJECT,
        tests=ARRAY,
        lines=OBJECT,
        branches=OBJECT,
        functions=OBJECT,
        regions=OBJECT,
    ),
}

# What each task's page counts (all integers), beside next_cursor; null when there is one page only.
TASK_PAGE: dict[str, tuple[str, ...]] = {
    "insight": ("offset", "files", "total_files", "target_offset", "targets", "total_targets"),
    "change": ("offset", "files", "total_files"),
    "incremental": ("offset", "files", "total_files"),
    "history": ("offset", "rows", "total_rows", "snapshots"),
    "source": ("total",),
    "tests": ("offset", "groups", "total_groups"),
    "audit": ("offset", "records", "total"),
    # insight's page, and which parts have more (parts_truncated: part -> true)
    "all": ("offset", "files", "total_files", "target_offset", "targets", "total_targets", "parts_truncated"),
    "snapshots": ("offset", "returned"),
    "files": ("offset", "returned"),
    "file": ("from_line", "to_line", "offset", "records", "total"),
}


def page(*counts: str, nullable: bool = True) -> dict[str, Any]:
    """A page: its counts, and ``next_cursor`` (pass it as cursor to continue; null on the last page)."""
    schema = obj(
        "next_cursor",
        next_cursor=NULLABLE_STRING,
        **{count: OBJECT if count == "parts_truncated" else INTEGER for count in counts},
    )
    if nullable:
        schema["type"] = ["object", "null"]
    return schema


def envelope(data: dict[str, Any], page_schema: dict[str, Any]) -> dict[str, Any]:
    return obj("context", "data", "page", context=CONTEXT, data=data, page=page_schema)


PROJECT_CONTEXT = envelope(
    obj(
        "project",
        "suites",
        "settings",
        "claim_status",
        "reasons",
        project=OBJECT,
        suites=ARRAY,
        suites_truncated=BOOLEAN,
        latest_composite={"type": ["object", "null"]},
        active_runs=ARRAY,
        active_runs_truncated=BOOLEAN,
        settings=OBJECT,
        commands=ARRAY,
        **CLAIM,
        compaction=OBJECT,
        preserved_wal=OBJECT,
    ),
    page("reserved_words", "word_count", "response_word_count", "max_words", nullable=False),
)

COVERAGE_REVIEW = envelope(
    {
        **obj("task", "claim_status", "reasons", task={"enum": list(TASK_DATA)}, **CLAIM),
        "anyOf": list(TASK_DATA.values()),
    },
    page(*dict.fromkeys(count for counts in TASK_PAGE.values() for count in counts)),
)

# An ordinary import answers snapshot and duplicate; a composite import (inventory_path, reports) composite.
COVERAGE_IMPORT = envelope(
    obj(
        "claim_status",
        "reasons",
        snapshot={"type": "object", "required": ["snapshot_id", "suite", "commit", "totals", "base_ref"]},
        duplicate=BOOLEAN,
        **CLAIM,
        composite=OBJECT,
    ),
    {"type": "null"},
)

# Managed execution. The records are open objects (their keys listed in docs/operations.md); what
# agents rely on is required: data.command.{id,status}, data.run.{id,state,artifacts,reused}.
COMMAND = {"type": "object", "required": ["id", "status"]}  # status: pending | approved | rejected
# state: queued running succeeded failed cancelled timed_out interrupted
RUN = {"type": "object", "required": ["id", "state", "artifacts", "reused"]}
# One item of data.run.artifacts (not published in tools/list, whose size is bounded; tests hold every run's
# artifacts to it, closed). A composite artifact (kind composite, path = its inventory) answers the
# composite_snapshot_id it built and each report's status; measurement {"run_id"} reads snapshot_ids only.
RUN_ARTIFACT = obj(
    "path",
    "status",
    "snapshot_id",
    path=STRING,
    status={"enum": ["ingested", "skipped_stale", "failed"]},
    snapshot_id=NULLABLE_STRING,
    error_code=STRING,
    detail=STRING,
    kind={"const": "composite"},
    composite_snapshot_id=NULLABLE_STRING,
    composite_status={"enum": ["complete", "incomplete", None]},
    reports={
        "type": "array",
        "items": obj(
            "component",
            "variant",
            "path",
            "status",
            component=STRING,
            variant=NULLABLE_STRING,
            path=STRING,
            status={"enum": ["used", "skipped_stale"]},
            detail=STRING,
        ),
    },
)

REGISTER_TEST_COMMAND = envelope(
    obj("command", "approval_mode", command=COMMAND, approval_mode=STRING, next=STRING),
    {"type": "null"},
)

RUN_TEST = envelope(obj("run", run=RUN, next=STRING), {"type": "null"})

RUN_REVIEW = envelope(
    obj(
        "view",
        "run",
        view={"enum": ["status", "logs"]},
        run={"type": "object", "required": ["id", "state"]},
        logs=OBJECT,
        text=ARRAY,
        search=STRING,
        matches=ARRAY,
    ),
    {"type": ["object", "null"], "properties": {"next_cursor": NULLABLE_STRING}},
)

CANCEL_RUN = envelope(obj("run", run=RUN, next=STRING), {"type": "null"})


def task_envelope(task: str) -> dict[str, Any]:
    """The envelope of one coverage_review task alone, its page exact (for tests and documentation)."""
    data = obj("task", "claim_status", "reasons", **CLAIM, **TASK_DATA[task]["properties"])
    return envelope(data, page(*TASK_PAGE[task]))
