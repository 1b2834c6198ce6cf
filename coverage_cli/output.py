"""The one error handler of every command, its tables (code to exit code, operation to command line), JSON output.

An error prints the canonical body ``coverage_core.errors.error_body`` (with
``--json``, as JSON on standard error; otherwise ``error [code]: message``
and the suggestion), where a remedy reads as a command line for people:
``OPERATION_COMMANDS`` maps each operation to the command that runs it.
"""

from __future__ import annotations

import functools
import json
import shlex
import sys
from collections.abc import Callable
from typing import Any

import click

from coverage_core import faults
from coverage_core.display import percent  # noqa: F401  (the one formatter, re-exported for the commands)
from coverage_core.errors import (
    CoverageError,
    ErrorCode,
    Remedy,
    error_body,
    render_setting,
)

from .options import json_option, review_argv  # noqa: F401  (json_option: shared by every command)

OK, FAILED, BAD_INPUT, THRESHOLD = 0, 1, 2, 3

EXIT_CODES: dict[ErrorCode, int] = {
    ErrorCode.INVALID_ARGUMENT: BAD_INPUT,
    ErrorCode.UNKNOWN_FORMAT: BAD_INPUT,
    ErrorCode.MALFORMED_REPORT: BAD_INPUT,
    ErrorCode.REPORT_TOO_LARGE: BAD_INPUT,
    ErrorCode.INVALID_CURSOR: BAD_INPUT,
    ErrorCode.BUDGET_TOO_SMALL: BAD_INPUT,
    ErrorCode.RECORD_CAP_EXCEEDED: BAD_INPUT,
    ErrorCode.NOT_FOUND: BAD_INPUT,
    ErrorCode.PATH_OUTSIDE_CHECKOUT: BAD_INPUT,
    ErrorCode.NOT_SUPPORTED: BAD_INPUT,
    ErrorCode.NOT_A_REPOSITORY: FAILED,
    ErrorCode.GIT_ERROR: FAILED,
    ErrorCode.STORE_LOCKED: FAILED,
    ErrorCode.STORE_UNAVAILABLE: FAILED,
    ErrorCode.STORE_DAMAGED: FAILED,
    ErrorCode.DISK_FULL: FAILED,
    ErrorCode.IO_ERROR: FAILED,
    ErrorCode.REPORT_CHANGED: FAILED,
    ErrorCode.SCHEMA_TOO_NEW: FAILED,
    ErrorCode.BASELINE_UNAVAILABLE: FAILED,
    ErrorCode.INCOMPATIBLE_SNAPSHOTS: FAILED,
    ErrorCode.DAEMON_UNREACHABLE: FAILED,
    ErrorCode.DAEMON_CONFLICT: FAILED,
    ErrorCode.FORBIDDEN: FAILED,
    ErrorCode.DEADLINE_EXCEEDED: FAILED,
    ErrorCode.INTERNAL: FAILED,
    ErrorCode.THRESHOLD_NOT_MET: THRESHOLD,
    ErrorCode.NOT_APPROVED: FAILED,
    ErrorCode.TOO_MANY_REQUESTS: FAILED,
}


def exit_code(error: CoverageError) -> int:
    return EXIT_CODES[error.code]


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, sort_keys=False, default=str))


Argv = tuple[list[str], dict[str, Any]]  # a command's words, and the arguments no option carries


def _options(args: dict[str, Any], flags: dict[str, str]) -> Argv:
    rest = dict(args)
    argv: list[str] = []
    for key, flag in flags.items():
        if rest.get(key) is not None:
            argv += [flag, str(rest.pop(key))]
    return argv, rest


def _context_argv(args: dict[str, Any]) -> Argv:
    argv, rest = _options(args, {"max_words": "--max-words"})
    return ["context", *argv], rest


def _ingest_argv(args: dict[str, Any]) -> Argv:
    rest = dict(args)
    report = str(rest.pop("report_path", "REPORT"))
    argv, rest = _options(
        rest,
        {
            "suite": "--suite",
            "format": "--format",
            "scope": "--scope",
            "commit": "--commit",
            "branch": "--branch",
        },
    )
    return ["ingest", report, *argv], rest


