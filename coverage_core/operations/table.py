"""The operation table: every operation's name, schemas, principals, surfaces and handler, declared once.

``OPERATIONS`` is the single declaration of the surface: listing, dispatch, validation and documentation all
derive from it (``service`` validates and dispatches; MCP, REST, the dashboard and the CLI list and route
from it; ``docs`` writes docs/operations.md from it). A row names its handler as ``"module:function"``, so
reading the table (the CLI's choices, a daemon client deciding which token a row needs) imports none of
the modules it describes: no DuckDB, NumPy or pygit2 (tests/test_cli_startup.py checks the modules).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from .. import output_schemas
from ..ids import COMMAND_ID_PATTERN, SNAPSHOT_ID_PATTERN
from ..principals import Principal, Surface
from ..review import budget, selectors
from ..vocabulary import (
    COMMAND_STATUSES,
    FILE_ORDERS,
    FILE_SORTS,
    FUNCTION_SORTS,
    REPORT_FORMATS,
    RUN_STATES,
    SCOPES,
)
from . import review_task_table

if TYPE_CHECKING:
    from ..review.call import Call


@attrs.frozen
class Operation:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    # "module:function" of the handler that answers it from a ``Call`` (imported on its first call, so
    # reading the table imports none of the modules it describes)
    handler: str
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

    def answer(self, call: Call) -> dict[str, Any]:
        """The handler's answer to ``call`` (its module is imported the first time a call needs it)."""
        return _handler(self.handler)(call)


@functools.cache
def _handler(target: str) -> Callable[[Call], dict[str, Any]]:
    module, _, name = target.partition(":")
    handler: Callable[[Call], dict[str, Any]] = getattr(importlib.import_module(module), name)
    return handler


# Each analysis helper (``coverage_core.analysis``) the ``analysis`` row runs, and the arguments it takes.
ANALYSIS_ARGUMENTS = {
    "history": frozenset({"suite", "counter"}),
    "file_history": frozenset({"last_commits", "suite", "counter", "ref"}),
    "coverage_loss": frozenset({"last", "suite", "counter", "ref"}),
}


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
        "kind": {"enum": list(selectors.KINDS)},
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
        handler="coverage_core.review.context:project_context",
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
                    "maximum": budget.MAX_PAGE_SIZE,
                    "default": budget.DEFAULT_PAGE_SIZE,
                    "description": "snapshots, files: records per page.",
                },
                "order": {
                    "enum": list(FILE_ORDERS),
                    "description": "files (default path).",
                },
            },
        },
        handler="coverage_core.operations.review_tasks:coverage_review",
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
                "format": {"enum": list(REPORT_FORMATS)},
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
        handler="coverage_core.operations.imports:coverage_import",
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
                            "format": {"enum": list(REPORT_FORMATS)},
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
        handler="coverage_core.operations.execution_ops:register_test_command",
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
        handler="coverage_core.operations.execution_ops:run_test",
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
        handler="coverage_core.operations.execution_ops:run_review",
        output_schema=output_schemas.RUN_REVIEW,
        principals=AGENT_ROW,
        surfaces=AGENT_SURFACES,
        # A read on a pooled connection (its one write, settling a dead daemon's runs, goes through managed
        # execution's own connection like every run transition).
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
        handler="coverage_core.operations.execution_ops:cancel_run",
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
        handler="coverage_core.operations.admin_ops:command_list",
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
        handler="coverage_core.operations.admin_ops:command_show",
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
        handler="coverage_core.operations.admin_ops:command_approve",
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
        handler="coverage_core.operations.admin_ops:command_reject",
        output_schema=output_schemas.COMMAND_ANSWER,
        principals=PERSON,
        surfaces=frozenset({Surface.REST, Surface.CLI, Surface.DASHBOARD}),
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
        handler="coverage_core.operations.admin_ops:run_list",
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
        handler="coverage_core.operations.admin_ops:snapshot_delete",
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
        handler="coverage_core.operations.admin_ops:compact",
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
        handler="coverage_core.operations.admin_ops:compaction_inventory",
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
        handler="coverage_core.operations.imports:owner_import",
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
        handler="coverage_core.operations.admin_ops:settings_read",
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
        handler="coverage_core.operations.admin_ops:settings_update",
        output_schema=output_schemas.PROJECT_SETTINGS,
        # the owner's CLI, or the dashboard's session with its CSRF token (the page's settings form)
        principals=PERSON,
        surfaces=frozenset({Surface.REST, Surface.CLI, Surface.DASHBOARD}),
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
                "name": {"enum": list(ANALYSIS_ARGUMENTS)},
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
        handler="coverage_core.operations.admin_ops:analysis",
        output_schema=output_schemas.ANALYSIS,
        principals=READER,
        surfaces=frozenset({Surface.REST}),
    ),
)

