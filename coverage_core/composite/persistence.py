"""Composite snapshots in the project store: one transaction per composite, reads by id.

Rows are inserted from NumPy columns (``storage.store._bulk``) under the
store's write lock; a failure rolls the whole composite back. Composite rows
are independent of ordinary snapshots and of their detail compaction.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from collections.abc import Sequence
from typing import Any

import attrs
import duckdb
import numpy as np

from ..errors import CoverageError, ErrorCode, Remedy
from ..model import from_json, to_json
from ..storage.store import ProjectStore, bulk_insert
from ..storage.transactions import transaction
from . import regions as rg
from .aggregate import Aggregate, Carry
from .inventory import Entry
from .records import (
    Blocking,
    ComponentSummary,
    EvidenceReport,
    Registration,
    Remediation,
    Totals,
)

COMPOSITE_PREFIX = "comp-"
COMPOSITE_ID_PATTERN = r"^comp-[0-9a-f]{1,64}$"
_ID = re.compile(COMPOSITE_ID_PATTERN)


def new_composite_id() -> str:
    return COMPOSITE_PREFIX + secrets.token_hex(8)


@attrs.frozen
class CompositeProvenance:
    inventory_sha256: str
    inventory_path: str
    commit: str | None
    dirty: bool
    branch: str | None
    worktree_id: str
    worktree_path: str
    provenance: str = "import"
    registration: Registration | None = None
    toolchains: dict[str, str] = attrs.Factory(dict)
    artifacts: tuple[EvidenceReport, ...] = ()


# Entries a withheld total names at most (``count`` says how many there are).
MAX_WITHHELD_NAMED = 50


@attrs.frozen
class Composite:
    """A stored composite snapshot's record (what every surface shows)."""

    composite_id: str
    created_at: dt.datetime
    mapping_version: str
    inventory_sha256: str
    inventory_path: str
    commit: str | None
    dirty: bool
    branch: str | None
    worktree_path: str
    provenance: str
    registration: Registration | None
    toolchains: dict[str, str]
    artifacts: tuple[EvidenceReport, ...]
    status: str
    denominator_known: bool
    totals: Totals
    components: tuple[ComponentSummary, ...]
    blocking: tuple[Blocking, ...]
    remediation: Remediation
    # Some region's hits summed past 2^63-1 and are kept at that maximum (coverage_core.counts).
    saturated: bool = False
    # Not stored: this answer is an earlier composite of the same evidence (``identical``), not a new one.
    duplicate: bool = False

    def percent(self) -> float | None:
        """The combined percentage; None when nothing is found or when some entry's denominator is unknown
        (no evidence and nothing to carry from: any figure would be over a denominator too small)."""
        c = self.totals["combined"]
        if not c["found"] or not self.denominator_known:
            return None
        return round(100.0 * c["hit"] / c["found"], 2)

    def total_withheld(self) -> dict[str, Any] | None:
        """Why no total is stated, naming the entries whose denominator nobody measured; None when one is."""
        unknown = [b for b in self.blocking if b.denominator == "unknown"]
        if self.denominator_known or not unknown:
            return None
        return {
            "reason": "denominator_unknown",
            "count": len(unknown),
            "entries": [
                {"component": b.component, "variant": b.variant, "logical_source_id": b.logical_source_id}
                for b in unknown[:MAX_WITHHELD_NAMED]
            ],
            "truncated": len(unknown) > MAX_WITHHELD_NAMED,
        }

    def to_dict(self, *, blocking_limit: int | None = None) -> dict[str, Any]:
        shown = self.blocking if blocking_limit is None else self.blocking[:blocking_limit]
        return {
            "composite_snapshot_id": self.composite_id,
            "created_at": self.created_at.isoformat(),
            "mapping_version": self.mapping_version,
            "inventory_sha256": self.inventory_sha256,
            "inventory_path": self.inventory_path,
            "commit": self.commit,
            "dirty": self.dirty,
            "branch": self.branch,
            "worktree_path": self.worktree_path,
            "provenance": self.provenance,
            "registration": to_json(self.registration),
            "toolchains": self.toolchains,
            "artifacts": to_json(self.artifacts),
            "status": self.status,
            "denominator_known": self.denominator_known,
            "percent": self.percent(),
            "total_withheld": self.total_withheld(),
            "totals": self.totals,
            "components": to_json(self.components),
            "blocking": to_json(shown),
            "blocking_total": len(self.blocking),
            "blocking_truncated": len(shown) < len(self.blocking),
            "remediation": to_json(self.remediation),
            "saturated": self.saturated,
        }

    def compact(self) -> dict[str, Any]:
        """project_context's line: identity, status and the combined figure."""
        return {
            "composite_snapshot_id": self.composite_id,
            "created_at": self.created_at.isoformat(),
            "commit": self.commit,
            "dirty": self.dirty,
            "status": self.status,
            "percent": self.percent(),
            "total_withheld": self.total_withheld(),
            "combined": self.totals["combined"],
            "blocking": len(self.blocking),
            "inventory_sha256": self.inventory_sha256,
            "mapping_version": self.mapping_version,
        }


