"""The click application: one group whose commands are declared in one table and imported when used.

``COMMANDS`` names every command, the ``module:attribute`` that defines it and
its one-line summary. ``coverage-mcp --help`` and ``--version`` read only that
table, so they import click and nothing else of ours; ``coverage-mcp parse``
imports the parse command's module alone (the parser and NumPy, never DuckDB,
pygit2, cattrs or aiohttp, which the store, review and daemon commands bring).
A test checks the table against the commands it points to (names, summaries,
and that no command defined in ``coverage_cli`` is left out).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, NamedTuple

import click


class Entry(NamedTuple):
    target: str  # "module:attribute" of the click command
    summary: str  # the first paragraph of its help, shown by `coverage-mcp --help`


COMMANDS: dict[str, Entry] = {
    "parse": Entry(
        "coverage_cli.parse_cmd:parse_command",
        "Parse REPORT (any supported format, gzip/zstd too) and print its totals.",
    ),
    "ingest": Entry(
        "coverage_cli.ingest_cmd:ingest_command",
        "Store REPORT as an immutable snapshot of this repository ('-' reads standard input).",
    ),
    "snapshots": Entry(
        "coverage_cli.store_cmds:snapshots_command", "List the snapshots of this repository, newest first."
    ),
    "show": Entry(
        "coverage_cli.store_cmds:show_command",
        "Show one snapshot's files, or one file's detail (lines, branches, functions, regions, tests).",
    ),
    "review": Entry(
        "coverage_cli.review_cmds:review_command",
        "Answer a coverage question about the stored snapshots: TASK is one of",
    ),
    "context": Entry(
        "coverage_cli.review_cmds:context_command",
        "Show the repository's identity, freshness and latest snapshot per suite.",
    ),
    "diff": Entry(
        "coverage_cli.ci_cmds:diff_command",
        "Compare coverage with a baseline: lcov's twelve categories, patch coverage, files and ranges.",
    ),
    "gate": Entry(
        "coverage_cli.ci_cmds:gate_command",
        "Fail CI when coverage drops: thresholds, a ratchet and criteria over the categories.",
    ),
    "serve": Entry(
        "coverage_cli.daemon_cmds:serve_command",
        "Run the coverage-mcp daemon in the foreground until SIGINT, SIGTERM or `coverage-mcp stop`.",
    ),
    "status": Entry(
        "coverage_cli.daemon_cmds:status_command",
        "Show the running daemon of this COVERAGE_MCP_HOME; exit 1 when none runs.",
    ),
    "stop": Entry(
        "coverage_cli.daemon_cmds:stop_command",
        "Stop the running daemon of this COVERAGE_MCP_HOME (nothing to do when none runs).",
    ),
    "token": Entry(
        "coverage_cli.daemon_cmds:token_group", "The client token MCP clients and the CLI send to the daemon."
    ),
    "demo": Entry(
        "coverage_cli.demo_cmd:demo_command",
        "Seed a sample repository with real coverage history and show the answers.",
    ),
    "connect": Entry(
        "coverage_cli.main:connect_command",
        "Bridge an MCP client (stdio) to the daemon, starting it if needed (alias: stdio).",
    ),
    "stdio": Entry(
        "coverage_cli.main:connect_command",
        "Bridge an MCP client (stdio) to the daemon, starting it if needed (alias: stdio).",
    ),
    "composite": Entry(
        "coverage_cli.composite_cmds:composite_group",
        "Composite production coverage: one exact percentage across languages against an inventory.",
    ),
    "command": Entry(
        "coverage_cli.exec_cmds:command_group",
        "Registered test commands: list, show, approve, reject (a person's decisions), register.",
    ),
    "run": Entry(
        "coverage_cli.exec_cmds:run_command",
        "Run an approved command through the daemon (started if none runs); its reports are ingested.",
    ),
    "runs": Entry(
        "coverage_cli.exec_cmds:runs_group",
        "List managed runs, newest first; `runs show RUN_ID` and `runs cancel RUN_ID` act on one.",
    ),
    "settings": Entry(
        "coverage_cli.settings_cmd:settings_command",
        "Show this repository's settings, or change them with --set (the store owner's decision).",
    ),
    "compact": Entry(
        "coverage_cli.compact_cmd:compact_command",
        "Compact old snapshots' detail into zstd payloads; answers stay the same.",
    ),
    "dashboard": Entry(
        "coverage_cli.dashboard_cmds:dashboard_command",
        "Open the dashboard of this repository in the browser, signed in through a one-time link.",
    ),
    "report": Entry(
        "coverage_cli.dashboard_cmds:report_command",
        "Write the dashboard as a static HTML site (for CI artifacts): an index and one page per file.",
    ),
}


def load(target: str) -> click.Command:
    """The click command a ``module:attribute`` target names (importing its module)."""
    module, _, attribute = target.partition(":")
    command = getattr(importlib.import_module(module), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is not a click command")
    return command


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's ``commands``: every name of the table, each imported on first access.

    A mapping, so that whatever walks ``group.commands`` (click itself, the drift
    tests) sees every command; iterating yields names without importing anything.
    """

    def __init__(self, table: dict[str, Entry]) -> None:
        self._table = table
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name not in self._table:
                raise KeyError(name)
            self._loaded[name] = load(self._table[name].target)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("commands are declared in COMMANDS")

    def __iter__(self) -> Iterator[str]:
        yield from self._table
        yield from (name for name in self._loaded if name not in self._table)

    def __len__(self) -> int:
        return len(set(self._table) | set(self._loaded))

    def summary(self, name: str) -> str:
        if name in self._table:
            return self._table[name].summary
        return self[name].help or ""


