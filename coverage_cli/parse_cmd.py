"""``coverage-mcp parse``: read one report and print its totals.

Imports what parsing needs and no more: the parsers (NumPy), the settings and
the percent formatter, never ``coverage_cli.output`` (it imports the review
surface: DuckDB, pygit2, cattrs), whose one error handler runs only when an
error is raised (``handles_errors_lazily``). A test runs ``parse`` and checks
the modules it loaded.
"""

from __future__ import annotations

import json
import sys

import click

from coverage_core import headline as headlines
from coverage_core.config import Settings
from coverage_core.display import counted
from coverage_core.parsers import FORMATS, Limits, parse
from coverage_core.vocabulary import COUNTERS

from .main import handles_errors_lazily


@click.command("parse")
@click.argument("report", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--format", "fmt", type=click.Choice(list(FORMATS)), help="Skip detection and read as this format."
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the answer's JSON envelope for machines (errors: the JSON error body).",
)
@handles_errors_lazily
def parse_command(report: str, fmt: str | None, as_json: bool) -> None:
    """Parse REPORT (any supported format, gzip/zstd too) and print its totals.

    Totals are the producing tool's own view (lcov --summary, coverage report,
    llvm-cov report, ...). Nothing is stored.

    Example: coverage-mcp parse coverage.json --json
    """
    settings = Settings.from_env()
    limits = Limits(settings.max_report_bytes)
    if report == "-":
        source = sys.stdin.buffer
    else:
        source = report
    result = parse(source, format=fmt, limits=limits)
    summary = result.summary()
    head = headlines.of(result.format, result.tool, result.totals)
    summary["headline"] = head.to_dict() if head else None
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))  # as output.emit_json, without importing it
        return
    click.echo(
        f"{report}: {summary['format']}, {counted(summary['files'], 'file')}, {counted(summary['tests'], 'named test')}"
    )
    click.echo(f"  {'counter':<16}{'hit':>12}{'found':>12}{'percent':>10}")
    style = headlines.rule_for(result.format, result.tool).style
    for name in COUNTERS:
        if name in result.totals:
            c = result.totals[name]
            shown = headlines.display(style, c.hit, c.found)  # as the producing tool rounds its figures
            click.echo(f"  {name:<16}{c.hit:>12,}{c.found:>12,}{shown:>10}")
    if head:
        click.echo(f"  total {head.percent} ({head.counter}, as {head.rule.name} computes and rounds it)")
    if summary.get("excluded_lines"):
        click.echo(f"  excluded lines: {summary['excluded_lines']:,}")
    for w in summary["warnings"]:
        click.echo(f"  warning [{w['code']}]: {w['message']}")
