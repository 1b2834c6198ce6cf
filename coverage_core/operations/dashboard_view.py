"""The dashboard's rows: everything the page shows of one project, bounded, in one answer.

Four rows of ``operations.table.OPERATIONS``: ``dashboard`` (the one projection: what
``GET /api/dashboard`` answers and what ``coverage-mcp report --html`` embeds
in its static page, so both show the same numbers), ``dashboard_file`` (one
file's annotated lines), ``dashboard_run`` (one run's logs) and
``dashboard_revision`` (what the event stream compares). The reviews they
combine are other rows, asked through ``Call.ask`` on the same connection:
nothing here imports the service above it. The projection reads only stored data
through the same store reads and operations as every other surface (the
snapshot totals ``coverage-mcp snapshots`` prints, the file counts of ``show``,
the change review of ``review change``, the named tests of ``review tests``),
with fixed bounds on every list:

- ``selection``: the current and the baseline snapshot, chosen
  independently (defaults: the newest snapshot of the suite, and the one
  stored before it in the same format); ``baseline="none"`` compares nothing.
- ``metrics``: lines, branches and functions of both, with the delta.
- ``timeline``: the suite's snapshots over commits (at most ``MAX_TIMELINE``),
  which are also the choices for current and baseline.
- ``change``: lcov's twelve categories between the two, in plain words, with
  the files and ranges of the change review.
- ``files``: the current snapshot's files (at most ``MAX_FILES``) with their
  change categories; ``file_source`` drills into one file's annotated lines.
- ``tests``: named tests (those that hit the most items first), grouped by
  test function with their cases, and duplicate candidates
  (``dashboard_tests``).
- ``composite``: composite production coverage, its current and baseline
  composite snapshots chosen independently of the ordinary ones: the exact
  percentage, the components, blocking reasons and remediation buckets; the delta against the
  baseline only where both count the same members (else ``delta_withheld`` says why).
- ``runs``: managed runs, newest first (``run_logs`` reads one run's logs);
  ``approvals``: commands waiting for a person's approval.
- ``compaction``: the compaction inventory.

``revision(con)`` is the cheap fingerprint the event stream compares: it
changes whenever anything the projection shows was stored or deleted.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import duckdb

from .. import headline as headlines
from ..composite import persistence as composites
from ..display import delta as delta_text
from ..display import delta_hundredths
from ..errors import CoverageError, ErrorCode
from ..execution import commands, runs
from ..execution.words import quoted_line
from ..model import Snapshot
from ..project import DEFAULT_SUITE, Project
from ..review import provenance
from ..review.budget import MAX_BYTES, MAX_WORDS
from ..review.call import Call
from ..review.composite_view import summary
from ..storage import project_settings
from ..storage.exec_db import exec_db
from ..storage.store import chosen_side
from . import dashboard_tests

MAX_TIMELINE = 200
MAX_FILES = 2000
MAX_RANGES = 500
MAX_SOURCE_LINES = 20_000
MAX_COMPOSITES = 50
MAX_RUNS = 20
MAX_PENDING = 50
COUNTERS = ("lines", "branches", "functions")
# What the dashboard row selects (its input schema, operations.table.OPERATIONS): ordinary and composite snapshots,
# the file table's order.
SELECTION = ("suite", "current", "baseline", "composite", "composite_baseline", "order")
OUTSIDE_SCOPE_REASON = "measured scope (data.outside_scope)"  # the end of the change review's reason
WHOLE = {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES}

# lcov's differential categories, in the words the page shows (genhtml's meanings).
CATEGORY_WORDS: dict[str, str] = {
    "UNC": "new code, not covered",
    "LBC": "covered before, not covered now",
    "UIC": "unchanged code newly included, not covered",
    "UBC": "unchanged code, still not covered",
    "GBC": "unchanged code, covered now (was not)",
    "GIC": "unchanged code newly included, covered",
    "GNC": "new code, covered",
    "CBC": "unchanged code, still covered",
    "EUB": "not covered before, removed from the code",
    "ECB": "covered before, removed from the code",
    "DUB": "not covered before, deleted",
    "DCB": "covered before, deleted",
}

# Queries whose answers change whenever something the dashboard shows does; a
# table another build lacks is skipped (``revision`` tolerates it).
REVISION_QUERIES: tuple[str, ...] = (
    "SELECT count(*), coalesce(max(snap), 0) FROM snapshots",
    # managed execution: registrations, decisions, and every run's state changes (one event each)
    "SELECT count(*) FROM commands",
    "SELECT count(*) FROM command_decisions",
    "SELECT count(*) FROM run_events",
    # compaction: payloads written and passes run
    "SELECT count(*), coalesce(sum(payload_bytes), 0) FROM snapshot_payloads",
    "SELECT count(*) FROM compaction_passes",
    # composite coverage
    "SELECT count(*) FROM composite_snapshots",
)


def revision(con: duckdb.DuckDBPyConnection) -> str:
    """A short fingerprint of what is stored; equal answers mean nothing the dashboard shows changed."""
    digest = hashlib.sha256()
    for sql in REVISION_QUERIES:
        try:
            row = con.execute(sql).fetchone()
        except duckdb.CatalogException:
            row = None
        digest.update(repr(row).encode())
    return digest.hexdigest()[:16]


def _percent(hit: int, found: int) -> float | None:
    return None if not found else round(100.0 * hit / found, 2)


def _counters(snap: Snapshot | None) -> dict[str, Any] | None:
    if snap is None:
        return None
    out: dict[str, Any] = {}
    for name in COUNTERS:
        counter = snap.totals.get(name)
        if counter is None and name == "lines":
            counter = snap.totals.get("statements")
        out[name] = (
            None
            if counter is None
            else {"hit": counter.hit, "found": counter.found, "percent": _percent(counter.hit, counter.found)}
        )
    # The producing tool's own total (coverage_core.headline): ``text`` is its figure as it rounds it.
    head = snap.headline
    out["headline"] = (
        None
        if head is None
        else {
            "counter": head.counter,
            "hit": head.hit,
            "found": head.found,
            "percent": _percent(head.hit, head.found),
            "text": head.percent,
            "rule": head.rule.name,
        }
    )
    return out


def _point(snap: Snapshot) -> dict[str, Any]:
    return {
        "snapshot_id": snap.snapshot_id,
        "created_at": snap.created_at.isoformat(),
        "commit": snap.commit,
        "branch": snap.branch,
        "dirty": snap.dirty,
        "format": snap.format,
        "scope": snap.scope,
        "provenance": snap.provenance,
        "files": snap.files,
        "tests": snap.tests,
        "totals": _counters(snap),
    }


def _made_by(con: duckdb.DuckDBPyConnection, snap: Snapshot) -> dict[str, Any] | None:
    """The managed run that produced ``snap`` (its run id, command, case arguments and execution
    fingerprint), so a full run and a case-specific one are never shown alike; None for an import."""
    row = con.execute(
        "SELECT CAST(json_extract(metadata, '$.run') AS VARCHAR) FROM snapshots WHERE snapshot_id = ?",
        [snap.snapshot_id],
    ).fetchone()
    if row is None or row[0] is None:
        return None
    run = json.loads(row[0])
    try:
        found = con.execute("SELECT fingerprint FROM runs WHERE run_id = ?", [run.get("run_id")]).fetchone()
    except duckdb.CatalogException:
        found = None
    return {
        "run_id": run.get("run_id"),
        "command_id": run.get("command_id"),
        "args": run.get("args") or [],
        "fingerprint": found[0] if found else None,
    }


def _detail_source(con: duckdb.DuckDBPyConnection, snap: Snapshot) -> str:
    """Where a snapshot's detail lives: ``relational`` rows, or a ``compacted`` zstd payload."""
    row = con.execute(
        "SELECT count(*) FROM snapshot_payloads p JOIN snapshots s USING (snap) WHERE s.snapshot_id = ?",
        [snap.snapshot_id],
    ).fetchone()
    return "compacted" if row and row[0] else "relational"


