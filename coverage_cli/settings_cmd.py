"""``settings``: show or change the repository's own settings (the project_settings rows).

On whichever owns the store (``coverage_daemon.client.open_project``): the library's project, or the
daemon, which changes them only with the capability read from its lock file.
"""

from __future__ import annotations

from typing import Any

import click

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.storage import project_settings
from coverage_daemon.client import call, open_project

from .options import json_option, repo_option
from .output import emit_json, handles_errors

SETTINGS = project_settings.SETTINGS


def _value(setting: project_settings.ProjectSetting, text: str) -> Any:
    """``text`` as the value ``setting`` takes: a whole number, one of its choices, or ``null`` (the
    process-wide value) where it inherits one; the setting's own check refuses anything else."""
    text = text.strip()
    if text == "null" and setting.default is None:
        return None
    try:
        return setting.check(int(text)) if setting.low is not None else setting.check(text)
    except ValueError:
        return setting.check(text)  # not a number: the check says what a valid value is


def assignments(
    pairs: tuple[str, ...], by_name: dict[str, project_settings.ProjectSetting], form: str, suggestion: str
) -> dict[str, Any]:
    """``--set NAME=VALUE`` options as checked values by setting key: a name not in ``by_name`` or a pair
    without ``=`` is refused as not ``form``, with ``suggestion``; a value by its setting's own check."""
    values: dict[str, Any] = {}
    for pair in pairs:
        name, equals, text = pair.partition("=")
        setting = by_name.get(name.strip())
        if setting is None or not equals:
            raise CoverageError(ErrorCode.INVALID_ARGUMENT, f"--set {pair!r} is not {form}", suggestion)
        values[setting.key] = _value(setting, text)
    return values


def _shown(key: str, value: Any) -> str:
    if value is None:
        return f"null ({SETTINGS[key].variable})"
    return str(value)


@click.command("settings")
@click.option(
    "--set",
    "changes",
    multiple=True,
    metavar="KEY=VALUE",
    help="Change a setting (repeatable); VALUE null gives a run bound back to the daemon's variable.",
)
@repo_option
@json_option
@handles_errors
def settings_command(changes, repo, as_json) -> None:
    """Show this repository's settings, or change them with --set (the store owner's decision).

    approval_mode, the compaction policy and the run bounds (run_queue_limit, run_log_max_bytes: null
    means the daemon's COVERAGE_MCP_RUN_* value) are kept in the repository's store.

    Example: coverage-mcp settings --set run_queue_limit=10
    """
    values = assignments(
        changes,
        SETTINGS,
        "KEY=VALUE with a project setting",
        f"Project settings: {', '.join(SETTINGS)}; e.g. --set run_queue_limit=10.",
    )
    with open_project(repo) as project:
        if values:
            answer = call(project, "project_settings_update", {"settings": values})
        else:
            answer = call(project, "project_settings", {})
    found = answer["data"]["settings"]
    if as_json:
        emit_json({"data": {"settings": found}})
        return
    width = max(map(len, found))
    for key, value in found.items():
        click.echo(f"{key:<{width}}  {_shown(key, value)}")
