"""The one percent formatter: exact integer arithmetic, never 100% or 0% unless exact.

Coverage figures are kept as exact ``(hit, found)`` counts everywhere; this is
the only place they become text. A failing 99,999 of 100,000 must not read
"100.00%", and one covered line of a million must not read "0.00%".
"""

from __future__ import annotations


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