_COLUMNS = (
    "composite_id, created_at, mapping_version, inventory_sha256, inventory_path, commit_sha, dirty, branch, "
    "worktree_path, provenance, registration, toolchains, artifacts, status, denominator_known, totals, "
    "components, blocking, remediation, saturated"
)


def _record(row: tuple[Any, ...]) -> Composite:
    def j(v: Any) -> Any:
        return json.loads(v) if isinstance(v, str) else v

    # The ten plain columns, then the decoded ones (one starred tuple: mypy cannot count a sliced row).
    decoded = (
        from_json(j(row[10]), Registration | None),
        j(row[11]),
        from_json(j(row[12]), tuple[EvidenceReport, ...]),
        row[13],
        bool(row[14]),
        j(row[15]),
        from_json(j(row[16]), tuple[ComponentSummary, ...]),
        from_json(j(row[17]), tuple[Blocking, ...]),
        from_json(j(row[18]), Remediation),
        bool(row[19]),
    )
    return Composite(*(row[:10] + decoded))


def save(store: ProjectStore, agg: Aggregate, prov: CompositeProvenance, *, also: Any = None) -> Composite:
    """Store ``agg`` as one immutable composite snapshot, in one transaction (with ``also(con, composite_id)``'s
    rows, when given)."""
    now = dt.datetime.now(dt.UTC)
    composite_id = new_composite_id()
    with store._write_lock:
        con = store.con
        with transaction(con):
            comp = con.execute("SELECT coalesce(max(comp), 0) + 1 FROM composite_snapshots").fetchall()[0][0]
            con.execute(
                f"INSERT INTO composite_snapshots (comp, worktree_id, {_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    comp,
                    prov.worktree_id,
                    composite_id,
                    now,
                    rg.MAPPING_VERSION,
                    prov.inventory_sha256,
                    prov.inventory_path,
                    prov.commit,
                    prov.dirty,
                    prov.branch,
                    prov.worktree_path,
                    prov.provenance,
                    None if prov.registration is None else json.dumps(to_json(prov.registration)),
                    json.dumps(prov.toolchains),
                    json.dumps(to_json(prov.artifacts)),
                    "complete" if agg.complete else "incomplete",
                    agg.denominator_known,
                    json.dumps(agg.totals),
                    json.dumps(to_json(agg.components)),
                    json.dumps(to_json(agg.blocking)),
                    json.dumps(to_json(agg.remediation)),
                    agg.saturated,
                ],
            )
            n = len(agg.entries)
            if n:
                _bulk(
                    con,
                    "composite_entries",
                    comp,
                    {
                        "entry_id": np.arange(n, dtype=np.int32),
                        "component": np.array([r.entry.component for r in agg.entries], dtype=object),
                        "variant": np.array([r.entry.variant for r in agg.entries], dtype=object),
                        "logical_source_id": np.array(
                            [r.entry.logical_source_id for r in agg.entries], dtype=object
                        ),
                        "paths": _lists([list(r.entry.paths) for r in agg.entries]),
                        "identities": _lists([[i or "" for i in r.identity] for r in agg.entries]),
                        "status": np.array([r.status for r in agg.entries], dtype=object),
                        "detail": np.array([r.detail for r in agg.entries], dtype=object),
                        "denominator": np.array([r.denominator for r in agg.entries], dtype=object),
                    },
                )
            cols = agg.regions
            if len(cols["kind"]):
                order = np.lexsort(
                    (cols["item"], cols["start_col"], cols["start_line"], cols["kind"], agg.entry_of_row)
                )
                paths = np.array(agg.paths, dtype=object)
                _bulk(
                    con,
                    "composite_regions",
                    comp,
                    {
                        "entry_id": agg.entry_of_row[order],
                        "path": paths[cols["file"][order]],
                        **{
                            c: cols[c][order]
                            for c in (
                                "kind",
                                "start_line",
                                "start_col",
                                "end_line",
                                "end_col",
                                "item",
                                "hits",
                            )
                        },
                    },
                )
            if also is not None:
                also(con, composite_id)
    return get(store, composite_id)


