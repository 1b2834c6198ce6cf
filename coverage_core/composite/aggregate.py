"""Exact aggregation of mapped evidence against an inventory, with completeness.

Pure: no git, no store. ``aggregate`` takes the inventory, the evidence
already parsed and judged (``Evidence``), the content identity of every
inventory file and a ``carry`` callback that returns canonical regions of an
earlier composite for entries whose evidence is not usable. It never lowers
the denominator: an entry without usable evidence keeps regions from (in
order) an earlier composite of the same inventory that measured the same text,
or the unusable evidence itself with its hits set to 0; only when neither
exists is the entry's denominator unknown, which the composite states.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from ..report import NormalizedReport
from . import regions as rg
from .inventory import Entry, Inventory
from .records import Blocking, ComponentSummary, EvidenceReport, MeasureHint, Remediation, TestHint

# Entry statuses. ``measured`` is the only one that is not a blocking reason.
MEASURED, MISSING, STALE, MALFORMED, UNSUPPORTED, SOURCE_MISMATCHED = (
    "measured",
    "missing",
    "stale",
    "malformed",
    "unsupported",
    "source_mismatched",
)
# When several reasons apply to one entry, the first of these is reported.
REASON_ORDER = (SOURCE_MISMATCHED, STALE, MALFORMED, UNSUPPORTED, MISSING)
DENOMINATOR_SOURCES = ("evidence", "carried", "zeroed_evidence", "unknown")
REMEDIATION_LIMIT = 20


@attrs.define
class Evidence:
    """One report given to a composite, and what was judged about it."""

    component: str
    variant: str
    label: str  # repository-relative path (or the given path) of the report
    sha256: str | None
    bytes: int
    commit: str | None
    status: str  # "ok" | STALE | MALFORMED | UNSUPPORTED
    format: str | None = None
    message: str | None = None
    report: NormalizedReport | None = None
    paths: Sequence[str] = ()  # mapped repository path per report file ("" when unmapped)
    file_variants: Sequence[str | None] = ()  # per report file: regions-v1's own variant, if any
    mismatched: dict[int, str] = attrs.Factory(dict)  # report file index -> why its text differs
    toolchain: dict[str, str] = attrs.Factory(dict)

    def to_record(self) -> EvidenceReport:
        """What a composite records of this report (its ``artifacts``)."""
        return EvidenceReport(
            component=self.component,
            variant=self.variant,
            path=self.label,
            sha256=self.sha256,
            bytes=self.bytes,
            commit=self.commit,
            format=self.format,
            status=self.status,
            message=self.message,
            files=len(self.paths),
            source_mismatched_files=len(self.mismatched),
            toolchain=self.toolchain,
        )


@attrs.frozen
class EntryResult:
    entry: Entry
    status: str
    detail: str | None
    denominator: str  # one of DENOMINATOR_SOURCES
    identity: tuple[str | None, ...]  # content identity (git blob) of each path


@attrs.frozen
class Aggregate:
    entries: tuple[EntryResult, ...]
    entry_of_row: np.ndarray  # int32: index into entries per canonical row
    regions: dict[str, np.ndarray]  # canonical columns; ``file`` indexes ``paths``
    paths: tuple[str, ...]
    totals: dict[str, dict[str, int]]
    components: tuple[ComponentSummary, ...]
    blocking: tuple[Blocking, ...]
    remediation: Remediation
    complete: bool
    denominator_known: bool
    saturated: bool = False  # a region's summed hits were clamped at 2^63-1 (``regions.dedup``)


Carry = Callable[[list[tuple[Entry, tuple[str | None, ...]]]], dict[int, dict[str, np.ndarray]]]


def _empty() -> dict[str, np.ndarray]:
    return {c: np.zeros(0, t) for c, t in rg.COLUMNS.items()}


def aggregate(
    inv: Inventory, evidence: Sequence[Evidence], identity: dict[str, str | None], carry: Carry | None = None
) -> Aggregate:
    index = {(e.component, e.variant, e.logical_source_id): i for i, e in enumerate(inv.entries)}
    path_ix = {p: i for i, p in enumerate(sorted(inv.owners))}
    paths = tuple(sorted(inv.owners))
    reasons: dict[int, dict[str, str]] = {}
    good_keys, good_cols, weak_keys, weak_cols = [], [], [], []
    # Entries some usable evidence lists (a file with no executable code is measured, with no regions).
    listed = np.zeros(len(inv.entries), bool)
    listed_weak = np.zeros(len(inv.entries), bool)

    def note(entry: int, reason: str, detail: str) -> None:
        reasons.setdefault(entry, {}).setdefault(reason, detail)

    for ev in evidence:
        comp = inv.component(ev.component)
        if ev.status in (MALFORMED, UNSUPPORTED):
            for (c, v, _lid), at in index.items():
                if c == ev.component and v == ev.variant:
                    note(at, ev.status, f"{ev.label}: {ev.message}")
            continue
        report = ev.report
        assert report is not None
        cols = rg.canonical(report)
        n_files = len(report.files)
        entry_of_file = np.full(n_files, -1, np.int64)
        inv_file = np.full(n_files, -1, np.int32)
        weak_file = np.zeros(n_files, bool)
        for f in range(n_files):
            path = ev.paths[f]
            if not path or inv.owners.get(path) != comp.id:
                continue
            variant = (ev.file_variants[f] if f < len(ev.file_variants) else None) or ev.variant
            i = index.get((comp.id, variant, inv.logical[path]))
            if i is None:
                continue  # variant checked when the evidence was read
            entry_of_file[f] = i
            inv_file[f] = path_ix[path]
            if ev.status == STALE:
                weak_file[f] = True
                note(
                    i,
                    STALE,
                    f"{ev.label}: {ev.message}"
                    if ev.message
                    else f"{ev.label} measured commit {(ev.commit or 'unknown')[:12]}",
                )
            elif f in ev.mismatched:
                weak_file[f] = True
                note(i, SOURCE_MISMATCHED, f"{path}: {ev.mismatched[f]} ({ev.label})")
        mine = entry_of_file >= 0
        listed[entry_of_file[mine & ~weak_file]] = True
        listed_weak[entry_of_file[mine & weak_file]] = True
        keep = entry_of_file[cols["file"]] >= 0
        rows = rg.take(cols, np.flatnonzero(keep))
        key = entry_of_file[rows["file"]]
        weak = weak_file[rows["file"]]
        rows["file"] = inv_file[rows["file"]]
        good_keys.append(key[~weak])
        good_cols.append(rg.take(rows, np.flatnonzero(~weak)))
        weak_keys.append(key[weak])
        weak_cols.append(rg.take(rows, np.flatnonzero(weak)))

    def cat(
        keys: list[np.ndarray], cols: list[dict[str, np.ndarray]]
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        if not keys:
            return np.zeros(0, np.int64), _empty()
        return np.concatenate(keys), {c: np.concatenate([x[c] for x in cols]) for c in rg.COLUMNS}

    gk, gc = cat(good_keys, good_cols)
    wk, wc = cat(weak_keys, weak_cols)
    measured = listed
    ident = [tuple(identity.get(p) for p in e.paths) for e in inv.entries]
    need = [i for i in range(len(inv.entries)) if not measured[i]]
    carried = carry([(inv.entries[i], ident[i]) for i in need]) if carry and need else {}
    # ``carry`` answers by position in the list it was given.
    carried = {need[j]: cols for j, cols in carried.items()}
    has_weak = listed_weak
    parts_k, parts_c = [gk], [gc]
    results = []
    for i, entry in enumerate(inv.entries):
        if measured[i]:
            results.append(EntryResult(entry, MEASURED, None, "evidence", ident[i]))
            continue
        found = reasons.get(i, {})
        reason = next((r for r in REASON_ORDER if r in found), MISSING)
        detail = (
            found.get(reason)
            or f"no {inv.component(entry.component).format} evidence covers it in variant {entry.variant!r}"
        )
        if i in carried:
            cols = dict(carried[i])
            if "path" in cols:
                cols["file"] = np.array([path_ix[p] for p in cols.pop("path")], np.int32)
            cols["hits"] = np.zeros(len(cols["hits"]), np.int64)
            parts_k.append(np.full(len(cols["hits"]), i, np.int64))
            parts_c.append(cols)
            source = "carried"
        elif has_weak[i]:
            sel = np.flatnonzero(wk == i)
            cols = rg.take(wc, sel)
            cols["hits"] = np.zeros(len(sel), np.int64)
            parts_k.append(wk[sel])
            parts_c.append(cols)
            source = "zeroed_evidence"
        else:
            source = "unknown"
        results.append(EntryResult(entry, reason, detail, source, ident[i]))
    keys = np.concatenate(parts_k)
    cols = {c: np.concatenate([p[c] for p in parts_c]).astype(t, copy=False) for c, t in rg.COLUMNS.items()}
    keys, cols, saturated = rg.dedup(keys, cols)
    return attrs.evolve(
        _summarize(inv, tuple(results), keys.astype(np.int32), cols, paths), saturated=saturated
    )


def _summarize(
    inv: Inventory,
    results: tuple[EntryResult, ...],
    keys: np.ndarray,
    cols: dict[str, np.ndarray],
    paths: tuple[str, ...],
) -> Aggregate:
    totals = rg.tally(cols["kind"], cols["hits"])
    position = {c.id: j for j, c in enumerate(inv.components)}  # one lookup per entry, never a scan
    comp_of_entry = np.array([position[r.entry.component] for r in results], np.int32)
    by_component: dict[str, list[EntryResult]] = {c.id: [] for c in inv.components}
    for r in results:
        by_component[r.entry.component].append(r)
    comp_of_row = comp_of_entry[keys] if len(keys) else np.zeros(0, np.int32)
    components = []
    for j, c in enumerate(inv.components):
        sel = comp_of_row == j
        mine = by_component[c.id]
        components.append(
            ComponentSummary(
                id=c.id,
                language=c.language,
                format=c.format,
                variants=tuple(c.variants),
                totals=rg.tally(cols["kind"][sel], cols["hits"][sel]),
                entries=len(mine),
                measured=sum(r.status == MEASURED for r in mine),
                denominator_known=all(r.denominator != "unknown" for r in mine),
            )
        )
    blocking = tuple(
        Blocking(
            r.entry.component,
            r.entry.variant,
            r.entry.logical_source_id,
            tuple(r.entry.paths),
            r.status,
            r.detail,
            r.denominator,
        )
        for r in results
        if r.status != MEASURED
    )
    # What to measure: unmeasured entries grouped by (component, variant, reason).
    groups: dict[tuple[str, str, str], list[str]] = {}
    for b in blocking:
        groups.setdefault((b.component, b.variant, b.reason), []).append(b.logical_source_id)
    measure = [
        MeasureHint(c, v, r, len(ids), tuple(ids[:3]))
        for (c, v, r), ids in sorted(groups.items(), key=lambda kv: -len(kv[1]))
    ][:REMEDIATION_LIMIT]
    # What to test: measured entries ranked by uncovered combined regions.
    combined = np.isin(cols["kind"], rg.COMBINED_KINDS)
    uncovered = np.bincount(keys[combined & (cols["hits"] == 0)], minlength=len(results))
    found = np.bincount(keys[combined], minlength=len(results))
    ranked = sorted(
        (i for i, r in enumerate(results) if r.status == MEASURED and uncovered[i]),
        key=lambda i: (-int(uncovered[i]), results[i].entry.logical_source_id),
    )
    test = [
        TestHint(
            results[i].entry.component,
            results[i].entry.variant,
            results[i].entry.logical_source_id,
            int(uncovered[i]),
            int(found[i]),
        )
        for i in ranked[:REMEDIATION_LIMIT]
    ]
    return Aggregate(
        results,
        keys,
        cols,
        paths,
        totals,
        tuple(components),
        blocking,
        Remediation(tuple(measure), tuple(test)),
        complete=not blocking,
        denominator_known=all(r.denominator != "unknown" for r in results),
    )
