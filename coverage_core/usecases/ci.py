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

``gate`` without a ``baseline`` checks the total alone (coverage.py's
``--fail-under``): it needs ``fail_under_total`` and no other check, and reads
the current side as a review against ``{"kind": "none"}`` does. A total gate
whose current side is a ``subset`` (only ever one the caller named, or the
only measurement of HEAD) is refused (``invalid_argument``, reason
``subset_total``): a subset's total is not the suite's.

When no snapshot measures the baseline's commit, ``baseline_fallback="ancestor"``
compares with the nearest ancestor of that commit that has one (Codecov's
behaviour), and ``data.baseline.fallback`` names the commit asked for and the
one used; without it the ``baseline_unavailable`` error stands. ``diff`` with
``snippets`` adds ``data.snippets``: the measured text of the uncovered new
lines (UNC), a few lines each, for a pull-request comment.

``current`` is a stored snapshot (``snapshot_id``), or a report file
(``report_path``) that is parsed and mapped in memory and never stored. A
report is the working tree's measurement only as far as its identity is shown
(``review.evidence``: tree, time, lines, checksums); what is missing makes the
claim ``limited`` with reason code ``report_identity_unproven``, unless
``commit`` names the commit it measured. ``gate`` never passes on such a
report: its checks are evaluated and shown, ``passed`` is false and the command
line exits 1 (the comparison could not be shown to be of this checkout). It
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
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import CoverageError, ErrorCode, Remedy
from ..operations.table import OPERATIONS
from ..project import DEFAULT_SUITE, Project
from ..review import baseline as baselines
from ..review.annotated_source import MAX_LINE_CHARS
from ..review.budget import MAX_BYTES, MAX_WORDS, Budget
from ..review.call import Call
from ..review.change import CURRENT_NOT_MEASURED, change_of_report
from ..review.comparing import unstored
from ..review.evidence import REPORT_IDENTITY_UNPROVEN
from ..review.gate import DEFAULT_CRITERIA, MAX_CRITERIA_CHARS, Check, Criteria, Summary, evaluate
from ..service import Service, envelope
from ..validation import Validator
from ..vocabulary import COUNTERS, SCOPES

if TYPE_CHECKING:
    from ..checkout import Checkout

PAGE_FILES = 50  # file rows per page read (every page is read)
PAGE_REGIONS = 500
MIN_PERCENT, MAX_PERCENT = 0, 100
FALLBACKS = ("ancestor",)
NO_BASELINE: dict[str, Any] = {"kind": "none"}
# Snippets: files, UNC ranges per file (task=source's own limit), lines shown of each range, context lines.
SNIPPET_FILES, SNIPPET_RANGES, SNIPPET_LINES, SNIPPET_CONTEXT = 25, 10, 5, 1
MAX_LISTED_SNAPSHOTS = 5000  # snapshots read to find a measured ancestor

Run = Callable[[str, dict[str, Any]], dict[str, Any]]


class Owner(Protocol):
    """What owns the store when it is not this process: runs a declared operation, knows its checkout."""

    checkout: Checkout

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]: ...


_PERCENT = {"type": "number", "minimum": MIN_PERCENT, "maximum": MAX_PERCENT}

DIFF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["baseline"],
    "properties": {
        "baseline": OPERATIONS["coverage_review"].input_schema["properties"]["baseline"],
        "current": {
            "type": "object",
            "additionalProperties": False,
            "maxProperties": 1,
            "description": "A stored snapshot, or a report file compared without storing it "
            "(default: HEAD's snapshot of suite; without one nothing is compared: "
            "claim stale, reason code current_not_measured).",
            "properties": {
                "snapshot_id": {"type": "string", "minLength": 1},
                "report_path": {"type": "string", "minLength": 1, "maxLength": 4096},
            },
        },
        "suite": {"type": "string", "minLength": 1, "maxLength": 200},
        "scope": {"enum": list(SCOPES), "description": "Scope of a current report_path."},
        "commit": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "The commit a current report_path measured (default: the working tree, as far as "
            "the report's identity is shown; what is missing limits the claim: reason code "
            "report_identity_unproven).",
        },
        "baseline_fallback": {
            "enum": list(FALLBACKS),
            "description": "ancestor: when no snapshot measures the baseline commit, compare with "
            "its nearest measured ancestor (data.baseline.fallback names both).",
        },
        "snippets": {
            "type": "boolean",
            "description": "Add data.snippets: the measured source text of uncovered new lines (UNC).",
        },
    },
}

