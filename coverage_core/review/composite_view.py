"""``coverage_review`` over composite snapshots: insight, change and incremental.

Answers read stored canonical rows only. Comparisons require both composites
to share the mapping version and the inventory hash (else
``incompatible_snapshots``) and count categories over every canonical row of
both sides in DuckDB before any response limit applies; only the example
lists are bounded. Region identity across composites is (component, variant,
logical source, kind, span, item): an edited source's moved regions count as
removed and new, as the same text's regions in two commits would not line up.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import CoverageError, ErrorCode, Remedy
from ..model import to_json
from .budget import Budget
from .call import Call
from .context import checkout_state

if TYPE_CHECKING:
    import numpy as np

    from ..composite.persistence import Composite


# The composites' modules, imported on the first composite answer: importing any of them builds the whole
# package (its builder, inventory and aggregation: 35-60 ms), which a review of ordinary snapshots (every
# CI ``gate``) never needs.
def _cstore() -> ModuleType:
    from ..composite import persistence

    return persistence


def _rg() -> ModuleType:
    from ..composite import regions

    return regions


CATEGORIES = (
    "covered_both",
    "uncovered_both",
    "gained",
    "lost",
    "new_covered",
    "new_uncovered",
    "removed_covered",
    "removed_uncovered",
)
LEGEND = {
    "ranges": "[start_line, end_line, line_count] of uncovered code and branch regions",
    "categories": "per kind and combined: regions in both composites (covered_both, uncovered_both, gained: "
    "uncovered -> covered, lost: covered -> uncovered), only in the current one (new_*), only in the "
    "baseline (removed_*)",
    "kinds": "code, branch, function; combined = code + branch (docs/composite-inventory.md)",
}
MAX_BLOCKING = 10
RANGES_PER_TARGET = 3
COMPOSITE_TASKS = ("insight", "change", "incremental")
NO_NAMED_TESTS = (
    "a composite snapshot stores no named-test observations (its reports' per-test data is not kept); "
    "compare ordinary snapshots of the reports for test sets and attribution"
)


def wants_composite(args: dict[str, Any]) -> bool:
    m = args.get("measurement") or {}
    b = args.get("baseline") or {}
    return "composite_snapshot_id" in m or "composite_snapshot_id" in b


def claim(call: Call, comp: Composite) -> dict[str, Any]:
    state = checkout_state(call)
    status, reasons = "supported", []
    if comp.commit != state.head:
        status = "stale"
        reasons.append(
            f"composite measured {(comp.commit or 'no commit')[:12]}, HEAD is {(state.head or 'unborn')[:12]}"
        )
    limited = []
    if comp.status != "complete":
        why = sorted({b.reason for b in comp.blocking})
        limited.append(
            f"incomplete: {len(comp.blocking)} inventory entries lack usable evidence ({', '.join(why)})"
        )
    if not comp.denominator_known:
        limited.append(
            "the denominator of some entries is unknown (no earlier composite measured their text)"
        )
    if comp.dirty:
        limited.append("built on a tree with uncommitted tracked changes")
    if limited and status == "supported":
        status = "limited"
    return {"claim_status": status, "reasons": reasons + limited}


def summary(comp: Composite) -> dict[str, Any]:
    d = comp.to_dict(blocking_limit=MAX_BLOCKING)
    for k in ("artifacts", "registration", "worktree_path", "created_at"):
        d.pop(k, None)
    d["remediation"] = to_json(comp.remediation.first(3))
    return d


def review(call: Call, budget: Budget) -> dict[str, Any]:
    task = call.args["task"]
    if task not in COMPOSITE_TASKS:
        raise CoverageError(
            ErrorCode.NOT_SUPPORTED,
            f"task={task} reads ordinary snapshots; composites answer {', '.join(COMPOSITE_TASKS)}",
            "Ask task=insight, change or incremental of the composite, or name ordinary snapshots.",
            {"task": task},
        )
    m = call.args.get("measurement") or {}
    if "composite_snapshot_id" not in m:
        raise CoverageError(
            ErrorCode.INCOMPATIBLE_SNAPSHOTS,
            "a composite baseline compares with a composite measurement",
            'Pass measurement={"composite_snapshot_id": ...} too, or an ordinary baseline.',
        )
    store = call.project.store
    comp_key = _cstore().key(store, m["composite_snapshot_id"], call.con)
    current = _cstore().get(store, m["composite_snapshot_id"], call.con)
    if task == "insight":
        return _insight(call, budget, comp_key, current)
    spec = call.args.get("baseline") or {}
    if spec.get("kind") != "explicit" or "composite_snapshot_id" not in spec:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f'task={task} of a composite needs baseline {{"kind": "explicit", "composite_snapshot_id": ...}}',
            "Name the baseline composite by id (project_context shows the latest composite).",
            {"baseline": spec},
            Remedy(
                operation="coverage_review",
                arguments={
                    **call.args,
                    "baseline": {"kind": "explicit", "composite_snapshot_id": "COMPOSITE_SNAPSHOT_ID"},
                },
            ),
        )
    base_key = _cstore().key(store, spec["composite_snapshot_id"], call.con)
    base = _cstore().get(store, spec["composite_snapshot_id"], call.con)
    for what, a, b in (
        ("mapping version", base.mapping_version, current.mapping_version),
        ("inventory hash", base.inventory_sha256, current.inventory_sha256),
    ):
        if a != b:
            raise CoverageError(
                ErrorCode.INCOMPATIBLE_SNAPSHOTS,
                f"composites {base.composite_id} and {current.composite_id} differ in {what} ({a[:16]} vs {b[:16]})",
                "Compare composites built with the same inventory (same content) and the same coverage-mcp mapping.",
                {
                    "baseline": {
                        "mapping_version": base.mapping_version,
                        "inventory_sha256": base.inventory_sha256,
                    },
                    "current": {
                        "mapping_version": current.mapping_version,
                        "inventory_sha256": current.inventory_sha256,
                    },
                },
            )
    return _compare(call, budget, task, base_key, base, comp_key, current)


def _ranges(start: np.ndarray, end: np.ndarray) -> list[list[int]]:
    """Merged line ranges of regions, as [start, end, line_count], in line order."""
    import numpy as np

    order = np.argsort(start, kind="stable")
    out: list[list[int]] = []
    for s, e in zip(start[order].tolist(), end[order].tolist()):
        if out and s <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [[s, e, e - s + 1] for s, e in out]


def _insight(call: Call, budget: Budget, comp_key: int, comp: Composite) -> dict[str, Any]:
    import numpy as np

    rows = _cstore().regions(call.project.store, comp_key, call.con)
    call.rows_scanned += len(rows["kind"])
    sel = np.isin(rows["kind"], _rg().COMBINED_KINDS)
    entry = rows["entry_id"]
    uncovered = sel & (rows["hits"] == 0)
    counts = np.bincount(entry[uncovered], minlength=int(entry.max()) + 1 if len(entry) else 0)
    found = np.bincount(entry[sel], minlength=len(counts))
    # Rows arrive ordered by entry: each entry's rows are one slice.
    bounds = np.searchsorted(entry, np.arange(len(counts) + 1))
    targets = []
    for e in sorted(np.flatnonzero(counts), key=lambda i: (-int(counts[i]), int(i))):
        a, b = int(bounds[e]), int(bounds[e + 1])
        mine = uncovered[a:b]
        ranges = _ranges(rows["start_line"][a:b][mine], rows["end_line"][a:b][mine])
        targets.append(
            {
                "component": str(rows["component"][a]),
                "variant": str(rows["variant"][a]),
                "logical_source_id": str(rows["logical_source_id"][a]),
                "path": str(rows["path"][a]),
                "uncovered": int(counts[e]),
                "found": int(found[e]),
                "ranges": ranges[:RANGES_PER_TARGET],
                "region_count": len(ranges),
                "regions_truncated": len(ranges) > RANGES_PER_TARGET,
            }
        )
    data: dict[str, Any] = {
        "task": "insight",
        **claim(call, comp),
        "composite": summary(comp),
        "target_count": len(targets),
        "legend": LEGEND,
    }
    shown = budget.fit_list(data, "targets", targets[: budget.max_regions])
    data["targets_truncated"] = shown < len(targets)
    return {"data": data, "page": None}


_JOIN = """
WITH b AS (
    SELECT e.component, e.variant, e.logical_source_id, r.kind, r.start_line, r.start_col, r.end_line, r.end_col,
           r.item, r.hits, r.path
    FROM composite_regions r JOIN composite_entries e ON e.comp = r.comp AND e.entry_id = r.entry_id
    WHERE r.comp = ?),
