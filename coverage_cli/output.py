"""Rendering and the one table from error codes to exit codes."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

import click

from coverage_core.display import percent  # noqa: F401  (the one formatter, re-exported for the commands)
from coverage_core.errors import CoverageError, ErrorCode

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
    ErrorCode.SCHEMA_TOO_NEW: FAILED,
    ErrorCode.BASELINE_UNAVAILABLE: FAILED,
    ErrorCode.INCOMPATIBLE_SNAPSHOTS: FAILED,
    ErrorCode.DAEMON_UNREACHABLE: FAILED,
    ErrorCode.DAEMON_CONFLICT: FAILED,
    ErrorCode.FORBIDDEN: FAILED,
    ErrorCode.DEADLINE_EXCEEDED: FAILED,
    ErrorCode.INTERNAL: FAILED,
    ErrorCode.THRESHOLD_NOT_MET: THRESHOLD,
}


def exit_code(error: CoverageError) -> int:
    return EXIT_CODES[error.code]


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, sort_keys=False, default=str))


def report_error(error: CoverageError, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(error.to_dict()), err=True)
    else:
        click.echo(f"error [{error.code.value}]: {error.message}", err=True)
        if error.suggestion:
            click.echo(f"  suggestion: {error.suggestion}", err=True)


def handles_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a ``CoverageError`` into its message and exit code, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            return func(*args, **kwargs)
        except CoverageError as error:
            report_error(error, as_json)
            sys.exit(exit_code(error))

    return wrapper


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for machines.")(func)


