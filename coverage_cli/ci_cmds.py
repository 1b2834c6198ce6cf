"""``diff`` and ``gate``: comparisons against a baseline, rendered for people, pull requests and CI.

Each command is one call of ``coverage_core.usecases.ci`` (``diff`` / ``gate``)
on whichever owns the store (this process, or the daemon when it holds it);
``--json`` prints that call's envelope, and the table, Markdown and GitHub
annotations are renderings of it. ``--baseline`` is read by the one parser
(``coverage_core.review.selectors.parse_selector``); ``--current`` is a
snapshot id or a report file, parsed and mapped in this process and never
stored (so it needs the store to be free of the daemon).

Exit codes (the one table in ``output``): 0 success or every check passed,
3 a threshold or criterion was not met, 2 bad usage or input, 1 the
comparison could not be made (no baseline snapshot, store held, ...), and 1
when it was not made because HEAD is not measured: the answer's claim is
``stale`` with reason code ``current_not_measured`` (``--json`` prints that
envelope). Every text rendering ends with the claim and its reasons.

"No baseline yet" (``baseline_unavailable``) is an exit 1 that CI can tell
apart from an internal error: one line on standard error, and with ``--json``
the error body on standard output (``error.code``). Standard output carries
only the asked format: GitHub annotations go to standard error, or to the
file ``--annotations FILE`` names.
"""

from __future__ import annotations

import json
import posixpath
import sys
from collections.abc import Callable
from typing import IO, Any

import click

from coverage_core.display import counted
from coverage_core.display import delta as display_delta
from coverage_core.errors import CoverageError, ErrorCode, error_body
from coverage_core.ids import SNAPSHOT_PREFIX
from coverage_core.project import DEFAULT_SUITE
from coverage_core.review import baseline as baselines
from coverage_core.review.categories import CATEGORIES, NAMES
from coverage_core.review.gate import DEFAULT_CRITERIA, Summary
from coverage_core.usecases import ci
from coverage_core.vocabulary import COUNTERS
from coverage_daemon.client import open_project

from .options import (
    ENVELOPE,
    SCOPES,
    baseline_options,
    baseline_spec,
    float_range,
    json_option,
    output_format,
    repo_option,
)
from .output import FAILED, emit_json, handles_errors, percent, render_remedy

LISTED_FILES = 25  # file rows in a Markdown comment
PERCENT = float_range(ci.GATE_SCHEMA["properties"]["fail_under_total"])
STDERR = "-"  # --annotations without a file
# Fence languages of a few common suffixes (a snippet reads better highlighted; anything else is plain).
LANGUAGES = {
    ".py": "python",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".js": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".rb": "ruby",
    ".cs": "csharp",
    ".swift": "swift",
    ".php": "php",
    ".scala": "scala",
}
ATTENTION = ("UNC", "LBC", "UIC")
_ANNOTATION = {
    "UNC": "{n} new or changed {lines} not covered by any test",
    "LBC": "{n} {lines} covered in the baseline {are} no longer covered",
    "UIC": "{n} {lines} newly counted as code {are} not covered",
}


