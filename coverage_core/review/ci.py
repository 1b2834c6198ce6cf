"""``diff`` and ``gate``: a whole change review against a baseline, and CI checks over it.

What the ``diff`` and ``gate`` commands print is decided here, once, for any
owner of the store: a ``Project`` of this process, or anything with the
service's ``call(name, arguments)`` (``coverage_daemon.client.DaemonProject``
when the daemon holds the store). Both functions take plain arguments,
validated against ``DIFF_SCHEMA`` / ``GATE_SCHEMA`` (where the command line's
option choices and ranges come from), and return one envelope
``{context, data, page}``:

- ``diff``: ``coverage_review(task="change", representation="audit")`` with
  every page merged: the fixed part, then every file row, every range and
  ``ranges_truncated``; ``page`` is null.
- ``gate``: ``passed``, the requested ``checks`` (each with a sentence a
  person can act on), and the comparison's sides, categories and patch.
  ``failure(envelope)`` is the ``threshold_not_met`` error of a failed gate.

``current`` is a stored snapshot (``snapshot_id``), or a report file
(``report_path``) that is parsed and mapped in memory and never stored; it
needs the store itself, so with another owner it is ``store_locked`` and the
suggestion says how to store it first. Without ``current``: HEAD's snapshot of
``suite`` (``select.current_at_head``). When there is none, or HEAD does not
descend from the baseline's commit, nothing is compared: ``diff`` answers the
``stale`` claim with ``reason_codes: ["current_not_measured"]``, ``gate``
does not pass (``passed`` false, no checks), and ``not_compared(envelope)``
says so (the command line exits 1).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from ..errors import CoverageError, ErrorCode, Remedy
from ..project import DEFAULT_SUITE, SCOPES, Project
from ..service import OPERATIONS, Service, envelope
from ..validation import Validator
from .budget import MAX_BYTES, MAX_WORDS, Budget
from .call import Call
from .change import CURRENT_NOT_MEASURED, change_of_report
from .comparing import unstored
from .gate import (
    DEFAULT_CRITERIA,
    MAX_CRITERIA_CHARS,
    Check,
    Criteria,
    Summary,
    evaluate,
)

PAGE_FILES = 50  # file rows per page read (every page is read)
PAGE_REGIONS = 500
MIN_PERCENT, MAX_PERCENT = 0, 100

Run = Callable[[str, dict[str, Any]], dict[str, Any]]


class Owner(Protocol):
    """What owns the store when it is not this process: runs a declared operation."""

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]: ...


_PERCENT = {"type": "number", "minimum": MIN_PERCENT, "maximum": MAX_PERCENT}

DIFF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["baseline"],
    "properties": {
        "baseline": OPERATIONS["coverage_review"].input_schema["properties"]["baseline"],
        "current": {
            "type": "object", "additionalProperties": False, "maxProperties": 1,
            "description": "A stored snapshot, or a report file compared without storing it "
                           "(default: HEAD's snapshot of suite; without one nothing is compared: "
                           "claim stale, reason code current_not_measured).",
            "properties": {"snapshot_id": {"type": "string", "minLength": 1},
                           "report_path": {"type": "string", "minLength": 1, "maxLength": 4096}},
        },
        "suite": {"type": "string", "minLength": 1, "maxLength": 200},
        "scope": {"enum": list(SCOPES), "description": "Scope of a current report_path."},
    },
}

GATE_SCHEMA: dict[str, Any] = {
    **DIFF_SCHEMA,
    "properties": {
        **DIFF_SCHEMA["properties"],
        "fail_under_total": {**_PERCENT, "description": "Minimum total line coverage of the current side, percent."},
        "fail_under_patch": {**_PERCENT, "description": "Minimum patch coverage, percent."},
        "ratchet": {"type": "boolean", "description": "No file or directory may have more uncovered lines."},
        "criteria": {"type": "string", "minLength": 1, "maxLength": MAX_CRITERIA_CHARS,
                     "description": f"A condition over the categories (default when no other check is "
                                    f"given: {DEFAULT_CRITERIA!r})."},
    },
}

_DIFF, _GATE = Validator(DIFF_SCHEMA), Validator(GATE_SCHEMA)
CHECKS = ("fail_under_total", "fail_under_patch", "ratchet", "criteria")


def diff(owner: Project | Owner, args: dict[str, Any]) -> dict[str, Any]:
    """The whole change answer (every page, audit representation) as one envelope."""
    _DIFF.check(args, what="diff")
    return _whole(owner, args)


def gate(owner: Project | Owner, args: dict[str, Any]) -> dict[str, Any]:
    """The requested checks over the whole change answer; without any, the default criteria."""
    _GATE.check(args, what="gate")
    asked = any(args.get(k) not in (None, False) for k in CHECKS)
    text = args.get("criteria", None if asked else DEFAULT_CRITERIA)
    criteria = Criteria(text) if text is not None else None  # bad criteria fail before any work
    whole = _whole(owner, {k: v for k, v in args.items() if k not in CHECKS})
    if not_compared(whole):
        d = whole["data"]
        data = {"passed": False, "checks": [], "baseline": d["baseline"], "current": d["current"],
                "claim_status": d["claim_status"], "reasons": d["reasons"], "reason_codes": d["reason_codes"],
                "next": d["next"]}
        return {"context": whole["context"], "data": data, "page": None}
    summary = Summary.from_pages([whole])
    checks = evaluate(summary, fail_under_total=args.get("fail_under_total"),
                      fail_under_patch=args.get("fail_under_patch"), ratchet=bool(args.get("ratchet")),
                      criteria=criteria)
    d = summary.data
    data = {"passed": all(c.passed for c in checks), "checks": [_check(c) for c in checks],
            "baseline": d["baseline"], "current": d["current"], "categories": d["categories"],
            "patch": d["patch"], "claim_status": d["claim_status"], "reasons": d["reasons"]}
    return {"context": whole["context"], "data": data, "page": None}


def not_compared(envelope: dict[str, Any]) -> bool:
    """Whether a ``diff`` or ``gate`` envelope compared nothing because HEAD's measurement is missing."""
    return CURRENT_NOT_MEASURED in envelope["data"].get("reason_codes", ())


