"""``diff`` and ``gate``: comparisons against a baseline, for people, pull requests and CI.

Both commands take the same selectors. ``--baseline`` is a snapshot id
(``snap-...``) or any git ref (a branch, tag or hash; with ``--merge-base``,
the merge-base of that ref and the current commit). ``--current`` is a
snapshot id or a report file, which is parsed and mapped in memory and never
stored; without it, the latest snapshot of ``--suite``.

Both read the answer of ``coverage_review(task="change")`` (every page, in the
audit representation): directly from the store, or from the daemon when it
holds the store (``coverage_daemon.client.open_project``). An unstored report
needs the store itself, so it is compared only when the store is free.

Exit codes (the one table in ``output``): 0 success or every check passed,
3 a threshold or criterion was not met, 2 bad usage or input, 1 the
comparison could not be made (no baseline snapshot, store held, ...).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import click

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.project import DEFAULT_SUITE, SCOPES, Project
from coverage_core.review.budget import MAX_BYTES, MAX_WORDS, Budget
from coverage_core.review.call import Call
from coverage_core.review.categories import CATEGORIES, NAMES
from coverage_core.review.change import change_of_report
from coverage_core.review.comparing import unstored
from coverage_core.review.gate import (
    DEFAULT_CRITERIA,
    Check,
    Criteria,
    Summary,
    evaluate,
)
from coverage_core.service import Service, envelope
from coverage_daemon.client import open_project

from .output import emit_json, handles_errors, json_option, percent
from .store_cmds import repo_option

SNAPSHOT_PREFIX = "snap-"
PAGE_FILES = 50
LISTED_FILES = 25  # file rows in a Markdown comment
ATTENTION = ("UNC", "LBC", "UIC")
_ANNOTATION = {
    "UNC": "{n} new or changed {lines} not covered by any test",
    "LBC": "{n} {lines} covered in the baseline {are} no longer covered",
    "UIC": "{n} {lines} newly counted as code {are} not covered",
}

Fetch = Callable[[dict[str, Any]], dict[str, Any]]


def selectors(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``diff`` and ``gate`` share."""
    for option in reversed((
        click.option("--baseline", required=True, metavar="REF|SNAPSHOT",
                     help="A snapshot id (snap-...) or a git ref whose snapshot is the baseline."),
        click.option("--merge-base", "merge_base", is_flag=True,
                     help="Compare with the merge-base of the --baseline ref and the current commit "
                          "(what a pull request changes)."),
        click.option("--current", metavar="SNAPSHOT|REPORT",
                     help="A snapshot id, or a report file compared without storing it (default: the latest "
                          "snapshot of --suite)."),
        click.option("--suite", help=f"Suite of both sides (default: {DEFAULT_SUITE!r}, or the snapshot's)."),
        click.option("--scope", type=click.Choice(SCOPES), default="complete", show_default=True,
                     help="Scope of a --current REPORT: 'subset' when only selected tests ran."),
        repo_option,
        json_option,
    )):
        func = option(func)
    return func


def review_args(baseline: str, merge_base: bool, current: str | None, suite: str | None) -> dict[str, Any]:
    """The coverage_review arguments of the selectors (a report --current is handled apart)."""
    if baseline.startswith(SNAPSHOT_PREFIX):
        if merge_base:
            raise CoverageError(ErrorCode.INVALID_ARGUMENT, "--merge-base needs a git ref as --baseline, not a snapshot",
                                "Pass --baseline main --merge-base, or drop --merge-base.")
        spec: dict[str, Any] = {"kind": "explicit", "snapshot_id": baseline}
    else:
        spec = {"kind": "merge_base" if merge_base else "ref", "ref": baseline}
    args: dict[str, Any] = {"task": "change", "baseline": spec}
    if current and current.startswith(SNAPSHOT_PREFIX):
        args["measurement"] = {"snapshot_id": current}
    elif suite:
        args["measurement"] = {"suite": suite}
    return args


