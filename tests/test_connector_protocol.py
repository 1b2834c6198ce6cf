"""The stdio connector speaks MCP for a client: the official SDK client, raw lines, start-up cost.

One daemon serves this whole module (the first connector starts it); each
test talks to it through fresh connector processes, as MCP clients do.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from .test_connector_support import Connector, env_for, free_port, sample_repo, stop_all

MODERN = "2026-07-28"


@pytest.fixture(scope="module")
def daemon_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    home = tmp_path_factory.mktemp("connector-home")
    yield env_for(home, free_port())
    stop_all(home)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sample_repo(tmp_path_factory.mktemp("connector-repo") / "inventory")


def _params(era: str, **params: object) -> dict[str, object]:
    """Request params as the era frames them: plain after a handshake, or carrying the stateless ``_meta``."""
    if era == "handshake":
        return params
    return {
        **params,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        },
    }


def _modern(method: str, request_id: int, **params: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": _params("stateless", **params)}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_sdk_client_lists_the_tools_and_calls_them_through_the_connector(
    mode: str,
    daemon_env: dict[str, str],
    repo: Path,
) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "coverage_cli", "connect", "--repo", str(repo)],
        env=daemon_env,
        cwd=str(repo),
    )
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        # The modern era proves the discover probe was answered (an unanswered one falls back to the legacy
        # era after 10 s); the start's speed is measured in benchmarks/mcp.py.
        assert client.protocol_version == (MODERN if mode == "auto" else "2025-11-25")
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"project_context", "coverage_review", "coverage_import"} <= tools

        imported = await client.call_tool("coverage_import", {"report_path": "coverage.json"})
        assert not imported.is_error, imported.content
        snapshot = imported.structured_content["data"]["snapshot"]
        assert snapshot["snapshot_id"].startswith("snap-") and snapshot["format"] == "coveragepy"

        context = await client.call_tool("project_context", {})
        assert not context.is_error, context.content
        assert context.structured_content["context"]["checkout_path"] == str(repo)
        suites = context.structured_content["data"]["suites"]
        assert snapshot["snapshot_id"] in {s["snapshot_id"] for s in suites}

        mistake = await client.call_tool("coverage_review", {"task": "no-such-task"})
        assert mistake.is_error


def test_a_line_that_is_not_json_is_answered_with_a_parse_error_and_the_session_goes_on(
    daemon_env: dict[str, str],
    repo: Path,
) -> None:
    connector = Connector(repo, daemon_env)
    connector.initialize()
    connector.send(b'{"jsonrpc": "2.0", "id": 7, "method": ')
    error = connector.receive()
    assert error["id"] is None and error["error"]["code"] == -32700
    connector.send(b"[1, 2]")
    assert connector.receive()["error"]["code"] == -32600
    answer = connector.call(8, "project_context", {})
    assert answer["id"] == 8 and "result" in answer
    assert connector.close() == 0


def test_every_answer_is_one_compact_line_and_stdout_carries_nothing_else(
    daemon_env: dict[str, str],
    repo: Path,
) -> None:
    connector = Connector(repo, daemon_env)
    connector.initialize()
    for request_id in (2, 3):
        connector.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
    connector.close()
    assert connector.process.stdout is not None
    rest = connector.process.stdout.read().decode()
    lines = rest.splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == [2, 3]
    assert all(
        line == json.dumps(json.loads(line), separators=(",", ":"), ensure_ascii=False) for line in lines
    )


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_a_slow_call_holds_back_no_other_message_and_once_cancelled_is_never_answered(
    era: str,
    daemon_env: dict[str, str],
    repo: Path,
) -> None:
    connector = Connector(repo, daemon_env)
    if era == "handshake":
        connector.initialize()
    big = _slow_report(repo, era)
    connector.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": _params(era, name="coverage_import", arguments={"report_path": big, "suite": era}),
        }
    )
    quick = connector.request(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": _params(era, name="project_context", arguments={}),
        }
    )
    assert quick["id"] == 3 and era not in {
        s["suite"] for s in quick["result"]["structuredContent"]["data"]["suites"]
    }
    connector.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    assert (
        connector.request({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": _params(era)})["id"]
        == 4
    )
    # Once the cancelled import's work has ended (stored or not), its HTTP answer has come and gone: the
    # next lines must not be it. A write waits for that: the store's write gate opens when the import's
    # worker thread ends, never before (an event, not a wait of some seconds).
    tiny = repo / f"{era}-after.lcov"
    tiny.write_text("SF:inventory/pricing.py\nDA:1,1\nend_of_record\n")
    after = connector.request(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": _params(
                era, name="coverage_import", arguments={"report_path": tiny.name, "suite": f"{era}-after"}
            ),
        }
    )
    assert after["id"] == 5 and not after["result"].get("isError"), after
    assert (
        connector.request({"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": _params(era)})["id"]
        == 6
    )
    assert connector.close() == 0


def _slow_report(repo: Path, name: str) -> str:
    """An LCOV report of 1.5 million lines: an import that takes a good fraction of a second."""
    path = repo / f"{name}.lcov"
    record = "".join(f"DA:{n},{n % 3}\n" for n in range(1, 151))
    with path.open("w") as out:
        for i in range(10_000):
            out.write(f"SF:gen/f{i:05d}.c\n{record}end_of_record\n")
    return path.name


def test_a_stateless_request_reaches_the_daemon_with_its_protocol_version_and_no_session(
    daemon_env: dict[str, str],
    repo: Path,
) -> None:
    connector = Connector(repo, daemon_env)
    discovered = connector.request(_modern("server/discover", 1))
    assert MODERN in discovered["result"]["supportedVersions"]
    listed = connector.request(_modern("tools/list", 2))
    assert "project_context" in {tool["name"] for tool in listed["result"]["tools"]}
    context = connector.request(_modern("tools/call", 3, name="project_context", arguments={}))
    assert context["result"]["structuredContent"]["context"]["checkout_path"] == str(repo)
    assert connector.close() == 0


def test_without_repo_the_connector_serves_the_directory_it_was_started_in(
    daemon_env: dict[str, str],
    repo: Path,
) -> None:
    """Seed: "A stdio process selects one repository and forwards newline-delimited JSON-RPC to the daemon
    with a bounded loopback HTTP request." """
    process = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "connect"],
        cwd=repo / "inventory",
        env=daemon_env,
        input=json.dumps(_modern("tools/call", 1, name="project_context", arguments={})).encode() + b"\n",
        capture_output=True,
        timeout=30,
    )
    answer = json.loads(process.stdout)
    assert answer["result"]["structuredContent"]["context"]["checkout_path"] == str(repo)