GATE_SCHEMA: dict[str, Any] = {
    **DIFF_SCHEMA,
    "required": [],
    "properties": {
        **{k: v for k, v in DIFF_SCHEMA["properties"].items() if k != "snippets"},
        "baseline": {
            **DIFF_SCHEMA["properties"]["baseline"],
            "description": "What to compare against; without it only fail_under_total is checked.",
        },
        "fail_under_total": {
            **_PERCENT,
            "description": "Minimum total of the current side, percent: the producing tool's own "
            "--fail-under on its headline (counter picks another).",
        },
        "counter": {
            "enum": ["headline", *COUNTERS],
            "description": "What fail_under_total checks (default headline; lines: the exact line total).",
        },
        "precision": {
            "type": "integer",
            "minimum": 0,
            "maximum": 10,
            "description": "coverage.py's report:precision for fail_under_total (default 0).",
        },
        "fail_under_patch": {**_PERCENT, "description": "Minimum patch coverage, percent."},
        "ratchet": {"type": "boolean", "description": "No file or directory may have more uncovered lines."},
        "criteria": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_CRITERIA_CHARS,
            "description": f"A condition over the categories (default when no other check is "
            f"given: {DEFAULT_CRITERIA!r}).",
        },
    },
}

_DIFF, _GATE = Validator(DIFF_SCHEMA), Validator(GATE_SCHEMA)
CHECKS = ("fail_under_total", "fail_under_patch", "ratchet", "criteria")


def diff(owner: Project | Owner, args: dict[str, Any]) -> dict[str, Any]:
    """The whole change answer (every page, audit representation) as one envelope."""
    _DIFF.check(args, what="diff")
    return _whole(owner, args)


def gate(owner: Project | Owner, args: dict[str, Any]) -> dict[str, Any]:
    """The requested checks over the whole change answer; without any, the default criteria.

    Without a baseline only ``fail_under_total`` is checked, on the current side alone.
    """
    _GATE.check(args, what="gate")
    if args.get("fail_under_total") is None and ("counter" in args or "precision" in args):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "counter and precision say how fail_under_total is checked, and no fail_under_total was given",
            "Pass --fail-under-total P with --counter or --precision, or leave them out.",
        )
    if "baseline" not in args:
        others = [k for k in CHECKS if k != "fail_under_total" and _given(args.get(k))]
        if args.get("fail_under_total") is None or others or args.get("baseline_fallback"):
            given = " and ".join(others + (["baseline_fallback"] if args.get("baseline_fallback") else []))
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                "a gate without a baseline checks only the total coverage (fail_under_total)"
                + (
                    f"; {given} {'need' if ' and ' in given else 'needs'} a baseline to compare with"
                    if given
                    else ", and none was given"
                ),
                "Pass --fail-under-total P alone, or name a baseline (--baseline main --merge-base; "
                "--baseline none compares with nothing).",
                {"given": others},
            )
        args = {**args, "baseline": NO_BASELINE}
    asked = any(_given(args.get(k)) for k in CHECKS)
    text = args.get("criteria", None if asked else DEFAULT_CRITERIA)
    criteria = Criteria(text) if text is not None else None  # bad criteria fail before any work
    whole = _whole(owner, {k: v for k, v in args.items() if k not in (*CHECKS, "counter", "precision")})
    if not_compared(whole):
        d = whole["data"]
        data = {
            "passed": False,
            "checks": [],
            "baseline": d["baseline"],
            "current": d["current"],
            "claim_status": d["claim_status"],
            "reasons": d["reasons"],
            "reason_codes": d["reason_codes"],
            "next": d["next"],
        }
        return {"context": whole["context"], "data": data, "page": None}
    summary = Summary.from_pages([whole])
    if summary.subset and args.get("fail_under_total") is not None:
        raise _subset_total(whole["data"]["current"])
    checks = evaluate(
        summary,
        fail_under_total=args.get("fail_under_total"),
        fail_under_patch=args.get("fail_under_patch"),
        ratchet=bool(args.get("ratchet")),
        criteria=criteria,
        counter=args.get("counter", "headline"),
        precision=args.get("precision", 0),
    )
    d = summary.data
    data = {
        # A report not shown to describe the working tree never passes a gate (README, "A report's identity").
        "passed": all(c.passed for c in checks) and not unproven(whole),
        "checks": [_check(c) for c in checks],
        "baseline": d["baseline"],
        "current": d["current"],
        "categories": d["categories"],
        "patch": d["patch"],
        "claim_status": d["claim_status"],
        "reasons": d["reasons"],
    }
    if unproven(whole):
        data["reason_codes"] = list(d["reason_codes"])
    return {"context": whole["context"], "data": data, "page": None}


