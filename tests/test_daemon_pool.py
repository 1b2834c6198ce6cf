"""Bounded reads: checkout deadlines, the query watchdog, shutdown interruption, and a loop that never blocks."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.locks import is_held
from coverage_daemon.projects import Target

from .daemons import in_process
from .gitrepo import git

SLOW = "SELECT count(*) FROM range(100000000000) a"  # hours, unless interrupted
DEADLINE_S = 30  # a generous bound on what must end soon: a loaded machine is no failure


def slow_query(_project: Any, con: Any) -> Any:
    return con.execute(SLOW).fetchall()


async def test_a_query_past_its_deadline_is_interrupted_and_answers_deadline_exceeded(
    isolated_home: Path, sample_repo: Path
) -> None:
    """Seed: "A watchdog interrupts the connection when the configured query deadline expires; shutdown
    interrupts all tracked operations, waits for them to release their leases, then closes the pool and
    database lock." """
    async with in_process(Settings.from_env(port=0, http_timeout_s=5, db_query_timeout_ms=300)) as d:
        target = Target(path=str(sample_repo))
        started = time.monotonic()
        with pytest.raises(CoverageError) as caught:
            await d.daemon.projects.read(target, slow_query)
        assert caught.value.code == ErrorCode.DEADLINE_EXCEEDED
        assert "COVERAGE_MCP_DB_QUERY_TIMEOUT_MS=300" in caught.value.message
        # it ran its 300 ms (no sooner) and was interrupted (the query would run for hours): its speed is no promise
        assert 0.3 <= time.monotonic() - started < DEADLINE_S
        # the interrupted connection went back to the pool and serves the next read
        assert await d.daemon.projects.read(target, lambda _p, con: con.execute("SELECT 42").fetchall()) == [
            (42,)
        ]


async def test_a_checkout_waits_at_most_the_acquire_timeout(isolated_home: Path, sample_repo: Path) -> None:
    """Seed: "Each project store owns a bounded `r2d2` pool." """
    settings = Settings.from_env(
        port=0, http_timeout_s=5, db_query_timeout_ms=1500, db_pool_size=1, db_acquire_timeout_ms=100
    )
    async with in_process(settings) as d:
        target = Target(path=str(sample_repo))
        await d.daemon.projects.resolve(target)
        busy = asyncio.create_task(d.daemon.projects.read(target, slow_query))
        await asyncio.sleep(0.2)
        with pytest.raises(CoverageError) as caught:
            await d.daemon.projects.read(target, lambda _p, con: con.execute("SELECT 1").fetchall())
        assert caught.value.code == ErrorCode.DEADLINE_EXCEEDED and "all 1 are busy" in caught.value.message
        with pytest.raises(CoverageError):
            await busy


async def test_the_loop_keeps_answering_while_queries_run(isolated_home: Path, sample_repo: Path) -> None:
    """Seed: "These leases protect process and database ownership, not client connections: HTTP and stdio
    requests can execute concurrently within the configured MCP, pool, and deadline limits." """
    async with in_process(Settings.from_env(port=0, http_timeout_s=30, db_query_timeout_ms=3000)) as d:
        target = Target(path=str(sample_repo))
        await d.daemon.projects.resolve(target)
        running = [asyncio.create_task(d.daemon.projects.read(target, slow_query)) for _ in range(2)]
        await asyncio.sleep(0.1)
        async with aiohttp.ClientSession() as http:
            async with http.get(d.url + "/health") as response:
                assert response.status == 200
            assert not any(query.done() for query in running)  # answered while both queries still ran
        results = await asyncio.gather(*running, return_exceptions=True)
        assert all(isinstance(r, CoverageError) and r.code == ErrorCode.DEADLINE_EXCEEDED for r in results)


async def test_shutdown_interrupts_running_queries_and_releases_the_store(
    isolated_home: Path, sample_repo: Path
) -> None:
    """Seed: "A watchdog interrupts the connection when the configured query deadline expires; shutdown
    interrupts all tracked operations, waits for them to release their leases, then closes the pool and
    database lock." """
    settings = Settings.from_env(port=0, http_timeout_s=60, db_query_timeout_ms=50000)
    store_lock = sample_repo / ".coverage-mcp" / "coverage.duckdb.lock"
    async with in_process(settings) as d:
        target = Target(path=str(sample_repo))
        await d.daemon.projects.resolve(target)
        running = asyncio.create_task(d.daemon.projects.read(target, slow_query))
        await asyncio.sleep(0.2)
        assert is_held(store_lock)
    # the query (hours long, 50 s allowed) was interrupted by the stop, not waited for
    assert not is_held(store_lock) and not is_held(isolated_home / "daemon.lock")
    with pytest.raises(CoverageError) as caught:
        await running
    assert caught.value.code == ErrorCode.STORE_UNAVAILABLE and "shutting down" in caught.value.message


async def test_a_half_read_result_is_dropped_before_the_next_borrower(
    isolated_home: Path, sample_repo: Path
) -> None:
    async with in_process(Settings.from_env(port=0, db_pool_size=1)) as d:
        target = Target(path=str(sample_repo))
        first = await d.daemon.projects.read(
            target, lambda _p, con: con.execute("FROM range(10000000)").fetchone()
        )
        assert first == (0,)
        # con.sql() refuses to run while a result of execute() is unfinished on the same connection
        assert await d.daemon.projects.read(target, lambda _p, con: con.sql("SELECT 7").fetchall()) == [(7,)]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [("history", {}), ("file_history", {"last_commits": 2}), ("coverage_loss", {"last": 2})],
)
async def test_every_read_connection_is_back_in_the_pool_after_a_notebook_analysis(
    isolated_home: Path, sample_repo: Path, name: str, arguments: dict[str, Any]
) -> None:
    """A notebook's helper answered by the daemon (the ``analysis`` row, ``Project.relation``) gives its read
    connection back with its answer: one kept until the project closes would take a slot of the bounded pool
    for good, and hold up the daemon's shutdown, which waits for every lent connection."""
    async with in_process(Settings.from_env(port=0)) as d:
        handle, _project = await d.daemon.projects.resolve(Target(path=str(sample_repo)))
        client = d.client()
        pid = (await asyncio.to_thread(client.register, sample_repo))["project_id"]
        for i, report in enumerate(("step1.coverage.json", "step3.coverage.json")):  # coverage_loss needs 2
            if i:
                git(sample_repo, "commit", "-q", "--allow-empty", "-m", "the next commit")
            imported = await asyncio.to_thread(client.call, pid, "coverage_import", {"report_path": report})
            assert imported["data"]["snapshot"]["snapshot_id"]
        answer = await asyncio.to_thread(client.call, pid, "analysis", {"name": name, "arguments": arguments})
        assert answer["data"]["names"], answer
        assert handle.store.pool.busy == 0
