"""Every operation is a row of one table, and each row says who may call it and where it appears (issue 28).

A golden table below names every row's principals and surfaces, so no admin or session-write row moves to a
weaker principal silently. The whole-table drift test reaches every row on each surface it declares (in
process, REST through a real daemon, the CLI's ``call(owner, ...)`` through that daemon, the dashboard's
session for the dashboard's rows and their aliases, ``GET /api/dashboard`` and its event stream among them;
MCP's rows are tests/test_surface_drift.py's) and gets the same answer
data, and for one bad argument each the same error code. A caller a row does not admit is refused
``forbidden`` and nothing changes.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from jsonschema import Draft202012Validator
from mcp.shared.exceptions import MCPError

from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.git import discover
from coverage_core.operations.table import OPERATIONS, TOOLS
from coverage_core.principals import Principal, Surface
from coverage_core.service import Service
from coverage_daemon import mcp
from coverage_daemon.auth import CSRF_HEADER
from coverage_daemon.client import DaemonProject
from coverage_daemon.client import call as owner_call
from coverage_daemon.projects import Target

from .daemons import Running, sdk_client
from .test_daemon_rest import call, register
from .test_dashboard_api import jar, signed_in
from .test_surface_drift import closed, without_stats

AGENT = {"agent", "client", "admin"}
EVERYWHERE_BUT_THE_DASHBOARD = {"mcp", "rest", "cli"}

# Every row, its principals and its surfaces. Changing a line here is a decision about who may do what:
# an admin (or a session's) row that starts admitting the client token or the agent must change this table.
GOLDEN: dict[str, tuple[set[str], set[str]]] = {
    "project_context": (AGENT, EVERYWHERE_BUT_THE_DASHBOARD),
    "coverage_review": (AGENT, EVERYWHERE_BUT_THE_DASHBOARD),
    "coverage_import": (AGENT, EVERYWHERE_BUT_THE_DASHBOARD),
    "register_test_command": (AGENT, EVERYWHERE_BUT_THE_DASHBOARD),
    "run_test": (AGENT, EVERYWHERE_BUT_THE_DASHBOARD),
    "run_review": (AGENT, EVERYWHERE_BUT_THE_DASHBOARD),
    "cancel_run": (AGENT, EVERYWHERE_BUT_THE_DASHBOARD),
    "command_list": ({"client", "admin"}, {"rest", "cli"}),
    "command_show": ({"client", "admin"}, {"rest", "cli"}),
    "command_approve": ({"admin", "session_write"}, {"rest", "cli", "dashboard"}),
    "command_reject": ({"admin", "session_write"}, {"rest", "cli", "dashboard"}),
    "run_list": ({"client", "admin"}, {"rest", "cli"}),
    "snapshot_delete": ({"admin"}, {"rest", "cli"}),
    "compact": ({"admin"}, {"rest", "cli"}),
    "compaction_inventory": ({"client", "admin"}, {"rest", "cli"}),
    "owner_import": ({"admin"}, {"rest", "cli"}),
    "project_settings": ({"client", "admin"}, {"rest", "cli"}),
    "project_settings_update": ({"admin", "session_write"}, {"rest", "cli", "dashboard"}),
    "analysis": ({"client", "admin"}, {"rest"}),
    # The dashboard's reads: its session, the client token (the static report through a daemon), the owner.
    "dashboard": ({"session_read", "client", "admin"}, {"dashboard", "rest", "cli"}),
    "dashboard_file": ({"session_read", "client", "admin"}, {"dashboard", "rest", "cli"}),
    "dashboard_run": ({"session_read", "client", "admin"}, {"dashboard", "rest", "cli"}),
    "dashboard_revision": ({"session_read", "client", "admin"}, {"dashboard", "rest"}),
    "dashboard_files": ({"session_read", "client", "admin"}, {"dashboard", "rest", "cli"}),
    "dashboard_tree": ({"session_read", "client", "admin"}, {"dashboard", "rest", "cli"}),
    "dashboard_functions": ({"session_read", "client", "admin"}, {"dashboard", "rest", "cli"}),
    "dashboard_source": ({"session_read", "client", "admin"}, {"dashboard", "rest", "cli"}),
    "dashboard_line_tests": ({"session_read", "client", "admin"}, {"dashboard", "rest", "cli"}),
    "dashboard_incremental": ({"session_read", "client", "admin"}, {"dashboard", "rest", "cli"}),
}

# The dashboard's routes that are aliases of its reads (the event stream: its first event carries the revision).
ALIASES = {
    "dashboard": "/api/dashboard",
    "dashboard_file": "/api/dashboard/file",
    "dashboard_run": "/api/dashboard/run",
    "dashboard_revision": "/api/dashboard/events",
}
# What the dashboard alias adds to the dashboard row's data: the projects to switch between, the refresh period.
ALIAS_EXTRAS = ("projects", "refresh_s")


def test_every_row_names_a_handler_that_imports_and_is_a_function_of_its_module() -> None:
    # A row's handler is a "module:function" string imported on the first call: a misspelt one would
    # otherwise fail only when someone calls that row.
    for name, op in OPERATIONS.items():
        module, _, function = op.handler.partition(":")
        assert module.startswith("coverage_core.") and function, name
        handler = getattr(importlib.import_module(module), function)
        assert callable(handler) and handler.__name__ == function, name


def test_every_row_admits_exactly_the_principals_and_appears_on_exactly_the_surfaces_the_golden_table_names() -> (
    None
):
    declared = {
        name: ({p.value for p in op.principals}, {s.value for s in op.surfaces})
        for name, op in OPERATIONS.items()
    }
    assert declared == GOLDEN
    # no agent reaches a row that is not an agent's tool, and MCP lists exactly the agent's rows
    assert [name for name, op in OPERATIONS.items() if Principal.AGENT in op.principals] == list(TOOLS)
    assert [tool["name"] for tool in mcp.tools()] == [name for name, (_, on) in GOLDEN.items() if "mcp" in on]


# -- the whole table on every surface ------------------------------------------------------------------

REGISTER = {
    "name": "table",
    "argv": [sys.executable, "-c", "print('table')"],
    "artifacts": [{"path": "table.json", "suite": "unit"}],
}
APPROVED = {**REGISTER, "name": "approved", "argv": [sys.executable, "-c", "print('approved')"]}
REJECTED = {**REGISTER, "name": "rejected", "argv": [sys.executable, "-c", "print('rejected')"]}


def owner_rows(
    repo: Path, first: str, pending: str, approved: str, rejected: str, run: str, path: str
) -> dict[str, dict[str, Any]]:
    """One call per row an agent cannot make, each answering the same when made again (dry runs, a decision
    already recorded, an import already stored, a setting at its value)."""
    return {
        "command_list": {},
        "command_show": {"command_id": pending},
        "command_approve": {"command_id": approved, "by": "tester"},
        "command_reject": {"command_id": rejected, "by": "tester"},
        "run_list": {"limit": 5},
        "snapshot_delete": {"snapshot_ids": [first], "dry_run": True},
        "compact": {"older_than": "0", "dry_run": True},
        "compaction_inventory": {},
        "owner_import": {"report_path": str(repo / "step3.coverage.json")},
        "project_settings": {},
        "project_settings_update": {"settings": {"compaction_batch_size": 8}},
        "analysis": {"name": "history", "arguments": {"counter": "lines"}},
        "dashboard": {"baseline": first, "order": "uncovered"},
        "dashboard_file": {"snapshot": first, "file": path},
        "dashboard_run": {"run": run},
        "dashboard_revision": {},
        "dashboard_files": {"snapshot": first, "sort": "missed", "descending": True, "limit": 2},
        "dashboard_tree": {"snapshot": first},
        "dashboard_functions": {"snapshot": first, "sort": "hits"},
        "dashboard_source": {"snapshot": first, "file": path, "start": 1, "count": 20},
        "dashboard_line_tests": {"snapshot": first, "file": path, "line": 1},
        "dashboard_incremental": {"snapshot": first, "baseline": first},
    }


# One bad argument per row: the same code on every surface.
BAD: dict[str, tuple[dict[str, Any], ErrorCode]] = {
    "command_list": ({"status": "bogus"}, ErrorCode.INVALID_ARGUMENT),
    "command_show": ({"command_id": "not-a-command"}, ErrorCode.INVALID_ARGUMENT),
    "command_approve": ({"command_id": "cmd-0000000000000000"}, ErrorCode.NOT_FOUND),
    "command_reject": ({"command_id": "cmd-0000000000000000", "via": "attested"}, ErrorCode.INVALID_ARGUMENT),
    "run_list": ({"limit": 0}, ErrorCode.INVALID_ARGUMENT),
    "snapshot_delete": ({"snapshot_ids": ["snap-1"], "suite": "unit"}, ErrorCode.INVALID_ARGUMENT),
    "compact": ({"older_than": "garbage"}, ErrorCode.INVALID_ARGUMENT),
    "compaction_inventory": ({"x": 1}, ErrorCode.INVALID_ARGUMENT),
    "owner_import": ({"report_path": "/no/such/coverage.json"}, ErrorCode.NOT_FOUND),
    "project_settings": ({"x": 1}, ErrorCode.INVALID_ARGUMENT),
    "project_settings_update": ({"settings": {"nope": 1}}, ErrorCode.INVALID_ARGUMENT),
    "analysis": ({"name": "history", "arguments": {"last": 3}}, ErrorCode.INVALID_ARGUMENT),
    "dashboard": ({"order": "bogus"}, ErrorCode.INVALID_ARGUMENT),
    "dashboard_file": ({"snapshot": "snap-ffffffffffffffff", "file": "a.py"}, ErrorCode.NOT_FOUND),
    "dashboard_run": ({"run": "run-0000000000000000"}, ErrorCode.NOT_FOUND),
    "dashboard_revision": ({"x": "1"}, ErrorCode.INVALID_ARGUMENT),
    "dashboard_files": ({"snapshot": "snap-ffffffffffffffff"}, ErrorCode.NOT_FOUND),
    "dashboard_tree": ({"snapshot": "snap-ffffffffffffffff"}, ErrorCode.NOT_FOUND),
    "dashboard_functions": (
        {"snapshot": "snap-ffffffffffffffff", "sort": "size"},
        ErrorCode.INVALID_ARGUMENT,
    ),
    "dashboard_source": (
        {"snapshot": "snap-ffffffffffffffff", "file": "a.py", "part": "all"},
        ErrorCode.INVALID_ARGUMENT,
    ),
    "dashboard_line_tests": (
        {"snapshot": "snap-ffffffffffffffff", "file": "a.py", "line": 0},
        ErrorCode.INVALID_ARGUMENT,
    ),
    "dashboard_incremental": ({"snapshot": "snap-ffffffffffffffff", "baseline": "x"}, ErrorCode.NOT_FOUND),
}


async def prepared(daemon: Running, repo: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """The project, two snapshots, a pending, an approved (with a finished run) and a rejected command."""
    pid = await register(daemon, repo)
    ids = []
    for report in ("step1.coverage.json", "step3.coverage.json"):
        status, _, body = await call(
            daemon, "POST", f"/api/projects/{pid}/ops/coverage_import", body={"report_path": report}
        )
        assert status == 201, body
        ids.append(body["data"]["snapshot"]["snapshot_id"])
    _, project = await daemon.daemon.projects.resolve(Target(project_id=pid))
    service = Service(project)

    def command(spec: dict[str, Any]) -> str:
        return str(service.call("register_test_command", spec)["data"]["command"]["id"])

    pending, approved, rejected = [
        await asyncio.to_thread(command, spec) for spec in (REGISTER, APPROVED, REJECTED)
    ]
    await asyncio.to_thread(service.call, "command_approve", {"command_id": approved, "by": "tester"})
    await asyncio.to_thread(service.call, "command_reject", {"command_id": rejected, "by": "tester"})
    run = await asyncio.to_thread(service.call, "run_test", {"command_id": approved, "wait": True})
    assert run["data"]["run"]["state"] == "succeeded", run
    shown = await asyncio.to_thread(service.call, "dashboard")
    path = shown["data"]["files"]["rows"][0]["path"]
    return pid, owner_rows(repo, ids[0], pending, approved, rejected, run["data"]["run"]["id"], path)


def owner_of(daemon: Running, repo: Path) -> DaemonProject:
    """What the CLI's ``call(owner, ...)`` holds when the daemon owns the store: the capability included."""
    settings = Settings.from_env()
    client = daemon.client(repo=str(repo))
    return DaemonProject(client, discover(repo), settings, daemon.daemon.capability)


