"""The one error type of coverage-mcp and its machine-readable codes.

Every failure a user or an agent can see is a ``CoverageError`` with a stable
``code``, a one-line ``message``, a ``suggestion`` that says what to do next and
optional structured ``details``. Adapters (CLI exit codes, HTTP statuses, MCP
``isError`` results) map the *code*, in one table each, never the message text.
"""

from __future__ import annotations

import enum
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


class CoverageError(Exception):
    """A failure with a code, a message and a suggestion written for the reader."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        suggestion: str = "",
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.suggestion = suggestion
        self.details = dict(details or {})

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "code": self.code.value,
            "message": self.message,
            "suggestion": self.suggestion,
        }
        if self.details:
            body["details"] = self.details
        return body

    def __repr__(self) -> str:
        return f"CoverageError({self.code.value!r}, {self.message!r})"


def invalid_argument(message: str, suggestion: str, **details: Any) -> CoverageError:
    return CoverageError(ErrorCode.INVALID_ARGUMENT, message, suggestion, details)
