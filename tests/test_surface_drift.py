"""One operation, one answer, on every surface: REST, MCP and in-process ``Service.call`` (issue 12).

For every operation in ``OPERATIONS`` (and every ``coverage_review`` task) a
real daemon's ``POST /api/projects/{id}/ops/{name}``, its MCP ``tools/call``
through the official SDK client (``structuredContent``) and an in-process
``Service.call`` on the same store give the same envelope apart from
``context.stats`` and clock readings (a snapshot's ``age_s``); a failing call
gives the same ``code``, ``details`` and ``remedy`` everywhere. Every answer
also matches its tool's ``outputSchema``, and with the keys closed, so a key
an operation starts returning must be declared in
``coverage_core.output_schemas``. The CLI's side is tests/test_cli_surface.py.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from coverage_core.errors import CoverageError
from coverage_core.operations.review_task_table import TASK_DATA, TASK_NAMES, task_envelope
from coverage_core.operations.table import OPERATIONS, TOOLS
from coverage_core.project import open_project
from coverage_core.service import Service
from coverage_daemon import mcp
from coverage_daemon.projects import Target

from .daemons import Running, sdk_client
from .test_daemon_rest import call, register

FILE = "inventory/stock.py"


# Managed execution: a command registered as pending, and a finished run of an approved one (``ran``).
REGISTER = {
    "name": "drift",
    "argv": [sys.executable, "-c", "print('drift')"],
    "artifacts": [{"path": "drift.json", "suite": "unit"}],
}
APPROVED = {**REGISTER, "name": "approved", "argv": [sys.executable, "-c", "print('approved')"]}


def calls(
    first: str, second: str, command_id: str = "cmd-0000000000000000", run_id: str = "run-0000000000000000"
) -> list[tuple[str, dict[str, Any]]]:
    """A representative argument set per operation and per coverage_review task (two snapshots stored)."""
    review: dict[str, dict[str, Any]] = {
        "insight": {"limits": {"max_files": 2}},
        "change": {"baseline": {"kind": "explicit", "snapshot_id": first}},
        "incremental": {
            "measurement": {"snapshot_id": second},
            "baseline": {"kind": "explicit", "snapshot_id": first},
        },
        "history": {},
        "source": {"file": FILE, "lines": "1-30"},
        "tests": {"representation": "review"},
        "audit": {"limits": {"max_files": 1}},
        "all": {},
        "snapshots": {"page_size": 1},
        "files": {"order": "uncovered"},
        "file": {"file": FILE},
    }
    assert set(review) == set(TASK_NAMES)
    return [
        ("project_context", {}),
        *[("coverage_review", {"task": task, **args}) for task, args in review.items()],
        ("coverage_import", {"report_path": "step3.coverage.json"}),  # stored already: a duplicate
        ("register_test_command", REGISTER),  # registered already: the same pending command
        ("run_test", {"command_id": command_id, "idempotency_key": "drift", "wait": True}),  # the same run
        ("run_review", {"run_id": run_id}),
        ("cancel_run", {"run_id": run_id}),  # ended already: answered as it is
    ]


FAILURES: list[tuple[str, dict[str, Any]]] = [
    (
        "coverage_review",
        {"task": "change", "limits": {"max_words": 40}},
    ),  # remedy: the call with a budget that fits
    ("coverage_review", {"task": "insight", "cursor": "not-a-cursor"}),  # remedy: the call without the cursor
    ("coverage_review", {"task": "source", "file": "no/such/file.py"}),
    ("coverage_review", {"task": "bogus"}),
    ("coverage_import", {"report_path": "/etc/hostname"}),
    ("project_context", {"cursor": "not-a-cursor"}),  # remedy: the call without the cursor
]


# Read off the clock at answer time, so they may differ by a second between two calls.
CLOCK_KEYS = frozenset({"age_s"})


def without_stats(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope apart from ``context.stats`` and clock readings (``age_s``)."""
    out = copy.deepcopy(envelope)
    out["context"].pop("stats")
    return _without_clock(out)


def _without_clock(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_clock(v) for k, v in value.items() if k not in CLOCK_KEYS}
    if isinstance(value, list):
        return [_without_clock(v) for v in value]
    return value


