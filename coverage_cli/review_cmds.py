"""``review`` and ``context``: the agent-facing answers, for people and scripts.

``--json`` prints exactly the envelope the MCP tool returns; without it, a
readable rendering of the same answer.
"""

from __future__ import annotations

from typing import Any

import click

from coverage_core.review.tasks import TASKS
from coverage_daemon.client import call, open_project

from .output import emit_json, handles_errors, json_option, percent
from .store_cmds import repo_option


def _call(repo: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The operation on the store's owner: this process, or the daemon when it holds the store."""
    with open_project(repo) as project:
        return call(project, name, args)


@click.command("review")
@click.argument("task", type=click.Choice(list(TASKS)))
@click.option("--snapshot", "snapshot_id", help="Snapshot id (default: latest of the suite).")
@click.option("--suite", help="Suite whose latest snapshot to read.")
@click.option("--file", "file_path", help="Repository-relative file to focus on.")
@click.option("--lines", help="A line or range A-B within --file.")
@click.option("--max-words", type=click.IntRange(40, 50_000), help="Word budget of the answer.")
@click.option("--representation", type=click.Choice(["compact", "review", "audit"]), help="Shape of the answer.")
@click.option("--cursor", help="page.next_cursor of a previous answer.")
@click.option("--baseline", help="change/incremental: a snapshot id, a git ref, or one of "
              "previous_snapshot, parent_commit, worktree_base, none.")
@repo_option
@json_option
@handles_errors
def review_command(task, snapshot_id, suite, file_path, lines, max_words, representation, cursor, baseline, repo,
                   as_json) -> None:
    """Answer a coverage question: insight, history, source, tests, audit, all, change or incremental.

    Example: coverage-mcp review change --baseline main --max-words 300
    """
    args: dict[str, Any] = {"task": task}
    if baseline:
        args["baseline"] = baseline_selector(baseline)
    if snapshot_id:
        args["measurement"] = {"snapshot_id": snapshot_id}
    elif suite:
        args["measurement"] = {"suite": suite}
    for key, value in (("file", file_path), ("lines", lines), ("representation", representation), ("cursor", cursor)):
        if value:
            args[key] = value
    if max_words:
        args["limits"] = {"max_words": max_words}
    envelope = _call(repo, "coverage_review", args)
    if as_json:
        emit_json(envelope)
        return
    render_review(envelope)


@click.command("context")
@click.option("--max-words", type=click.IntRange(40, 50_000), help="Word budget of the answer.")
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


def baseline_selector(text: str) -> dict[str, Any]:
    """``--baseline``: a snapshot id (``snap-``), a named kind, or else a git ref."""
    if text.startswith("snap-"):
        return {"kind": "explicit", "snapshot_id": text}
    if text in ("previous_snapshot", "parent_commit", "worktree_base", "none"):
        return {"kind": text}
    return {"kind": "ref", "ref": text}


def render_review(envelope: dict[str, Any]) -> None:
    data = envelope["data"]
    task = data.get("task")
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
