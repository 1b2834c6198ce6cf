"""The official MCP SDK client against a real daemon over HTTP, in both protocol eras."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from coverage_core.operations.table import OPERATIONS, TOOLS
from coverage_core.output_schemas import published

from .daemons import Running, sdk_client
from .test_daemon_rest import register

ERA = {"auto": "2026-07-28", "legacy": "2025-11-25"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_client_connects_lists_imports_and_reviews(
    daemon: Running, sample_repo: Path, mode: str
) -> None:
    pid = await register(daemon, sample_repo)
    async with sdk_client(daemon, f"{daemon.url}/p/{pid}/mcp", mode) as client:
        # the era proves the discover probe was answered (a dropped one falls back to legacy after 10 s)
        assert client.protocol_version == ERA[mode]
        assert client.server_info.name == "coverage-mcp"
        assert "project_context first" in client.instructions and "stale" in client.instructions

        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == list(TOOLS)
        for tool in listed.tools:
            envelope, error = tool.output_schema["oneOf"]
            assert envelope == published(OPERATIONS[tool.name].output_schema) and error["required"] == [
                "error"
            ]
            assert bool(tool.annotations.read_only_hint) == OPERATIONS[tool.name].read_only  # default false
        assert [r.uri for r in (await client.list_resources()).resources] == ["coverage://context"]
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["coverage://snapshot/{snapshot_id}/summary"]

        first = await client.call_tool(
            "coverage_import", {"report_path": "step3.coverage.lcov", "suite": "unit"}
        )
        assert not first.is_error and first.structured_content["data"]["duplicate"] is False
        assert json.loads(first.content[0].text) == first.structured_content
        again = await client.call_tool(
            "coverage_import", {"report_path": "step3.coverage.lcov", "suite": "unit"}
        )
        assert not again.is_error and again.structured_content["data"]["duplicate"] is True
        snapshot_id = first.structured_content["data"]["snapshot"]["snapshot_id"]

        context = await client.call_tool("project_context", {})
        assert not context.is_error
        assert context.structured_content["context"]["project_id"] == pid
        assert context.structured_content["data"]["suites"][0]["snapshot_id"] == snapshot_id
        for task in ("insight", "source", "tests", "history", "all"):
            answer = await client.call_tool(
                "coverage_review", {"task": task, "measurement": {"suite": "unit"}}
            )
            assert not answer.is_error, (task, answer.content[0].text)
            assert answer.structured_content["data"]["claim_status"] in {"supported", "limited"}

        resource = await client.read_resource("coverage://context")
        assert json.loads(resource.contents[0].text)["context"]["project_id"] == pid
        summary = await client.read_resource(f"coverage://snapshot/{snapshot_id}/summary")
        assert json.loads(summary.contents[0].text)["data"]["snapshot"]["totals"]["lines"]["found"] > 0
        with pytest.raises(MCPError):
            await client.read_resource("coverage://snapshot/snap-0000/summary")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_client_mistakes_are_tool_errors_and_an_unknown_tool_is_a_protocol_error(
    daemon: Running, sample_repo: Path, mode: str
) -> None:
    pid = await register(daemon, sample_repo)
    async with sdk_client(daemon, f"{daemon.url}/p/{pid}/mcp", mode) as client:
        bad = await client.call_tool("coverage_review", {"task": "insight", "limits": {"max_words": "many"}})
        assert bad.is_error
        assert bad.structured_content["error"]["code"] == "invalid_argument"
        assert bad.content[0].text.startswith("invalid_argument: ") and " Suggestion: " in bad.content[0].text
        unknown_arg = await client.call_tool("project_context", {"colour": "blue"})
        assert unknown_arg.is_error and "colour" in unknown_arg.content[0].text
        outside = await client.call_tool("coverage_import", {"report_path": "/etc/passwd"})
        assert outside.is_error and outside.structured_content["error"]["code"] == "path_outside_checkout"
        with pytest.raises(MCPError) as caught:
            await client.call_tool("no_such_tool", {})
        assert caught.value.code == -32602 and "no_such_tool" in caught.value.message


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_without_a_repository_a_tool_says_how_to_select_one(daemon: Running, mode: str) -> None:
    async with sdk_client(daemon, f"{daemon.url}/mcp", mode) as client:
        assert len((await client.list_tools()).tools) == len(TOOLS)
        answer = await client.call_tool("project_context", {})
        assert answer.is_error and answer.structured_content["error"]["code"] == "not_a_repository"
        assert "x-coverage-mcp-repo" in answer.structured_content["error"]["suggestion"]


async def test_the_repository_header_selects_the_checkout_without_a_project_id(
    daemon: Running, sample_repo: Path
) -> None:
    headers = {"x-coverage-mcp-repo": str(sample_repo), **daemon.auth}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(f"{daemon.url}/mcp", http_client=http), mode="legacy") as client,
    ):
        answer = await client.call_tool("project_context", {})
        assert not answer.is_error
        assert answer.structured_content["context"]["checkout_path"] == str(sample_repo.resolve())
        assert answer.structured_content["data"]["claim_status"] == "not_measured"
