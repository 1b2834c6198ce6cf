"""``coverage_review(task="incremental")``: what a targeted run adds to a fixed baseline.

Both sides are explicit: ``measurement.snapshot_id(s)`` is the current run
(several ids are unioned, e.g. the artifacts of one run) and
``baseline={"kind": "explicit", "snapshot_id(s)"}`` the base. They must be of
this repository and of one normalized format; their suites may differ (suite,
branch, commit and execution case are provenance, not test identity). When
the commits differ, lines are followed across the git diff as in ``change``.

The primary answer is the deduplicated baseline-union-current projection: a
line counts once, hit when either side hit it. Lines are grouped:

- ``kept`` hit in both, ``gained`` hit only now, ``uncovered`` hit in neither;
- ``lost``: hit in the baseline, executable but not hit now. Only a
  ``complete`` current run supports that regression claim; from a ``subset``
  run such lines are ``not_observed`` (the selected tests may never reach them);
- ``not_observed`` also holds baseline lines the current run did not measure
  at all (a subset run, or a file it lacks): the union keeps the baseline's word;
- ``excluded``: baseline lines a complete current run no longer counts as code;
- ``added_covered`` / ``added_uncovered``: lines executable only now;
- ``deleted``: baseline lines the diff removed (out of the union).

Beside it: aggregate deltas (baseline, current, union), bounded test set
differences and the attribution of newly hit lines to named tests, each test
listed by its ``names`` (what a person or agent runs) beside its stable
``ids`` (a keyed hash of the name, the same in every answer of this store;
``names[i]`` is ``ids[i]``), and the nested ``diff``: the
twelve ``change`` categories, a replacement-style diagnostic (as if the
current run replaced the baseline).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING, Any

import attrs

from ..diffmap import KEY_SHIFT
from ..errors import CoverageError, ErrorCode, Remedy
from ..model import Snapshot
from . import baseline as baselines
from . import cursors
from .budget import RECORD_CAP, Budget, record_cap_exceeded, size
from .call import Call
from .categories import (
    CATEGORIES,
    CBC,
    DCB,
    DUB,
    ECB,
    EUB,
    GBC,
    GIC,
    GNC,
    LBC,
    UBC,
    UIC,
    UNC,
    Comparison,
    file_runs,
    named_counts,
    path_ids,
)
from .comparing import Compared, compared, scope_key
from .context import claim_for
from .selection import Selection

if TYPE_CHECKING:
    import numpy as np

GROUPS = (
    "kept",
    "gained",
    "lost",
    "not_observed",
    "uncovered",
    "added_covered",
    "added_uncovered",
    "excluded",
    "deleted",
)
KEPT, GAINED, LOST, NOT_OBSERVED, UNCOVERED, ADDED_COVERED, ADDED_UNCOVERED, EXCLUDED, DELETED = range(9)
RANGE_ORDER = (LOST, NOT_OBSERVED, ADDED_UNCOVERED, GAINED, ADDED_COVERED, EXCLUDED, DELETED)
TEST_IDS = 10  # tests listed per set difference outside audit


def _group_map(subset: bool, keep_baseline: bool) -> np.ndarray:
    """Category -> group, for a current run that is (or not) a subset, and a file it has (or not)."""
    import numpy as np

    g = np.empty(len(CATEGORIES), dtype=np.int64)
    g[[CBC, GBC, UBC]] = [KEPT, GAINED, UNCOVERED]
    g[LBC] = NOT_OBSERVED if subset else LOST
    g[[GNC, GIC]] = ADDED_COVERED
    g[[UNC, UIC]] = ADDED_UNCOVERED
    g[[ECB, EUB]] = NOT_OBSERVED if keep_baseline else EXCLUDED
    g[[DCB, DUB]] = DELETED
    return g


def _metrics(counts: np.ndarray, keep_baseline_only: np.ndarray) -> dict[str, list[int]]:
    """[hit, found] of baseline, current and union from category counts (``keep...``: ECB/EUB kept in the union)."""
    c = counts
    kept_ecb, kept_eub = keep_baseline_only
    base = [
        c[CBC] + c[LBC] + c[ECB] + c[DCB],
        c[CBC] + c[LBC] + c[GBC] + c[UBC] + c[ECB] + c[EUB] + c[DCB] + c[DUB],
    ]
    cur_found = c[CBC] + c[GBC] + c[LBC] + c[UBC] + c[GNC] + c[GIC] + c[UNC] + c[UIC]
    cur = [c[CBC] + c[GBC] + c[GNC] + c[GIC], cur_found]
    union = [cur[0] + c[LBC] + kept_ecb, cur_found + kept_ecb + kept_eub]
    out = {k: [int(v[0]), int(v[1])] for k, v in (("baseline", base), ("current", cur), ("union", union))}
    out["delta_union"] = [out["union"][0] - out["baseline"][0], out["union"][1] - out["baseline"][1]]
    out["delta_current"] = [out["current"][0] - out["baseline"][0], out["current"][1] - out["baseline"][1]]
    return out


def _same_format(sel: Selection, base: baselines.Baseline) -> None:
    formats = {s.format for s in sel.snapshots + base.snapshots}
    if len(formats) > 1:
        raise CoverageError(
            ErrorCode.INCOMPATIBLE_SNAPSHOTS,
            f"an incremental comparison needs one normalized format; these snapshots are {', '.join(sorted(formats))}",
            "Compare snapshots produced by the same coverage tool (same format), or use task='change' per format.",
            {"formats": sorted(formats)},
        )


def _arguments(call: Call) -> dict[str, Any]:
    m = call.args.get("measurement") or {}
    spec = call.args.get("baseline") or {}
    if not ("snapshot_id" in m or "snapshot_ids" in m or "run_id" in m):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "task='incremental' needs an explicit current measurement",
            "Name the run's snapshot (or snapshots) by id: the snapshots listing shows them.",
            remedy=Remedy(operation="coverage_review", arguments={"task": "snapshots"}),
        )
    # A composite baseline with an ordinary measurement goes on to baseline.resolve, which refuses it.
    if spec.get("kind") != "explicit" and "composite_snapshot_id" not in spec:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "task='incremental' needs baseline.kind='explicit' with snapshot_id(s)",
            "Name the baseline snapshot by its id; for a baseline found from git, ask the change review.",
            remedy=Remedy(
                operation="coverage_review",
                arguments={**call.args, "baseline": {"kind": "explicit", "snapshot_id": "SNAPSHOT_ID"}},
            ),
        )
    return spec


def _opaque(secret: bytes, name: str) -> str:
    return "t-" + hmac.new(secret, name.encode(), hashlib.sha256).hexdigest()[:12]


def _named(secret: bytes, names: set[str], limit: int) -> dict[str, Any]:
    """A bounded list of tests, by name (sorted) with each name's stable id beside it."""
    shown = sorted(str(n) for n in names)[:limit]
    return {
        "count": len(names),
        "names": shown,
        "ids": [_opaque(secret, n) for n in shown],
        "truncated": len(names) > limit,
    }