def _given(value: Any) -> bool:
    """A check was asked for: a value, or a true flag (a minimum of 0 is asked for; 0 == False in Python)."""
    return value is not None and value is not False


def unproven(envelope: dict[str, Any]) -> bool:
    """Whether the current side is a report not shown to describe the working tree (``review.evidence``)."""
    return REPORT_IDENTITY_UNPROVEN in envelope["data"].get("reason_codes", ())


def _subset_total(current: dict[str, Any]) -> CoverageError:
    """A total threshold is refused on a subset side: its total counts only the tests that ran."""
    ids = ", ".join(current["snapshot_ids"]) or "the report"
    return CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        f"a total gate needs a complete run, and the current side ({ids}) is a subset: it ran only some "
        f"tests, so its total {current['lines'][0]}/{current['lines'][1]} says nothing about the suite's",
        "Gate the total on a complete snapshot of this commit (--current SNAPSHOT, or leave --current out: a "
        "complete snapshot of HEAD is chosen over subset ones), or gate the subset's patch or criteria only.",
        {"reason": "subset_total", "snapshot_ids": current["snapshot_ids"]},
    )


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
    base = envelope["data"]["baseline"]
    if base.get("fallback"):  # the review to run is against the commit actually compared with
        baseline: dict[str, Any] = {"kind": "ref", "ref": base["commit"]}
    else:
        baseline = args.get("baseline") or NO_BASELINE
    if "report_path" not in current:
        review: dict[str, Any] = {"task": "change", "baseline": baseline, "representation": "review"}
        if baseline["kind"] == "none":  # nothing to compare with: where the uncovered code is
            review = {"task": "insight"}
        if "snapshot_id" in current:
            review["measurement"] = {"snapshot_id": current["snapshot_id"]}
        elif args.get("suite"):
            review["measurement"] = {"suite": args["suite"]}
        remedy = Remedy(operation="coverage_review", arguments=review)
    return CoverageError(
        ErrorCode.THRESHOLD_NOT_MET,
        f"{len(failed)} of {len(checks)} checks failed: " + ", ".join(failed),
        "Cover the listed lines (a change review against the same baseline shows the ranges), or adjust the gate.",
        {"failed": failed},
        remedy,
    )


def _check(c: Check) -> dict[str, Any]:
    return {"name": c.name, "passed": c.passed, "detail": c.detail}


