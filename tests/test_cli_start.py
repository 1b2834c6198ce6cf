"""The console script starts fast: ``--help``/``--version`` import no command, ``parse`` only the parser.

Every run is the installed ``coverage-mcp`` console script in a subprocess with
``PYTHONPROFILEIMPORTTIME=1``, whose report on standard error names every module
the process imported; the tests assert those module sets (the times are measured
in benchmarks/cli.py, never asserted here).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import pkgutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import click

import coverage_cli
from coverage_cli.main import COMMANDS, LazyGroup, cli, load
from coverage_core.version import version

SCRIPT = Path(sysconfig.get_path("scripts")) / "coverage-mcp"
CORPUS = Path(__file__).resolve().parent / "corpus"
COBERTURA = CORPUS / "cobertura" / "cmark-gfm-0.29.0.gfm.13.gcovr.cobertura.xml"
HEAVY = {"duckdb", "pygit2", "cattrs", "aiohttp", "pydantic", "jsonschema", "mcp", "pandas", "pyarrow"}


def run(*args: str, cwd: Path | None = None) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run the console script; its result and the modules it imported beyond a bare interpreter's."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    process = subprocess.run(
        [str(SCRIPT), *args], check=False, capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )
    bare = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "pass"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return process, imported(process.stderr) - imported(bare.stderr)


def imported(stderr: str) -> set[str]:
    return {
        line.split("|")[-1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "cumulative" not in line
    }


def tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def without_importtime(stderr: str) -> str:
    return "\n".join(line for line in stderr.splitlines() if not line.startswith("import time:"))


def foreign(modules: set[str]) -> set[str]:
    """Top-level packages that are neither the standard library nor ours."""
    return {
        m
        for m in tops(modules)
        if m not in sys.stdlib_module_names
        and m not in ("coverage_cli", "coverage_core", "coverage_daemon")
        and not m.startswith("_")
    }


# -- --version and --help read only the command table ------------------------------------------


def test_version_prints_the_installed_distributions_version_and_imports_only_click() -> None:
    process, loaded = run("--version")
    assert process.returncode == 0, process.stderr[-2000:]
    assert process.stdout == f"coverage-mcp, version {importlib.metadata.version('coverage-mcp')}\n"
    assert version() == importlib.metadata.version("coverage-mcp")
    assert foreign(loaded) == {"click"}
    assert {m for m in loaded if m.startswith("coverage_")} <= {
        "coverage_cli",
        "coverage_cli.__main__",
        "coverage_cli.entry",
        "coverage_cli.main",
        "coverage_core",
        "coverage_core.version",
    }


def test_help_lists_every_command_with_its_summary_without_importing_any_command_module() -> None:
    process, loaded = run("--help")
    assert process.returncode == 0, process.stderr[-2000:]
    listed = process.stdout.split("Commands:\n", 1)[1].splitlines()
    assert [row.split()[0] for row in listed] == sorted(COMMANDS)
    for row in listed:
        name, summary = row.split(maxsplit=1)
        assert COMMANDS[name].summary.startswith(summary.removesuffix("..."))
    assert foreign(loaded) == {"click"}
    assert {m for m in loaded if m.startswith("coverage_")} <= {
        "coverage_cli",
        "coverage_cli.__main__",
        "coverage_cli.entry",
        "coverage_cli.main",
        "coverage_core",
    }


def test_no_arguments_shows_the_same_command_list_on_standard_error_with_exit_2() -> None:
    bare, loaded = run()  # click's usage error for a group run without a command
    helped, _ = run("--help")
    assert bare.returncode == 2 and bare.stdout == ""
    assert (
        without_importtime(bare.stderr).split("Commands:")[1].strip()
        == helped.stdout.split("Commands:")[1].strip()
    )
    assert foreign(loaded) == {"click"}


def test_a_commands_own_help_is_its_full_docstring_with_its_example() -> None:
    process, _ = run("parse", "--help")
    assert process.returncode == 0, process.stderr[-2000:]
    assert "Usage: coverage-mcp parse [OPTIONS] REPORT" in process.stdout
    assert "Nothing is stored." in process.stdout and "Example: coverage-mcp parse" in process.stdout
    assert "--json" in process.stdout and "--format" in process.stdout
    group, _ = run("token", "--help")
    assert group.returncode == 0 and "rotate" in group.stdout.split("Commands:")[1]


def test_an_unknown_command_is_refused_with_exit_2_and_nothing_imported() -> None:
    process, loaded = run("nosuch")
    assert process.returncode == 2
    assert "No such command 'nosuch'" in without_importtime(process.stderr)
    assert not tops(loaded) & HEAVY


# -- parse loads what parsing needs --------------------------------------------------------------


def test_parse_prints_the_reports_totals_and_loads_neither_duckdb_pygit2_cattrs_nor_aiohttp() -> None:
    process, loaded = run("parse", str(COBERTURA))
    assert process.returncode == 0, process.stderr[-2000:]
    assert "cobertura, 40 files" in process.stdout
    assert "lines                  5,397      22,358" in process.stdout
    assert "branches               2,935      14,962" in process.stdout
    assert "coverage_core.parsers" in loaded and "numpy" in tops(loaded)
    assert tops(loaded) & HEAVY == set()
    assert {m for m in loaded if m.startswith("coverage_cli.")} <= {
        "coverage_cli.__main__",
        "coverage_cli.entry",
        "coverage_cli.main",
        "coverage_cli.parse_cmd",
    }
    assert not {m for m in loaded if m.startswith("coverage_daemon")}
    assert (
        not {"coverage_core.service", "coverage_core.project", "coverage_core.model", "coverage_core.git"}
        & loaded
    )


def test_parse_json_prints_the_summary_as_json_and_stays_as_light() -> None:
    process, loaded = run("parse", str(COBERTURA), "--json")
    assert process.returncode == 0, process.stderr[-2000:]
    summary = json.loads(process.stdout)
    assert summary["format"] == "cobertura" and summary["files"] == 40
    assert summary["totals"]["lines"] == {"found": 22358, "hit": 5397}
    assert tops(loaded) & HEAVY == set()
    assert "coverage_cli.output" not in loaded


def test_a_parse_error_goes_through_the_one_error_handler_with_its_exit_code(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("not a report\n")
    process, _ = run("parse", str(garbage), "--json")
    assert process.returncode == 2
    assert process.stdout == ""
    body = json.loads(without_importtime(process.stderr))
    assert body["error"]["code"] == "unknown_format"
    missing, _ = run("parse", str(tmp_path / "missing.xml"))
    assert missing.returncode == 2
    assert without_importtime(missing.stderr).startswith("error [not_found]: ")


# -- the table is the one declaration of the commands ---------------------------------------------


def test_the_command_table_names_each_command_by_its_own_name_and_summary() -> None:
    aliases = set()
    for name, entry in COMMANDS.items():
        command = load(entry.target)
        if command.name != name:
            aliases.add(name)
        first_paragraph = (command.help or "").split("\n\n")[0]
        assert " ".join(first_paragraph.split()) == entry.summary, (
            f"{name}: update its summary in main.COMMANDS"
        )
    assert aliases == {"stdio"}


def test_every_command_defined_in_coverage_cli_is_in_the_command_table() -> None:
    defined: dict[int, str] = {}
    subcommands: set[int] = set()
    for info in pkgutil.iter_modules(coverage_cli.__path__):
        if info.name in ("__main__", "entry"):
            continue
        module = importlib.import_module(f"coverage_cli.{info.name}")
        for attribute, value in vars(module).items():
            if isinstance(value, click.Command) and not isinstance(value, LazyGroup):
                defined.setdefault(id(value), f"coverage_cli.{info.name}:{attribute}")
                if isinstance(value, click.Group):
                    subcommands |= {id(sub) for sub in value.commands.values()}
    declared = {id(load(entry.target)) for entry in COMMANDS.values()}
    missing = sorted(target for key, target in defined.items() if key not in declared | subcommands)
    assert missing == [], "declare these in coverage_cli/main.py's COMMANDS"


def test_help_lists_the_commands_exactly_as_click_lists_them_once_imported() -> None:
    ctx = click.Context(cli, info_name="coverage-mcp")
    lazy = ctx.make_formatter()
    cli.format_commands(ctx, lazy)
    eager = ctx.make_formatter()
    click.Group.format_commands(cli, ctx, eager)  # imports every command and asks each for its short help
    assert lazy.getvalue() == eager.getvalue()
    assert set(cli.commands) == set(COMMANDS)