def failure(args: dict[str, Any], envelope: dict[str, Any]) -> CoverageError | None:
    """The ``threshold_not_met`` error of a failed gate (None when it passed); its remedy lists the ranges."""
    checks = envelope["data"]["checks"]
    failed = [c["name"] for c in checks if not c["passed"]]
    if not failed:
        return None
    remedy = None
    current = args.get("current") or {}
    if "report_path" not in current:
        review: dict[str, Any] = {"task": "change", "baseline": args["baseline"], "representation": "review"}
        if "snapshot_id" in current:
            review["measurement"] = {"snapshot_id": current["snapshot_id"]}
        elif args.get("suite"):
            review["measurement"] = {"suite": args["suite"]}
        remedy = Remedy(operation="coverage_review", arguments=review)
    return CoverageError(
        ErrorCode.THRESHOLD_NOT_MET, f"{len(failed)} of {len(checks)} checks failed: " + ", ".join(failed),
        "Cover the listed lines (a change review against the same baseline shows the ranges), or adjust the gate.",
        {"failed": failed}, remedy,
    )


def _check(c: Check) -> dict[str, Any]:
    return {"name": c.name, "passed": c.passed, "detail": c.detail}


def _review_args(args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"task": "change", "baseline": args["baseline"], "representation": "audit",
                           "limits": {"max_files": PAGE_FILES, "max_regions": PAGE_REGIONS,
                                      "max_words": MAX_WORDS, "max_bytes": MAX_BYTES}}
    current = args.get("current") or {}
    if "snapshot_id" in current:
        out["measurement"] = {"snapshot_id": current["snapshot_id"]}
    elif args.get("suite"):
        out["measurement"] = {"suite": args["suite"]}
    return out


def _runner(owner: Project | Owner, args: dict[str, Any]) -> Run:
    """How one page is read: the service, the other owner, or an unstored report of this process."""
    report = (args.get("current") or {}).get("report_path")
    if report is None:
        if isinstance(owner, Project):
            return Service(owner).call
        return owner.call
    if not isinstance(owner, Project):
        raise CoverageError(
            ErrorCode.STORE_LOCKED, "the daemon holds the store, and an unstored report needs the store itself",
            f"Ingest the report (coverage-mcp ingest {report} --suite {args.get('suite') or DEFAULT_SUITE}) and "
            "pass its snapshot id as --current, or stop the daemon (coverage-mcp stop) and retry.",
            {"report_path": report},
        )
    sel, side = unstored(owner, report, suite=args.get("suite") or DEFAULT_SUITE, scope=args.get("scope", "complete"))

    def page(_name: str, review: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        con = owner.store.cursor()
        try:
            call = Call(owner, con, review)
            call.suite = sel.primary.suite
            return envelope(call, change_of_report(call, sel, side, Budget(review.get("limits"))), started)
        finally:
            con.close()

    return page


def _whole(owner: Project | Owner, args: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    run = _runner(owner, args)
    review = _review_args(args)
    pages = [run("coverage_review", review)]
    if not_compared(pages[0]):  # HEAD is not measured: the stale claim says so, and compares nothing
        return {**pages[0], "page": None}
    if pages[0]["page"] is None:  # nothing measured: the answer's reasons say what is missing
        suite = pages[0]["context"]["suite"]
        raise CoverageError(
            ErrorCode.NOT_FOUND, "; ".join(pages[0]["data"]["reasons"]),
            f"Store a report first (coverage-mcp ingest REPORT --suite {suite}), or pass --current REPORT.",
            {"suite": suite},
        )
    while pages[-1]["page"]["next_cursor"]:
        pages.append(run("coverage_review", {**review, "cursor": pages[-1]["page"]["next_cursor"]}))
    s = Summary.from_pages(pages)
    context = dict(pages[0]["context"])
    context["stats"] = {"elapsed_ms": round((time.perf_counter() - started) * 1000, 3),
                        "rows_scanned": sum(p["context"]["stats"]["rows_scanned"] for p in pages)}
    data = {**s.data, "files": list(s.files), "ranges": list(s.ranges), "ranges_truncated": s.ranges_truncated}
    return {"context": context, "data": data, "page": None}
