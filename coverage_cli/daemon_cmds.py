"""``serve``, ``status`` and ``stop``: the daemon's lifecycle from the command line.

The daemon modules (aiohttp among them) are imported inside the commands, so
every other command starts without them.
"""

from __future__ import annotations

import sys

import click

from coverage_core.config import SETTINGS, Settings
from coverage_core.errors import CoverageError, ErrorCode

from .output import FAILED, emit_json, handles_errors, json_option

STOP_TIMEOUT_S = 15.0


def settings_epilog() -> str:
    """Every setting of ``coverage_core.config.SETTINGS``, with its default and range."""
    lines = ["\b", "Settings (environment variables):"]
    for spec in SETTINGS:
        bounds = f", range {spec.minimum}..{spec.maximum}" if spec.minimum is not None else ""
        lines.append(f"  {spec.env} (default {spec.default}{bounds})")
        lines.append(f"      {spec.help}")
    return "\n".join(lines)


@click.command("serve", epilog=settings_epilog())
@click.option("--host", help="Loopback address to bind [COVERAGE_MCP_HOST, default 127.0.0.1].")
@click.option("--port", type=int, help="TCP port; 0 picks a free one [COVERAGE_MCP_PORT, default 59471].")
@handles_errors
def serve_command(host: str | None, port: int | None) -> None:
    """Run the coverage-mcp daemon in the foreground until SIGINT, SIGTERM or `coverage-mcp stop`.

    Serves MCP at /mcp and the REST API at /api on loopback, opening project
    stores as requests need them. Prints one line to stderr once listening.

    Example: coverage-mcp serve --port 0
    """
    settings = Settings.from_env(host=host, port=port)
    from coverage_daemon.server import serve

    def announce(line: str, url: str) -> None:
        click.echo(line, err=True)  # the one stderr line connectors and scripts wait for
        if sys.stdout.isatty():
            click.echo(client_configs(url))

    sys.exit(serve(settings, announce=announce))


def client_configs(url: str) -> str:
    """How to point an MCP client at this daemon, for the person who started it."""
    config = '{"mcpServers": {"coverage": {"command": "coverage-mcp", "args": ["connect", "--repo", "/path/to/checkout"]}}}'
    return "\n".join([
        f"MCP over HTTP:  {url}/mcp  (select the repository with the x-coverage-mcp-repo header or /p/PROJECT_ID/mcp)",
        "Claude Code:    claude mcp add coverage -- coverage-mcp connect --repo /path/to/checkout",
        f"Cursor/VS Code: {config}",
    ])


@click.command("status")
@json_option
@handles_errors
def status_command(as_json: bool) -> None:
    """Show the running daemon of this COVERAGE_MCP_HOME; exit 1 when none runs.

    Example: coverage-mcp status --json
    """
    settings = Settings.from_env()
    from coverage_daemon.client import running_daemon

    found = running_daemon(settings)
    if found is None:
        if as_json:
            emit_json({"running": False, "home": str(settings.home)})
        else:
            click.echo(f"no coverage-mcp daemon runs for {settings.home}")
        sys.exit(FAILED)
    client, _meta = found
    health = client.health()
    if as_json:
        emit_json({"running": True, "url": client.base_url, **health})
        return
    click.echo(f"coverage-mcp {health['version']} daemon at {client.base_url} (pid {health['pid']})")
    click.echo(f"  home:            {health['home']}")
    click.echo(f"  common db:       {health['common_db']}")
    click.echo(f"  schema revision: {health['schema_revision']}")
    click.echo(f"  build:           {health['build_fingerprint']}")


@click.command("stop")
@click.option("--timeout", type=float, default=STOP_TIMEOUT_S, show_default=True,
              help="Seconds to wait for the daemon to release its lock.")
@json_option
@handles_errors
def stop_command(timeout: float, as_json: bool) -> None:
    """Stop the running daemon of this COVERAGE_MCP_HOME gracefully (nothing to do when none runs).

    Example: coverage-mcp stop
    """
    settings = Settings.from_env()
    from coverage_daemon.client import running_daemon, wait_released

    found = running_daemon(settings)
    if found is None:
        _say(as_json, {"stopped": False, "running": False}, f"no coverage-mcp daemon runs for {settings.home}")
        return
    client, meta = found
    capability = meta.get("capability")
    if not capability:
        raise CoverageError(ErrorCode.DAEMON_UNREACHABLE, f"{settings.daemon_lock} carries no capability",
                            "Stop the process with its pid instead: kill " + str(meta.get("pid", "")))
    client.shutdown(capability)
    if not wait_released(settings.daemon_lock, timeout):
        raise CoverageError(
            ErrorCode.DEADLINE_EXCEEDED,
            f"the daemon (pid {meta.get('pid')}) accepted the shutdown but still holds its lock after {timeout:g} s",
            f"Wait longer (--timeout) or stop the process: kill {meta.get('pid')}",
        )
    _say(as_json, {"stopped": True, "pid": meta.get("pid")}, f"stopped the coverage-mcp daemon (pid {meta.get('pid')})")


def _say(as_json: bool, payload: dict[str, object], text: str) -> None:
    if as_json:
        emit_json(payload)
    else:
        click.echo(text)


DAEMON_COMMANDS = (serve_command, status_command, stop_command)