c AS (
    SELECT e.component, e.variant, e.logical_source_id, r.kind, r.start_line, r.start_col, r.end_line, r.end_col,
           r.item, r.hits, r.path
    FROM composite_regions r JOIN composite_entries e ON e.comp = r.comp AND e.entry_id = r.entry_id
    WHERE r.comp = ?),
j AS (
    SELECT coalesce(c.component, b.component) AS component, coalesce(c.variant, b.variant) AS variant,
           coalesce(c.logical_source_id, b.logical_source_id) AS logical_source_id,
           coalesce(c.path, b.path) AS path, coalesce(c.kind, b.kind) AS kind,
           coalesce(c.start_line, b.start_line) AS start_line, coalesce(c.end_line, b.end_line) AS end_line,
           b.hits AS base_hits, c.hits AS cur_hits,
           CASE
             WHEN b.hits IS NULL THEN CASE WHEN c.hits > 0 THEN 'new_covered' ELSE 'new_uncovered' END
             WHEN c.hits IS NULL THEN CASE WHEN b.hits > 0 THEN 'removed_covered' ELSE 'removed_uncovered' END
             WHEN b.hits > 0 AND c.hits > 0 THEN 'covered_both'
             WHEN b.hits > 0 THEN 'lost'
             WHEN c.hits > 0 THEN 'gained'
             ELSE 'uncovered_both'
           END AS category
    FROM c FULL OUTER JOIN b USING (component, variant, logical_source_id, kind, start_line, start_col, end_line,
                                    end_col, item))
