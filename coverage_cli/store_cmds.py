"""``ingest``, ``snapshots`` and ``show``: the store from the command line.

Each is one operation on whichever owns the store (``coverage_daemon.client``):
``ingest`` the owner's import (coverage_import's envelope), ``snapshots``
coverage_review task=snapshots, ``show`` task=files or, with ``--file``,
task=file. ``--json`` prints that envelope; the rest renders it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import click

from coverage_core.config import Settings
from coverage_core.parsers.spool import local_report
from coverage_core.project import parse_path_map
from coverage_core.report import COUNTERS
from coverage_core.review.budget import MAX_BYTES, MAX_WORDS
from coverage_daemon.client import call, open_project, owner_import

from .options import FILE_ORDERS, FORMATS, PAGE_SIZE, SCOPES, json_option, repo_option
from .output import emit_json, handles_errors, percent

# A person's listing is bounded by its page size, not by an agent's word budget.
WHOLE_PAGE = {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES}


def _progress(enabled: bool) -> Callable[[str], None] | None:
    """Each ingest stage on stderr with its elapsed time, for a person at a terminal."""
    if not enabled:
        return None
    start = time.perf_counter()

    def show(stage: str) -> None:
        click.echo(f"  [{time.perf_counter() - start:6.2f}s] {stage}...", err=True)

    return show


def _totals(totals: dict[str, Any]) -> None:
    for name in COUNTERS:
        if name in totals:
            c = totals[name]
            click.echo(f"  {name:<16}{c['hit']:>12,}{c['found']:>12,}{percent(c['hit'], c['found']):>10}")


def _more(envelope: dict[str, Any]) -> None:
    cursor = (envelope.get("page") or {}).get("next_cursor")
    if cursor:
        click.echo(f"  more: --cursor {cursor}")


@click.command("ingest")
@click.argument("report")
@click.option("--suite", default="default", show_default=True, help="Test suite this report measures.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Skip detection and read as this format.")
@click.option("--scope", type=click.Choice(SCOPES), default="complete", show_default=True,
              help="'subset' when only selected tests ran.")
@click.option("--commit", help="Commit the report measures (default: HEAD).")
@click.option("--branch", help="Branch to record (default: the current branch).")
@click.option("--path-map", "path_map", multiple=True, metavar="OLD=NEW",
              help="Rewrite a report path prefix to a repository-relative one (repeatable).")
@repo_option
@json_option
@handles_errors
def ingest_command(report, suite, fmt, scope, commit, branch, path_map, repo, as_json) -> None:
    """Store REPORT as an immutable snapshot of this repository ('-' reads standard input).

    --json prints the envelope of coverage_import (data.snapshot, data.duplicate).

    Example: coverage-mcp ingest coverage.json --suite unit
    """
    maps = [list(parse_path_map(m)) for m in path_map]
    settings = Settings.from_env()
    # Streams only this process can read (stdin, /dev/fd/N, a pipe) are read
    # here into a private file, whoever then opens the store: the daemon must
    # never reopen a name that means something else in its own process.
    with local_report(report, settings.home, settings.max_report_bytes) as path, open_project(repo) as project:
        given = {"report_path": str(path), "suite": suite, "format": fmt, "scope": scope, "commit": commit,
                 "branch": branch, "path_map": maps or None}
        envelope = owner_import(project, {k: v for k, v in given.items() if v is not None},
                                progress=_progress(not as_json and sys.stderr.isatty()))
    if as_json:
        emit_json(envelope)
        return
    snap = envelope["data"]["snapshot"]
    state = "already stored (duplicate)" if envelope["data"]["duplicate"] else "stored"
    click.echo(f"{snap['snapshot_id']} {state}: {snap['format']}, suite {snap['suite']}, commit "
               f"{(snap['commit'] or '-')[:12]}{' (dirty)' if snap['dirty'] else ''}")
    m = snap["path_mapping"]
    click.echo(f"  files: {snap['files']} ({m['mapped']} mapped, {m['ambiguous']} ambiguous, {m['unmapped']} unmapped)")
    _totals(snap["totals"])
    for w in snap["warnings"]:
        click.echo(f"  warning [{w['code']}]: {w['message']}")


@click.command("snapshots")
@click.option("--suite", help="Only this suite.")
@click.option("--branch", help="Only this branch.")
@click.option("--commit", help="Only this commit (a prefix of 4 or more hex digits is enough).")
@click.option("--snapshot", "snapshot_id", help="Only this snapshot (to see its record and totals).")
@click.option("--limit", type=PAGE_SIZE, help="At most this many per page (newest first); more with --cursor.")
@click.option("--cursor", help="page.next_cursor of a previous listing.")
@repo_option
@json_option
@handles_errors
def snapshots_command(suite, branch, commit, snapshot_id, limit, cursor, repo, as_json) -> None:
    """List the snapshots of this repository, newest first.

    --json prints the envelope of coverage_review(task="snapshots",
    representation="review"): data.snapshots holds the records.

    Example: coverage-mcp snapshots --suite unit --limit 5
    """
    wanted = {k: v for k, v in (("snapshot_id", snapshot_id), ("suite", suite), ("branch", branch),
                                ("commit", commit)) if v is not None}
    args: dict[str, Any] = {"task": "snapshots", "filter": wanted, "representation": "review", "limits": WHOLE_PAGE}
    if limit is not None:
        args["page_size"] = limit
    if cursor is not None:
        args["cursor"] = cursor
    with open_project(repo) as project:
        envelope = call(project, "coverage_review", args)
    if as_json:
        emit_json(envelope)
        return
    render_snapshots(envelope)


def render_snapshots(envelope: dict[str, Any]) -> None:
    snaps = envelope["data"]["snapshots"]
    if not snaps:
        click.echo("no snapshots yet: store one with `coverage-mcp ingest REPORT`")
        return
    # Names are never cut (two suites may differ only at their end): the column fits the longest.
    width = max([len("suite"), *(len(s[2] if isinstance(s, list) else s["suite"]) for s in snaps)]) + 2
    click.echo(f"{'snapshot':<22}{'created':<21}{'suite':<{width}}{'format':<11}{'commit':<13}{'lines':>10}")
    for s in snaps:
        if isinstance(s, list):  # the compact representation (see its legend)
            sid, created, suite, fmt, commit, _branch, _dirty, _scope, _counter, hit, found = s
            cov = percent(hit, found) if found else "-"
        else:
            sid, created, suite, fmt, commit = s["snapshot_id"], s["created_at"], s["suite"], s["format"], s["commit"]
            lines = s["totals"].get("lines") or s["totals"].get("statements")
            cov = percent(lines["hit"], lines["found"]) if lines else "-"
        when = str(created).replace("T", " ")[:19]
        click.echo(f"{sid:<22}{when:<21}{suite:<{width}}{fmt:<11}{(commit or '-')[:12]:<13}{cov:>10}")
    if len(snaps) == 1 and isinstance(snaps[0], dict):
        _totals(snaps[0]["totals"])
    _more(envelope)


@click.command("show")
@click.argument("snapshot_id")
@click.option("--file", "file_path", help="Show one file's lines instead of the file list.")
@click.option("--lines", help="With --file: only this line or range A-B.")
@click.option("--order", type=click.Choice(FILE_ORDERS), default="path", show_default=True,
              help="Order of the file list.")
@click.option("--limit", type=PAGE_SIZE, default=50, show_default=True, help="Files per page.")
@click.option("--cursor", help="page.next_cursor of a previous answer (replaces --offset).")
@repo_option
@json_option
@handles_errors
def show_command(snapshot_id, file_path, lines, order, limit, cursor, repo, as_json) -> None:
    """Show one snapshot's files, or one file's detail (lines, branches, functions, regions, tests).

    --json prints the envelope of coverage_review(task="files") or, with
    --file, of coverage_review(task="file"). A snapshot's record and totals:
    coverage-mcp snapshots --snapshot SNAPSHOT.

    Example: coverage-mcp show snap-0123456789abcdef --file src/app.py
    """
    args: dict[str, Any] = {"measurement": {"snapshot_id": snapshot_id}, "limits": WHOLE_PAGE}
    if file_path:
        args.update(task="file", file=file_path)
        if lines:
            args["lines"] = lines
    else:
        if lines:
            raise click.UsageError("--lines needs --file")
        args.update(task="files", order=order, page_size=limit, representation="review")
    if cursor:
        args["cursor"] = cursor
    with open_project(repo) as project:
        envelope = call(project, "coverage_review", args)
        if as_json:
            emit_json(envelope)
            return
        if file_path:
            render_file(envelope)
            return
        data = envelope["data"]
        missing = {f["path"]: _missing(project, data["snapshot_id"], f["path"]) for f in data["files"]
                   if isinstance(f, dict) and _incomplete(f)}
        snap = call(project, "coverage_review", {"task": "snapshots", "representation": "review",
                                                 "filter": {"snapshot_id": data["snapshot_id"]}})
    totals = snap["data"]["snapshots"][0]["totals"] if snap["data"]["snapshots"] else None
    render_files(envelope, missing, totals)


def _incomplete(f: dict[str, Any]) -> bool:
    return f["lines"]["hit"] < f["lines"]["found"] or f["branches"]["hit"] < f["branches"]["found"]


def _missing(project: Any, snapshot_id: str, path: str) -> tuple[int, str]:
    """One file's BrPart and Missing as ``coverage report -m`` shows them, from its detail (every page)."""
    args: dict[str, Any] = {"task": "file", "measurement": {"snapshot_id": snapshot_id}, "file": path,
                            "limits": WHOLE_PAGE}
    lines: dict[int, int] = {}
    arcs: list[tuple[int, str, int]] = []
    while True:
        answer = call(project, "coverage_review", args)
        d = answer["data"]
        lines.update(zip(d["lines"]["line"], d["lines"]["hits"]))
        arcs += zip(d["branches"]["line"], d["branches"]["branch"], d["branches"]["taken"])
        cursor = (answer.get("page") or {}).get("next_cursor")
        if cursor is None:
            break
        args["cursor"] = cursor
    return missing_text(lines, arcs)


