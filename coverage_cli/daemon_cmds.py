"""``serve``, ``status`` and ``stop``: the daemon's lifecycle from the command line.

The daemon modules (aiohttp among them) are imported inside the commands, so
every other command starts without them.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Any

import click

from coverage_core.config import SETTINGS, Settings
from coverage_core.errors import CoverageError, ErrorCode

from .output import FAILED, emit_json, handles_errors, json_option

STOP_TIMEOUT_S = 15.0


_DEFAULTS = {spec.name: spec.default for spec in SETTINGS}


def settings_epilog() -> str:
    """Every setting of ``coverage_core.config.SETTINGS``, with its default and range."""
    lines = ["\b", "Settings (environment variables):"]
    for spec in SETTINGS:
        bounds = f", range {spec.minimum}..{spec.maximum}" if spec.minimum is not None else ""
        lines.append(f"  {spec.env} (default {spec.default}{bounds})")
        lines.append(f"      {spec.help}")
    return "\n".join(lines)


@click.command("serve", epilog=settings_epilog())
@click.option("--host", help=f"Loopback address to bind [COVERAGE_MCP_HOST, default {_DEFAULTS['host']}].")
@click.option(
    "--port", type=int, help=f"TCP port; 0 picks a free one [COVERAGE_MCP_PORT, default {_DEFAULTS['port']}]."
)
@handles_errors
def serve_command(host: str | None, port: int | None) -> None:
    """Run the coverage-mcp daemon in the foreground until SIGINT, SIGTERM or `coverage-mcp stop`.

    Serves MCP at /mcp and the REST API at /api on loopback, opening project
    stores as requests need them. Prints one line to stderr once listening
    (and, on a terminal, MCP client configs naming this installation's
    executable by its absolute path). Run this way it never exits on its own
    unless COVERAGE_MCP_IDLE_EXIT_S is set; a daemon an MCP client's connector
    starts exits after 3600 s with no client and no work (the next session
    starts it again).

    Example: coverage-mcp serve --port 0
    """
    settings = Settings.from_env(host=host, port=port)
    from coverage_daemon.server import serve

    def announce(line: str, url: str) -> None:
        click.echo(line, err=True)  # the one stderr line connectors and scripts wait for
        if sys.stdout.isatty():
            click.echo(client_configs(url, settings))

    sys.exit(serve(settings, announce=announce))


REPO_PLACEHOLDER = "/path/to/checkout"


def connector_command() -> list[str]:
    """The command line that launches this installation's connector, absolute, for an MCP client.

    MCP clients start their servers with their own PATH, outside any virtual
    environment, so a bare ``coverage-mcp`` is not found (or is another
    installation). In order: the ``coverage-mcp`` script beside this Python
    (``sys.executable`` is not resolved: a virtual environment's python is a
    link to the base interpreter, whose directory holds no script of ours),
    the script this process was started as, else this Python with ``-m coverage_cli``.
    """
    beside = Path(sys.executable).absolute().parent / "coverage-mcp"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is not None and started.name == "coverage-mcp" and started.is_file():
        return [str(started.resolve())]
    return [str(Path(sys.executable).absolute()), "-m", "coverage_cli"]


# The settings that say which daemon a connector reaches: a pasted configuration names them when they
# are not the defaults, or the client would start (or reach) another daemon than this one.
DAEMON_SETTINGS = ("home", "port")


def daemon_env(settings: Settings | None = None) -> dict[str, str]:
    """``COVERAGE_MCP_HOME``/``COVERAGE_MCP_PORT`` as ``settings`` has them, where they are not the defaults."""
    settings = Settings.from_env() if settings is None else settings
    defaults = Settings.from_env({})
    return {
        spec.env: str(getattr(settings, spec.name))
        for spec in SETTINGS
        if spec.name in DAEMON_SETTINGS and getattr(settings, spec.name) != getattr(defaults, spec.name)
    }


def stdio_configs(repo: str = REPO_PLACEHOLDER, settings: Settings | None = None) -> dict[str, Any]:
    """Ready-to-paste stdio configurations for ``repo``: Claude Code's command, Cursor's and VS Code's JSON,
    each naming the daemon's home and port when they are not the defaults (``daemon_env``)."""
    command, *prefix = connector_command()
    args = [*prefix, "connect", "--repo", repo]
    env = daemon_env(settings)
    server: dict[str, Any] = {"command": command, "args": args, **({"env": env} if env else {})}
    options = [word for name, value in env.items() for word in ("-e", f"{name}={value}")]
    return {
        "claude_code": shlex.join(["claude", "mcp", "add", "coverage", *options, "--", command, *args]),
        "cursor": {"mcpServers": {"coverage": server}},
        "vscode": {"servers": {"coverage": {"type": "stdio", **server}}},
        "stdio": [command, *args],
        "env": env,  # the environment "stdio" runs in
    }


