"""``coverage-mcp ingest``: store a report as a snapshot, on whichever owns the store.

Its own module: an ingest reads the report (a stream of this process is spooled to a private file first)
and may parse it here, so it imports the parsers and the library that the read commands do without.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import click

from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.git import discover
from coverage_core.parsers.spool import local_report
from coverage_core.project import USUAL_REPORTS, find_reports, parse_path_map

from .options import FORMATS, SCOPES, json_option, repo_option
from .output import emit_json, handles_errors
from .owner import store_owner
from .store_cmds import echo_totals


def _progress(enabled: bool) -> Callable[[str], None] | None:
    """Each ingest stage on stderr with its elapsed time, for a person at a terminal."""
    if not enabled:
        return None
    start = time.perf_counter()

    def show(stage: str) -> None:
        click.echo(f"  [{time.perf_counter() - start:6.2f}s] {stage}...", err=True)

    return show


@click.command("ingest")
@click.argument("report", required=False)
@click.option("--suite", default="default", show_default=True, help="Test suite this report measures.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Skip detection and read as this format.")
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default="complete",
    show_default=True,
    help="'subset' when only selected tests ran.",
)
@click.option("--commit", help="Commit the report measures (default: HEAD).")
@click.option("--branch", help="Branch to record (default: the current branch).")
@click.option(
    "--path-map",
    "path_map",
    multiple=True,
    metavar="OLD=NEW",
    help="Rewrite a report path prefix to a repository-relative one (repeatable; one that matches "
    "no report path is a warning).",
)
@repo_option
@json_option
@handles_errors
def ingest_command(report, suite, fmt, scope, commit, branch, path_map, repo, as_json) -> None:
    """Store REPORT as an immutable snapshot of this repository ('-' reads standard input).

    Without REPORT, the usual report file in the checkout's root is taken
    (coverage.json, coverage.xml, lcov.info, coverage/lcov.info,
    coverage-final.json, coverage/coverage-final.json, cover.out, jacoco.xml,
    target/site/jacoco/jacoco.xml), saying which on stderr; when several are
    there, name one. coverage.py's data file (.coverage) is not a report: run
    `coverage json --show-contexts` first. Warnings go to stderr.

    --json prints the envelope of coverage_import (data.snapshot, data.duplicate).

    Example: coverage-mcp ingest coverage.json --suite unit
    """
    maps = [list(parse_path_map(m)) for m in path_map]
    settings = Settings.from_env()
    if report is None:
        report = str(_usual_report(repo))
    # Streams only this process can read (stdin, /dev/fd/N, a pipe) are read
    # here into a private file, whoever then opens the store: the daemon must
    # never reopen a name that means something else in its own process.
    with (
        local_report(
            report,
            settings.home,
            settings.max_report_bytes,
            wait_s=settings.ingest_wait_s,
            waiting=lambda line: click.echo(line, err=True),
        ) as path,
        store_owner(repo) as owner,
    ):
        given = {
            "report_path": str(path),
            "suite": suite,
            "format": fmt,
            "scope": scope,
            "commit": commit,
            "branch": branch,
            "path_map": maps or None,
        }
        envelope = owner.call(
            "owner_import",
            {k: v for k, v in given.items() if v is not None},
            progress=_progress(not as_json and sys.stderr.isatty()),
        )
    snap = envelope["data"]["snapshot"]
    if as_json:
        emit_json(envelope)
    else:
        state = "already stored (duplicate)" if envelope["data"]["duplicate"] else "stored"
        click.echo(
            f"{snap['snapshot_id']} {state}: {snap['format']}, suite {snap['suite']}, commit "
            f"{(snap['commit'] or '-')[:12]}{' (dirty)' if snap['dirty'] else ''}"
        )
        m = snap["path_mapping"]
        click.echo(
            f"  files: {snap['files']} ({m['mapped']} mapped, {m['ambiguous']} ambiguous, "
            f"{m['unmapped']} unmapped)"
        )
        echo_totals(snap["totals"], snap["format"], snap.get("tool"))
        if snap.get("headline"):
            h = snap["headline"]
            click.echo(f"  total {h['percent']} ({h['counter']}, as {h['rule']} computes and rounds it)")
        for w in snap["warnings"]:
            click.echo(f"warning [{w['code']}]: {w['message']}", err=True)


def _usual_report(repo: str) -> Path:
    """The one usual report file in the checkout's root (said on stderr), or an error listing what was looked for."""
    root = discover(repo).worktree_path
    found = find_reports(root)
    if len(found) == 1:
        click.echo(f"ingest: using {found[0].relative_to(root)} (found in {root})", err=True)
        return found[0]
    if found:
        names = ", ".join(str(p.relative_to(root)) for p in found)
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"several report files in {root}: {names}",
            f"Name the one to store: coverage-mcp ingest {found[0].relative_to(root)}",
            {"found": [str(p) for p in found], "reason": "several_reports"},
        )
    raise CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        f"no report file given, and none of the usual ones is in {root} (looked for {', '.join(USUAL_REPORTS)})",
        "Name the report to store: coverage-mcp ingest PATH (for coverage.py, write one with "
        "`coverage json --show-contexts`).",
        {"looked_for": list(USUAL_REPORTS), "root": str(root), "reason": "no_report"},
    )