def _selected(con: duckdb.DuckDBPyConnection, snap: Snapshot | None) -> dict[str, Any] | None:
    if snap is None:
        return None
    return {**_point(snap), "run": _made_by(con, snap), "detail": _detail_source(con, snap)}


def _metrics(current: Snapshot | None, base: Snapshot | None) -> dict[str, Any]:
    now, then = _counters(current), _counters(base)
    out: dict[str, Any] = {}
    for name in ("headline", *COUNTERS):
        c = now.get(name) if now else None
        b = then.get(name) if then else None
        delta = text = None
        # exact, from the counts, rounded as `coverage-mcp diff` rounds (never the difference of
        # two rounded percentages); None where a side measured nothing
        if c and b and (change := delta_hundredths((b["hit"], b["found"]), (c["hit"], c["found"]))):
            sign, units = change
            delta, text = sign * units / 100, delta_text((b["hit"], b["found"]), (c["hit"], c["found"]))
        out[name] = {"current": c, "baseline": b, "delta": delta, "delta_text": text}
    return out


def _snapshot(project: Project, con: duckdb.DuckDBPyConnection, snapshot_id: str, role: str) -> Snapshot:
    try:
        return project.store.snapshot(snapshot_id, con)
    except CoverageError as error:
        raise CoverageError(
            error.code, f"{role}: {error.message}", error.suggestion, {**error.details, "selection": role}
        ) from None