def test_a_repo_that_is_not_a_directory_is_a_usage_error(daemon_env: dict[str, str], tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "connect", "--repo", str(tmp_path / "nope")],
        env=daemon_env,
        capture_output=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert process.returncode == 2
    assert b"not a directory" in process.stderr and process.stdout == b""


def test_the_connector_exits_when_its_input_closes_even_with_a_call_in_flight(
    daemon_env: dict[str, str],
    repo: Path,
) -> None:
    connector = Connector(repo, daemon_env)
    connector.initialize()
    connector.call(2, "project_context", {})
    connector.send(
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "coverage_review", "arguments": {"task": "all"}},
        }
    )
    # A generous deadline: how fast it exits (well under a second) is measured in benchmarks/bounds.py.
    assert connector.close(timeout=60) == 0


def test_the_connector_loads_only_the_standard_library_and_its_own_modules(
    daemon_env: dict[str, str],
    repo: Path,
) -> None:
    baseline = _imported([sys.executable, "-X", "importtime", "-c", "pass"], b"")
    connector = [sys.executable, "-X", "importtime", "-m", "coverage_cli", "connect", "--repo", str(repo)]
    request = json.dumps(_modern("tools/list", 1)).encode() + b"\n"
    loaded = _imported(connector, request, env=daemon_env) - baseline
    assert "coverage_daemon.connector" in loaded
    foreign = sorted(
        m
        for m in loaded
        if m.split(".")[0] not in sys.stdlib_module_names
        and m.split(".")[0] not in ("coverage_daemon", "coverage_cli", "coverage_core")
    )
    assert foreign == []
    # Of coverage_core, only its stdlib-only modules: the error type, the JSON depth check, the no-follow file
    # opener (the daemon log it starts with), the settings table, the version.
    core = {m for m in loaded if m.split(".")[0] == "coverage_core"}
    assert core <= {
        "coverage_core",
        "coverage_core.errors",
        "coverage_core.nesting",
        "coverage_core.safefs",
        "coverage_core.settings_table",
        "coverage_core.version",
    }
    assert not {"coverage_cli.main", "coverage_daemon.app", "coverage_daemon.mcp"} & loaded


def _imported(argv: list[str], stdin: bytes, env: dict[str, str] | None = None) -> set[str]:
    process = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=30)
    assert process.returncode == 0, process.stderr.decode()[-2000:]
    if stdin:
        assert json.loads(process.stdout)["id"] == 1
    return {
        line.split("|")[-1].strip()
        for line in process.stderr.decode().splitlines()
        if line.startswith("import time:") and "cumulative" not in line
    }
