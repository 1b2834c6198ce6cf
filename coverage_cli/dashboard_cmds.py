"""``dashboard`` (open the live page, signed in through a one-time link) and ``report --html`` (the static page)."""

from __future__ import annotations

import html
import sys
import webbrowser
from pathlib import Path
from typing import Any

import click

from .options import json_option, repo_option
from .output import emit_json, handles_errors

OPEN_FILE = "dashboard-open.html"

_OPENER = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="0;url={url}">
<meta name="referrer" content="no-referrer">
<title>coverage-mcp: opening the dashboard</title></head>
<body><p>Opening the coverage-mcp dashboard… <a href="{url}" rel="noreferrer">continue</a>
(this link works once, for {ttl} seconds).</p></body></html>
"""


def write_opener(home: Path, url: str, ttl: int) -> Path:
    """The one-time link in a 0600 file of the 0700 home: the browser opens the file, not a URL on a command line."""
    from coverage_daemon.credentials import private_home, write_private

    path = private_home(home) / OPEN_FILE
    write_private(path, _OPENER.format(url=html.escape(url, quote=True), ttl=ttl))
    return path


@click.command("dashboard")
@click.option(
    "--no-open",
    "no_open",
    is_flag=True,
    help="Write the sign-in file and print its path without opening a browser.",
)
@repo_option
@json_option
@handles_errors
def dashboard_command(no_open: bool, repo: str, as_json: bool) -> None:
    """Open the dashboard of this repository in the browser, signed in through a one-time link.

    Starts the daemon if none runs, asks it for a one-time sign-in link and
    writes that link into a private file (0600, in the 0700 COVERAGE_MCP_HOME),
    which the browser opens: the secret never appears on a command line. The
    daemon exchanges the link, once and within two minutes, for an HttpOnly,
    SameSite=Strict session cookie of this browser.

    Example: coverage-mcp dashboard --repo ~/src/app
    """
    from coverage_core.config import Settings
    from coverage_core.git import discover
    from coverage_daemon.identity import CAPABILITY_HEADER
    from coverage_daemon.launcher import Launcher
    from coverage_daemon.launcher import Settings as LaunchSettings
    from coverage_daemon.rest_client import running_daemon

    settings = Settings.from_env()
    checkout = discover(Path(repo).absolute())
    if running_daemon(settings) is None:
        Launcher(LaunchSettings.from_env(), lambda message: None).connect()
    found = running_daemon(settings)
    if found is None:
        raise click.ClickException("the daemon did not start; see `coverage-mcp status`")
    client, meta = found
    client.register(checkout.worktree_path)
    # the link names this repository's project: the page opens on it, never on another the daemon saw last
    answer = client.request(
        "POST",
        "/api/dashboard/ticket",
        query={"project": checkout.project_id},
        headers={CAPABILITY_HEADER: meta["capability"]},
    )[1]
    opener = write_opener(settings.home, answer["data"]["url"], answer["data"]["expires_in_s"])
    opened = False
    if not no_open:
        opened = webbrowser.open(opener.as_uri())
    if as_json:
        emit_json(
            {
                "open_file": str(opener),
                "opened": opened,
                "project_id": checkout.project_id,
                "expires_in_s": answer["data"]["expires_in_s"],
            }
        )
        return
    if opened:
        click.echo(f"opened the dashboard of {checkout.worktree_path} in your browser")
    else:
        click.echo(
            f"open this file in your browser (once, within {answer['data']['expires_in_s']} s): {opener.as_uri()}"
        )


@click.command("report")
@click.option(
    "--html",
    "directory",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write the report into (its index.html).",
)
@click.option(
    "--include-logs",
    "include_logs",
    is_flag=True,
    help="Also embed the newest runs' output (left out by default: a run prints what it likes, secrets too).",
)
@click.option(
    "--single-file",
    "single_file",
    is_flag=True,
    help="One self-contained index.html (the worst files' sources embedded) instead of a page per file.",
)
@click.option("--current", help="Snapshot to show (default: the newest of the suite).")
@click.option(
    "--baseline", help="Snapshot to compare with, or 'none' (default: the one stored before the current)."
)
@click.option("--suite", help="Suite whose snapshots to show (default: the default suite).")
@click.option("--composite", help="Composite snapshot to show (default: the newest).")
@click.option(
    "--composite-baseline",
    "composite_baseline",
    help="Composite snapshot to compare with, or 'none' (default: the one stored before).",
)
@repo_option
@json_option
@handles_errors
def report_command(
    directory: Path,
    current: str | None,
    baseline: str | None,
    suite: str | None,
    composite: str | None,
    composite_baseline: str | None,
    include_logs: bool,
    single_file: bool,
    repo: str,
    as_json: bool,
) -> None:
    """Write the dashboard as a static HTML site (for CI artifacts): an index and one page per file.

    DIR/index.html is the same page as `coverage-mcp dashboard` with its data
    embedded, listing every file; DIR/files/ holds each file's annotated source
    and how many named tests ran it. Every page opens from disk with no network
    and no daemon. --single-file writes one index.html instead, carrying the
    sources of the files with the most missed lines. Every number is the stored
    one (`coverage-mcp snapshots`, `show`, `review change` show the same).

    Run output is left out unless --include-logs: a published report then
    carries whatever the newest runs printed (a warning line says so).

    Example: coverage-mcp report --html coverage-report --baseline snap-0123abcd
    """
    from coverage_daemon import static_report
    from coverage_daemon.client import open_project

    with open_project(repo) as project:
        chosen = {
            "current": current,
            "baseline": baseline,
            "suite": suite,
            "composite": composite,
            "composite_baseline": composite_baseline,
            "order": "uncovered",
        }  # a large project's report carries its worst files, not the first by path
        data, sources = _report_data(project, chosen, include_logs=include_logs, every_file=not single_file)
        rows = data.pop("all_files", None)
        tests = data.pop("file_tests", None)
        functions = data.pop("all_functions", None)
    if include_logs:
        click.echo(
            "warning: --include-logs embeds the run output of the newest runs in the report; whatever they "
            "printed (tokens, keys, paths) is published with it",
            err=True,
        )
    if single_file:
        out = static_report.write(directory, data, sources)
    else:
        base = (data["selection"]["baseline"] or {}).get("snapshot_id")
        out = static_report.write_site(directory, data, rows or [], sources, tests, base, functions)
    metrics = data["metrics"]
    if as_json:
        emit_json(
            {
                "report": str(out),
                "project_id": data["project"]["project_id"],
                "current": (data["selection"]["current"] or {}).get("snapshot_id"),
                "baseline": (data["selection"]["baseline"] or {}).get("snapshot_id"),
                "metrics": metrics,
                "sources": len(sources),
            }
        )
        return
    lines = (metrics["lines"]["current"] or {}).get("percent")
    click.echo(f"wrote {out} (lines {lines if lines is not None else '—'}%)", file=sys.stdout)


def _whole_file(
    call: Any, project: Any, snap: str, path: str, baseline: str | None, upto: int | None = None
) -> dict[str, Any]:
    """Every annotated line of one file (dashboard_source, a window at a time; the first ``upto`` lines when
    given), partial lines with their missed branches, and against ``baseline`` the file's change-category
    ranges: a site's file page is whole."""
    lines: list[dict[str, Any]] = []
    first: dict[str, Any] = {}
    while True:
        count = 2000 if upto is None else min(2000, upto - len(lines))
        window = call(
            project,
            "dashboard_source",
            {"snapshot": snap, "file": path, "start": len(lines) + 1, "count": max(1, count)},
        )
        first = first or window["data"]
        lines += window["data"]["lines"]
        total = window["data"]["file_lines"]
        if not window["data"]["lines"] or len(lines) >= total or (upto is not None and len(lines) >= upto):
            break
    out = {**first, "lines": lines, "truncated": len(lines) < total, "file_lines": total}
    if baseline:
        cats = call(
            project,
            "dashboard_source",
            {"snapshot": snap, "file": path, "part": "categories", "baseline": baseline},
        )["data"]
        out["categories"] = {k: cats[k] for k in ("available", "ranges", "reason") if k in cats}
        # only the ranges of the lines carried (a single file carries the first ``upto``)
        out["categories"]["ranges"] = [r for r in out["categories"].get("ranges", []) if r[1] <= len(lines)]
    return out


