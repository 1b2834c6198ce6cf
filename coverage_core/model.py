"""Immutable records the library returns, and the one converter to JSON shapes.

Records are ``attrs`` frozen classes; bulk detail (lines, branches, ...) is
never a list of records but NumPy columns (see ``FileDetail``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs
import cattrs
import numpy as np

from . import headline as headlines
from .report import Counter
from .vocabulary import COUNTERS


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


converter = cattrs.Converter()
converter.register_unstructure_hook(dt.datetime, lambda d: d.isoformat())
converter.register_structure_hook(dt.datetime, lambda v, _: dt.datetime.fromisoformat(v))
converter.register_unstructure_hook(Counter, Counter.to_dict)
converter.register_structure_hook(Counter, lambda v, _: Counter(int(v["found"]), int(v["hit"])))


def to_json(record: Any) -> Any:
    """A record (or a sequence of them) as its JSON shape."""
    return converter.unstructure(record)


def from_json(value: Any, kind: Any) -> Any:
    """The record of ``kind`` (e.g. ``tuple[Run, ...]``) a JSON shape holds."""
    return converter.structure(value, kind)


def _totals(t: dict[str, Counter]) -> dict[str, Any]:
    return {k: t[k].to_dict() for k in COUNTERS if k in t}


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    """The JSON shape of a snapshot record (CLI ``--json``, REST and MCP)."""
    body: dict[str, Any] = converter.unstructure(snapshot)
    body["totals"] = _totals(snapshot.totals)
    head = snapshot.headline
    body["headline"] = head.to_dict() if head else None
    body["warnings"] = list(snapshot.warnings)
    return body
