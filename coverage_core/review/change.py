"""``coverage_review(task="change")``: what a change did to coverage, against a baseline.

The answer counts every executable line of both measurements in lcov's twelve
differential categories (``categories``: ``data.categories``), with branch and
function counts beside them, patch coverage (``data.patch``: added and changed
executable lines, hit or not; the figure diff-cover reports), per-file rows
ranked by what needs attention (UNC, LBC, UIC) and grouped line ranges per
category, UNC and LBC first. Files are paged with ``page.next_cursor``.

Evidence rules:
- A file the current measurement lacks is ``not_measured``, never unchanged,
  and the claim is ``limited``, when it is code the suite measures: a snapshot
  of the suite measured it before, or it has an extension the suite measures in
  a directory it measures. Any other file it lacks (a ``tests/`` tree under
  ``--cov=pkg``, a README) is ``outside_scope``, counted in
  ``data.outside_scope``, and limits nothing. A file the measurement reports
  with no executable line (an empty ``__init__.py``) is measured.
- An omitted ``measurement`` is HEAD's snapshot (``select.current_at_head``);
  without one the answer is ``stale`` with reason code ``current_not_measured``.
- LBC is a regression only when the current measurement is ``complete``. From
  a ``subset`` run (only ever a side the caller named: a complete snapshot of
  the same commit outranks it wherever a side is chosen) a baseline-covered line
  it did not hit is ``not_observed``, never LBC: every count, row and range
  reports it under ``not_observed`` and LBC is 0 (``data.regression.status``).
- Deleted (DUB, DCB) and excluded (EUB, ECB) code never reads as a regression;
  their ranges count lines of the baseline version of the file.

The baseline defaults to ``previous_snapshot``; see ``baseline`` for the kinds.
"""

from __future__ import annotations

import posixpath
from typing import Any

import attrs
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
    NOT_OBSERVED,
    UBC,
    UIC,
    UNC,
    Comparison,
    Side,
    category_name,
    file_runs,
    named_counts,
)
from .comparing import Compared, compared, scope_key
from .context import claim_for
from .evidence import REPORT_IDENTITY_UNPROVEN
from .freshness import file_freshness
from .selection import Selection, current_at_head, names_current

DEFAULT_BASELINE = {"kind": "previous_snapshot"}
# The reason code of a comparison whose current side is not HEAD's measurement (data.reason_codes).
CURRENT_NOT_MEASURED = "current_not_measured"
# Ranges are listed in this order of attention; CBC and UBC (unchanged code
# whose coverage did not change) are counted, never listed.
RANGE_ORDER = (UNC, LBC, UIC, GNC, GBC, GIC, ECB, EUB, DCB, DUB)
ATTENTION = (UNC, LBC, UIC)
_INTERESTING = [c for c in range(len(CATEGORIES)) if c not in (CBC, UBC)]
_IDENTITY = np.arange(len(CATEGORIES))


