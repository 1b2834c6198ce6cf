"""The one error type of coverage-mcp and its machine-readable codes.

Every failure a user or an agent can see is a ``CoverageError`` with a stable
``code``, a one-line ``message``, a ``suggestion`` that says what to do next,
optional structured ``details`` and an optional structured ``remedy`` (the
operation and arguments that fix the call, or a setting). Adapters (CLI exit
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
    """``{"error": {code, message, suggestion, details, remedy}}``, the one error shape of every surface.

    ``render`` turns the remedy into the surface's own suggestion (an MCP call
    for agents, a command line for people); without one, or without a remedy,
    the suggestion is the error's own.
    """
    body = error.to_dict()
    if render is not None and error.remedy is not None:
        body["suggestion"] = render(error.remedy)
    return {"error": body}


def render_setting(remedy: Remedy) -> str | None:
    """A setting remedy reads the same on every surface."""
    if remedy.setting is None:
        return None
    return f"Set {remedy.setting}={remedy.value} (in the environment of the daemon or the command)."


def invalid_argument(message: str, suggestion: str, **details: Any) -> CoverageError:
    return CoverageError(ErrorCode.INVALID_ARGUMENT, message, suggestion, details)
