"""``command``, ``run`` and ``runs``: managed execution from the command line.

``command approve`` / ``reject`` are a person's decisions (the command_approve
and command_reject rows): on the store this command holds, or through the
daemon with the capability read from its lock file; no agent's row decides. ``run``
always goes through the daemon (started if none runs), so every run is owned
by a daemon that drains, times out, cancels and recovers it. ``--json``
prints the envelope (or, for ``command`` and ``runs``, ``{"data": ...}``).
"""

from __future__ import annotations

import getpass
import json
import shlex
from typing import Any

import click

from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.execution.display import registration_lines
from coverage_core.execution.words import quoted_line
from coverage_core.git import discover
from coverage_core.vocabulary import COMMAND_STATUSES, RUN_STATES
from coverage_daemon.client import DaemonProject, call, open_project
from coverage_daemon.rest_client import running_daemon

from .options import json_option, repo_option
from .output import emit_json, handles_errors


def _daemon_project(repo: str) -> DaemonProject:
    """The daemon's project for ``repo``, the daemon started first when none runs (as the connector does)."""
    from coverage_daemon.launcher import Launcher
    from coverage_daemon.launcher import Settings as ConnectorSettings

    Launcher(ConnectorSettings.from_env(), lambda _line: None).connect()
    settings = Settings.from_env()
    found = running_daemon(settings)
    if found is None:
        raise CoverageError(
            ErrorCode.DAEMON_UNREACHABLE,
            "no coverage-mcp daemon runs for this home",
            "Start one with `coverage-mcp serve`, then retry.",
        )
    client, meta = found
    checkout = discover(repo)
    client.repo = str(checkout.worktree_path)
    client.timeout_s = float(settings.http_timeout_s) + 5.0
    return DaemonProject(client, checkout, settings, meta.get("capability"))


# -- command ------------------------------------------------------------------------------


@click.group("command")
def command_group() -> None:
    """Registered test commands: list, show, approve, reject (a person's decisions), register.

    Agents register commands with the MCP tool register_test_command; under
    approval_mode out_of_band (the default) they stay pending until a person
    approves them here (or in the dashboard). Approval is never reachable from
    MCP or with the client token.

    Example: coverage-mcp command approve cmd-0123456789abcdef
    """


def _show_command(found: dict, as_json: bool) -> None:
    """One command record: its JSON (``--json``) or the readable block."""
    if as_json:
        emit_json({"data": {"command": found}})
    else:
        _render_command(found)


def _render_command(c: dict[str, Any]) -> None:
    """The one display of a registration (``execution.display``): each word quoted on its own line."""
    for line in c.get("display") or registration_lines(c):
        click.echo(line)
    _render_environment(c)


def _render_environment(c: dict[str, Any]) -> None:
    """The environment lines of a registration: what a run takes from its daemon, and (names only) what not."""
    if "runners" in c:
        click.echo(
            f"  runners: {', '.join(c['runners']) or 'none'}  inherit: {', '.join(c['inherit']) or 'none'}"
        )
    described = c.get("environment")
    if not described:
        return
    click.echo(f"  environment base: {', '.join(described['base'])}")
    if described.get("note"):
        click.echo(f"  environment: {described['note']}")
    names = described["not_passed"]
    click.echo(f"  not passed from this environment ({len(names)}): {', '.join(names) or 'none'}")


@command_group.command("list")
@click.option("--status", type=click.Choice(COMMAND_STATUSES), help="Only commands with this status.")
@repo_option
@json_option
@handles_errors
def command_list(status, repo, as_json) -> None:
    """List the registered test commands: approved, pending, then rejected.

    Example: coverage-mcp command list --status pending
    """
    with open_project(repo) as project:
        found = call(project, "command_list", {"status": status} if status else {})["data"]["commands"]
    if as_json:
        emit_json({"data": {"commands": found}})
        return
    if not found:
        click.echo("no registered commands" + (f" with status {status}" if status else ""))
    for c in found:
        _render_command(c)


