"""Client input never becomes a 500: each input a red-team pass found answering ``internal`` gets its own code.

Every test drives a real daemon (in-process, on an ephemeral loopback port)
with the client token, as an MCP client configured with it would.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import shutil
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from coverage_core.git import discover
from coverage_daemon.credentials import bearer, client_token
from coverage_daemon.projects import Target

from .daemons import ACCEPT, Running

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "trust", "version": "0"},
    },
}
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
# JSON text for ids a JSON-RPC request may not carry (Python's json reads NaN and Infinity).
INVALID_IDS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1.5",
    "1e400",
    "true",
    "false",
    "null",
    '{"a": 1}',
    "[1]",
    "[]",
    "123456789012345678901234567890",
    "-9007199254740992",
]


class Client:
    """Raw HTTP to one daemon with the home's client token."""

    def __init__(self, http: aiohttp.ClientSession, daemon: Running, home: Path) -> None:
        self.http, self.url = http, daemon.url
        self.auth = bearer(client_token(home) or "")
        self.session_id = ""

    async def post(
        self, path: str, body: Any = None, *, raw: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        status, _, answer = await self.exchange(path, body, raw=raw, headers=headers)
        return status, answer

    async def exchange(
        self, path: str, body: Any = None, *, raw: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], Any]:
        sent = {"Content-Type": "application/json", "Accept": ACCEPT, **self.auth, **(headers or {})}
        data = raw if raw is not None else json.dumps(body).encode()
        async with self.http.post(self.url + path, data=data, headers=sent) as response:
            text = await response.read()
            return response.status, dict(response.headers), json.loads(text) if text else None

    async def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        async with self.http.get(self.url + path, headers={**self.auth, **(headers or {})}) as response:
            return response.status, await response.json()

    async def open(self, repo: Path | None = None) -> None:
        status, headers, _ = await self.exchange("/mcp", INITIALIZE, headers=self.repo_header(repo))
        assert status == 200
        self.session_id = headers["Mcp-Session-Id"]

    def in_session(self, repo: Path | None = None, **extra: str) -> dict[str, str]:
        return {
            "Mcp-Session-Id": self.session_id,
            "MCP-Protocol-Version": "2025-11-25",
            **self.repo_header(repo),
            **extra,
        }

    @staticmethod
    def repo_header(repo: Path | str | None) -> dict[str, str]:
        return {} if repo is None else {"x-coverage-mcp-repo": str(repo)}

    async def call(self, tool: str, arguments: dict[str, Any], repo: Path | str | None) -> dict[str, Any]:
        status, body = await self.post(
            "/mcp",
            {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            },
            headers=self.in_session(repo),
        )
        assert status == 200, body
        return body["result"]


@pytest.fixture
async def client(daemon: Running, isolated_home: Path) -> Any:
    async with aiohttp.ClientSession() as http:
        c = Client(http, daemon, isolated_home)
        await c.open()
        yield c


def tool_error(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is True, result
    return result["structuredContent"]["error"]


# -- JSON-RPC ids ------------------------------------------------------------------------------


@pytest.mark.parametrize("raw_id", INVALID_IDS)
async def test_a_request_whose_id_is_not_a_string_or_an_exact_integer_is_an_invalid_request_in_every_state(
    client: Client, raw_id: str
) -> None:
    ping = b'{"jsonrpc": "2.0", "id": %s, "method": "ping"}' % raw_id.encode()
    listing = b'{"jsonrpc": "2.0", "id": %s, "method": "tools/list", "params": {"_meta": %s}}' % (
        raw_id.encode(),
        json.dumps(META).encode(),
    )
    cases = [
        ("no session", ping, {}),
        ("unknown session", ping, {"Mcp-Session-Id": "f" * 32}),
        ("in a session", ping, client.in_session()),
        ("unsupported version", ping, {"MCP-Protocol-Version": "1999-01-01"}),
        (
            "initialize",
            json.dumps({**INITIALIZE, "id": 0}).replace('"id": 0', f'"id": {raw_id}').encode(),
            {},
        ),
        ("stateless", listing, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}),
        ("stateless, headers disagree", listing, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "other"}),
    ]
    for name, raw, headers in cases:
        status, body = await client.post("/mcp", raw=raw, headers=headers)
        assert status == 400, (name, body)
        assert (
            body["id"] is None
            and body["error"]["code"] == -32600
            and "id must be" in body["error"]["message"]
        )


