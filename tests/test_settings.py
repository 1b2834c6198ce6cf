"""One settings table, one version: what config, the connector and ``serve --help`` share.

The connector's settings and ``coverage_core.config.Settings`` both read the
environment through ``coverage_core.settings_table.read_env``; these tests
prove it from the outside (a real ``coverage-mcp connect`` process) and that
each setting has one default, listed by ``serve --help``.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from coverage_core import settings_table
from coverage_core.config import SETTINGS, Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.locks import VERSION as LOCK_VERSION
from coverage_core.version import version
from coverage_daemon import identity, launcher
from coverage_daemon.mcp import SERVER_INFO

ROOT = Path(__file__).resolve().parents[1]


def _bad_value(spec: settings_table.SettingSpec, index: int) -> str:
    """A value the table refuses: alternately not an integer and just out of range."""
    if spec.name == "host":
        return "127.1"
    if index % 2 or spec.maximum is None:
        return "twelve"
    return str(spec.maximum + 1)


BAD = [(spec.env, _bad_value(spec, i)) for i, spec in enumerate(SETTINGS) if spec.name != "home"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_MCP_")}
    return {**env, "COVERAGE_MCP_HOME": os.environ["COVERAGE_MCP_HOME"], **extra}


def test_every_setting_has_exactly_one_default_and_it_lives_in_the_table() -> None:
    names = [spec.name for spec in SETTINGS]
    assert len(set(names)) == len(names) and len({spec.env for spec in SETTINGS}) == len(names)
    fields = attrs.fields(Settings)
    assert [f.name for f in fields] == names
    assert all(f.default is attrs.NOTHING for f in fields)  # Settings repeats no default
    assert (identity.DEFAULT_HOST, identity.DEFAULT_PORT) == (
        settings_table.BY_NAME["host"].default,
        settings_table.BY_NAME["port"].default,
    )


def test_an_empty_environment_gives_the_defaults_on_both_sides() -> None:
    home = {"COVERAGE_MCP_HOME": os.environ["COVERAGE_MCP_HOME"]}
    config = Settings.from_env(home)
    connector = launcher.Settings.from_env(home)
    for spec in SETTINGS:
        if spec.name != "home":
            assert getattr(config, spec.name) == spec.default
    assert (connector.home, connector.host, connector.port) == (config.home, config.host, config.port)
    assert connector.request_timeout_s == config.http_timeout_s + 5


def test_every_setting_is_listed_with_its_default_and_range_by_serve_help() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "serve", "--help"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
        check=True,
    ).stdout
    for spec in SETTINGS:
        assert spec.env in shown
        assert f"default {spec.default}" in shown
        if spec.minimum is not None:
            assert f"{spec.minimum}..{spec.maximum}" in shown


@pytest.mark.parametrize(("variable", "value"), BAD)
def test_a_bad_setting_is_refused_with_the_same_error_by_config_and_by_the_connector(
    variable: str, value: str, tmp_path: Path
) -> None:
    with pytest.raises(CoverageError) as config:
        Settings.from_env({variable: value})
    with pytest.raises(CoverageError) as connector:
        launcher.Settings.from_env({variable: value})
    assert config.value.code == ErrorCode.INVALID_ARGUMENT
    assert connector.value.to_dict() == config.value.to_dict()
    assert variable in config.value.message and config.value.details["setting"] == variable
    # And the connector process itself: exit code 2, the same code, message and suggestion on stderr.
    ran = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "connect", "--repo", str(tmp_path)],
        input=b"",
        capture_output=True,
        env=_env(**{variable: value}),
        timeout=60,
        check=False,
    )
    assert ran.returncode == 2 and ran.stdout == b""
    stderr = ran.stderr.decode()
    assert f"error [invalid_argument]: {config.value.message}" in stderr
    assert f"suggestion: {config.value.suggestion}" in stderr


def test_a_query_deadline_not_shorter_than_the_http_deadline_is_refused_on_both_sides() -> None:
    env = {"COVERAGE_MCP_HTTP_TIMEOUT_S": "5", "COVERAGE_MCP_DB_QUERY_TIMEOUT_MS": "5000"}
    with pytest.raises(CoverageError) as config:
        Settings.from_env(env)
    with pytest.raises(CoverageError) as connector:
        launcher.Settings.from_env(env)
    assert connector.value.to_dict() == config.value.to_dict()


def test_an_override_wins_over_the_environment_and_an_empty_variable_means_the_default() -> None:
    settings = Settings.from_env({"COVERAGE_MCP_PORT": "1234", "COVERAGE_MCP_DB_POOL_SIZE": ""}, port=0)
    assert settings.port == 0 and settings.db_pool_size == settings_table.BY_NAME["db_pool_size"].default


# -- one version string -----------------------------------------------------------------------------


def test_the_version_is_the_installed_distributions_and_every_side_reports_it() -> None:
    assert version() == importlib.metadata.version("coverage-mcp")
    assert identity.VERSION == LOCK_VERSION == SERVER_INFO["version"] == version()
    import coverage_core

    assert coverage_core.__version__ == version()


def test_no_source_file_repeats_the_version_literal() -> None:
    literal = f'"{importlib.metadata.version("coverage-mcp")}"'
    copies = [
        str(path.relative_to(ROOT))
        for package in ("coverage_core", "coverage_daemon", "coverage_cli")
        for path in (ROOT / package).rglob("*.py")
        if literal in path.read_text()
    ]
    assert copies == []


def test_a_source_tree_without_installed_metadata_reports_the_fallback_version(tmp_path: Path) -> None:
    # A copy of the package, with only the stdlib beside it on the path (no site-packages, no egg-info).
    shutil.copytree(
        ROOT / "coverage_core",
        tmp_path / "src" / "coverage_core",
        ignore=shutil.ignore_patterns("__pycache__", "sample"),
    )
    code = (
        "import sys; sys.path[:] = [p for p in sys.path if 'site-packages' not in p] + [sys.argv[1]]; "
        "from coverage_core.version import version, FALLBACK; print(version() == FALLBACK)"
    )
    ran = subprocess.run(
        [sys.executable, "-S", "-c", code, str(tmp_path / "src")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert ran.stdout.strip() == "True", ran.stderr


def test_a_store_runs_on_the_duckdb_threads_the_setting_names_and_answers_the_same_on_any(
    sample_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb

    from coverage_core import open_project
    from coverage_core.service import Service

    answers, threads = {}, {}
    for given in ("1", "3", "0"):
        monkeypatch.setenv("COVERAGE_MCP_DB_THREADS", given)
        with open_project(sample_repo) as project:
            service = Service(project)
            if given == "1":
                service.call("coverage_import", {"report_path": "step3.coverage.lcov"})
            threads[given] = project.store.con.execute("SELECT current_setting('threads')").fetchall()[0][0]
            answers[given] = [
                service.call("coverage_review", {"task": task})["data"]
                for task in ("insight", "all", "source")
            ]
    default = duckdb.connect().execute("SELECT current_setting('threads')").fetchall()[0][0]
    assert threads == {"1": 1, "3": 3, "0": default}, "0 leaves DuckDB's own default (one per core)"
    assert answers["1"] == answers["3"] == answers["0"]
