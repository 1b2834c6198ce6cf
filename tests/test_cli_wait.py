"""Waiting, not failing: a coverage-mcp command waits for a store another process holds.

Everything runs through the real console script in subprocesses. A command
whose standard error is a terminal (a pty here) says once whom it waits for;
that line is how these tests know the wait has begun, so nothing depends on
timing. The holder is a real ``coverage-mcp ingest``, stopped (SIGSTOP) while
it holds the store, or a Python process holding it the way a notebook does.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from coverage_core.locks import is_held, read_metadata

from .environment import checkout_cli, test_env
from .gitrepo import lcov, make_repo

SCRIPT = checkout_cli()  # this checkout, never another coverage-mcp on PATH
BOUND_S = 120  # a generous bound on every wait: a slow machine is not a failure
BIG_LINES = 150_000  # enough lines that an ingest is still inside the store when it is stopped


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"src/app.py": "x = 1\n" * 10})
    (repo / "big.info").write_text(lcov({"src/app.py": {n: n % 2 for n in range(1, BIG_LINES)}}))
    (repo / "small.info").write_text(lcov({"src/app.py": {1: 1, 2: 0, 3: 1}}))
    return repo


def lock_of(repo: Path) -> Path:
    return repo / ".coverage-mcp" / "coverage.duckdb.lock"


class Terminal:
    """A command whose standard error is a terminal: its stderr read from the pty's master side."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [*SCRIPT, *args], stdout=subprocess.PIPE, stderr=slave, text=True, cwd=cwd
        )
        os.close(slave)
        self._master = master
        self.seen = ""

    def read_until(self, text: str) -> str:
        """Stderr up to ``text`` (fails when the command ends first or the bound passes)."""
        while text not in self.seen:
            ready, _, _ = select.select([self._master], [], [], BOUND_S)
            assert ready, f"no {text!r} on stderr within {BOUND_S}s: {self.seen!r}"
            try:
                chunk = os.read(self._master, 4096)
            except OSError:  # EIO: the command ended and closed the terminal
                chunk = b""
            assert chunk, f"the command ended before {text!r}: {self.seen!r}"
            self.seen += chunk.decode(errors="replace")
        return self.seen

    def finish(self) -> tuple[int, str, str]:
        out, _ = self.proc.communicate(timeout=BOUND_S)
        while True:
            ready, _, _ = select.select([self._master], [], [], 0)
            try:
                chunk = os.read(self._master, 4096) if ready else b""
            except OSError:
                chunk = b""
            if not chunk:
                break
            self.seen += chunk.decode(errors="replace")
        os.close(self._master)
        return self.proc.returncode, out, self.seen


@pytest.fixture
def stopped_ingest(repo: Path) -> Iterator[Terminal]:
    """A real `coverage-mcp ingest` stopped while it holds the store (its first progress stage is
    printed from inside the store's lease); continued and finished at teardown."""
    holder = Terminal(["ingest", "big.info", "--suite", "unit"], repo)
    try:
        holder.read_until("reading")
        holder.proc.send_signal(signal.SIGSTOP)
        assert holder.proc.poll() is None and is_held(lock_of(repo))
        meta = read_metadata(lock_of(repo))
        assert (meta["pid"], meta["owner"], meta["command"]) == (
            holder.proc.pid,
            "cli",
            "coverage-mcp ingest",
        )
        yield holder
    finally:
        holder.proc.send_signal(signal.SIGCONT)
        holder.proc.wait(timeout=BOUND_S)