def _previous(project: Project, con: duckdb.DuckDBPyConnection, current: Snapshot) -> Snapshot | None:
    """The snapshot stored before ``current`` in its suite and format: the change review's default baseline
    (a subset a complete snapshot of its commit outranks is never chosen, ``chosen_side``)."""
    row = con.execute(
        f"""SELECT snapshot_id FROM snapshots
           WHERE suite = ? AND format = ? AND snap < (SELECT snap FROM snapshots WHERE snapshot_id = ?)
           AND {chosen_side()} ORDER BY snap DESC LIMIT 1""",
        [current.suite, current.format, current.snapshot_id],
    ).fetchone()
    return None if row is None else project.store.snapshot(row[0], con)


def _change(
    review: Callable[[dict[str, Any]], dict[str, Any]], current: Snapshot, base: Snapshot
) -> dict[str, Any]:
    try:
        data = review(
            {
                "task": "change",
                "representation": "review",
                "limits": WHOLE,
                "measurement": {"snapshot_id": current.snapshot_id},
                "baseline": {"kind": "explicit", "snapshot_id": base.snapshot_id},
            }
        )
    except CoverageError as error:
        return {"available": False, "reason": error.message, "code": error.code.value}
    ranges = data.get("ranges") or []
    return {
        "available": True,
        "baseline_snapshot_id": base.snapshot_id,
        "current_snapshot_id": current.snapshot_id,
        "diff": data.get("diff"),
        "categories": {kind: data.get(kind) for kind in ("categories", "branches", "functions")},
        "patch": data.get("patch"),
        "regression": data.get("regression"),
        "files": data.get("files") or [],
        "ranges": ranges[:MAX_RANGES],
        "ranges_truncated": len(ranges) > MAX_RANGES or bool(data.get("ranges_truncated")),
        "claim_status": data.get("claim_status"),
        # the page words the outside-scope count itself (data.outside_scope), not the review's reason text
        "reasons": [r for r in data.get("reasons") or [] if not r.endswith(OUTSIDE_SCOPE_REASON)],
        "outside_scope": data.get("outside_scope") or {"count": 0, "examples": []},
        "suite": current.suite,
    }


def _files(
    project: Project,
    con: duckdb.DuckDBPyConnection,
    current: Snapshot,
    change: dict[str, Any] | None,
    order: str,
) -> dict[str, Any]:
    """The first ``MAX_FILES`` files in ``order`` (the listing's: path, most uncovered lines first, lowest coverage
    first), ordered by the store before the cut: on a large project the worst files are the ones shipped."""
    page = project.store.files(current.snapshot_id, limit=MAX_FILES, order=order, con=con)
    style = headlines.rule_for(current.format, current.tool).style
    categories = {f["path"]: f.get("lines") or {} for f in (change or {}).get("files", [])} if change else {}
    rows = [
        {
            "path": f.path,
            "mapping": f.mapping,
            "lines": {"hit": f.lines.hit, "found": f.lines.found},
            "branches": {"hit": f.branches.hit, "found": f.branches.found},
            "functions": {"hit": f.functions.hit, "found": f.functions.found},
            # The file's figure by the producing tool's rule (coverage.py: statements and branches).
            "headline": {
                "hit": (h := f.headline or f.lines).hit,
                "found": h.found,
                "text": headlines.display(style, h.hit, h.found),
            },
            "excluded": f.excluded,
            "change": categories.get(f.path),
        }
        for f in page.files
    ]
    return {"total": page.total, "truncated": page.total > len(rows), "order": order, "rows": rows}