class LazyGroup(click.Group):
    """A click group that lists its commands from ``COMMANDS`` and imports one only to run it or show its help."""

    def __init__(self, *args: Any, table: dict[str, Entry], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: LazyCommands = LazyCommands(table)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)  # as click.Group lays it out
        # Shortened as click shortens a command's help (a throwaway Command: no import of the real one).
        rows = [
            (name, click.Command(name, help=self.commands.summary(name)).get_short_help_str(limit))
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from coverage_core.version import version  # stdlib only: no importlib.metadata scan

    click.echo(f"coverage-mcp, version {version()}")
    ctx.exit()


@click.group(
    cls=LazyGroup,
    table=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def cli() -> None:
    """Coverage history for every git repository on this machine.

    Parse and store coverage reports, review them, compare them in CI, and
    serve them to coding agents over MCP.
    """


def handles_errors_lazily(func: Callable[..., Any]) -> Callable[..., Any]:
    """``output.handles_errors`` for commands that must start without it.

    ``coverage_cli.output`` imports the review surface (DuckDB, pygit2, cattrs)
    to render suggestions as command lines; this wrapper imports it only when a
    ``CoverageError`` is raised, then lets that one handler print the body and exit.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from coverage_core.errors import CoverageError

        try:
            return func(*args, **kwargs)
        except CoverageError as error:
            _handle(error, as_json=bool(kwargs.get("as_json")))
            raise  # not reached: the handler exits
        except Exception as error:  # a full disk, a damaged store: coded too (``coverage_core.faults``)
            from coverage_core import faults

            if faults.classify(error) is None:
                raise
            _handle(error, as_json=bool(kwargs.get("as_json")))
            raise  # not reached: the handler exits

    # A marker on the function (mypy knows no function attributes); a test checks every command has it.
    wrapper.handles_coverage_errors = True  # type: ignore[attr-defined]
    return wrapper


def _handle(error: Exception, *, as_json: bool) -> None:
    """Hand ``error`` to ``output.handles_errors`` (which prints its body and exits), so there is one handler."""
    from .output import handles_errors

    def raise_it(**_: Any) -> None:
        raise error

    handles_errors(raise_it)(as_json=as_json)


@click.command(
    "connect",
    add_help_option=False,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@handles_errors_lazily
def connect_command(args: tuple[str, ...]) -> None:
    """Bridge an MCP client (stdio) to the daemon, starting it if needed (alias: stdio).

    The console script runs this before click is even imported; it is listed
    here so that `coverage-mcp --help` shows it.

    Example: claude mcp add coverage -- coverage-mcp connect --repo /path/to/repo
    """
    from coverage_daemon.connector import run_connector

    raise SystemExit(run_connector(list(args)))