async def test_the_largest_exact_integer_id_and_string_ids_are_still_answered(client: Client) -> None:
    for request_id in (2**53 - 1, -(2**53 - 1), 0, "", "NaN", "x" * 1000):
        status, body = await client.post(
            "/mcp", {"jsonrpc": "2.0", "id": request_id, "method": "ping"}, headers=client.in_session()
        )
        assert (status, body["id"], body["result"]) == (200, request_id, {})


async def test_a_body_nested_past_the_depth_limit_is_refused_before_it_is_parsed_on_mcp_and_rest(
    client: Client,
) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    ping = b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": ' + deep + b"}"
    status, body = await client.post("/mcp", raw=ping, headers=client.in_session())
    assert (status, body["id"], body["error"]["code"]) == (400, None, -32700), body
    assert "nested deeper than 64 levels" in body["error"]["message"]
    status, body = await client.post("/api/projects", raw=b'{"path": ' + deep + b"}")
    assert (status, body["error"]["code"]) == (400, "invalid_argument"), body
    assert "nests 100001 levels deep" in body["error"]["message"]
    assert body["error"]["details"] == {"depth": 100_001, "max_depth": 64}
    status, body = await client.post(
        "/mcp", {"jsonrpc": "2.0", "id": 6, "method": "ping"}, headers=client.in_session()
    )
    assert (status, body["result"]) == (200, {})  # the session goes on


@pytest.mark.parametrize("request_id", [{"a": 1}, [1], None, 1.5, True])
async def test_a_cancellation_naming_no_possible_request_is_ignored_and_the_session_goes_on(
    client: Client, request_id: Any
) -> None:
    status, body = await client.post(
        "/mcp",
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}},
        headers=client.in_session(),
    )
    assert (status, body) == (202, None)
    status, body = await client.post(
        "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=client.in_session()
    )
    assert (status, body["result"]) == (200, {})


# -- the repository selection --------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/" + "a" * 5000, "/" + "a/" * 2100, "/" + "b" * 300])
async def test_an_impossible_repository_path_is_not_a_repository_on_mcp_and_rest(
    client: Client, path: str
) -> None:
    error = tool_error(await client.call("project_context", {}, path))
    assert error["code"] == "not_a_repository", error
    assert len(error["message"]) < 600  # never the whole 5,000 characters back
    status, body = await client.post("/api/projects", {"path": path})
    assert status == 400 and body["error"]["code"] == "not_a_repository"
    status, body = await client.get("/api/projects/0123456789abcdef", client.repo_header(path))
    assert status == 400 and body["error"]["code"] == "not_a_repository"


async def test_a_repository_path_with_a_nul_is_not_a_repository(client: Client, sample_repo: Path) -> None:
    status, body = await client.post("/api/projects", {"path": f"{sample_repo}\x00/etc"})
    assert status == 400 and body["error"]["code"] == "not_a_repository" and "NUL" in body["error"]["message"]


async def test_a_nul_in_the_repository_header_is_refused_by_the_http_parser(
    daemon: Running, isolated_home: Path
) -> None:
    # aiohttp's client will not send it; a raw client can.
    token = client_token(isolated_home)
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{daemon.daemon.port}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nx-coverage-mcp-repo: /tmp/\x00x\r\nContent-Length: 2\r\n\r\n{}"
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", daemon.daemon.port)
    try:
        writer.write(request.encode())
        answer = (await asyncio.wait_for(reader.read(65536), 10)).decode("latin-1")
    finally:
        writer.close()
    assert answer.split(" ", 2)[1] == "400", answer


@pytest.mark.skipif(os.geteuid() != 0, reason="making a repository owned by another user needs root")
async def test_a_repository_owned_by_another_user_is_not_a_repository_with_the_safe_directory_hint(
    client: Client, sample_repo: Path, tmp_path: Path
) -> None:
    foreign = tmp_path / "foreign"
    shutil.copytree(sample_repo, foreign)
    for root, dirs, files in os.walk(foreign):
        for name in (*dirs, *files):
            os.chown(os.path.join(root, name), 65534, 65534, follow_symlinks=False)
    os.chown(foreign, 65534, 65534)
    error = tool_error(await client.call("project_context", {}, foreign))
    assert error["code"] == "not_a_repository" and "uid 65534" in error["message"]
    assert f"safe.directory {foreign}" in error["suggestion"]
    status, body = await client.post("/api/projects", {"path": str(foreign)})
    assert status == 400 and body["error"]["code"] == "not_a_repository"
    # The daemon's own user still gets its own repository.
    assert (await client.call("project_context", {}, sample_repo))["isError"] is False