def _fetcher(project: Any, current: str | None, suite: str | None, scope: str) -> Fetch:
    """How to get one envelope: the service, the daemon, or an unstored report."""
    if current and not current.startswith(SNAPSHOT_PREFIX):
        if not isinstance(project, Project):
            raise CoverageError(
                ErrorCode.STORE_LOCKED, "the daemon holds the store, and an unstored report needs the store itself",
                "Ingest the report (coverage-mcp ingest REPORT --suite ci) and pass its snapshot id as --current, "
                "or stop the daemon (coverage-mcp stop) and retry.",
            )
        sel, side = unstored(project, current, suite=suite or DEFAULT_SUITE, scope=scope)

        def report(args: dict[str, Any]) -> dict[str, Any]:
            started = time.perf_counter()
            con = project.store.cursor()
            try:
                call = Call(project, con, args)
                call.suite = sel.primary.suite
                return envelope(call, change_of_report(call, sel, side, Budget(args.get("limits"))), started)
            finally:
                con.close()

        return report
    if isinstance(project, Project):
        service = Service(project)
        return lambda args: service.call("coverage_review", args)
    return lambda args: project.call("coverage_review", args)


def summary(fetch: Fetch, args: dict[str, Any]) -> Summary:
    """Every page of the change answer, exact (audit) and as large as a page may be."""
    full = {**args, "representation": "audit",
            "limits": {"max_files": PAGE_FILES, "max_regions": 500, "max_words": MAX_WORDS, "max_bytes": MAX_BYTES}}
    pages = [fetch(full)]
    if pages[0]["page"] is None:  # nothing measured: the answer's reasons say what is missing
        suite = pages[0]["context"]["suite"]
        raise CoverageError(
            ErrorCode.NOT_FOUND, "; ".join(pages[0]["data"]["reasons"]),
            f"Store a report first (coverage-mcp ingest REPORT --suite {suite}), or pass --current REPORT.",
        )
    while pages[-1]["page"]["next_cursor"]:
        pages.append(fetch({**full, "cursor": pages[-1]["page"]["next_cursor"]}))
    return Summary.from_pages(pages)


# -- rendering --------------------------------------------------------------------------

def _spans(ranges: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['start']}" if r["start"] == r["end"] else f"{r['start']}-{r['end']}" for r in ranges)


def _side(data: dict[str, Any], which: str) -> str:
    side = data[which]
    ids = ", ".join(side["snapshot_ids"])
    if which == "baseline":
        how = side["kind"] if not side.get("ref") else f"{side['kind']} {side['ref']}"
        return f"{side['commit'] or '-'} ({how}; {ids})"
    return f"{side['commit'] or '-'} ({ids}; {side['scope']})"


def _attention(s: Summary) -> list[dict[str, Any]]:
    return [f for f in s.files if f["status"] == "not_measured" or any(f["lines"][c] for c in ATTENTION)]


def render_table(s: Summary) -> str:
    d = s.data
    diff, patch, lines = d["diff"], d["patch"], d["current"]["lines"]
    out = [
        f"coverage change: baseline {_side(d, 'baseline')} -> current {_side(d, 'current')}",
        f"  diff     {diff['files_changed']} files, +{diff['lines_added']} -{diff['lines_removed']} lines",
        f"  patch    {patch['hit']}/{patch['found']} ({percent(patch['hit'], patch['found'])})",
        f"  total    {lines[0]}/{lines[1]} ({percent(lines[0], lines[1])})",
        f"  {'category':<34}{'lines':>8}{'branches':>10}{'functions':>11}",
    ]
    for c in CATEGORIES:
        out.append(f"  {c + ' ' + NAMES[c]:<34}{d['categories'][c]:>8}{d['branches'][c]:>10}{d['functions'][c]:>11}")
    if s.files:
        out.append(f"  {'file':<48}{'status':<14}{'UNC':>5}{'LBC':>5}{'UIC':>5}  patch")
        for f in s.files:
            p = f["patch"]
            out.append(f"  {f['path'][-48:]:<48}{f['status']:<14}{f['lines']['UNC']:>5}{f['lines']['LBC']:>5}"
                       f"{f['lines']['UIC']:>5}  {p['hit']}/{p['found']}")
    flagged = [r for r in s.ranges if r["category"] in ATTENTION]
    if flagged:
        out.append("  ranges")
        for path in dict.fromkeys(r["path"] for r in flagged):
            mine = [r for r in flagged if r["path"] == path]
            parts = [f"{c} {_spans([r for r in mine if r['category'] == c])}" for c in ATTENTION
                     if any(r["category"] == c for r in mine)]
            out.append(f"    {path}: {'; '.join(parts)}")
    out.append(f"  claim: {d['claim_status']}" + "".join(f"\n    - {r}" for r in d["reasons"]))
    return "\n".join(out)