@command_group.command("show")
@click.argument("command_id")
@repo_option
@json_option
@handles_errors
def command_show(command_id, repo, as_json) -> None:
    """Show one registered command: its exact argv, cwd, environment, artifacts and decisions.

    Read it before approving: approving a test runner approves whatever code
    the tests import.

    Example: coverage-mcp command show cmd-0123456789abcdef
    """
    with open_project(repo) as project:
        found = call(project, "command_show", {"command_id": command_id})["data"]["command"]
    _show_command(found, as_json)


def _decide(repo: str, command_id: str, decision: str, by: str | None, note: str | None) -> dict[str, Any]:
    """The command_approve or command_reject row, as the person running this command (or ``by``)."""
    arguments = {"command_id": command_id, "by": by or getpass.getuser(), **({"note": note} if note else {})}
    with open_project(repo) as project:
        return call(project, f"command_{decision}", arguments)["data"]["command"]


@command_group.command("approve")
@click.argument("command_id")
@click.option("--by", help="Who approves (default: your user name).")
@click.option("--note", help="What was checked, recorded with the approval.")
@repo_option
@json_option
@handles_errors
def command_approve(command_id, by, note, repo, as_json) -> None:
    """Approve a registered command so run_test may run it (recorded: who, when, via cli).

    Example: coverage-mcp command approve cmd-0123456789abcdef --note "pytest with coverage"
    """
    try:
        found = _decide(repo, command_id, "approve", by, note)
    except CoverageError as error:
        if error.code == ErrorCode.NOT_APPROVED and not as_json:  # show what was refused, escaped, then why
            with open_project(repo) as project:
                _render_command(call(project, "command_show", {"command_id": command_id})["data"]["command"])
        raise
    _show_command(found, as_json)


@command_group.command("reject")
@click.argument("command_id")
@click.option("--by", help="Who rejects (default: your user name).")
@click.option("--note", help="Why, recorded with the rejection.")
@repo_option
@json_option
@handles_errors
def command_reject(command_id, by, note, repo, as_json) -> None:
    """Reject a registered command (or withdraw its approval): it cannot run.

    Example: coverage-mcp command reject cmd-0123456789abcdef --note "uses --basetemp"
    """
    found = _decide(repo, command_id, "reject", by, note)
    _show_command(found, as_json)


@command_group.command("register", context_settings={"ignore_unknown_options": True})
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--name", required=True, help="A short name for the command.")
@click.option(
    "--artifact",
    "artifacts",
    multiple=True,
    required=True,
    metavar="PATH:SUITE",
    help="A report the command writes, inside the checkout, and its suite (repeatable).",
)
@click.option("--cwd", help="Folder to run in, relative to the checkout root (default: the root).")
@click.option("--timeout", "timeout_s", type=click.IntRange(1, 86400), help="Seconds before it is stopped.")
@click.option(
    "--args-policy", type=click.Choice(["none", "selectors"]), help="Case arguments run may append."
)
@click.option(
    "--runner",
    "runners",
    multiple=True,
    type=click.Choice(["python", "node", "go", "java", "rust"]),
    help="A runner preset whose variables the run inherits (repeatable; default: from the program's name).",
)
@click.option(
    "--inherit",
    multiple=True,
    metavar="NAME",
    help="Another variable (or PREFIX*) the run inherits (repeatable).",
)
@click.option(
    "--env",
    "env",
    multiple=True,
    metavar="NAME=VALUE",
    help="A variable the command runs with, part of what is approved (repeatable; the tool's env).",
)
@repo_option
@json_option
@handles_errors
def command_register(
    argv, name, artifacts, cwd, timeout_s, args_policy, runners, inherit, env, repo, as_json
) -> None:
    """Register a test command (register_test_command); it stays pending until approved.

    Put the command's words after --, never as one shell string.

    Example: coverage-mcp command register --name unit --artifact coverage.json:unit -- python -m pytest --cov
    """
    parsed = []
    for item in artifacts:
        path, sep, suite = item.rpartition(":")
        if not sep or not path or not suite:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"--artifact {item!r} is not PATH:SUITE",
                "e.g. --artifact coverage.json:unit",
            )
        parsed.append({"path": path, "suite": suite})
    args: dict[str, Any] = {"name": name, "argv": list(argv), "artifacts": parsed}
    for key, value in (("cwd", cwd), ("timeout_s", timeout_s), ("args_policy", args_policy)):
        if value is not None:
            args[key] = value
    if runners:
        args["runners"] = list(runners)
    if inherit:
        args["inherit"] = list(inherit)
    if env:
        args["env"] = _assignments(env)
    with open_project(repo) as project:
        envelope = call(project, "register_test_command", args)
    if as_json:
        emit_json(envelope)
        return
    _render_command(envelope["data"]["command"])


