"""Console-script entry point.

``coverage-mcp connect`` (alias ``stdio``) is launched by MCP clients on every
session start, so it is dispatched here before click, coverage_core, aiohttp or
pydantic are imported; every other command goes to the click application,
which imports a command's module only to run it or show its help
(``coverage_cli.main.COMMANDS``), so ``--help`` and ``--version`` cost click alone.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("connect", "stdio"):
        try:
            from coverage_daemon.connector import run_connector
        except ImportError:  # the connector has not been built in this checkout
            pass
        else:
            raise SystemExit(run_connector(args[1:]))
    from .main import cli

    cli.main(args=args, prog_name="coverage-mcp")
