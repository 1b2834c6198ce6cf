"""``review`` and ``context``: the agent-facing answers, for people and scripts.

``--json`` prints exactly the envelope the MCP tool returns; without it, a
readable rendering of the same answer.
"""

from __future__ import annotations

from typing import Any

import click

from coverage_daemon.client import call, open_project

from .options import (
    CONTEXT_MAX_WORDS,
    FILE_ORDERS,
    MAX_WORDS,
    PAGE_SIZE,
    REPRESENTATIONS,
    TASKS,
    baseline_options,
    baseline_spec,
    json_option,
    repo_option,
    review_arguments,
)
from .output import emit_json, handles_errors, percent
from .store_cmds import render_file, render_files, render_snapshots


def _call(repo: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The operation on the store's owner: this process, or the daemon when it holds the store."""
    with open_project(repo) as project:
        return call(project, name, args)


@click.command("review")
@click.argument("task", type=click.Choice(TASKS))
@click.option("--snapshot", "snapshot_id", help="Snapshot id (default: latest of the suite); snapshots: only this one.")
@click.option("--suite", help="Suite whose latest snapshot to read; snapshots: only this suite.")
@click.option("--branch", help="snapshots: only this branch.")
@click.option("--commit", help="snapshots: only this commit (a prefix of 4 or more hex digits is enough).")
@click.option("--file", "file_path", help="Repository-relative file to focus on (file: the file to show).")
@click.option("--lines", help="A line or range A-B within --file.")
@baseline_options(required=False)
@click.option("--max-words", type=MAX_WORDS, help="Word budget of the answer.")
@click.option("--representation", type=click.Choice(REPRESENTATIONS), help="Shape of the answer.")
@click.option("--page-size", type=PAGE_SIZE, help="snapshots, files: records per page.")
@click.option("--order", type=click.Choice(FILE_ORDERS), help="files: the order of the files.")
@click.option("--cursor", help="page.next_cursor of a previous answer.")
@repo_option
@json_option
@handles_errors
def review_command(task, snapshot_id, suite, branch, commit, file_path, lines, baseline, merge_base, max_words,
                   representation, page_size, order, cursor, repo, as_json) -> None:
    """Answer a coverage question: any task of coverage_review (insight, change, history, snapshots, file, ...).

    --json prints exactly the envelope of coverage_review with these arguments.

    Example: coverage-mcp review change --baseline main --max-words 300
    """
    args = review_arguments(task, {
        "--snapshot": snapshot_id, "--suite": suite, "--branch": branch, "--commit": commit, "--file": file_path,
        "--lines": lines, "--baseline": baseline_spec(baseline, merge_base), "--max-words": max_words,
        "--representation": representation, "--page-size": page_size, "--order": order, "--cursor": cursor,
    })
    envelope = _call(repo, "coverage_review", args)
    if as_json:
        emit_json(envelope)
        return
    render_review(envelope)


@click.command("context")
@click.option("--max-words", type=CONTEXT_MAX_WORDS, help="Word budget of the answer.")
@repo_option
@json_option
@handles_errors
def context_command(max_words, repo, as_json) -> None:
    """Show the repository's identity, freshness and latest snapshot per suite.

    Example: coverage-mcp context --json
    """
    envelope = _call(repo, "project_context", {"max_words": max_words} if max_words else {})
    if as_json:
        emit_json(envelope)
        return
    data = envelope["data"]
    p = data["project"]
    click.echo(f"{p['checkout_path']} (project {p['project_id']}, worktree {p['worktree']})")
    click.echo(f"  HEAD {(p['head'] or '-')[:12]} on {p['branch'] or '(detached)'}{', dirty' if p['dirty'] else ''}")
    for s in data["suites"]:
        cov = percent(*s["covered"]) if s["covered"] else "-"
        click.echo(f"  suite {s['suite']:<14}{s['snapshot_id']}  {cov:>8}  {s['behind_head']} behind HEAD  "
                   f"[{s['claim_status']}]")
    if not data["suites"]:
        click.echo("  no snapshots yet")
    click.echo(f"  next: {data['next']}")


def render_review(envelope: dict[str, Any]) -> None:
    data = envelope["data"]
    task = data.get("task")
    listing = {"snapshots": render_snapshots, "files": render_files, "file": render_file}.get(task or "")
    if listing is not None and data.get("claim_status") != "not_measured":
        listing(envelope)
        return
    click.echo(f"{task}: {data['claim_status']}" + "".join(f"\n  - {r}" for r in data.get("reasons", [])))
    if task == "insight":
        for t in data.get("targets", []):
            path, fn, unc, part, ranges = (t[0], t[1], t[2], t[3], t[4]) if isinstance(t, list) else (
                t["path"], t["function"], t["uncovered_lines"], t["partial_lines"],
                [[r["start"], r["end"], r["line_count"]] for r in t["ranges"]])
            where = f"{path}:{fn}" if fn else path
            spans = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b, _ in ranges)
            click.echo(f"  {where}: {unc} uncovered, {part} partial  [{spans}]")
    elif task == "source":
        for r in data.get("ranges", []):
            for line in r["lines"]:
                n, mark, text = line if isinstance(line, list) else (line["line"], line["status"][0], line["text"])
                click.echo(f"  {n:>6} {mark} {text}")
            click.echo("")
    elif task == "history":
        for p in data.get("points", []):
            sid, when, commit, hit, found = p if isinstance(p, list) else (
                p["snapshot_id"], p["created_at"], p["commit"], p["hit"], p["found"])
            click.echo(f"  {when}  {commit}  {percent(hit, found):>8}  ({hit}/{found})  {sid}")
    else:
        click.echo(click.style("  (use --json for the full answer)", dim=True))
        for key, value in data.items():
            if key not in ("task", "claim_status", "reasons", "legend"):
                click.echo(f"  {key}: {str(value)[:200]}")
    page = envelope.get("page") or {}
    if page.get("next_cursor"):
        click.echo(f"  more: --cursor {page['next_cursor']}")
