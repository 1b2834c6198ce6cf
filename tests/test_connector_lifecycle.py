"""Which daemon a connector uses: one per home, started on demand, replaced only when that is provably safe.

Every daemon here is a real ``coverage-mcp serve``: other releases and builds
are copies of this checkout's packages with another ``VERSION`` or another
file content (so another build fingerprint), run from ``PYTHONPATH``.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_connector_support import (
    Connector,
    env_for,
    free_port,
    health,
    lease,
    other_build,
    refuses,
    sample_repo,
    serve_processes,
    start_daemon,
    stop_all,
)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "home"
    yield path
    stop_all(path)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_repo(tmp_path_factory.mktemp("lifecycle-repo") / "inventory")


def _refusal(connector: Connector) -> dict[str, Any]:
    """The error a request gets from a connector that must not use the daemon it found."""
    answer = connector.request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answer["id"] == 1
    return answer["error"]


def _health(port: int) -> dict[str, Any]:
    answer = health(port)
    assert answer is not None, f"nothing answers /health on port {port}"
    return answer


def test_the_first_connector_starts_a_detached_daemon_that_outlives_it(home: Path, repo: Path) -> None:
    """Seed: "The daemon is independent of any one stdio bridge and remains available after bridges
    disconnect." """
    port = free_port()
    connector = Connector(repo, env_for(home, port))
    assert connector.initialize()["result"]["serverInfo"]["name"] == "coverage-mcp"
    assert connector.close() == 0
    holder = lease(home)
    assert holder["port"] == port and serve_processes(home) == [holder["pid"]]
    assert os.getsid(holder["pid"]) != os.getsid(0)  # its own session: the client's signals miss it
    assert (home / "daemon.log").exists()
    assert health(port) is not None  # still serving with no connector left


def test_eight_connectors_started_at_once_end_with_exactly_one_daemon(home: Path, repo: Path) -> None:
    """Seed: "The first connector starts the daemon on demand; racing connectors using the same host,
    port, and common database discover the same owner, which alone holds `daemon.lock`." and
    "Connectors and direct HTTP clients never take this lease and may connect concurrently." """
    env = env_for(home, free_port())
    connectors = [Connector(repo, env) for _ in range(8)]
    for connector in connectors:
        connector.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "race", "version": "1"},
                },
            }
        )
    answers = [connector.receive() for connector in connectors]
    assert all("result" in answer for answer in answers), answers
    served = {
        connector.call(2, "project_context", {})["result"]["structuredContent"]["context"]["checkout_path"]
        for connector in connectors
    }
    assert served == {str(repo)}
    assert [c.close() for c in connectors] == [0] * 8
    # Losers of the lease race may still be importing when the winner serves;
    # each exits as soon as it finds the lease taken.
    deadline = time.monotonic() + 20
    while serve_processes(home) != [lease(home)["pid"]]:
        assert time.monotonic() < deadline, (serve_processes(home), lease(home))
        time.sleep(0.05)


def test_a_daemon_killed_mid_session_is_restarted_and_the_session_goes_on(home: Path, repo: Path) -> None:
    """Seed: "A bridge that outlives a crashed daemon treats connection refusal as proof that its request
    was not delivered, executes the same verified startup path, and replays that request once." and
    "After an ungraceful daemon exit, the OS releases the lease even though the metadata file remains."
    and "The next new or already-running stdio bridge acquires that same file and starts the
    replacement; no operator deletes a lock, and no client-to-client connection lock is introduced." """
    connector = Connector(repo, env_for(home, free_port()))
    connector.initialize()
    assert "result" in connector.call(2, "project_context", {})
    killed = lease(home)
    os.kill(killed["pid"], signal.SIGKILL)
    # The next request comes once the daemon is gone (while the kernel tears the
    # listener down, a connection can still be accepted and then reset: an
    # ambiguous failure the connector rightly answers with an error instead).
    while not refuses(killed["port"]):
        time.sleep(0.01)
    answer = connector.call(3, "project_context", {})
    assert "result" in answer, answer
    replacement = lease(home)
    assert replacement["pid"] != killed["pid"] and replacement["instance_id"] != killed["instance_id"]
    assert connector.close() == 0