def render_markdown(s: Summary) -> str:
    d = s.data
    patch, lines = d["patch"], d["current"]["lines"]
    out = [
        "### Coverage change",
        "",
        (f"**Patch coverage: {patch['hit']}/{patch['found']} ({percent(patch['hit'], patch['found'])})** · "
         f"total {lines[0]}/{lines[1]} ({percent(lines[0], lines[1])}) · baseline `{d['baseline']['commit'] or '-'}` "
         f"({d['baseline']['kind']}) → current `{d['current']['commit'] or '-'}` ({d['current']['scope']})"),
        "",
        "| Category | Lines | Branches | Functions |",
        "|---|---:|---:|---:|",
    ]
    for c in CATEGORIES:
        row = (d["categories"][c], d["branches"][c], d["functions"][c])
        if any(row):
            out.append(f"| {c} {NAMES[c]} | {row[0]} | {row[1]} | {row[2]} |")
    files = _attention(s)
    if files:
        out += ["", "#### Files to look at", "", "| File | Status | UNC | LBC | UIC | Patch |", "|---|---|---:|---:|---:|---:|"]
        for f in files[:LISTED_FILES]:
            c, p = f["lines"], f["patch"]
            out.append(f"| `{f['path']}` | {f['status']} | {c['UNC']} | {c['LBC']} | {c['UIC']} | {p['hit']}/{p['found']} |")
        if len(files) > LISTED_FILES:
            out.append(f"| … and {len(files) - LISTED_FILES} more | | | | | |")
    flagged = [r for r in s.ranges if r["category"] in ("UNC", "LBC")]
    if flagged:
        out += ["", "#### Uncovered new code (UNC) and lost coverage (LBC)", ""]
        for path in dict.fromkeys(r["path"] for r in flagged):
            mine = [r for r in flagged if r["path"] == path]
            parts = [f"{c} {_spans([r for r in mine if r['category'] == c])}" for c in ("UNC", "LBC")
                     if any(r["category"] == c for r in mine)]
            out.append(f"- `{path}`: {'; '.join(parts)}")
    out += ["", f"_Claim: {d['claim_status']}._"] + [f"- {r}" for r in d["reasons"]]
    return "\n".join(out) + "\n"


def _escape(text: str, *, prop: bool) -> str:
    # GitHub workflow-command escaping; properties also escape ':' and ','.
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def github_annotations(s: Summary) -> list[str]:
    """GitHub Actions ``::warning`` commands for UNC, LBC (complete runs only) and UIC ranges."""
    out = []
    for r in sorted((r for r in s.ranges if r["category"] in ATTENTION), key=lambda r: (r["path"], r["start"])):
        if r["category"] == "LBC" and s.subset:
            continue
        n = r["line_count"]
        message = _ANNOTATION[r["category"]].format(n=n, lines="line" if n == 1 else "lines", are="is" if n == 1 else "are")
        title = f"{r['category']} {NAMES[r['category']]}"
        out.append(f"::warning file={_escape(r['path'], prop=True)},line={r['start']},endLine={r['end']},"
                   f"title={_escape(title, prop=True)}::{_escape(message, prop=False)}")
    return out


def summary_json(s: Summary) -> dict[str, Any]:
    return {**s.data, "files": list(s.files), "ranges": list(s.ranges), "ranges_truncated": s.ranges_truncated}


