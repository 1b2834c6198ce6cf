"""``demo``: real answers from a sample repository within a minute of installing.

Owned here: seeding a temporary git repository from the bundled sample project
(``coverage_core/sample``) in three commits, importing the real coverage.py
report of each step through the service (the same call the MCP tool makes),
printing what an agent would see, and the client configuration that connects
an agent to that repository. Nothing is written outside the temporary
directory: the repository's store lives inside it, and its git commits use a
fixed identity without reading the person's git configuration.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pygit2

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.project import open_project
from coverage_core.service import Service

from .daemon_cmds import stdio_configs
from .output import emit_json, handles_errors, json_option, percent
from .review_cmds import render_review

SAMPLE = Path(__file__).resolve().parent.parent / "coverage_core" / "sample"
SIGNATURE = ("coverage-mcp demo", "demo@coverage-mcp.invalid")
REPORT = "coverage.json"  # ignored by the sample's .gitignore, so the checkout stays clean

# Each step adds a test file, commits, and imports the report coverage.py made
# of exactly that tree (see coverage_core/sample/README.md).
STEPS = (
    (
        "inventory library with its stock tests",
        ["inventory/__init__.py", "inventory/pricing.py", "inventory/stock.py", "tests/test_stock.py"],
        "step1",
    ),
    ("pricing tests", ["tests/test_pricing.py"], "step2"),
    ("the remaining tests", ["tests/test_more.py"], "step3"),
)


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the sample repository (to connect an MCP client to it).")
@json_option
@handles_errors
def demo_command(keep: bool, as_json: bool) -> None:
    """Seed a sample repository with real coverage history and show the answers.

    The repository is made under the system temporary directory and removed
    at the end unless --keep is given; nothing is written to the current
    directory or to COVERAGE_MCP_HOME.

    Example: coverage-mcp demo --keep
    """
    root = Path(tempfile.mkdtemp(prefix="coverage-mcp-demo-"))
    repo = root / "inventory"
    try:
        result = _run(repo, progress=None if as_json else _step)
        result["kept"] = keep
        if as_json:
            emit_json(result)
        else:
            _show(result)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def _step(text: str) -> None:
    click.echo(click.style(text, bold=True))


def _run(repo: Path, progress: Callable[[str], None] | None) -> dict[str, Any]:
    if progress:
        progress(f"Seeding a sample repository in {repo}")
    git = _init(repo)
    snapshots = []
    for message, files, report in STEPS:
        for rel in files:
            target = repo / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(SAMPLE / "project" / rel, target)
        commit = _commit(git, f"Add {message}")
        shutil.copyfile(SAMPLE / "reports" / f"{report}.coverage.json", repo / REPORT)
        with open_project(repo) as project:
            envelope = Service(project).call("coverage_import", {"report_path": REPORT})
        snapshot = envelope["data"]["snapshot"]
        snapshots.append({"commit": commit, "message": f"Add {message}", "snapshot": snapshot})
        if progress:
            progress(f"  commit {commit[:10]} ({message}): imported {report} as {snapshot['snapshot_id']}")
    with open_project(repo) as project:
        service = Service(project)
        context = _ask(service, "project_context", {})
        insight = _ask(service, "coverage_review", {"task": "insight"})
        history = _ask(service, "coverage_review", {"task": "history"})
        source = _ask(service, "coverage_review", {"task": "source", **_focus(insight)})
    return {
        "repo": str(repo),
        "snapshots": snapshots,
        "answers": {"project_context": context, "insight": insight, "history": history, "source": source},
        "mcp": client_config(str(repo)),
    }


def _init(repo: Path) -> pygit2.Repository:
    repo.mkdir(parents=True)
    git = pygit2.init_repository(str(repo), initial_head="main")
    (repo / ".gitignore").write_text(f"{REPORT}\n.coverage-mcp/\n__pycache__/\n")
    return git


def _commit(git: pygit2.Repository, message: str) -> str:
    index = git.index
    index.add_all()
    index.write()
    tree = index.write_tree()
    author = pygit2.Signature(*SIGNATURE)
    parents = [] if git.head_is_unborn else [git.head.target]
    return str(git.create_commit("HEAD", author, author, message, tree, parents))


def _ask(service: Service, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The envelope, or the error as data: a task this build lacks must not end the demo."""
    try:
        return service.call(name, arguments)
    except CoverageError as error:
        if error.code is not ErrorCode.NOT_SUPPORTED:
            raise
        return {"error": error.to_dict()}


