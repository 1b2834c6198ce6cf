"""What each operation answers: one JSON Schema (2020-12) per operation (coverage_review's: its tasks' records).

Every answer is the envelope ``{context, data, page}`` (``service.envelope_for``);
what differs is ``data`` and ``page``. Each schema lists the keys an operation
really returns (a test validates real answers of every task, with the keys
closed, so a new key must be declared here) and requires only those present
in every answer, the ``not_measured`` one of an empty store included. The
published schemas stay open to additional keys: an agent's SDK refuses a
result its schema does not admit, and a new key is not a reason to fail.

``operations.table.OPERATIONS`` attaches these as ``Operation.output_schema`` (docs/operations.md lists
every key); MCP's ``tools/list`` publishes their listed form (``published``) as each tool's
``outputSchema``: the keys agents read, typed, and none of the unlisted ones.
"""

from __future__ import annotations

from typing import Any

from .vocabulary import CLAIM_ORDER, COMMAND_STATUSES, RUN_STATES

STRING = {"type": "string"}
INTEGER = {"type": "integer"}
BOOLEAN = {"type": "boolean"}
NULLABLE_STRING = {"type": ["string", "null"]}
NULLABLE_INTEGER = {"type": ["integer", "null"]}
STRINGS = {"type": "array", "items": STRING}
HIT_FOUND = {"type": ["array", "null"], "items": INTEGER}  # [hit, found], exact integers

# What tools/list publishes is smaller than what is declared here: every agent is sent it, and
# each byte is read by a model on every connection. A key whose schema carries this comment is
# declared (documented, and the tests hold answers to it, closed) but not published: an open
# schema admits it anyway, and its shape (a record, or compact tuples a legend names) is said
# in docs/operations.md. ``published`` derives the listed form; what agents read stays in it.
UNLISTED = "unlisted"


def unlisted(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "$comment": UNLISTED}


OBJECT = unlisted({"type": "object"})
ARRAY = unlisted({"type": "array"})
DETAIL_STRING = unlisted(STRING)
DETAIL_INTEGER = unlisted(INTEGER)


