"""The click application: one group, commands registered from their modules."""

from __future__ import annotations

import click

from .ci_cmds import CI_COMMANDS
from .daemon_cmds import DAEMON_COMMANDS
from .demo_cmd import demo_command
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