# A selection's value as the page's address carries it: at most 200 characters, no NUL; empty is no choice.
_CHOICE = {"type": "string", "maxLength": 200, "pattern": "^[^\\u0000]*$"}
# A repository-relative path or directory, as the page passes it.
_PATH = {"type": "string", "maxLength": 4096, "pattern": "^[^\\u0000]*$"}
_SNAPSHOT = {**_CHOICE, "minLength": 1, "description": "A snapshot id or unique prefix."}
_PAGE_CURSOR = {"type": "string", "maxLength": 4096, "description": "page.next_cursor of the last page."}


def _page_limit(maximum: int, description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": maximum, "description": description}


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
        handler="coverage_core.operations.dashboard_view:dashboard",
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
                "snapshot": _SNAPSHOT,
                "file": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 4096,
                    "pattern": "^[^\\u0000]*$",
                    "description": "Repository-relative path.",
                },
            },
        },
        handler="coverage_core.operations.dashboard_view:file_source",
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
        handler="coverage_core.operations.dashboard_view:run_logs",
        output_schema=output_schemas.DASHBOARD_RUN,
        principals=VIEWER,
        surfaces=VIEWER_SURFACES,
    ),
    Operation(
        name="dashboard_files",
        title="The dashboard's file table",
        description=(
            "A page of a snapshot's files, filtered (a part of the path, a directory, hide fully covered) and "
            "sorted by any column over all of them before the page is cut."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["snapshot"],
            "properties": {
                "snapshot": _SNAPSHOT,
                "search": {**_CHOICE, "description": "Only paths containing this (any case)."},
                "dir": {**_PATH, "description": "Only files under this directory."},
                "hide_covered": {"type": "boolean", "description": "Leave out files with nothing uncovered."},
                "with_tests": {
                    "type": "boolean",
                    "description": "Each row with how many named tests ran it.",
                },
                "sort": {"enum": ["", *FILE_SORTS], "description": "The column to sort by (default path)."},
                "descending": {"type": "boolean", "description": "Largest first (default false)."},
                "limit": _page_limit(2000, "Rows per page (500)."),
                "cursor": _PAGE_CURSOR,
            },
        },
        handler="coverage_core.operations.dashboard_nav:files",
        output_schema=output_schemas.DASHBOARD_FILES,
        principals=VIEWER,
        surfaces=VIEWER_SURFACES,
    ),
    Operation(
        name="dashboard_tree",
        title="The dashboard's directory tree",
        description="The directories directly under one, each with its whole subtree's figures summed.",
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["snapshot"],
            "properties": {
                "snapshot": _SNAPSHOT,
                "dir": {**_PATH, "description": "The directory (default: the top)."},
            },
        },
        handler="coverage_core.operations.dashboard_nav:tree",
        output_schema=output_schemas.DASHBOARD_TREE,
        principals=VIEWER,
        surfaces=VIEWER_SURFACES,
    ),
    Operation(
        name="dashboard_functions",
        title="The dashboard's function index",
        description="A page of the functions of a snapshot or of one file, filtered and sorted.",
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["snapshot"],
            "properties": {
                "snapshot": _SNAPSHOT,
                "file": {**_PATH, "description": "Only this file's functions (default: every file's)."},
                "search": {**_CHOICE, "description": "Only names containing this (any case)."},
                "uncovered": {"type": "boolean", "description": "Only functions never called."},
                "sort": {
                    "enum": ["", *FUNCTION_SORTS],
                    "description": "The order (default line: by file and line).",
                },
                "descending": {"type": "boolean", "description": "Reversed (default false)."},
                "limit": _page_limit(2000, "Rows per page (500)."),
                "cursor": _PAGE_CURSOR,
            },
        },
        handler="coverage_core.operations.dashboard_nav:functions",
        output_schema=output_schemas.DASHBOARD_FUNCTIONS,
        principals=VIEWER,
        surfaces=VIEWER_SURFACES,
    ),
    Operation(
        name="dashboard_source",
        title="A file's annotation in windows, for the dashboard",
        description=(
            "One part of one file's annotation: a window of annotated lines (with each partial line's missed "
            "branches), the whole file's missed blocks, or its lines' change categories against a baseline."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["snapshot", "file"],
            "properties": {
                "snapshot": _SNAPSHOT,
                "file": {**_PATH, "minLength": 1, "description": "Repository-relative path."},
                "part": {
                    "enum": ["lines", "outline", "categories"],
                    "description": "What to answer (lines).",
                },
                "start": {"type": "integer", "minimum": 1, "description": "The window's first line (1)."},
                "count": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Lines (500)."},
                "baseline": {**_CHOICE, "description": "For categories: the baseline snapshot."},
            },
        },
        handler="coverage_core.operations.dashboard_source:source",
        output_schema=output_schemas.DASHBOARD_SOURCE,
        principals=VIEWER,
        surfaces=VIEWER_SURFACES,
    ),
    Operation(
        name="dashboard_line_tests",
        title="The named tests that ran a line, for the dashboard",
        description="A page of the named tests that ran one line of one file of a snapshot.",
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["snapshot", "file", "line"],
            "properties": {
                "snapshot": _SNAPSHOT,
                "file": {**_PATH, "minLength": 1, "description": "Repository-relative path."},
                "line": {"type": "integer", "minimum": 1, "description": "The line."},
                "limit": _page_limit(500, "Tests per page (50)."),
                "cursor": _PAGE_CURSOR,
            },
        },
        handler="coverage_core.operations.dashboard_source:line_tests",
        output_schema=output_schemas.DASHBOARD_LINE_TESTS,
        principals=VIEWER,
        surfaces=VIEWER_SURFACES,
    ),
    Operation(
        name="dashboard_incremental",
        title="The incremental review, for the dashboard",
        description=(
            "The incremental review of a snapshot against a baseline (baseline union current): its groups "
            "kept, gained, lost and not observed, asked on demand by the change view."
        ),
        input_schema={
            "type": "object",
            "additionalProperties": False,
            "required": ["snapshot", "baseline"],
            "properties": {
                "snapshot": {**_CHOICE, "minLength": 1, "description": "The current snapshot."},
                "baseline": {**_CHOICE, "minLength": 1, "description": "The baseline snapshot."},
            },
        },
        handler="coverage_core.operations.dashboard_view:incremental",
        output_schema=output_schemas.DASHBOARD_INCREMENTAL,
        principals=VIEWER,
        surfaces=VIEWER_SURFACES,
    ),
    Operation(
        name="dashboard_revision",
        title="The dashboard's revision",
        description="A short fingerprint of what is stored: it changes whenever anything the dashboard shows does.",
        input_schema=_NO_ARGUMENTS,
        handler="coverage_core.operations.dashboard_view:revision_of",
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


def load_handlers() -> None:
    """Import every row's handler now: a daemon does it once it listens, so no call pays for the import."""
    for op in OPERATIONS.values():
        _handler(op.handler)