def _functions(call: Any, project: Any, snap: str) -> dict[str, Any]:
    """The site's function index: every function of the snapshot (at most ``MAX_SITE_FUNCTIONS``), by file
    and line, as the dashboard_functions row pages them."""
    from coverage_daemon.static_report import MAX_SITE_FUNCTIONS

    rows: list[dict[str, Any]] = []
    ask: dict[str, Any] = {"snapshot": snap, "sort": "file", "limit": 2000}
    while len(rows) < MAX_SITE_FUNCTIONS:
        answer = call(project, "dashboard_functions", ask)
        rows += answer["data"]["rows"]
        if not answer["page"]["next_cursor"]:
            return {"rows": rows, "truncated": False}
        ask["cursor"] = answer["page"]["next_cursor"]
    return {"rows": rows[:MAX_SITE_FUNCTIONS], "truncated": True}


def _report_data(
    project: Any, chosen: dict[str, str | None], *, include_logs: bool = False, every_file: bool = False
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The projection and the annotated sources: the dashboard's rows, on whichever owns the store. With
    ``every_file`` (the site): every file's row and source, and how many named tests ran each."""
    from coverage_daemon import static_report
    from coverage_daemon.client import call

    data = call(project, "dashboard", {k: v for k, v in chosen.items() if v is not None})["data"]
    snap = (data["selection"]["current"] or {}).get("snapshot_id")
    base = (data["selection"]["baseline"] or {}).get("snapshot_id")
    if every_file and snap:
        rows: list[dict[str, Any]] = []
        ask: dict[str, Any] = {
            "snapshot": snap,
            "sort": "missed",
            "descending": True,
            "limit": 2000,
            "with_tests": True,
        }
        while True:
            answer = call(project, "dashboard_files", ask)
            rows += answer["data"]["rows"]
            if not answer["page"]["next_cursor"]:
                break
            ask["cursor"] = answer["page"]["next_cursor"]
        data["all_files"] = rows
        data["all_functions"] = _functions(call, project, snap)
        named = (data.get("tests") or {}).get("count")
        data["file_tests"] = {r["path"]: r.get("tests", 0) for r in rows} if named else None
        sources = {r["path"]: _whole_file(call, project, snap, r["path"], base) for r in rows}
    else:
        # the worst files, each to dashboard_file's bound, with their missed branches and change categories
        sources = (
            {
                path: _whole_file(call, project, snap, path, base, upto=static_report.MAX_FILE_LINES)
                for path in static_report.source_candidates(data)
            }
            if snap
            else {}
        )
    data["run_logs"] = {
        run: call(project, "dashboard_run", {"run": run})["data"]
        for run in (static_report.run_candidates(data) if include_logs else [])
    }
    return data, sources
