"""What a partial line missed: its untaken branches, in the words its format gives them.

A partial line is an executed line with a branch no selected snapshot took.
Each format says a different amount about that branch (FORMATS.md, README
"Partial lines"):

- coverage.py (JSON, or its LCOV writer): arcs. ``jump to line N`` reads
  "didn't jump to line N"; an exit (a negative arc, stored as ``exit``) reads
  "didn't return from function 'f'", ``f`` being the innermost function around
  the line, or "didn't exit the module" outside any function.
- LCOV (BRDA) and LLVM: block and branch numbers, "block 0 branch 1 not
  taken", or "never evaluated" where the report says ``-``.
- Cobertura and JaCoCo: only how many outcomes of how many were covered, so
  "1 of 2 branches not taken", never which.
- Istanbul: the branch's outcome number, as LCOV's.
"""

from __future__ import annotations

from collections.abc import Sequence

# Formats whose branch rows are outcome ordinals with no identity (xml.add_branch_outcomes).
COUNTED_ONLY = frozenset({"cobertura", "jacoco"})
JUMP, EXIT = "jump to line ", "exit"
# coverage.py's own LCOV writer names arcs in words.
WORDED = ("jump to line ", "return from function ")


def describe(
    fmt: str, branches: Sequence[tuple[int, str, int]], total: int, function: str | None
) -> list[str]:
    """The missed branches of one line: ``branches`` are its untaken (block, branch, taken) rows, of
    ``total`` branches on the line; ``function`` the innermost function around it."""
    if fmt in COUNTED_ONLY:
        return [f"{len(branches)} of {total} branches not taken"]
    out = []
    for block, branch, taken in branches:
        if branch == EXIT:
            out.append(f"didn't return from function '{function}'" if function else "didn't exit the module")
        elif branch.startswith(WORDED):
            out.append(f"didn't {branch}")
        else:
            out.append(f"block {block} branch {branch} " + ("never evaluated" if taken < 0 else "not taken"))
    return out
