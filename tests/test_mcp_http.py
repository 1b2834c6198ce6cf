"""The MCP endpoint at the HTTP level: every status MCP.md 3.2 names, sessions, both eras, cancellation."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from coverage_core.config import Settings
from coverage_daemon.credentials import bearer, client_token
from coverage_daemon.projects import Target

from .daemons import ACCEPT, Running, in_process, post_mcp

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}


def initialize(version: str, request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


def modern(
    method: str, params: dict[str, Any] | None = None, request_id: int | str = 1
) -> tuple[dict[str, Any], dict[str, str]]:
    """A stateless request and the routing headers a conforming client sends with it."""
    params = {**(params or {}), "_meta": META}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method in ("tools/call", "resources/read"):
        headers["Mcp-Name"] = params.get("name") or params.get("uri")
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, headers


class Session:
    """A handshake-era session opened by a raw initialize."""

    def __init__(self, http: aiohttp.ClientSession, url: str, repo: Path | None = None) -> None:
        self.http, self.url, self.repo = http, url, repo
        self.id = ""

    async def open(self, version: str = "2025-11-25") -> dict[str, Any]:
        status, headers, answer = await post_mcp(self.http, self.url, initialize(version), repo=self.repo)
        assert status == 200, answer
        self.id = headers["Mcp-Session-Id"]
        return answer["result"]

    async def send(self, message: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        return await post_mcp(
            self.http,
            self.url,
            message,
            repo=self.repo,
            headers={"Mcp-Session-Id": self.id, "MCP-Protocol-Version": "2025-11-25"},
        )


@pytest.fixture
async def http(isolated_home: Path) -> Any:
    """A session with the home's client token, as a configured HTTP MCP client sends it."""
    async with aiohttp.ClientSession(headers=bearer(client_token(isolated_home) or "")) as session:
        yield session