async def test_every_row_answers_the_same_data_on_every_surface_it_declares(
    daemon: Running, sample_repo: Path
) -> None:
    pid, plan = await prepared(daemon, sample_repo)
    assert set(plan) | set(TOOLS) == set(OPERATIONS)  # the agent's rows: tests/test_surface_drift.py
    _, project = await daemon.daemon.projects.resolve(Target(project_id=pid))
    service, owner = Service(project), await asyncio.to_thread(owner_of, daemon, sample_repo)
    for name, args in plan.items():
        op = OPERATIONS[name]
        here = await asyncio.to_thread(service.call, name, copy.deepcopy(args))
        answers = {"in process": here}
        if Surface.REST in op.surfaces:  # with the client token alone where the row admits it
            headers = None if Principal.CLIENT in op.principals else daemon.admin
            status, _, body = await call(
                daemon, "POST", f"/api/projects/{pid}/ops/{name}", body=args, headers=headers
            )
            assert status in (200, 201), (name, body)
            answers["rest"] = body
        if Surface.CLI in op.surfaces:
            answers["cli"] = await asyncio.to_thread(owner_call, owner, name, copy.deepcopy(args))
        for surface, answer in answers.items():
            assert without_stats(answer) == without_stats(here), (name, surface)
        Draft202012Validator(closed(op.output_schema)).validate(here)
    # The dashboard's rows through a real session: the row's route and its alias answer the same.
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        csrf = await signed_in(http, daemon)
        for name, route in ALIASES.items():
            here = await asyncio.to_thread(service.call, name, copy.deepcopy(plan[name]))
            query = urllib.parse.urlencode(plan[name])
            async with http.get(f"{daemon.url}/api/projects/{pid}/ops/{name}?{query}") as response:
                row = await response.json()
                assert response.status == 200, (name, row)
            assert without_stats(row) == without_stats(here), name
            if name == "dashboard_revision":
                assert await first_revision(http, f"{daemon.url}{route}?project={pid}") == here["data"]
                continue
            async with http.get(f"{daemon.url}{route}?project={pid}&{query}") as response:
                alias = await response.json()
                assert response.status == 200, (name, alias)
            if name == "dashboard":
                assert alias["data"]["refresh_s"] == daemon.daemon.settings.dashboard_refresh_s
                assert pid in [p["project_id"] for p in alias["data"]["projects"]]
                for extra in ALIAS_EXTRAS:
                    alias["data"].pop(extra)
            assert without_stats(alias) == without_stats(here), name
        # The dashboard's Approve: its session approves as the daemon's user, via dashboard, the same record.
        approve = f"{daemon.url}/api/projects/{pid}/ops/command_approve"
        body = {"command_id": plan["command_show"]["command_id"]}
        async with http.post(approve, json=body, headers={CSRF_HEADER: csrf}) as response:
            approved = await response.json()
            assert response.status == 200, approved
    shown = await asyncio.to_thread(service.call, "command_show", body)
    assert approved["data"] == shown["data"] and shown["data"]["command"]["status"] == "approved"
    assert shown["data"]["command"]["decisions"][-1]["via"] == "dashboard"