def _test_sets(call: Call, sel: Selection, base: baselines.Baseline, limit: int) -> dict[str, Any]:
    def names(snaps: tuple[int, ...], snapshot_ids: tuple[str, ...]) -> set[str]:
        ids = ",".join(str(s) for s in snaps)

        def read() -> set[str]:
            sql = f"SELECT DISTINCT name FROM test_names WHERE snap IN ({ids})"
            return {r[0] for r in call.rows(sql, detail=("test_names",))}

        # A snapshot's test names never change. Keyed by snapshot ids, never by the store's snap keys: a
        # deleted snapshot's key is given to the next ingest, and a read racing the deletion may store its
        # value after the memo was cleared.
        found: set[str] = call.project.store.derived.get(("test_names", snapshot_ids), read)
        return found

    b = names(base.snaps, tuple(s.snapshot_id for s in base.snapshots))
    c = names(sel.snaps, tuple(s.snapshot_id for s in sel.snapshots))
    secret = call.project.store.cursor_secret

    def bounded(items: set[str]) -> dict[str, Any]:
        return _named(secret, items, limit)

    return {
        "baseline": len(b),
        "current": len(c),
        "common": len(b & c),
        "only_current": bounded(c - b),
        "only_baseline": bounded(b - c),
    }


def _attribution(call: Call, sel: Selection, done: Compared, limit: int) -> dict[str, Any]:
    if not any(s.tests for s in sel.snapshots):
        return {
            "status": "unavailable",
            "reason": "the current snapshots carry no named tests (LCOV TN:, coverage.py contexts)",
        }
    # The same for every page and repeat of this comparison (on SQLite, 2.15M observations through two
    # np.isin): computed once, kept with the comparison.
    newly_hit, attributed, names = done.kept("attribution", lambda: _attributed(call, sel, done))
    return {
        "status": "available",
        "newly_hit_lines": newly_hit,
        "attributed_lines": attributed,
        "tests": _named(call.project.store.cursor_secret, names, limit),
    }