def missing_text(lines: dict[int, int], arcs: list[tuple[int, str, int]]) -> tuple[int, str]:
    """(BrPart, Missing) the way coverage.py counts and writes them.

    BrPart: branches not taken from lines that ran. Missing: runs of unrun
    statements (a run spans lines that are not statements, as coverage.py's
    ``format_lines`` does), then ``A->B`` for a branch not taken whose source
    and target both ran. Only coverage.py reports name a branch's target
    ("jump to line N", "exit"); for other formats Missing lists lines only.
    """
    missed = {n for n, hits in lines.items() if not hits}
    partial = [(n, label) for n, label, taken in arcs if not taken and lines.get(n)]
    items: list[tuple[int, str]] = []
    start = prev = None
    for n in sorted(lines):
        if n in missed:
            start = n if start is None else start
            prev = n
            continue
        if start is not None:
            items.append((start, f"{start}-{prev}" if start != prev else str(start)))
            start = None
    if start is not None:
        items.append((start, f"{start}-{prev}" if start != prev else str(start)))
    for n, label in partial:
        target = str(label)
        if target == "exit":
            items.append((n, f"{n}->exit"))
        elif target.startswith("jump to line ") and target[13:].isdigit() and int(target[13:]) not in missed:
            items.append((n, f"{n}->{target[13:]}"))
    return len(partial), ", ".join(text for _, text in sorted(items))


