"""The one percent formatter: exact integer arithmetic, never 100% or 0% unless exact.

Coverage figures are kept as exact ``(hit, found)`` counts everywhere; this is
the only place they become text. A failing 99,999 of 100,000 must not read
"100.00%", and one covered line of a million must not read "0.00%".
"""

from __future__ import annotations


def counted(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless one: "1 file", "2 files" (words whose plural adds an s)."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def percent(hit: int, found: int, digits: int = 2) -> str:
    """``hit`` of ``found`` as a percentage with ``digits`` decimals; ``-`` when nothing was found."""
    if found <= 0:
        return "-"
    scale = 10**digits
    # Round half to even on exact integers (no float error near the edges).
    units, rest = divmod(hit * 100 * scale, found)
    if 2 * rest > found or (2 * rest == found and units % 2):
        units += 1
    full = 100 * scale
    if units >= full and hit < found:
        units = full - 1
    elif units == 0 and hit > 0:
        units = 1
    whole, frac = divmod(units, scale)
    return f"{whole}.{frac:0{digits}d}%" if digits else f"{whole}%"


def delta_hundredths(before: tuple[int, int], after: tuple[int, int]) -> tuple[int, int] | None:
    """The change from ``before`` to ``after`` (each ``(hit, found)``) in hundredths of a percentage point,
    computed exactly: ``(sign, units)`` with sign -1, 0 or 1 and units the rounded magnitude (0 for a change
    smaller than 0.005 points that is not zero); None when either side measured nothing."""
    from fractions import Fraction

    if not before[1] or not after[1]:
        return None
    change = Fraction(after[0] * 100, after[1]) - Fraction(before[0] * 100, before[1])
    return (1 if change > 0 else -1 if change < 0 else 0), round(abs(change) * 100)


def delta(before: tuple[int, int], after: tuple[int, int]) -> str:
    """The change in percentage points, exact to two decimals ("+1.25%", "-<0.01%", "0.00%"; "-" when a side
    measured nothing); never "0.00" for a change that is not zero."""
    found = delta_hundredths(before, after)
    if found is None:
        return "-"
    sign, units = found
    if sign == 0:
        return "0.00%"
    mark = "+" if sign > 0 else "-"
    if units == 0:
        return f"{mark}<0.01%"
    return f"{mark}{units // 100}.{units % 100:02d}%"
