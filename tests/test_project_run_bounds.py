"""A repository's own run bounds: the queue and log bounds of managed execution are project settings (issue 28:
one project-settings module), null meaning the daemon's COVERAGE_MCP_RUN_* value.

Real stores, real git repositories, real runs of real child processes; the settings are changed through the
project_settings_update row and the ``coverage-mcp settings`` command, the way a person changes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from coverage_core import open_project
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.execution import runs
from coverage_core.project import Project
from coverage_core.service import Service

from .commandline import cli
from .gitrepo import make_repo
from .test_runs import FILES, PY, approved, run, wait_for


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    with open_project(make_repo(tmp_path / "repo", FILES)) as opened:
        yield opened


def _set(project: Project, **values: object) -> dict[str, object]:
    return Service(project).call("project_settings_update", {"settings": values})["data"]["settings"]


def test_a_repositorys_own_queue_limit_refuses_the_run_past_it_naming_the_project_setting(
    project: Project,
) -> None:
    assert _set(project, run_queue_limit=1)["run_queue_limit"] == 1
    command_id = approved(project, [PY, "sleepy.py"], name="sleepy")
    first = run(project, command_id=command_id, reuse_if_unchanged=False)["id"]
    wait_for(lambda: runs.get(project.store, first).state == "running", "the first run's start")
    queued = run(project, command_id=command_id, reuse_if_unchanged=False)["id"]
    with pytest.raises(CoverageError) as refused:
        run(project, command_id=command_id, reuse_if_unchanged=False)
    error = refused.value
    assert error.code == ErrorCode.TOO_MANY_REQUESTS
    assert "project setting run_queue_limit=1" in error.message
    assert error.details["setting"] == "project setting run_queue_limit"
    # A person changes a repository's bound (a row no agent may call): no remedy an agent would try.
    assert error.remedy is None
    # Back to null: the process-wide COVERAGE_MCP_RUN_QUEUE_LIMIT (100) applies again.
    assert _set(project, run_queue_limit=None)["run_queue_limit"] is None
    third = run(project, command_id=command_id, reuse_if_unchanged=False)["id"]
    for run_id in (first, queued, third):
        runs.request_cancel(project.store, run_id)


def test_a_repositorys_own_log_bound_keeps_that_many_bytes_of_a_runs_output(tmp_path: Path) -> None:
    # The process-wide bound is large; the repository's own is 2,048 bytes: the run keeps 2,048.
    settings = Settings.from_env(run_log_max_bytes=1 << 20)
    with open_project(make_repo(tmp_path / "repo", FILES), settings=settings) as project:
        _set(project, run_log_max_bytes=2048)
        done = run(project, command_id=approved(project, [PY, "chatty.py"]), wait=True)
        assert done["state"] == "succeeded"
        assert done["logs"]["stdout"] == {"bytes": 100000, "truncated": True}
        kept = project.store.path.parent / "runs" / done["id"] / "stdout"
        assert kept.stat().st_size == 2048
        # null again: the next run keeps what the process-wide bound allows (all of its 100,000 bytes).
        _set(project, run_log_max_bytes=None)
        again = run(
            project, command_id=approved(project, [PY, "chatty.py"]), wait=True, reuse_if_unchanged=False
        )
        assert again["logs"]["stdout"] == {"bytes": 100000, "truncated": False}


@pytest.mark.parametrize(
    ("pair", "said"),
    [
        ("run_queue_limit=0", "run_queue_limit must be a whole number from 1 to 100000"),
        ("run_log_max_bytes=12", "run_log_max_bytes must be a whole number from 1024"),
        ("run_queue_limit=many", "run_queue_limit must be a whole number"),
        ("approval_mode=null", "approval_mode cannot be 'null'"),
        ("no_such_setting=1", "is not KEY=VALUE with a project setting"),
        ("run_queue_limit", "is not KEY=VALUE with a project setting"),
    ],
)
def test_a_setting_the_repository_does_not_admit_is_refused_on_the_command_line_and_nothing_changes(
    tmp_path: Path, pair: str, said: str
) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    before = cli("settings", "--json", cwd=repo)
    refused = cli("settings", "--set", pair, cwd=repo)
    assert refused.returncode == 2, refused.stderr
    assert "invalid_argument" in refused.stderr and said in refused.stderr
    assert cli("settings", "--json", cwd=repo).stdout == before.stdout


def test_the_settings_command_shows_and_changes_the_repositorys_settings(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    shown = cli("settings", cwd=repo)
    assert shown.returncode == 0, shown.stderr
    # One column of names, as wide as the longest (compaction_protect_recent_runs).
    assert "run_queue_limit" + " " * 17 + "null (COVERAGE_MCP_RUN_QUEUE_LIMIT)" in shown.stdout
    changed = cli(
        "settings", "--set", "run_queue_limit=7", "--set", "approval_mode=attested", "--json", cwd=repo
    )
    assert changed.returncode == 0, changed.stderr
    settings = json.loads(changed.stdout)["data"]["settings"]
    assert settings["run_queue_limit"] == 7 and settings["approval_mode"] == "attested"
    with open_project(repo) as project:  # kept in the repository's store, read back by the library
        assert Service(project).call("project_settings")["data"]["settings"] == settings