def _register_argv(args: dict[str, Any]) -> Argv:
    rest = dict(args)
    argv, rest = _options(
        rest, {"name": "--name", "cwd": "--cwd", "timeout_s": "--timeout", "args_policy": "--args-policy"}
    )
    artifacts = rest.pop("artifacts", [])
    plain = all(set(a) <= {"path", "suite"} for a in artifacts)
    if plain:
        for a in artifacts:
            argv += ["--artifact", f"{a['path']}:{a['suite']}"]
    else:
        rest["artifacts"] = artifacts
    words = [str(w) for w in rest.pop("argv", ["ARGV..."])]
    return ["command", "register", *argv, "--", *words], rest


def _run_argv(args: dict[str, Any]) -> Argv:
    rest = dict(args)
    argv = ["run", str(rest.pop("command_id", "COMMAND_ID"))]
    if rest.pop("wait", True) is False:
        argv.append("--no-wait")
    if rest.get("reuse_if_unchanged") is False:
        rest.pop("reuse_if_unchanged")
        argv.append("--no-reuse")
    more, rest = _options(rest, {"idempotency_key": "--idempotency-key"})
    argv += more
    if set(rest.get("baseline") or {}) == {"snapshot_id"}:
        argv += ["--baseline", rest.pop("baseline")["snapshot_id"]]
    words = [str(w) for w in rest.pop("args", [])]
    return argv + (["--", *words] if words else []), rest


def _run_review_argv(args: dict[str, Any]) -> Argv:
    rest = dict(args)
    argv = ["runs", "show", str(rest.pop("run_id", "RUN_ID"))]
    if rest.pop("view", "status") == "logs":
        argv.append("--logs")
    more, rest = _options(rest, {"stream": "--stream", "search": "--search", "cursor": "--cursor"})
    return argv + more, rest


def _cancel_argv(args: dict[str, Any]) -> Argv:
    rest = dict(args)
    return ["runs", "cancel", str(rest.pop("run_id", "RUN_ID"))], rest


# The command line that runs each operation (a remedy names an operation and its arguments).
OPERATION_COMMANDS: dict[str, Callable[[dict[str, Any]], Argv]] = {
    "project_context": _context_argv,
    "coverage_review": review_argv,
    "coverage_import": _ingest_argv,
    "register_test_command": _register_argv,
    "run_test": _run_argv,
    "run_review": _run_review_argv,
    "cancel_run": _cancel_argv,
}


def render_remedy(remedy: Remedy) -> str:
    """A remedy for people: the setting to change, or the coverage-mcp command to run."""
    setting = render_setting(remedy)
    if setting is not None:
        return setting
    command = OPERATION_COMMANDS.get(remedy.operation or "")
    if command is None:
        return f"Call {remedy.operation} with {json.dumps(remedy.arguments)}."
    argv, rest = command(remedy.arguments)
    extra = f" (with {json.dumps(rest, sort_keys=True)}, which no option carries)" if rest else ""
    return f"Run: {shlex.join(['coverage-mcp', *argv])}{extra}"


def report_error(error: CoverageError, as_json: bool) -> None:
    body = error_body(error, render=render_remedy)
    if as_json:
        click.echo(json.dumps(body), err=True)
        return
    shown = body["error"]
    click.echo(f"error [{shown['code']}]: {shown['message']}", err=True)
    if shown["suggestion"]:
        # The remedy's command line first, alone on its line (to copy), then the rest of the advice.
        first, *rest = shown["suggestion"].splitlines()
        click.echo(f"  suggestion: {first}", err=True)
        for line in rest:
            click.echo(f"              {line}", err=True)


def handles_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a ``CoverageError`` into its body and exit code, never a traceback (the one handler); a full
    disk, a damaged store or a refused read (``coverage_core.faults``) is one too."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            return func(*args, **kwargs)
        except CoverageError as error:
            report_error(error, as_json)
            sys.exit(exit_code(error))
        except Exception as exc:
            coded = faults.classify(exc)
            if coded is None:
                raise  # a bug: its traceback is the report
            report_error(coded, as_json)
            sys.exit(exit_code(coded))

    # A marker on the function (mypy knows no function attributes); a test checks every command has it.
    wrapper.handles_coverage_errors = True  # type: ignore[attr-defined]
    return wrapper
