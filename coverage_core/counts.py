"""Sums of hit counts that saturate at the int64 maximum instead of wrapping.

A count past 2**63 - 1 means only "hit very often", but a wrapped one reads
as negative or, after a second wrap, as a small number (a covered region
"hit 0"). Every place that adds hit counts (LCOV record merges, Go block and
llvm-cov region merges, composite aggregation) goes through these, which
clamp at ``MAX`` and say whether they did, so the answer can carry
``saturated: true``.

The inputs are non-negative int64 counts (callers clamp "not evaluated" -1
first). Grouped sums are exact: each value is split into its high and low 32
bits, each part is summed in int64 (no part sum can overflow below 2**31
values per group), and the whole is saturated when the carried high part
passes 31 bits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


MAX = 2**63 - 1  # np.iinfo(np.int64).max, without importing NumPy for the constant
_LOW = 0xFFFFFFFF


def add(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool]:
    """``a + b`` element-wise, clamped at ``MAX``, and whether any clamped."""
    import numpy as np

    with np.errstate(over="ignore"):
        total = np.asarray(a, np.int64) + np.asarray(b, np.int64)
    over = total < 0  # two non-negative int64s wrap to a negative sum, never further
    if over.any():
        return np.where(over, MAX, total), True
    return total, False


def add_scalar(a: int, b: int) -> tuple[int, bool]:
    """Python ints: ``a + b`` clamped at ``MAX``, and whether it clamped."""
    total = int(a) + int(b)
    return (MAX, True) if total > MAX else (total, False)


def _join(high: np.ndarray, low: np.ndarray) -> tuple[np.ndarray, bool]:
    import numpy as np

    high = high + (low >> 32)
    over = high > 0x7FFFFFFF
    out = (np.minimum(high, 0x7FFFFFFF) << 32) | (low & _LOW)
    if over.any():
        return np.where(over, MAX, out), True
    return out, False


def reduceat(values: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, bool]:
    """``np.add.reduceat(values, starts)`` (groups starting at ``starts``), exact and clamped at ``MAX``."""
    import numpy as np

    values = np.asarray(values, np.int64)
    if not len(values):
        return values.copy(), False
    return _join(np.add.reduceat(values >> 32, starts), np.add.reduceat(values & _LOW, starts))


def add_at(target: np.ndarray, index: np.ndarray, values: np.ndarray) -> bool:
    """``np.add.at(target, index, values)`` in place (repeated indices add up), clamped at ``MAX``;
    whether any clamped."""
    import numpy as np

    values = np.asarray(values, np.int64)
    high, low = target >> 32, target & _LOW
    np.add.at(high, index, values >> 32)
    np.add.at(low, index, values & _LOW)
    target[:], saturated = _join(high, low)
    return saturated
