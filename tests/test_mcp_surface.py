"""The MCP surface: derived from the operation table, small, and valid for every protocol version the SDK knows."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import aiohttp
import mcp_types
import pytest
from jsonschema import Draft202012Validator
from mcp_types import jsonrpc
from mcp_types import methods as sdk_methods
from mcp_types import version as sdk_version

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.operations.table import OPERATIONS, TOOLS, listed_input
from coverage_core.output_schemas import published
from coverage_core.validation import Validator
from coverage_daemon import mcp
from coverage_daemon.identity import REPO_HEADER

from .daemons import Running, post_mcp, sdk_client
from .test_mcp_http import META, Session, modern

# Arguments that reach each operation's handler; a new operation without an
# entry here fails test_every_listed_tool_dispatches_and_every_operation_is_listed.
SAMPLE_ARGUMENTS: dict[str, dict[str, Any]] = {
    "project_context": {},
    "coverage_review": {"task": "insight"},
    "coverage_import": {"report_path": "step3.coverage.lcov"},
    "register_test_command": {
        "name": "listed",
        "argv": [sys.executable, "-c", "print(1)"],
        "artifacts": [{"path": "listed.json", "suite": "unit"}],
    },
    # Filled in by the test: an approved command and its finished run (approval is a person's act).
    "run_test": {"command_id": None, "idempotency_key": "listed", "wait": True},
    "run_review": {"run_id": None},
    "cancel_run": {"run_id": None},
}

# What tools/list costs every agent on every connection, measured as the official SDK client receives it
# (tests/test_mcp_surface.py::test_tools_list_fits_its_budgets_as_the_sdk_client_receives_it). Later tools
# must fit in these too: on 2026-12-01 the seven tools took 12,889 bytes in all and 7,505 shown to a model.
TOOLS_LIST_BUDGET_BYTES = 14 * 1024
# What a model is shown of each tool: its name, description and input schema.
MODEL_VISIBLE_BUDGET_BYTES = 8 * 1024


def compact_size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def test_protocol_constants_are_the_sdks() -> None:
    assert mcp.HANDSHAKE_VERSIONS == sdk_version.HANDSHAKE_PROTOCOL_VERSIONS
    assert mcp.MODERN_VERSIONS == sdk_version.MODERN_PROTOCOL_VERSIONS
    assert mcp.LATEST_HANDSHAKE == sdk_version.LATEST_HANDSHAKE_VERSION
    assert mcp.DEFAULT_NEGOTIATED == mcp_types.DEFAULT_NEGOTIATED_VERSION
    assert (mcp.META_PROTOCOL_VERSION, mcp.META_CLIENT_CAPABILITIES, mcp.META_SERVER_INFO) == (
        mcp_types.PROTOCOL_VERSION_META_KEY,
        mcp_types.CLIENT_CAPABILITIES_META_KEY,
        mcp_types.SERVER_INFO_META_KEY,
    )
    assert (
        mcp.PARSE_ERROR,
        mcp.INVALID_REQUEST,
        mcp.METHOD_NOT_FOUND,
        mcp.INVALID_PARAMS,
        mcp.INTERNAL_ERROR,
    ) == (
        jsonrpc.PARSE_ERROR,
        jsonrpc.INVALID_REQUEST,
        jsonrpc.METHOD_NOT_FOUND,
        jsonrpc.INVALID_PARAMS,
        jsonrpc.INTERNAL_ERROR,
    )
    assert (mcp.HEADER_MISMATCH, mcp.MISSING_CLIENT_CAPABILITY, mcp.UNSUPPORTED_VERSION) == (
        jsonrpc.HEADER_MISMATCH,
        jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY,
        jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
    )
    assert mcp.CACHEABLE_METHODS == {name for name in mcp.METHODS if name in sdk_methods.CACHEABLE_METHODS}


def test_tools_list_is_derived_and_self_contained() -> None:
    tools = mcp.tools()
    assert [tool["name"] for tool in tools] == list(TOOLS)
    for tool in tools:
        op = OPERATIONS[tool["name"]]
        assert re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", tool["name"])
        assert (
            tool["inputSchema"] == listed_input(op.input_schema) and tool["inputSchema"]["type"] == "object"
        )
        assert tool["outputSchema"] == {
            "type": "object",
            "oneOf": [published(op.output_schema), mcp.LISTED_ERROR_SCHEMA],
        }
        Draft202012Validator.check_schema(tool["outputSchema"])
        Draft202012Validator.check_schema(tool["inputSchema"])
        assert "$ref" not in json.dumps(tool)
        # A hint is listed where it differs from the spec's default; with the defaults, every hint is the table's.
        hints = {**mcp.HINT_DEFAULTS, **tool["annotations"]}
        assert hints == {
            "title": op.title,
            "readOnlyHint": op.read_only,
            "destructiveHint": op.destructive,
            "idempotentHint": op.idempotent,
            "openWorldHint": op.open_world,
        }


def test_listed_output_schemas_describe_what_they_list_with_no_bare_object_or_array() -> None:
    def leaves(schema: Any, path: str) -> Any:
        if isinstance(schema, dict):
            if schema.get("type") in ("object", "array") and set(schema) == {"type"}:
                yield path
            if "$comment" in schema:
                yield path + " ($comment)"
            for key, value in schema.items():
                yield from leaves(value, f"{path}.{key}")
        elif isinstance(schema, list):
            for number, value in enumerate(schema):
                yield from leaves(value, f"{path}[{number}]")

    for tool in mcp.tools():
        assert list(leaves(tool["outputSchema"]["oneOf"][0], tool["name"])) == []


def test_a_listed_input_schema_accepts_exactly_what_the_service_accepts_apart_from_length_bounds() -> None:
    review = listed_input(OPERATIONS["coverage_review"].input_schema)
    validator = Draft202012Validator(review)
    assert not validator.is_valid({"task": "bogus"})
    assert not validator.is_valid({"task": "insight", "limits": {"max_words": 1}})
    assert not validator.is_valid({"task": "insight", "measurement": {"suite": "a", "snapshot_id": "snap-1"}})
    assert validator.is_valid({"task": "source", "file": "x" * 5000})  # the service refuses it, by name
    with pytest.raises(CoverageError) as refused:
        Validator(OPERATIONS["coverage_review"].input_schema).check(
            {"task": "source", "file": "x" * 5000}, what="coverage_review"
        )
    assert refused.value.code is ErrorCode.INVALID_ARGUMENT and "file" in refused.value.message


async def test_tools_list_fits_its_budgets_as_the_sdk_client_receives_it(
    daemon: Running, sample_repo: Path
) -> None:
    async with sdk_client(daemon, f"{daemon.url}/mcp", "legacy", **{REPO_HEADER: str(sample_repo)}) as client:
        listed = await client.list_tools()
    received = listed.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert [tool["name"] for tool in received["tools"]] == list(TOOLS)
    # Received as listed: the SDK dropped and added nothing.
    assert received["tools"] == json.loads(json.dumps(mcp.tools()))
    total = compact_size(received)
    shown = compact_size(
        [{key: tool[key] for key in ("name", "description", "inputSchema")} for tool in received["tools"]]
    )
    assert total <= TOOLS_LIST_BUDGET_BYTES, f"tools/list is {total} bytes"
    assert shown <= MODEL_VISIBLE_BUDGET_BYTES, f"a model is shown {shown} bytes"
    for tool in received["tools"]:  # every tool says what it does, and what its arguments are
        assert len(tool["description"]) >= 80, tool["name"]


async def test_every_listed_tool_dispatches_and_every_operation_is_listed(
    daemon: Running, sample_repo: Path
) -> None:
    assert set(SAMPLE_ARGUMENTS) == set(TOOLS)
    samples = await _with_a_finished_run(daemon, sample_repo)
    async with aiohttp.ClientSession(headers=daemon.auth) as http:
        session = Session(http, daemon.url + "/mcp", repo=sample_repo)
        await session.open()
        _, _, listed = await session.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        names = [tool["name"] for tool in listed["result"]["tools"]]
        assert names == list(TOOLS)
        for number, name in enumerate(names, start=2):
            _, _, body = await session.send(
                {
                    "jsonrpc": "2.0",
                    "id": number,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": samples[name]},
                }
            )
            assert body["result"]["isError"] is False, (name, body["result"]["content"][0]["text"])
        _, _, body = await session.send(
            {"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {"name": "unlisted_tool"}}
        )
        assert body["error"]["code"] == -32602


async def _with_a_finished_run(daemon: Running, repo: Path) -> dict[str, dict[str, Any]]:
    """SAMPLE_ARGUMENTS with an approved command's id and its finished run's id filled in."""
    from coverage_core.execution import commands
    from coverage_core.service import Service
    from coverage_daemon.projects import Target

    _, project = await daemon.daemon.projects.resolve(Target(path=str(repo)))
    service = Service(project)
    command = {
        **SAMPLE_ARGUMENTS["register_test_command"],
        "name": "approved",
        "argv": [sys.executable, "-c", "print(2)"],
    }
    command_id = (await asyncio.to_thread(service.call, "register_test_command", command))["data"]["command"][
        "id"
    ]
    await asyncio.to_thread(commands.approve, project, command_id, approved_by="tester", via="cli")
    run_test = {**SAMPLE_ARGUMENTS["run_test"], "command_id": command_id}
    run = (await asyncio.to_thread(service.call, "run_test", run_test))["data"]["run"]
    return {
        **SAMPLE_ARGUMENTS,
        "run_test": run_test,
        "run_review": {"run_id": run["id"]},
        "cancel_run": {"run_id": run["id"]},
    }


async def test_every_result_is_valid_for_every_handshake_version_as_sent(
    daemon: Running, sample_repo: Path
) -> None:
    async with aiohttp.ClientSession(headers=daemon.auth) as http:
        for version in mcp.HANDSHAKE_VERSIONS:
            session = Session(http, daemon.url + "/mcp", repo=sample_repo)
            result = await session.open(version)
            assert_valid("initialize", version, result)
            for number, (method, params) in enumerate(_requests(), start=1):
                _, _, body = await session.send(
                    {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
                )
                assert_valid(method, version, body["result"])


async def test_every_result_is_valid_for_the_stateless_version_as_sent(
    daemon: Running, sample_repo: Path
) -> None:
    async with aiohttp.ClientSession(headers=daemon.auth) as http:
        for number, (method, params) in enumerate([("server/discover", {}), *_requests()], start=1):
            message, headers = modern(method, params, request_id=number)
            status, _, body = await post_mcp(
                http, daemon.url + "/mcp", message, headers=headers, repo=sample_repo
            )
            assert status == 200, body
            assert_valid(method, mcp.MODERN_VERSIONS[0], body["result"])


def _requests() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("tools/list", {}),
        ("tools/call", {"name": "project_context", "arguments": {}}),
        (
            "tools/call",
            {"name": "coverage_review", "arguments": {"task": "insight", "limits": {"max_words": "x"}}},
        ),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/read", {"uri": "coverage://context"}),
    ]


def assert_valid(method: str, version: str, result: dict[str, Any]) -> None:
    """The SDK's schema for (method, version) accepts the result and drops nothing from it."""
    assert sdk_methods.serialize_server_result(method, version, result) == result


def test_the_stateless_envelope_check_names_what_is_missing() -> None:
    with pytest.raises(mcp.RpcError) as caught:
        mcp.envelope_version({"_meta": {mcp.META_PROTOCOL_VERSION: "2026-07-28"}})
    assert caught.value.code == -32602 and mcp.META_CLIENT_CAPABILITIES in caught.value.message
    assert mcp.envelope_version({"_meta": META}) == "2026-07-28"
    with pytest.raises(mcp.RpcError) as caught:
        mcp.require_modern("2025-11-25")
    assert caught.value.code == -32022 and caught.value.data["requested"] == "2025-11-25"