def client_configs(url: str, settings: Settings) -> str:
    """How to point an MCP client at this daemon; HTTP configs name the token, never contain it."""
    from coverage_daemon.credentials import TOKEN_FILE

    token_file = settings.home / TOKEN_FILE
    stdio = stdio_configs(settings=settings)
    http = (
        '{"mcpServers": {"coverage": {"type": "http", "url": "' + url + '/mcp", "headers": '
        '{"Authorization": "Bearer ${COVERAGE_MCP_TOKEN}", "x-coverage-mcp-repo": "/path/to/checkout"}}}}'
    )
    vscode = (
        '{"inputs": [{"type": "promptString", "id": "coverage-token", "description": "coverage-mcp token '
        f'({token_file})", "password": true}}], "servers": {{"coverage": {{"type": "http", "url": "{url}/mcp", '
        '"headers": {"Authorization": "Bearer ${input:coverage-token}", '
        '"x-coverage-mcp-repo": "/path/to/checkout"}}}}'
    )
    return "\n".join(
        [
            "Stdio (recommended; the connector reads the token itself and starts this daemon when it is not running):",
            f"  Claude Code:  {stdio['claude_code']}",
            f"  Cursor (~/.cursor/mcp.json):  {json.dumps(stdio['cursor'])}",
            f"  VS Code (.vscode/mcp.json):   {json.dumps(stdio['vscode'])}",
            f"MCP over HTTP at {url}/mcp needs the client token in {token_file}:",
            f'  export COVERAGE_MCP_TOKEN="$(cat {token_file})"',
            f"  Claude Code (.mcp.json, expands the variable): {http}",
            f"  VS Code (.vscode/mcp.json, asks for the token once): {vscode}",
        ]
    )


@click.command("status")
@click.option(
    "--repo",
    "repo",
    type=click.Path(file_okay=False),
    help="A path inside the git checkout whose store to check for preserved WAL copies "
    "[default: the current folder, when it is inside one].",
)
@json_option
@handles_errors
def status_command(repo: str | None, as_json: bool) -> None:
    """Show the running daemon of this COVERAGE_MCP_HOME; exit 1 when none runs.

    Also says when the store of the checkout it runs in (or --repo) keeps a
    preserved copy of a WAL whose replay lost data, without opening the store.

    Example: coverage-mcp status --json
    """
    settings = Settings.from_env()
    from coverage_daemon.rest_client import running_daemon

    kept = _preserved_wal(repo)
    found = running_daemon(settings)
    if found is None:
        if as_json:
            emit_json({"running": False, "home": str(settings.home), **kept})
        else:
            click.echo(f"no coverage-mcp daemon runs for {settings.home}")
            _echo_preserved(kept)
        sys.exit(FAILED)
    client, _meta = found
    health = client.health()
    if as_json:
        emit_json({"running": True, "url": client.base_url, **health, **kept})
        return
    click.echo(f"coverage-mcp {health['version']} daemon at {client.base_url} (pid {health['pid']})")
    click.echo(f"  home:            {health['home']}")
    click.echo(f"  common db:       {health['common_db']}")
    click.echo(f"  schema revision: {health['schema_revision']}")
    click.echo(f"  build:           {health['build_fingerprint']}")
    _echo_preserved(kept)


def _preserved_wal(repo: str | None) -> dict[str, Any]:
    """``{"preserved_wal": ...}`` when the checkout's store keeps WAL copies, else ``{}``. The folder is only
    listed, never the store opened: status answers while the store refuses to open, or another holds it.
    Run outside any checkout without --repo, there is no store to speak of."""
    from coverage_core.git import discover
    from coverage_core.storage.guard import preserved_notice

    try:
        checkout = discover(repo if repo is not None else ".")
    except CoverageError as error:
        if repo is None and error.code is ErrorCode.NOT_A_REPOSITORY:
            return {}
        raise
    store = checkout.store_path
    notice = preserved_notice(store)
    return {} if notice is None else {"preserved_wal": {"store": str(store), **notice}}