async def test_an_unsupported_requested_version_gets_the_counter_offer_and_supported_ones_are_echoed(
    daemon: Running, http: aiohttp.ClientSession
) -> None:
    for requested, negotiated in (
        ("2099-01-01", "2025-11-25"),
        ("2024-11-05", "2024-11-05"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
    ):
        status, headers, answer = await post_mcp(http, daemon.url + "/mcp", initialize(requested))
        assert status == 200 and answer["result"]["protocolVersion"] == negotiated
        assert len(headers["Mcp-Session-Id"]) >= 32 and "resultType" not in answer["result"]
        assert answer["result"]["capabilities"]["resources"] == {"subscribe": False, "listChanged": False}


async def test_the_transport_statuses(daemon: Running, http: aiohttp.ClientSession) -> None:
    url = daemon.url + "/mcp"
    port = daemon.daemon.port
    status, _, body = await post_mcp(
        http, url, initialize("2025-11-25"), headers={"Origin": "http://evil.example"}
    )
    assert status == 403 and body["id"] is None and body["error"]["code"] == -32600
    status, _, _ = await post_mcp(
        http, url, initialize("2025-11-25"), headers={"Host": f"rebound.example:{port}"}
    )
    assert status == 403
    async with http.get(url, headers={"Accept": ACCEPT}) as response:
        assert response.status == 405 and "POST" in response.headers["Allow"]
    status, _, _ = await post_mcp(
        http, url, initialize("2025-11-25"), headers={"Accept": "text/event-stream"}
    )
    assert status == 406
    status, _, _ = await post_mcp(http, url, initialize("2025-11-25"), headers={"Content-Type": "text/plain"})
    assert status == 415
    status, _, body = await post_mcp(http, url, None, raw=b'{"jsonrpc": "2.0", "id": 1, "method"')
    assert status == 400 and body["error"]["code"] == -32700 and body["id"] is None
    status, _, body = await post_mcp(http, url, [initialize("2025-11-25")])
    assert status == 400 and body["error"]["code"] == -32600
    status, _, body = await post_mcp(
        http,
        url,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        headers={"MCP-Protocol-Version": "2099-01-01"},
    )
    assert status == 400 and body["error"]["code"] == -32022 and body["id"] == 2
    assert set(body["error"]["data"]["supported"]) == {
        MODERN,
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
    }


async def test_a_body_over_the_limit_is_413(isolated_home: Path, http: aiohttp.ClientSession) -> None:
    async with in_process(Settings.from_env(port=0, http_max_body_bytes=1024)) as d:
        message = initialize("2025-11-25")
        message["params"]["clientInfo"]["name"] = "x" * 2000
        status, _, body = await post_mcp(http, d.url + "/mcp", message)
        assert status == 413 and body["error"]["code"] == -32600


async def test_handshake_sessions_are_required_checked_and_ended(
    daemon: Running, http: aiohttp.ClientSession
) -> None:
    url = daemon.url + "/mcp"
    listing = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    status, _, body = await post_mcp(http, url, listing)
    assert status == 400 and "session" in body["error"]["message"].lower()
    status, _, body = await post_mcp(http, url, listing, headers={"Mcp-Session-Id": "f" * 32})
    assert status == 404 and body["id"] == 5
    session = Session(http, url)
    await session.open()
    status, _, body = await session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert status == 202 and body is None
    status, headers, body = await session.send(listing)
    assert status == 200 and headers["Mcp-Session-Id"] == session.id and len(body["result"]["tools"]) >= 3
    status, _, body = await session.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
    assert (status, body["result"]) == (200, {})
    status, _, body = await session.send({"jsonrpc": "2.0", "id": 7, "method": "prompts/list"})
    assert status == 200 and body["error"]["code"] == -32601
    status, _, body = await session.send({"jsonrpc": "2.0", "id": 8, "method": "server/discover"})
    assert status == 200 and body["error"]["code"] == -32601
    status, _, _ = await session.send({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert status == 202
    async with http.delete(url, headers={"Mcp-Session-Id": session.id}) as response:
        assert response.status == 204
    status, _, _ = await session.send(listing)
    assert status == 404


async def test_a_stateless_discover_and_tool_call_need_no_session(
    daemon: Running, http: aiohttp.ClientSession, sample_repo: Path
) -> None:
    url = daemon.url + "/mcp"
    message, headers = modern("server/discover")
    status, response_headers, body = await post_mcp(http, url, message, headers=headers)
    assert status == 200 and "Mcp-Session-Id" not in response_headers
    result = body["result"]
    assert result["supportedVersions"][0] == MODERN and "2025-11-25" in result["supportedVersions"]
    assert (result["resultType"], result["cacheScope"]) == ("complete", "private") and result["ttlMs"] >= 0
    assert "project_context first" in result["instructions"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "coverage-mcp"

    message, headers = modern("tools/call", {"name": "project_context", "arguments": {}}, request_id="ctx")
    status, _, body = await post_mcp(http, url, message, headers=headers, repo=sample_repo)
    assert status == 200 and body["id"] == "ctx"
    assert body["result"]["resultType"] == "complete" and body["result"]["isError"] is False
    assert body["result"]["structuredContent"]["context"]["checkout_path"] == str(sample_repo.resolve())

    message, headers = modern("tools/call", {"name": "nope", "arguments": {}})
    status, _, body = await post_mcp(http, url, message, headers=headers)
    assert status == 400 and body["error"]["code"] == -32602
    for method in ("initialize", "ping", "logging/setLevel"):
        message, headers = modern(method)
        status, _, body = await post_mcp(http, url, message, headers=headers)
        assert status == 404 and body["error"]["code"] == -32601, method
    status, _, body = await post_mcp(
        http,
        url,
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        headers={"MCP-Protocol-Version": MODERN},
    )
    assert status == 202 and body is None


async def test_a_stateless_request_whose_headers_disagree_with_its_body_is_refused(
    daemon: Running, http: aiohttp.ClientSession
) -> None:
    url = daemon.url + "/mcp"
    message, headers = modern("tools/call", {"name": "project_context", "arguments": {}})

    async def refused(msg: dict[str, Any], sent: dict[str, str], code: int) -> None:
        status, _, body = await post_mcp(http, url, msg, headers=sent)
        assert status == 400 and body["error"]["code"] == code and body["id"] == msg["id"], (sent, body)

    await refused(message, {k: v for k, v in headers.items() if k != "Mcp-Method"}, -32020)
    await refused(message, {**headers, "Mcp-Method": "tools/list"}, -32020)
    await refused(message, {**headers, "Mcp-Name": "coverage_import"}, -32020)
    await refused(message, {k: v for k, v in headers.items() if k != "MCP-Protocol-Version"}, -32020)
    no_meta = {**message, "params": {"name": "project_context"}}
    await refused(no_meta, headers, -32602)
    other_version = {
        **message,
        "params": {
            **message["params"],
            "_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"},
        },
    }
    await refused(other_version, headers, -32020)
    named = {**message, "params": {**message["params"], "name": "pröject"}}
    status, _, body = await post_mcp(
        http, url, named, headers={**headers, "Mcp-Name": "=?base64?cHLDtmplY3Q=?="}
    )
    assert status == 400 and body["error"]["code"] == -32602  # the names agree; the tool does not exist


async def test_cancelling_a_call_answers_it_with_request_cancelled_and_the_call_never_runs(
    daemon: Running, http: aiohttp.ClientSession, sample_repo: Path
) -> None:
    handle, _ = await daemon.daemon.projects.resolve(Target(path=str(sample_repo)))
    session = Session(http, daemon.url + "/mcp", repo=sample_repo)
    await session.open()
    call = {
        "jsonrpc": "2.0",
        "id": 41,
        "method": "tools/call",
        "params": {"name": "coverage_import", "arguments": {"report_path": "step3.coverage.lcov"}},
    }
    async with handle.write_gate:  # the import waits here, so it is surely in flight
        pending = asyncio.create_task(session.send(call))
        await asyncio.sleep(0.2)
        assert not pending.done()
        status, _, _ = await session.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 41, "reason": "user"},
            }
        )
        assert status == 202
        status, _, body = await asyncio.wait_for(pending, 5)
    assert status == 200 and body["id"] == 41 and body["error"]["code"] == -32800
    context = {"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "project_context"}}
    status, _, body = await session.send(context)
    assert body["result"]["structuredContent"]["data"]["suites"] == []


async def test_a_stateless_call_abandoned_by_its_client_never_runs(
    daemon: Running, http: aiohttp.ClientSession, sample_repo: Path
) -> None:
    handle, _ = await daemon.daemon.projects.resolve(Target(path=str(sample_repo)))
    message, headers = modern(
        "tools/call", {"name": "coverage_import", "arguments": {"report_path": "step3.coverage.lcov"}}
    )
    async with handle.write_gate:
        pending = asyncio.create_task(
            post_mcp(http, daemon.url + "/mcp", message, headers=headers, repo=sample_repo)
        )
        await asyncio.sleep(0.2)
        pending.cancel()  # closes the connection: the 2026-07-28 way to cancel
        await asyncio.sleep(0.2)
    await asyncio.sleep(0.2)
    message, headers = modern("tools/call", {"name": "project_context", "arguments": {}})
    _, _, body = await post_mcp(http, daemon.url + "/mcp", message, headers=headers, repo=sample_repo)
    assert body["result"]["structuredContent"]["data"]["suites"] == []
    assert json.loads(body["result"]["content"][0]["text"]) == body["result"]["structuredContent"]


async def test_a_read_is_answered_while_writes_hold_every_mcp_slot_waiting_for_the_write_gate(
    isolated_home: Path, http: aiohttp.ClientSession, sample_repo: Path
) -> None:
    # One MCP slot: before reads and writes were bounded apart, the import waiting at the gate held it and
    # the read below waited for it for as long as the writes before it did.
    async with in_process(Settings.from_env(port=0, mcp_concurrency=1)) as d:
        handle, _ = await d.daemon.projects.resolve(Target(path=str(sample_repo)))
        url = d.url + "/mcp"
        importing, _ = modern(
            "tools/call", {"name": "coverage_import", "arguments": {"report_path": "step3.coverage.lcov"}}
        )
        reading, headers = modern("tools/call", {"name": "project_context", "arguments": {}}, request_id=2)
        import_headers = modern("tools/call", {"name": "coverage_import"})[1]
        async with handle.write_gate:  # the import waits here, holding the only write slot
            pending = asyncio.create_task(
                post_mcp(http, url, importing, headers=import_headers, repo=sample_repo)
            )
            # The import is in flight, at the gate, holding its slot (whichever bound it counts against).
            while not (d.daemon.mcp_write_slots.locked() or d.daemon.mcp_slots.locked()):
                await asyncio.sleep(0.01)
            status, _, body = await asyncio.wait_for(
                post_mcp(http, url, reading, headers=headers, repo=sample_repo), 30
            )
            assert status == 200 and body["result"]["structuredContent"]["data"]["suites"] == []
            assert not pending.done()
        status, _, body = await asyncio.wait_for(pending, 60)
    assert status == 200 and body["result"]["structuredContent"]["data"]["snapshot"]["snapshot_id"]


async def test_calls_past_the_mcp_concurrency_bound_wait_for_a_slot_and_then_all_answer(
    isolated_home: Path, http: aiohttp.ClientSession, sample_repo: Path
) -> None:
    """Seed: "HTTP requests have an independent deadline and bounded JSON bodies, MCP requests use a
    semaphore". Reads and writes each have COVERAGE_MCP_MCP_CONCURRENCY slots (issue 29: a read never waits
    behind writes). With 1, an import held at the write gate keeps the only write slot: a second import
    waits for that slot, and both answer once the first is let go (the second finds the first's snapshot)."""
    async with in_process(Settings.from_env(port=0, mcp_concurrency=1)) as d:
        handle, _ = await d.daemon.projects.resolve(Target(path=str(sample_repo)))
        url = d.url + "/mcp"
        imported, headers = modern(
            "tools/call", {"name": "coverage_import", "arguments": {"report_path": "step3.coverage.lcov"}}
        )
        again, _ = modern(
            "tools/call",
            {"name": "coverage_import", "arguments": {"report_path": "step3.coverage.lcov"}},
            request_id=2,
        )
        slots = d.daemon.mcp_write_slots
        async with handle.write_gate:
            first = asyncio.create_task(post_mcp(http, url, imported, headers=headers, repo=sample_repo))
            while not slots.locked():  # the import holds the one slot (and waits at the gate)
                assert not first.done(), first.result()
                await asyncio.sleep(0.01)
            second = asyncio.create_task(post_mcp(http, url, again, headers=headers, repo=sample_repo))
            # The second import queues at the semaphore instead of running beside the first.
            give_up = asyncio.get_running_loop().time() + 30
            while not getattr(slots, "_waiters", None):
                assert not second.done(), f"answered past the bound: {second.result()}"
                assert asyncio.get_running_loop().time() < give_up, (
                    "the second import never queued for a slot"
                )
                await asyncio.sleep(0.01)
            assert not first.done() and not second.done()
        (_, _, one), (_, _, two) = await asyncio.gather(first, second)
    assert one["result"]["isError"] is False and two["result"]["isError"] is False
    first_data, second_data = (
        one["result"]["structuredContent"]["data"],
        two["result"]["structuredContent"]["data"],
    )
    assert first_data["duplicate"] is False and second_data["duplicate"] is True
    assert second_data["snapshot"]["snapshot_id"] == first_data["snapshot"]["snapshot_id"]