def test_an_older_daemon_is_handed_off_and_replaced_by_this_build(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    """Seed: "During an upgrade, a newer connector reads the capability only from the actively locked
    file, requests graceful shutdown from that exact loopback instance, and waits for both its listener
    and lease to disappear." """
    port = free_port()
    older = start_daemon(home, port, build=other_build(tmp_path / "old", version="0.0.1"))
    assert _health(port)["version"] == "0.0.1"
    connector = Connector(repo, env_for(home, port))
    assert "result" in connector.initialize()
    assert older.wait(10) == 0  # it exited on its own, through its shutdown endpoint
    current = _health(port)
    assert current["version"] != "0.0.1" and current["pid"] == lease(home)["pid"]
    assert connector.close() == 0


def test_a_newer_daemon_is_never_downgraded(home: Path, repo: Path, tmp_path: Path) -> None:
    """Seed: "Unknown owners, downgrades, and equal-version incompatibilities fail closed instead of
    starting or terminating a second process." and "The connector never downgrades a newer owner or
    takes over a different common database." """
    port = free_port()
    newer = start_daemon(home, port, build=other_build(tmp_path / "new", version="9.9.9"))
    connector = Connector(repo, env_for(home, port))
    error = _refusal(connector)
    assert error["data"]["code"] == "daemon_conflict" and "newer" in error["message"]
    assert connector.close() == 1
    assert newer.poll() is None and _health(port)["version"] == "9.9.9"


def test_a_daemon_of_this_version_built_from_other_files_is_refused_with_the_stop_hint(
    home: Path,
    repo: Path,
    tmp_path: Path,
) -> None:
    """Seed: "Before forwarding a request, a connector requires the daemon health response to match its
    binary version, schema revision, and common database." """
    port = free_port()
    other = start_daemon(home, port, build=other_build(tmp_path / "edited", note="an edited build"))
    connector = Connector(repo, env_for(home, port))
    error = _refusal(connector)
    assert "built from other files" in error["message"]
    assert "coverage-mcp stop" in error["data"]["suggestion"]
    assert connector.close() == 1
    assert "coverage-mcp stop" in connector.stderr()
    assert other.poll() is None


def test_a_daemon_of_another_home_on_the_port_is_refused(home: Path, repo: Path, tmp_path: Path) -> None:
    """Seed: "Before forwarding a request, a connector requires the daemon health response to match its
    binary version, schema revision, and common database." and "The connector never downgrades a newer
    owner or takes over a different common database." """
    port = free_port()
    elsewhere = tmp_path / "elsewhere"
    try:
        start_daemon(elsewhere, port)
        connector = Connector(repo, env_for(home, port))
        error = _refusal(connector)
        assert "another home" in error["message"]
        assert connector.close() == 1
        assert serve_processes(home) == [] and len(serve_processes(elsewhere)) == 1
    finally:
        stop_all(elsewhere)


def test_a_foreign_program_on_the_port_is_refused_and_left_running(home: Path, repo: Path) -> None:
    """Seed: "Unknown owners, downgrades, and equal-version incompatibilities fail closed instead of
    starting or terminating a second process." """
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        connector = Connector(repo, env_for(home, server.server_address[1]))
        error = _refusal(connector)  # answered at once, not after a wait for a daemon that never comes
        assert "not a coverage-mcp daemon" in error["message"]
        assert connector.close() == 1
        assert thread.is_alive() and serve_processes(home) == []
    finally:
        server.shutdown()
        server.server_close()


def test_a_daemon_that_cannot_start_is_reported_and_every_request_is_still_answered(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    # A home that is a link: the connector can read and log there, the daemon refuses to serve it.
    real = tmp_path / "real-home"
    real.mkdir(mode=0o700)
    home.symlink_to(real)
    connector = Connector(repo, env_for(home, free_port()))
    answer = connector.request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answer["id"] == 1 and answer["error"]["data"]["code"] == "daemon_unreachable"
    assert "symbolic link" in answer["error"]["message"]  # the daemon's own reason
    assert connector.close() == 1
    assert "none could be started" in connector.stderr()


SLEEPER = (
    "import os, time\nwith open('started', 'a') as f:\n    f.write(f'{os.getpid()}\\n')\ntime.sleep(600)\n"
)


def test_a_request_cut_off_by_the_daemons_death_is_answered_interrupted_and_never_repeated(
    home: Path, tmp_path: Path
) -> None:
    """Seed: "Other transport interruptions trigger daemon recovery for later requests without replaying an
    operation whose commit status is ambiguous." A run_test (wait=true) is in flight when its daemon is
    killed: the connector answers it -32003 (delivery unknown), the next request reaches a new daemon, and
    the command ran once."""
    from coverage_core import open_project
    from coverage_core.execution import commands, runs
    from coverage_core.service import Service

    repo = sample_repo(tmp_path / "inventory")
    (repo / "sleeper.py").write_text(SLEEPER)
    with open_project(repo) as project:
        command_id = Service(project).call(
            "register_test_command",
            {
                "name": "sleeper",
                "argv": ["python", "sleeper.py"],
                "artifacts": [{"path": "cov.info", "suite": "unit"}],
            },
        )["data"]["command"]["id"]
        commands.approve(project, command_id, approved_by="tester", via="cli")
    connector = Connector(repo, env_for(home, free_port()))
    started = repo / "started"
    try:
        assert "result" in connector.initialize()
        connector.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "run_test", "arguments": {"command_id": command_id, "wait": True}},
            }
        )
        deadline = time.monotonic() + 60
        while not (started.exists() and started.read_text().endswith("\n")):
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.02)
        killed = lease(home)
        os.kill(killed["pid"], signal.SIGKILL)
        answer = connector.receive()
        assert answer["id"] == 2 and answer["error"]["code"] == -32003, answer
        assert answer["error"]["data"]["details"] == {"delivered": None}
        assert "not repeated" in answer["error"]["data"]["suggestion"]
        while not refuses(killed["port"]):
            time.sleep(0.01)
        later = connector.call(3, "project_context", {})
        assert "result" in later and not later["result"]["isError"], later
        assert lease(home)["instance_id"] != killed["instance_id"]
        assert connector.close() == 0
        stop_all(home)
        with open_project(repo) as project:
            ran = runs.list_runs(project)
        assert [(r["command_id"], r["state"]) for r in ran] == [(command_id, "interrupted")]
        assert len(started.read_text().splitlines()) == 1  # the command was not run again
    finally:
        for pid in started.read_text().split() if started.exists() else ():
            try:
                os.killpg(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_an_older_daemon_whose_process_runs_another_executable_than_its_lease_records_is_not_replaced(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    """Seed: "A newer connector replaces an older daemon only after the health response and actively held
    daemon lease agree on the common database, executable, process, resource, and instance." The older
    daemon's lease records an executable its process is not running (/proc/<pid>/exe): refused, left
    running, and /health still names no path."""
    port = free_port()
    build = other_build(tmp_path / "old", version="0.0.1")
    locks = build / "coverage_core" / "locks.py"
    locks.write_text(locks.read_text().replace('"executable": sys.executable,', '"executable": "/bin/sh",'))
    older = start_daemon(home, port, build=build)
    assert lease(home)["executable"] == "/bin/sh"
    connector = Connector(repo, env_for(home, port))
    error = _refusal(connector)
    assert "executable" in error["message"] and "/bin/sh" in error["message"], error
    assert connector.close() == 1
    assert older.poll() is None and _health(port)["version"] == "0.0.1"
    # The check reads the lease and /proc, never /health: that answer names no executable.
    answer = _health(port)
    assert (
        "executable" not in answer
        and "/bin/sh" not in json.dumps(answer)
        and sys.executable not in json.dumps(answer)
    )


def test_an_older_daemon_without_the_shutdown_endpoint_gets_a_termination_request_and_is_replaced(
    home: Path, repo: Path, tmp_path: Path
) -> None:
    """Seed: "A verified pre-handoff daemon without the endpoint receives a platform-native termination
    request for the recorded PID." An older daemon whose health says it has no handoff: once its lease
    and process agree, it gets SIGTERM, exits, and this build's daemon takes its place."""
    port = free_port()
    build = other_build(tmp_path / "old", version="0.0.1")
    state = build / "coverage_daemon" / "state.py"
    state.write_text(state.read_text().replace('"handoff_supported": True,', '"handoff_supported": False,'))
    older = start_daemon(home, port, build=build)
    assert _health(port)["handoff_supported"] is False
    connector = Connector(repo, env_for(home, port))
    assert "result" in connector.initialize()
    assert older.wait(30) == 0  # its own graceful stop, on the termination request
    current = _health(port)
    assert current["version"] != "0.0.1" and current["pid"] == lease(home)["pid"] != older.pid
    assert connector.close() == 0
    assert "termination request" in connector.stderr()
