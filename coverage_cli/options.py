"""Options the commands share, with choices and ranges taken from the declared schemas, never retyped.

``REVIEW_OPTIONS`` is the one table between ``review``'s options and
``coverage_review``'s arguments: ``review`` builds its arguments from it,
and the error renderer (``output``) turns a remedy's arguments back into the
same options.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import click

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.ids import is_snapshot_id
from coverage_core.operations import review_task_table
from coverage_core.operations.table import OPERATIONS
from coverage_core.review import selectors

F = Callable[..., Any]

REVIEW = OPERATIONS["coverage_review"].input_schema["properties"]
CONTEXT = OPERATIONS["project_context"].input_schema["properties"]
IMPORT = OPERATIONS["coverage_import"].input_schema["properties"]

TASKS: list[str] = list(REVIEW["task"]["enum"])
REPRESENTATIONS: list[str] = list(REVIEW["representation"]["enum"])
FILE_ORDERS: list[str] = list(REVIEW["order"]["enum"])
FORMATS: list[str] = list(IMPORT["format"]["enum"])
SCOPES: list[str] = list(IMPORT["scope"]["enum"])


def int_range(schema: dict[str, Any]) -> click.IntRange:
    return click.IntRange(schema["minimum"], schema["maximum"])


def float_range(schema: dict[str, Any]) -> click.FloatRange:
    return click.FloatRange(schema["minimum"], schema["maximum"])


def budget_range(schema: dict[str, Any]) -> click.IntRange:
    """A budget's range without its minimum: a budget below it reaches the operation, whose refusal
    carries the measured budget the call needs (a range alone would send people to a minimum that fails)."""
    return click.IntRange(1, schema["maximum"])


MAX_WORDS = budget_range(REVIEW["limits"]["properties"]["max_words"])
MAX_BYTES = budget_range(REVIEW["limits"]["properties"]["max_bytes"])
CONTEXT_MAX_WORDS = budget_range(CONTEXT["max_words"])
PAGE_SIZE = int_range(REVIEW["page_size"])

# option flag -> where its value goes in coverage_review's arguments: for a
# task that reads a measurement, and for one that does not (a listing across
# snapshots, whose measurement is its filter: ``Task.measured``). None: the
# option means nothing there.
REVIEW_OPTIONS: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...] | None]] = {
    "--snapshot": (("measurement", "snapshot_id"), ("filter", "snapshot_id")),
    "--suite": (("measurement", "suite"), ("filter", "suite")),
    "--branch": (None, ("filter", "branch")),
    "--commit": (None, ("filter", "commit")),
    "--file": (("file",), None),
    "--lines": (("lines",), None),
    "--baseline": (("baseline",), None),
    "--max-words": (("limits", "max_words"), ("limits", "max_words")),
    "--max-bytes": (("limits", "max_bytes"), ("limits", "max_bytes")),
    "--representation": (("representation",), ("representation",)),
    "--page-size": (("page_size",), ("page_size",)),
    "--order": (("order",), None),
    "--cursor": (("cursor",), ("cursor",)),
}


def snapshot_id(text: str) -> str:
    """``text`` when it is a snapshot id; else the error a person reads (not the schema's pattern)."""
    if not is_snapshot_id(text):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{text!r} is not a snapshot id",
            "Snapshot ids look like snap-0123456789abcdef: `coverage-mcp snapshots` lists them.",
            {"snapshot_id": text},
        )
    return text


def _where(flag: str, task: str) -> tuple[str, ...] | None:
    measured, listing = REVIEW_OPTIONS[flag]
    return measured if review_task_table.BY_NAME[task].measured else listing


def review_arguments(task: str, values: dict[str, Any]) -> dict[str, Any]:
    """coverage_review's arguments from option values (keyed by flag; None: not given)."""
    args: dict[str, Any] = {"task": task}
    for flag, value in values.items():
        if value is None:
            continue
        path = _where(flag, task)
        if path is None:
            raise click.UsageError(f"{flag} does not apply to task {task}")
        if flag == "--snapshot":
            value = snapshot_id(value)
        node = args
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return args


def review_argv(args: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The ``review`` options of coverage_review's arguments, and the arguments no option carries."""
    task = str(args.get("task", "all"))
    rest = {
        k: copy.deepcopy(v) for k, v in args.items() if k != "task"
    }  # popped from below, never the caller's
    argv = ["review", task]
    for flag in REVIEW_OPTIONS:
        path = _where(flag, task)
        if path is None:
            continue
        node: Any = rest
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict) or path[-1] not in node:
            continue
        value = node.pop(path[-1])
        argv += [flag, selectors.selector_text(value) if flag == "--baseline" else str(value)]
    for key in [k for k, v in rest.items() if v == {}]:
        del rest[key]  # every member went to an option
    return argv, rest


def repo_option(func: F) -> F:
    return click.option(
        "--repo",
        "repo",
        default=".",
        show_default=True,
        type=click.Path(file_okay=False),
        help="A path inside the git checkout to use.",
    )(func)


def json_option(func: F) -> F:
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print the answer's JSON envelope for machines (errors: the JSON error body).",
    )(func)


def baseline_options(*, required: bool) -> Callable[[F], F]:
    """``--baseline`` and ``--merge-base``, read by the one parser (``selectors.parse_selector``)."""

    def decorate(func: F) -> F:
        func = click.option(
            "--merge-base",
            "merge_base",
            is_flag=True,
            help="Compare with the merge-base of the --baseline ref and the current commit "
            "(what a pull request changes); the same as --baseline merge_base:REF.",
        )(func)
        return click.option(
            "--baseline",
            required=required,
            metavar="BASELINE",
            help=f"What to compare with: {selectors.SELECTOR_HELP}.",
        )(func)

    return decorate


def baseline_spec(text: str | None, merge_base: bool) -> dict[str, Any] | None:
    if text is None:
        if merge_base:
            raise click.UsageError("--merge-base needs --baseline REF")
        return None
    return selectors.parse_selector(text, merge_base=merge_base)


ENVELOPE = "envelope"  # what --json prints: the answer's whole JSON envelope


def output_format(
    as_json: bool, fmt: str | None, *, default: str, same_as_json: str | None = None, fmt_param: str = "fmt"
) -> str:
    """The one rule between ``--json`` and an output ``--format``: neither silently overrides the other.

    ``--json`` alone prints the envelope (``ENVELOPE``); ``--format F`` alone, F;
    neither, ``default``. Both given is a usage error (exit 2), unless F is
    ``same_as_json``, the format whose output is the envelope itself. Whether
    --format was given is read from click (a declared default is not "given").

    Example: ``fmt = output_format(as_json, fmt, default="table")`` in ``diff``.
    """
    ctx = click.get_current_context(silent=True)
    source = ctx.get_parameter_source(fmt_param) if ctx is not None else None
    given = fmt is not None and source not in (
        click.core.ParameterSource.DEFAULT,
        click.core.ParameterSource.DEFAULT_MAP,
    )
    if not as_json:
        return fmt if fmt is not None else default
    if not given or fmt == same_as_json:
        return ENVELOPE
    raise click.UsageError(
        f"--json prints the JSON envelope and --format {fmt} asks for {fmt}: give one of them", ctx
    )