async def test_a_bad_argument_of_every_row_is_the_same_coded_error_on_every_surface_it_declares(
    daemon: Running, sample_repo: Path
) -> None:
    pid = await register(daemon, sample_repo)
    assert set(BAD) == set(OPERATIONS) - set(TOOLS)  # the agent's rows: tests/test_surface_drift.py
    _, project = await daemon.daemon.projects.resolve(Target(project_id=pid))
    service, owner = Service(project), await asyncio.to_thread(owner_of, daemon, sample_repo)
    for name, (args, code) in BAD.items():
        op = OPERATIONS[name]
        with pytest.raises(CoverageError) as caught:
            await asyncio.to_thread(service.call, name, args)
        here = caught.value
        assert here.code is code, (name, here.to_dict())
        if Surface.REST in op.surfaces:
            status, _, body = await call(
                daemon, "POST", f"/api/projects/{pid}/ops/{name}", body=args, headers=daemon.admin
            )
            assert 400 <= status < 500 and body["error"]["code"] == code.value, (name, body)
            assert body["error"]["message"] == here.message
        if Surface.CLI in op.surfaces:
            with pytest.raises(CoverageError) as through:
                await asyncio.to_thread(owner_call, owner, name, args)
            assert through.value.code is code and through.value.message == here.message, name
    # The dashboard's aliases, through a real session: the same code (the event stream takes project only).
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        await signed_in(http, daemon)
        for name, route in ALIASES.items():
            args, code = BAD[name]
            url = f"{daemon.url}{route}?project={pid}&{urllib.parse.urlencode(args)}"
            async with http.get(url) as response:
                body = await response.json()
            assert 400 <= response.status < 500 and body["error"]["code"] == code.value, (name, body)