def _attributed(call: Call, sel: Selection, done: Compared) -> tuple[int, int, set[str]]:
    """(lines newly hit, of them those a named test ran, the names of the tests that ran them)."""
    import numpy as np

    c = done.comparison
    newly = np.isin(c.cur_cat, [GBC, GNC, GIC])
    keys = done.cur.keys[newly]
    ids = ",".join(str(s) for s in sel.snaps)
    # Keys in the current side's path index, as load_side gave them.
    _paths, mapping = path_ids(call.con, sel.snaps)
    call.restore(("test_names", "test_observations"))  # the query below runs on the connection itself
    call.con.register("_attribution_files", mapping)
    try:
        obs = call.con.execute(
            f"""SELECT DISTINCT (m.pid << {KEY_SHIFT}) | o.line AS key, n.name
                FROM test_observations o
                     JOIN _attribution_files m ON m.snap = o.snap AND m.file_id = o.file_id
                     JOIN test_names n ON n.snap = o.snap AND n.test_id = o.test_id
                WHERE o.snap IN ({ids}) AND o.kind = 0"""
        ).fetchnumpy()
    finally:
        call.con.unregister("_attribution_files")
    call.rows_scanned += len(obs["key"])
    seen = np.isin(obs["key"], keys)
    return len(keys), int(np.count_nonzero(np.isin(keys, obs["key"]))), set(obs["name"][seen])


