"""Managed execution's reads through the daemon's read pool, and its writes beside the write gate.

A real daemon in the test's event loop (``in_process``) holds a real store
with real runs of a registered command. ``run_review`` and the run and
command listings of ``project_context`` read the execution tables on a
pooled connection: bounded by the pool's checkout wait, tracked, and under
the query deadline; never behind the execution tables' own writer lock. The
runs' state changes are written on their own connection, outside the write
gate (README "Managed execution", a reasoned deviation from the seed), so a
run moves on while an ingest holds the gate.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from coverage_core import open_project
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.principals import Principal
from coverage_core.service import Service
from coverage_core.storage.exec_db import exec_db
from coverage_daemon.projects import Target

from .daemons import Running, in_process
from .gitrepo import make_repo
from .test_runs import approved

AGENT = frozenset({Principal.AGENT})
# Writes an LCOV report of app.py; given a case argument, first waits until a file named release exists.
GEN = (
    "import os, sys, time\n"
    "if len(sys.argv) > 1:\n"
    "    while not os.path.exists('release'):\n"
    "        time.sleep(0.02)\n"
    "with open('cov.info', 'w') as out:\n"
    "    out.write('SF:app.py\\nDA:1,1\\nDA:2,1\\nDA:3,0\\nend_of_record\\n')\n"
)
SETTLE_S = 60.0  # a generous bound on a wait that only a regression makes long


@pytest.fixture
def ran(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with an approved command that has run once to its end: (repo, command id, run id)."""
    repo = make_repo(
        tmp_path / "repo",
        {
            "app.py": "a = 1\nb = 2\nc = 3\n",
            "gen.py": GEN,
            "go.txt": "",
            ".gitignore": "*.info\nrelease\n",
        },
    )
    with open_project(repo) as project:
        command_id = approved(project, [sys.executable, "gen.py"], name="gen", args_policy="selectors")
        run = Service(project).call("run_test", {"command_id": command_id, "wait": True})["data"]["run"]
        assert run["state"] == "succeeded", run
    return repo, command_id, run["id"]


async def _call(d: Running, repo: Path, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return await d.daemon.projects.call(Target(path=str(repo)), name, arguments, principals=AGENT)


async def test_run_review_waits_for_a_pooled_connection_and_is_refused_when_none_comes_free(
    isolated_home: Path, ran: tuple[Path, str, str]
) -> None:
    """Seed: "read-only operations use the pool with a bounded checkout wait. Every checked-out connection
    is registered with a query tracker." With the pool's one connection lent, run_review waits at most
    COVERAGE_MCP_DB_ACQUIRE_TIMEOUT_MS, then answers deadline_exceeded; once it is back, the run's status."""
    repo, _command_id, run_id = ran
    settings = Settings.from_env(port=0, db_pool_size=1, db_acquire_timeout_ms=200)
    async with in_process(settings) as d:
        handle, _ = await d.daemon.projects.resolve(Target(path=str(repo)))
        held = handle.store.pool.checkout()
        try:
            with pytest.raises(CoverageError) as refused:
                await _call(d, repo, "run_review", {"run_id": run_id})
            assert refused.value.code is ErrorCode.DEADLINE_EXCEEDED
            assert "COVERAGE_MCP_DB_ACQUIRE_TIMEOUT_MS" in refused.value.message
        finally:
            held.close()
        answer = await _call(d, repo, "run_review", {"run_id": run_id})
        assert answer["data"]["run"]["state"] == "succeeded"
        assert answer["context"]["checkout_path"] == str(repo.resolve())


async def test_run_reads_answer_while_the_execution_tables_writer_holds_its_lock(
    isolated_home: Path, ran: tuple[Path, str, str]
) -> None:
    """Seed: "read-only operations use the pool with a bounded checkout wait." The execution tables'
    writer lock orders their writes only: run_review and project_context's run and command listings read
    on a pooled connection and answer while a writer holds it."""
    repo, command_id, run_id = ran
    async with in_process(Settings.from_env(port=0)) as d:
        handle, _ = await d.daemon.projects.resolve(Target(path=str(repo)))
        await _call(d, repo, "project_context", {})  # the runtime and its tables are up
        writer = exec_db(handle.store).lock
        writer.acquire()
        try:
            review = await asyncio.wait_for(_call(d, repo, "run_review", {"run_id": run_id}), SETTLE_S)
            context = await asyncio.wait_for(_call(d, repo, "project_context", {}), SETTLE_S)
        finally:
            writer.release()
    assert review["data"]["run"]["state"] == "succeeded"
    assert [c["id"] for c in context["data"]["commands"]] == [command_id]


async def test_a_run_moves_through_its_states_while_an_ingest_holds_the_write_gate(
    isolated_home: Path, ran: tuple[Path, str, str]
) -> None:
    """Seed: "The write gate preserves DuckDB's single-writer semantics" (a reasoned deviation: a run's
    state is written on managed execution's own connection, outside the gate, so it changes during a long
    ingest). While an import waits at the held gate, a run is queued, starts and reaches its end of
    process; its own ingest then waits its turn, and both end once the gate opens."""
    repo, command_id, _ = ran
    (repo / "cov.info").unlink()
    async with in_process(Settings.from_env(port=0)) as d:
        handle, _ = await d.daemon.projects.resolve(Target(path=str(repo)))
        (repo / "other.info").write_text("SF:app.py\nDA:1,1\nDA:2,0\nDA:3,0\nend_of_record\n")
        async with handle.write_gate:
            ingest = asyncio.create_task(_call(d, repo, "coverage_import", {"report_path": "other.info"}))
            arguments = {"command_id": command_id, "args": ["go.txt"], "reuse_if_unchanged": False}
            started = await asyncio.wait_for(_call(d, repo, "run_test", arguments), SETTLE_S)
            run_id = started["data"]["run"]["id"]
            seen = await _until(d, repo, run_id, lambda run: run["state"] == "running")
            assert not ingest.done()
            (repo / "release").write_text("")
            # The process ends; its artifact's ingest waits behind the held gate, the run stays running.
            await _until(d, repo, run_id, lambda run: (repo / "cov.info").exists())
            assert seen["state"] == "running" and not ingest.done()
        imported = await asyncio.wait_for(ingest, SETTLE_S)
        done = await _until(d, repo, run_id, lambda run: run["state"] not in ("queued", "running"))
    assert imported["data"]["snapshot"]["suite"] == "default"
    assert done["state"] == "succeeded", done
    assert [e["state"] for e in done["events"]][:2] == ["queued", "running"]
    assert [a["status"] for a in done["artifacts"]] == ["ingested"]


async def _until(d: Running, repo: Path, run_id: str, predicate: Any) -> dict[str, Any]:
    """The run's status once ``predicate`` holds for it (bounded by SETTLE_S)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + SETTLE_S
    while True:
        run = (await _call(d, repo, "run_review", {"run_id": run_id}))["data"]["run"]
        if predicate(run):
            return run
        assert loop.time() < give_up, run
        await asyncio.sleep(0.05)
