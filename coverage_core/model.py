"""Immutable records the library returns, and the one converter to JSON shapes.

Records are ``attrs`` frozen classes; bulk detail (lines, branches, ...) is
never a list of records but NumPy columns (see ``FileDetail``).
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import TYPE_CHECKING, Any

import attrs

from . import headline as headlines
from .report import Counter
from .vocabulary import COUNTERS

if TYPE_CHECKING:
    import cattrs
    import numpy as np


@attrs.frozen
class MappingSummary:
    mapped: int
    ambiguous: int
    unmapped: int


@attrs.frozen
class Snapshot:
    snapshot_id: str
    created_at: dt.datetime
    suite: str
    format: str
    tool: str | None
    scope: str
    provenance: str
    commit: str | None
    branch: str | None
    dirty: bool
    worktree: str
    worktree_path: str
    artifact_path: str | None
    artifact_sha256: str
    artifact_bytes: int
    files: int
    tests: int
    path_mapping: MappingSummary
    totals: dict[str, Counter]
    warnings: tuple[dict[str, str], ...] = ()
    duplicate: bool = False

    @property
    def headline(self) -> headlines.Headline | None:
        """The producing tool's own total (coverage_core.headline); None for a report without its counters."""
        return headlines.of(self.format, self.tool, self.totals)


@attrs.frozen
class FileSummary:
    path: str
    report_path: str
    mapping: str
    lines: Counter
    branches: Counter
    functions: Counter
    # The file's headline by its tool's rule (coverage_core.headline) and its excluded line count.
    headline: Counter | None = None
    excluded: int = 0


@attrs.frozen
class FilesPage:
    snapshot_id: str
    total: int
    offset: int
    files: tuple[FileSummary, ...]


@attrs.frozen(eq=False)
class FileDetail:
    """One file of one snapshot: each table as NumPy columns."""

    snapshot_id: str
    summary: FileSummary
    lines: dict[str, np.ndarray]
    branches: dict[str, np.ndarray]
    functions: dict[str, np.ndarray]
    regions: dict[str, np.ndarray]
    tests: tuple[str, ...]  # named tests that hit this file
    excluded_lines: tuple[int, ...] = ()  # lines the tool excluded (coverage.py's excluded_lines)


_BUILDING = threading.Lock()
_BUILT: list[cattrs.Converter] = []


def the_converter() -> cattrs.Converter:
    """The one converter, built on first use: cattrs (and the structure functions it generates) costs a
    read that only prints records about 10 ms of start-up, and a snapshot or file summary needs none of
    it (``snapshot_to_dict``, ``summary_to_dict``). ``converter`` (this module's attribute) is the same
    object; the execution records register their hooks on it when they are imported."""
    if _BUILT:
        return _BUILT[0]
    with _BUILDING:
        if not _BUILT:
            import cattrs

            made = cattrs.Converter()
            made.register_unstructure_hook(dt.datetime, lambda d: d.isoformat())
            made.register_structure_hook(dt.datetime, lambda v, _: dt.datetime.fromisoformat(v))
            made.register_unstructure_hook(Counter, Counter.to_dict)
            made.register_structure_hook(Counter, lambda v, _: Counter(int(v["found"]), int(v["hit"])))
            _BUILT.append(made)
    return _BUILT[0]


def __getattr__(name: str) -> Any:
    """``model.converter``, built on first use (``the_converter``)."""
    if name == "converter":
        return the_converter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def to_json(record: Any) -> Any:
    """A record (or a sequence of them) as its JSON shape."""
    return the_converter().unstructure(record)


def from_json(value: Any, kind: Any) -> Any:
    """The record of ``kind`` (e.g. ``tuple[Run, ...]``) a JSON shape holds."""
    return the_converter().structure(value, kind)


def _totals(t: dict[str, Counter]) -> dict[str, Any]:
    return {k: t[k].to_dict() for k in COUNTERS if k in t}


def summary_to_dict(summary: FileSummary) -> dict[str, Any]:
    """A file summary's JSON shape, as the converter gives it (field order; counters as dicts)."""
    return {
        "path": summary.path,
        "report_path": summary.report_path,
        "mapping": summary.mapping,
        "lines": summary.lines.to_dict(),
        "branches": summary.branches.to_dict(),
        "functions": summary.functions.to_dict(),
        "headline": summary.headline.to_dict() if summary.headline is not None else None,
        "excluded": summary.excluded,
    }


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The JSON shape of a snapshot record (CLI ``--json``, REST and MCP): the converter's shape of it
    (every field in order), built by hand so that printing a snapshot needs no cattrs."""
    s = snapshot
    m = s.path_mapping
    body: dict[str, Any] = {
        "snapshot_id": s.snapshot_id,
        "created_at": s.created_at.isoformat(),
        "suite": s.suite,
        "format": s.format,
        "tool": s.tool,
        "scope": s.scope,
        "provenance": s.provenance,
        "commit": s.commit,
        "branch": s.branch,
        "dirty": s.dirty,
        "worktree": s.worktree,
        "worktree_path": s.worktree_path,
        "artifact_path": s.artifact_path,
        "artifact_sha256": s.artifact_sha256,
        "artifact_bytes": s.artifact_bytes,
        "files": s.files,
        "tests": s.tests,
        "path_mapping": {"mapped": m.mapped, "ambiguous": m.ambiguous, "unmapped": m.unmapped},
        "totals": _totals(s.totals),
        "warnings": [dict(w) for w in s.warnings],
        "duplicate": s.duplicate,
    }
    head = snapshot.headline
    body["headline"] = head.to_dict() if head else None
    return body