def _assignments(items: tuple[str, ...]) -> dict[str, str]:
    """``--env NAME=VALUE`` options as register_test_command's ``env`` (the value may hold ``=``)."""
    env: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"--env {item!r} is not NAME=VALUE",
                "e.g. --env PYTHONHASHSEED=0",
                {"env": item},
            )
        env[name] = value
    return env


# -- run / runs ---------------------------------------------------------------------------


def _render_run(run: dict[str, Any]) -> None:
    took = f", {run['duration_ms']} ms" if run.get("duration_ms") is not None else ""
    code = f", exit code {run['exit_code']}" if run.get("exit_code") is not None else ""
    reused = " (reused: nothing changed since)" if run.get("reused") else ""
    click.echo(f"{run['id']}  {run['state']}{code}{took}{reused}")
    if run.get("reason"):
        click.echo(f"  reason: {run['reason']}")
    for a in run.get("artifacts", []):
        where = f" -> {a['snapshot_id']}" if a.get("snapshot_id") else ""
        if a.get("composite_snapshot_id"):
            where = f" -> {a['composite_snapshot_id']} ({a.get('composite_status')})"
        why = f" ({a['error_code']})" if a.get("error_code") else ""
        kind = "composite " if a.get("kind") == "composite" else ""
        click.echo(f"  {kind}artifact {a['path']}: {a['status']}{why}{where}")
        for r in a.get("reports", []):
            click.echo(
                f"    report {r['path']}: {r['status']}" + (f" ({r['detail']})" if r.get("detail") else "")
            )
    for stream, info in (run.get("logs") or {}).items():
        if info.get("truncated"):
            click.echo(f"  {stream}: {info['bytes']} bytes, truncated in the log")


@click.command("run", context_settings={"ignore_unknown_options": True})
@click.argument("command_id")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--no-wait", "no_wait", is_flag=True, help="Answer the queued run at once instead of its result."
)
@click.option("--idempotency-key", help="The same key answers the same run.")
@click.option(
    "--no-reuse", "no_reuse", is_flag=True, help="Run even when nothing changed since a successful run."
)
@click.option("--baseline", "baseline", help="A snapshot id: attach an incremental review against it.")
@repo_option
@json_option
@handles_errors
def run_command(command_id, args, no_wait, idempotency_key, no_reuse, baseline, repo, as_json) -> None:
    """Run an approved command through the daemon (started if none runs); its reports are ingested.

    Case arguments (test selectors, under the command's args_policy) follow --.
    Waits for the run to end, following it past the request deadline (progress
    on stderr); exit status 0 only when the run succeeded, 1 otherwise,
    including when it stops following a run that has not ended (the daemon
    became unreachable, or Ctrl-C): it then prints the `coverage-mcp runs show
    RUN_ID` line to follow it. With --no-wait it answers the queued run at
    once (exit status 0 once queued).

    Example: coverage-mcp run cmd-0123456789abcdef -- tests/test_cart.py::test_total
    """
    arguments: dict[str, Any] = {"command_id": command_id, "wait": not no_wait}
    if args:
        arguments["args"] = list(args)
    if idempotency_key:
        arguments["idempotency_key"] = idempotency_key
    if no_reuse:
        arguments["reuse_if_unchanged"] = False
    if baseline:
        arguments["baseline"] = {"snapshot_id": baseline}
    project = _daemon_project(repo)
    envelope = project.call("run_test", arguments)
    run = envelope["data"]["run"]
    if not no_wait and run["state"] in ACTIVE:
        envelope, run = _follow(project, envelope, repo)
    if as_json:
        emit_json(envelope)
    else:
        _render_run(run)
    if run["state"] in ACTIVE and not no_wait:
        click.echo(
            f"{run['id']} has not ended ({run['state']}); follow it with: {_show_line(run['id'], repo)}",
            err=True,
        )
        raise SystemExit(1)
    if run["state"] not in ("succeeded", *(ACTIVE if no_wait else ())):
        raise SystemExit(1)


