"""The REST API of a real in-process daemon: hardening, projects, settings, reads, writes, one error shape."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiohttp

from coverage_core.config import Settings
from coverage_core.storage.schema import SCHEMA_REVISION

from .daemons import COMPACTION_DEFAULTS, RUN_BOUND_DEFAULTS, Running, StoreHolder, in_process
from .gitrepo import git, make_repo

HARDENING = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Connection": "close",
}


async def call(
    d: Running,
    method: str,
    path: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> tuple[int, dict[str, str], Any]:
    sent = {**d.auth, **(headers or {})}
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, d.url + path, data=data, headers=sent) as response,
    ):
        text = await response.read()
        return response.status, dict(response.headers), json.loads(text) if text else None


async def register(d: Running, repo: Path) -> str:
    status, _, answer = await call(d, "POST", "/api/projects", body={"path": str(repo)})
    assert status in (200, 201), answer
    return answer["data"]["project"]["project_id"]


async def refused(d: Running, method: str, path: str, status: int, code: str, **kw: Any) -> dict[str, Any]:
    got, _, answer = await call(d, method, path, **kw)
    return assert_error(got, answer, status, code)


def assert_error(status: int, answer: Any, expected_status: int, code: str) -> dict[str, Any]:
    """The one error shape, answered to an authenticated caller: the error and its context."""
    assert status == expected_status, answer
    assert answer["context"]["schema_revision"] == SCHEMA_REVISION
    assert set(answer) == {"context", "error"} and set(answer["error"]) == {
        "code",
        "message",
        "suggestion",
        "details",
        "remedy",
    }
    assert answer["error"]["code"] == code and answer["error"]["suggestion"]
    return answer["error"]


async def test_every_response_is_hardened_closes_its_connection_and_has_no_cors(daemon: Running) -> None:
    """Seed: "HTTP/1 keep-alive is disabled so idle client connections cannot retain server tasks
    indefinitely." and "The server rejects non-loopback bind hosts, validates Host headers, emits
    restrictive browser headers, does not enable CORS, and serves no third-party assets." """
    for method, path in (("GET", "/health"), ("GET", "/nowhere"), ("GET", "/mcp"), ("PUT", "/api/projects")):
        status, headers, _ = await call(daemon, method, path, headers={"Origin": daemon.url})
        assert {k: headers.get(k) for k in HARDENING} == HARDENING, (method, path, status)
        assert not [k for k in headers if k.lower().startswith("access-control-")]


async def test_a_foreign_host_or_origin_is_forbidden_on_every_route(daemon: Running) -> None:
    """Seed: "The server rejects non-loopback bind hosts, validates Host headers, emits restrictive
    browser headers, does not enable CORS, and serves no third-party assets." """
    port = daemon.daemon.port
    for path in ("/health", "/api/projects", "/mcp"):
        status, _, _ = await call(daemon, "GET", path, headers={"Host": f"evil.example:{port}"})
        assert status == 403
        status, _, _ = await call(daemon, "GET", path, headers={"Origin": "http://evil.example"})
        assert status == 403
        status, _, _ = await call(daemon, "GET", path, headers={"Host": f"127.0.0.1:{port + 1}"})
        assert status == 403
    assert (await call(daemon, "GET", "/health", headers={"Host": f"localhost:{port}"}))[0] == 200
    assert (await call(daemon, "GET", "/health", headers={"Origin": f"http://localhost:{port}"}))[0] == 200


async def test_registering_a_checkout_opens_its_project_once_and_lists_it(
    daemon: Running, sample_repo: Path
) -> None:
    """Seed: "The HTTP daemon owns a common registry and lazily opens one project database for each
    canonical Git repository." and "Settings are inserted with validated server defaults when a project
    is first seen." and "Project summaries expose a stable short SHA-256 ID derived from the canonical
    repository key, so common-daemon project routes can resolve the project without a repository
    selection header." """
    status, _, answer = await call(
        daemon, "POST", "/api/projects", body={"path": str(sample_repo / "inventory")}
    )
    assert status == 201
    project = answer["data"]["project"]
    assert project["checkout_path"] == str(sample_repo.resolve())
    assert project["settings"] == {
        "approval_mode": "out_of_band",
        **COMPACTION_DEFAULTS,
        **RUN_BOUND_DEFAULTS,
    }
    status, _, again = await call(daemon, "POST", "/api/projects", body={"path": str(sample_repo)})
    assert status == 200 and again["data"]["project"]["project_id"] == project["project_id"]
    _, _, listing = await call(daemon, "GET", "/api/projects")
    assert [(p["project_id"], p["open"]) for p in listing["data"]["projects"]] == [
        (project["project_id"], True)
    ]
    status, _, one = await call(daemon, "GET", f"/api/projects/{project['project_id']}")
    assert status == 200 and one["data"]["project"]["repo_key"] == project["repo_key"]


