"""Opaque, query-scoped, tamper-evident cursors.

A cursor is ``base64url(json payload) . hmac``: the payload names the
operation, a digest of the query (every argument except the cursor), the
snapshot(s) it pages over and the position; the HMAC key is a random secret
kept in the project store's settings. A cursor used with another query or
another snapshot, or altered in any byte, is an ``invalid_cursor`` error,
never a wrong page.

A position is an offset (``encode``/``decode``) or a key (``encode_key``/
``decode_key``): a short list of integers and strings, such as the last record
shown (keyset paging) or a stream and an offset inside it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any, TypeGuard, cast

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


# A key position: at most this many parts, each an int in [0, MAX_OFFSET] or a short string.
MAX_KEY_PARTS, MAX_KEY_TEXT = 8, 4096


def encode(call: Call, operation: str, scope: str, offset: int) -> str:
    return _encode(call, operation, scope, offset)


def encode_key(call: Call, operation: str, scope: str, key: list[Any]) -> str:
    return _encode(call, operation, scope, list(key))


def _encode(call: Call, operation: str, scope: str, position: Any) -> str:
    payload = json.dumps(
        {"o": operation, "q": query_digest(operation, call.args), "s": scope, "n": position},
        separators=(",", ":"),
    ).encode()
    mac = hmac.new(_secret(call), payload, hashlib.sha256).hexdigest()[:32]
    return base64.urlsafe_b64encode(payload).decode().rstrip("=") + "." + mac


def decode(call: Call, operation: str, scope: str, cursor: str | None) -> int:
    """The offset a cursor continues from (0 without one)."""
    if not cursor:
        return 0
    offset = _decode(call, operation, scope, cursor)
    if not _offset(offset):
        raise invalid("it carries no valid position")
    return offset


def decode_key(call: Call, operation: str, scope: str, cursor: str | None) -> list[Any] | None:
    """The key a cursor continues after (None without one): a list of ints and strings."""
    if not cursor:
        return None
    key = _decode(call, operation, scope, cursor)
    valid = (
        isinstance(key, list)
        and len(key) <= MAX_KEY_PARTS
        and all(_offset(k) or k is None or (isinstance(k, str) and len(k) <= MAX_KEY_TEXT) for k in key)
    )
    if not valid:
        raise invalid("it carries no valid position")
    return cast("list[Any]", key)  # checked above: a short list of offsets, None and short strings


def _offset(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_OFFSET


def _decode(call: Call, operation: str, scope: str, cursor: str) -> Any:
    if not isinstance(cursor, str):
        raise invalid("it is not a cursor this server issued")
    try:
        body, mac = cursor.rsplit(".", 1)
        payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        data = json.loads(payload)
    except (ValueError, TypeError, RecursionError):
        raise invalid("it is not a cursor this server issued") from None
    expected = hmac.new(_secret(call), payload, hashlib.sha256).hexdigest()[:32]
    # Bytes, not str: compare_digest refuses non-ASCII text with a TypeError.
    if not hmac.compare_digest(expected.encode(), mac.encode("utf-8", "surrogateescape")):
        raise invalid("it was altered or issued by another store")
    if not isinstance(data, dict):
        raise invalid("it is not a cursor this server issued")
    if data.get("o") != operation or data.get("q") != query_digest(operation, call.args):
        raise invalid("it belongs to another query; a cursor only continues the query that issued it")
    if data.get("s") != scope:
        raise invalid("it belongs to another snapshot")
    return data.get("n")


def invalid(why: str) -> CoverageError:
    return CoverageError(
        ErrorCode.INVALID_CURSOR,
        f"invalid cursor: {why}",
        "Repeat the same call with the same arguments and page.next_cursor from its answer, "
        "or drop the cursor to start from the first page.",
    )


def rebind(secret: bytes, cursor: str, old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """The same position as a cursor of the query ``new`` (a remedy's: the same call with another budget),
    or None when ``cursor`` is not a valid cursor of ``old``. Only the server's secret re-signs it."""
    try:
        body, mac = cursor.rsplit(".", 1)
        payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        data = json.loads(payload)
    except (ValueError, TypeError, RecursionError):
        return None
    expected = hmac.new(secret, payload, hashlib.sha256).hexdigest()[:32]
    if not hmac.compare_digest(expected.encode(), mac.encode("utf-8", "surrogateescape")):
        return None
    if not isinstance(data, dict) or data.get("q") != query_digest(str(data.get("o")), old):
        return None
    fresh = json.dumps({**data, "q": query_digest(str(data["o"]), new)}, separators=(",", ":")).encode()
    signed = hmac.new(secret, fresh, hashlib.sha256).hexdigest()[:32]
    return base64.urlsafe_b64encode(fresh).decode().rstrip("=") + "." + signed
