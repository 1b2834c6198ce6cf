"""``coverage_review(task="change")``: what a change did to coverage, against a baseline.

The answer counts every executable line of both measurements in lcov's twelve
differential categories (``categories``: ``data.categories``), with branch and
function counts beside them, patch coverage (``data.patch``: added and changed
executable lines, hit or not; the figure diff-cover reports), per-file rows
ranked by what needs attention (UNC, LBC, UIC) and grouped line ranges per
category, UNC and LBC first. Files are paged with ``page.next_cursor``.

Evidence rules:
- A file the current measurement lacks is ``not_measured``, never unchanged;
  when it is code the suites measure (the baseline had it, or its extension is
  one they measure) the claim is ``limited``.
- LBC is a regression only when the current measurement is ``complete``; from
  a ``subset`` run it is ``not_observed`` (``data.regression.status``).
- Deleted (DUB, DCB) and excluded (EUB, ECB) code never reads as a regression;
  their ranges count lines of the baseline version of the file.

The baseline defaults to ``previous_snapshot``; see ``baseline`` for the kinds.
"""

from __future__ import annotations

import posixpath
from typing import Any

import numpy as np

from . import baseline as baselines
from . import cursors
from .budget import RECORD_CAP, Budget, record_cap_exceeded, size
from .call import Call
from .categories import (
    BASELINE_ONLY,
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
    Side,
    file_runs,
)
from .comparing import Compared, compared, scope_key
from .context import claim_for
from .freshness import file_freshness
from .select import Selection

DEFAULT_BASELINE = {"kind": "previous_snapshot"}
# Ranges are listed in this order of attention; CBC and UBC (unchanged code
# whose coverage did not change) are counted, never listed.
RANGE_ORDER = (UNC, LBC, UIC, GNC, GBC, GIC, ECB, EUB, DCB, DUB)
ATTENTION = (UNC, LBC, UIC)
_INTERESTING = [c for c in range(len(CATEGORIES)) if c not in (CBC, UBC)]
_IDENTITY = np.arange(len(CATEGORIES))


