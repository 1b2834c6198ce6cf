"""``diff`` and ``gate``: comparisons against a baseline, rendered for people, pull requests and CI.

Each command is one call of ``coverage_core.review.ci`` (``diff`` / ``gate``)
on whichever owns the store (this process, or the daemon when it holds it);
``--json`` prints that call's envelope, and the table, Markdown and GitHub
annotations are renderings of it. ``--baseline`` is read by the one parser
(``coverage_core.review.baseline.parse_selector``); ``--current`` is a
snapshot id or a report file, parsed and mapped in this process and never
stored (so it needs the store to be free of the daemon).

Exit codes (the one table in ``output``): 0 success or every check passed,
3 a threshold or criterion was not met, 2 bad usage or input, 1 the
comparison could not be made (no baseline snapshot, store held, ...), and 1
when it was not made because HEAD is not measured: the answer's claim is
``stale`` with reason code ``current_not_measured`` (``--json`` prints that
envelope). Every text rendering ends with the claim and its reasons.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from coverage_core.ids import SNAPSHOT_PREFIX
from coverage_core.project import DEFAULT_SUITE
from coverage_core.review import ci
from coverage_core.review.categories import CATEGORIES, NAMES
from coverage_core.review.gate import DEFAULT_CRITERIA, Summary
from coverage_daemon.client import open_project

from .options import (
    PERCENT,
    SCOPES,
    baseline_options,
    baseline_spec,
    json_option,
    repo_option,
)
from .output import FAILED, emit_json, handles_errors, percent

LISTED_FILES = 25  # file rows in a Markdown comment
ATTENTION = ("UNC", "LBC", "UIC")
_ANNOTATION = {
    "UNC": "{n} new or changed {lines} not covered by any test",
    "LBC": "{n} {lines} covered in the baseline {are} no longer covered",
    "UIC": "{n} {lines} newly counted as code {are} not covered",
}


def selectors(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``diff`` and ``gate`` share."""
    for option in reversed((
        baseline_options(required=True),
        click.option("--current", metavar="SNAPSHOT|REPORT",
                     help="A snapshot id, or a report file compared without storing it (default: the snapshot "
                          "of HEAD in --suite; none is exit 1, current_not_measured)."),
        click.option("--suite", help=f"Suite of both sides (default: {DEFAULT_SUITE!r}, or the snapshot's)."),
        click.option("--scope", type=click.Choice(SCOPES), default="complete", show_default=True,
                     help="Scope of a --current REPORT: 'subset' when only selected tests ran."),
        repo_option,
        json_option,
    )):
        func = option(func)
    return func


def comparison(baseline: str, merge_base: bool, current: str | None, suite: str | None,
               scope: str) -> dict[str, Any]:
    """The arguments of ``ci.diff`` / ``ci.gate`` the selectors name."""
    args: dict[str, Any] = {"baseline": baseline_spec(baseline, merge_base)}
    if current is not None:
        args["current"] = {"snapshot_id" if current.startswith(SNAPSHOT_PREFIX) else "report_path": current}
        if "report_path" in args["current"]:
            args["scope"] = scope
    if suite:
        args["suite"] = suite
    return args


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


def render_claim(d: dict[str, Any], indent: str = "  ") -> str:
    """The claim status, its reason codes and every reason: the last thing every text rendering shows."""
    codes = d.get("reason_codes") or []
    head = f"{indent}claim: {d['claim_status']}" + (f" [{', '.join(codes)}]" if codes else "")
    return head + "".join(f"\n{indent}  - {r}" for r in d["reasons"])