def test_a_second_command_waits_for_a_running_ingest_says_so_on_a_terminal_and_then_succeeds(
    repo: Path, stopped_ingest: Terminal
) -> None:
    second = Terminal(["ingest", "small.info", "--suite", "second"], repo)
    said = second.read_until("...")
    assert f"waiting for pid {stopped_ingest.proc.pid} (coverage-mcp ingest)" in said
    assert said.count("waiting for") == 1
    stopped_ingest.proc.send_signal(signal.SIGCONT)
    first_code, first_out, _ = stopped_ingest.finish()
    code, out, err = second.finish()
    assert (first_code, code) == (0, 0), err
    assert "stored" in first_out and "stored" in out
    listed = subprocess.run(
        [*SCRIPT, "snapshots", "--json", "--repo", str(repo)], capture_output=True, text=True, timeout=BOUND_S
    )
    suites = {s["suite"] for s in json.loads(listed.stdout)["data"]["snapshots"]}
    assert suites == {"unit", "second"}


def test_snapshots_waits_for_an_ingest_and_lists_what_it_stored(repo: Path, stopped_ingest: Terminal) -> None:
    lister = Terminal(["snapshots"], repo)
    lister.read_until("waiting for")
    stopped_ingest.proc.send_signal(signal.SIGCONT)
    code, out, _ = lister.finish()
    assert code == 0 and "unit" in out


def test_a_command_gives_up_after_the_configured_wait_with_store_locked_and_a_setting_to_change(
    repo: Path, stopped_ingest: Terminal
) -> None:
    env = test_env(COVERAGE_MCP_CLI_STORE_WAIT_MS="300")
    plain = subprocess.run(
        [*SCRIPT, "snapshots", "--repo", str(repo)], capture_output=True, text=True, env=env, timeout=BOUND_S
    )
    assert plain.returncode == 1 and plain.stdout == ""
    assert "waiting for" not in plain.stderr  # standard error is not a terminal here
    assert plain.stderr.startswith("error [store_locked]:")
    assert f"pid {stopped_ingest.proc.pid} (coverage-mcp ingest)" in plain.stderr
    assert "COVERAGE_MCP_CLI_STORE_WAIT_MS=300" in plain.stderr
    assert "suggestion: Set COVERAGE_MCP_CLI_STORE_WAIT_MS=120000" in plain.stderr
    as_json = subprocess.run(
        [*SCRIPT, "snapshots", "--json", "--repo", str(repo)],
        capture_output=True,
        text=True,
        env=env,
        timeout=BOUND_S,
    )
    error = json.loads(as_json.stderr)["error"]
    assert as_json.returncode == 1 and error["code"] == "store_locked"
    assert error["details"]["holder"]["command"] == "coverage-mcp ingest"
    assert error["remedy"] == {"setting": "COVERAGE_MCP_CLI_STORE_WAIT_MS", "value": 120000}
    for text in (plain.stderr, error["suggestion"]):
        assert "={" not in text and "Pass " not in text and "coverage_daemon" not in text


NOTEBOOK = textwrap.dedent(
    """
    import sys
    from coverage_core import open_project
    project = open_project(sys.argv[1])
    print("held", flush=True)
    sys.stdin.readline()
    project.close()
    print("released", flush=True)
    sys.stdin.readline()
    """
)


def test_a_store_a_python_session_holds_is_waited_for_and_named_with_how_to_release_it(repo: Path) -> None:
    session = subprocess.Popen(
        [sys.executable, "-c", NOTEBOOK, str(repo)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert session.stdout.readline().strip() == "held"
        env = test_env(COVERAGE_MCP_CLI_STORE_WAIT_MS="200")
        refused = subprocess.run(
            [*SCRIPT, "snapshots", "--repo", str(repo)],
            capture_output=True,
            text=True,
            env=env,
            timeout=BOUND_S,
        )
        assert refused.returncode == 1 and "error [store_locked]" in refused.stderr
        assert f"pid {session.pid} (python)" in refused.stderr
        assert "Project is closed" in refused.stderr and "shut down the kernel" in refused.stderr
        waiting = Terminal(["ingest", "small.info"], repo)
        assert f"waiting for pid {session.pid} (python)" in waiting.read_until("...")
        session.stdin.write("\n")
        session.stdin.flush()
        assert session.stdout.readline().strip() == "released"
        code, out, err = waiting.finish()
        assert code == 0 and "stored" in out, err
    finally:
        session.kill()
        session.wait()