def _echo_preserved(kept: dict[str, Any]) -> None:
    notice = kept.get("preserved_wal")
    if notice is None:
        return
    click.echo(f"preserved WAL copies beside {notice['store']}:")
    for copy in notice["copies"]:
        click.echo(f"  {copy}")
    click.echo(f"  {notice['suggestion']}")


@click.command("stop")
@click.option(
    "--timeout",
    type=float,
    default=STOP_TIMEOUT_S,
    show_default=True,
    help="Seconds to wait for a graceful exit before SIGTERM (then SIGKILL after COVERAGE_MCP_STOP_GRACE_S).",
)
@json_option
@handles_errors
def stop_command(timeout: float, as_json: bool) -> None:
    """Stop the running daemon of this COVERAGE_MCP_HOME (nothing to do when none runs).

    Asks the daemon to shut down; if its process has not ended within
    --timeout, sends SIGTERM, and SIGKILL after COVERAGE_MCP_STOP_GRACE_S.
    Says "stopped" only once the process is gone (and its stores with it).

    Example: coverage-mcp stop
    """
    settings = Settings.from_env()
    from coverage_daemon.rest_client import running_daemon

    found = running_daemon(settings)
    if found is None:
        _say(
            as_json, {"stopped": False, "running": False}, f"no coverage-mcp daemon runs for {settings.home}"
        )
        return
    client, meta = found
    pid = meta.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        raise CoverageError(
            ErrorCode.DAEMON_UNREACHABLE,
            f"{settings.daemon_lock} names no process",
            "Find the daemon with `ps` and stop it yourself.",
        )
    how = "shutdown"
    try:
        client.timeout_s = min(timeout, 5.0)
        client.shutdown(str(meta.get("capability", "")))
    except CoverageError:
        how = "SIGTERM"  # it does not answer: signals decide
    if not _ended(pid, timeout if how == "shutdown" else 0.0):
        how = "SIGTERM"
        _signal(pid, signal.SIGTERM)
        if not _ended(pid, settings.stop_grace_s):
            how = "SIGKILL"
            _signal(pid, signal.SIGKILL)
            if not _ended(pid, 5.0):
                raise CoverageError(
                    ErrorCode.DEADLINE_EXCEEDED,
                    f"the daemon (pid {pid}) is still running after SIGKILL",
                    f"Look at the process yourself: ps -p {pid}",
                )
    _say(
        as_json,
        {"stopped": True, "pid": pid, "how": how},
        f"stopped the coverage-mcp daemon (pid {pid})" + ("" if how == "shutdown" else f" with {how}"),
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie has ended; only its parent has not collected it yet.
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _ended(pid: int, timeout: float) -> bool:
    give_up = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() >= give_up:
            return False
        time.sleep(0.05)
    return True


def _signal(pid: int, signum: signal.Signals) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


@click.group("token")
def token_group() -> None:
    """The client token MCP clients and the CLI send to the daemon.

    Example: coverage-mcp token rotate
    """


@token_group.command("rotate")
@json_option
@handles_errors
def token_rotate_command(as_json: bool) -> None:
    """Replace the client token; the old one stops working at once, in a running daemon too.

    The connector and the CLI read the new token themselves; HTTP MCP clients
    configured with COVERAGE_MCP_TOKEN need the new value exported.

    Example: coverage-mcp token rotate
    """
    settings = Settings.from_env()
    from coverage_daemon.credentials import TOKEN_FILE, HomeError, rotate_client_token

    try:
        rotate_client_token(settings.home)
    except HomeError as error:
        raise CoverageError(ErrorCode.STORE_UNAVAILABLE, error.message, error.suggestion) from None
    path = settings.home / TOKEN_FILE
    _say(
        as_json,
        {"rotated": True, "token_file": str(path)},
        f"rotated the client token in {path}; HTTP clients need the new value "
        f'(export COVERAGE_MCP_TOKEN="$(cat {path})")',
    )


def _say(as_json: bool, payload: dict[str, object], text: str) -> None:
    if as_json:
        emit_json(payload)
    else:
        click.echo(text)