"""


def _compare(
    call: Call, budget: Budget, task: str, base_key: int, base: Composite, cur_key: int, current: Composite
) -> dict[str, Any]:
    con = call.con
    counts = con.execute(
        _JOIN + "SELECT kind, category, count(*) FROM j GROUP BY ALL", [base_key, cur_key]
    ).fetchall()
    scanned = con.execute(
        "SELECT count(*) FROM composite_regions WHERE comp IN (?, ?)", [base_key, cur_key]
    ).fetchall()[0][0]
    call.rows_scanned += int(scanned)
    categories: dict[str, dict[str, int]] = {
        name: dict.fromkeys(CATEGORIES, 0) for name in (*_rg().KINDS.values(), "combined")
    }
    for kind, category, n in counts:
        categories[_rg().KINDS[int(kind)]][category] += int(n)
        if int(kind) in _rg().COMBINED_KINDS:
            categories["combined"][category] += int(n)
    delta = {
        k: {
            "found": current.totals[k]["found"] - base.totals[k]["found"],
            "hit": current.totals[k]["hit"] - base.totals[k]["hit"],
        }
        for k in current.totals
    }
    components = []
    for c in current.components:
        b = next((x for x in base.components if x.id == c.id), None)
        cc, bc = c.totals["combined"], (b.totals["combined"] if b else {"found": 0, "hit": 0})
        components.append(
            {
                "id": c.id,
                "language": c.language,
                "current": cc,
                "baseline": bc,
                "delta": {"found": cc["found"] - bc["found"], "hit": cc["hit"] - bc["hit"]},
            }
        )
    examples = con.execute(
        _JOIN
        + "SELECT category, component, variant, logical_source_id, path, kind, start_line, end_line FROM j "
        "WHERE category IN ('lost', 'new_uncovered') AND kind IN (0, 1) "
        "ORDER BY category = 'lost' DESC, component, variant, path, start_line LIMIT ?",
        [base_key, cur_key, max(1, budget.max_regions)],
    ).fetchall()
    ranges = [
        {
            "category": r[0],
            "component": r[1],
            "variant": r[2],
            "logical_source_id": r[3],
            "path": r[4],
            "kind": _rg().KINDS[int(r[5])],
            "range": [int(r[6]), int(r[7]), int(r[7]) - int(r[6]) + 1],
        }
        for r in examples
    ]
    cl, bl = claim(call, current), claim(call, base)
    reasons = cl["reasons"] + [f"baseline: {r}" for r in bl["reasons"] if r.startswith("incomplete")]
    status = cl["claim_status"]
    if base.status != "complete" and status == "supported":
        status = "limited"
    data: dict[str, Any] = {
        "task": task,
        "claim_status": status,
        "reasons": reasons,
        "baseline": {
            "composite_snapshot_id": base.composite_id,
            "commit": base.commit,
            "status": base.status,
            "totals": base.totals,
        },
        "current": {
            "composite_snapshot_id": current.composite_id,
            "commit": current.commit,
            "status": current.status,
            "totals": current.totals,
        },
        "categories": categories,
        "comparison": {
            "mapping_version": current.mapping_version,
            "inventory_sha256": current.inventory_sha256,
            "delta": delta,
            "components": components,
        },
        "legend": LEGEND,
    }
    if task == "incremental":
        union = con.execute(
            _JOIN + "SELECT kind, count(*), count(*) FILTER (WHERE cur_hits > 0 OR base_hits > 0) FROM j "
            "WHERE cur_hits IS NOT NULL GROUP BY kind",
            [base_key, cur_key],
        ).fetchall()
        tally = {name: {"found": 0, "hit": 0} for name in (*_rg().KINDS.values(), "combined")}
        for kind, found, hit in union:
            tally[_rg().KINDS[int(kind)]] = {"found": int(found), "hit": int(hit)}
            if int(kind) in _rg().COMBINED_KINDS:
                tally["combined"]["found"] += int(found)
                tally["combined"]["hit"] += int(hit)
        data["projection"] = "baseline_union_current"
        data["comparison"]["union"] = tally
        data["diff"] = {"categories": categories, "delta": delta}
        # A composite keeps canonical regions, not its reports' named-test observations (README, Composite
        # coverage): the test sets and the attribution are stated unavailable, never left out.
        data["tests"] = {"status": "unavailable", "reason": NO_NAMED_TESTS}
        data["attribution"] = {"status": "unavailable", "reason": NO_NAMED_TESTS}
    budget.fit_list(data, "ranges", ranges)
    data["ranges_truncated"] = len(data["ranges"]) < sum(
        categories["combined"][k] for k in ("lost", "new_uncovered")
    )
    return {"data": data, "page": None}
