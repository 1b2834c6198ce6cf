"""Mapping report paths to repository-relative paths.

Rules, in order, for each path a report names:
1. explicit prefix maps (``--path-map /build/app=src``), first match wins;
2. an absolute path under the checkout root, or under a root the report
   declares (Cobertura ``<sources>``), loses that root;
3. a relative path that git tracks as is, is kept;
4. otherwise the longest path suffix (by whole components) that exactly one
   tracked file ends with maps to it; when several do, the file is ambiguous.
A file that maps nowhere keeps its report path and is flagged ``unmapped``:
it is still stored and still counted.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Sequence

import attrs

MAPPED, AMBIGUOUS, UNMAPPED = "mapped", "ambiguous", "unmapped"


@attrs.frozen
class Mapping:
    paths: tuple[str, ...]  # stored path per report file
    status: tuple[str, ...]  # MAPPED / AMBIGUOUS / UNMAPPED per report file

    def counts(self) -> dict[str, int]:
        return {s: self.status.count(s) for s in (MAPPED, AMBIGUOUS, UNMAPPED)}


def normalize(path: str) -> str:
    path = path.replace("\\", "/")
    if path.startswith("file://"):
        path = path[len("file://") :]
    norm = posixpath.normpath(path)
    return "" if norm == "." else norm


class SuffixIndex:
    """Tracked files by every whole-component suffix of their path."""

    def __init__(self, tracked: Iterable[str]) -> None:
        self.tracked = frozenset(tracked)
        self._by_suffix: dict[str, list[str]] = defaultdict(list)
        self._max_parts = 0
        self._max_chars = 0
        for path in self.tracked:
            parts = path.split("/")
            self._max_parts = max(self._max_parts, len(parts))
            self._max_chars = max(self._max_chars, len(path))
            for i in range(len(parts)):
                self._by_suffix["/".join(parts[i:])].append(path)

    def lookup(self, path: str) -> tuple[str | None, str]:
        parts = [p for p in path.split("/") if p not in ("", ".", "..")]
        # A suffix with more components or characters than every tracked path
        # matches nothing: start at the first that could, so a long report path
        # costs one split and a few bounded joins, never a join per component.
        start = max(0, len(parts) - self._max_parts)
        chars = sum(map(len, parts[start:])) + max(0, len(parts) - start - 1)
        for i in range(start, len(parts)):
            if chars <= self._max_chars:
                hits = self._by_suffix.get("/".join(parts[i:]))
                if hits:
                    return (hits[0], MAPPED) if len(hits) == 1 else (None, AMBIGUOUS)
            chars -= len(parts[i]) + 1
        return None, UNMAPPED


def map_paths(
    report_paths: Sequence[str],
    *,
    checkout_root: str,
    tracked: Iterable[str],
    source_roots: Sequence[str] = (),
    prefix_map: Sequence[tuple[str, str]] = (),
) -> Mapping:
    index = SuffixIndex(tracked)
    roots = [normalize(checkout_root)] + [normalize(r) for r in source_roots if r]
    results = [_map_one(normalize(raw), roots, index, prefix_map) for raw in report_paths]
    # Two report files landing on one repository path would merge two
    # measurements silently. An exact match wins over a suffix match; the
    # loser is ambiguous and keeps its report path.
    owner: dict[str, int] = {}
    for i, (path, _status, exact) in enumerate(results):
        if path is not None:  # mapped
            j = owner.get(path)
            if j is None or (exact and not results[j][2]):
                owner[path] = i
    out_paths: list[str] = []
    out_status: list[str] = []
    for i, (raw, (path, status, _exact)) in enumerate(zip(report_paths, results, strict=True)):
        if path is not None and owner[path] != i:
            status, path = AMBIGUOUS, None
        out_paths.append(raw if path is None else path)
        out_status.append(status)
    # A kept report path may still equal a mapped one (or another kept one):
    # give it a form no repository path has, so every stored path is unique.
    seen: set[str] = set()
    for i, path in enumerate(out_paths):
        if path in seen:
            out_paths[i] = f"<report file {i}>/{path}"
        seen.add(out_paths[i])
    return Mapping(tuple(out_paths), tuple(out_status))


def _map_one(
    path: str, roots: list[str], index: SuffixIndex, prefix_map: Sequence[tuple[str, str]]
) -> tuple[str | None, str, bool]:
    """(mapped path, status, whether the match was exact rather than by suffix)."""
    candidates: list[str] = []
    for old, new in prefix_map:
        old_n = normalize(old)
        if path == old_n or path.startswith(old_n.rstrip("/") + "/"):
            rest = path[len(old_n) :].lstrip("/")
            candidates.append(normalize(posixpath.join(normalize(new), rest)) if new else rest)
            break
    if posixpath.isabs(path):
        for root in roots:
            if root and (path.startswith(root.rstrip("/") + "/")):
                candidates.append(path[len(root.rstrip("/")) + 1 :])
    else:
        candidates.append(path)
        # A relative path under a declared (relative) source root.
        for root in roots[1:]:
            if root and not posixpath.isabs(root):
                candidates.append(normalize(posixpath.join(root, path)))
    for cand in candidates:
        if cand in index.tracked:
            return cand, MAPPED, True
    for cand in candidates + [path]:
        mapped, status = index.lookup(cand)
        if status != UNMAPPED:
            return mapped, status, False
    return None, UNMAPPED, False
