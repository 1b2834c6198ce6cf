"""The one error type of coverage-mcp and its machine-readable codes.

Every failure a user or an agent can see is a ``CoverageError`` with a stable
``code``, a one-line ``message``, a ``suggestion`` that says what to do next,
optional structured ``details`` and an optional structured ``remedy`` (the
operation and arguments that fix the call, or a setting). Core text speaks for
no one surface: a suggestion never spells a command line or a tool call where a
remedy can say it; the approval line addressed to a person is the exception. Adapters (CLI exit
codes, HTTP statuses, MCP ``isError`` results) map the *code*, in one table
each, never the message text; each surface renders a remedy in its own terms
(an MCP call for agents, a command line for people) through ``error_body``.

Stdlib only: the stdio connector imports this on its hot path.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any


class ErrorCode(enum.StrEnum):
    # Bad input: the caller can fix it by changing what they pass.
    INVALID_ARGUMENT = "invalid_argument"
    UNKNOWN_FORMAT = "unknown_format"
    MALFORMED_REPORT = "malformed_report"
    REPORT_TOO_LARGE = "report_too_large"
    INVALID_CURSOR = "invalid_cursor"
    BUDGET_TOO_SMALL = "budget_too_small"
    RECORD_CAP_EXCEEDED = "record_cap_exceeded"
    NOT_FOUND = "not_found"
    PATH_OUTSIDE_CHECKOUT = "path_outside_checkout"
    NOT_SUPPORTED = "not_supported"
    # The operation could not be carried out in this environment.
    NOT_A_REPOSITORY = "not_a_repository"
    GIT_ERROR = "git_error"
    STORE_LOCKED = "store_locked"
    STORE_UNAVAILABLE = "store_unavailable"
    # Bytes we wrote read back different: a store file DuckDB cannot open or whose checksums fail, a
    # compacted payload whose digest does not match. Named and left untouched; the user restores it.
    STORE_DAMAGED = "store_damaged"
    # The file system refused a write for want of space (ENOSPC, EDQUOT): nothing partial was kept.
    DISK_FULL = "disk_full"
    # Any other refusal of the operating system to read or write a file we need (EIO, EROFS, ...).
    IO_ERROR = "io_error"
    # A file we were reading changed or was swapped (a symlink, a directory) between naming and opening.
    REPORT_CHANGED = "report_changed"
    SCHEMA_TOO_NEW = "schema_too_new"
    BASELINE_UNAVAILABLE = "baseline_unavailable"
    INCOMPATIBLE_SNAPSHOTS = "incompatible_snapshots"
    DAEMON_UNREACHABLE = "daemon_unreachable"
    DAEMON_CONFLICT = "daemon_conflict"
    # The caller did not prove it is this home's user (client token) or its CLI (admin capability).
    FORBIDDEN = "forbidden"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    INTERNAL = "internal"
    # A gate's threshold or criterion was not met.
    THRESHOLD_NOT_MET = "threshold_not_met"
    # A registered command that is not (or no longer) approved by a person cannot run.
    NOT_APPROVED = "not_approved"
    # A bounded resource (the dashboard's event streams) is full: retry once others are released.
    TOO_MANY_REQUESTS = "too_many_requests"


# What each code means, for docs/operations.md (tests/test_docs.py keeps it whole).
MEANINGS: dict[ErrorCode, str] = {
    ErrorCode.INVALID_ARGUMENT: "An argument is missing, of the wrong type or out of range; the message names it.",
    ErrorCode.UNKNOWN_FORMAT: "The report's format could not be detected, or the named format does not exist.",
    ErrorCode.MALFORMED_REPORT: "The report is not valid in its format; the message names the file and line.",
    ErrorCode.REPORT_TOO_LARGE: "The report (decompressed) or a client's input passes a documented bound.",
    ErrorCode.INVALID_CURSOR: "A cursor was damaged, or used with another query than the one that made it.",
    ErrorCode.BUDGET_TOO_SMALL: "The word or byte budget cannot hold even the smallest answer.",
    ErrorCode.RECORD_CAP_EXCEEDED: "The answer would pass the record cap; narrow the query or page it.",
    ErrorCode.NOT_FOUND: "A named snapshot, run, command, file or project does not exist.",
    ErrorCode.PATH_OUTSIDE_CHECKOUT: "A path or link leads outside the checkout.",
    ErrorCode.NOT_SUPPORTED: "The operation is not available here (this store, platform or transport).",
    ErrorCode.NOT_A_REPOSITORY: "The path is not inside a git repository.",
    ErrorCode.GIT_ERROR: "git could not answer (a missing object, an unreadable repository).",
    ErrorCode.STORE_LOCKED: "Another process holds the store; the message names it.",
    ErrorCode.STORE_UNAVAILABLE: "The store cannot be used now (its folder is unsafe, foreign, or the daemon is "
    "shutting down); `details.reason` says which.",
    ErrorCode.STORE_DAMAGED: "A store file or a compacted payload reads back different from what was written "
    "(truncated, garbage, a failed checksum or digest). The file is named and never touched: restore it from a "
    "backup, or move it aside and re-import the reports.",
    ErrorCode.DISK_FULL: "The file system has no space left for a write; `details.path` names where. Nothing "
    "partial is kept; free space and retry.",
    ErrorCode.IO_ERROR: "The operating system refused to read or write a file (`details.path`, `details.errno`).",
    ErrorCode.REPORT_CHANGED: "A file changed, vanished or was swapped for a link or a directory while it was "
    "being opened; retry once it is stable.",
    ErrorCode.SCHEMA_TOO_NEW: "The store was written by a newer coverage-mcp; it is left untouched.",
    ErrorCode.BASELINE_UNAVAILABLE: "The requested baseline has no measurement.",
    ErrorCode.INCOMPATIBLE_SNAPSHOTS: "The snapshots cannot be combined or compared (different repositories or "
    "formats).",
    ErrorCode.DAEMON_UNREACHABLE: "The daemon did not answer, or answered without a coverage-mcp error body.",
    ErrorCode.DAEMON_CONFLICT: "Another daemon holds this home.",
    ErrorCode.FORBIDDEN: "The caller did not prove it is this home's user (token) or its CLI (capability).",
    ErrorCode.DEADLINE_EXCEEDED: "The request ran past its deadline; nothing it started was kept half-done.",
    ErrorCode.INTERNAL: "A bug in coverage-mcp: please report it with the message.",
    ErrorCode.THRESHOLD_NOT_MET: "A gate's threshold or criterion was not met.",
    ErrorCode.NOT_APPROVED: "The registered command is not (or no longer) approved by a person.",
    ErrorCode.TOO_MANY_REQUESTS: "A bounded resource is full; retry once others are released.",
}


class Remedy:
    """What fixes the failed call: an operation with arguments, or a setting with a value."""

    __slots__ = ("arguments", "operation", "setting", "value")

    def __init__(
        self,
        *,
        operation: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        setting: str | None = None,
        value: Any = None,
    ) -> None:
        if (operation is None) == (setting is None):
            raise ValueError("a remedy names an operation or a setting")
        self.operation = operation
        self.arguments = dict(arguments or {})
        self.setting = setting
        self.value = value

    def to_dict(self) -> dict[str, Any]:
        if self.operation is not None:
            return {"operation": self.operation, "arguments": self.arguments}
        return {"setting": self.setting, "value": self.value}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Remedy) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Remedy({self.to_dict()!r})"


class CoverageError(Exception):
    """A failure with a code, a message and a suggestion written for the reader."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        suggestion: str = "",
        details: dict[str, Any] | None = None,
        remedy: Remedy | None = None,
    ) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.suggestion = suggestion
        self.details = dict(details or {})
        self.remedy = remedy
        # The answer's context (repo_key, checkout_path, suite, schema_revision), set by the surface that
        # knows whom it answers (the daemon, for an authenticated caller); None: the body has none.
        self.context: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The canonical error object: every key always present (``remedy`` may be null)."""
        return {
            "code": self.code.value,
            "message": self.message,
            "suggestion": self.suggestion,
            "details": self.details,
            "remedy": None if self.remedy is None else self.remedy.to_dict(),
        }

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> CoverageError:
        """The error a canonical error object describes (a client's side of ``to_dict``)."""
        remedy = body.get("remedy")
        back = None
        if isinstance(remedy, dict) and ("operation" in remedy) != ("setting" in remedy):
            back = Remedy(
                operation=remedy.get("operation"),
                arguments=remedy.get("arguments"),
                setting=remedy.get("setting"),
                value=remedy.get("value"),
            )
        return cls(
            ErrorCode(body["code"]),
            str(body.get("message", "")),
            str(body.get("suggestion", "")),
            body.get("details") if isinstance(body.get("details"), dict) else {},
            back,
        )

    def __repr__(self) -> str:
        return f"CoverageError({self.code.value!r}, {self.message!r})"


def error_body(error: CoverageError, render: Callable[[Remedy], str] | None = None) -> dict[str, Any]:
    """``{"error": {code, message, suggestion, details, remedy}}``, the one error shape of every surface
    (with the answer's ``context`` beside it when the surface set ``error.context``).

    ``render`` turns the remedy into the surface's own terms (an MCP call for
    agents, a command line for people): the suggestion is that line, then the
    error's own suggestion on the next line (worded for every surface: what the
    remedy does and the other ways out), so no surface loses what it says.
    Without a render, or without a remedy, the suggestion is the error's own.
    """
    body = error.to_dict()
    if render is not None and error.remedy is not None:
        shown = render(error.remedy)
        body["suggestion"] = f"{shown}\n{error.suggestion}" if error.suggestion else shown
    return {"error": body} if error.context is None else {"context": error.context, "error": body}


def render_setting(remedy: Remedy) -> str | None:
    """A setting remedy reads the same on every surface."""
    if remedy.setting is None:
        return None
    return f"Set {remedy.setting}={remedy.value} (in the environment of the daemon or the command)."


def invalid_argument(message: str, suggestion: str, **details: Any) -> CoverageError:
    return CoverageError(ErrorCode.INVALID_ARGUMENT, message, suggestion, details)