def closed(schema: Any) -> Any:
    """``schema`` with every declared object closed to undeclared keys (what the tests hold answers to)."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if (
        "properties" in schema
        and "anyOf" not in schema
        and schema.get("type") in ("object", ["object", "null"])
    ):
        out.setdefault("additionalProperties", False)
    return out


def assert_matches_its_schema(name: str, envelope: dict[str, Any]) -> None:
    tool = next(t for t in mcp.tools() if t["name"] == name)
    Draft202012Validator(tool["outputSchema"]).validate(envelope)
    exact = (
        task_envelope(envelope["data"]["task"])
        if name == "coverage_review"
        else OPERATIONS[name].output_schema
    )
    # The stats and the inner records (snapshots, files, ...) are not the schema's to close.
    Draft202012Validator(closed(exact)).validate(envelope)


def error_of(body: dict[str, Any]) -> dict[str, Any]:
    """The error of a failed answer (REST body or MCP structuredContent), beside its context."""
    assert set(body) == {"context", "error"} and body["context"]["schema_revision"]
    return body["error"]


@pytest.fixture
async def stored(daemon: Running, sample_repo: Path) -> tuple[str, str, str]:
    """The project id and two snapshots (step1, step3), imported through REST."""
    pid = await register(daemon, sample_repo)
    ids = []
    for report in ("step1.coverage.json", "step3.coverage.json"):
        status, _, body = await call(
            daemon, "POST", f"/api/projects/{pid}/ops/coverage_import", body={"report_path": report}
        )
        assert status == 201, body  # created
        ids.append(body["data"]["snapshot"]["snapshot_id"])
    return pid, ids[0], ids[1]


async def ran(daemon: Running, pid: str) -> tuple[str, str]:
    """An approved command (a person's approval, on the daemon's store) and its finished run."""
    from coverage_core.execution import commands

    _, project = await daemon.daemon.projects.resolve(Target(project_id=pid))
    service = Service(project)
    # The plan's own registration, first: project_context lists commands, so none may appear mid-plan.
    await asyncio.to_thread(service.call, "register_test_command", REGISTER)
    command_id = (await asyncio.to_thread(service.call, "register_test_command", APPROVED))["data"][
        "command"
    ]["id"]
    await asyncio.to_thread(commands.approve, project, command_id, approved_by="tester", via="cli")
    run = (
        await asyncio.to_thread(
            service.call, "run_test", {"command_id": command_id, "idempotency_key": "drift", "wait": True}
        )
    )["data"]["run"]
    assert run["state"] == "succeeded", run
    return command_id, run["id"]


async def test_every_operation_answers_the_same_envelope_over_rest_mcp_and_in_process(
    daemon: Running, sample_repo: Path, stored: tuple[str, str, str]
) -> None:
    """Seed: "Every public schema-16 response carries `repo_key`, `checkout_path`, `suite`, and
    `schema_revision` context." """
    pid, first, second = stored
    plan = calls(first, second, *(await ran(daemon, pid)))
    rest, tools = [], []
    for name, args in plan:
        status, _, body = await call(daemon, "POST", f"/api/projects/{pid}/ops/{name}", body=args)
        assert status in (200, 201), (name, args, body)
        rest.append(body)
    # The SDK validates every structuredContent against the tool's outputSchema as it receives it.
    async with sdk_client(daemon, f"{daemon.url}/p/{pid}/mcp", "auto") as client:
        for name, args in plan:
            result = await client.call_tool(name, args)
            assert not result.is_error, (name, args, result.content)
            assert json.loads(result.content[0].text) == result.structured_content
            tools.append(result.structured_content)
    local = await _in_process(daemon, pid, plan)
    for (name, args), over_rest, over_mcp, here in zip(plan, rest, tools, local, strict=True):
        assert without_stats(over_rest) == without_stats(over_mcp) == without_stats(here), (name, args)
        assert_matches_its_schema(name, over_rest)
    tasks_seen = {body["data"]["task"] for (name, _), body in zip(plan, rest) if name == "coverage_review"}
    assert tasks_seen == set(TASK_DATA)
    assert {name for name, _ in plan} == set(TOOLS)


async def test_a_failing_call_has_the_same_code_details_and_remedy_on_every_surface(
    daemon: Running, sample_repo: Path, stored: tuple[str, str, str]
) -> None:
    pid = stored[0]
    rest, tools = [], []
    for name, args in FAILURES:
        status, _, body = await call(daemon, "POST", f"/api/projects/{pid}/ops/{name}", body=args)
        assert status >= 400, (name, args, body)
        rest.append(error_of(body))
    async with sdk_client(daemon, f"{daemon.url}/p/{pid}/mcp", "auto") as client:
        tool_schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        for name, args in FAILURES:
            result = await client.call_tool(name, args)
            assert result.is_error, (name, args)
            # The error body is what the tool's outputSchema admits beside the envelope.
            Draft202012Validator(tool_schemas[name]).validate(result.structured_content)
            Draft202012Validator(closed(mcp.ERROR_SCHEMA)).validate(result.structured_content)
            tools.append(error_of(result.structured_content))
    local = [error.to_dict() for error in await _in_process(daemon, pid, FAILURES, failing=True)]
    remedies = 0
    for (name, args), over_rest, over_mcp, here in zip(FAILURES, rest, tools, local, strict=True):
        for key in ("code", "details", "remedy"):
            assert over_rest[key] == over_mcp[key] == here[key], (name, args, key)
        assert over_rest["message"] == over_mcp["message"] == here["message"]
        if here["remedy"] is not None and "operation" in here["remedy"]:
            remedies += 1
            # For an agent, the remedy reads as the MCP call that fixes it.
            remedy = here["remedy"]
            said = f"Call {remedy['operation']} with {json.dumps(remedy['arguments'])}."
            assert over_mcp["suggestion"] == (f"{said}\n{here['suggestion']}" if here["suggestion"] else said)
        else:
            assert over_mcp["suggestion"] == here["suggestion"]
    assert remedies >= 3  # the budgets and the cursor


async def _in_process(
    daemon: Running, pid: str, plan: list[tuple[str, dict[str, Any]]], *, failing: bool = False
) -> list[Any]:
    """The same calls through ``Service.call`` on the daemon's own open project (one store, one lock)."""
    _, project = await daemon.daemon.projects.resolve(Target(project_id=pid))
    service = Service(project)
    out: list[Any] = []
    for name, args in plan:
        if not failing:
            out.append(await asyncio.to_thread(service.call, name, args))
            continue
        with pytest.raises(CoverageError) as caught:
            await asyncio.to_thread(service.call, name, args)
        out.append(caught.value)
    return out


def test_every_answer_of_an_empty_store_matches_its_schema(sample_repo: Path) -> None:
    project = open_project(sample_repo)
    try:
        service = Service(project)
        for name, args in calls("snap-0", "snap-1"):
            if name == "coverage_import" or args.get("measurement") or args.get("baseline"):
                continue  # they need stored snapshots
            if name in ("run_test", "run_review", "cancel_run"):
                continue  # they need an approved command and a run
            assert_matches_its_schema(name, service.call(name, args))
    finally:
        project.close()
