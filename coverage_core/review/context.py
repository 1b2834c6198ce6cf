"""``project_context`` and the claim rules every answer shares.

A claim is never stronger than its evidence: a snapshot of another commit than
HEAD is ``stale``; one taken on a dirty tree, of a ``subset`` run, with
unmapped files, or read while the checkout has uncommitted tracked changes is
``limited``; no snapshot at all is ``not_measured``. Per file, ``project_context``
also says which measured files HEAD still has the measured text of
(``suites[].content``, see ``freshness``).
"""

from __future__ import annotations

import copy
import datetime as dt
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ..display import counted
from ..model import Snapshot
from ..project import CheckoutState
from ..storage import guard
from ..storage.exec_db import reader
from ..vocabulary import ACTIVE_RUN_STATES, CLAIM_ORDER, COUNTERS
from . import cursors
from .budget import Budget, size, words
from .call import Call
from .freshness import content_summary, stale_reason

MAX_SUITES = 10
MAX_ACTIVE_RUNS = 10
MAX_COMMANDS = 8


# The runtime's and the composites' modules, imported when project_context first needs them: every other
# answer imports this module for its claim rules, and a CI ``diff`` that never lists runs, commands or
# composites would pay about 50 ms of start-up for them (execution's records build cattrs converters).
def _runs() -> ModuleType:
    from ..execution import runs

    return runs


def _commands() -> ModuleType:
    from ..execution import commands

    return commands


def _composite_store() -> ModuleType:
    from ..composite import persistence

    return persistence


def _none_in(call: Call, sql: str, params: list[Any] | None = None) -> bool:
    """Whether ``sql`` (a ``SELECT 1 ... LIMIT 1``) finds no row: most checkouts have no composite, no run in
    flight and no command, and one look at the table says so without importing the modules that read them."""
    return reader(call.project.store, call.con).one(sql, params or []) is None


def checkout_state(call: Call) -> CheckoutState:
    return call.project.state()


def commits_behind(call: Call, commit: str | None, head: str | None) -> int | None:
    if not commit or not head or commit == head:
        return 0 if commit == head else None
    if not call.project.git.has_commit(commit):
        return None
    ahead, _behind = call.project.git.distance(commit, head)
    return ahead


# Claim statuses from the weakest to the strongest evidence.


def claim_for_selection(call: Call, sel: Any) -> dict[str, Any]:
    """The claim of an answer drawn from every snapshot of a selection: the weakest
    status among them, every reason once, and the selection's own notes first."""
    state = checkout_state(call)
    claims = [claim_for(call, snap, state=state) for snap in sel.snapshots]
    status = min((c["claim_status"] for c in claims), key=CLAIM_ORDER.index)
    reasons: list[str] = list(sel.notes)
    for c in claims:
        reasons += [r for r in c["reasons"] if r not in reasons]
    return {"claim_status": status, "reasons": reasons}


def claim_for_file(call: Call, snap: Snapshot, path: str, claim: dict[str, Any]) -> dict[str, Any]:
    """``claim`` of an answer about one file of ``snap``, ``stale`` when the checkout no longer has the text
    the snapshot measured of it (a file modified since it was measured), with the reason naming it."""
    reason = stale_reason(call, snap, [path])
    if reason is None:
        return claim
    status = min(claim["claim_status"], "stale", key=CLAIM_ORDER.index)
    return {"claim_status": status, "reasons": [reason] + [r for r in claim["reasons"] if r != reason]}


def claim_for(call: Call, snap: Snapshot | None, *, state: CheckoutState | None = None) -> dict[str, Any]:
    """``claim_status`` and ``reasons`` of an answer drawn from ``snap``."""
    if snap is None:
        return {"claim_status": "not_measured", "reasons": [f"no snapshot of suite {call.suite!r} yet"]}
    state = state or checkout_state(call)
    reasons: list[str] = []
    status = "supported"
    if snap.commit != state.head:
        status = "stale"
        behind = commits_behind(call, snap.commit, state.head)
        gap = f" ({counted(behind, 'commit')} behind)" if behind else ""
        reasons.append(
            f"measured at {(snap.commit or 'no commit')[:12]}, HEAD is {(state.head or 'unborn')[:12]}{gap}"
        )
    limited = []
    if snap.dirty:
        limited.append("measured on a tree with uncommitted tracked changes")
    if snap.commit == state.head:
        # Judged against the working tree as it is now: the files modified since they were measured, by name.
        stale = stale_reason(call, snap)
        if stale is not None:
            limited.append(stale)
        elif state.dirty and not snap.dirty:
            limited.append("the checkout has uncommitted tracked changes the snapshot may not reflect")
    if snap.scope == "subset":
        limited.append("measured by a subset of the tests: absence is not_observed, not uncovered")
    if snap.path_mapping.unmapped or snap.path_mapping.ambiguous:
        limited.append(
            f"{snap.path_mapping.unmapped} unmapped and {snap.path_mapping.ambiguous} ambiguous files "
            "are stored under their report paths"
        )
    if limited and status == "supported":
        status = "limited"
    return {"claim_status": status, "reasons": reasons + limited}


