"""The click application: one group, commands registered from their modules."""

from __future__ import annotations

import click

from .ci_cmds import CI_COMMANDS
from .daemon_cmds import DAEMON_COMMANDS
from .demo_cmd import demo_command
from .output import handles_errors
from .parse_cmd import parse_command
from .review_cmds import context_command, review_command
from .store_cmds import ingest_command, show_command, snapshots_command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="coverage-mcp")
def cli() -> None:
    """Coverage history for every git repository on this machine.

    Parse and store coverage reports, review them, compare them in CI, and
    serve them to coding agents over MCP.
    """


for command in (parse_command, ingest_command, snapshots_command, show_command, review_command, context_command,
                *CI_COMMANDS, *DAEMON_COMMANDS):
    cli.add_command(command)
cli.add_command(demo_command)


@click.command(
    "connect", add_help_option=False,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@handles_errors
def connect_command(args: tuple[str, ...]) -> None:
    """Bridge an MCP client (stdio) to the daemon, starting it if needed (alias: stdio).

    The console script runs this before click is even imported; it is listed
    here so that `coverage-mcp --help` shows it.

    Example: claude mcp add coverage -- coverage-mcp connect --repo /path/to/repo
    """
    from coverage_daemon.connector import run_connector

    raise SystemExit(run_connector(list(args)))


cli.add_command(connect_command)
cli.add_command(connect_command, name="stdio")