def selectors(*, baseline_required: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options ``diff`` and ``gate`` share (``gate`` may go without a baseline)."""
    return lambda func: _selectors(func, baseline_required)


def _selectors(func: Callable[..., Any], baseline_required: bool) -> Callable[..., Any]:
    for option in reversed(
        (
            baseline_options(required=baseline_required),
            click.option(
                "--baseline-fallback",
                "fallback",
                type=click.Choice(ci.FALLBACKS),
                help="When no snapshot measures the baseline commit: 'ancestor' compares with its nearest "
                "measured ancestor and says which (Codecov's behaviour). Without it that is exit 1, "
                "baseline_unavailable.",
            ),
            click.option(
                "--current",
                metavar="SNAPSHOT|REPORT",
                help="A snapshot id, or a report file compared without storing it (default: the snapshot "
                "of HEAD in --suite; none is exit 1, current_not_measured).",
            ),
            click.option(
                "--suite", help=f"Suite of both sides (default: {DEFAULT_SUITE!r}, or the snapshot's)."
            ),
            click.option(
                "--scope",
                type=click.Choice(SCOPES),
                default="complete",
                show_default=True,
                help="Scope of a --current REPORT: 'subset' when only selected tests ran.",
            ),
            click.option(
                "--commit",
                metavar="SHA",
                help="The commit a --current REPORT measured. Without it the report is the working tree's "
                "only as far as its identity is shown (written after the tree's last change, every line "
                "within its file, checksums matching, no unmeasured uncommitted edit); what is missing "
                "makes the claim limited (report_identity_unproven), and gate does not pass (exit 1).",
            ),
            repo_option,
            json_option,
        )
    ):
        func = option(func)
    return func


def comparison(
    baseline: str | None,
    merge_base: bool,
    current: str | None,
    suite: str | None,
    scope: str,
    fallback: str | None = None,
    commit: str | None = None,
) -> dict[str, Any]:
    """The arguments of ``ci.diff`` / ``ci.gate`` the selectors name."""
    args: dict[str, Any] = {}
    spec = baseline_spec(baseline, merge_base)
    if spec is not None:
        args["baseline"] = spec
    if fallback is not None:
        args["baseline_fallback"] = fallback
    if current is not None:
        args["current"] = {"snapshot_id" if current.startswith(SNAPSHOT_PREFIX) else "report_path": current}
        if "report_path" in args["current"]:
            args["scope"] = scope
            if commit is not None:
                args["commit"] = commit
    if commit is not None and "commit" not in args:
        raise click.UsageError("--commit names the commit of a --current REPORT; give one")
    if suite:
        args["suite"] = suite
    return args


# -- rendering --------------------------------------------------------------------------


def _spans(ranges: list[dict[str, Any]]) -> str:
    return ", ".join(
        f"{r['start']}" if r["start"] == r["end"] else f"{r['start']}-{r['end']}" for r in ranges
    )


def _side(data: dict[str, Any], which: str) -> str:
    side = data[which]
    ids = ", ".join(side["snapshot_ids"])
    if which == "baseline":
        how = side["kind"] if not side.get("ref") else f"{side['kind']} {side['ref']}"
        return f"{side['commit'] or '-'} ({how}; {ids})"
    return f"{side['commit'] or '-'} ({ids}; {side['scope']})"


def before_after(lines: dict[str, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """((hit, found) of the baseline, (hit, found) of the current side) from lcov's twelve category counts.

    A baseline line is covered in LBC, CBC, ECB and DCB and uncovered in UBC, GBC,
    EUB and DUB; a current line is covered in GBC, GIC, GNC and CBC and uncovered
    in UNC, LBC, UIC and UBC (lcov's definitions; GIC and UIC were not code before).
    """
    c = lines
    lost = c["LBC"] + c.get("not_observed", 0)  # a subset side's LBC is counted as not_observed
    base_hit = lost + c["CBC"] + c["ECB"] + c["DCB"]
    cur_hit = c["GBC"] + c["GIC"] + c["GNC"] + c["CBC"]
    return (
        (base_hit, base_hit + c["UBC"] + c["GBC"] + c["EUB"] + c["DUB"]),
        (cur_hit, cur_hit + c["UNC"] + lost + c["UIC"] + c["UBC"]),
    )


def delta(before: tuple[int, int], after: tuple[int, int]) -> str:
    """The change in percentage points, exact to two decimals (``coverage_core.display.delta``, which the
    dashboard shows too)."""
    return display_delta(before, after)


def _share(hit: int, found: int) -> str:
    return f"{percent(hit, found)} ({hit}/{found})" if found else "-"


def _fallback_line(d: dict[str, Any]) -> str | None:
    fallback = d["baseline"].get("fallback")
    return None if not fallback else f"baseline fallback: {fallback['note']}"


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
    fallback = _fallback_line(d)
    return "\n".join(
        [
            "coverage change: not compared",
            f"  baseline {base['commit'] or '-'} ({how}; {', '.join(base['snapshot_ids']) or 'not resolved'})",
            *([f"  {fallback}"] if fallback else []),
            f"  current  {current}",
            render_claim(d),
            (
                f"  next: measure HEAD and store it (coverage-mcp ingest REPORT{suite_arg}), or compare a snapshot as "
                f"asked (--current {named})"
            ),
        ]
    )


def totals(d: dict[str, Any], before: tuple[int, int], after: tuple[int, int]) -> dict[str, Any]:
    """Each side's total as shown: its headline (the producing tool's figure, rounded as it rounds), or its
    lines where a side is a union of snapshots and has none. ``change`` is exact."""
    b_head, c_head = d["baseline"].get("headline"), d["current"].get("headline")
    pair_b = (b_head["hit"], b_head["found"]) if b_head else before
    pair_a = (c_head["hit"], c_head["found"]) if c_head else after
    return {
        "counter": (c_head or {}).get("counter", "lines"),
        "before": pair_b,
        "after": pair_a,
        "shown_before": b_head["percent"] if b_head else percent(*before),
        "shown_after": c_head["percent"] if c_head else percent(*after),
        "change": delta(pair_b, pair_a),
    }


def render_table(s: Summary) -> str:
    d = s.data
    diff, patch = d["diff"], d["patch"]
    before, _ = before_after(d["categories"])
    after = tuple(d["current"]["lines"])
    t = totals(d, before, after)
    fallback = _fallback_line(d)
    out = [
        f"coverage change: baseline {_side(d, 'baseline')} -> current {_side(d, 'current')}",
        *([f"  {fallback}"] if fallback else []),
        f"  diff     {counted(diff['files_changed'], 'file')}, +{diff['lines_added']} -{diff['lines_removed']} lines",
        f"  patch    {patch['hit']}/{patch['found']} ({percent(patch['hit'], patch['found'])})",
        (
            f"  total    {t['after'][0]}/{t['after'][1]} ({t['shown_after']}); baseline "
            f"{t['before'][0]}/{t['before'][1]} ({t['shown_before']}), change {t['change']} [{t['counter']}]"
        ),
        *(
            [f"  lines    {after[0]}/{after[1]}; baseline {before[0]}/{before[1]}"]
            if t["counter"] != "lines"
            else []
        ),
        f"  {'category':<34}{'lines':>8}{'branches':>10}{'functions':>11}",
    ]
    for c in CATEGORIES:
        out.append(
            f"  {c + ' ' + NAMES[c]:<34}{d['categories'][c]:>8}{d['branches'][c]:>10}{d['functions'][c]:>11}"
        )
    if s.subset:  # a subset's baseline-covered lines it did not reach: not lost, only not run
        seen = [d[k].get("not_observed", 0) for k in ("categories", "branches", "functions")]
        out.append(f"  {'not_observed (subset run)':<34}{seen[0]:>8}{seen[1]:>10}{seen[2]:>11}")
    if s.files:
        width = max(len("file"), *(len(f["path"]) for f in s.files))  # never cut a name: two may share a tail
        out.append(f"  {'file':<{width}}  {'status':<14}{'UNC':>5}{'LBC':>5}{'UIC':>5}  patch")
        for f in s.files:
            p = f["patch"]
            out.append(
                f"  {f['path']:<{width}}  {f['status']:<14}{f['lines']['UNC']:>5}{f['lines']['LBC']:>5}"
                f"{f['lines']['UIC']:>5}  {p['hit']}/{p['found']}"
            )
    flagged = [r for r in s.ranges if r["category"] in ATTENTION]
    if flagged:
        out.append("  ranges")
        for path in dict.fromkeys(r["path"] for r in flagged):
            mine = [r for r in flagged if r["path"] == path]
            parts = [
                f"{c} {_spans([r for r in mine if r['category'] == c])}"
                for c in ATTENTION
                if any(r["category"] == c for r in mine)
            ]
            out.append(f"    {path}: {'; '.join(parts)}")
    out.append(render_claim(d))
    return "\n".join(out)


def _code(text: str) -> str:
    """Inline code that survives backticks in the text (a longer fence, as CommonMark allows)."""
    longest = max((len(r) for r in _runs(text)), default=0)
    if not longest:
        return f"`{text}`"
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"


def _runs(text: str) -> list[str]:
    out, cur = [], ""
    for ch in text:
        if ch == "`":
            cur += ch
        elif cur:
            out.append(cur)
            cur = ""
    return out + ([cur] if cur else [])


def _lines_word(ranges: list[dict[str, Any]]) -> str:
    return "lines" if sum(r["line_count"] for r in ranges) > 1 else "line"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _file_cell(f: dict[str, Any]) -> str:
    name = _code(f["path"])
    return _cell(f"{_code(f['previous_path'])} → {name}" if f.get("previous_path") else name)


def _file_change(f: dict[str, Any]) -> tuple[str, str, str]:
    before, after = before_after(f["lines"])
    if f["status"] == "added":
        return "-", _share(*after), "new"
    if f["status"] == "deleted":
        return _share(*before), "-", "deleted"
    return _share(*before), _share(*after), delta(before, after)


def _snippet_block(path: str, entries: list[dict[str, Any]]) -> list[str]:
    """One fenced block of a file's uncovered new lines (``!``), each range with a line of context."""
    flagged = {n for e in entries for n in range(e["start"], e["end"] + 1)}
    width = len(str(max((n for e in entries for n, _ in e["lines"]), default=1)))
    body: list[str] = []
    last, gap_said = None, False
    for e in entries:
        for n, text in e["lines"]:
            if last is not None and n > last + 1 and not gap_said:
                body.append(f"  {'⋮':>{width}}")
            if last is None or n > last:
                body.append(f"{'!' if n in flagged else ' '} {n:>{width}}  {text}")
                last, gap_said = n, False
        shown = max((n for n, _ in e["lines"] if n in flagged), default=e["start"] - 1)
        if e["lines"] and shown < e["end"]:
            body.append(
                f"  {'⋮':>{width}}  … {e['end'] - shown} more uncovered new lines, to line {e['end']}"
            )
            last, gap_said = e["end"], True
    longest = max((len(r) for line in body for r in _runs(line)), default=0)
    fence = "`" * max(3, longest + 1)
    language = LANGUAGES.get(posixpath.splitext(path)[1].lower(), "")
    return [f"{fence}{language}", *body, fence]


def render_markdown(s: Summary) -> str:
    """A pull-request comment: total before -> after with the change, patch coverage, files, uncovered new lines."""
    d = s.data
    patch = d["patch"]
    before, _ = before_after(d["categories"])
    after = tuple(d["current"]["lines"])
    base, cur = d["baseline"], d["current"]
    how = base["kind"] if not base.get("ref") else f"{base['kind']} {_code(base['ref'])}"
    t = totals(d, before, after)
    if base["kind"] == "none":
        total = f"**Total coverage: {t['shown_after']} ({t['after'][0]}/{t['after'][1]})** (no baseline)"
    else:
        total = f"**Total coverage: {t['shown_before']} → {t['shown_after']} ({t['change']})**"
    diff = d["diff"]
    out = [
        "### Coverage change",
        "",
        (
            f"{total} · **Patch coverage: {percent(patch['hit'], patch['found'])}** "
            f"({patch['hit']} of {patch['found']} added or changed lines covered)"
        ),
        "",
        (
            f"Baseline `{base['commit'] or '-'}` ({how}, {before[0]}/{before[1]} lines covered) → current "
            f"`{cur['commit'] or '-'}` ({cur['scope']} run, {after[0]}/{after[1]}) · {counted(diff['files_changed'], 'file')} "
            f"changed, +{diff['lines_added']} −{diff['lines_removed']} lines"
        ),
    ]
    fallback = base.get("fallback")
    if fallback:
        out += ["", f"> Baseline fallback: {fallback['note']}."]
    if s.files:
        out += [
            "",
            "#### Files",
            "",
            "| File | Status | Before | After | Change | Patch | UNC uncovered new |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for f in s.files[:LISTED_FILES]:
            b, a, change = _file_change(f)
            p = f["patch"]
            out.append(
                f"| {_file_cell(f)} | {f['status'].replace('_', ' ')} | {b} | {a} | {change} | "
                f"{_share(p['hit'], p['found'])} | {f['lines']['UNC']} |"
            )
        if len(s.files) > LISTED_FILES:
            out.append(f"| … and {len(s.files) - LISTED_FILES} more files | | | | | | |")
    out += [
        "",
        "<details><summary>Lines by category (lcov's differential coverage)</summary>",
        "",
        "| Category | Lines | Branches | Functions |",
        "|---|---:|---:|---:|",
    ]
    for c in CATEGORIES:
        row = (d["categories"][c], d["branches"][c], d["functions"][c])
        if any(row):
            out.append(f"| {c} {NAMES[c]} | {row[0]} | {row[1]} | {row[2]} |")
    row = tuple(d[k].get("not_observed", 0) for k in ("categories", "branches", "functions"))
    if any(row):
        out.append(
            f"| not_observed: covered in the baseline, not run by this subset | {row[0]} | {row[1]} | {row[2]} |"
        )
    out += ["", "</details>"]
    unc = [r for r in s.ranges if r["category"] == "UNC"]
    if unc:
        snippets: dict[str, list[dict[str, Any]]] = {}
        for e in d.get("snippets") or ():
            snippets.setdefault(e["path"], []).append(e)
        out += [
            "",
            "#### UNC uncovered new code",
            "",
            "Added or changed lines no test covers (`!` marks them):",
        ]
        for path in dict.fromkeys(r["path"] for r in unc):
            mine = [r for r in unc if r["path"] == path]
            out += ["", f"{_code(path)}: {_lines_word(mine)} {_spans(mine)}"]
            shown = [e for e in snippets.get(path, ()) if e["lines"]]
            if shown:
                out += ["", *_snippet_block(path, shown)]
            elif path in snippets:
                out.append(f"(source not shown: {snippets[path][0].get('note') or 'unavailable'})")
    for c, words in (
        ("LBC", "covered in the baseline, not covered now"),
        ("UIC", "now counted as code, not covered"),
    ):
        flagged = [r for r in s.ranges if r["category"] == c]
        if not flagged:
            continue
        out += [
            "",
            f"#### {c} {NAMES[c]}",
            "",
            f"Lines {words}"
            + (" (a subset run: they may only not have run)" if c == "LBC" and s.subset else "")
            + ":",
            "",
        ]
        for path in dict.fromkeys(r["path"] for r in flagged):
            mine = [r for r in flagged if r["path"] == path]
            out.append(f"- {_code(path)}: {_lines_word(mine)} {_spans(mine)}")
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
    for r in sorted(
        (r for r in s.ranges if r["category"] in ATTENTION), key=lambda r: (r["path"], r["start"])
    ):
        if r["category"] == "LBC" and s.subset:
            continue
        n = r["line_count"]
        message = _ANNOTATION[r["category"]].format(
            n=n, lines="line" if n == 1 else "lines", are="is" if n == 1 else "are"
        )
        title = f"{r['category']} {NAMES[r['category']]}"
        out.append(
            f"::warning file={_escape(r['path'], prop=True)},line={r['start']},endLine={r['end']},"
            f"title={_escape(title, prop=True)}::{_escape(message, prop=False)}"
        )
    return out


def annotation_sink(where: str | None) -> IO[str] | None:
    """Where ``--annotations`` go: standard error (``-``), or ``where`` opened before any work, so an
    unwritable file is exit 2 before anything is printed; never standard output."""
    if where is None:
        return None
    if where == STDERR:
        return sys.stderr
    try:
        return open(where, "w", encoding="utf-8")  # closed by the command
    except OSError as exc:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"cannot write the annotations to {where}: {exc.strerror or exc}",
            "Name a writable file with --annotations FILE, or give --annotations alone for standard error.",
            {"path": where},
        ) from None


def one_line(error: CoverageError) -> str:
    """An error as one line of standard error: its code, message and suggestion (remedies as commands)."""
    shown = error_body(error, render=render_remedy)["error"]
    text = f"error [{shown['code']}]: {shown['message']}" + (
        f"; {shown['suggestion']}" if shown["suggestion"] else ""
    )
    return " ".join(text.split())


def compare(
    call: Callable[[Any, dict[str, Any]], dict[str, Any]], repo: str, args: dict[str, Any], as_json: bool
) -> dict[str, Any]:
    """``call`` (``ci.diff`` / ``ci.gate``) on whichever owns the store; "no baseline yet" exits 1 here, with
    one line on standard error and, with ``--json``, the error body on standard output for CI to read."""
    try:
        with open_project(repo) as project:
            return call(project, args)
    except CoverageError as error:
        if error.code is not ErrorCode.BASELINE_UNAVAILABLE:
            raise
        if as_json:
            emit_json(error_body(error, render=render_remedy))
        line = one_line(error)
        if args.get("baseline_fallback") is None and baselines.unmeasured_commit(error):
            line += " (or pass --baseline-fallback ancestor to compare with the nearest measured ancestor)"
        click.echo(line, err=True)
        sys.exit(FAILED)


# -- commands ---------------------------------------------------------------------------

FORMATS = ("table", "json", "markdown")


@click.command("diff")
@selectors(baseline_required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="table (the default) for a terminal, markdown for a pull-request comment, json for scripts "
    "(the envelope's data: every file and range). --json with a --format is a usage error: "
    "neither overrides the other.",
)
@click.option(
    "--annotations",
    "annotations",
    is_flag=False,
    flag_value=STDERR,
    default=None,
    metavar="[FILE]",
    help="Also write GitHub Actions ::warning annotations for uncovered new code and lost coverage, "
    "to standard error (or into FILE); standard output keeps only the report.",
)
@handles_errors
def diff_command(
    baseline, fallback, merge_base, current, suite, scope, commit, repo, as_json, fmt, annotations
) -> None:
    """Compare coverage with a baseline: lcov's twelve categories, patch coverage, files and ranges.

    --json prints the envelope of the comparison: coverage_review(task="change",
    representation="audit") with every page merged (page is null). --format
    markdown is a pull-request comment: total before -> after with the change,
    patch coverage, the changed files, and the uncovered new lines with their
    source. --annotations writes GitHub ::warning commands to standard error
    (or --annotations FILE), never into standard output.

    Example: coverage-mcp diff --baseline main --merge-base --format markdown --annotations
    """
    fmt = output_format(as_json, fmt, default="table")
    as_json = fmt == ENVELOPE
    args = comparison(baseline, merge_base, current, suite, scope, fallback, commit)
    if fmt == "markdown":
        args["snippets"] = True
    sink = annotation_sink(annotations)
    try:
        _diff(args, repo, as_json, fmt, suite, sink)
    finally:
        if sink is not None and annotations != STDERR:
            sink.close()


def _diff(
    args: dict[str, Any], repo: str, as_json: bool, fmt: str, suite: str | None, sink: IO[str] | None
) -> None:
    envelope = compare(ci.diff, repo, args, as_json)
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
    if sink is not None:
        sink.write("".join(line + "\n" for line in github_annotations(Summary.from_pages([envelope]))))
        sink.flush()


@click.command("gate")
@selectors(baseline_required=False)
@click.option(
    "--fail-under-total",
    type=PERCENT,
    metavar="P",
    help="Fail when the current side's total is under P percent, as its producing tool's own --fail-under "
    "decides (coverage.py: statements and branches, round(total, --precision) < P); needs no baseline. "
    "--counter lines keeps the earlier meaning: the exact line total.",
)
@click.option(
    "--counter",
    type=click.Choice(["headline", *COUNTERS]),
    default=None,
    help="What --fail-under-total checks: headline (default: the tool's own total) or a counter by name "
    "(lines: the exact line total).",
)
@click.option(
    "--precision",
    type=click.IntRange(0, 10),
    default=None,
    help="coverage.py's report:precision for --fail-under-total (default 0, as coverage.py).",
)
@click.option(
    "--fail-under-patch",
    type=PERCENT,
    metavar="P",
    help="Fail when patch coverage (added and changed lines) is under P percent.",
)
@click.option(
    "--ratchet", is_flag=True, help="Fail when any file's or directory's uncovered line count grew."
)
@click.option(
    "--criteria",
    metavar="EXPR",
    help=f"A condition over lcov's differential categories that must hold (default, when no other "
    f"check is given: '{DEFAULT_CRITERIA}'). Categories: "
    + "; ".join(f"{c} {NAMES[c]}" for c in CATEGORIES)
    + ". Example: --criteria 'UNC + LBC == 0'.",
)
@handles_errors
def gate_command(
    baseline,
    fallback,
    merge_base,
    current,
    suite,
    scope,
    commit,
    repo,
    as_json,
    fail_under_total,
    counter,
    precision,
    fail_under_patch,
    ratchet,
    criteria,
) -> None:
    """Fail CI when coverage drops: thresholds, a ratchet and criteria over the categories.

    Exit 0 when every check passes, 3 when one fails (each failure says why),
    2 on bad usage, 1 when the comparison cannot be made (no baseline yet:
    baseline_unavailable, one line on standard error, the error body on
    standard output with --json), or is not made because HEAD has no snapshot
    (claim stale, reason code current_not_measured; name one with --current to
    compare it as asked). Without --baseline, --fail-under-total P alone checks
    the current snapshot's total (coverage.py's --fail-under); --baseline none
    compares with nothing. A --current REPORT not shown to describe the working
    tree (claim limited, reason code report_identity_unproven) never passes:
    the checks are printed, and the exit is 1 (name its commit with --commit).
    --json prints the gate's envelope (data.passed,
    data.checks, the sides, categories and patch, the claim and its reason codes).

    Example: coverage-mcp gate --baseline main --merge-base --fail-under-patch 80 --ratchet
    """
    args = comparison(baseline, merge_base, current, suite, scope, fallback, commit)
    for key, value in (
        ("fail_under_total", fail_under_total),
        ("counter", counter),
        ("precision", precision),
        ("fail_under_patch", fail_under_patch),
        ("criteria", criteria),
    ):
        if value is not None:
            args[key] = value
    if ratchet:
        args["ratchet"] = True
    envelope = compare(ci.gate, repo, args, as_json)
    if as_json:
        emit_json(envelope)
    elif ci.not_compared(envelope):
        click.echo(render_not_compared(envelope["data"], suite))
    else:
        fallback_line = _fallback_line(envelope["data"])
        if fallback_line:
            click.echo(fallback_line)
        for c in envelope["data"]["checks"]:
            click.echo(f"{'PASS' if c['passed'] else 'FAIL'} {c['name']}: {c['detail']}")
        click.echo(render_claim(envelope["data"], indent=""))
    if ci.not_compared(envelope) or ci.unproven(envelope):
        sys.exit(FAILED)
    failed = ci.failure(args, envelope)
    if failed is not None:
        raise failed
