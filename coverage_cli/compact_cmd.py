"""``compact``: a manual compaction pass, its inventory, and the policy the daemon's worker follows.

The compact, compaction_inventory and project_settings_update rows, on
whichever owns the store (``coverage_daemon.client.open_project``): the
library's project, or the daemon (the pass and the policy with the capability
read from the daemon's lock file).
"""

from __future__ import annotations

from typing import Any

import click

from coverage_core.storage import compaction, project_settings
from coverage_daemon.client import call, open_project

from .options import json_option, repo_option
from .output import emit_json, handles_errors
from .settings_cmd import assignments

FIELDS = {s.key.removeprefix("compaction_"): s for s in project_settings.COMPACTION}


def _policy_values(pairs: tuple[str, ...]) -> dict[str, int]:
    return assignments(
        pairs,
        FIELDS,
        "FIELD=NUMBER with a policy field",
        f"Policy fields: {', '.join(f'{k} ({f.low}-{f.high})' for k, f in FIELDS.items())}; "
        "e.g. --set after_days=14.",
    )


@click.command("compact")
@click.option(
    "--older-than",
    "older_than",
    metavar="AGE",
    help="Compact snapshots older than AGE: days (30 or 30d), hours (12h), minutes (45m); "
    "default: the policy's after_days.",
)
@click.option(
    "--dry-run", "dry_run", is_flag=True, help="Say which snapshots would be compacted; change nothing."
)
@click.option("--limit", type=click.IntRange(1), help="Compact at most this many snapshots (oldest first).")
@click.option(
    "--status",
    is_flag=True,
    help="Only show the inventory: relational and compacted snapshots, bytes, policy, last pass.",
)
@click.option(
    "--set",
    "policy",
    multiple=True,
    metavar="FIELD=N",
    help="Persist a policy field for the daemon's worker: after_days, cadence_minutes, batch_size, "
    "protect_recent_runs (repeatable).",
)
@repo_option
@json_option
@handles_errors
def compact_command(older_than, dry_run, limit, status, policy, repo, as_json) -> None:
    """Compact old snapshots' detail into zstd payloads; answers stay the same.

    Snapshots older than AGE (the policy's after_days by default) keep their
    totals, file summaries and precomputed answers as rows; their line,
    branch, function, region and named-test detail becomes one compressed
    payload, restored transparently when a detailed answer needs it. The
    newest snapshot of each suite and snapshots active runs need are never
    compacted. --status shows the inventory, --set changes the policy the
    daemon's maintenance worker follows. --json prints the pass (or the
    inventory) as data.

    Example: coverage-mcp compact --older-than 90d --dry-run
    """
    values = _policy_values(policy)
    if values and (older_than or dry_run or limit or status):
        raise click.UsageError("--set changes the policy only; run the pass or --status separately")
    with open_project(repo) as project:
        if values:
            call(project, "project_settings_update", {"settings": values})
            data = _inventory(project)
        elif status:
            data = _inventory(project)
        else:
            if older_than is not None:
                compaction.parse_age(older_than)  # garbage is refused here, before any store work
            body = {
                k: v
                for k, v in (("older_than", older_than), ("dry_run", dry_run), ("limit", limit))
                if v is not None
            }
            data = call(project, "compact", body)["data"]
    if as_json:
        emit_json({"data": data})
    elif values or status:
        _render_inventory(data)
    else:
        _render_pass(data)


def _inventory(project: Any) -> dict[str, Any]:
    return call(project, "compaction_inventory")["data"]


def _kb(n: int) -> str:
    return f"{n / 1024:,.1f} KiB"


def _render_pass(data: dict[str, Any]) -> None:
    if data["dry_run"]:
        for c in data["eligible"]:
            click.echo(
                f"would compact {c['snapshot_id']}  suite {c['suite']}, {c['created_at'][:19].replace('T', ' ')}"
            )
    for c in data["compacted"]:
        click.echo(
            f"compacted {c['snapshot_id']}: {c['rows']:,} detail rows, {_kb(c['detail_bytes'])} -> "
            f"{_kb(c['payload_bytes'])}"
        )
    for p in data["protected"]:
        click.echo(f"kept {p['snapshot_id']}: {p['why']}")
    n = len(data["eligible"]) if data["dry_run"] else len(data["compacted"])
    verb = "would compact" if data["dry_run"] else "compacted"
    tail = f"; {data['left']} left for a later pass" if data["left"] and not data["dry_run"] else ""
    click.echo(
        f"{verb} {n} snapshot(s){tail}" + (" (--dry-run: nothing was changed)" if data["dry_run"] else "")
    )


def _render_inventory(data: dict[str, Any]) -> None:
    p = data["policy"]
    click.echo(
        f"snapshots: {data['relational']} relational, {data['compacted']} compacted "
        f"({_kb(data['detail_bytes'])} of detail in {_kb(data['payload_bytes'])})"
    )
    click.echo(
        f"eligible now: {data['eligible']}, protected: {data['protected']} "
        f"({data['protected_past_threshold']} of them older than {data['policy']['after_days']} days)"
    )
    click.echo(
        f"policy: after {p['after_days']} days, every {p['cadence_minutes']} minutes, "
        f"{p['batch_size']} per tick"
    )
    last = data["last_pass"]
    click.echo(
        "last pass: none"
        if last is None
        else f"last pass: {last['finished_at'][:19].replace('T', ' ')} ({last['trigger']}), "
        f"{last['compacted']} compacted, {last['left']} left"
    )
    if data["inconsistent"]:
        click.echo(
            f"inconsistent: {', '.join(data['inconsistent'])} have a payload and relational rows", err=True
        )