def _retention(project: Project, con: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each snapshot's retention as the compaction policy sees it now: its age against ``after_days``, and
    ``compacted`` (its detail a payload), ``protected`` (the newest relational snapshot of its suite, or an
    active run's baseline: never compacted while so), ``eligible`` (old enough: the next pass compacts it) or
    ``kept`` (younger than the policy; ``days_left``)."""
    if not ids:
        return {}
    after = int(project_settings.read(con, ["compaction_after_days"])["compaction_after_days"])
    rows = con.execute(
        """WITH packed AS (SELECT snap FROM snapshot_payloads),
                newest AS (SELECT max(snap) AS snap FROM snapshots WHERE snap NOT IN (SELECT snap FROM packed)
                           GROUP BY suite)
           SELECT s.snapshot_id, (epoch(now()) - epoch(s.created_at)) / 86400.0,
                  s.snap IN (SELECT snap FROM packed), s.snap IN (SELECT snap FROM newest)
           FROM snapshots s WHERE list_contains(?, s.snapshot_id)""",
        [ids],
    ).fetchall()
    held = project.active_run_baseline_snaps()
    out: dict[str, dict[str, Any]] = {}
    for snapshot_id, age, compacted, newest in rows:
        why = None
        if compacted:
            state = "compacted"
        elif newest or snapshot_id in held:
            state, why = (
                "protected",
                "the newest snapshot of its suite" if newest else f"in use: {held[snapshot_id]}",
            )
        elif age >= after:
            state = "eligible"
        else:
            state = "kept"
        out[snapshot_id] = {
            "state": state,
            "age_days": round(float(age), 1),
            "after_days": after,
            "days_left": max(0, int(after - float(age))) if state == "kept" else None,
            "why": why,
        }
    return out


def _composite_record(comp: Any) -> dict[str, Any]:
    return summary(comp)


def composite_delta_withheld(cur: Any, base: Any) -> dict[str, str] | None:
    """Why no delta between two composites is honest, or None when one is: both must count the same members
    (the same inventory and mapping, every entry's denominator known on both sides); otherwise a change of
    what is counted would read as a change of coverage."""
    if cur.inventory_sha256 != base.inventory_sha256:
        return {
            "reason": "inventory_differs",
            "detail": f"the baseline was built from another inventory ({base.inventory_sha256[:12]}, "
            f"now {cur.inventory_sha256[:12]})",
        }
    if cur.mapping_version != base.mapping_version:
        return {
            "reason": "mapping_differs",
            "detail": f"the baseline maps regions by {base.mapping_version}, now {cur.mapping_version}",
        }
    unknown = {
        side: {
            (b.component, b.variant, b.logical_source_id) for b in c.blocking if b.denominator == "unknown"
        }
        for side, c in (("current", cur), ("baseline", base))
    }
    if unknown["current"] != unknown["baseline"]:
        only = sorted(unknown["baseline"] - unknown["current"]) or sorted(
            unknown["current"] - unknown["baseline"]
        )
        side = "baseline" if unknown["baseline"] - unknown["current"] else "current"
        c, v, s = only[0]
        return {
            "reason": "members_differ",
            "detail": f"{len(only)} entr{'y' if len(only) == 1 else 'ies'} counted on one side only: the {side} "
            f"has no denominator for {c}" + (f":{v}" if v and v != "default" else "") + f" {s}",
        }
    if unknown["current"]:
        return {
            "reason": "total_withheld",
            "detail": "both sides withhold their total (a denominator is unknown)",
        }
    return None


def _composite(
    project: Project, con: duckdb.DuckDBPyConnection, current: str | None, baseline: str | None
) -> dict[str, Any]:
    """Composite production coverage: the chosen composite snapshot (default: the newest) and its baseline
    (default: the one stored before it, ``none`` for no comparison), chosen independently of the ordinary ones."""
    rows = con.execute(
        "SELECT composite_id, created_at, commit_sha, status, totals FROM composite_snapshots "
        "ORDER BY comp DESC LIMIT ?",
        [MAX_COMPOSITES + 1],
    ).fetchall()
    empty = "No composite snapshot yet: `coverage-mcp composite build --inventory F REPORT...` makes one."
    if not rows and current is None:
        return {
            "available": True,
            "current": None,
            "baseline": None,
            "choices": [],
            "items": [],
            "empty": empty,
        }

    def choice(row: tuple[Any, ...]) -> dict[str, Any]:
        totals = json.loads(row[4]) if isinstance(row[4], str) else row[4]
        combined = totals["combined"]
        return {
            "composite_snapshot_id": row[0],
            "created_at": row[1].isoformat(),
            "commit": row[2],
            "status": row[3],
            "percent": _percent(combined["hit"], combined["found"]),
        }

    try:
        cur = (
            composites.get(project.store, current, con) if current else composites.latest(project.store, con)
        )
        if baseline == "none" or cur is None:
            base = None
        elif baseline:
            base = composites.get(project.store, baseline, con)
        else:
            row = con.execute(
                "SELECT composite_id FROM composite_snapshots WHERE comp < "
                "(SELECT comp FROM composite_snapshots WHERE composite_id = ?) ORDER BY comp DESC LIMIT 1",
                [cur.composite_id],
            ).fetchone()
            base = composites.get(project.store, row[0], con) if row else None
    except CoverageError as error:
        raise CoverageError(
            error.code,
            f"composite: {error.message}",
            error.suggestion,
            {**error.details, "selection": "composite"},
        ) from None
    record = _composite_record(cur)
    delta = None
    withheld = None if base is None else composite_delta_withheld(cur, base)
    if base is not None and withheld is None:
        then, now = _composite_record(base)["totals"]["combined"], record["totals"]["combined"]
        found = delta_hundredths((then["hit"], then["found"]), (now["hit"], now["found"]))
        delta = None if found is None else found[0] * found[1] / 100  # exact from the counts, as the metrics
    return {
        "available": True,
        "current": record,
        "baseline": _composite_record(base) if base is not None else None,
        "delta": delta,
        "delta_withheld": withheld,
        "choices": [choice(r) for r in rows[:MAX_COMPOSITES]],
        "choices_truncated": len(rows) > MAX_COMPOSITES,
        "items": [
            {
                "component": c["id"],
                "language": c["language"],
                "format": c["format"],
                "variants": ", ".join(c["variants"]),
                "hit": c["totals"]["combined"]["hit"],
                "found": c["totals"]["combined"]["found"],
                "percent": _percent(c["totals"]["combined"]["hit"], c["totals"]["combined"]["found"]),
                "measured": f"{c['measured']} of {c['entries']}",
            }
            for c in record["components"]
        ],
        "blocking": record["blocking"],
        "blocking_total": record["blocking_total"],
        "remediation": record["remediation"],
        "empty": empty,
    }


def _runs(project: Project, _con: duckdb.DuckDBPyConnection, _current: Snapshot | None) -> dict[str, Any]:
    """Managed runs, newest first (``execution.runs.list_runs``); their logs are read on demand."""
    listed = runs.list_runs(project, limit=MAX_RUNS + 1)
    ids = sorted({r["command_id"] for r in listed[:MAX_RUNS]})
    names = (
        dict(
            exec_db(project.store).rows(
                "SELECT command_id, name FROM commands WHERE list_contains(?, command_id)", [ids]
            )
        )
        if ids
        else {}
    )
    items = [
        {
            "run_id": r["id"],
            "status": r["state"],
            "command_id": r["command_id"],
            "command_name": names.get(r["command_id"]),
            "args": quoted_line(r["args"]) if r["args"] else "",
            "queued_at": r["queued_at"],
            "started_at": r["started_at"],
            "finished_at": r["ended_at"],
            "duration_ms": r["duration_ms"],
            "exit_code": r["exit_code"],
            "reason": r["reason"],
        }
        for r in listed[:MAX_RUNS]
    ]
    return {
        "available": True,
        "items": items,
        "truncated": len(listed) > MAX_RUNS,
        "empty": "No managed run yet: run_test (or `coverage-mcp run`) starts one of an approved command.",
    }


def _approvals(
    project: Project, _con: duckdb.DuckDBPyConnection, _current: Snapshot | None
) -> dict[str, Any]:
    """Registered commands waiting for a person's approval (``execution.commands.list_commands``)."""
    pending = commands.list_commands(project, "pending", limit=MAX_PENDING + 1)
    # Each shown as `coverage-mcp command show` shows it (with the executable argv[0] resolves to now).
    pending = [commands.show_command(project, c["id"]) for c in pending[:MAX_PENDING]] + pending[MAX_PENDING:]
    items = [
        {
            "command_id": c["id"],
            "name": c["name"],
            "argv": c["argv"],
            "display": c["display"],
            "command_line": quoted_line(c["argv"]),
            "cwd": c.get("cwd"),
            "created_at": c.get("registered_at"),
            "timeout_s": c.get("timeout_s"),
            "env": c.get("env"),
            "runners": c.get("runners"),
            "inherit": c.get("inherit"),
            "artifacts": c.get("artifacts"),
            "args_policy": c.get("args_policy"),
        }
        for c in pending[:MAX_PENDING]
    ]
    return {
        "available": True,
        "items": items,
        "truncated": len(pending) > MAX_PENDING,
        "empty": "No command waits for approval.",
    }


# The inventory costs tens of milliseconds on a large store (it plans a pass); it is kept per store while
# the revision stays the same, for at most INVENTORY_TTL_S (eligibility also moves with time).
INVENTORY_TTL_S = 30.0
_INVENTORIES: dict[str, tuple[str, float, dict[str, Any]]] = {}
_INVENTORIES_LOCK = threading.Lock()


def _cached_inventory(project: Project, con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    key, now = str(project.store.path), time.monotonic()
    stamp = revision(con)
    with _INVENTORIES_LOCK:
        found = _INVENTORIES.get(key)
    if found is not None and found[0] == stamp and now - found[1] < INVENTORY_TTL_S:
        return found[2]
    inventory = project.compaction_inventory(con)
    with _INVENTORIES_LOCK:
        if len(_INVENTORIES) >= 64:
            _INVENTORIES.pop(next(iter(_INVENTORIES)))
        _INVENTORIES[key] = (stamp, now, inventory)
    return inventory


def _compaction(
    project: Project, con: duckdb.DuckDBPyConnection, _current: Snapshot | None
) -> dict[str, Any]:
    """The compaction inventory (``Project.compaction_inventory``): relational and compacted snapshots, bytes
    before and after, what the policy would compact next and what it protects, the last pass."""
    inventory = _cached_inventory(project, con)
    values = project_settings.read(con, [spec.key for spec in project_settings.COMPACTION])
    compacted, detail, payload = inventory["compacted"], inventory["detail_bytes"], inventory["payload_bytes"]
    items = [
        {
            "kind": "relational snapshots (detail rows, every query direct)",
            "count": inventory["relational"],
            "bytes": None,
            "detail_bytes": None,
        },
        {
            "kind": "compacted snapshots (zstd payloads, restored on first query)",
            "count": compacted,
            "bytes": payload,
            "detail_bytes": detail,
        },
        {
            "kind": "eligible for the next pass",
            "count": inventory["eligible"],
            "bytes": None,
            "detail_bytes": None,
        },
        {
            "kind": "protected (the newest of its suite, or in use by a run)",
            "count": inventory["protected"],
            "bytes": None,
            "detail_bytes": None,
        },
    ]
    return {
        "available": True,
        "items": items,
        "policy": inventory["policy"],
        # the policy as the page's form edits it (project_settings_update): each setting's value and range
        "settings": [
            {
                "key": spec.key,
                "value": values[spec.key],
                "low": spec.low,
                "high": spec.high,
                "help": spec.help,
            }
            for spec in project_settings.COMPACTION
        ],
        "last_pass": inventory["last_pass"],
        "inconsistent": inventory["inconsistent"][:MAX_PENDING],
        "ratio": round(detail / payload, 2) if payload else None,
    }


# Sections other parts of coverage-mcp fill in: name -> fn(project, con, current) -> section.
# Each answers {"available": bool, ...}; registered here so the projection names them all.
SECTIONS: dict[str, Callable[[Project, duckdb.DuckDBPyConnection, Snapshot | None], dict[str, Any]]] = {
    "runs": _runs,
    "approvals": _approvals,
    "compaction": _compaction,
}


def dashboard(call: Call) -> dict[str, Any]:
    """The dashboard row: the page's data for one project. ``current``/``baseline``: snapshot ids (or a
    unique prefix); ``baseline="none"`` for no comparison; ``suite``: whose snapshots (default: the
    current's, else the default suite, else the newest snapshot's); ``composite``/``composite_baseline``:
    composite snapshot ids, chosen independently (default: the newest and the one before it); ``order``: the
    file table's order before it is cut to ``MAX_FILES`` (``vocabulary.FILE_ORDERS``, default ``path``). An
    empty value is no choice, as in the page's address."""
    project, con = call.project, call.con
    chosen = {key: call.args.get(key) or None for key in SELECTION}
    current, baseline, suite = chosen["current"], chosen["baseline"], chosen["suite"]
    order = chosen["order"] or "path"
    state = project.state()
    checkout = project.checkout
    cur = _snapshot(project, con, current, "current") if current else None
    if cur is not None and suite is not None and cur.suite != suite:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"current snapshot {cur.snapshot_id} is of suite {cur.suite!r}, not {suite!r}",
            "Drop suite, or pick a snapshot of that suite.",
        )
    if cur is None:
        cur = project.store.latest(suite or DEFAULT_SUITE, con)
        if cur is None and suite is None:
            cur = project.store.latest(None, con)
    suite_name = cur.suite if cur is not None else (suite or DEFAULT_SUITE)
    call.suite = suite_name
    if baseline == "none" or cur is None:
        base = None
    elif baseline:
        base = _snapshot(project, con, baseline, "baseline")
    else:
        base = _previous(project, con, cur)
    suites = [
        r[0]
        for r in con.execute(
            "SELECT suite FROM snapshots GROUP BY suite ORDER BY max(snap) DESC LIMIT 50"
        ).fetchall()
    ]
    points = project.store.snapshots(suite=suite_name, limit=MAX_TIMELINE + 1, con=con)
    runs = provenance.runs_of(con, [p.snapshot_id for p in points[:MAX_TIMELINE]])
    review = _review(call)
    change = _change(review, cur, base) if cur is not None and base is not None else None
    chosen_ids = [p.snapshot_id for p in points[:MAX_TIMELINE]] + [s.snapshot_id for s in (cur, base) if s]
    kept = _retention(project, con, sorted(set(chosen_ids)))
    data: dict[str, Any] = {
        "project": {
            "project_id": checkout.project_id,
            "repo_key": checkout.repo_key,
            "checkout_path": str(checkout.worktree_path),
            "worktree": checkout.worktree_name,
            "head": state.head,
            "branch": state.branch,
            "dirty": state.dirty,
        },
        "revision": revision(con),
        "suite": suite_name,
        "suites": suites,
        "selection": {
            side: None
            if snap is None
            else {**(_selected(con, snap) or {}), "retention": kept.get(snap.snapshot_id)}
            for side, snap in (("current", cur), ("baseline", base))
        },
        "metrics": _metrics(cur, base),
        "timeline": {
            # Each point with its scope and, for a run's snapshot, the run, command and case arguments.
            "points": [
                {**_point(p), "run": runs.get(p.snapshot_id), "retention": kept.get(p.snapshot_id)}
                for p in reversed(points[:MAX_TIMELINE])
            ],
            "truncated": len(points) > MAX_TIMELINE,
        },
        "change": change,
        "files": _files(project, con, cur, change, order) if cur is not None else None,
        "tests": dashboard_tests.tests(project, con, review, cur, WHOLE) if cur is not None else None,
        "category_words": CATEGORY_WORDS,
    }
    for name, section in SECTIONS.items():
        data[name] = section(project, con, cur)
    data["composite"] = _composite(project, con, chosen["composite"], chosen["composite_baseline"])
    return {"data": data, "page": None}


def _review(call: Call) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """coverage_review's data, asked on this call's connection."""
    return lambda args: call.ask("coverage_review", args)["data"]


def run_logs(call: Call) -> dict[str, Any]:
    """The dashboard_run row: one run's status and the first page of its logs (``run_review``), for the
    runs view."""
    run_id = call.args["run"]
    status = call.ask("run_review", {"run_id": run_id, "view": "status"})["data"]["run"]
    logs = call.ask("run_review", {"run_id": run_id, "view": "logs"})
    data = {
        "run_id": run_id,
        "run": status,
        "logs": logs["data"].get("logs"),
        "text": logs["data"].get("text", []),
        "more": bool((logs.get("page") or {}).get("next_cursor")),
    }
    return {"data": data, "page": None}


def file_source(call: Call) -> dict[str, Any]:
    """The dashboard_file row: one file's annotated lines as the snapshot measured them (``review source``),
    for the drill-down."""
    path: str = call.args["file"]
    snap = _snapshot(call.project, call.con, call.args["snapshot"], "snapshot")
    call.suite = snap.suite
    args: dict[str, Any] = {
        "task": "source",
        "representation": "review",
        "limits": WHOLE,
        "file": path,
        "measurement": {"snapshot_id": snap.snapshot_id},
        "lines": f"1-{MAX_SOURCE_LINES}",
    }
    # Pages of source (each at most the record cap) until the file or MAX_SOURCE_LINES ends.
    lines: list[Any] = []
    while True:
        try:
            answer = call.ask("coverage_review", args)
        except CoverageError as error:
            if error.details.get("file_lines") != 0:
                raise
            answer = {"data": {"ranges": [], "commit": error.details.get("commit")}, "page": None}
        data = answer["data"]
        lines += [line for r in data.get("ranges") or [] for line in r.get("lines", [])]
        following = (answer.get("page") or {}).get("next_cursor")
        if not following:
            break
        args["cursor"] = following
    total = (answer.get("page") or {}).get("total", len(lines))
    truncated = bool(data.get("lines_truncated")) or total > MAX_SOURCE_LINES
    source = {
        "snapshot_id": snap.snapshot_id,
        "file": path,
        "commit": data.get("commit"),
        "lines": lines,
        "file_lines": total,
        "truncated": truncated,
        "claim_status": data.get("claim_status"),
        "reasons": data.get("reasons") or [],
    }
    return {"data": source, "page": None}


MAX_INCREMENTAL_FILES = 50


def incremental(call: Call) -> dict[str, Any]:
    """The dashboard_incremental row: the incremental review of ``snapshot`` against ``baseline`` (the
    baseline-union-current projection: its groups kept, gained, lost, not observed and the rest), asked on
    demand by the change view; a comparison the review refuses is ``available: false`` with its reason."""
    current = _snapshot(call.project, call.con, call.args["snapshot"], "snapshot")
    base = _snapshot(call.project, call.con, call.args["baseline"], "baseline")
    call.suite = current.suite
    try:
        data = call.ask(
            "coverage_review",
            {
                "task": "incremental",
                "representation": "review",
                "limits": WHOLE,
                "measurement": {"snapshot_id": current.snapshot_id},
                "baseline": {"kind": "explicit", "snapshot_id": base.snapshot_id},
            },
        )["data"]
    except CoverageError as error:
        return {"data": {"available": False, "reason": error.message, "code": error.code.value}, "page": None}
    files = data.get("files") or []
    shown = {
        "available": True,
        "projection": data.get("projection"),
        "categories": data.get("categories"),
        "lines": data.get("lines"),
        "regression": data.get("regression"),
        "tests": data.get("tests"),
        "claim_status": data.get("claim_status"),
        "reasons": data.get("reasons") or [],
        "files": files[:MAX_INCREMENTAL_FILES],
        "files_truncated": len(files) > MAX_INCREMENTAL_FILES,
    }
    return {"data": shown, "page": None}


def revision_of(call: Call) -> dict[str, Any]:
    """The dashboard_revision row: what the event stream compares (``revision``)."""
    return {"data": {"revision": revision(call.con)}, "page": None}