def change(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    """The task: ``measurement`` is the current side, ``baseline`` (default previous_snapshot) the other.

    A ``measurement`` that names no snapshot is HEAD's measurement (``select.current_at_head``): without
    one, or when HEAD does not descend from the baseline's commit, the answer is ``stale`` with reason
    code ``current_not_measured`` and compares nothing (the latest snapshot would run the diff backwards).
    """
    spec = call.args.get("baseline") or DEFAULT_BASELINE
    if names_current(call):
        base = baselines.resolve(call, sel, spec)
        return answer(call, sel, base, compared(call, sel, base), budget)
    current = current_at_head(call, sel.primary.suite)
    if current is None:
        return current_not_measured(call, sel, spec, None)
    current = attrs.evolve(current, notes=sel.notes)
    base = baselines.resolve(call, current, spec)
    if not _descends(call, base, current):
        return current_not_measured(call, current, spec, base)
    return answer(call, current, base, compared(call, current, base), budget)


def _descends(call: Call, base: baselines.Baseline, current: Selection) -> bool:
    cur = current.primary.commit
    return (
        base.commit is None
        or base.commit == cur
        or (cur is not None and call.project.git.is_ancestor(base.commit, cur))
    )


def current_not_measured(
    call: Call, latest: Selection, spec: dict[str, Any], base: baselines.Baseline | None
) -> dict[str, Any]:
    """The ``stale`` answer of a comparison whose current side (HEAD's measurement) is missing.

    ``latest`` is the newest snapshot of the suite (no snapshot measured HEAD, ``base`` None), or HEAD's
    snapshot when HEAD does not descend from ``base``'s commit. Nothing is compared.
    """
    head = call.project.state().head
    suite = latest.primary.suite
    snap = latest.primary
    if base is None:
        if snap.commit == head and snap.dirty:
            reason = (
                f"the newest snapshot of suite {suite!r}, {snap.snapshot_id}, measured HEAD "
                f"{(head or '')[:12]} with uncommitted changes the working tree no longer has, and no "
                "other snapshot describes this checkout"
            )
        else:
            reason = (
                f"no snapshot of suite {suite!r} measures HEAD {(head or 'unborn')[:12]} (the newest, "
                f"{snap.snapshot_id}, measures {(snap.commit or 'no commit')[:12]}); comparing it would not "
                "describe this checkout"
            )
        baseline: dict[str, Any] = {
            "kind": spec["kind"],
            "ref": spec.get("ref"),
            "commit": None,
            "snapshot_ids": [],
        }
        current: dict[str, Any] = {
            "snapshot_ids": [],
            "commit": (head or "")[:12] or None,
            "latest": {"snapshot_id": snap.snapshot_id, "commit": (snap.commit or "")[:12] or None},
        }
    else:
        reason = (
            f"HEAD {(head or 'unborn')[:12]} does not descend from the baseline commit "
            f"{(base.commit or '')[:12]}: the diff would undo changes instead of reviewing them"
        )
        baseline = {
            "kind": base.kind,
            "ref": base.ref,
            "commit": (base.commit or "")[:12] or None,
            "snapshot_ids": [s.snapshot_id for s in base.snapshots],
        }
        current = {"snapshot_ids": [snap.snapshot_id], "commit": (snap.commit or "")[:12] or None}
    return {
        "data": {
            "task": "change",
            "baseline": baseline,
            "current": current,
            "claim_status": "stale",
            "reasons": [*latest.notes, reason],
            "reason_codes": [CURRENT_NOT_MEASURED],
            "next": (
                f"coverage_import a report of this checkout (suite {suite!r}) to measure HEAD, or name the "
                f"current side: measurement={{'snapshot_id': '{snap.snapshot_id}'}} compares that snapshot as asked"
            ),
        },
        "page": None,
    }


def change_of_report(call: Call, current: Selection, side: Side, budget: Budget) -> dict[str, Any]:
    """The same answer for a report that is parsed and mapped but not stored (``current`` describes it)."""
    base = baselines.resolve(call, current, call.args.get("baseline") or DEFAULT_BASELINE)
    return answer(call, current, base, compared(call, current, base, side), budget)


_counts = named_counts


OUTSIDE_EXAMPLES = 5  # paths named in data.outside_scope


@attrs.frozen(eq=False)
class Gaps:
    """Per file of a comparison, what the current measurement lacks (files it reports with no executable
    line, an empty ``__init__.py``, are measured): ``missing`` is code the suite measures (``not_measured``;
    it limits the claim), ``outside`` a file no snapshot of the suite has measured, in no directory it
    measures or of no extension it measures (``outside_scope``: counted apart, no limit on the claim)."""

    missing: np.ndarray
    outside: np.ndarray


def gaps(call: Call, sel: Selection, c: Comparison, cur: Side) -> Gaps:
    # Columnar: on 100,000 files a per-path test cost 60 ms of every call; only the few files the current
    # side does not list are looked at one by one.
    absent = ~c.reported
    absent[np.flatnonzero(absent)] = [c.status[f] != "deleted" for f in np.flatnonzero(absent)]
    if not absent.any():
        return Gaps(absent, absent)
    suite = sel.primary.suite
    idx = np.flatnonzero(absent)
    before = {
        r[0]
        for r in call.rows(
            "SELECT DISTINCT f.path FROM files f JOIN snapshots s ON s.snap = f.snap "
            "WHERE s.suite = ? AND list_contains(?, f.path)",
            [suite, [c.paths[i] for i in idx]],
        )
    }
    # Where and what the suite measures: the directories and extensions of every file it ever measured.
    rows = call.rows(
        "SELECT DISTINCT regexp_extract(f.path, '^(.*)/[^/]*$', 1), regexp_extract(f.path, '[^/]+(\\.[^./]*)$', 1) "
        "FROM files f JOIN snapshots s ON s.snap = f.snap WHERE s.suite = ?",
        [suite],
    )
    dirs, exts = {r[0] for r in rows}, {r[1] for r in rows}

    def in_scope(path: str) -> bool:
        if posixpath.splitext(path)[1] not in exts:
            return False
        d = posixpath.dirname(path)
        while True:
            if d in dirs:
                return True
            if not d:
                return False
            d = posixpath.dirname(d)
            if not d:  # the root holds every file: only its own files are in its scope
                return False

    missing = absent & c.in_baseline
    missing[idx] |= [c.paths[f] in before or in_scope(c.paths[f]) for f in idx]
    return Gaps(missing, absent & ~missing)


def _status(c: Comparison, f: int, g: Gaps) -> str:
    if g.missing[f]:
        return "not_measured"
    if g.outside[f]:
        return "outside_scope"
    return c.status[f]


def _flags(values: Any, predicate: Any) -> np.ndarray:
    values = list(values)
    return np.fromiter((bool(predicate(v)) for v in values), dtype=bool, count=len(values))


def ranked_files(c: Comparison, g: Gaps, only: str | None = None) -> np.ndarray:
    """Indices of the files worth a row, most in need of attention first."""
    per = c.per_file
    code_gap = g.missing
    relevant = (per[:, _INTERESTING].sum(axis=1) > 0) | c.changed | g.missing | g.outside
    if only is not None:
        relevant &= _flags(zip(c.paths, c.previous), lambda pq: only in pq)
    idx = np.flatnonzero(relevant)
    attention = per[idx][:, list(ATTENTION)]
    order = np.lexsort(
        (
            idx,  # paths are sorted, so the index breaks ties by path
            -per[idx][:, _INTERESTING].sum(axis=1),
            ~code_gap[idx],
            -attention[:, 2],
            -(attention[:, 0] + attention[:, 1]),
        )
    )
    return idx[order]


def file_ranges(c: Comparison, f: int) -> list[tuple[int, int, int, int]]:
    """(category, start, end, line_count) of one file, in RANGE_ORDER then line order."""
    return file_runs(c, f, _IDENTITY, _IDENTITY, RANGE_ORDER)


def _row(c: Comparison, f: int, g: Gaps, representation: str, subset: bool) -> Any:
    per = c.per_file[f]
    status = _status(c, f, g)
    if representation == "compact":  # from a subset side the LBC column is not_observed (the legend says so)
        return [c.paths[f], status, *(int(per[k]) for k in (UNC, LBC, UIC, GNC))]
    row: dict[str, Any] = {"path": c.paths[f], "status": status}
    if c.previous[f]:
        row["previous_path"] = c.previous[f]
    row["lines"] = _counts(per, every=representation == "audit", subset=subset)
    row["patch"] = {"found": int(per[UNC] + per[GNC]), "hit": int(per[GNC])}
    return row


def _range(path: str, r: tuple[int, int, int, int], representation: str, subset: bool) -> Any:
    cat, start, end, count = r
    if representation == "compact":
        return [path, category_name(cat, subset=subset), start, end, count]
    return {
        "path": path,
        "category": category_name(cat, subset=subset),
        "start": start,
        "end": end,
        "line_count": count,
        "side": "baseline" if cat in BASELINE_ONLY else "current",
    }


def _claim(
    call: Call, sel: Selection, base: baselines.Baseline, done: Compared, nm_code: int, outside: int
) -> dict[str, Any]:
    claim = claim_for(call, sel.primary)
    reasons = list(sel.notes) + list(base.notes) + list(done.notes) + claim["reasons"]
    limited = list(sel.limits)
    if any(s.scope == "subset" for s in base.snapshots):
        limited.append(
            "the baseline measured a subset of the tests: GBC may count lines a full run already hit"
        )
    if nm_code:
        limited.append(
            f"{nm_code} changed or previously measured code files are not in the current measurement: "
            "not_measured, not unchanged"
        )
    if outside:
        reasons.append(
            f"{outside} files no snapshot of suite {sel.primary.suite!r} has measured are outside its "
            "measured scope (data.outside_scope)"
        )
    status = claim["claim_status"]
    if limited and status == "supported":
        status = "limited"
    return {"claim_status": status, "reasons": reasons + limited}


def _headline(snapshots: Any) -> dict[str, Any] | None:
    """The producing tool's own total of a side's one snapshot; None for a union of several or none."""
    head = snapshots[0].headline if len(snapshots) == 1 else None
    return head.to_dict() if head else None


def _fixed(
    call: Call, sel: Selection, base: baselines.Baseline, done: Compared, g: Gaps, representation: str
) -> dict[str, Any]:
    """The part of the answer every page carries: sides, diff, counts, patch, regression, claim."""
    c = done.comparison
    totals = c.totals
    subset = any(s.scope == "subset" for s in sel.snapshots)
    nm_code = int(np.count_nonzero(g.missing))
    outside = np.flatnonzero(g.outside)
    data: dict[str, Any] = {
        "task": "change",
        "baseline": {
            "kind": base.kind,
            "ref": base.ref,
            "commit": (base.commit or "")[:12] or None,
            "snapshot_ids": [s.snapshot_id for s in base.snapshots],
            "headline": _headline(base.snapshots),
        },
        "current": {
            "snapshot_ids": [s.snapshot_id for s in sel.snapshots],
            "commit": (sel.primary.commit or "")[:12],
            "scope": "subset" if subset else "complete",
            "lines": [done.cur.lines_hit, done.cur.lines_found],
            # The producing tool's own total of the one current snapshot (a union of several has none).
            "headline": _headline(sel.snapshots),
        },
        "diff": dict(done.kept("diff_stats", done.diff.stats)),  # a walk over every hunk: once per comparison
        "categories": _counts(totals, every=True, subset=subset),
        "branches": _counts(c.branches, every=representation != "compact", subset=subset),
        "functions": _counts(c.functions, every=representation != "compact", subset=subset),
        "patch": {"found": int(totals[UNC] + totals[GNC]), "hit": int(totals[GNC])},
        "regression": {
            "status": ("not_observed" if subset else "regression") if totals[LBC] else "none",
            "lines": int(totals[LBC]),
        },
        "not_measured": {"files": nm_code},
        "outside_scope": {
            "count": len(outside),
            "examples": [c.paths[f] for f in outside[:OUTSIDE_EXAMPLES]],
        },
    }
    if representation == "audit" and len(sel.snapshots) == 1:  # every counter by name, for gates
        data["current"]["totals"] = {k: [v.hit, v.found] for k, v in sel.primary.totals.items()}
    if representation == "compact":
        data["legend"] = {
            "files": f"[path, status, UNC, {NOT_OBSERVED if subset else 'LBC'}, UIC, GNC]",
            "ranges": "[path, category, start, end, line_count]; DUB/DCB/EUB/ECB count baseline lines",
            "branches": "non-zero categories only",
            "functions": "non-zero categories only",
        }
    data.update(_claim(call, sel, base, done, nm_code, len(outside)))
    if sel.limits:  # an unstored report not shown to be the working tree's (review.evidence)
        data["reason_codes"] = [REPORT_IDENTITY_UNPROVEN]
    return data


def _position(key: list[Any] | None) -> tuple[int, int]:
    if key is None:
        return 0, 0
    if len(key) != 2 or not all(isinstance(k, int) and not isinstance(k, bool) for k in key):
        raise cursors.invalid("it carries no valid position")
    return key[0], key[1]


def answer(
    call: Call, sel: Selection, base: baselines.Baseline, done: Compared, budget: Budget
) -> dict[str, Any]:
    """One page: the fixed part, then the page's file rows and their ranges, as the budget allows."""
    c = done.comparison
    representation = call.args.get("representation", "compact")
    scope = scope_key(sel, base)
    # A position is [files offset, ranges offset]: page.next_cursor moves to the next files,
    # data.ranges_cursor continues the ranges of the same files.
    offset, range_from = _position(cursors.decode_key(call, "change", scope, call.args.get("cursor")))
    if budget.max_files > RECORD_CAP:
        raise record_cap_exceeded("change", budget.max_files)
    g = gaps(call, sel, c, done.cur)
    data = _fixed(call, sel, base, done, g, representation)
    subset = data["current"]["scope"] == "subset"
    only = call.args.get("file")
    if g.missing.any() or g.outside.any():  # gaps depend on what else the suite measured: ranked anew
        ranked = ranked_files(c, g, only)
    else:  # the comparison's own ranking (argsort of every file: 10 ms on 100,000 files), kept with it
        ranked = done.kept(("ranked", only), lambda: ranked_files(c, g, only))
    page_idx = ranked[offset : offset + budget.max_files]
    data.update({"files": [], "ranges_truncated": False, "ranges": []})
    # Per file of the page, by content identity (review.freshness): whether HEAD still has the measured text.
    paths = [c.paths[int(f)] for f in page_idx]
    fresh = data["current"]["freshness"] = file_freshness(call, sel.primary, paths)
    shown = budget.fit_list(data, "files", [_row(c, int(f), g, representation, subset) for f in page_idx])
    if len(page_idx) and not shown:
        data["files"] = [_row(c, int(page_idx[0]), g, representation, subset)]
        raise budget.too_small(*size(data))
    data["current"]["freshness"] = {p: fresh[p] for p in paths[:shown] if p in fresh}
    # Ranges of the files shown: by category (UNC, LBC first), then file rank, then line.
    files = tuple(int(f) for f in page_idx[:shown])
    # Every range of the page's files in order (16k on sqlite3.c), sorted once per page.
    found = done.kept(
        ("ranges", files),
        lambda: sorted(
            (RANGE_ORDER.index(r[0]), rank, r[1], f, r)
            for rank, f in enumerate(files)
            for r in file_ranges(c, f)
        ),
    )
    cap = RECORD_CAP if representation == "audit" else budget.max_regions
    rendered = [
        _range(c.paths[t[3]], t[4], representation, subset) for t in found[range_from : range_from + cap]
    ]
    data["ranges_cursor"] = None
    listed = budget.fit_list(data, "ranges", rendered)
    data["ranges_truncated"] = range_from + listed < len(found)
    if data["ranges_truncated"]:
        data["ranges_cursor"] = cursors.encode_key(call, "change", scope, [offset, range_from + listed])
    next_offset = offset + shown
    return {
        "data": data,
        "page": {
            "offset": offset,
            "files": shown,
            "total_files": len(ranked),
            "next_cursor": cursors.encode_key(call, "change", scope, [next_offset, 0])
            if next_offset < len(ranked)
            else None,
        },
    }
