"""The CLI answers the same whether it owns the store or the daemon does."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from coverage_core.config import Settings
from coverage_daemon.client import DaemonClient

from .test_daemon_support import in_process, sample_repo  # noqa: F401  (fixture)


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coverage_cli", *args, "--repo", str(repo)],
                          capture_output=True, text=True)


async def test_store_and_review_commands_route_through_the_daemon_when_it_holds_the_store(sample_repo: Path) -> None:  # noqa: F811
    ingested = cli(sample_repo, "ingest", str(sample_repo / "step3.coverage.json"), "--suite", "unit", "--json")
    assert ingested.returncode == 0, ingested.stderr
    snapshot_id = json.loads(ingested.stdout)["snapshot_id"]
    direct = {
        "snapshots": json.loads(cli(sample_repo, "snapshots", "--json").stdout),
        "review": json.loads(cli(sample_repo, "review", "insight", "--suite", "unit", "--json").stdout),
        "show": json.loads(cli(sample_repo, "show", snapshot_id, "--file", "inventory/stock.py", "--json").stdout),
    }
    async with in_process(Settings.from_env(port=0)) as d:
        await asyncio.to_thread(DaemonClient(d.url).register, sample_repo)  # the daemon now holds the store
        routed = {
            "snapshots": await asyncio.to_thread(cli, sample_repo, "snapshots", "--json"),
            "review": await asyncio.to_thread(cli, sample_repo, "review", "insight", "--suite", "unit", "--json"),
            "show": await asyncio.to_thread(cli, sample_repo, "show", snapshot_id, "--file", "inventory/stock.py", "--json"),
            "again": await asyncio.to_thread(cli, sample_repo, "ingest", str(sample_repo / "step3.coverage.json"),
                                             "--suite", "unit", "--json"),
        }
    for name, out in routed.items():
        assert out.returncode == 0, (name, out.stderr)
    assert json.loads(routed["snapshots"].stdout) == direct["snapshots"]
    assert json.loads(routed["review"].stdout)["data"] == direct["review"]["data"]
    assert json.loads(routed["show"].stdout) == direct["show"]
    again = json.loads(routed["again"].stdout)
    assert again["duplicate"] is True and again["snapshot_id"] == snapshot_id
