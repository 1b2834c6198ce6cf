"""How deeply a JSON text nests, counted before it is parsed.

Python's parser recurses once per ``[`` or ``{``; a client's 100,000-deep
list would end in ``RecursionError`` (an ``internal`` error, or a dead
reader thread) after the work of descending. Everything a client sends as
JSON (inventories, JSON-RPC messages, REST bodies) is first measured here
and refused past ``MAX_DEPTH`` with a clear message. The count skips string
contents; it is linear in the text and stdlib only (the stdio connector
uses it on every line).
"""

from __future__ import annotations

import re
from itertools import accumulate

from .errors import CoverageError, ErrorCode

# Deeper than any document we read (an inventory nests 5 levels, a JSON-RPC call about 8).
MAX_DEPTH = 64

_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def depth(text: bytes | str) -> int:
    """The deepest nesting of ``[``/``{`` in ``text`` outside strings (0 for a scalar)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if not data.translate(None, _NOT_BRACKETS):
        return 0
    brackets = _STRINGS.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(_STEP[b] for b in brackets), default=0)


def too_deep(text: bytes | str, limit: int = MAX_DEPTH) -> bool:
    return depth(text) > limit


def check(text: bytes | str, what: str, limit: int = MAX_DEPTH) -> None:
    """Refuse ``text`` (named ``what``) when it nests past ``limit``: ``invalid_argument``, before parsing."""
    found = depth(text)
    if found > limit:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{what} nests {found} levels deep; at most {limit} are read",
            f"Flatten {what}: no document coverage-mcp reads nests more than a few levels.",
            {"depth": found, "max_depth": limit},
        )