def _review_args(args: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "task": "change",
        "baseline": args["baseline"],
        "representation": "audit",
        "limits": {
            "max_files": PAGE_FILES,
            "max_regions": PAGE_REGIONS,
            "max_words": MAX_WORDS,
            "max_bytes": MAX_BYTES,
        },
    }
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
            ErrorCode.STORE_LOCKED,
            "the daemon holds the store, and an unstored report needs the store itself",
            "Store the report through the daemon and review its snapshot as the current measurement, or stop "
            "the daemon and retry.",
            {"report_path": report},
            Remedy(
                operation="coverage_import",
                arguments={"report_path": report, "suite": args.get("suite") or DEFAULT_SUITE},
            ),
        )
    sel, side = unstored(
        owner,
        report,
        suite=args.get("suite") or DEFAULT_SUITE,
        scope=args.get("scope", "complete"),
        commit=args.get("commit"),
    )

    def page(_name: str, review: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        con = owner.store.cursor()
        try:
            with owner.store.gate.reading():
                call = Call(owner, con, review)
                call.suite = sel.primary.suite
                return envelope(
                    call, change_of_report(call, sel, side, Budget(review.get("limits"))), started
                )
        finally:
            con.close()

    return page


def _first(
    owner: Project | Owner, run: Run, args: dict[str, Any], review: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first page and the review arguments of the rest: against the nearest measured ancestor when
    the baseline commit has no snapshot and the caller asked to fall back."""
    try:
        return run("coverage_review", review), review
    except CoverageError as error:
        if args.get("baseline_fallback") != "ancestor" or not baselines.unmeasured_commit(error):
            raise
        asked, suite = error.details["commit"], error.details["suite"]
        used, back = _measured_ancestor(owner, run, error)
    review = {**review, "baseline": {"kind": "ref", "ref": used}}
    first = run("coverage_review", review)
    first["data"]["baseline"]["fallback"] = {
        "kind": "ancestor",
        "asked": args["baseline"],
        "asked_commit": asked,
        "commit": used,
        "commits_back": back,
        "note": (
            f"no snapshot of suite {suite!r} measures the baseline commit {asked[:12]}; compared with its "
            f"nearest measured ancestor {used[:12]}, {back} commit{'s' if back != 1 else ''} back"
        ),
    }
    return first, review


def _measured_ancestor(owner: Project | Owner, run: Run, error: CoverageError) -> tuple[str, int]:
    """(commit, commits back) of the nearest ancestor of the error's commit with a snapshot of its suite and
    format; the error, extended, when there is none."""
    suite, fmt, commit = error.details["suite"], error.details["format"], error.details["commit"]
    measured: set[str] = set()
    listing: dict[str, Any] = {
        "task": "snapshots",
        "filter": {"suite": suite},
        "representation": "audit",
        "page_size": 200,
        "limits": {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES},
    }
    seen = 0
    while seen < MAX_LISTED_SNAPSHOTS:
        page = run("coverage_review", listing)
        for snap in page["data"]["snapshots"]:
            if snap["format"] == fmt and snap["commit"]:
                measured.add(snap["commit"])
        seen += len(page["data"]["snapshots"])
        cursor = (page.get("page") or {}).get("next_cursor")
        if not cursor or not page["data"]["snapshots"]:
            break
        listing["cursor"] = cursor
    if isinstance(owner, Project):
        git = owner.git
    else:
        from ..git import Git  # pygit2 only when an ancestor is looked for

        git = Git(owner.checkout)
    found = baselines.nearest_measured(git, commit, measured)
    if found is None:
        raise CoverageError(
            ErrorCode.BASELINE_UNAVAILABLE,
            f"{error.message}; nor does any of its ancestors (up to {baselines.MAX_FALLBACK_COMMITS} commits "
            f"back) have a {fmt} snapshot of suite {suite!r}",
            error.suggestion,
            error.details,
            error.remedy,
        )
    return found


def _snippets(
    owner: Project | Owner, run: Run, args: dict[str, Any], data: dict[str, Any]
) -> list[dict[str, Any]]:
    """The measured text of the first uncovered new lines (UNC) of the first files, with a line of context."""
    by_path: dict[str, list[dict[str, Any]]] = {}
    for r in data["ranges"]:
        if r["category"] == "UNC" and (r["path"] in by_path or len(by_path) < SNIPPET_FILES):
            by_path.setdefault(r["path"], []).append(r)
    report = (args.get("current") or {}).get("report_path")
    out: list[dict[str, Any]] = []
    for path, ranges in by_path.items():
        ranges = ranges[:SNIPPET_RANGES]
        spans = [
            (
                max(1, r["start"] - SNIPPET_CONTEXT),
                min(r["end"], r["start"] + SNIPPET_LINES - 1) + SNIPPET_CONTEXT,
            )
            for r in ranges
        ]
        text, note = (
            _report_text(owner, path)
            if report is not None
            else _measured_text(run, data["current"]["snapshot_ids"][0], path, spans)
        )
        for r, (a, b) in zip(ranges, spans):
            entry: dict[str, Any] = {
                "path": path,
                "start": r["start"],
                "end": r["end"],
                "lines": [[n, text[n]] for n in range(a, b + 1) if n in text],
            }
            if note:
                entry["note"] = note
            out.append(entry)
    return out


def _measured_text(
    run: Run, snapshot_id: str, path: str, spans: list[tuple[int, int]]
) -> tuple[dict[int, str], str | None]:
    """Lines of ``path`` as task=source shows them for the snapshot (the text it measured), or why not."""
    answer = run(
        "coverage_review",
        {
            "task": "source",
            "measurement": {"snapshot_id": snapshot_id},
            "file": path,
            "ranges": [f"{a}-{b}" for a, b in spans],
            "representation": "compact",
            "limits": {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES},
        },
    )["data"]
    text = {int(n): line for r in answer.get("ranges") or () for n, _mark, line in r["lines"]}
    return text, (None if text else "; ".join(answer.get("reasons") or ()) or "source text unavailable")


def _report_text(owner: Project | Owner, path: str) -> tuple[dict[int, str], str | None]:
    """Lines of ``path`` in the working tree, which an unstored report just measured."""
    raw = owner.git.worktree_file(path) if isinstance(owner, Project) else None
    if raw is None:
        return {}, f"{path} is not a file of the working tree"
    lines = raw.decode("utf-8", "replace").splitlines()
    return {n: line[:MAX_LINE_CHARS] for n, line in enumerate(lines, 1)}, None


def _whole(owner: Project | Owner, args: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    run = _runner(owner, args)
    first, review = _first(owner, run, args, _review_args(args))
    pages = [first]
    if not_compared(pages[0]):  # HEAD is not measured: the stale claim says so, and compares nothing
        return {**pages[0], "page": None}
    if pages[0]["page"] is None:  # nothing measured: the answer's reasons say what is missing
        suite = pages[0]["context"]["suite"]
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            "; ".join(pages[0]["data"]["reasons"]),
            "Store a report of that suite first, or review an unstored report as the current measurement.",
            {"suite": suite},
            Remedy(operation="coverage_import", arguments={"report_path": "REPORT", "suite": suite}),
        )
    while pages[-1]["page"]["next_cursor"]:
        pages.append(run("coverage_review", {**review, "cursor": pages[-1]["page"]["next_cursor"]}))
    s = Summary.from_pages(pages)
    context = dict(pages[0]["context"])
    context["stats"] = {
        "elapsed_ms": round((time.perf_counter() - started) * 1000, 3),
        "rows_scanned": sum(p["context"]["stats"]["rows_scanned"] for p in pages),
    }
    data = {
        **s.data,
        "files": list(s.files),
        "ranges": list(s.ranges),
        "ranges_truncated": s.ranges_truncated,
    }
    if args.get("snippets"):
        data["snippets"] = _snippets(owner, run, args, data)
    return {"context": context, "data": data, "page": None}