async def test_project_settings_are_set_at_creation_patched_later_and_unknown_keys_refused(
    daemon: Running, sample_repo: Path
) -> None:
    """Seed: "REST `POST /api/projects` can provide project-creation overrides; `PATCH
    /api/projects/{id}`, the dashboard, and the one-shot CLI pass handle later changes." """
    status, _, answer = await call(
        daemon,
        "POST",
        "/api/projects",
        headers=daemon.admin,
        body={"path": str(sample_repo), "settings": {"approval_mode": "attested"}},
    )
    assert status == 201 and answer["data"]["project"]["settings"] == {
        "approval_mode": "attested",
        **COMPACTION_DEFAULTS,
        **RUN_BOUND_DEFAULTS,
    }
    pid = answer["data"]["project"]["project_id"]
    status, _, again = await call(
        daemon,
        "POST",
        "/api/projects",
        headers=daemon.admin,
        body={"path": str(sample_repo), "settings": {"approval_mode": "attested"}},
    )
    assert "PATCH" in assert_error(status, again, 400, "invalid_argument")["suggestion"]
    status, _, patched = await call(
        daemon,
        "PATCH",
        f"/api/projects/{pid}",
        headers=daemon.admin,
        body={"settings": {"approval_mode": "out_of_band"}},
    )
    assert status == 200 and patched["data"]["project"]["settings"] == {
        "approval_mode": "out_of_band",
        **COMPACTION_DEFAULTS,
        **RUN_BOUND_DEFAULTS,
    }
    status, _, bad = await call(
        daemon, "PATCH", f"/api/projects/{pid}", headers=daemon.admin, body={"settings": {"colour": "blue"}}
    )
    assert "colour" in assert_error(status, bad, 400, "invalid_argument")["message"]
    status, _, bad = await call(
        daemon,
        "PATCH",
        f"/api/projects/{pid}",
        headers=daemon.admin,
        body={"settings": {"approval_mode": "yes"}},
    )
    assert "out_of_band" in assert_error(status, bad, 400, "invalid_argument")["suggestion"]
    status, _, bad = await call(
        daemon, "PATCH", f"/api/projects/{pid}", headers=daemon.admin, body={"approval_mode": "attested"}
    )
    assert_error(status, bad, 400, "invalid_argument")
    status, _, one = await call(daemon, "GET", f"/api/projects/{pid}")
    assert one["data"]["project"]["settings"] == {
        "approval_mode": "out_of_band",
        **COMPACTION_DEFAULTS,
        **RUN_BOUND_DEFAULTS,
    }


