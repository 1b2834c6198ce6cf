"""The dashboard's numbers, order, limits and static report hold up: exact deltas, the worst files first,
bounded event streams, and a report that is safe to publish (no secret, no hostile text as markup)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from coverage_cli.ci_cmds import before_after
from coverage_core.config import Settings
from coverage_core.display import delta as cli_delta
from coverage_core.project import open_project
from coverage_core.service import Service

from . import commandline
from .daemons import in_process
from .gitrepo import lcov, make_repo
from .test_dashboard_api import signed_in


def run_cli(repo: Path, *args: str) -> dict[str, Any]:
    out = commandline.cli(*args, "--json", repo=repo, process=True, timeout=300)
    assert out.returncode == 0, out.stderr + out.stdout
    return json.loads(out.stdout)


def ingest_lcov(repo: Path, name: str, records: dict[str, dict[int, int]]) -> str:
    path = repo.parent / name
    path.write_text(lcov(records))
    project = open_project(repo)
    try:
        return project.ingest(path).snapshot_id
    finally:
        project.close()


def test_the_metric_delta_is_exact_from_the_counts_as_diff_computes_it(tmp_path: Path) -> None:
    # 79974 of 120000 against 80000 of 120000: -0.0216... points. Subtracting the rounded
    # percentages (66.65 - 66.67) would say -0.02 only by luck of rounding; here it said -0.03.
    n = 120_000
    repo = make_repo(tmp_path / "big", {"big.py": "x = 1\n" * n})
    base = ingest_lcov(repo, "base.info", {"big.py": {i: int(i <= 80_000) for i in range(1, n + 1)}})
    cur = ingest_lcov(repo, "cur.info", {"big.py": {i: int(i <= 79_974) for i in range(1, n + 1)}})
    with open_project(repo) as project:
        answer = Service(project).call("dashboard", {"current": cur, "baseline": base})
    metric = answer["data"]["metrics"]["lines"]
    compared = run_cli(repo, "diff", "--baseline", base, "--current", cur)["data"]
    before, after = before_after(compared["categories"])
    assert (before, after) == ((80_000, n), (79_974, n))
    assert metric["delta_text"] == cli_delta(before, after) == "-0.02%"
    assert metric["delta"] == -0.02


@pytest.fixture
def small_repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "small", {"a.py": "x = 1\ny = 2\n"})
    ingest_lcov(repo, "a.info", {"a.py": {1: 1, 2: 0}})
    return repo


async def test_event_streams_are_capped_per_session_and_in_all_with_a_clear_429(
    small_repo: Path, isolated_home: Path
) -> None:
    from coverage_daemon.dashboard_streams import MAX_STREAMS, MAX_STREAMS_PER_SESSION

    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        await asyncio.to_thread(running.client().register, small_repo)
        sessions = [
            aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
            for _ in range(MAX_STREAMS // MAX_STREAMS_PER_SESSION + 1)
        ]
        opened: list[aiohttp.ClientResponse] = []
        try:
            for http in sessions:
                await signed_in(http, running)

            async def stream(http: aiohttp.ClientSession) -> aiohttp.ClientResponse:
                response = await http.get(running.url + "/api/dashboard/events")
                if response.status == 200:
                    opened.append(response)
                    assert (await response.content.readuntil(b"\n\n")).startswith(b"retry:")
                return response

            first = sessions[0]
            for _ in range(MAX_STREAMS_PER_SESSION):
                assert (await stream(first)).status == 200
            refused = await stream(first)
            assert refused.status == 429
            error = (await refused.json())["error"]
            assert error["code"] == "too_many_requests" and "dashboard tabs" in error["suggestion"]
            assert error["details"]["scope"] == "session"
            # other sessions fill the daemon's cap; past it even a new session is refused
            for http in sessions[1:-1]:
                for _ in range(MAX_STREAMS_PER_SESSION):
                    assert (await stream(http)).status == 200
            assert running.daemon.streams.open == MAX_STREAMS
            late = await stream(sessions[-1])
            assert late.status == 429 and (await late.json())["error"]["details"]["scope"] == "daemon"
            # one stream closes: its place is free again (the server notices the closed connection)
            opened.pop().close()
            for _ in range(200):
                if running.daemon.streams.open < MAX_STREAMS:
                    break
                await asyncio.sleep(0.1)
            assert (await stream(sessions[-1])).status == 200
        finally:
            for response in opened:
                response.close()
            for http in sessions:
                await http.close()


async def test_all_streams_of_a_project_share_one_revision_check_and_all_hear_an_ingest(
    small_repo: Path, isolated_home: Path
) -> None:
    from coverage_daemon.dashboard_streams import hub

    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        await asyncio.to_thread(running.client().register, small_repo)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            await signed_in(http, running)
            responses = [await http.get(running.url + "/api/dashboard/events") for _ in range(3)]
            try:
                for response in responses:
                    assert response.status == 200
                    await response.content.readuntil(b"\n\n")
                shared = hub(running.daemon)
                assert len(shared.watches) == 1 and next(iter(shared.watches.values())).followers == 3
                (small_repo.parent / "b.info").write_text(lcov({"a.py": {1: 1, 2: 1}}))
                await asyncio.to_thread(run_cli, small_repo, "ingest", str(small_repo.parent / "b.info"))
                for response in responses:
                    while True:
                        block = await asyncio.wait_for(response.content.readuntil(b"\n\n"), 60)
                        if block.startswith(b"event: refresh"):
                            break
            finally:
                for response in responses:
                    response.close()


async def test_a_sign_in_link_names_its_project_and_a_bad_project_is_a_clear_400(
    small_repo: Path, isolated_home: Path
) -> None:
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        project = open_project(small_repo)
        project_id = project.checkout.project_id
        project.close()
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.post(
                running.url + "/api/dashboard/ticket?project=nothex", headers=running.admin
            ) as bad:
                assert bad.status == 400 and (await bad.json())["error"]["details"]["argument"] == "project"
            async with http.post(
                running.url + f"/api/dashboard/ticket?project={project_id}", headers=running.admin
            ) as minted:
                url = (await minted.json())["data"]["url"]
            assert url.endswith(f"&project={project_id}")
            async with http.get(url.replace(project_id, "zz")) as refused:
                assert refused.status == 400
            async with http.get(url, allow_redirects=False) as session:
                assert session.status == 200 and f'url=/?project={project_id}"' in await session.text()