def change(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    """The task: ``measurement`` is the current side, ``baseline`` (default previous_snapshot) the other."""
    base = baselines.resolve(call, sel, call.args.get("baseline") or DEFAULT_BASELINE)
    return answer(call, sel, base, compared(call, sel, base), budget)


def change_of_report(call: Call, current: Selection, side: Side, budget: Budget) -> dict[str, Any]:
    """The same answer for a report that is parsed and mapped but not stored (``current`` describes it)."""
    base = baselines.resolve(call, current, call.args.get("baseline") or DEFAULT_BASELINE)
    return answer(call, current, base, compared(call, current, base, side), budget)


def _counts(values: np.ndarray, *, every: bool) -> dict[str, int]:
    return {name: int(v) for name, v in zip(CATEGORIES, values) if every or v}


def _status(c: Comparison, f: int) -> str:
    if not c.in_current[f] and c.status[f] != "deleted":
        return "not_measured"
    return c.status[f]


def _flags(values: Any, predicate: Any) -> np.ndarray:
    values = list(values)
    return np.fromiter((bool(predicate(v)) for v in values), dtype=bool, count=len(values))


def _code_like(c: Comparison) -> np.ndarray:
    """Per file: whether it is code the suites measure (the baseline had it, or its extension is measured)."""
    measured = c.in_current | c.in_baseline
    exts = {posixpath.splitext(p)[1] for p, m in zip(c.paths, measured) if m}
    return c.in_baseline | _flags(c.paths, lambda p: posixpath.splitext(p)[1] in exts)


def ranked_files(c: Comparison, only: str | None = None) -> np.ndarray:
    """Indices of the files worth a row, most in need of attention first."""
    per = c.per_file
    not_measured = ~c.in_current & _flags(c.status, lambda s: s != "deleted")
    code_gap = not_measured & _code_like(c)
    relevant = (per[:, _INTERESTING].sum(axis=1) > 0) | _flags(c.status, lambda s: s != "unchanged") | not_measured
    if only is not None:
        relevant &= _flags(zip(c.paths, c.previous), lambda pq: only in pq)
    idx = np.flatnonzero(relevant)
    attention = per[idx][:, list(ATTENTION)]
    order = np.lexsort((
        idx,  # paths are sorted, so the index breaks ties by path
        -per[idx][:, _INTERESTING].sum(axis=1),
        ~code_gap[idx],
        -attention[:, 2],
        -(attention[:, 0] + attention[:, 1]),
    ))
    return idx[order]


def file_ranges(c: Comparison, f: int) -> list[tuple[int, int, int, int]]:
    """(category, start, end, line_count) of one file, in RANGE_ORDER then line order."""
    return file_runs(c, f, _IDENTITY, _IDENTITY, RANGE_ORDER)


def _row(c: Comparison, f: int, representation: str) -> Any:
    per = c.per_file[f]
    status = _status(c, f)
    if representation == "compact":
        return [c.paths[f], status, *(int(per[k]) for k in (UNC, LBC, UIC, GNC))]
    row: dict[str, Any] = {"path": c.paths[f], "status": status}
    if c.previous[f]:
        row["previous_path"] = c.previous[f]
    row["lines"] = _counts(per, every=representation == "audit")
    row["patch"] = {"found": int(per[UNC] + per[GNC]), "hit": int(per[GNC])}
    return row


def _range(path: str, r: tuple[int, int, int, int], representation: str) -> Any:
    cat, start, end, count = r
    if representation == "compact":
        return [path, CATEGORIES[cat], start, end, count]
    return {"path": path, "category": CATEGORIES[cat], "start": start, "end": end, "line_count": count,
            "side": "baseline" if cat in BASELINE_ONLY else "current"}


def _claim(call: Call, sel: Selection, base: baselines.Baseline, done: Compared, nm_code: int) -> dict[str, Any]:
    claim = claim_for(call, sel.primary)
    reasons = list(sel.notes) + list(base.notes) + list(done.notes) + claim["reasons"]
    limited = []
    if any(s.scope == "subset" for s in base.snapshots):
        limited.append("the baseline measured a subset of the tests: GBC may count lines a full run already hit")
    if nm_code:
        limited.append(f"{nm_code} changed or previously measured code files are not in the current measurement: "
                       "not_measured, not unchanged")
    status = claim["claim_status"]
    if limited and status == "supported":
        status = "limited"
    return {"claim_status": status, "reasons": reasons + limited}


def _fixed(call: Call, sel: Selection, base: baselines.Baseline, done: Compared, representation: str) -> dict[str, Any]:
    """The part of the answer every page carries: sides, diff, counts, patch, regression, claim."""
    c = done.comparison
    totals = c.totals
    subset = any(s.scope == "subset" for s in sel.snapshots)
    not_measured = [f for f in range(len(c.paths)) if _status(c, f) == "not_measured"]
    nm_code = int(np.count_nonzero(_code_like(c)[not_measured])) if not_measured else 0
    data: dict[str, Any] = {
        "task": "change",
        "baseline": {"kind": base.kind, "ref": base.ref, "commit": (base.commit or "")[:12] or None,
                     "snapshot_ids": [s.snapshot_id for s in base.snapshots]},
        "current": {"snapshot_ids": [s.snapshot_id for s in sel.snapshots], "commit": (sel.primary.commit or "")[:12],
                    "scope": "subset" if subset else "complete",
                    "lines": [done.cur.lines_hit, done.cur.lines_found]},
        "diff": done.diff.stats(),
        "categories": _counts(totals, every=True),
        "branches": _counts(c.branches, every=representation != "compact"),
        "functions": _counts(c.functions, every=representation != "compact"),
        "patch": {"found": int(totals[UNC] + totals[GNC]), "hit": int(totals[GNC])},
        "regression": {
            "status": ("not_observed" if subset else "regression") if totals[LBC] else "none",
            "lines": int(totals[LBC]),
        },
        "not_measured": {"files": len(not_measured), "code_files": nm_code},
    }
    if representation == "compact":
        data["legend"] = {
            "files": "[path, status, UNC, LBC, UIC, GNC]",
            "ranges": "[path, category, start, end, line_count]; DUB/DCB/EUB/ECB count baseline lines",
            "branches": "non-zero categories only", "functions": "non-zero categories only",
        }
    data.update(_claim(call, sel, base, done, nm_code))
    return data


def answer(call: Call, sel: Selection, base: baselines.Baseline, done: Compared, budget: Budget) -> dict[str, Any]:
    """One page: the fixed part, then the page's file rows and their ranges, as the budget allows."""
    c = done.comparison
    representation = call.args.get("representation", "compact")
    scope = scope_key(sel, base)
    offset = cursors.decode(call, "change", scope, call.args.get("cursor"))
    if budget.max_files > RECORD_CAP:
        raise record_cap_exceeded("change", budget.max_files)
    data = _fixed(call, sel, base, done, representation)
    ranked = ranked_files(c, call.args.get("file"))
    page_idx = ranked[offset: offset + budget.max_files]
    data.update({"files": [], "ranges_truncated": False, "ranges": []})
    # Per file of the page, by content identity (review.freshness): whether HEAD still has the measured text.
    paths = [c.paths[int(f)] for f in page_idx]
    fresh = data["current"]["freshness"] = file_freshness(call, sel.primary, paths)
    shown = budget.fit_list(data, "files", [_row(c, int(f), representation) for f in page_idx])
    if len(page_idx) and not shown:
        data["files"] = [_row(c, int(page_idx[0]), representation)]
        raise budget.too_small(*size(data))
    data["current"]["freshness"] = {p: fresh[p] for p in paths[:shown] if p in fresh}
    # Ranges of the files shown: by category (UNC, LBC first), then file rank, then line.
    found = sorted(
        (RANGE_ORDER.index(r[0]), rank, r[1], int(f), r)
        for rank, f in enumerate(page_idx[:shown]) for r in file_ranges(c, int(f))
    )
    cap = RECORD_CAP if representation == "audit" else budget.max_regions
    rendered = [_range(c.paths[t[3]], t[4], representation) for t in found[:cap]]
    listed = budget.fit_list(data, "ranges", rendered)
    data["ranges_truncated"] = listed < len(found)
    next_offset = offset + shown
    return {
        "data": data,
        "page": {
            "offset": offset,
            "files": shown,
            "total_files": len(ranked),
            "next_cursor": cursors.encode(call, "change", scope, next_offset) if next_offset < len(ranked) else None,
        },
    }
