"""A deliberately naive reader of LCOV text, independent of the parser under test.

Tests compare other parsers' detail with what a producing tool's own LCOV
writer said about the same run.
"""

from __future__ import annotations

from pathlib import Path


def records(path: Path) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """DA ``(file, line, hits)``, BRDA ``(file, line, block, branch, taken)`` and FN ``(file, line, name)``
    records, in file order; ``taken`` is -1 for ``-``."""
    da, brda, fn = [], [], []
    current = ""
    for line in path.read_text().splitlines():
        tag, _, rest = line.partition(":")
        if tag == "SF":
            current = rest
        elif tag == "DA":
            number, hits = rest.split(",")[:2]
            da.append((current, int(number), int(hits)))
        elif tag == "BRDA":
            number, block, branch, taken = rest.split(",")
            brda.append((current, int(number), int(block), branch, -1 if taken == "-" else int(taken)))
        elif tag == "FN":
            number, name = rest.split(",", 1)
            fn.append((current, int(number.split(",")[0]), name))
    return da, brda, fn
