"""``composite build`` and ``composite show``: composite production coverage from the command line.

``build`` is the store owner's import with ``inventory_path`` and ``reports``
(coverage_import's composite envelope, with or without a running daemon);
``show`` is coverage_review task=insight of a composite (the latest when no id
is given). ``--json`` prints the envelope; the rest renders it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from coverage_core.composite.build import parse_spec
from coverage_core.errors import CoverageError, ErrorCode
from coverage_daemon.client import call, open_project

from .options import json_option, repo_option
from .output import emit_json, handles_errors


@click.group("composite")
def composite_group() -> None:
    """Composite production coverage: one exact percentage across languages against an inventory.

    Example: coverage-mcp composite build --inventory coverage-inventory.json native:debug=llvm.json coverage.json
    """


def _figure(counter: dict[str, int]) -> str:
    found, hit = counter["found"], counter["hit"]
    pct = f"{100.0 * hit / found:.2f}%" if found else "n/a"
    return f"{pct} ({hit}/{found})"


def _render(comp: dict[str, Any]) -> None:
    click.echo(
        f"{comp['composite_snapshot_id']} {comp['status']}: {_figure(comp['totals']['combined'])} of "
        f"production regions (code + branch), commit {(comp['commit'] or '-')[:12]}"
        f"{' (dirty)' if comp['dirty'] else ''}"
    )
    for kind in ("code", "branch", "function"):
        click.echo(f"  {kind:<9}{_figure(comp['totals'][kind])}")
    for c in comp["components"]:
        click.echo(
            f"  component {c['id']} ({c['language']}, {', '.join(c['variants'])}): "
            f"{_figure(c['totals']['combined'])}, {c['measured']}/{c['entries']} entries measured"
        )
    for b in comp["blocking"]:
        click.echo(
            f"  blocked [{b['reason']}] {b['component']}:{b['variant']} {b['logical_source_id']}: "
            f"{b['detail']} (denominator: {b['denominator']})"
        )
    if comp.get("blocking_truncated"):
        click.echo(f"  ... {comp['blocking_total'] - len(comp['blocking'])} more blocked entries")


@composite_group.command("build")
@click.option(
    "--inventory",
    "inventory",
    required=True,
    type=click.Path(dir_okay=False),
    help="The inventory file inside the checkout (docs/composite-inventory.md).",
)
@click.argument("reports", nargs=-1, required=True, metavar="REPORT...")
@repo_option
@json_option
@handles_errors
def composite_build_command(inventory, reports, repo, as_json) -> None:
    """Build an immutable composite snapshot of HEAD from REPORTs against the inventory.

    Each REPORT is COMPONENT[:VARIANT]=PATH, or a bare PATH when exactly one
    component takes the report's format and has one variant. Entries without
    usable evidence make the composite incomplete with a reason each; exit 0
    either way (the status is printed; --json gives data.composite.status).

    Example: coverage-mcp composite build --inventory coverage-inventory.json native:debug=build/llvm.json py=coverage.json
    """
    given = []
    for text in reports:
        spec = parse_spec(text)
        path = str(Path(spec.path).expanduser().absolute())
        head = text[: len(text) - len(spec.path)] if spec.component else ""
        given.append(head + path)
    with open_project(repo) as project:
        envelope = call(
            project, "owner_import", {"inventory_path": str(Path(inventory).absolute()), "reports": given}
        )
    if as_json:
        emit_json(envelope)
    else:
        _render(envelope["data"]["composite"])


@composite_group.command("show")
@click.argument("composite_id", required=False)
@repo_option
@json_option
@handles_errors
def composite_show_command(composite_id, repo, as_json) -> None:
    """Show a composite snapshot (the latest when no id is given) and its least-covered sources.

    Example: coverage-mcp composite show comp-0123456789abcdef
    """
    with open_project(repo) as project:
        if composite_id is None:
            latest = call(project, "project_context", {})["data"]["latest_composite"]
            if latest is None:
                raise CoverageError(
                    ErrorCode.NOT_FOUND,
                    "no composite snapshot is stored for this repository",
                    "Build one: coverage-mcp composite build --inventory FILE REPORT...",
                )
            composite_id = latest["composite_snapshot_id"]
        envelope = call(
            project,
            "coverage_review",
            {"task": "insight", "measurement": {"composite_snapshot_id": composite_id}},
        )
    if as_json:
        emit_json(envelope)
        return
    data = envelope["data"]
    _render(data["composite"])
    for t in data.get("targets", []):
        spans = ", ".join(f"{s}-{e}" if s != e else str(s) for s, e, _ in t["ranges"])
        click.echo(
            f"  test next: {t['component']}:{t['variant']} {t['path']}: {t['uncovered']}/{t['found']} "
            f"uncovered (lines {spans}{', ...' if t['regions_truncated'] else ''})"
        )