def test_discover_names_the_owner_of_a_foreign_repository_and_reads_no_git_for_an_impossible_path(
    tmp_path: Path,
) -> None:
    for path in ("/" + "x" * 300, "/tmp/a\x00b"):
        with pytest.raises(Exception) as caught:
            discover(path)
        assert (
            getattr(caught.value, "code", None) is not None and caught.value.code.value == "not_a_repository"
        )


# -- cursors ---------------------------------------------------------------------------------------


def forge(cursor: str, secret: bytes, **changes: Any) -> str:
    """A cursor with its payload changed and signed with the store's own secret."""
    body = cursor.rsplit(".", 1)[0]
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    raw = json.dumps({**payload, **changes}, separators=(",", ":")).encode()
    mac = hmac.new(secret, raw, hashlib.sha256).hexdigest()[:32]
    return base64.urlsafe_b64encode(raw).decode().rstrip("=") + "." + mac


async def test_a_cursor_forged_with_the_stores_secret_past_a_64_bit_offset_is_an_invalid_cursor(
    client: Client, daemon: Running, sample_repo: Path
) -> None:
    imported = await client.call("coverage_import", {"report_path": "step3.coverage.json"}, sample_repo)
    assert imported["isError"] is False, imported
    args = {"task": "insight", "limits": {"max_files": 1}}
    first = (await client.call("coverage_review", args, sample_repo))["structuredContent"]
    cursor = first["page"]["next_cursor"]
    assert cursor
    handle, _ = await daemon.daemon.projects.resolve(Target(path=str(sample_repo)))
    secret = handle.store.cursor_secret
    # The forgery is faithful: re-signing the payload as issued pages on.
    second = await client.call("coverage_review", {**args, "cursor": forge(cursor, secret)}, sample_repo)
    assert second["isError"] is False
    paged = []
    for task in ("insight", "history", "audit", "change", "incremental"):
        page = await client.call("coverage_review", {**args, "task": task}, sample_repo)
        issued = ((page.get("structuredContent") or {}).get("page") or {}).get("next_cursor")
        if not issued:
            continue  # this task has one page here: nothing to forge from
        paged.append(task)
        for offset in (2**63, 2**63 - 1, 2**64, 10**30, -1, True, 1.5, "1"):
            result = await client.call(
                "coverage_review",
                {**args, "task": task, "cursor": forge(issued, secret, n=offset)},
                sample_repo,
            )
            error = tool_error(result)
            assert error["code"] == "invalid_cursor", (task, offset, error)
    assert "insight" in paged, paged


@pytest.mark.parametrize(
    "cursor", ["e30.\u00e9\u00e9", "e30." + "\udcff", "W10." + "0" * 32, "bm90IGpzb24.x", "."]
)
async def test_a_cursor_with_a_non_ascii_signature_or_a_non_object_payload_is_an_invalid_cursor(
    client: Client, sample_repo: Path, cursor: str
) -> None:
    error = tool_error(await client.call("project_context", {"cursor": cursor}, sample_repo))
    assert error["code"] == "invalid_cursor", error


# -- what the daemon echoes ------------------------------------------------------------------------


async def raw_post(port: int, head: bytes, body: bytes) -> tuple[int, Any]:
    """POST /mcp with header lines sent byte for byte (aiohttp's client only sends text headers)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n" % port
            + head
            + b"Content-Length: %d\r\n\r\n" % len(body)
            + body
        )
        answer = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2] or b"null")


async def test_a_version_header_that_is_not_utf8_is_refused_and_named_never_a_500(
    daemon: Running, isolated_home: Path
) -> None:
    auth = b"Authorization: Bearer %s\r\n" % (client_token(isolated_home) or "").encode()
    status, body = await raw_post(
        daemon.daemon.port,
        auth + b"MCP-Protocol-Version: 2025-\xff\xfe\r\n",
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode(),
    )
    assert status == 400 and body["id"] == 3 and body["error"]["code"] == -32022
    assert body["error"]["data"]["requested"].startswith("2025-")


async def test_a_lone_surrogate_in_a_tool_name_is_echoed_escaped_never_a_500(client: Client) -> None:
    status, body = await client.post(
        "/mcp",
        raw=b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "x\\udcff"}}',
        headers=client.in_session(),
    )
    assert status == 200 and body["error"]["code"] == -32602 and "x\\udcff" in body["error"]["message"]


async def test_reading_a_resource_without_a_repository_is_invalid_params_not_an_internal_error(
    client: Client,
) -> None:
    status, body = await client.post(
        "/mcp",
        {"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "coverage://context"}},
        headers=client.in_session(),
    )
    assert status == 200 and body["error"]["code"] == -32602
    assert body["error"]["data"]["error"]["code"] == "not_a_repository"
