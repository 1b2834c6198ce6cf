"""Each documented maximum a client may send is answered: a composite or a coded refusal, never a hang.

The inventory's bounds are 1 MiB and 100,000 entries (file x variant). Nesting
is refused before parsing. No timing is asserted here: the daemon's deadline is
raised far past need, so a loaded machine cannot decide a test; that every check
is linear (the n-to-2n ratios) and how long the maximum takes are measured by
benchmarks/input_bounds.py.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from coverage_core.composite.inventory import MAX_INVENTORY_BYTES, MAX_INVENTORY_FILES
from coverage_core.config import Settings

from .daemons import Running, in_process
from .gitrepo import make_repo
from .test_daemon_rest import register

pytest_plugins = ["tests.test_daemon_support"]

SHADER = b"fn main() {}\n"


@pytest.fixture
async def daemon(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Running]:
    """A real daemon whose request deadline (10 minutes) no loaded machine reaches on these inputs."""
    monkeypatch.setenv("COVERAGE_MCP_HTTP_TIMEOUT_S", "600")
    async with in_process(Settings.from_env(port=0)) as running:
        yield running


def _inventory(variants: list[str]) -> dict:
    return {
        "inventory_version": 1,
        "components": [
            {
                "id": "gpu",
                "language": "other",
                "format": "regions-v1",
                "sources": ["shaders/main.wgsl"],
                "variants": variants,
            }
        ],
    }


def _evidence() -> str:
    region = {"start_line": 1, "start_col": 1, "end_line": 1, "end_col": 13, "hits": 1}
    f = {
        "path": "shaders/main.wgsl",
        "source_sha256": hashlib.sha256(SHADER).hexdigest(),
        "regions": [region],
    }
    return json.dumps({"format": "coverage-mcp-regions-v1", "version": 1, "files": [f]})


def _repo(tmp_path: Path, inventory: bytes) -> Path:
    root = make_repo(tmp_path / "bounds", {"shaders/main.wgsl": SHADER.decode()})
    (root / "inventory.json").write_bytes(inventory)
    (root / "ev.json").write_text(_evidence())
    return root


async def _import(daemon: Running, repo: Path, reports: list[str]) -> tuple[bool, dict]:
    pid = await register(daemon, repo)
    # The client waits past the daemon's own deadline, so the daemon's answer (never a client timeout) is judged.
    wait = httpx2.Timeout(daemon.daemon.settings.http_timeout_s + 30)
    async with (
        httpx2.AsyncClient(headers=daemon.auth, timeout=wait) as http,
        Client(streamable_http_client(f"{daemon.url}/p/{pid}/mcp", http_client=http), mode="auto") as client,
    ):
        result = await client.call_tool(
            "coverage_import", {"inventory_path": "inventory.json", "reports": reports}
        )
    return result.is_error, result.structured_content


async def test_an_inventory_of_the_maximum_entries_as_variants_of_one_file_is_answered(
    daemon: Running, tmp_path: Path
) -> None:
    variants = [f"v{i}" for i in range(MAX_INVENTORY_FILES)]
    text = json.dumps(_inventory(variants), separators=(",", ":")).encode()
    assert len(text) <= MAX_INVENTORY_BYTES
    failed, body = await _import(daemon, _repo(tmp_path, text), ["gpu:v7=ev.json"])
    assert not failed, body
    composite = body["data"]["composite"]
    assert composite["status"] == "incomplete"
    assert composite["blocking_total"] == MAX_INVENTORY_FILES - 1
    # Only the measured variant has regions yet; the others' denominators are unknown, and said so.
    assert composite["totals"]["code"] == {"found": 1, "hit": 1} and composite["denominator_known"] is False


async def test_an_inventory_repeating_one_variant_at_the_maximum_is_refused_with_its_paths(
    daemon: Running, tmp_path: Path
) -> None:
    text = json.dumps(_inventory(["same"] * MAX_INVENTORY_FILES), separators=(",", ":")).encode()
    failed, body = await _import(daemon, _repo(tmp_path, text), ["gpu:same=ev.json"])
    assert failed and body["error"]["code"] == "invalid_argument", body
    assert body["error"]["details"]["error_count"] == MAX_INVENTORY_FILES - 1
    assert body["error"]["details"]["errors"][0]["path"] == "$.components[0].variants[1]"


async def test_an_inventory_nested_100000_lists_deep_is_refused_before_it_is_parsed(
    daemon: Running, tmp_path: Path
) -> None:
    text = b'{"inventory_version": 1, "components": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    failed, body = await _import(daemon, _repo(tmp_path, text), ["gpu:v=ev.json"])
    assert failed and body["error"]["code"] == "invalid_argument", body
    assert "nests 100001 levels deep" in body["error"]["message"]
    assert body["error"]["details"]["max_depth"] == 64