def _bulk(con: duckdb.DuckDBPyConnection, table: str, comp: int, columns: dict[str, np.ndarray]) -> None:
    bulk_insert(con, table, ("comp", comp), columns)


def _lists(values: Sequence[Sequence[str | None]]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def _con(store: ProjectStore, con: duckdb.DuckDBPyConnection | None) -> duckdb.DuckDBPyConnection:
    return con if con is not None else store.con


def key(store: ProjectStore, composite_id: str, con: duckdb.DuckDBPyConnection | None = None) -> int:
    """The internal key of the composite ``composite_id`` names (a full id or a unique prefix)."""
    if (
        not isinstance(composite_id, str)
        or not composite_id.startswith(COMPOSITE_PREFIX)
        or not re.match(r"^comp-[0-9a-f]{1,64}$", composite_id)
    ):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{composite_id!r} is not a composite snapshot id (comp-<hex>)",
            "Use the id of a stored composite: the project's context names the latest one.",
            {"composite_snapshot_id": composite_id},
            Remedy(operation="project_context", arguments={}),
        )
    rows = (
        _con(store, con)
        .execute(
            "SELECT comp FROM composite_snapshots WHERE starts_with(composite_id, ?) ORDER BY comp LIMIT 2",
            [composite_id],
        )
        .fetchall()
    )
    if len(rows) != 1:
        raise CoverageError(
            ErrorCode.NOT_FOUND if not rows else ErrorCode.INVALID_ARGUMENT,
            f"no composite snapshot {composite_id!r} in this repository's store"
            if not rows
            else f"composite id prefix {composite_id!r} is ambiguous",
            "Use the full id of a stored composite: the project's context names the latest one.",
            {"composite_snapshot_id": composite_id},
            Remedy(operation="project_context", arguments={}),
        )
    return int(rows[0][0])


def get(store: ProjectStore, composite_id: str, con: duckdb.DuckDBPyConnection | None = None) -> Composite:
    comp = key(store, composite_id, con)
    row = (
        _con(store, con)
        .execute(f"SELECT {_COLUMNS} FROM composite_snapshots WHERE comp = ?", [comp])
        .fetchall()[0]  # key() found it
    )
    return _record(row)


def identical(store: ProjectStore, agg: Aggregate, prov: CompositeProvenance) -> Composite | None:
    """The stored composite an import of the same evidence made before, marked ``duplicate``: the same
    inventory, commit, tree state and worktree, the same reports (by content) and the same answer. A
    managed run's composite is never one (each run records its own)."""
    if prov.provenance != "import" or prov.registration is not None:
        return None
    rows = (
        store.con.cursor()
        .execute(
            f"SELECT {_COLUMNS} FROM composite_snapshots WHERE inventory_sha256 = ? AND commit_sha IS NOT DISTINCT "
            "FROM ? AND dirty = ? AND worktree_id = ? AND provenance = 'import' AND registration IS NULL "
            "ORDER BY comp DESC",
            [prov.inventory_sha256, prov.commit, prov.dirty, prov.worktree_id],
        )
        .fetchall()
    )

    wanted = (prov.artifacts, agg.totals, agg.components, agg.blocking)
    for row in rows:
        found = _record(row)
        if (
            found.mapping_version == rg.MAPPING_VERSION
            and (found.artifacts, found.totals, found.components, found.blocking) == wanted
            and found.status == ("complete" if agg.complete else "incomplete")
        ):
            return attrs.evolve(found, duplicate=True)
    return None


