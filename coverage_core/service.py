"""The transport-neutral API: one declared operation table, validation, envelopes.

Every wrapper (MCP tools, REST, CLI ``--json``, notebooks) calls
``Service.call(name, arguments)`` and gets the same envelope back::

    {"context": {repo_key, project_id, checkout_path, suite, schema_revision,
                 stats: {elapsed_ms, rows_scanned}},
     "data": {..., "claim_status", "reasons"},
     "page": {...} | None}

``OPERATIONS`` is the single declaration of the surface: name, description,
input and output schemas (JSON Schema 2020-12), behaviour hints and handler. Listing,
dispatch, validation and documentation all derive from it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, NoReturn

import attrs
import duckdb

from . import faults, output_schemas
from .errors import CoverageError, ErrorCode, Remedy
from .ids import COMMAND_ID_PATTERN, SNAPSHOT_ID_PATTERN
from .operations import admin_ops, dashboard_view, imports, review_task_table, review_tasks
from .operations import execution_ops as execution
from .parsers import FORMATS
from .principals import HOW_TO_BE, PREFERENCE, Principal, Surface
from .project import SCOPES, Project
from .review import baseline, budget, context, cursors, listing
from .review.call import Call
from .storage.schema import SCHEMA_REVISION
from .validation import Validator
from .vocabulary import COMMAND_STATUSES, FILE_ORDERS, RUN_STATES


@attrs.frozen
class Operation:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[Call], dict[str, Any]]
    # What a successful call answers: the envelope with this operation's data and page (output_schemas).
    output_schema: dict[str, Any]
    # Who may call it (``Service.call`` refuses anyone else) and where it is listed and reachable.
    principals: frozenset[Principal]
    surfaces: frozenset[Surface]
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    open_world: bool = False
    # Writes only through managed execution's own connection (never the store's write gate), and may
    # wait for a run: a transport runs it like a read, on its own connection.
    own_writes: bool = False
    # A success stores a new record (a snapshot, a registration, a run or its cancellation): REST answers
    # 201 Created unless the answer says it was stored already (data.duplicate).
    stores_new: bool = False


SNAPSHOT_ID = {"type": "string", "pattern": SNAPSHOT_ID_PATTERN}

_LIMITS = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "max_files": {
            "type": "integer",
            "minimum": 1,
            "maximum": budget.MAX_FILES_CAP,
            "default": budget.DEFAULT_MAX_FILES,
        },
        "max_regions": {
            "type": "integer",
            "minimum": 1,
            "maximum": budget.MAX_REGIONS_CAP,
            "default": budget.DEFAULT_MAX_REGIONS,
            "description": "Ranked targets or ranges.",
        },
        "max_words": {
            "type": "integer",
            "minimum": budget.MIN_WORDS,
            "maximum": budget.MAX_WORDS,
            "default": budget.DEFAULT_MAX_WORDS,
            "description": "Words of data.",
        },
        "max_bytes": {
            "type": "integer",
            "minimum": budget.MIN_BYTES,
            "maximum": budget.MAX_BYTES,
            "default": budget.DEFAULT_MAX_BYTES,
            "description": "Bytes of data's compact JSON.",
        },
    },
}

_MEASUREMENT = {
    "type": "object",
    "additionalProperties": False,
    "maxProperties": 1,
    "description": "One snapshot, several of one commit, a run's, or a suite's latest (default: the default "
    "suite's).",
    "properties": {
        "snapshot_id": {**SNAPSHOT_ID, "description": "As task=snapshots lists them"},
        "snapshot_ids": {"type": "array", "items": SNAPSHOT_ID, "minItems": 1, "maxItems": 32},
        "run_id": {"type": "string"},
        "composite_snapshot_id": {"type": "string"},
        "suite": {"type": "string", "minLength": 1, "maxLength": 200},
    },
}

_BASELINE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["kind"],
    "properties": {
        "kind": {"enum": list(baseline.KINDS)},
        "snapshot_id": {"type": "string"},
        "snapshot_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 32},
        "composite_snapshot_id": {"type": "string"},
        "ref": {"type": "string", "minLength": 1, "maxLength": 500},
    },
}

# Who may call an agent's row: the agent over MCP, the client token over REST (the CLI through a daemon,
# notebooks), the store's owner; where it appears: every surface but the dashboard's actions.
AGENT_ROW = frozenset({Principal.AGENT, Principal.CLIENT, Principal.ADMIN})
AGENT_SURFACES = frozenset({Surface.MCP, Surface.REST, Surface.CLI})
# A person's or the owner's read: the client token (the CLI through a daemon, notebooks) or the owner.
READER = frozenset({Principal.CLIENT, Principal.ADMIN})
# The owner's write: the daemon's admin capability, or the process holding the store.
OWNER = frozenset({Principal.ADMIN})
# A person's decision: the owner's CLI, or the dashboard's session with its CSRF token.
PERSON = frozenset({Principal.ADMIN, Principal.SESSION_WRITE})
OWNER_SURFACES = frozenset({Surface.REST, Surface.CLI})
# The dashboard's reads: its session (cookie), the client token (the CLI's static report through a daemon),
# the owner (that report in process); on the dashboard's routes, REST and the CLI's static report
# (`coverage-mcp report` builds from the first three), never MCP.
VIEWER = frozenset({Principal.SESSION_READ, Principal.CLIENT, Principal.ADMIN})
VIEWER_SURFACES = frozenset({Surface.DASHBOARD, Surface.REST, Surface.CLI})
STREAM_SURFACES = frozenset({Surface.DASHBOARD, Surface.REST})

_AGENT_ROWS = (
    Operation(
        name="project_context",
        title="Project context",
        description=(
            "Call this first. The checkout (HEAD, branch, dirty), each suite's latest snapshot (its "
            "distance from HEAD, files changed since), active runs and commands."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_words": {
                    "type": "integer",
                    "minimum": budget.MIN_WORDS,
                    "maximum": budget.MAX_WORDS,
                    "description": f"Word budget over data (default {budget.DEFAULT_MAX_WORDS}).",
                },
                "cursor": {
                    "type": "string",
                    "maxLength": 2000,
                    "description": "page.next_cursor of a previous answer.",
                },
            },
        },
        handler=context.project_context,
        output_schema=output_schemas.PROJECT_CONTEXT,
        principals=AGENT_ROW,
        surfaces=AGENT_SURFACES,
    ),
    Operation(
        name="coverage_review",
        title="Review coverage",
        description=(
            "Answers about stored coverage. task: insight (ranked uncovered regions), change (against a "
            "baseline, in lcov's categories, e.g. UNC uncovered new code; patch coverage), incremental (a "
            "run against a baseline), history (trend), source (annotated lines of file), tests (which tests "
            "cover what), audit (exact records), all (change, insight, history), snapshots (newest first), "
            "files (a snapshot's files), file (one file's lines, branches and tests). data.claim_status says "
            "how far the evidence goes; page.next_cursor continues."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["task"],
            "properties": {
                "task": {"enum": list(review_task_table.TASK_NAMES)},
                "measurement": _MEASUREMENT,
                "baseline": _BASELINE,
                "limits": _LIMITS,
                "representation": {
                    "enum": ["review", "compact", "audit"],
                    "description": "compact (default): tuples a legend names; review: records.",
                },
                "cursor": {"type": "string", "maxLength": 2000},
                "file": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 4096,
                    "description": "Repository-relative path.",
                },
                "lines": {
                    "type": "string",
                    "pattern": "^[0-9]+(-[0-9]+)?$",
                    "description": "A line or range 'A-B' of file.",
                },
                "ranges": {
                    "type": "array",
                    "maxItems": 10,
                    "items": {"type": "string", "pattern": "^[0-9]+(-[0-9]+)?$"},
                    "description": "source: up to 10 line ranges 'A-B'.",
                },
                "filter": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "snapshots: those matching all given.",
                    "properties": {
                        "snapshot_id": SNAPSHOT_ID,
                        "suite": {"type": "string", "minLength": 1, "maxLength": 200},
                        "branch": {"type": "string", "minLength": 1, "maxLength": 500},
                        "commit": {"type": "string", "pattern": "^[0-9a-f]{4,64}$"},  # or a prefix
                        "chosen": {"type": "boolean", "description": "Only those a default side may be."},
                    },
                },
                "page_size": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": listing.MAX_PAGE_SIZE,
                    "default": listing.DEFAULT_PAGE_SIZE,
                    "description": "snapshots, files: records per page.",
                },
                "order": {
                    "enum": list(FILE_ORDERS),
                    "description": "files (default path).",
                },
            },
        },
        handler=review_tasks.coverage_review,
        output_schema=review_task_table.COVERAGE_REVIEW,
        principals=AGENT_ROW,
        surfaces=AGENT_SURFACES,
    ),
    Operation(
        name="coverage_import",
        title="Import a coverage report",
        description=(
            "Store a coverage report inside the checkout as an immutable snapshot (commit and branch from "
            "git); the same report again is a success marked duplicate. With inventory_path and reports: "
            "a composite snapshot."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "report_path": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 4096,
                    "description": "Inside the checkout.",
                },
                "format": {"enum": list(FORMATS)},
                "suite": {"type": "string", "minLength": 1, "maxLength": 200},
                "branch": {"type": "string", "minLength": 1, "maxLength": 500},
                "commit": {"type": "string", "minLength": 4, "maxLength": 200},
                "base_ref": {"type": "string", "minLength": 1, "maxLength": 500},
                "scope": {"enum": list(SCOPES)},
                "inventory_path": {"type": "string", "minLength": 1, "maxLength": 4096},
                "reports": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 64,
                    # A registered composite artifact's reports take the same two spellings.
                    "items": {"type": ["object", "string"], "minLength": 1, "maxLength": 4200},
                    "description": "{component, variant?, path} or 'COMPONENT[:VARIANT]=PATH' each.",
                },
            },
        },
        handler=imports.coverage_import,
        output_schema=output_schemas.COVERAGE_IMPORT,
        principals=AGENT_ROW,
        surfaces=AGENT_SURFACES,
        read_only=False,
        idempotent=True,
        stores_new=True,
    ),
    Operation(
        name="register_test_command",
        title="Register a test command",
        description=(
            "Propose an exact test command (argv, no shell) writing coverage reports in the checkout "
            "(artifacts: {path, suite} or {composite: {inventory, reports: [{component, variant?, path}]}}). "
            "It runs once a person approves it (status pending, with the CLI line that approves)."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "argv", "artifacts"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 200},
                "argv": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 256,
                    "items": {"type": "string", "maxLength": 4096},
                },
                "cwd": {"type": "string", "minLength": 1, "maxLength": 4096},
                "timeout_s": {"type": "integer", "minimum": 1, "maximum": 86400},
                "env": {
                    "type": "object",
                    "maxProperties": 64,
                    "additionalProperties": {"type": "string"},
                },
                "runners": {"type": "array", "items": {"type": "string"}},
                "inherit": {"type": "array", "items": {"type": "string"}},
                "artifacts": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 16,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "composite": {"type": "object"},
                            "path": {"type": "string", "minLength": 1, "maxLength": 4096},
                            "format": {"enum": list(FORMATS)},
                            "suite": {"type": "string", "minLength": 1, "maxLength": 200},
                            "scope": {"enum": list(SCOPES)},
                        },
                    },
                },
                "args_policy": {
                    "enum": ["none", "selectors"],
                    "description": "selectors: run_test may append test paths/ids (never options).",
                },
                # with args_policy selectors: the folders selectors must lie in, e.g. ["tests"] (README)
                "selector_roots": {"type": "array", "maxItems": 16, "items": {"type": "string"}},
                "human_approved": {
                    "type": "boolean",
                    "description": "Only under approval_mode attested.",
                },
                "approved_by": {"type": "string", "minLength": 1, "maxLength": 200},
                "approval_note": {"type": "string", "minLength": 1, "maxLength": 2000},
            },
        },
        handler=execution.register_test_command,
        output_schema=output_schemas.REGISTER_TEST_COMMAND,
        principals=AGENT_ROW,
        surfaces=AGENT_SURFACES,
        read_only=False,
        idempotent=True,
        own_writes=True,
        stores_new=True,
    ),
    Operation(
        name="run_test",
        title="Run an approved test command",
        description=(
            "Run an approved command; its reports are ingested when it ends (data.run.artifacts). wait: "
            "answer at its end or at the request deadline (state running). reuse_if_unchanged (default "
            "true): an unchanged fingerprint's last success answers (reused)."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["command_id"],
            "properties": {
                "command_id": {"type": "string", "pattern": COMMAND_ID_PATTERN},
                "args": {"type": "array", "maxItems": 64, "items": {"type": "string", "maxLength": 4096}},
                "wait": {"type": "boolean"},
                "idempotency_key": {"type": "string", "minLength": 1, "maxLength": 200},
                "reuse_if_unchanged": {"type": "boolean"},
                "baseline": {
                    "type": "object",
                    "additionalProperties": False,
                    "maxProperties": 1,
                    "minProperties": 1,
                    "description": "Attach an incremental review against it.",
                    "properties": {
                        "snapshot_id": SNAPSHOT_ID,
                        "snapshot_ids": {
                            "type": "array",
                            "items": SNAPSHOT_ID,
                            "minItems": 1,
                            "maxItems": 32,
                        },
                    },
                },
            },
        },
        handler=execution.run_test,
        output_schema=output_schemas.RUN_TEST,
        principals=AGENT_ROW,
        surfaces=AGENT_SURFACES,
        read_only=False,
        idempotent=False,
        open_world=True,
        own_writes=True,
        stores_new=True,
    ),
    Operation(
        name="run_review",
        title="Review a run",
        description=(
            "A run's status (state, exit code, durations, artifacts, snapshots, review, transitions) or its "
            "logs (bounded pages; search: a literal substring)."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["run_id"],
            "properties": {
                "run_id": {"type": "string", "minLength": 1, "maxLength": 64},
                "view": {"enum": ["status", "logs"]},
                "stream": {"enum": ["stdout", "stderr"]},
                "search": {"type": "string", "minLength": 1, "maxLength": 200},
                "cursor": {"type": "string", "maxLength": 2000},
            },
        },
        handler=execution.run_review,
        output_schema=output_schemas.RUN_REVIEW,
        principals=AGENT_ROW,
        surfaces=AGENT_SURFACES,
        own_writes=True,
    ),
    Operation(
        name="cancel_run",
        title="Cancel a run",
        description=(
            "Cancel a queued or running run: every process it started is stopped (TERM, then KILL)."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["run_id"],
            "properties": {"run_id": {"type": "string", "minLength": 1, "maxLength": 64}},
        },
        handler=execution.cancel_run,
        output_schema=output_schemas.CANCEL_RUN,
        principals=AGENT_ROW,
        surfaces=AGENT_SURFACES,
        read_only=False,
        destructive=True,
        idempotent=True,
        own_writes=True,
        stores_new=True,
    ),
)

_IMPORT_INPUT = next(op.input_schema for op in _AGENT_ROWS if op.name == "coverage_import")

# The store owner's own import (the CLI, in process or through the daemon with its capability): what
# coverage_core.Project.ingest accepts, any readable report path and path maps included, so an ingest
# gives the same result with and without a daemon.
OWNER_IMPORT_SCHEMA: dict[str, Any] = {
    **_IMPORT_INPUT,
    "properties": {
        **_IMPORT_INPUT["properties"],
        "path_map": {
            "type": "array",
            "maxItems": 100,
            "items": {
                "type": "array",
                "minItems": 2,
                "maxItems": 2,
                "items": {"type": "string", "maxLength": 4096},
            },
        },
    },
}

_COMMAND_ID = {"type": "string", "minLength": 1, "maxLength": 200, "description": "cmd-... as listed."}
_DECISION = {
    "type": "object",
    "additionalProperties": False,
    "required": ["command_id"],
    "properties": {
        "command_id": _COMMAND_ID,
        "by": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "Who decides (default: the user running the call; a dashboard session: the "
            "daemon's user, and by is refused).",
        },
        "note": {"type": "string", "maxLength": 2000, "description": "What was checked, recorded."},
    },
}
_NO_ARGUMENTS: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": {}}

_OWNER_ROWS = (
    Operation(
        name="command_list",
        title="List registered commands",
        description="The registered test commands: approved, pending, then rejected, newest first in each.",
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {"status": {"enum": list(COMMAND_STATUSES)}},
        },
        handler=admin_ops.command_list,
        output_schema=output_schemas.COMMAND_LIST,
        principals=READER,
        surfaces=OWNER_SURFACES,
        own_writes=True,
    ),
    Operation(
        name="command_show",
        title="Show a registered command",
        description="One command: its exact argv, cwd, environment, artifacts, executable and decisions.",
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["command_id"],
            "properties": {"command_id": _COMMAND_ID},
        },
        handler=admin_ops.command_show,
        output_schema=output_schemas.COMMAND_ANSWER,
        principals=READER,
        surfaces=OWNER_SURFACES,
        own_writes=True,
    ),
    Operation(
        name="command_approve",
        title="Approve a registered command",
        description=(
            "A person approves a command so run_test may run it, binding the executable argv[0] resolves to "
            "now; recorded with who and via (cli, or dashboard for a session)."
        ),
        input_schema=_DECISION,
        handler=admin_ops.command_approve,
        output_schema=output_schemas.COMMAND_ANSWER,
        principals=PERSON,
        surfaces=frozenset({Surface.REST, Surface.CLI, Surface.DASHBOARD}),
        read_only=False,
        own_writes=True,
    ),
    Operation(
        name="command_reject",
        title="Reject a registered command",
        description="A person rejects a command (or withdraws its approval); its queued runs cannot start.",
        input_schema=_DECISION,
        handler=admin_ops.command_reject,
        output_schema=output_schemas.COMMAND_ANSWER,
        principals=OWNER,
        surfaces=OWNER_SURFACES,
        read_only=False,
        own_writes=True,
    ),
    Operation(
        name="run_list",
        title="List runs",
        description="Managed runs, newest first, each a brief record.",
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "status": {"enum": list(RUN_STATES)},
                "command_id": {"type": "string", "pattern": COMMAND_ID_PATTERN},
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50},
            },
        },
        handler=admin_ops.run_list,
        output_schema=output_schemas.RUN_LIST,
        principals=READER,
        surfaces=OWNER_SURFACES,
        own_writes=True,
    ),
    Operation(
        name="snapshot_delete",
        title="Delete snapshots",
        description=(
            "Delete snapshots (snapshot_ids: ids or unique prefixes) or prune a suite to its keep newest, "
            "with every detail row, in one transaction; the newest of a suite only with force."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "snapshot_ids": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 10000,
                    "items": {"type": "string", "minLength": 1, "maxLength": 200},
                },
                "suite": {"type": "string", "minLength": 1, "maxLength": 200},
                "keep": {"type": "integer", "minimum": 0},
                "force": {"type": "boolean"},
                "dry_run": {"type": "boolean"},
            },
        },
        handler=admin_ops.snapshot_delete,
        output_schema=output_schemas.SNAPSHOT_DELETE,
        principals=OWNER,
        surfaces=OWNER_SURFACES,
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Operation(
        name="compact",
        title="Compact old snapshots",
        description=(
            "One compaction pass: old snapshots' detail becomes zstd payloads (answers stay the same); "
            "older_than an age such as 30d (default: the policy's after_days)."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "older_than": {"type": "string", "minLength": 1, "maxLength": 50},
                "dry_run": {"type": "boolean"},
                "limit": {"type": "integer", "minimum": 1},
            },
        },
        handler=admin_ops.compact,
        output_schema=output_schemas.COMPACT,
        principals=OWNER,
        surfaces=OWNER_SURFACES,
        read_only=False,
        idempotent=True,
    ),
    Operation(
        name="compaction_inventory",
        title="Compaction inventory",
        description="Relational vs compacted snapshots, bytes before and after, the policy and the last pass.",
        input_schema=_NO_ARGUMENTS,
        handler=admin_ops.compaction_inventory,
        output_schema=output_schemas.COMPACTION_INVENTORY,
        principals=READER,
        surfaces=OWNER_SURFACES,
    ),
    Operation(
        name="owner_import",
        title="Import as the store's owner",
        description=(
            "coverage_import for the store's owner: any readable report path (a final link is not followed) "
            "and path maps."
        ),
        input_schema=OWNER_IMPORT_SCHEMA,
        handler=imports.owner_import,
        output_schema=output_schemas.COVERAGE_IMPORT,
        principals=OWNER,
        surfaces=OWNER_SURFACES,
        read_only=False,
        idempotent=True,
        stores_new=True,
    ),
    Operation(
        name="project_settings",
        title="Per-repository settings",
        description="Each per-repository setting's value (approval mode, compaction policy, run bounds).",
        input_schema=_NO_ARGUMENTS,
        handler=admin_ops.settings_read,
        output_schema=output_schemas.PROJECT_SETTINGS,
        principals=READER,
        surfaces=OWNER_SURFACES,
    ),
    Operation(
        name="project_settings_update",
        title="Change per-repository settings",
        description="Change some per-repository settings; every setting's value after the change.",
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["settings"],
            "properties": {"settings": {"type": "object", "description": "Setting key -> value."}},
        },
        handler=admin_ops.settings_update,
        output_schema=output_schemas.PROJECT_SETTINGS,
        principals=OWNER,
        surfaces=OWNER_SURFACES,
        read_only=False,
        idempotent=True,
    ),
    Operation(
        name="analysis",
        title="Run an analysis",
        description=(
            "One coverage_core.analysis helper (the notebooks') run where the store is: its relation's columns."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "properties": {
                "name": {"enum": list(admin_ops.ANALYSIS_ARGUMENTS)},
                "arguments": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "The helper's keyword arguments (each takes some of these).",
                    "properties": {
                        "suite": {"type": ["string", "null"], "maxLength": 200},
                        "counter": {"type": "string", "maxLength": 50},
                        "ref": {"type": "string", "minLength": 1, "maxLength": 500},
                        "last_commits": {"type": "integer", "minimum": 1, "maximum": 10000},
                        "last": {"type": "integer", "minimum": 1, "maximum": 10000},
                    },
                },
            },
        },
        handler=admin_ops.analysis,
        output_schema=output_schemas.ANALYSIS,
        principals=READER,
        surfaces=frozenset({Surface.REST}),
    ),
)

# A selection's value as the page's address carries it: at most 200 characters, no NUL; empty is no choice.
_CHOICE = {"type": "string", "maxLength": 200, "pattern": "^[^\\u0000]*$"}

_DASHBOARD_ROWS = (
    Operation(
        name="dashboard",
        title="The dashboard's projection",
        description=(
            "Everything the dashboard shows of one project, bounded, in one answer: the selected current "
            "and baseline snapshots, their metrics and change, the timeline, files, tests, composite, runs, "
            "approvals and compaction."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "suite": {**_CHOICE, "description": "Whose snapshots (default: the current's)."},
                "current": {
                    **_CHOICE,
                    "description": "A snapshot id or unique prefix (default: the newest).",
                },
                "baseline": {
                    **_CHOICE,
                    "description": "A snapshot id or unique prefix, or none (default: the one before).",
                },
                "composite": {**_CHOICE, "description": "A composite snapshot id (default: the newest)."},
                "composite_baseline": {**_CHOICE, "description": "A composite snapshot id, or none."},
                "order": {
                    "enum": ["", *FILE_ORDERS],
                    "description": "The file table's order before its cut (default path).",
                },
            },
        },
        handler=dashboard_view.dashboard,
        output_schema=output_schemas.DASHBOARD,
        principals=VIEWER,
        surfaces=VIEWER_SURFACES,
    ),
    Operation(
        name="dashboard_file",
        title="A file's annotated source, for the dashboard",
        description="One file's annotated lines as a snapshot measured them (the dashboard's drill-down).",
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["snapshot", "file"],
            "properties": {
                "snapshot": {**_CHOICE, "minLength": 1, "description": "A snapshot id or unique prefix."},
                "file": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 4096,
                    "pattern": "^[^\\u0000]*$",
                    "description": "Repository-relative path.",
                },
            },
        },
        handler=dashboard_view.file_source,
        output_schema=output_schemas.DASHBOARD_FILE,
        principals=VIEWER,
        surfaces=VIEWER_SURFACES,
    ),
    Operation(
        name="dashboard_run",
        title="A run's logs, for the dashboard",
        description="One run's status and the first page of its logs (the dashboard's runs view).",
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["run"],
            "properties": {
                "run": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[^\\u0000]*$"}
            },
        },
        handler=dashboard_view.run_logs,
        output_schema=output_schemas.DASHBOARD_RUN,
        principals=VIEWER,
        surfaces=VIEWER_SURFACES,
    ),
    Operation(
        name="dashboard_revision",
        title="The dashboard's revision",
        description="A short fingerprint of what is stored: it changes whenever anything the dashboard shows does.",
        input_schema=_NO_ARGUMENTS,
        handler=dashboard_view.revision_of,
        output_schema=output_schemas.DASHBOARD_REVISION,
        principals=VIEWER,
        surfaces=STREAM_SURFACES,
    ),
)

OPERATIONS: dict[str, Operation] = {op.name: op for op in (*_AGENT_ROWS, *_OWNER_ROWS, *_DASHBOARD_ROWS)}
# The agent's tools: the rows MCP lists and dispatches (tools/list, in declaration order).
TOOLS: dict[str, Operation] = {name: op for name, op in OPERATIONS.items() if Surface.MCP in op.surfaces}

# Bounds that protect the service (string lengths, list sizes) are checked on every call, with a message
# naming the argument, and documented in docs/operations.md; tools/list, read by a model on every
# connection, leaves them out. Whatever changes what a call means (enums, patterns, ranges, "one of") stays.
_UNLISTED_BOUNDS = frozenset({"minLength", "maxLength", "minItems", "maxItems"})


def listed_input(schema: Any) -> Any:
    """An input schema as tools/list lists it: ``schema`` without the service's length bounds."""
    if isinstance(schema, dict):
        return {k: listed_input(v) for k, v in schema.items() if k not in _UNLISTED_BOUNDS}
    if isinstance(schema, list):
        return [listed_input(v) for v in schema]
    return schema