async def test_every_operation_is_reached_through_one_route_and_returns_the_envelope(
    daemon: Running, sample_repo: Path
) -> None:
    pid = await register(daemon, sample_repo)
    ops = f"/api/projects/{pid}/ops"
    status, _, first = await call(
        daemon, "POST", ops + "/coverage_import", body={"report_path": "step3.coverage.lcov", "suite": "unit"}
    )
    assert status == 201 and first["data"]["duplicate"] is False
    snap = first["data"]["snapshot"]
    status, _, second = await call(
        daemon, "POST", ops + "/coverage_import", body={"report_path": "step3.coverage.lcov", "suite": "unit"}
    )
    assert status == 200 and second["data"]["duplicate"] is True
    assert second["data"]["snapshot"]["snapshot_id"] == snap["snapshot_id"]

    # GET for read-only operations, the query string coerced by the operation's schema
    _, _, listed = await call(
        daemon,
        "GET",
        ops + '/coverage_review?task=snapshots&filter={"suite":"unit"}&page_size=5&representation=review',
    )
    assert set(listed) == {"context", "data", "page"} and listed["context"]["project_id"] == pid
    assert [s["snapshot_id"] for s in listed["data"]["snapshots"]] == [snap["snapshot_id"]]
    assert listed["data"]["snapshots"][0]["totals"] == snap["totals"]
    assert listed["page"]["next_cursor"] is None

    measurement = '{"snapshot_id":"' + snap["snapshot_id"] + '"}'
    _, _, files = await call(
        daemon,
        "GET",
        f"{ops}/coverage_review?task=files&measurement={measurement}"
        "&page_size=2&order=uncovered&representation=review",
    )
    assert files["data"]["total"] == snap["files"] and len(files["data"]["files"]) == 2
    assert (files["page"]["next_cursor"] is not None) == (snap["files"] > 2)
    path = files["data"]["files"][0]["path"]
    _, _, detail = await call(
        daemon,
        "POST",
        ops + "/coverage_review",
        body={"task": "file", "measurement": {"snapshot_id": snap["snapshot_id"]}, "file": path},
    )
    lines = detail["data"]["lines"]
    assert detail["data"]["summary"]["path"] == path and len(lines["line"]) == len(lines["hits"]) > 0

    _, _, ctx = await call(daemon, "GET", ops + "/project_context?max_words=400")
    assert ctx["data"]["suites"][0]["snapshot_id"] == snap["snapshot_id"]
    status, _, insight = await call(
        daemon, "POST", ops + "/coverage_review", body={"task": "insight", "measurement": {"suite": "unit"}}
    )
    assert status == 200 and insight["data"]["claim_status"] in {"supported", "limited"}


