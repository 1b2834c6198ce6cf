"""Inventory globs, matched without backtracking.

``*`` matches within one path segment (``[^/]*``), ``**/`` zero or more whole
segments (``(?:[^/]+/)*``), any other ``**`` anything including ``/``
(``.*``), ``?`` one character that is not ``/``. A glob in a committed
inventory is repository content, so it must not be able to stall the process:
matching is a set-of-positions simulation (the positions of the path a prefix
of the pattern can end at, kept as the bits of an integer), so its cost is
O(tokens x path length / word size) whatever the pattern; a backtracking
regex of the same glob is exponential in its wildcards. ``check`` bounds a
glob's length and wildcard count before any matching.
"""

from __future__ import annotations

import attrs

MAX_GLOB_CHARS = 512
MAX_GLOB_WILDCARDS = 32

_LIT, _ONE, _STAR, _SEGS, _ANY = range(5)


def _tokens(pattern: str) -> tuple[tuple[int, str], ...]:
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append((_SEGS, ""))
            i += 3
        elif pattern.startswith("**", i):
            out.append((_ANY, ""))
            i += 2
        elif pattern[i] == "*":
            out.append((_STAR, ""))
            i += 1
        elif pattern[i] == "?":
            out.append((_ONE, ""))
            i += 1
        else:
            j = i
            while j < len(pattern) and pattern[j] not in "*?":
                j += 1
            out.append((_LIT, pattern[i:j]))
            i = j
    return tuple(out)


def wildcards(pattern: str) -> int:
    return sum(kind != _LIT for kind, _ in _tokens(pattern))


def check(pattern: str) -> str | None:
    """Why ``pattern`` is too costly to accept, or None."""
    if len(pattern) > MAX_GLOB_CHARS:
        return f"is {len(pattern):,} characters long, over the {MAX_GLOB_CHARS}-character limit for a glob"
    n = wildcards(pattern)
    if n > MAX_GLOB_WILDCARDS:
        return f"has {n} wildcards ('*', '**', '?'), over the limit of {MAX_GLOB_WILDCARDS} per glob"
    return None


def _occurrences(text: str, sub: str) -> int:
    mask, j = 0, text.find(sub)
    while j != -1:
        mask |= 1 << j
        j = text.find(sub, j + 1)
    return mask


@attrs.frozen
class Glob:
    pattern: str
    tokens: tuple[tuple[int, str], ...] = attrs.field(init=False)
    prefix: str = attrs.field(init=False)
    suffix: str = attrs.field(init=False)
    literal: bool = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        toks = _tokens(self.pattern)
        object.__setattr__(self, "tokens", toks)
        object.__setattr__(self, "literal", all(k == _LIT for k, _ in toks))
        object.__setattr__(self, "prefix", toks[0][1] if toks and toks[0][0] == _LIT else "")
        object.__setattr__(self, "suffix", toks[-1][1] if toks and toks[-1][0] == _LIT else "")

    def match(self, path: str) -> bool:
        if self.literal:
            return path == self.pattern
        if not path.startswith(self.prefix) or not path.endswith(self.suffix):
            return False
        n = len(path)
        full = (1 << (n + 1)) - 1  # positions 0..n
        slash = _occurrences(path, "/")
        step = ((1 << n) - 1) & ~slash  # positions whose character is not '/'
        found: dict[str, int] = {}
        through: int | None = None
        s = 1  # the positions a prefix of the pattern can end at; start: position 0
        for kind, lit in self.tokens:
            if kind == _LIT:
                occ = found.get(lit)
                if occ is None:
                    occ = found[lit] = _occurrences(path, lit)
                s = (s & occ) << len(lit)
            elif kind == _ONE:
                s = (s & step) << 1
            elif kind == _STAR:
                s = _run(s, step) & full
            elif kind == _ANY:
                s = full & ~((s & -s) - 1) if s else 0
            else:  # zero or more segments, each non-empty and ending in '/'
                if through is None:
                    # Positions an empty segment starts at ('/' first, or after another '/') stop a walk.
                    through = ((1 << n) - 1) & ~(slash & ~(step << 1))
                d = s & step  # a segment is not empty
                s |= ((((through + d) ^ through) | d) & through & slash) << 1
            if not s:
                return False
        return bool((s >> n) & 1)


def _run(s: int, step: int) -> int:
    """Every position reachable from ``s`` over characters that are not '/': for a start inside a
    run of such characters, the rest of the run and the position just after it (adding the starts to
    the run's bits carries through the run)."""
    d = s & step
    return ((step + d) ^ step) | s
