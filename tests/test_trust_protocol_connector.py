"""The connector at the trust boundary: pipelined handshakes, the hosts it accepts, where its secrets travel.

Real connector subprocesses against a real daemon they start; one daemon
serves this module.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coverage_daemon.credentials import SOCKET_FILE
from coverage_daemon.identity import is_loopback_host
from coverage_daemon.launcher import Settings, UsageError

from .test_connector_support import (
    INITIALIZE,
    Connector,
    env_for,
    free_port,
    health,
    lease,
    sample_repo,
    stop_all,
)

ACCEPTED_HOSTS = ["127.0.0.1", "127.0.0.2", "127.255.255.254", "localhost", "::1"]
REFUSED_HOSTS = [
    "127.1",
    "127.0.1",
    "0x7f.0.0.1",
    "0177.0.0.1",
    "127.000.0.1",
    "127.0.0.1.evil.com",
    "localhost.",
    "LOCALHOST",
    "evil.com",
    "0.0.0.0",
    "192.168.1.10",
    "::",
    "0:0:0:0:0:0:0:1",
    "::ffff:127.0.0.1",
    "::1%lo",
    "[::1]",
    " 127.0.0.1",
    "127.0.0.1 ",
    "",
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("trust-home")
    yield path
    stop_all(path)


@pytest.fixture(scope="module")
def daemon_env(home: Path) -> dict[str, str]:
    return env_for(home, free_port())


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_repo(tmp_path_factory.mktemp("trust-repo") / "inventory")


def _call(request_id: int, tool: str = "project_context") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": {}},
    }


# -- a pipelined handshake -----------------------------------------------------------------------


def test_initialize_and_tool_calls_written_at_once_are_all_answered_in_the_session_initialize_opens(
    daemon_env: dict[str, str], repo: Path
) -> None:
    for _ in range(5):  # each round is one client that writes its whole opening at once
        connector = Connector(repo, daemon_env)
        burst = [
            INITIALIZE,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            _call(2),
            _call(3),
            {"jsonrpc": "2.0", "id": 4, "method": "tools/list"},
        ]
        connector.send(b"\n".join(json.dumps(message).encode() for message in burst))
        answers = {answer["id"]: answer for answer in (connector.receive() for _ in range(4))}
        assert answers[1]["result"]["protocolVersion"] == "2025-11-25"
        for request_id in (2, 3):
            result = answers[request_id].get("result")
            assert result is not None and result["isError"] is False, answers[request_id]
            assert result["structuredContent"]["context"]["checkout_path"] == str(repo)
        assert "project_context" in {tool["name"] for tool in answers[4]["result"]["tools"]}
        assert connector.close() == 0


def test_the_initialize_answer_reaches_the_client_before_any_answer_that_needed_its_session(
    daemon_env: dict[str, str], repo: Path
) -> None:
    connector = Connector(repo, daemon_env)
    connector.send(json.dumps(INITIALIZE).encode() + b"\n" + json.dumps(_call(2)).encode())
    assert connector.receive()["id"] == 1
    assert connector.receive()["id"] == 2
    assert connector.close() == 0


def test_a_request_cancelled_while_it_waits_for_the_handshake_is_never_answered(
    daemon_env: dict[str, str], repo: Path
) -> None:
    connector = Connector(repo, daemon_env)
    burst = [
        INITIALIZE,
        _call(2),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    connector.send(b"\n".join(json.dumps(message).encode() for message in burst))
    first, second = connector.receive(), connector.receive()
    assert first["id"] == 1 and second["id"] in (2, 3)
    if second["id"] == 2:  # it raced ahead of the cancellation: then it was answered in the session
        assert second["result"]["isError"] is False
        second = connector.receive()
    assert second == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert connector.close() == 0


def test_a_cancellation_naming_an_object_request_id_is_ignored_by_the_connector(
    daemon_env: dict[str, str], repo: Path
) -> None:
    connector = Connector(repo, daemon_env)
    connector.initialize()
    connector.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": [1]}}}
    )
    assert connector.request({"jsonrpc": "2.0", "id": 2, "method": "ping"}) == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {},
    }
    assert connector.close() == 0


# -- the hosts it accepts --------------------------------------------------------------------------


@pytest.mark.parametrize("host", ACCEPTED_HOSTS)
def test_the_connector_accepts_loopback_literals_and_localhost(host: str) -> None:
    assert is_loopback_host(host)
    assert Settings.from_env({"COVERAGE_MCP_HOST": host}).host == host


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_the_connector_refuses_shorthand_names_and_anything_not_loopback(host: str) -> None:
    assert not is_loopback_host(host)
    if host:  # an empty setting means the default
        with pytest.raises(UsageError, match="not a loopback address"):
            Settings.from_env({"COVERAGE_MCP_HOST": host})


def test_a_connector_told_to_use_a_shorthand_host_exits_with_a_usage_error(
    repo: Path, tmp_path: Path
) -> None:
    env = env_for(tmp_path / "home", free_port(), COVERAGE_MCP_HOST="127.1")
    process = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "connect", "--repo", str(repo)],
        env=env,
        input=json.dumps(INITIALIZE).encode() + b"\n",
        capture_output=True,
        timeout=30,
    )
    assert process.returncode == 2 and b"127.1" in process.stderr and process.stdout == b""
    assert not (tmp_path / "home" / "daemon.lock").exists()  # nothing was started


# -- where the secrets travel ----------------------------------------------------------------------


class Impostor(http.server.ThreadingHTTPServer):
    """A TCP listener that answers /health like the real daemon and writes down every request it gets."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        super().__init__(("127.0.0.1", 0), _ImpostorHandler)


class _ImpostorHandler(http.server.BaseHTTPRequestHandler):
    server: Impostor

    def _record(self) -> None:
        self.server.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        if self.command == "GET" and self.path == "/health":
            body = json.dumps({**self.server.document, "port": self.server.server_address[1]}).encode()
            self.send_response(200)
        else:
            body = json.dumps(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "impostor"}}
            ).encode()
            self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _record

    def log_message(self, *args: Any) -> None:
        pass


def test_the_connector_sends_its_token_only_over_the_daemons_socket_never_to_a_tcp_listener(
    home: Path, daemon_env: dict[str, str], repo: Path
) -> None:
    # The module's daemon runs; another listener answers /health on the configured port just as it would.
    warm = Connector(repo, daemon_env)
    warm.initialize()
    assert warm.close() == 0
    assert (home / SOCKET_FILE).exists()
    document = health(lease(home)["port"])
    assert document is not None
    impostor = Impostor(document)
    threading.Thread(target=impostor.serve_forever, daemon=True).start()
    try:
        env = {**daemon_env, "COVERAGE_MCP_PORT": str(impostor.server_address[1])}
        connector = Connector(repo, env)
        assert connector.initialize()["result"]["serverInfo"]["name"] == "coverage-mcp"
        answer = connector.call(2, "project_context", {})
        assert answer["result"]["structuredContent"]["context"]["checkout_path"] == str(repo)
        assert connector.close() == 0
    finally:
        impostor.shutdown()
        impostor.server_close()
    assert impostor.seen, "the connector never asked the configured port"
    assert {(method, path) for method, path, _ in impostor.seen} == {("GET", "/health")}
    assert not any(
        "authorization" in headers or "x-coverage-mcp-capability" in headers
        for _, _, headers in impostor.seen
    )