def incremental(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    import numpy as np

    spec = _arguments(call)
    base = baselines.resolve(call, sel, spec, same_suite=False)
    _same_format(sel, base)
    done = compared(call, sel, base)
    c = done.comparison
    representation = call.args.get("representation", "compact")
    subset = any(s.scope == "subset" for s in sel.snapshots)
    p = done.kept(("incremental", subset), lambda: _Projection.of(c, subset))
    totals, kept_only = p.totals, p.kept_only
    items_keep = np.array([c.branches[ECB], c.branches[EUB]]) * subset
    fn_keep = np.array([c.functions[ECB], c.functions[EUB]]) * subset
    limit = RECORD_CAP if representation == "audit" else TEST_IDS
    data: dict[str, Any] = {
        "task": "incremental",
        "projection": "baseline_union_current",
        "baseline": _side(base.snapshots, base.commit),
        "current": _side(sel.snapshots, sel.primary.commit),
        "lines": _metrics(c.totals, kept_only),
        "branches": _metrics(c.branches, items_keep),
        "functions": _metrics(c.functions, fn_keep),
        "categories": {g: int(v) for g, v in zip(GROUPS, totals)},
        "regression": {
            "status": ("not_observed" if subset else "regression") if c.totals[LBC] else "none",
            "lines": int(c.totals[LBC]),
        },
        "tests": _test_sets(call, sel, base, limit),
        "attribution": _attribution(call, sel, done, limit),
        "diff": {
            "replacement": True,
            # From a subset run its LBC is not_observed here too: never a loss beside the union's word.
            "categories": named_counts(c.totals, every=True, subset=subset),
            "patch": {"found": int(c.totals[UNC] + c.totals[GNC]), "hit": int(c.totals[GNC])},
        },
    }
    claim = claim_for(call, sel.primary)
    reasons = list(base.notes) + list(done.notes) + claim["reasons"]
    if subset:
        reasons.append(
            "the current run is a subset: baseline coverage it did not reach is not_observed, not lost"
        )
    data.update({"claim_status": claim["claim_status"], "reasons": reasons})
    return _paged(call, sel, base, c, p, subset, data, budget, representation)


def _side(snapshots: tuple[Snapshot, ...], commit: str | None) -> dict[str, Any]:
    return {
        "snapshot_ids": [s.snapshot_id for s in snapshots],
        "suites": sorted({s.suite for s in snapshots}),
        "commit": (commit or "")[:12] or None,
        "scope": "subset" if any(s.scope == "subset" for s in snapshots) else "complete",
    }


@attrs.frozen(eq=False)
class _Projection:
    """What the projection of one comparison is, whatever the page: per file its group counts and whether
    the union keeps its baseline-only lines, the totals, and the files in the order pages list them. Kept
    with the comparison (``Compared.kept``): on 100,000 files it cost about 60 ms of every call."""

    per_group: np.ndarray  # (files, groups)
    keep: np.ndarray  # bool per file
    totals: np.ndarray  # (groups,)
    kept_only: np.ndarray  # (ECB, EUB) lines the union keeps
    ranked: np.ndarray  # indices of the files with a moving group, most in need of attention first

    @classmethod
    def of(cls, c: Comparison, subset: bool) -> _Projection:
        import numpy as np

        keep = subset | ~c.in_current  # per file: the union keeps its baseline-only lines
        per_group = np.empty((len(c.paths), len(GROUPS)), dtype=np.int64)
        for flag in (False, True):
            rows = keep == flag
            onehot = np.zeros((len(CATEGORIES), len(GROUPS)), dtype=np.int64)  # category -> its group
            onehot[np.arange(len(CATEGORIES)), _group_map(subset, flag)] = 1
            per_group[rows] = c.per_file[rows].astype(np.int64, copy=False) @ onehot
        moving = per_group[
            :, [GAINED, LOST, NOT_OBSERVED, ADDED_COVERED, ADDED_UNCOVERED, EXCLUDED, DELETED]
        ].sum(axis=1)
        idx = np.flatnonzero(moving > 0)
        order = np.lexsort(
            (
                idx,
                -per_group[idx, GAINED],
                -per_group[idx, ADDED_UNCOVERED],
                -(per_group[idx, LOST] + per_group[idx, NOT_OBSERVED]),
            )
        )
        return cls(
            per_group=per_group,
            keep=keep,
            totals=per_group.sum(axis=0),
            kept_only=c.per_file[keep][:, [ECB, EUB]].sum(axis=0),
            ranked=idx[order],
        )


def _paged(
    call: Call,
    sel: Selection,
    base: baselines.Baseline,
    c: Comparison,
    p: _Projection,
    subset: bool,
    data: dict[str, Any],
    budget: Budget,
    representation: str,
) -> dict[str, Any]:
    scope = scope_key(sel, base)
    offset = cursors.decode(call, "incremental", scope, call.args.get("cursor"))
    if budget.max_files > RECORD_CAP:
        raise record_cap_exceeded("incremental", budget.max_files)
    per_group, keep, ranked = p.per_group, p.keep, p.ranked
    page_idx = ranked[offset : offset + budget.max_files]

    def row(f: int) -> Any:
        g = per_group[f]
        if representation == "compact":
            return [c.paths[f], int(g[GAINED]), int(g[LOST]), int(g[NOT_OBSERVED]), int(g[ADDED_UNCOVERED])]
        every = representation == "audit"
        return {"path": c.paths[f], "lines": {n: int(v) for n, v in zip(GROUPS, g) if every or v}}

    if representation == "compact":
        data["legend"] = {
            "files": "[path, gained, lost, not_observed, added_uncovered]",
            "ranges": "[path, group, start, end, line_count]",
        }
    data["ranges_truncated"] = False
    data["ranges"] = []
    shown = budget.fit_list(data, "files", [row(int(f)) for f in page_idx])
    if len(page_idx) and not shown:
        data["files"] = [row(int(page_idx[0]))]
        raise budget.too_small(*size(data))
    found = []
    for rank, f in enumerate(page_idx[:shown]):
        groups = _group_map(subset, bool(keep[f]))
        found += [
            (RANGE_ORDER.index(r[0]), rank, r[1], int(f), r)
            for r in file_runs(c, int(f), groups, groups, RANGE_ORDER)
        ]
    found.sort(key=lambda t: t[:3])
    cap = RECORD_CAP if representation == "audit" else budget.max_regions
    rendered = []
    for _o, _r, _s, f, (code, a, b, n) in found[:cap]:
        rendered.append(
            [c.paths[f], GROUPS[code], a, b, n]
            if representation == "compact"
            else {"path": c.paths[f], "group": GROUPS[code], "start": a, "end": b, "line_count": n}
        )
    listed = budget.fit_list(data, "ranges", rendered)
    data["ranges_truncated"] = listed < len(found)
    next_offset = offset + shown
    return {
        "data": data,
        "page": {
            "offset": offset,
            "files": shown,
            "total_files": len(ranked),
            "next_cursor": cursors.encode(call, "incremental", scope, next_offset)
            if next_offset < len(ranked)
            else None,
        },
    }