async def first_revision(http: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    """The revision the event stream sends first (its ``revision`` event), without the project id."""
    async with http.get(url) as stream:
        assert stream.status == 200
        name = ""
        while True:
            line = (await asyncio.wait_for(stream.content.readline(), 60)).decode().rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name == "revision":
                payload = json.loads(line[6:])
                return {"revision": payload["revision"]}


# -- a caller a row does not admit ------------------------------------------------------------------------


async def test_the_client_token_cannot_approve_and_the_refusal_changes_nothing(
    daemon: Running, sample_repo: Path
) -> None:
    pid = await register(daemon, sample_repo)
    _, _, body = await call(daemon, "POST", f"/api/projects/{pid}/ops/register_test_command", body=REGISTER)
    command_id = body["data"]["command"]["id"]
    for headers in ({}, {"x-coverage-mcp-capability": "guess"}):
        status, _, body = await call(
            daemon,
            "POST",
            f"/api/projects/{pid}/ops/command_approve",
            body={"command_id": command_id, "by": "agent"},
            headers=headers,
        )
        assert status == 403 and body["error"]["code"] == "forbidden", body
        assert "admin" in body["error"]["message"] and "command line" in body["error"]["suggestion"]
    status, _, body = await call(
        daemon, "GET", f"/api/projects/{pid}/ops/command_show?command_id={command_id}"
    )
    assert status == 200 and body["data"]["command"]["status"] == "pending"
    assert body["data"]["command"]["decisions"] == []


async def test_an_mcp_agent_naming_an_admin_row_gets_an_unknown_tool_and_nothing_runs(
    daemon: Running, sample_repo: Path
) -> None:
    pid = await register(daemon, sample_repo)
    for report in ("step1.coverage.json", "step3.coverage.json"):  # an older snapshot a pass could compact
        status, _, body = await call(
            daemon, "POST", f"/api/projects/{pid}/ops/coverage_import", body={"report_path": report}
        )
        assert status == 201, body
    async with sdk_client(daemon, f"{daemon.url}/p/{pid}/mcp", "auto") as client:
        for name in ("compact", "snapshot_delete", "command_approve", "owner_import"):
            with pytest.raises(MCPError) as caught:
                await client.call_tool(name, {"older_than": "0"} if name == "compact" else {})
            assert f"Unknown tool: {name}" in str(caught.value)
    status, _, body = await call(daemon, "GET", f"/api/projects/{pid}/ops/compaction_inventory")
    assert status == 200 and body["data"]["compacted"] == 0 and body["data"]["last_pass"] is None


async def test_a_dashboard_session_without_its_csrf_token_cannot_approve_and_nothing_changes(
    daemon: Running, sample_repo: Path
) -> None:
    pid = await register(daemon, sample_repo)
    _, _, body = await call(daemon, "POST", f"/api/projects/{pid}/ops/register_test_command", body=REGISTER)
    command_id = body["data"]["command"]["id"]
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        csrf = await signed_in(http, daemon)
        approve = f"{daemon.url}/api/projects/{pid}/ops/command_approve"
        for headers in ({}, {CSRF_HEADER: csrf[:-1]}):
            async with http.post(approve, json={"command_id": command_id}, headers=headers) as response:
                refusal = await response.json()
                assert response.status == 403 and refusal["error"]["code"] == "forbidden", refusal
        # the session reads nothing a row does not admit it to either
        async with http.get(f"{daemon.url}/api/projects/{pid}/ops/command_list") as response:
            assert response.status == 403
    _, _, body = await call(daemon, "GET", f"/api/projects/{pid}/ops/command_show?command_id={command_id}")
    assert body["data"]["command"]["status"] == "pending" and body["data"]["command"]["decisions"] == []


def test_in_process_a_weaker_principal_is_refused_before_the_handler_runs(sample_repo: Path) -> None:
    from coverage_core.project import open_project

    with open_project(sample_repo) as project:
        service = Service(project)
        for name, principal in (
            ("command_approve", Principal.CLIENT),
            ("compact", Principal.AGENT),
            ("compact", Principal.SESSION_WRITE),
            ("project_context", Principal.SESSION_READ),
            ("dashboard", Principal.AGENT),
            ("dashboard_revision", Principal.SESSION_WRITE),
        ):
            with pytest.raises(CoverageError) as caught:
                service.call(name, {"command_id": "cmd-0000000000000000"}, principal=principal)
            assert caught.value.code is ErrorCode.FORBIDDEN, name
            assert caught.value.details["admits"] == sorted(p.value for p in OPERATIONS[name].principals)
        # the owner (the default in process) is admitted: the call runs and fails on its own terms
        with pytest.raises(CoverageError) as caught:
            service.call("command_approve", {"command_id": "cmd-0000000000000000"})
        assert caught.value.code is ErrorCode.NOT_FOUND


async def test_a_dashboard_session_reaches_only_the_rows_that_admit_a_session(
    daemon: Running, sample_repo: Path
) -> None:
    pid = await register(daemon, sample_repo)
    async with aiohttp.ClientSession(cookie_jar=jar()) as http:
        csrf = await signed_in(http, daemon)
        for name, op in OPERATIONS.items():
            url = f"{daemon.url}/api/projects/{pid}/ops/{name}"
            async with http.post(url, json={}, headers={CSRF_HEADER: csrf}) as response:
                answer = await response.json()
            # A POST with the CSRF token proves both: the session's rows run ({} is a call of the dashboard's
            # reads without arguments, and no call of a decision), every other row is refused.
            if op.principals & {Principal.SESSION_READ, Principal.SESSION_WRITE}:
                runs = not op.input_schema.get("required")
                assert response.status == (200 if runs else 400), (name, answer)
                assert runs or answer["error"]["code"] == "invalid_argument", (name, answer)
            else:
                assert response.status == 403 and answer["error"]["code"] == "forbidden", (name, answer)
            if op.read_only:
                async with http.get(url) as response:
                    assert (response.status != 403) == (Principal.SESSION_READ in op.principals), name