_VALIDATORS = {name: Validator(op.input_schema) for name, op in OPERATIONS.items()}


class Service:
    """The operations of one open project."""

    def __init__(self, project: Project) -> None:
        self.project = project

    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        con: Any = None,
        deadline: float | None = None,
        principal: Principal = Principal.ADMIN,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Validate, dispatch and wrap one operation. ``con`` is an optional
        pooled read connection of this project's store (one is made otherwise); ``deadline``
        (``time.monotonic()``) is when the caller needs the answer by, if it must have it by then;
        ``principal`` who calls (in process: the store's owner), refused where the row does not admit it;
        ``progress`` hears the stages of an import."""
        op = OPERATIONS.get(name)
        if op is None:
            raise CoverageError(
                ErrorCode.NOT_FOUND,
                f"unknown operation {name!r}",
                f"Use one of: {', '.join(OPERATIONS)}.",
            )
        admitting(op, frozenset({principal}))
        args = {} if arguments is None else arguments
        try:
            _VALIDATORS[name].check(args, what=name)
        except CoverageError as error:
            raised = budget_below_minimum(op, args, error)
            if raised is not None:  # the remedy: the same call with the budget it needs, measured
                error.remedy = self._budget_remedy(op, raised)
            raise
        started = time.perf_counter()
        own = con is None
        con = self.project.store.cursor() if own else con
        # A read holds the store's read gate: a compaction cannot take the detail rows it is reading.
        gate = self.project.store.gate.reading() if op.read_only else contextlib.nullcontext()
        try:
            with gate:
                call = Call(
                    self.project,
                    con,
                    args,
                    review=answer_review,
                    ask=lambda name, arguments: self._ask(name, arguments, con, deadline),
                    deadline=deadline,
                    principal=principal,
                    progress=progress,
                )
                try:
                    result = op.handler(call)
                except CoverageError as error:
                    if error.remedy is None:
                        error.remedy = remedy_for(op, args, error, self._rebind)
                    raise
                except (OSError, duckdb.Error) as exc:
                    _raise_fault(exc, self.project)
        finally:
            if own:
                con.close()
        return envelope(call, result, started)

    def _ask(self, name: str, arguments: dict[str, Any], con: Any, deadline: float | None) -> dict[str, Any]:
        """A read-only row asked by a row made of others (the dashboard's), on the asking call's connection.
        It runs as the store's owner: the asking row was admitted, and what it reads is part of its own
        answer; a write is never asked."""
        assert OPERATIONS[name].read_only, f"{name} writes: a row asks only reads"
        return self.call(name, arguments, con=con, deadline=deadline)

    def _rebind(self, cursor: str, old: dict[str, Any], new: dict[str, Any]) -> str | None:
        return cursors.rebind(self.project.store.cursor_secret, cursor, old, new)

    def _budget_remedy(self, op: Operation, raised: dict[str, Any]) -> Remedy | None:
        """The remedy of a budget below its minimum: the call at the minimum when that answers, else
        with what that call measured it needs. The validator refused before any handler ran, so
        nothing was measured yet: this one call at the minimum is the measurement."""
        con = self.project.store.cursor()
        try:
            with self.project.store.gate.reading():
                try:
                    op.handler(Call(self.project, con, raised, review=answer_review))
                except CoverageError as error:
                    # Another mistake in the call as well: no remedy, rather than one that fails.
                    return remedy_for(op, raised, error, self._rebind)
        except (OSError, duckdb.Error):
            pass  # the store cannot answer now: the call at the minimum is the remedy, as the schema says
        finally:
            con.close()
        return Remedy(operation=op.name, arguments=raised)


def admitting(op: Operation, principals: frozenset[Principal]) -> Principal:
    """The principal ``op`` runs as among those a caller proved (``PREFERENCE``); ``forbidden`` when it
    admits none of them, saying how to become one it admits. A refusal changes nothing: nothing ran."""
    for principal in PREFERENCE:
        if principal in principals and principal in op.principals:
            return principal
    ways = [HOW_TO_BE[p] for p in PREFERENCE if p in op.principals]
    raise CoverageError(
        ErrorCode.FORBIDDEN,
        f"{op.name} admits {', '.join(sorted(p.value for p in op.principals))}; this caller is "
        f"{', '.join(sorted(p.value for p in principals)) or 'none of them'}",
        " Or: ".join(ways),
        {"operation": op.name, "admits": sorted(p.value for p in op.principals)},
    )


def remedy_for(
    op: Operation,
    args: dict[str, Any],
    error: CoverageError,
    rebind: Callable[[str, dict[str, Any], dict[str, Any]], str | None] | None = None,
) -> Remedy | None:
    """The call that fixes a failed one, from what the failure measured; the handler is not run again.

    A budget too small gets the same call with the words and bytes the failure
    measured (``details.needed_words``/``needed_bytes``: the size of the page it
    would have answered, so that budget holds it; read-only operations only). A
    cursor that does not continue this query gets the same call without it. A
    cursor is bound to its call's budget: the remedy of a page carries the same
    position re-bound to the new budget (``rebind``).
    """
    if error.code is ErrorCode.BUDGET_TOO_SMALL and op.read_only and "needed_words" in error.details:
        nested = "limits" in op.input_schema["properties"]
        given = (args.get("limits") or {}) if nested else args
        words = max(error.details["needed_words"], given.get("max_words", budget.DEFAULT_MAX_WORDS))
        size = max(error.details["needed_bytes"], given.get("max_bytes", budget.DEFAULT_MAX_BYTES))
        # A need past what a call may ask for (or, without limits, past the fixed byte budget) has no
        # remedy in the budget: none, rather than one that fails.
        if words > budget.MAX_WORDS or size > (budget.MAX_BYTES if nested else budget.DEFAULT_MAX_BYTES):
            return None
        need: dict[str, Any] = {"max_words": words}
        if nested:
            need["max_bytes"] = size
            fixed = {**args, "limits": {**given, **need}}
        else:
            fixed = {**args, **need}
        if "cursor" in args and rebind is not None:
            moved = rebind(args["cursor"], args, fixed)
            if moved is None:
                return None
            fixed["cursor"] = moved
        return Remedy(operation=op.name, arguments=fixed)
    if error.code is ErrorCode.INVALID_CURSOR and "cursor" in args:
        return Remedy(operation=op.name, arguments={k: v for k, v in args.items() if k != "cursor"})
    return None


# Budget arguments whose minimum a call may be below: the remedy is the same call with what it needs.
BUDGET_PATHS = {
    "$.limits.max_words": ("limits", "max_words", budget.MIN_WORDS),
    "$.limits.max_bytes": ("limits", "max_bytes", budget.MIN_BYTES),
    "$.max_words": (None, "max_words", budget.MIN_WORDS),
}


def budget_below_minimum(op: Operation, args: dict[str, Any], error: CoverageError) -> dict[str, Any] | None:
    """The arguments with a budget below its minimum raised to it, when that is the only thing wrong."""
    where = BUDGET_PATHS.get(error.details.get("path", ""))
    if where is None or error.details.get("errors") != 1 or not op.read_only:
        return None
    parent, key, least = where
    holder = args.get(parent) if parent else args
    if not isinstance(holder, dict) or not isinstance(holder.get(key), int) or holder[key] >= least:
        return None
    fixed = {**holder, key: least}
    return {**args, parent: fixed} if parent else fixed


def answer_review(
    project: Project, arguments: dict[str, Any], con: duckdb.DuckDBPyConnection
) -> dict[str, Any]:
    """coverage_review's envelope for ``project``: how the execution runtime answers a run's attached review."""
    return Service(project).call("coverage_review", arguments, con=con)


def owner_import(
    project: Project, arguments: dict[str, Any], *, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The owner_import row on a project this process holds (``progress`` hears each stage)."""
    return Service(project).call("owner_import", arguments, progress=progress)


def _raise_fault(exc: OSError | duckdb.Error, project: Project) -> NoReturn:
    """A full disk, a damaged store or a refused read is coded (``faults``), never ``internal``."""
    coded = faults.classify(exc, project.store.path)
    if coded is None:
        raise exc
    raise coded from exc


def envelope(call: Call, result: dict[str, Any], started: float) -> dict[str, Any]:
    """Wrap a handler's result (also one computed outside ``Service.call``, e.g. of an unstored report)."""
    return envelope_for(
        call.project,
        result["data"],
        result.get("page"),
        suite=call.suite,
        started=started,
        rows=call.rows_scanned,
    )


def envelope_for(
    project: Project,
    data: dict[str, Any],
    page: dict[str, Any] | None,
    *,
    suite: str | None,
    started: float,
    rows: int,
) -> dict[str, Any]:
    """The one ``{context, data, page}`` shape every answer has (operations and plain store reads)."""
    checkout = project.checkout
    return {
        "context": {
            "repo_key": checkout.repo_key,
            "project_id": checkout.project_id,
            "checkout_path": str(checkout.worktree_path),
            "suite": suite,
            "schema_revision": SCHEMA_REVISION,
            "stats": {"elapsed_ms": round((time.perf_counter() - started) * 1000, 3), "rows_scanned": rows},
        },
        "data": data,
        "page": page,
    }