def render_files(envelope: dict[str, Any], missing: dict[str, tuple[int, str]] | None = None,
                 totals: dict[str, Any] | None = None) -> None:
    """The file table with coverage.py's columns; Cover counts statements and branches, as ``coverage report``.

    ``missing``: BrPart and Missing of the files that miss something (``show`` reads each
    file's detail; without it those columns are left out). ``totals``: the snapshot's, for
    the TOTAL line (every file, not only this page).
    """
    data = envelope["data"]
    click.echo(f"{data['snapshot_id']}: {data['total']} files, suite {envelope['context']['suite']} "
               f"[{data['claim_status']}]" + "".join(f"\n  - {r}" for r in data["reasons"]))
    rows: list[list[str]] = []
    compact = any(isinstance(f, list) for f in data["files"])
    for f in data["files"]:
        if isinstance(f, list):  # the compact representation: path, lines hit, lines found (no branches)
            rows.append(_row(f[0], {"hit": f[1], "found": f[2]}, None, None))
        else:
            path = f["path"]
            rows.append(_row(path, f["lines"], f["branches"],
                             (missing or {}).get(path, (0, "")) if missing is not None else None))
    total_row = None
    if totals is not None:
        lines = totals.get("statements") or totals.get("lines") or {"hit": 0, "found": 0}
        branches = totals.get("branches") or {"hit": 0, "found": 0}
        whole = data["total"] == len(rows) and not (envelope.get("page") or {}).get("offset")
        brpart = sum(part for part, _ in (missing or {}).values()) if whole and missing is not None else None
        total_row = _row("TOTAL", lines, branches, None if missing is None else (brpart, ""))
    with_missing = missing is not None
    header = ["Name", "Stmts", "Miss", "Branch", "BrPart", "Cover"] + (["Missing"] if with_missing else [])
    if not with_missing:
        header.remove("BrPart")
    if compact:  # lines only: Cover is the lines' coverage
        header.remove("Branch")
    table = [header, *rows, *([total_row] if total_row else [])]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]

    numbers = len(header) - 1 - with_missing  # right-aligned columns after the name

    def line(cells: list[str]) -> str:
        out = [cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:1 + numbers], widths[1:])]
        return "  " + "  ".join(out + cells[1 + numbers:]).rstrip()

    shown = [line(r) for r in rows]
    closing = line(total_row) if total_row else None
    rule = "  " + "-" * (max(len(text) for text in [line(header), *shown, closing or ""]) - 2)
    click.echo("")
    click.echo(line(header))
    click.echo(rule)
    for text in shown:
        click.echo(text)
    if closing:
        click.echo(rule)
        click.echo(closing)
    page = envelope.get("page") or {}
    left = data["total"] - (page.get("offset") or 0) - len(rows)
    if left > 0 and page.get("next_cursor"):
        click.echo(f"  ... {left} more file{'s' if left > 1 else ''}: --cursor {page['next_cursor']}")
    elif page.get("next_cursor"):
        _more(envelope)
    if total_row and with_missing and total_row[4] == "":
        click.echo("  (TOTAL's BrPart needs every file's detail: it is shown when one page holds all files, "
                   "see --limit)")


