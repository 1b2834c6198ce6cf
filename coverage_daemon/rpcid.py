"""Which JSON-RPC request ids are answered with the id echoed: one rule for every MCP transport.

Stdlib only: the stdio connector imports it. An id is a string or an integer
within I-JSON's exact range (RFC 7493), which every client's JSON reader
keeps exactly; MCP forbids null. Anything else (NaN, +/-Infinity, 1e400, a
float, a boolean, an object, a list) cannot be echoed faithfully, and some of
it not as JSON at all: such a request is answered -32600 with ``"id": null``.
"""

from __future__ import annotations

from typing import Any

MAX_ID = 2**53 - 1

INVALID_ID_MESSAGE = (
    "Invalid Request: id must be a string or an integer (not null, a float, a boolean, an "
    f"object or a list; integers within +/-{MAX_ID})"
)


def is_request(message: Any) -> bool:
    return isinstance(message, dict) and "method" in message and "id" in message


def valid_id(value: Any) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_ID <= value <= MAX_ID


def invalid_id(message: Any) -> bool:
    """A request whose id cannot be echoed as given."""
    return is_request(message) and not valid_id(message["id"])