def obj(*required: str, **properties: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if required:
        schema["required"] = list(required)
    schema["properties"] = properties
    return schema


def record(*required: str, **properties: Any) -> dict[str, Any]:
    """A stored record (a snapshot, a command, a run): the keys agents read, the others left open."""
    return {**obj(*required, **properties), "additionalProperties": True}


def published(schema: Any) -> Any:
    """``schema`` as tools/list lists it: unlisted keys dropped (from ``required`` too)."""
    if isinstance(schema, list):
        return [published(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    # additionalProperties true is the default: said for the tests, which close what is not a record.
    out = {
        k: published(v)
        for k, v in schema.items()
        if k not in ("properties", "required") and not (k == "additionalProperties" and v is True)
    }
    if "properties" in schema:
        kept = {k: v for k, v in schema["properties"].items() if v.get("$comment") != UNLISTED}
        required = [k for k in schema.get("required", ()) if k in kept]
        if required:
            out["required"] = required
        if kept:
            out["properties"] = {k: published(v) for k, v in kept.items()}
    elif "required" in schema:
        out["required"] = schema["required"]
    return out


CONTEXT = unlisted(
    obj(
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
)

# Every data object states how far its evidence goes; ``next`` says what to do when nothing is shown.
# ``reason_codes``: machine-readable codes of reasons that change what a caller should do
# (``current_not_measured``: a comparison's current side is not HEAD's measurement).
CLAIM = {
    "claim_status": {"enum": list(CLAIM_ORDER)},
    "reasons": STRINGS,
    "reason_codes": STRINGS,
    "next": STRING,
}
# Where no reason code is given yet (project_context, imports), the codes are not listed.
PLAIN_CLAIM = {**CLAIM, "reason_codes": unlisted(STRINGS)}


def page(*counts: str, nullable: bool = True) -> dict[str, Any]:
    """A page: its counts, and ``next_cursor`` (pass it as cursor to continue; null on the last page)."""
    schema = obj(
        "next_cursor",
        next_cursor=NULLABLE_STRING,
        **{count: OBJECT if count == "parts_truncated" else DETAIL_INTEGER for count in counts},
    )
    if nullable:
        schema["type"] = ["object", "null"]
    return schema


def envelope(data: dict[str, Any], page_schema: dict[str, Any]) -> dict[str, Any]:
    return obj("context", "data", "page", context=CONTEXT, data=data, page=page_schema)


SUITE_BRIEF = obj(
    suite=STRING,
    snapshot_id=STRING,
    format=DETAIL_STRING,
    commit=DETAIL_STRING,
    age_s=DETAIL_INTEGER,
    behind_head=NULLABLE_INTEGER,
    dirty=unlisted(BOOLEAN),
    scope=DETAIL_STRING,
    covered=unlisted(HIT_FOUND),
    percent=STRING,  # the headline, as the producing tool computes and prints it
    counter=DETAIL_STRING,  # which counters it sums
    claim_status=STRING,  # its values are listed once, at data.claim_status
    # Counts per freshness state, and the files that are not fresh ([path, state]).
    content=obj(
        fresh=INTEGER,
        stale=INTEGER,
        unknown=INTEGER,
        files=unlisted({"type": "array"}),
        files_truncated=BOOLEAN,
    ),
)

PROJECT_CONTEXT = envelope(
    obj(
        "project",
        "suites",
        "settings",
        "claim_status",
        "reasons",
        project=obj(
            repo_key=DETAIL_STRING,
            project_id=DETAIL_STRING,
            checkout_path=DETAIL_STRING,
            worktree=unlisted(NULLABLE_STRING),
            head=NULLABLE_STRING,
            branch=NULLABLE_STRING,
            dirty=BOOLEAN,
        ),
        suites={"type": "array", "items": SUITE_BRIEF},
        suites_truncated=BOOLEAN,
        latest_composite=unlisted({"type": ["object", "null"]}),
        active_runs=ARRAY,
        active_runs_truncated=unlisted(BOOLEAN),
        settings=OBJECT,
        # Approved and pending commands: id, name, status, argv (pending ones: approve_with, a person's line).
        commands=ARRAY,
        **PLAIN_CLAIM,
        compaction=OBJECT,
        preserved_wal=OBJECT,
    ),
    {
        **page("reserved_words", "word_count", "response_word_count", "max_words", nullable=False),
        # What a small max_words left out (e.g. suites.content.files, compaction); [] when nothing was.
        "properties": {
            **page("reserved_words", "word_count", "response_word_count", "max_words")["properties"],
            "omitted": STRINGS,
        },
    },
)

SNAPSHOT = record(
    "snapshot_id",
    "suite",
    "commit",
    "totals",
    "base_ref",
    snapshot_id=STRING,
    suite=STRING,
    commit=NULLABLE_STRING,
    totals=OBJECT,
    base_ref=unlisted(NULLABLE_STRING),
)

# An ordinary import answers snapshot and duplicate; a composite import (inventory_path, reports) composite.
COVERAGE_IMPORT = envelope(
    obj(
        "claim_status",
        "reasons",
        snapshot=SNAPSHOT,
        duplicate=BOOLEAN,
        **PLAIN_CLAIM,
        composite=OBJECT,
    ),
    {"type": "null"},
)

# Managed execution. The records are open objects (their keys listed in docs/operations.md); what
# agents rely on is required: data.command.{id,status}, data.run.{id,state,artifacts,reused}.
COMMAND = record("id", "status", id=STRING, status={"enum": list(COMMAND_STATUSES)}, approve_with=STRING)
RUN = record(
    "id",
    "state",
    "artifacts",
    "reused",
    id=STRING,
    state={"enum": list(RUN_STATES)},
    artifacts=ARRAY,
    reused=BOOLEAN,
    exit_code=NULLABLE_INTEGER,
)
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
    obj("command", "approval_mode", command=COMMAND, approval_mode=DETAIL_STRING, next=STRING),
    {"type": "null"},
)

RUN_TEST = envelope(obj("run", run=RUN, next=STRING), {"type": "null"})

RUN_REVIEW = envelope(
    obj(
        "view",
        "run",
        view={"enum": ["status", "logs"]},
        run=record("id", "state", id=STRING, state=STRING),  # run_test lists the states
        logs=OBJECT,
        # logs: pieces of the streams, in order ({stream, offset, text})
        text={"type": "array", "items": obj(stream=STRING, offset=INTEGER, text=STRING)},
        search=DETAIL_STRING,
        matches=ARRAY,
    ),
    {"type": ["object", "null"], "properties": {"next_cursor": NULLABLE_STRING}},
)

CANCEL_RUN = envelope(
    obj("run", run=record("id", "state", id=STRING, state=STRING), next=STRING), {"type": "null"}
)

# The person's and the store owner's rows (operations/admin_ops): the same data their routes answered.
_NO_PAGE = {"type": "null"}
COMMAND_LIST = envelope(obj("commands", commands={"type": "array", "items": COMMAND}), _NO_PAGE)
# command_show, command_approve and command_reject: the full registration and its decisions.
COMMAND_ANSWER = envelope(obj("command", command=COMMAND), _NO_PAGE)
RUN_LIST = envelope(
    obj(
        "runs",
        runs={"type": "array", "items": record("id", "state", id=STRING, state={"enum": list(RUN_STATES)})},
    ),
    _NO_PAGE,
)
SNAPSHOT_DELETE = envelope(
    obj(
        "dry_run",
        "deleted",
        "snapshots",
        "rows",
        dry_run=BOOLEAN,
        deleted=STRINGS,
        snapshots={"type": "array", "items": record("snapshot_id", snapshot_id=STRING, suite=STRING)},
        rows=OBJECT,
    ),
    _NO_PAGE,
)
COMPACT = envelope(
    obj(
        "dry_run",
        "trigger",
        "older_than_seconds",
        "eligible",
        "protected",
        "compacted",
        "left",
        "detail_bytes",
        "payload_bytes",
        dry_run=BOOLEAN,
        trigger=STRING,
        older_than_seconds={"type": ["number", "null"]},
        eligible=ARRAY,
        protected=ARRAY,
        compacted=ARRAY,
        left=INTEGER,
        detail_bytes=INTEGER,
        payload_bytes=INTEGER,
    ),
    _NO_PAGE,
)
COMPACTION_INVENTORY = envelope(
    obj(
        "relational",
        "compacted",
        "detail_bytes",
        "payload_bytes",
        "eligible",
        "protected",
        "protected_newest",
        "protected_incremental_bases",
        "protected_past_threshold",
        "policy",
        "last_pass",
        "inconsistent",
        "orphan_payloads",
        relational=INTEGER,
        compacted=INTEGER,
        detail_bytes=INTEGER,
        payload_bytes=INTEGER,
        eligible=INTEGER,
        protected=INTEGER,
        protected_newest=INTEGER,
        protected_incremental_bases=INTEGER,
        protected_past_threshold=INTEGER,
        policy=OBJECT,
        last_pass={"type": ["object", "null"]},
        inconsistent=STRINGS,
        orphan_payloads={"type": "array", "items": INTEGER},
    ),
    _NO_PAGE,
)
PROJECT_SETTINGS = envelope(obj("settings", settings=OBJECT), _NO_PAGE)
# A relation as columns (coverage_core.analysis.to_columns): names, DuckDB types, one list of values each.
ANALYSIS = envelope(
    obj("names", "types", "values", names=STRINGS, types=STRINGS, values={"type": "array", "items": ARRAY}),
    _NO_PAGE,
)
# The dashboard's rows (operations/dashboard_view): what the page reads, section by section. Each section is
# an object the page renders as a whole (its keys: docs/operations.md's row, the module's docstring).
NULLABLE_OBJECT = unlisted({"type": ["object", "null"]})
DASHBOARD = envelope(
    obj(
        "project",
        "revision",
        "suite",
        "suites",
        "selection",
        "metrics",
        "timeline",
        "change",
        "files",
        "tests",
        "category_words",
        "runs",
        "approvals",
        "compaction",
        "composite",
        project=OBJECT,
        revision=STRING,
        suite=STRING,
        suites=STRINGS,
        selection=obj("current", "baseline", current=NULLABLE_OBJECT, baseline=NULLABLE_OBJECT),
        metrics=OBJECT,
        timeline=obj("points", "truncated", points=ARRAY, truncated=BOOLEAN),
        change=NULLABLE_OBJECT,
        files=NULLABLE_OBJECT,
        tests=NULLABLE_OBJECT,
        category_words=OBJECT,
        runs=OBJECT,
        approvals=OBJECT,
        compaction=OBJECT,
        composite=OBJECT,
    ),
    _NO_PAGE,
)
DASHBOARD_FILE = envelope(
    obj(
        "snapshot_id",
        "file",
        "commit",
        "lines",
        "file_lines",
        "truncated",
        "claim_status",
        "reasons",
        snapshot_id=STRING,
        file=STRING,
        commit=NULLABLE_STRING,
        lines=ARRAY,
        file_lines=INTEGER,
        truncated=BOOLEAN,
        claim_status={"enum": [*CLAIM_ORDER, None]},
        reasons=STRINGS,
    ),
    _NO_PAGE,
)
DASHBOARD_RUN = envelope(
    obj(
        "run_id",
        "run",
        "logs",
        "text",
        "more",
        run_id=STRING,
        run=RUN,
        logs=NULLABLE_OBJECT,
        text={"type": "array", "items": obj("stream", "text", stream=STRING, offset=INTEGER, text=STRING)},
        more=BOOLEAN,
    ),
    _NO_PAGE,
)
DASHBOARD_REVISION = envelope(obj("revision", revision=STRING), _NO_PAGE)
# The dashboard's navigation (operations/dashboard_nav): a page of files, a directory, a page of functions;
# its whole annotated file (operations/dashboard_source): a part of a file, the tests that ran a line.
_COUNT = obj("found", "hit", found=INTEGER, hit=INTEGER)
DASHBOARD_FILES = envelope(
    obj(
        "snapshot_id",
        "sort",
        "descending",
        "matched",
        "total",
        "offset",
        "rows",
        "truncated",
        snapshot_id=STRING,
        sort=STRING,
        descending=BOOLEAN,
        matched=INTEGER,
        total=INTEGER,
        offset=INTEGER,
        rows=ARRAY,
        truncated=BOOLEAN,
    ),
    page("total", nullable=False),
)
DASHBOARD_TREE = envelope(
    obj(
        "snapshot_id",
        "dir",
        "parent",
        "files",
        "files_here",
        "lines",
        "branches",
        "functions",
        "headline",
        "directories",
        "truncated",
        snapshot_id=STRING,
        dir=STRING,
        parent=NULLABLE_STRING,
        files=INTEGER,
        files_here=INTEGER,
        lines=_COUNT,
        branches=_COUNT,
        functions=_COUNT,
        headline=_COUNT,
        directories=ARRAY,
        truncated=BOOLEAN,
    ),
    _NO_PAGE,
)
DASHBOARD_FUNCTIONS = envelope(
    obj(
        "snapshot_id",
        "file",
        "sort",
        "descending",
        "matched",
        "hit",
        "offset",
        "rows",
        "truncated",
        snapshot_id=STRING,
        file=NULLABLE_STRING,
        sort=STRING,
        descending=BOOLEAN,
        matched=INTEGER,
        hit=INTEGER,
        offset=INTEGER,
        rows=ARRAY,
        truncated=BOOLEAN,
    ),
    page("total", nullable=False),
)
DASHBOARD_SOURCE = envelope(
    obj(
        "snapshot_id",
        "file",
        "part",
        snapshot_id=STRING,
        file=STRING,
        part={"enum": ["lines", "outline", "categories"]},
        # lines: a window
        start=INTEGER,
        lines=ARRAY,
        file_lines=INTEGER,
        commit=NULLABLE_STRING,
        claim_status={"enum": [*CLAIM_ORDER, None]},
        reasons=STRINGS,
        # outline: the missed blocks; categories: the current side's ranges against the baseline
        blocks=ARRAY,
        baseline_snapshot_id=STRING,
        available=BOOLEAN,
        reason=STRING,
        ranges=ARRAY,
    ),
    _NO_PAGE,
)
DASHBOARD_INCREMENTAL = envelope(
    obj(
        "available",
        available=BOOLEAN,
        reason=STRING,
        code=STRING,
        projection=STRING,
        categories=OBJECT,
        lines=OBJECT,
        regression=OBJECT,
        tests=OBJECT,
        claim_status={"enum": list(CLAIM_ORDER)},
        reasons=STRINGS,
        files=ARRAY,
        files_truncated=BOOLEAN,
    ),
    _NO_PAGE,
)
DASHBOARD_LINE_TESTS = envelope(
    obj(
        "snapshot_id",
        "file",
        "line",
        "named_tests",
        "total",
        "tests",
        "offset",
        snapshot_id=STRING,
        file=STRING,
        line=INTEGER,
        named_tests=INTEGER,
        total=INTEGER,
        tests=STRINGS,
        offset=INTEGER,
    ),
    page("total", nullable=False),
)