def _row(name: str, lines: dict[str, int], branches: dict[str, int] | None,
         missing: tuple[int | None, str] | None) -> list[str]:
    if branches is None:
        return [name, str(lines["found"]), str(lines["found"] - lines["hit"]), percent(lines["hit"], lines["found"])]
    cover = percent(lines["hit"] + branches["hit"], lines["found"] + branches["found"])
    row = [name, str(lines["found"]), str(lines["found"] - lines["hit"]), str(branches["found"])]
    if missing is None:
        return [*row, cover]
    part, text = missing
    return [*row, "" if part is None else str(part), cover, text]


def render_file(envelope: dict[str, Any]) -> None:
    data = envelope["data"]
    s = data["summary"]
    hit, found = s["lines"]["hit"], s["lines"]["found"]
    click.echo(f"{s['path']} in {data['snapshot_id']}: lines {hit}/{found} ({percent(hit, found)}), "
               f"mapping {s['mapping']}")
    missed = [n for n, h in zip(data["lines"]["line"], data["lines"]["hits"]) if h == 0]
    click.echo(f"  uncovered lines: {_ranges(missed) or 'none'}")
    if data["tests"]:
        click.echo(f"  named tests that ran it: {len(data['tests'])}")
    _more(envelope)


def _ranges(lines: list[int]) -> str:
    out, start, prev = [], None, None
    for n in lines:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if start != prev else str(start))
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if start != prev else str(start))
    return ", ".join(out)
