"""Complete by default: a subset run never becomes the side chosen for the caller (issue 24).

A real package with real history (``tests/sidesfixture.py``): c0 imported
complete, then at c1 (HEAD) a managed run of the whole suite and, newest, a
managed run of one test (scope ``subset``), both coverage.py's own reports,
run by a real daemon on the request of the official MCP client. Every surface
that picks a side for the caller (project_context, change, history, gate, diff,
Markdown, the dashboard) must pick the complete run; the subset is read only
where it is named, and then its misses are ``not_observed``, never LBC.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mcp import Client

from coverage_core.config import Settings
from coverage_core.display import percent

from . import commandline
from .daemons import in_process, project_client
from .sidesfixture import MEASURE_COMMAND, ONE_TEST, build
from .test_dashboard_api import jar, signed_in


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    return build(tmp_path_factory.mktemp("sides"))


@pytest.fixture
def repo(history: tuple[Path, dict[str, str], Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(history[0], tmp_path / "repo"))


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line on ``repo`` (routed to the daemon that holds the store), in this process: the tests
    call it on a thread (``asyncio.to_thread``), so the daemon's loop keeps serving."""
    return commandline.cli(*args, repo=repo)


async def tool(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content[0].text
    return result.structured_content


def share(totals: dict[str, Any]) -> Fraction:
    """The line share a total gate reads (coverage.py's statements)."""
    return Fraction(totals["lines"].hit, totals["lines"].found)


async def test_a_subset_run_newer_than_the_complete_one_is_chosen_nowhere_and_reads_as_not_observed_when_named(
    repo: Path, history: tuple[Path, dict[str, str], Path], isolated_home: Path
) -> None:
    _, commits, c0_report = history
    shutil.copy(c0_report, repo / "c0.coverage.json")
    async with in_process(Settings.from_env(port=0)) as daemon:
        pid = (await asyncio.to_thread(daemon.client().register, repo))["project_id"]
        async with project_client(daemon, pid) as client:
            c0 = await tool(
                client,
                "coverage_import",
                {"report_path": "c0.coverage.json", "suite": "unit", "commit": commits["c0"]},
            )
            c0_id = c0["data"]["snapshot"]["snapshot_id"]
            registered = await tool(client, "register_test_command", MEASURE_COMMAND)
            command_id = registered["data"]["command"]["id"]
            approved = await asyncio.to_thread(
                cli, repo, "command", "approve", command_id, "--note", "read it"
            )
            assert approved.returncode == 0, approved.stderr
            whole = (await tool(client, "run_test", {"command_id": command_id, "wait": True}))["data"]["run"]
            assert whole["state"] == "succeeded", whole
            complete_id = whole["artifacts"][0]["snapshot_id"]
            one = (
                await tool(
                    client,
                    "run_test",
                    {
                        "command_id": command_id,
                        "wait": True,
                        "args": [ONE_TEST],
                        "baseline": {"snapshot_id": complete_id},
                    },
                )
            )["data"]["run"]
            assert one["state"] == "succeeded", one
            subset_id = one["artifacts"][0]["snapshot_id"]

            # The run's own incremental review: its misses are not_observed in the union and in the nested diff.
            review = one["incremental_review"]
            assert review["current"]["scope"] == "subset"
            assert review["diff"]["categories"]["LBC"] == 0
            missed = review["diff"]["categories"]["not_observed"]
            assert (
                missed > 0
                and review["categories"]["lost"] == 0
                and review["categories"]["not_observed"] >= missed
            )

            # project_context: the suite's snapshot is the complete run, though the subset is newer.
            context = await tool(client, "project_context", {})
            [suite] = [s for s in context["data"]["suites"] if s["suite"] == "unit"]
            assert (suite["snapshot_id"], suite["scope"]) == (complete_id, "complete")

            # change with no measurement: HEAD's complete run against the previous complete snapshot (c0).
            change = (
                await tool(client, "coverage_review", {"task": "change", "measurement": {"suite": "unit"}})
            )["data"]
            assert change["current"]["snapshot_ids"] == [complete_id]
            assert change["baseline"]["snapshot_ids"] == [c0_id]
            assert change["categories"]["LBC"] == 0 and "not_observed" not in change["categories"]
            assert change["regression"]["status"] == "none"

            # change with the subset named: its misses are not_observed, never LBC, in counts, rows and ranges.
            named = (
                await tool(
                    client,
                    "coverage_review",
                    {
                        "task": "change",
                        "measurement": {"snapshot_id": subset_id},
                        "baseline": {"kind": "explicit", "snapshot_id": complete_id},
                        "representation": "review",
                    },
                )
            )["data"]
            assert named["current"]["scope"] == "subset"
            assert named["categories"]["LBC"] == 0 and named["categories"]["not_observed"] == missed
            assert named["regression"] == {"status": "not_observed", "lines": missed}
            assert all("LBC" not in f["lines"] for f in named["files"])
            assert {r["category"] for r in named["ranges"]} >= {"not_observed"}
            assert "LBC" not in {r["category"] for r in named["ranges"]}

            # history: the subset is no point of the series; each point says its scope and provenance.
            shown = (
                await tool(
                    client,
                    "coverage_review",
                    {"task": "history", "measurement": {"suite": "unit"}, "representation": "review"},
                )
            )["data"]
            assert shown["window"]["snapshots"] == 2
            assert [p["snapshot_id"] for p in shown["points"]] == [complete_id, c0_id]
            assert [p["scope"] for p in shown["points"]] == ["complete", "complete"]
            assert shown["points"][0]["run"]["run_id"] == whole["id"] and shown["points"][1]["run"] is None

            # the listing shows every snapshot with its scope and, for runs, run, command and case arguments.
            listed = (await tool(client, "coverage_review", {"task": "snapshots"}))["data"]["snapshots"]
            rows = {r[0]: r for r in listed}
            assert rows[subset_id][7] == "subset" and rows[subset_id][12] == [
                one["id"],
                "measure",
                ["./" + ONE_TEST],  # the case argument in its canonical form, as it reached argv
            ]
            assert rows[complete_id][7] == "complete" and rows[complete_id][12] == [
                whole["id"],
                "measure",
                [],
            ]
            assert rows[c0_id][11:13] == ["import", None]

        # The CLI, routed to the daemon that holds the store.
        listed_cli = await asyncio.to_thread(cli, repo, "snapshots")
        assert listed_cli.returncode == 0, listed_cli.stderr
        [subset_line] = [line for line in listed_cli.stdout.splitlines() if line.startswith(subset_id[:20])]
        assert "subset" in subset_line and one["id"] in subset_line and ONE_TEST in subset_line

        complete = (await asyncio.to_thread(daemon.client().snapshot, pid, complete_id)).totals
        subset = (await asyncio.to_thread(daemon.client().snapshot, pid, subset_id)).totals
        full, part = share(complete), share(subset)
        assert part < full
        threshold = str(int(full * 100))  # a whole percent the complete run meets and the subset does not
        assert part * 100 < int(full * 100)

        # The threshold is a line share: --counter lines checks the exact line total (the headline adds branches).
        gate = await asyncio.to_thread(
            cli, repo, "gate", "--fail-under-total", threshold, "--counter", "lines", "--suite", "unit"
        )
        assert gate.returncode == 0, gate.stdout + gate.stderr
        assert "PASS total" in gate.stdout

        refused = await asyncio.to_thread(
            cli,
            repo,
            "gate",
            "--fail-under-total",
            threshold,
            "--counter",
            "lines",
            "--current",
            subset_id,
            "--json",
        )
        assert refused.returncode == 2, refused.stdout + refused.stderr
        error = json.loads(refused.stderr)["error"]
        assert error["code"] == "invalid_argument" and error["details"]["reason"] == "subset_total"
        assert "subset" in error["message"] and subset_id in error["message"]

        diff = await asyncio.to_thread(cli, repo, "diff", "--baseline", "HEAD~1", "--suite", "unit", "--json")
        assert diff.returncode == 0, diff.stderr
        data = json.loads(diff.stdout)["data"]
        assert data["current"]["snapshot_ids"] == [complete_id] and data["categories"]["LBC"] == 0

        markdown = await asyncio.to_thread(
            cli, repo, "diff", "--baseline", "HEAD~1", "--suite", "unit", "--format", "markdown"
        )
        assert markdown.returncode == 0, markdown.stderr
        both = complete["lines"] + complete["branches"]  # coverage.py's own total: statements and branches
        assert f"→ {percent(both.hit, both.found)} " in markdown.stdout  # the complete run's total
        assert "LBC lost baseline coverage" not in markdown.stdout

        named_md = await asyncio.to_thread(
            cli, repo, "diff", "--baseline", complete_id, "--current", subset_id, "--format", "markdown"
        )
        assert named_md.returncode == 0, named_md.stderr
        assert "#### LBC" not in named_md.stdout and "not_observed" in named_md.stdout

        shown_cli = await asyncio.to_thread(cli, repo, "review", "history", "--suite", "unit")
        assert shown_cli.returncode == 0, shown_cli.stderr
        assert complete_id in shown_cli.stdout and subset_id not in shown_cli.stdout
        assert whole["id"] in shown_cli.stdout

        # The dashboard's defaults: the complete run as current, the c0 import as its baseline.
        async with aiohttp.ClientSession(cookie_jar=jar()) as http:
            await signed_in(http, daemon)
            async with http.get(daemon.url + "/api/dashboard") as response:
                assert response.status == 200
                page = (await response.json())["data"]
        assert page["selection"]["current"]["snapshot_id"] == complete_id
        assert page["selection"]["baseline"]["snapshot_id"] == c0_id
        assert page["selection"]["current"]["scope"] == "complete"
        assert page["selection"]["current"]["run"]["run_id"] == whole["id"]
        points = {p["snapshot_id"]: p for p in page["timeline"]["points"]}
        assert points[subset_id]["scope"] == "subset"  # listed, and labelled, but never chosen
        assert points[subset_id]["run"] == {
            "run_id": one["id"],
            "command_id": command_id,
            "command": "measure",
            "args": ["./" + ONE_TEST],
        }
        assert points[c0_id]["run"] is None and points[c0_id]["provenance"] == "import"