def render_not_compared(d: dict[str, Any], suite: str | None) -> str:
    """What ``diff`` and ``gate`` print when HEAD's measurement is missing (nothing was compared)."""
    base, cur = d["baseline"], d["current"]
    how = base["kind"] if not base.get("ref") else f"{base['kind']} {base['ref']}"
    latest = cur.get("latest")
    if latest is not None:
        current = f"HEAD {cur['commit'] or '-'} has no snapshot (newest: {latest['snapshot_id']} at {latest['commit']})"
        named = latest["snapshot_id"]
    else:
        current = f"{cur['commit'] or '-'} ({', '.join(cur['snapshot_ids'])})"
        named = cur["snapshot_ids"][0] if cur["snapshot_ids"] else "SNAPSHOT"
    suite_arg = f" --suite {suite}" if suite else ""
    return "\n".join([
        "coverage change: not compared",
        f"  baseline {base['commit'] or '-'} ({how}; {', '.join(base['snapshot_ids']) or 'not resolved'})",
        f"  current  {current}",
        render_claim(d),
        f"  next: measure HEAD and store it (coverage-mcp ingest REPORT{suite_arg}), or compare a snapshot as "
        f"asked (--current {named})",
    ])


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
    out.append(render_claim(d))
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
    codes = d.get("reason_codes") or []
    out += ["", f"_Claim: {d['claim_status']}" + (f" ({', '.join(codes)})" if codes else "") + "._"]
    out += [f"- {r}" for r in d["reasons"]]
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


# -- commands ---------------------------------------------------------------------------

FORMATS = ("table", "json", "markdown")


@click.command("diff")
@selectors
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="table for a terminal, markdown for a pull-request comment, json for scripts (the envelope's "
                   "data: every file and range).")
@click.option("--annotations", "with_annotations", is_flag=True,
              help="Also print GitHub Actions ::warning annotations for uncovered new code and lost coverage.")
@handles_errors
def diff_command(baseline, merge_base, current, suite, scope, repo, as_json, fmt, with_annotations) -> None:
    """Compare coverage with a baseline: lcov's twelve categories, patch coverage, files and ranges.

    --json prints the envelope of the comparison: coverage_review(task="change",
    representation="audit") with every page merged (page is null).

    Example: coverage-mcp diff --baseline main --merge-base --format markdown
    """
    args = comparison(baseline, merge_base, current, suite, scope)
    with open_project(repo) as project:
        envelope = ci.diff(project, args)
    compared = not ci.not_compared(envelope)
    if as_json:
        emit_json(envelope)
    elif fmt == "json":
        click.echo(json.dumps(envelope["data"], indent=2))
    elif not compared:
        click.echo(render_not_compared(envelope["data"], suite))
    elif fmt == "markdown":
        click.echo(render_markdown(Summary.from_pages([envelope])), nl=False)
    else:
        click.echo(render_table(Summary.from_pages([envelope])))
    if not compared:
        sys.exit(FAILED)
    if with_annotations and not as_json:
        for line in github_annotations(Summary.from_pages([envelope])):
            click.echo(line)


@click.command("gate")
@selectors
@click.option("--fail-under-total", type=PERCENT, metavar="P",
              help="Fail when total line coverage of the current side is under P percent.")
@click.option("--fail-under-patch", type=PERCENT, metavar="P",
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
    2 on bad usage, 1 when the comparison cannot be made, or is not made
    because HEAD has no snapshot (claim stale, reason code
    current_not_measured; name one with --current to compare it as asked).
    --json prints the gate's envelope (data.passed, data.checks, the sides,
    categories and patch, the claim and its reason codes).

    Example: coverage-mcp gate --baseline main --merge-base --fail-under-patch 80 --ratchet
    """
    args = comparison(baseline, merge_base, current, suite, scope)
    for key, value in (("fail_under_total", fail_under_total), ("fail_under_patch", fail_under_patch),
                       ("criteria", criteria)):
        if value is not None:
            args[key] = value
    if ratchet:
        args["ratchet"] = True
    with open_project(repo) as project:
        envelope = ci.gate(project, args)
    if as_json:
        emit_json(envelope)
    elif ci.not_compared(envelope):
        click.echo(render_not_compared(envelope["data"], suite))
    else:
        for c in envelope["data"]["checks"]:
            click.echo(f"{'PASS' if c['passed'] else 'FAIL'} {c['name']}: {c['detail']}")
        click.echo(render_claim(envelope["data"], indent=""))
    if ci.not_compared(envelope):
        sys.exit(FAILED)
    failed = ci.failure(args, envelope)
    if failed is not None:
        raise failed


CI_COMMANDS = (diff_command, gate_command)