def latest(store: ProjectStore, con: duckdb.DuckDBPyConnection | None = None) -> Composite | None:
    row = (
        _con(store, con)
        .execute(f"SELECT {_COLUMNS} FROM composite_snapshots ORDER BY comp DESC LIMIT 1")
        .fetchone()
    )
    return None if row is None else _record(row)


def regions(
    store: ProjectStore, comp: int, con: duckdb.DuckDBPyConnection | None = None
) -> dict[str, np.ndarray]:
    """Every canonical row of a composite (exact counts need them all), as NumPy columns."""
    rel = _con(store, con).execute(
        "SELECT r.entry_id, e.component, e.variant, e.logical_source_id, r.path, r.kind, r.start_line, r.start_col, "
        "r.end_line, r.end_col, r.item, r.hits FROM composite_regions r JOIN composite_entries e "
        "ON e.comp = r.comp AND e.entry_id = r.entry_id WHERE r.comp = ? ORDER BY r.entry_id, r.kind, r.start_line, "
        "r.start_col, r.item",
        [comp],
    )
    return {k: np.asarray(v) for k, v in rel.fetchnumpy().items()}


def carry_from_earlier(store: ProjectStore, inventory_sha256: str) -> Carry:
    """The ``carry`` callback of ``aggregate``: for each entry, the canonical regions of the newest composite of
    the same inventory and mapping version that measured it on the same text (same content identities). One
    query for all entries."""

    def carry(wanted: list[tuple[Entry, tuple[str | None, ...]]]) -> dict[int, dict[str, np.ndarray]]:
        keep = [j for j, (_, identity) in enumerate(wanted) if all(i is not None for i in identity)]
        if not keep:
            return {}
        con = store.cursor()
        try:
            con.register(
                "_carry_wanted",
                {
                    "j": np.array(keep, dtype=np.int32),
                    "component": np.array([wanted[j][0].component for j in keep], dtype=object),
                    "variant": np.array([wanted[j][0].variant for j in keep], dtype=object),
                    "logical_source_id": np.array(
                        [wanted[j][0].logical_source_id for j in keep], dtype=object
                    ),
                    "identities": _lists([list(wanted[j][1]) for j in keep]),
                },
            )
            rel = con.execute(
                "WITH m AS (SELECT w.j, e.comp, e.entry_id, row_number() OVER (PARTITION BY w.j ORDER BY e.comp DESC) "
                "AS rn FROM _carry_wanted w JOIN composite_entries e ON e.component = w.component "
                "AND e.variant = w.variant AND e.logical_source_id = w.logical_source_id "
                "AND e.identities = w.identities AND e.status = 'measured' "
                "JOIN composite_snapshots s ON s.comp = e.comp AND s.inventory_sha256 = ? AND s.mapping_version = ?) "
                "SELECT m.j, r.path, r.kind, r.start_line, r.start_col, r.end_line, r.end_col, r.item, r.hits "
                "FROM m LEFT JOIN composite_regions r ON r.comp = m.comp AND r.entry_id = m.entry_id WHERE m.rn = 1 "
                "ORDER BY m.j",
                [inventory_sha256, rg.MAPPING_VERSION],
            ).fetchnumpy()
            con.unregister("_carry_wanted")
        finally:
            con.close()
        j = np.asarray(rel["j"])
        if not len(j):
            return {}
        # An entry measured with no regions (a file without code) comes back as one row of NULLs.
        real = ~np.ma.getmaskarray(rel["kind"])
        starts = np.flatnonzero(np.r_[True, j[1:] != j[:-1]])
        ends = np.r_[starts[1:], len(j)]
        cols = {
            "path": np.asarray(rel["path"], dtype=object),
            **{c: np.ma.getdata(rel[c]).astype(t) for c, t in rg.COLUMNS.items() if c != "file"},
        }
        return {int(j[a]): {c: v[a:b][real[a:b]] for c, v in cols.items()} for a, b in zip(starts, ends)}

    return carry
