"""``ingest``, ``snapshots`` and ``show``: the store from the command line."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import click

from coverage_core.config import Settings
from coverage_core.model import Snapshot, snapshot_to_dict
from coverage_core.parsers.spool import local_report
from coverage_core.parsers import FORMATS
from coverage_core.project import SCOPES, parse_path_map
from coverage_daemon.client import open_project
from coverage_core.report import COUNTERS

from .output import emit_json, handles_errors, json_option, percent


def repo_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--repo", "repo", default=".", show_default=True, type=click.Path(file_okay=False),
        help="A path inside the git checkout to use.",
    )(func)


def _progress(enabled: bool) -> Callable[[str], None] | None:
    if not enabled:
        return None
    start = time.perf_counter()

    def show(stage: str) -> None:
        click.echo(f"  [{time.perf_counter() - start:6.2f}s] {stage}...", err=True)

    return show


def _totals_table(snapshot: Snapshot) -> None:
    for name in COUNTERS:
        if name in snapshot.totals:
            c = snapshot.totals[name]
            click.echo(f"  {name:<16}{c.hit:>12,}{c.found:>12,}{percent(c.hit, c.found):>10}")


@click.command("ingest")
@click.argument("report")
@click.option("--suite", default="default", show_default=True, help="Test suite this report measures.")
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), help="Skip detection and read as this format.")
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

    Example: coverage-mcp ingest coverage.json --suite unit
    """
    maps = [parse_path_map(m) for m in path_map]
    settings = Settings.from_env()
    # Streams only this process can read (stdin, /dev/fd/N, a pipe) are read
    # here into a private file, whoever then opens the store: the daemon must
    # never reopen a name that means something else in its own process.
    with local_report(report, settings.home, settings.max_report_bytes) as path, open_project(repo) as project:
        snap = project.ingest(
            path, suite=suite, format=fmt, scope=scope, commit=commit, branch=branch, path_map=maps,
            progress=_progress(not as_json and sys.stderr.isatty()),
        )
    if as_json:
        emit_json(snapshot_to_dict(snap))
        return
    state = "already stored (duplicate)" if snap.duplicate else "stored"
    click.echo(f"{snap.snapshot_id} {state}: {snap.format}, suite {snap.suite}, commit {(snap.commit or '-')[:12]}"
               f"{' (dirty)' if snap.dirty else ''}")
    m = snap.path_mapping
    click.echo(f"  files: {snap.files} ({m.mapped} mapped, {m.ambiguous} ambiguous, {m.unmapped} unmapped)")
    _totals_table(snap)
    for w in snap.warnings:
        click.echo(f"  warning [{w['code']}]: {w['message']}")


@click.command("snapshots")
@click.option("--suite", help="Only this suite.")
@click.option("--branch", help="Only this branch.")
@click.option("--commit", help="Only this commit (a prefix is enough).")
@click.option("--limit", type=click.IntRange(1, None), help="At most this many (newest first).")
@repo_option
@json_option
@handles_errors
def snapshots_command(suite, branch, commit, limit, repo, as_json) -> None:
    """List the snapshots of this repository, newest first.

    Example: coverage-mcp snapshots --suite unit --limit 5
    """
    with open_project(repo) as project:
        snaps = project.snapshots(suite=suite, branch=branch, commit=commit, limit=limit)
    if as_json:
        emit_json([snapshot_to_dict(s) for s in snaps])
        return
    if not snaps:
        click.echo("no snapshots yet: store one with `coverage-mcp ingest REPORT`")
        return
    click.echo(f"{'snapshot':<22}{'created':<21}{'suite':<12}{'format':<11}{'commit':<13}{'lines':>10}")
    for s in snaps:
        lines = s.totals.get("lines") or s.totals.get("statements")
        cov = percent(lines.hit, lines.found) if lines else "-"
        click.echo(f"{s.snapshot_id:<22}{s.created_at:%Y-%m-%d %H:%M:%S}  {s.suite[:11]:<12}{s.format:<11}"
                   f"{(s.commit or '-')[:12]:<13}{cov:>10}")


@click.command("show")
@click.argument("snapshot_id")
@click.option("--file", "file_path", help="Show one file's lines instead of the file list.")
@click.option("--limit", type=click.IntRange(1, None), default=50, show_default=True, help="Files to list.")
@click.option("--offset", type=click.IntRange(0, None), default=0, help="Skip this many files.")
@repo_option
@json_option
@handles_errors
def show_command(snapshot_id, file_path, limit, offset, repo, as_json) -> None:
    """Show one snapshot: its totals and files, or one file's detail.

    Example: coverage-mcp show snap-0123456789abcdef --file src/app.py
    """
    with open_project(repo) as project:
        snap = project.snapshot(snapshot_id)
        if file_path:
            detail = project.file_detail(snapshot_id, file_path)
            payload = {
                "snapshot_id": snapshot_id,
                "path": detail.summary.path,
                "mapping": detail.summary.mapping,
                "lines": [[int(l), int(h)] for l, h in zip(detail.lines["line"], detail.lines["hits"])],
                "branches": [[int(l), int(b), str(br), int(t)] for l, b, br, t in zip(
                    detail.branches["line"], detail.branches["block"], detail.branches["branch"], detail.branches["taken"])],
                "functions": [[str(n), int(s), int(h)] for n, s, h in zip(
                    detail.functions["name"], detail.functions["start_line"], detail.functions["hits"])],
                "tests": list(detail.tests),
            }
            if as_json:
                emit_json(payload)
                return
            s = detail.summary
            click.echo(f"{s.path} in {snapshot_id}: lines {s.lines.hit}/{s.lines.found} "
                       f"({percent(s.lines.hit, s.lines.found)}), mapping {s.mapping}")
            missed = [l for l, h in payload["lines"] if h == 0]
            click.echo(f"  uncovered lines: {_ranges(missed) or 'none'}")
            if detail.tests:
                click.echo(f"  named tests that ran it: {len(detail.tests)}")
            return
        page = project.files(snapshot_id, offset=offset, limit=limit)
    if as_json:
        body = snapshot_to_dict(snap)
        body["files_page"] = {
            "total": page.total, "offset": page.offset,
            "files": [{"path": f.path, "mapping": f.mapping, "lines": f.lines.to_dict(),
                       "branches": f.branches.to_dict(), "functions": f.functions.to_dict()} for f in page.files],
        }
        emit_json(body)
        return
    click.echo(f"{snap.snapshot_id}: {snap.format}, suite {snap.suite}, commit {(snap.commit or '-')[:12]}, "
               f"{snap.files} files, {snap.tests} named tests")
    _totals_table(snap)
    click.echo(f"\n  {'file':<60}{'lines':>10}{'missed':>8}")
    for f in page.files:
        click.echo(f"  {f.path[-60:]:<60}{percent(f.lines.hit, f.lines.found):>10}{f.lines.found - f.lines.hit:>8}")
    if page.offset + len(page.files) < page.total:
        click.echo(f"  ... {page.total - page.offset - len(page.files)} more (--offset {page.offset + len(page.files)})")


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
