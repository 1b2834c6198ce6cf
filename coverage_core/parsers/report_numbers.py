"""Validation of the numbers a report carries.

Every count is a non-negative integer that fits in a signed 64-bit column;
anything else (negative, fractional, NaN, overflowing) is a ``malformed_report``
error naming the file and, where known, the line.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .reading import excerpt, malformed

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1
# An optional sign and at most 40 digits: enough to tell "overflows" from
# garbage, and short enough that int() never meets Python's digit limit.
_INTEGER = re.compile(r"[+-]?[0-9]{1,40}")


def count(value: Any, origin: str, what: str, line: int | None = None) -> int:
    """A non-negative integer from a JSON/XML/text value, or a clear error."""
    if isinstance(value, bool):
        raise malformed(origin, f"{what} must be an integer, got {value!r}", line)  # True or False
    if isinstance(value, int):
        n = value
    elif isinstance(value, float):
        if math.isnan(value) or math.isinf(value) or value != int(value):
            raise malformed(origin, f"{what} must be an integer, got {value!r}", line)
        n = int(value)
    elif isinstance(value, str | bytes):
        text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
        text = text.strip()
        if _INTEGER.fullmatch(text) is None:
            if re.fullmatch(r"[+-]?[0-9]+", text):
                raise malformed(origin, f"{what} overflows a 64-bit counter ({excerpt(text[:20])} ...)", line)
            raise malformed(origin, f"{what} must be an integer ({excerpt(text)})", line)
        n = int(text)
    else:
        raise malformed(origin, f"{what} must be an integer, got {type(value).__name__}", line)
    if n < 0:
        raise malformed(origin, f"{what} is negative ({n})", line)
    if n > INT64_MAX:
        raise malformed(origin, f"{what} overflows a 64-bit counter ({n})", line)
    return n
