"""The one table from error codes to HTTP statuses, and the JSON error shape of REST.

A ``CoverageError`` crossing the REST API becomes
``{"error": {"code", "message", "suggestion", "details", "remedy"}}`` with the status this
table gives its *code*; nothing else picks a status for a CoverageError.
Transport rejections (foreign Host or Origin, wrong method, Accept,
Content-Type, an oversized body) are HTTP rules rather than coverage errors:
they keep their own status and reuse only the body shape.

An error answered to an authenticated caller carries the envelope's
``context`` beside it (``answer_context``). A caller refused for want of a
secret (or of this user's uid) learns nothing of it.
"""

from __future__ import annotations

import json
from typing import Any

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.errors import error_body as canonical_body

HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID_ARGUMENT: 400,
    ErrorCode.UNKNOWN_FORMAT: 400,
    ErrorCode.MALFORMED_REPORT: 422,
    ErrorCode.REPORT_TOO_LARGE: 413,
    ErrorCode.INVALID_CURSOR: 400,
    ErrorCode.BUDGET_TOO_SMALL: 400,
    ErrorCode.RECORD_CAP_EXCEEDED: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.PATH_OUTSIDE_CHECKOUT: 400,
    ErrorCode.NOT_SUPPORTED: 501,
    ErrorCode.NOT_A_REPOSITORY: 400,
    ErrorCode.GIT_ERROR: 500,
    # A lock held by another process is a conflict the caller resolves by
    # waiting or stopping the holder, not a server fault.
    ErrorCode.STORE_LOCKED: 409,
    ErrorCode.STORE_UNAVAILABLE: 503,
    # The server cannot answer from this store until a person restores the named file.
    ErrorCode.STORE_DAMAGED: 503,
    ErrorCode.DISK_FULL: 507,
    ErrorCode.IO_ERROR: 503,
    # The file named in the request changed under us: retrying once it is stable succeeds.
    ErrorCode.REPORT_CHANGED: 409,
    ErrorCode.SCHEMA_TOO_NEW: 409,
    ErrorCode.BASELINE_UNAVAILABLE: 422,
    ErrorCode.INCOMPATIBLE_SNAPSHOTS: 422,
    ErrorCode.DAEMON_UNREACHABLE: 502,
    ErrorCode.DAEMON_CONFLICT: 409,
    # 403, never 401: a 401 with WWW-Authenticate sends MCP clients into OAuth discovery.
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.DEADLINE_EXCEEDED: 504,
    ErrorCode.INTERNAL: 500,
    ErrorCode.THRESHOLD_NOT_MET: 422,
    ErrorCode.NOT_APPROVED: 409,
    ErrorCode.TOO_MANY_REQUESTS: 429,
}


def status_of(error: CoverageError) -> int:
    return HTTP_STATUS[error.code]


def error_body(error: CoverageError) -> dict[str, Any]:
    """The canonical error (``coverage_core.errors.error_body``): every key present, ``details`` an object."""
    return canonical_body(error)


def error_from_body(status: int, body: Any) -> CoverageError:
    """The CoverageError a REST error body carries (the Python client's side of the shape)."""
    inner = body.get("error") if isinstance(body, dict) else None
    if not isinstance(inner, dict) or inner.get("code") not in ErrorCode._value2member_map_:
        return CoverageError(
            ErrorCode.DAEMON_UNREACHABLE,
            f"the daemon answered HTTP {status} without a coverage-mcp error body",
            "Check that the address belongs to a coverage-mcp daemon (`coverage-mcp status`).",
            {"status": status},
        )
    return CoverageError.from_dict(inner)


def compact(payload: Any) -> str:
    """The JSON text of every daemon answer: compact, UTF-8, no NaN."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
