"""Composites through the real daemon: the official MCP SDK client, and the CLI while the daemon owns the store."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path

from .daemons import Running, sdk_client
from .gitrepo import make_repo
from .test_daemon_rest import register

SHADER = b"fn main() {\n  if (x) {\n    y();\n  }\n}\n"
INVENTORY = {
    "inventory_version": 1,
    "components": [
        {
            "id": "gpu",
            "language": "other",
            "format": "regions-v1",
            "sources": ["shaders/*.wgsl"],
            "variants": ["vulkan", "metal"],
        }
    ],
}


def _evidence(hits: int) -> str:
    return json.dumps(
        {
            "format": "coverage-mcp-regions-v1",
            "version": 1,
            "files": [
                {
                    "path": "shaders/main.wgsl",
                    "source_sha256": hashlib.sha256(SHADER).hexdigest(),
                    "regions": [
                        {"start_line": 1, "start_col": 1, "end_line": 5, "end_col": 2, "hits": 1},
                        {"start_line": 3, "start_col": 5, "end_line": 3, "end_col": 9, "hits": hits},
                    ],
                }
            ],
        }
    )


def _repo(tmp_path: Path) -> Path:
    root = make_repo(
        tmp_path / "gpu", {"shaders/main.wgsl": SHADER.decode(), "inventory.json": json.dumps(INVENTORY)}
    )
    (root / "vk.json").write_text(_evidence(0))
    (root / "mtl.json").write_text(_evidence(3))
    return root


async def test_an_agent_builds_and_reviews_a_composite_over_mcp(daemon: Running, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    pid = await register(daemon, repo)
    async with sdk_client(daemon, f"{daemon.url}/p/{pid}/mcp", "auto") as client:
        part = await client.call_tool(
            "coverage_import", {"inventory_path": "inventory.json", "reports": ["gpu:vulkan=vk.json"]}
        )
        assert not part.is_error, part.content
        comp = part.structured_content["data"]["composite"]
        assert comp["status"] == "incomplete" and comp["blocking"][0]["variant"] == "metal"
        assert part.structured_content["data"]["claim_status"] == "limited"
        whole = await client.call_tool(
            "coverage_import",
            {"inventory_path": "inventory.json", "reports": ["gpu:vulkan=vk.json", "gpu:metal=mtl.json"]},
        )
        full = whole.structured_content["data"]["composite"]
        assert full["status"] == "complete" and full["totals"]["code"] == {"found": 4, "hit": 3}
        ctx = await client.call_tool("project_context", {})
        assert (
            ctx.structured_content["data"]["latest_composite"]["composite_snapshot_id"]
            == full["composite_snapshot_id"]
        )
        insight = await client.call_tool(
            "coverage_review",
            {"task": "insight", "measurement": {"composite_snapshot_id": full["composite_snapshot_id"]}},
        )
        assert not insight.is_error, insight.content
        targets = insight.structured_content["data"]["targets"]
        assert [(t["variant"], t["ranges"]) for t in targets] == [("vulkan", [[3, 3, 1]])]
        change = await client.call_tool(
            "coverage_review",
            {
                "task": "change",
                "measurement": {"composite_snapshot_id": full["composite_snapshot_id"]},
                "baseline": {"kind": "explicit", "composite_snapshot_id": comp["composite_snapshot_id"]},
            },
        )
        cats = change.structured_content["data"]["categories"]["code"]
        # The baseline never measured metal (its denominator was unknown): metal's regions are new.
        assert cats["new_covered"] == 2 and cats["uncovered_both"] == 1 and cats["covered_both"] == 1
        outside = await client.call_tool(
            "coverage_import", {"inventory_path": "inventory.json", "reports": ["gpu:vulkan=/etc/hostname"]}
        )
        assert outside.is_error and outside.structured_content["error"]["code"] == "path_outside_checkout"


async def test_the_cli_builds_a_composite_through_the_daemon_that_owns_the_store(
    daemon: Running, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    await register(daemon, repo)
    elsewhere = tmp_path / "mtl-outside.json"  # the owner may name reports outside the checkout
    elsewhere.write_text(_evidence(3))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "coverage_cli",
        "composite",
        "build",
        "--inventory",
        "inventory.json",
        "gpu:vulkan=vk.json",
        f"gpu:metal={elsewhere}",
        "--json",
        cwd=repo,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode()
    comp = json.loads(out)["data"]["composite"]
    assert comp["status"] == "complete"
    assert {a["path"].rsplit("/", 1)[-1] for a in comp["artifacts"]} == {"vk.json", "mtl-outside.json"}
