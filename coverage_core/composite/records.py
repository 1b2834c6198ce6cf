"""The parts of a composite snapshot as records: its components' summaries, its blocking entries, its
remediation buckets, the evidence reports it was built from and the run registration that produced them.

They are built by ``aggregate`` and ``build``, stored by ``persistence`` as the JSON columns of
``composite_snapshots`` and shown by every surface; the one converter (``coverage_core.model.converter``)
gives each exactly its stored and answered shape (field order is key order) and reads it back.
"""

from __future__ import annotations

import attrs

Totals = dict[str, dict[str, int]]  # kind -> {found, hit}, plus combined (``regions.tally``)


@attrs.frozen
class ComponentSummary:
    """One inventory component's figures in a composite."""

    id: str
    language: str
    format: str
    variants: tuple[str, ...]
    totals: Totals
    entries: int
    measured: int
    denominator_known: bool


@attrs.frozen
class Blocking:
    """An inventory entry without usable evidence, and why (its ``reason`` is the entry's status)."""

    component: str
    variant: str
    logical_source_id: str
    paths: tuple[str, ...]
    reason: str
    detail: str | None
    denominator: str


@attrs.frozen
class MeasureHint:
    """What to measure: unmeasured entries of one (component, variant, reason), a few of them named."""

    component: str
    variant: str
    reason: str
    entries: int
    examples: tuple[str, ...]


@attrs.frozen
class TestHint:
    """What to test: a measured entry and its uncovered combined regions."""

    __test__ = False  # not a pytest class, whatever its name

    component: str
    variant: str
    logical_source_id: str
    uncovered: int
    found: int


@attrs.frozen
class Remediation:
    measure: tuple[MeasureHint, ...]
    test: tuple[TestHint, ...]

    def first(self, n: int) -> Remediation:
        """The first ``n`` of each bucket."""
        return Remediation(self.measure[:n], self.test[:n])


@attrs.frozen
class EvidenceReport:
    """One report a composite was built from, and what was judged about it (``aggregate.Evidence``)."""

    component: str
    variant: str
    path: str
    sha256: str | None
    bytes: int
    commit: str | None
    format: str | None
    status: str
    message: str | None
    files: int
    source_mismatched_files: int
    toolchain: dict[str, str]


@attrs.frozen
class Registration:
    """The managed run whose reports a composite was built from: its id, command (and content hash), args."""

    run_id: str
    command_id: str
    command_hash: str
    args: tuple[str, ...]