ACTIVE = ("queued", "running")
FOLLOW_POLL_S = 1.0
PROGRESS_EVERY_S = 30.0


def _show_line(run_id: str, repo: str | None) -> str:
    return f"coverage-mcp runs show {run_id}" + (
        f" --repo {shlex.quote(repo)}" if repo and repo != "." else ""
    )


def _follow(
    project: DaemonProject, envelope: dict[str, Any], repo: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Poll run_review (view status) until the run ends; progress on stderr. Stops early (the run as last seen)
    when the daemon cannot be reached or on Ctrl-C."""
    import time

    run = envelope["data"]["run"]
    started = time.monotonic()
    said, said_at = run["state"], started
    click.echo(
        f"{run['id']} {run['state']}: following it until it ends (Ctrl-C stops following, not the run)",
        err=True,
    )
    try:
        while run["state"] in ACTIVE:
            time.sleep(FOLLOW_POLL_S)
            try:
                status = project.call("run_review", {"run_id": run["id"], "view": "status"})
            except CoverageError as error:
                click.echo(f"could not read {run['id']}: {error.message}", err=True)
                break
            run = {**status["data"]["run"], "reused": run.get("reused", False)}
            now = time.monotonic()
            if run["state"] != said or now - said_at >= PROGRESS_EVERY_S:
                click.echo(f"{run['id']} {run['state']} ({now - started:.0f} s)", err=True)
                said, said_at = run["state"], now
    except KeyboardInterrupt:
        click.echo("stopped following", err=True)
    if run["state"] not in ACTIVE:  # the run's answer, as run_test would have given it
        run.pop("events", None)
        envelope = {
            **envelope,
            "data": {
                **envelope["data"],
                "run": run,
                "next": f"run_review run_id={run['id']} view=logs shows its output.",
            },
        }
    return envelope, run


@click.group("runs", invoke_without_command=True)
@click.option("--status", type=click.Choice(RUN_STATES), help="Only runs in this state.")
@click.option(
    "--limit", type=click.IntRange(1, 1000), default=20, show_default=True, help="How many, newest first."
)
@repo_option
@json_option
@click.pass_context
@handles_errors
def runs_group(ctx, status, limit, repo, as_json) -> None:
    """List managed runs, newest first; `runs show RUN_ID` and `runs cancel RUN_ID` act on one.

    Example: coverage-mcp runs --status running
    """
    if ctx.invoked_subcommand is not None:
        return
    arguments: dict[str, Any] = {"limit": limit, **({"status": status} if status else {})}
    with open_project(repo) as project:
        found = call(project, "run_list", arguments)["data"]["runs"]
    if as_json:
        emit_json({"data": {"runs": found}})
        return
    if not found:
        click.echo("no runs" + (f" in state {status}" if status else ""))
    for run in found:
        args = f" -- {quoted_line(run['args'])}" if run["args"] else ""
        click.echo(
            f"{run['id']}  {run['state']:<11} {run['command_id']}{args}  queued {run['queued_at'][:19]}"
        )


@runs_group.command("show")
@click.argument("run_id")
@click.option("--logs", is_flag=True, help="Show its output instead of its status.")
@click.option("--stream", type=click.Choice(["stdout", "stderr"]), help="With --logs: only this stream.")
@click.option("--search", help="With --logs: lines containing this literal text.")
@click.option("--cursor", help="Continue a previous page.")
@repo_option
@json_option
@handles_errors
def runs_show(run_id, logs, stream, search, cursor, repo, as_json) -> None:
    """Show one run (run_review): its status, artifacts and review, or with --logs its output.

    Example: coverage-mcp runs show run-0123456789abcdef --logs --search FAILED
    """
    arguments: dict[str, Any] = {"run_id": run_id, "view": "logs" if (logs or search or stream) else "status"}
    for key, value in (("stream", stream), ("search", search), ("cursor", cursor)):
        if value:
            arguments[key] = value
    with open_project(repo) as project:
        envelope = call(project, "run_review", arguments)
    if as_json:
        emit_json(envelope)
        return
    data = envelope["data"]
    if data["view"] == "status":
        _render_run(data["run"])
        if data["run"].get("incremental_review"):
            click.echo(
                "  incremental review: " + json.dumps(data["run"]["incremental_review"].get("categories", {}))
            )
    elif "matches" in data:
        for m in data["matches"]:
            click.echo(f"{m['stream']}@{m['offset']}: {m['line']}")
    else:
        for part in data["text"]:
            click.echo(part["text"], nl=False, err=part["stream"] == "stderr")
    page = envelope.get("page") or {}
    if page.get("next_cursor"):
        click.echo(f"(more: --cursor {page['next_cursor']})", err=True)


@runs_group.command("cancel")
@click.argument("run_id", required=False)
@click.option("--command", "command_id", help="Cancel every queued run of this command instead (one call).")
@repo_option
@json_option
@handles_errors
def runs_cancel(run_id, command_id, repo, as_json) -> None:
    """Cancel a queued or running run (cancel_run): its whole process group is stopped.

    With --command CMD_ID, every queued run of that command is cancelled
    (a running one is left to end; cancel it by its id).

    Example: coverage-mcp runs cancel run-0123456789abcdef
    """
    if (run_id is None) == (command_id is None):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "name one run, or one command with --command",
            "e.g. coverage-mcp runs cancel run-0123456789abcdef, or coverage-mcp runs cancel --command cmd-...",
        )
    if command_id is not None:
        cancelled = _cancel_queued(repo, command_id)
        if as_json:
            emit_json({"data": {"command_id": command_id, "cancelled": cancelled}})
        else:
            click.echo(f"cancelled {len(cancelled)} queued runs of {command_id}")
        return
    with open_project(repo) as project:
        envelope = call(project, "cancel_run", {"run_id": run_id})
    if as_json:
        emit_json(envelope)
        return
    _render_run(envelope["data"]["run"])


CANCEL_PAGE = 1000


def _cancel_queued(repo: str, command_id: str) -> list[str]:
    """Cancel every queued run of ``command_id`` (cancel_run on each, page by page); the ids cancelled."""
    cancelled: list[str] = []
    tried: set[str] = set()  # a run that would not cancel (it started meanwhile) is not asked again
    page = {"status": "queued", "command_id": command_id, "limit": CANCEL_PAGE}
    with open_project(repo) as project:
        call(project, "command_show", {"command_id": command_id})  # an unknown command is an error, not "0"
        while True:
            listed = call(project, "run_list", page)["data"]["runs"]
            found = [r["id"] for r in listed if r["id"] not in tried]
            if not found:
                return cancelled
            for one in found:
                tried.add(one)
                answer = call(project, "cancel_run", {"run_id": one})
                if answer["data"]["run"]["state"] == "cancelled":
                    cancelled.append(one)
