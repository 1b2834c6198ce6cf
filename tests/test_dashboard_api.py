"""The dashboard's projection, routes and session without a browser: real daemon, real store, real CLI."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from coverage_cli.output import EXIT_CODES
from coverage_core.config import Settings
from coverage_core.display import delta as delta_text
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.operations.dashboard_view import revision
from coverage_core.project import Project, open_project
from coverage_core.service import Service
from coverage_daemon.auth import CSRF_HEADER, SESSION_COOKIE
from coverage_daemon.identity import CAPABILITY_HEADER

from . import commandline
from .browser import cli
from .conftest import StoredCheckout
from .daemons import Running, ServeProcess, in_process
from .test_trust_auth import as_nobody


@pytest.fixture
def repo(shop_stored: StoredCheckout) -> Path:
    """The measured package with c0 and c1 stored (stored once for the module, a pristine copy per test)."""
    return shop_stored.fresh()


@pytest.fixture
async def live(repo: Path, isolated_home: Path) -> AsyncIterator[Running]:
    async with in_process(Settings.from_env(port=0, dashboard_refresh_s=1)) as running:
        await asyncio.to_thread(running.client().register, repo)
        yield running


def jar() -> aiohttp.CookieJar:
    return aiohttp.CookieJar(
        unsafe=True
    )  # the daemon is an IP address; aiohttp keeps no cookie for one by default


async def signed_in(http: aiohttp.ClientSession, d: Running) -> str:
    """Sign ``http`` in as the browser would; the page's CSRF token."""
    async with http.post(d.url + "/api/dashboard/ticket", headers=d.admin) as minted:
        assert minted.status == 201
        url = (await minted.json())["data"]["url"]
    async with http.get(url) as session:
        assert session.status == 200
    async with http.get(d.url + "/") as page:
        assert page.status == 200
        found = re.search(r'name="csrf-token" content="([^"]+)"', await page.text())
    assert found
    return found.group(1)


# -- the projection (library) -----------------------------------------------------------------


def dashboard(project: Project, con: Any = None, **chosen: str) -> dict[str, Any]:
    """The dashboard row's data, in process (as the store's owner)."""
    return Service(project).call("dashboard", chosen, con=con)["data"]


def file_source(project: Project, con: Any, snapshot: str, path: str) -> dict[str, Any]:
    return Service(project).call("dashboard_file", {"snapshot": snapshot, "file": path}, con=con)["data"]


def test_the_projection_shows_the_stored_totals_with_the_delta_against_the_previous_snapshot(
    repo: Path,
) -> None:
    """Seed: "The embedded dashboard uses one bounded `GET /api/dashboard` projection for its metrics,
    timeline, run activity, incremental categories, file table, and compaction inventory." """
    project = open_project(repo)
    con = project.store.cursor()
    try:
        snaps = project.store.snapshots(limit=2, con=con)
        data = dashboard(project, con)
        assert data["selection"]["current"]["snapshot_id"] == snaps[0].snapshot_id
        assert data["selection"]["baseline"]["snapshot_id"] == snaps[1].snapshot_id
        for name in ("lines", "branches", "functions"):
            now, then = snaps[0].totals[name], snaps[1].totals[name]
            metric = data["metrics"][name]
            assert (metric["current"]["hit"], metric["current"]["found"]) == (now.hit, now.found)
            assert metric["delta_text"] == delta_text((then.hit, then.found), (now.hit, now.found))
        assert [p["snapshot_id"] for p in data["timeline"]["points"]] == [
            s.snapshot_id for s in reversed(snaps)
        ]
        assert data["change"]["available"] and data["change"]["categories"]["categories"]["UNC"] == 4
        assert {f["path"] for f in data["files"]["rows"]} == {
            "shop/__init__.py",
            "shop/cart.py",
            "shop/extra.py",
        }
        assert data["tests"]["count"] == 4 and len(data["tests"]["named"]) == 4
        # baseline none compares nothing; an explicit baseline is that snapshot, in either direction
        alone = dashboard(project, con, baseline="none")
        assert alone["selection"]["baseline"] is None and alone["change"] is None
        assert alone["metrics"]["lines"]["delta"] is None
        swapped = dashboard(project, con, current=snaps[1].snapshot_id, baseline=snaps[0].snapshot_id)
        assert swapped["metrics"]["lines"]["delta"] == -data["metrics"]["lines"]["delta"]
    finally:
        con.close()
        project.close()


