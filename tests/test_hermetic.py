"""The suite is hermetic: a person's shell (their daemon's port, home and token, their git config) never
reaches what the tests run, not even a subprocess started without ``env=``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from coverage_daemon.credentials import client_token

from .daemons import ServeProcess
from .environment import test_env
from .systemtools import require

ROOT = Path(__file__).resolve().parent.parent
# One daemon test (status and stop find the daemon through its lock), one CLI test (an ingest routes to the
# daemon holding the store) and one browser test (the page's approval runs a `coverage-mcp run`).
CHILD_TESTS = (
    "tests/test_daemon_lifecycle.py::test_status_and_stop_find_the_daemon_through_its_lock",
    "tests/test_cli_routing.py::test_an_ingest_from_outside_the_checkout_with_path_maps_works_the_same_through_the_daemon",
    "tests/test_dashboard_browser.py::test_a_person_approves_a_pending_command_on_the_page_and_its_run_and_log_appear",
)
# A person's ~/.gitconfig that would break every commit of a test repository if it applied.
HOSTILE_GITCONFIG = "[commit]\n\tgpgsign = true\n[user]\n\tsigningkey = nobody-has-this-key\n"


def files_of(home: Path) -> set[str]:
    """The files of a daemon home, but DuckDB's write-ahead logs (they come and go with checkpoints)."""
    return {str(p.relative_to(home)) for p in home.rglob("*") if p.is_file() and p.suffix != ".wal"}


def test_a_child_run_passes_unchanged_under_a_shell_exporting_another_daemon_s_port_home_and_token(
    tmp_path: Path,
) -> None:
    require("chromium")  # the browser test must run, not skip, for this to prove anything
    other_home = tmp_path / "their-home"
    other_home.mkdir()
    theirs = ServeProcess(other_home)  # a person's daemon, on an ephemeral port: never the default one
    try:
        before = files_of(other_home)
        person = tmp_path / "person"
        person.mkdir()
        (person / ".gitconfig").write_text(HOSTILE_GITCONFIG)
        shell = test_env(
            home=other_home,
            port=theirs.port,
            COVERAGE_MCP_TOKEN=client_token(other_home) or "their-token",
            COVERAGE_MCP_IDLE_EXIT_S="1",
            HOME=str(person),
            GIT_CONFIG_GLOBAL=str(person / ".gitconfig"),
            GIT_DIR=str(tmp_path / "not-a-repository"),
        )
        shell = {k: v for k, v in shell.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}
        child = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", *CHILD_TESTS],
            cwd=ROOT,
            env=shell,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
        assert "3 passed" in child.stdout, child.stdout[-2000:]
        # their daemon was never reached: still up, and its home has no file more than it had
        assert theirs.proc.poll() is None
        assert theirs.client().health()["name"] == "coverage-mcp"
        assert files_of(other_home) == before
    finally:
        theirs.stop()