def _age_seconds(created: dt.datetime) -> int:
    return max(0, int((dt.datetime.now(dt.UTC) - created).total_seconds()))


def snapshot_brief(call: Call, snap: Snapshot, state: CheckoutState) -> dict[str, Any]:
    main = snap.headline  # the producing tool's own total, as it rounds it
    brief = {
        "suite": snap.suite,
        "snapshot_id": snap.snapshot_id,
        "format": snap.format,
        "commit": (snap.commit or "")[:12],
        "age_s": _age_seconds(snap.created_at),
        "behind_head": commits_behind(call, snap.commit, state.head),
        "dirty": snap.dirty,
        "scope": snap.scope,
        "covered": [main.hit, main.found] if main else None,
        "percent": main.percent if main else None,
        "counter": main.counter if main else None,
        "claim_status": claim_for(call, snap, state=state)["claim_status"],
        # Per file, by content identity: fresh while HEAD has the measured text.
        "content": content_summary(call, snap),
    }
    return brief


def latest_per_suite(call: Call) -> tuple[list[Snapshot], bool]:
    snaps = call.project.store.newest_per_suite(MAX_SUITES + 1, call.con)
    return snaps[:MAX_SUITES], len(snaps) > MAX_SUITES


def _latest_composite(call: Call) -> dict[str, Any] | None:
    """The newest composite snapshot's compact record (coverage_core/composite), or None."""
    found = call.as_of_generation(
        "latest_composite",
        lambda: (
            None
            if _none_in(call, "SELECT 1 FROM composite_snapshots LIMIT 1")
            else _composite_store().latest(call.project.store, call.con)
        ),
    )
    return None if found is None else found.compact()


# Compaction eligibility ages with the clock, not only with writes: the inventory is read again each minute.
INVENTORY_CLOCK_S = 60


