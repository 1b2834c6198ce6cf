"""Opaque, query-scoped, tamper-evident cursors.

A cursor is ``base64url(json payload) . hmac``: the payload names the
operation, a digest of the query (every argument except the cursor), the
snapshot(s) it pages over and the offset; the HMAC key is a random secret kept
in the project store's settings. A cursor used with another query or another
snapshot, or altered in any byte, is an ``invalid_cursor`` error, never a
wrong page.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

from ..errors import CoverageError, ErrorCode
from .call import Call

# Far past any real page, and offset plus a page size stays inside DuckDB's
# BIGINT (a signed 64-bit OFFSET): a forged position is refused, never a crash.
MAX_OFFSET = 2**62


def _secret(call: Call) -> bytes:
    return call.project.store.cursor_secret


def query_digest(operation: str, args: dict[str, Any]) -> str:
    scoped = {k: v for k, v in args.items() if k != "cursor"}
    text = json.dumps([operation, scoped], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def encode(call: Call, operation: str, scope: str, offset: int) -> str:
    payload = json.dumps(
        {"o": operation, "q": query_digest(operation, call.args), "s": scope, "n": offset},
        separators=(",", ":"),
    ).encode()
    mac = hmac.new(_secret(call), payload, hashlib.sha256).hexdigest()[:32]
    return base64.urlsafe_b64encode(payload).decode().rstrip("=") + "." + mac


def decode(call: Call, operation: str, scope: str, cursor: str | None) -> int:
    """The offset a cursor continues from (0 without one)."""
    if not cursor:
        return 0
    if not isinstance(cursor, str):
        raise _invalid("it is not a cursor this server issued")
    try:
        body, mac = cursor.rsplit(".", 1)
        payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        data = json.loads(payload)
    except (ValueError, TypeError, RecursionError):
        raise _invalid("it is not a cursor this server issued") from None
    expected = hmac.new(_secret(call), payload, hashlib.sha256).hexdigest()[:32]
    # Bytes, not str: compare_digest refuses non-ASCII text with a TypeError.
    if not hmac.compare_digest(expected.encode(), mac.encode("utf-8", "surrogateescape")):
        raise _invalid("it was altered or issued by another store")
    if not isinstance(data, dict):
        raise _invalid("it is not a cursor this server issued")
    if data.get("o") != operation or data.get("q") != query_digest(operation, call.args):
        raise _invalid("it belongs to another query; a cursor only continues the query that issued it")
    if data.get("s") != scope:
        raise _invalid("it belongs to another snapshot")
    offset = data.get("n")
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
        raise _invalid("it carries no valid position")
    return offset


def _invalid(why: str) -> CoverageError:
    return CoverageError(
        ErrorCode.INVALID_CURSOR,
        f"invalid cursor: {why}",
        "Repeat the same call with the same arguments and page.next_cursor from its answer, "
        "or drop the cursor to start from the first page.",
    )
