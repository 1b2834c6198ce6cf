"""The context (repo_key, checkout_path, suite, schema_revision) on every answer to an authenticated caller.

A real in-process daemon on an ephemeral loopback port: MCP tool errors, REST
error bodies and the dashboard's projection carry the envelope's context; a
caller without the client token gets a 403 that says nothing of any project.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aiohttp

from coverage_core.storage.schema import SCHEMA_REVISION

from .daemons import ACCEPT, Running, post_mcp

KEYS = ("repo_key", "checkout_path", "suite", "schema_revision")
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}


def _tool_call(name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": META},
    }
    return message, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}


def _of_repo(context: dict[str, Any], repo: Path, suite: str | None) -> None:
    assert {k: context[k] for k in KEYS} == {
        "repo_key": context["repo_key"],
        "checkout_path": str(repo.resolve()),
        "suite": suite,
        "schema_revision": SCHEMA_REVISION,
    }
    assert context["repo_key"]


async def test_an_mcp_tool_error_carries_the_context_of_its_repository(
    daemon: Running, sample_repo: Path
) -> None:
    """Seed: "Every public schema-16 response carries `repo_key`, `checkout_path`, `suite`, and
    `schema_revision` context." A failed tool call (an unknown snapshot) says which checkout, suite and
    schema it was asked of, beside its error."""
    message, headers = _tool_call(
        "coverage_review", {"task": "insight", "measurement": {"snapshot_id": "snap-0000000000000000"}}
    )
    async with aiohttp.ClientSession(headers=daemon.auth) as http:
        status, _, body = await post_mcp(
            http, daemon.url + "/mcp", message, headers=headers, repo=sample_repo
        )
    result = body["result"]
    assert status == 200 and result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "not_found"
    _of_repo(result["structuredContent"]["context"], sample_repo, "default")


async def test_a_rest_error_carries_the_context_of_its_project_or_the_schema_revision_alone(
    daemon: Running, sample_repo: Path
) -> None:
    """Seed: "Every public schema-16 response carries `repo_key`, `checkout_path`, `suite`, and
    `schema_revision` context." An operation's error names its project and suite; an error before any
    project is chosen (a path that is no checkout) still says the schema revision, the rest null."""
    async with aiohttp.ClientSession(headers=daemon.auth) as http:
        async with http.post(daemon.url + "/api/projects", json={"path": str(sample_repo)}) as registered:
            project_id = (await registered.json())["data"]["project"]["project_id"]
        url = f"{daemon.url}/api/projects/{project_id}/ops/coverage_review"
        asked = {"task": "insight", "measurement": {"suite": "nope", "snapshot_id": "snap-0000000000000000"}}
        async with http.post(url, json=asked) as answer:
            status, body = answer.status, await answer.json()
        async with http.post(daemon.url + "/api/projects", json={"path": "/"}) as outside:
            outside_status, outside_body = outside.status, await outside.json()
    assert status >= 400 and body["error"]["code"]
    _of_repo(body["context"], sample_repo, "nope")
    assert outside_status >= 400 and outside_body["error"]["code"]
    assert {k: outside_body["context"][k] for k in KEYS} == {
        "repo_key": None,
        "checkout_path": None,
        "suite": None,
        "schema_revision": SCHEMA_REVISION,
    }


async def test_the_dashboards_projection_carries_the_context(daemon: Running, sample_repo: Path) -> None:
    """Seed: "Every public schema-16 response carries `repo_key`, `checkout_path`, `suite`, and
    `schema_revision` context." GET /api/dashboard, read by a signed-in session."""
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        async with http.post(
            daemon.url + "/api/projects", json={"path": str(sample_repo)}, headers=daemon.auth
        ):
            pass
        async with http.post(daemon.url + "/api/dashboard/ticket", headers=daemon.admin) as minted:
            url = (await minted.json())["data"]["url"]
        async with http.get(url) as session:
            assert session.status == 200
        async with http.get(daemon.url + "/api/dashboard") as response:
            assert response.status == 200
            body = await response.json()
    _of_repo(body["context"], sample_repo, "default")


async def test_a_caller_without_the_token_learns_no_context(daemon: Running, sample_repo: Path) -> None:
    """Never on an answer to an unauthenticated caller: its 403 (REST and MCP) names no repository,
    suite or schema."""
    message, headers = _tool_call("project_context", {})
    async with aiohttp.ClientSession() as http:
        async with http.get(daemon.url + "/api/projects") as listing:
            rest_status, rest_body = listing.status, await listing.json()
        status, _, body = await post_mcp(
            http, daemon.url + "/mcp", message, headers={**headers, "Accept": ACCEPT}, repo=sample_repo
        )
    assert rest_status == 403 and set(rest_body) == {"error"}
    assert status == 403 and "context" not in json.dumps(body)
    assert not re.search("repo_key|checkout_path|schema_revision", json.dumps([rest_body, body]))