async def test_errors_have_one_shape_and_the_status_of_their_code(
    daemon: Running, sample_repo: Path, tmp_path: Path
) -> None:
    pid = await register(daemon, sample_repo)
    ops = f"/api/projects/{pid}/ops"
    await refused(daemon, "GET", "/api/projects/0123456789abcdef", 404, "not_found")
    await refused(daemon, "GET", ops + "/no_such_operation", 404, "not_found")
    await refused(
        daemon, "GET", ops + "/coverage_review?task=snapshots&page_size=lots", 400, "invalid_argument"
    )
    await refused(daemon, "GET", ops + "/coverage_review?task=snapshots&colour=1", 400, "invalid_argument")
    await refused(daemon, "GET", ops + "/coverage_review?task=snapshots&page_size=0", 400, "invalid_argument")
    await refused(daemon, "GET", ops + "/coverage_review?task=snapshots&task=files", 400, "invalid_argument")
    await refused(
        daemon, "GET", ops + "/coverage_review?task=files&measurement={bad", 400, "invalid_argument"
    )
    status, headers, answer = await call(daemon, "GET", ops + "/coverage_import?report_path=x")
    assert_error(status, answer, 405, "invalid_argument")
    assert "POST" in headers["Allow"]
    await refused(
        daemon,
        "POST",
        ops + "/coverage_import",
        400,
        "invalid_argument",
        raw=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    await refused(
        daemon,
        "POST",
        ops + "/coverage_import",
        415,
        "invalid_argument",
        raw=b"{}",
        headers={"Content-Type": "text/plain"},
    )
    await refused(
        daemon,
        "POST",
        ops + "/coverage_import",
        400,
        "path_outside_checkout",
        body={"report_path": "../elsewhere.lcov"},
    )
    error = await refused(
        daemon,
        "POST",
        ops + "/coverage_review",
        400,
        "invalid_argument",
        body={"task": "insight", "colour": 1},
    )
    assert "colour" in error["message"]
    (tmp_path / "plain").mkdir()
    await refused(
        daemon, "POST", "/api/projects", 400, "not_a_repository", body={"path": str(tmp_path / "plain")}
    )
    await refused(daemon, "POST", "/api/projects", 400, "not_a_repository", body={"path": "relative/path"})
    await refused(daemon, "GET", "/api/nothing", 404, "not_found")
    status, headers, answer = await call(daemon, "DELETE", "/api/projects")
    assert_error(status, answer, 405, "invalid_argument")
    assert "GET" in headers["Allow"]


async def test_a_body_over_the_limit_is_refused_with_413(isolated_home: Path, sample_repo: Path) -> None:
    """Seed: "HTTP requests have an independent deadline and bounded JSON bodies, MCP requests use a
    semaphore" and "Request bodies, coverage reports, and retained command output are explicitly
    size-bounded; malformed coverage numbers are rejected." """
    async with in_process(Settings.from_env(port=0, http_max_body_bytes=1024)) as d:
        pid = await register(d, sample_repo)
        body = {"report_path": "x" * 2000}
        status, _, answer = await call(d, "POST", f"/api/projects/{pid}/ops/coverage_import", body=body)
        assert_error(status, answer, 413, "invalid_argument")


async def test_a_linked_worktree_shares_the_project_but_answers_for_its_own_checkout(
    daemon: Running, sample_repo: Path, tmp_path: Path
) -> None:
    linked = tmp_path / "linked"
    git(sample_repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    pid = await register(daemon, sample_repo)
    _, _, main_ctx = await call(daemon, "GET", f"/api/projects/{pid}/ops/project_context")
    _, _, linked_ctx = await call(
        daemon,
        "GET",
        f"/api/projects/{pid}/ops/project_context",
        headers={"x-coverage-mcp-repo": str(linked)},
    )
    assert main_ctx["context"]["project_id"] == linked_ctx["context"]["project_id"] == pid
    assert linked_ctx["context"]["checkout_path"] == str(linked.resolve())
    assert linked_ctx["data"]["project"]["branch"] == "feature"
    other = make_repo(tmp_path / "other", {"x.py": "x\n"})
    status, _, answer = await call(
        daemon, "GET", f"/api/projects/{pid}/ops/project_context", headers={"x-coverage-mcp-repo": str(other)}
    )
    assert_error(status, answer, 400, "invalid_argument")


async def test_a_store_held_by_another_process_answers_store_locked_after_the_wait(
    isolated_home: Path, sample_repo: Path, store_holder: StoreHolder
) -> None:
    async with in_process(Settings.from_env(port=0, store_wait_ms=300)) as d:
        started = time.monotonic()
        error = await refused(
            d, "POST", "/api/projects", 409, "store_locked", body={"path": str(sample_repo)}
        )
        assert 0.3 <= time.monotonic() - started  # it waited its 300 ms for the holder
        assert (
            f"pid {store_holder.pid}" in error["message"]
            and "COVERAGE_MCP_STORE_WAIT_MS" in error["suggestion"]
        )
        assert "(python)" in error["message"]  # the holder is named, not guessed
        assert "project.close()" in error["suggestion"]  # and how it lets go
        await asyncio.to_thread(store_holder.release)
        status, _, answer = await call(d, "POST", "/api/projects", body={"path": str(sample_repo)})
        assert status == 201, answer


async def test_a_store_released_during_the_wait_is_opened(
    isolated_home: Path, sample_repo: Path, store_holder: StoreHolder
) -> None:
    async with in_process(Settings.from_env(port=0, store_wait_ms=5000)) as d:
        asyncio.get_running_loop().call_later(0.3, lambda: store_holder.release(wait=False))
        status, _, answer = await call(d, "POST", "/api/projects", body={"path": str(sample_repo)})
        assert status == 201, answer


async def test_a_request_past_the_http_deadline_answers_504_and_leaks_nothing(
    isolated_home: Path, sample_repo: Path, store_holder: StoreHolder
) -> None:
    """Seed: "HTTP requests have an independent deadline and bounded JSON bodies, MCP requests use a
    semaphore" """
    settings = Settings.from_env(port=0, http_timeout_s=1, db_query_timeout_ms=500, store_wait_ms=10000)
    async with in_process(settings) as d:
        started = time.monotonic()
        await refused(d, "POST", "/api/projects", 504, "deadline_exceeded", body={"path": str(sample_repo)})
        assert (
            1 <= time.monotonic() - started
        )  # the 1 s deadline answered (504), not the 10 s store wait (409)
        await asyncio.to_thread(store_holder.release)
        # The open the first request started goes on, and this request uses it
        # instead of meeting a store its own daemon leaked (store_locked).
        status, _, answer = await call(d, "POST", "/api/projects", body={"path": str(sample_repo)})
        assert status in (200, 201), answer
        assert len(d.daemon.projects.open_stores) == 1