def test_the_projection_refuses_an_unknown_snapshot_and_a_suite_the_current_is_not_of(repo: Path) -> None:
    project = open_project(repo)
    con = project.store.cursor()
    try:
        with pytest.raises(CoverageError) as unknown:
            dashboard(project, con, current="snap-ffffffffffffffff")
        assert unknown.value.code is ErrorCode.NOT_FOUND and unknown.value.details["selection"] == "current"
        with pytest.raises(CoverageError) as base:
            dashboard(project, con, baseline="snap-ffffffffffffffff")
        assert base.value.details["selection"] == "baseline"
        current = project.store.snapshots(limit=1, con=con)[0].snapshot_id
        with pytest.raises(CoverageError) as suite:
            dashboard(project, con, current=current, suite="nightly")
        assert suite.value.code is ErrorCode.INVALID_ARGUMENT
    finally:
        con.close()
        project.close()


def test_the_revision_changes_with_an_ingest_and_only_then(repo: Path, shop_history: Any) -> None:
    project = open_project(repo)
    try:
        before = revision(project.store.con)
        assert revision(project.store.con) == before
        dashboard(project, project.store.con)  # reading changes nothing
        assert revision(project.store.con) == before
        path, _ = shop_history[1]["c0"]
        project.ingest(path, suite="other")
        assert revision(project.store.con) != before
    finally:
        project.close()


def test_an_empty_file_drills_down_to_no_lines_rather_than_an_error(repo: Path) -> None:
    project = open_project(repo)
    try:
        snap = project.store.snapshots(limit=1)[0].snapshot_id
        assert file_source(project, project.store.con, snap, "shop/__init__.py")["lines"] == []
        assert len(file_source(project, project.store.con, snap, "shop/cart.py")["lines"]) > 20
    finally:
        project.close()


# -- the routes ---------------------------------------------------------------------------------


async def test_a_session_reads_the_projection_and_its_numbers_are_the_cli_s(
    live: Running, repo: Path
) -> None:
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        await signed_in(http, live)
        async with http.get(live.url + "/api/dashboard") as response:
            assert response.status == 200
            data = (await response.json())["data"]
    listed = (await asyncio.to_thread(cli, repo, "snapshots"))["data"]["snapshots"]
    for name in ("lines", "branches", "functions"):
        shown = data["metrics"][name]["current"]
        assert (shown["hit"], shown["found"]) == (
            listed[0]["totals"][name]["hit"],
            listed[0]["totals"][name]["found"],
        )
    assert data["refresh_s"] == 1 and data["projects"][0]["checkout_path"] == str(repo)


async def test_bad_dashboard_queries_are_clear_4xx_errors(live: Running) -> None:
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        await signed_in(http, live)
        for query, status, code in (
            ("?project=nothex", 400, "invalid_argument"),
            ("?bogus=1", 400, "invalid_argument"),
            ("?current=snap-ffffffffffffffff", 404, "not_found"),
            ("?current=a&current=b", 400, "invalid_argument"),
            ("?project=0123456789abcdef", 404, None),
        ):
            async with http.get(live.url + "/api/dashboard" + query) as response:
                body = await response.json()
                assert response.status == status, (query, body)
                assert code is None or body["error"]["code"] == code
        async with http.get(live.url + "/api/dashboard/file?snapshot=snap-1") as response:
            assert response.status == 400