# -- commands ---------------------------------------------------------------------------

@click.command("diff")
@selectors
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True,
              help="table for a terminal, markdown for a pull-request comment, json for scripts (every file).")
@click.option("--annotations", "with_annotations", is_flag=True,
              help="Also print GitHub Actions ::warning annotations for uncovered new code and lost coverage.")
@handles_errors
def diff_command(baseline, merge_base, current, suite, scope, repo, as_json, fmt, with_annotations) -> None:
    """Compare coverage with a baseline: lcov's twelve categories, patch coverage, files and ranges.

    --json prints the envelope of coverage_review(task="change") for the same
    selectors (compact, default limits), exactly as an agent receives it.

    Example: coverage-mcp diff --baseline main --merge-base --format markdown
    """
    args = review_args(baseline, merge_base, current, suite)
    with open_project(repo) as project:
        fetch = _fetcher(project, current, suite, scope)
        if as_json:
            emit_json(fetch(args))
            return
        result = summary(fetch, args)
    if fmt == "json":
        click.echo(json.dumps(summary_json(result), indent=2))
    elif fmt == "markdown":
        click.echo(render_markdown(result), nl=False)
    else:
        click.echo(render_table(result))
    if with_annotations:
        for line in github_annotations(result):
            click.echo(line)


@click.command("gate")
@selectors
@click.option("--fail-under-total", type=click.FloatRange(0, 100), metavar="P",
              help="Fail when total line coverage of the current side is under P percent.")
@click.option("--fail-under-patch", type=click.FloatRange(0, 100), metavar="P",
              help="Fail when patch coverage (added and changed lines) is under P percent.")
@click.option("--ratchet", is_flag=True, help="Fail when any file's or directory's uncovered line count grew.")
@click.option("--criteria", metavar="EXPR",
              help=f"A condition over the categories that must hold (default, when no other check is "
                   f"given: '{DEFAULT_CRITERIA}').")
@handles_errors
def gate_command(baseline, merge_base, current, suite, scope, repo, as_json, fail_under_total, fail_under_patch,
                 ratchet, criteria) -> None:
    """Fail CI when coverage drops: thresholds, a ratchet and criteria over the categories.

    Exit 0 when every check passes, 3 when one fails (each failure says why),
    2 on bad usage, 1 when the comparison cannot be made.

    Example: coverage-mcp gate --baseline main --merge-base --fail-under-patch 80 --ratchet
    """
    if criteria is None and fail_under_total is None and fail_under_patch is None and not ratchet:
        criteria = DEFAULT_CRITERIA
    parsed = Criteria(criteria) if criteria is not None else None  # bad criteria fail before any work
    args = review_args(baseline, merge_base, current, suite)
    with open_project(repo) as project:
        result = summary(_fetcher(project, current, suite, scope), args)
    checks = evaluate(result, fail_under_total=fail_under_total, fail_under_patch=fail_under_patch,
                      ratchet=ratchet, criteria=parsed)
    failed = [c for c in checks if not c.passed]
    if as_json:
        emit_json({"passed": not failed, "checks": [_check(c) for c in checks], "baseline": result.data["baseline"],
                   "current": result.data["current"], "categories": result.data["categories"],
                   "patch": result.data["patch"], "claim_status": result.data["claim_status"],
                   "reasons": result.data["reasons"]})
    else:
        for c in checks:
            click.echo(f"{'PASS' if c.passed else 'FAIL'} {c.name}: {c.detail}")
    if failed:
        raise CoverageError(
            ErrorCode.THRESHOLD_NOT_MET, f"{len(failed)} of {len(checks)} checks failed: "
            + ", ".join(c.name for c in failed),
            "Cover the listed lines (coverage-mcp diff --baseline ... shows the ranges), or adjust the gate.",
            {"failed": [c.name for c in failed]},
        )


def _check(c: Check) -> dict[str, Any]:
    return {"name": c.name, "passed": c.passed, "detail": c.detail}


CI_COMMANDS = (diff_command, gate_command)