def project_context(call: Call) -> dict[str, Any]:
    budget = Budget(None, max_words=call.args.get("max_words"))
    # Command pages are the only thing a cursor continues here.
    offset = cursors.decode(
        call, "project_context", call.project.checkout.project_id, call.args.get("cursor")
    )
    state = checkout_state(call)
    checkout = call.project.checkout
    snaps, truncated = latest_per_suite(call)
    settings = call.project.settings
    data: dict[str, Any] = {
        "project": {
            "repo_key": checkout.repo_key,
            "project_id": checkout.project_id,
            "checkout_path": str(checkout.worktree_path),
            "worktree": checkout.worktree_name,
            "head": state.head,
            "branch": state.branch,
            "dirty": state.dirty,
        },
        "suites": [snapshot_brief(call, s, state) for s in snaps],
        "suites_truncated": truncated,
        "latest_composite": _latest_composite(call),
        "active_runs": [],
        "active_runs_truncated": False,
        "settings": {"max_report_bytes": settings.max_report_bytes, "formats": "detected from content"},
        "next": (
            "coverage_review task=insight for what to test next; task=source with file for annotated lines"
            if snaps
            else "coverage_import a report (e.g. coverage.json) to create the first snapshot"
        ),
    }
    inventory = call.as_of_generation(
        ("compaction_inventory", int(time.time() // INVENTORY_CLOCK_S)),
        lambda: call.project.compaction_inventory(call.con),
    )
    data["compaction"] = {
        k: inventory[k]
        for k in ("relational", "compacted", "detail_bytes", "payload_bytes", "eligible", "protected")
    }
    data["compaction"]["last_pass"] = (inventory["last_pass"] or {}).get("finished_at")
    if inventory["inconsistent"]:
        data["compaction"]["inconsistent"] = inventory["inconsistent"][:MAX_SUITES]
    kept = guard.preserved_notice(call.project.store.path)
    if kept is not None:  # a WAL whose replay lost data, kept for the user: say so until they deal with it
        data["preserved_wal"] = kept
    latest = next((s for s in snaps if s.suite == call.suite), snaps[0] if snaps else None)
    data.update(claim_for(call, latest, state=state))
    # The fixed reservation is everything but the command page; commands are
    # paged into whatever budget remains (no approved commands exist yet).
    active = call.as_of_generation(
        "active_runs",
        lambda: (
            []
            if _none_in(
                call, "SELECT 1 FROM runs WHERE list_contains(?, state) LIMIT 1", [list(ACTIVE_RUN_STATES)]
            )
            else _runs().list_runs(
                call.project, None, limit=MAX_ACTIVE_RUNS + 1, states=ACTIVE_RUN_STATES, con=call.con
            )
        ),
    )
    data["active_runs"] = [
        {k: copy.deepcopy(r[k]) for k in ("id", "state", "command_id", "args")}
        for r in active[:MAX_ACTIVE_RUNS]
    ]
    data["active_runs_truncated"] = len(active) > MAX_ACTIVE_RUNS
    data["commands"] = []
    omitted = _shorten(data, budget)
    reserved_words = words(data)
    # Approved and pending commands (rejected ones are not an agent's to use), a page at a time.
    listed = call.as_of_generation(
        ("commands", offset),
        lambda: (
            []
            if _none_in(call, "SELECT 1 FROM commands LIMIT 1")
            else [
                {k: c[k] for k in ("id", "name", "status", "argv", "args_policy", "approve_with") if k in c}
                for c in _commands().list_commands(
                    call.project,
                    None,
                    limit=MAX_COMMANDS + 1,
                    offset=offset,
                    brief=True,
                    statuses=("approved", "pending"),
                    con=call.con,
                )
            ]
        ),
    )
    # The page's own copies: the cached records stay as they were read, whatever a caller does to its answer.
    shown = budget.fit_list(data, "commands", copy.deepcopy(listed[:MAX_COMMANDS]))
    page_words = words(data["commands"]) if shown else 0
    more = shown < len(listed)
    next_cursor = (
        cursors.encode(call, "project_context", call.project.checkout.project_id, offset + shown)
        if more and shown
        else None
    )
    return {
        "data": data,
        "page": {
            "reserved_words": reserved_words,
            "word_count": page_words,
            "response_word_count": words(data),
            "max_words": budget.max_words,
            "next_cursor": next_cursor,
            # What a small budget left out, least needed first; an empty list when nothing was.
            "omitted": omitted,
        },
    }


def _without_file_lists(data: dict[str, Any]) -> None:
    for suite in data["suites"]:
        content = suite["content"]
        content["files_truncated"] = content["files_truncated"] or bool(content["files"])
        content["files"] = []


def _brief_project(data: dict[str, Any]) -> None:
    # The envelope's context names the repository and checkout already.
    data["project"] = {k: data["project"][k] for k in ("head", "branch", "dirty")}


def _brief_suites(data: dict[str, Any]) -> None:
    kept = ("suite", "snapshot_id", "behind_head", "claim_status")
    data["suites"] = [{k: suite[k] for k in kept} for suite in data["suites"]]


def _suites(keep: int) -> Callable[[dict[str, Any]], None]:
    def shed(data: dict[str, Any]) -> None:
        data["suites_truncated"] = data["suites_truncated"] or len(data["suites"]) > keep
        data["suites"] = data["suites"][:keep]

    return shed


def _first_reason(data: dict[str, Any]) -> None:
    data["reasons"] = data["reasons"][:1]


# What a budget too small for the whole answer sheds, in order, until the answer fits: each
# step says what it left out (page.omitted), and what is left is still true.
_SHEDDING: tuple[tuple[str, Callable[[dict[str, Any]], None]], ...] = (
    ("suites.content.files", _without_file_lists),
    ("compaction", lambda data: data.pop("compaction", None)),
    ("preserved_wal", lambda data: data.pop("preserved_wal", None)),
    ("latest_composite", lambda data: data.update(latest_composite=None)),
    ("settings", lambda data: data.update(settings={})),
    ("project.identity", _brief_project),
    ("next", lambda data: data.pop("next", None)),
    ("suites.detail", _brief_suites),
    ("suites", _suites(1)),
    ("reasons", _first_reason),
    ("suites", _suites(0)),
)


def _shorten(data: dict[str, Any], budget: Budget) -> list[str]:
    """Shed from ``data`` what the budget cannot hold (``_SHEDDING``); raise when even the rest is too big."""
    omitted: list[str] = []
    for name, shed in _SHEDDING:
        if budget.fits(data):
            return omitted
        shed(data)
        if name not in omitted:
            omitted.append(name)
    if not budget.fits(data):
        raise budget.too_small(*size(data))
    return omitted


def main_counter(snap: Snapshot) -> str | None:
    for name in ("lines", "statements", *COUNTERS):
        if name in snap.totals:
            return name
    return None