async def test_the_page_has_a_strict_policy_of_its_own_and_every_other_route_keeps_the_default(
    live: Running,
) -> None:
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        await signed_in(http, live)
        for path in ("/", "/dashboard.js", "/dashboard.css"):
            async with http.get(live.url + path) as response:
                policy = response.headers["Content-Security-Policy"]
                assert "script-src 'self'" in policy and "style-src 'self'" in policy
                assert "unsafe" not in policy and "frame-ancestors 'none'" in policy
                assert response.headers["X-Content-Type-Options"] == "nosniff"
        async with http.get(live.url + "/api/dashboard") as response:
            assert response.headers["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"
        page = await (await http.get(live.url + "/")).text()
        assert (
            "<script>" not in page
            and "style=" not in page
            and " on" not in page.split("<body>")[1].split(">")[0]
        )


async def test_a_sign_in_ticket_works_once_and_a_made_up_one_never(live: Running) -> None:
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        async with http.post(live.url + "/api/dashboard/ticket", headers=live.admin) as minted:
            url = (await minted.json())["data"]["url"]
        async with http.get(url) as first:
            assert first.status == 200
            cookie = first.cookies[SESSION_COOKIE]
            assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
        async with http.get(url) as again:
            assert again.status == 403 and (await again.json())["error"]["code"] == "forbidden"
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        for query in ("", "?ticket=", "?ticket=made-up", "?ticket=a&ticket=b"):
            async with http.get(live.url + "/session" + query) as response:
                assert response.status in (400, 403), query
            async with http.get(live.url + "/") as page:
                assert page.status == 403


async def test_the_client_token_cannot_mint_a_ticket_open_the_page_or_its_stream_or_approve(
    live: Running,
) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.post(live.url + "/api/dashboard/ticket", headers=live.auth) as minted:
            assert minted.status == 403
        for path in ("/", "/dashboard.js", "/api/dashboard/events"):
            async with http.get(live.url + path, headers=live.auth) as response:
                assert response.status == 403, path
        body = {"command_id": "cmd-0123456789abcdef"}
        approve = live.url + "/api/projects/0123456789abcdef/ops/command_approve"
        async with http.post(approve, json=body, headers=live.auth) as approved:
            refusal = (await approved.json())["error"]
            assert approved.status == 403 and refusal["code"] == "forbidden"
            assert "session_write" in refusal["message"] and "dashboard" in refusal["suggestion"]


async def test_approve_needs_the_session_and_its_csrf_token(live: Running, repo: Path) -> None:
    pid = (await asyncio.to_thread(live.client().register, repo))["project_id"]
    registered = await asyncio.to_thread(
        cli, repo, "command", "register", "--name", "t", "--artifact", "coverage.json:default", "--", "true"
    )
    command_id = registered["data"]["command"]["id"]
    body = {"command_id": command_id}
    approve = live.url + f"/api/projects/{pid}/ops/command_approve"  # the command_approve row
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        csrf = await signed_in(http, live)
        for headers in ({}, {CSRF_HEADER: "wrong"}, {CSRF_HEADER: csrf + "x"}, {CSRF_HEADER: "caf\u00e9"}):
            async with http.post(approve, json=body, headers=headers) as response:
                answer = await response.json()
                assert response.status == 403 and answer["error"]["code"] == "forbidden", headers
        # a page of another origin is refused before anything else
        async with http.post(
            approve,
            json=body,
            headers={CSRF_HEADER: csrf, "Origin": "http://evil.example"},
        ) as response:
            assert response.status == 403
        shown = await asyncio.to_thread(cli, repo, "command", "show", command_id)
        assert shown["data"]["command"]["status"] == "pending"  # nothing refused above approved it
        async with http.post(
            approve,
            json={**body, "command_id": "cmd-0123456789abcdef"},
            headers={CSRF_HEADER: csrf},
        ) as response:
            assert response.status == 404 and (await response.json())["error"]["code"] == "not_found"
        async with http.post(approve, json=body, headers={CSRF_HEADER: csrf}) as response:
            answer = await response.json()
            assert response.status == 200 and answer["data"]["command"]["status"] == "approved"
            assert answer["data"]["command"]["decisions"][-1]["via"] == "dashboard"
        async with http.post(approve, json={"project": 1}, headers={CSRF_HEADER: csrf}) as response:
            assert response.status == 400


async def test_the_event_stream_sends_a_refresh_only_when_the_revision_changes(
    live: Running, repo: Path, shop_history: Any
) -> None:
    """Seed: "It subscribes to `GET /api/dashboard/events`, which checks the server-side revision every
    ten seconds and emits a refresh event only when it changes." """
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        await signed_in(http, live)
        async with http.get(live.url + "/api/dashboard/events") as stream:
            assert stream.status == 200 and stream.headers["Content-Type"].startswith("text/event-stream")

            async def event() -> tuple[str, dict[str, Any]]:
                name = ""
                while True:
                    line = (await asyncio.wait_for(stream.content.readline(), 60)).decode().rstrip("\n")
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: ") and name:
                        assert (await stream.content.readline()) == b"\n"  # the event's end
                        return name, json.loads(line[6:])

            first = await event()
            assert first[0] == "revision"
            # two revision checks with nothing stored: comments only, no event
            for _ in range(2):
                assert (await asyncio.wait_for(stream.content.readline(), 60)) == b": unchanged\n"
                assert (await stream.content.readline()) == b"\n"
            path, _ = shop_history[1]["c0"]
            await asyncio.to_thread(cli, repo, "ingest", str(path), "--suite", "other")
            name, payload = await event()
            assert name == "refresh" and payload["revision"] != first[1]["revision"]
        for _ in range(200):
            if live.daemon.streams.open == 0:
                break
            await asyncio.sleep(0.1)
        assert live.daemon.streams.open == 0 and live.daemon.streams.closed >= 1


async def test_report_through_the_daemon_that_holds_the_store_embeds_its_projection(
    live: Running, repo: Path, tmp_path: Path
) -> None:
    through = await asyncio.to_thread(cli, repo, "report", "--single-file", "--html", str(tmp_path / "a"))
    assert through["sources"] >= 2
    embedded = _embedded(Path(through["report"]))
    # the report ships the files with the most missed lines (the page's "Missed lines" order)
    async with (
        aiohttp.ClientSession() as http,
        http.get(live.url + "/api/dashboard?order=uncovered", headers=live.auth) as response,
    ):
        served = (await response.json())["data"]
    assert embedded["metrics"] == through["metrics"] == served["metrics"]
    assert embedded["files"] == served["files"] and embedded["change"] == served["change"]
    assert "projects" not in embedded and "refresh_s" not in embedded
    assert "shop/cart.py" in embedded["sources"]


def _embedded(index: Path) -> dict[str, Any]:
    page = index.read_text()
    raw = page.split('<script type="application/json" id="dashboard-data">', 1)[1].split("</script>", 1)[0]
    return json.loads(raw)


def test_the_static_report_from_the_store_embeds_the_projection_and_its_policy(
    repo: Path, tmp_path: Path
) -> None:
    answer = cli(
        repo, "report", "--single-file", "--html", str(tmp_path / "out"), "--baseline", "none", process=False
    )
    index = Path(answer["report"])
    data = _embedded(index)
    assert data["selection"]["baseline"] is None and data["metrics"] == answer["metrics"]
    assert "shop/cart.py" in data["sources"]
    page = index.read_text()
    assert "connect-src 'none'" in page and "'unsafe-inline'" not in page
    assert 'src="/dashboard.js"' not in page and 'href="/dashboard.css"' not in page
    # a hostile name cannot close the data element
    assert "</script>" not in page.split('id="dashboard-data">', 1)[1].split("</script>", 1)[0]


def test_report_refuses_an_unknown_snapshot_with_its_code(repo: Path, tmp_path: Path) -> None:
    out = commandline.cli(
        "report", "--html", str(tmp_path / "x"), "--current", "snap-ffffffffffffffff", "--json", repo=repo
    )
    assert out.returncode == EXIT_CODES[ErrorCode.NOT_FOUND] != 0
    assert json.loads(out.stderr)["error"]["code"] == "not_found"
    assert not (tmp_path / "x" / "index.html").exists()


def test_dashboard_writes_its_one_time_link_to_a_private_file_never_to_its_output(
    serve_process: ServeProcess, repo: Path
) -> None:
    out = serve_process.cli("dashboard", "--no-open", "--json", "--repo", str(repo))
    assert out.returncode == 0, out.stderr
    assert "ticket" not in out.stdout and "ticket" not in out.stderr
    opener = Path(json.loads(out.stdout)["open_file"])
    assert opener.parent == serve_process.home
    assert stat.S_IMODE(os.lstat(opener).st_mode) == 0o600
    assert f"127.0.0.1:{serve_process.port}/session?ticket=" in opener.read_text()


_STOLEN = """
import sys, urllib.request, urllib.error
url, cookie = sys.argv[1], sys.argv[2]
for path in ("/", "/dashboard.js", "/api/dashboard", "/api/dashboard/events"):
    request = urllib.request.Request(url + path, headers={"Cookie": "coverage_mcp_session=" + cookie})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            print(path, response.status)
    except urllib.error.HTTPError as error:
        print(path, error.code)
"""


def test_another_uid_gets_nothing_even_with_a_stolen_session_cookie(
    serve_process: ServeProcess, repo: Path
) -> None:
    prefix = as_nobody()
    capability = serve_process.lock_metadata()["capability"]
    client = serve_process.client()
    client.register(repo)
    url = client.request("POST", "/api/dashboard/ticket", headers={CAPABILITY_HEADER: capability})[1]["data"][
        "url"
    ]
    with urllib.request.urlopen(url, timeout=10) as response:
        cookie = response.headers["Set-Cookie"].split(";", 1)[0].split("=", 1)[1]
    mine = urllib.request.Request(
        serve_process.url + "/api/dashboard", headers={"Cookie": f"{SESSION_COOKIE}={cookie}"}
    )
    with urllib.request.urlopen(mine, timeout=10) as response:
        assert response.status == 200  # the cookie works for its own user
    out = subprocess.run(
        [*prefix, "-c", _STOLEN, serve_process.url, cookie],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "/",
        "403",
        "/dashboard.js",
        "403",
        "/api/dashboard",
        "403",
        "/api/dashboard/events",
        "403",
    ]
