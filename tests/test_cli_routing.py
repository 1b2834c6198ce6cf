"""The CLI answers the same whether it owns the store or the daemon does."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from coverage_core.config import Settings

from . import commandline
from .daemons import in_process


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """A child process: what is tested is its routing to the daemon (in this test's event loop)."""
    return commandline.cli(*args, repo=repo, cwd=Path.cwd(), process=True)


async def test_store_and_review_commands_route_through_the_daemon_when_it_holds_the_store(
    sample_repo: Path,
) -> None:
    ingested = cli(
        sample_repo, "ingest", str(sample_repo / "step3.coverage.json"), "--suite", "unit", "--json"
    )
    assert ingested.returncode == 0, ingested.stderr
    snapshot_id = json.loads(ingested.stdout)["data"]["snapshot"]["snapshot_id"]
    direct = {
        "snapshots": json.loads(cli(sample_repo, "snapshots", "--json").stdout),
        "review": json.loads(cli(sample_repo, "review", "insight", "--suite", "unit", "--json").stdout),
        "show": json.loads(
            cli(sample_repo, "show", snapshot_id, "--file", "inventory/stock.py", "--json").stdout
        ),
        "files": json.loads(cli(sample_repo, "show", snapshot_id, "--order", "uncovered", "--json").stdout),
    }
    async with in_process(Settings.from_env(port=0)) as d:
        await asyncio.to_thread(d.client().register, sample_repo)  # the daemon now holds the store
        routed = {
            "snapshots": await asyncio.to_thread(cli, sample_repo, "snapshots", "--json"),
            "review": await asyncio.to_thread(
                cli, sample_repo, "review", "insight", "--suite", "unit", "--json"
            ),
            "show": await asyncio.to_thread(
                cli, sample_repo, "show", snapshot_id, "--file", "inventory/stock.py", "--json"
            ),
            "files": await asyncio.to_thread(
                cli, sample_repo, "show", snapshot_id, "--order", "uncovered", "--json"
            ),
            "again": await asyncio.to_thread(
                cli,
                sample_repo,
                "ingest",
                str(sample_repo / "step3.coverage.json"),
                "--suite",
                "unit",
                "--json",
            ),
        }
    for name, out in routed.items():
        assert out.returncode == 0, (name, out.stderr)
    for name in ("snapshots", "review", "show", "files"):
        assert without_stats(json.loads(routed[name].stdout)) == without_stats(direct[name]), name
    again = json.loads(routed["again"].stdout)["data"]
    assert again["duplicate"] is True and again["snapshot"]["snapshot_id"] == snapshot_id


def without_stats(envelope: dict) -> dict:
    return {**envelope, "context": {k: v for k, v in envelope["context"].items() if k != "stats"}}


async def test_an_ingest_from_outside_the_checkout_with_path_maps_works_the_same_through_the_daemon(
    sample_repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "ci-artifacts"
    outside.mkdir()
    text = (
        (sample_repo / "step3.coverage.lcov")
        .read_text()
        .replace("SF:inventory/", "SF:/runner/work/inventory/")
    )
    (outside / "a.info").write_text(text)
    (outside / "b.info").write_text(text + "\n")  # another artifact, same coverage
    direct = cli(sample_repo, "ingest", str(outside / "a.info"), "--path-map", "/runner/work=", "--json")
    assert direct.returncode == 0, direct.stderr
    async with in_process(Settings.from_env(port=0)) as d:
        await asyncio.to_thread(d.client().register, sample_repo)
        routed = await asyncio.to_thread(
            cli, sample_repo, "ingest", str(outside / "b.info"), "--path-map", "/runner/work=", "--json"
        )
        forged = await asyncio.to_thread(_forged_ingest, d.url, d.auth, sample_repo, outside / "b.info")
    assert routed.returncode == 0, routed.stderr
    a, b = json.loads(direct.stdout)["data"], json.loads(routed.stdout)["data"]
    assert (
        a["snapshot"]["path_mapping"]
        == b["snapshot"]["path_mapping"]
        == {"mapped": 3, "ambiguous": 0, "unmapped": 0}
    )
    assert a["snapshot"]["totals"] == b["snapshot"]["totals"] and b["duplicate"] is False
    assert forged == 403


def _forged_ingest(url: str, auth: dict[str, str], repo: Path, report: Path) -> int:
    """The HTTP status of an owner's import offered with the client token and a guessed capability."""
    import urllib.error
    import urllib.request

    from coverage_core.git import discover

    request = urllib.request.Request(
        f"{url}/api/projects/{discover(repo).project_id}/ops/owner_import",
        method="POST",
        data=json.dumps({"report_path": str(report)}).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "x-coverage-mcp-capability": "guess",
            **auth,
        },
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