def _focus(insight: dict[str, Any]) -> dict[str, Any]:
    """The file and lines of insight's first target, for the source task."""
    targets = (insight.get("data") or {}).get("targets") or []
    if not targets:
        return {"file": "inventory/pricing.py"}
    top = targets[0]
    path, ranges = (
        (top[0], top[4])
        if isinstance(top, list)
        else (top["path"], [[r["start"], r["end"]] for r in top["ranges"]])
    )
    start, end = ranges[0][0], ranges[0][1]
    return {"file": path, "lines": f"{max(1, start - 2)}-{end + 2}"}


def client_config(repo: str) -> dict[str, Any]:
    """Ready-to-paste MCP client configuration for ``repo``, naming the executable by its absolute path."""
    return stdio_configs(repo)


def _show(result: dict[str, Any]) -> None:
    answers = result["answers"]
    _step("\nStored snapshots (coverage_import, one per commit):")
    for item in result["snapshots"]:
        snap = item["snapshot"]
        head = snap.get("headline") or {}
        covered = head.get("percent", "-")
        click.echo(f"    {snap['snapshot_id']}  {item['commit'][:10]}  total {covered:>8}  {item['message']}")
    _step("\nproject_context (what an agent calls first):")
    _show_answer(answers["project_context"], _show_context)
    for task in ("insight", "history", "source"):
        _step(f"\ncoverage_review task={task}:")
        _show_answer(answers[task], render_review)
    _show_config(result)


def _show_answer(envelope: dict[str, Any], render: Callable[[dict[str, Any]], None]) -> None:
    if "error" in envelope:
        error = envelope["error"]
        click.echo(f"  not available in this build [{error['code']}]: {error['message']}")
    else:
        render(envelope)


def _show_context(envelope: dict[str, Any]) -> None:
    data = envelope["data"]
    project = data["project"]
    click.echo(
        f"  HEAD {(project['head'] or '-')[:10]} on {project['branch']}, "
        f"{'dirty' if project['dirty'] else 'clean'}; project {project['project_id']}"
    )
    for suite in data["suites"]:
        covered = suite.get("percent") or (percent(*suite["covered"]) if suite["covered"] else "-")
        click.echo(f"  suite {suite['suite']}: {suite['snapshot_id']} {covered} [{suite['claim_status']}]")
    click.echo(f"  next: {data['next']}")


def _show_config(result: dict[str, Any]) -> None:
    config = result["mcp"]
    repo = result["repo"]
    _step("\nConnect an agent to this repository (MCP, stdio):")
    if not result["kept"]:
        click.echo(
            f"  ({repo} is removed when the demo ends: run `coverage-mcp demo --keep` to keep it,\n"
            "   or use the same configuration with --repo pointing at your own repository)"
        )
    click.echo(f"  Claude Code:\n    {config['claude_code']}")
    click.echo("  Cursor (~/.cursor/mcp.json):")
    click.echo(_indent(json.dumps(config["cursor"], indent=2)))
    click.echo("  VS Code (.vscode/mcp.json):")
    click.echo(_indent(json.dumps(config["vscode"], indent=2)))
    assignments = [f"{name}={value}" for name, value in config["env"].items()]
    click.echo("  Any stdio MCP client: run\n    " + shlex.join([*assignments, *config["stdio"]]))


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
