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
    click.echo(f"{'snapshot':<22}{'created':<21}{'suite':<12}{'format':<11}{'commit':<13}{'lines':>10}")
    for s in snaps:
        if isinstance(s, list):  # the compact representation (see its legend)
            sid, created, suite, fmt, commit, _branch, _dirty, _scope, _counter, hit, found = s
            cov = percent(hit, found) if found else "-"
        else:
            sid, created, suite, fmt, commit = s["snapshot_id"], s["created_at"], s["suite"], s["format"], s["commit"]
            lines = s["totals"].get("lines") or s["totals"].get("statements")
            cov = percent(lines["hit"], lines["found"]) if lines else "-"
        when = str(created).replace("T", " ")[:19]
        click.echo(f"{sid:<22}{when:<21}{suite[:11]:<12}{fmt:<11}{(commit or '-')[:12]:<13}{cov:>10}")
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
    (render_file if file_path else render_files)(envelope)


def render_files(envelope: dict[str, Any]) -> None:
    data = envelope["data"]
    click.echo(f"{data['snapshot_id']}: {data['total']} files, suite {envelope['context']['suite']} "
               f"[{data['claim_status']}]" + "".join(f"\n  - {r}" for r in data["reasons"]))
    click.echo(f"\n  {'file':<60}{'lines':>10}{'missed':>8}")
    for f in data["files"]:
        path, hit, found = (f[0], f[1], f[2]) if isinstance(f, list) else (
            f["path"], f["lines"]["hit"], f["lines"]["found"])
        click.echo(f"  {path[-60:]:<60}{percent(hit, found):>10}{found - hit:>8}")
    _more(envelope)


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
