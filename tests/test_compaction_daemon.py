"""Compaction through the daemon and the command line: the worker, the manual pass, policy, inventory.

A real daemon on an ephemeral loopback port holds real stores; the command
line runs as a subprocess, reaching the daemon through its lock file as a
person's shell would. Snapshots are aged by rewriting their creation time in
the store before the daemon opens it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import pytest

from coverage_core import open_project
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.git import discover
from coverage_core.model import Snapshot
from coverage_core.project import Project
from coverage_core.service import Service

from . import commandline
from .conftest import SAMPLE
from .daemons import StoreHolder, in_process


def _ingest(repo: Path, *reports: tuple[str, str]) -> list[str]:
    with open_project(repo) as project:
        service = Service(project)
        return [
            service.call("coverage_import", {"report_path": r, "suite": s})["data"]["snapshot"]["snapshot_id"]
            for r, s in reports
        ]


def _age(repo: Path, days: int) -> None:
    with open_project(repo) as project:
        project.store.con.execute(f"UPDATE snapshots SET created_at = created_at - INTERVAL {int(days)} DAY")


def _compacted(repo: Path) -> set[str]:
    with open_project(repo) as project:
        return {
            r[0]
            for r in project.store.con.execute(
                "SELECT s.snapshot_id FROM snapshot_payloads JOIN snapshots s USING (snap)"
            ).fetchall()
        }


def _cli(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A child process: a daemon in this test's event loop or another process holds the store."""
    return commandline.cli(*args, repo=repo, env=env, process=True)


def _cli_here(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """In this process: nothing holds the store, and what is checked is the code, message and exit code."""
    return commandline.cli(*args, repo=repo)


def _wait_for(predicate, what: str, limit_s: float = 90.0) -> Any:
    give_up = time.monotonic() + limit_s
    while time.monotonic() < give_up:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"{what} did not happen within {limit_s} s")


async def test_the_worker_compacts_one_batch_per_tick_and_leaves_the_newest_of_each_suite_alone(
    sample_repo: Path, isolated_home: Path
) -> None:
    """Seed: "Each opened project starts a maintenance worker." and "On the configured cadence it reads
    the persisted policy, finds snapshots older than the project threshold, serializes file/line
    detail, compresses it with zstd, and commits the compacted payload in one DuckDB transaction." """
    shutil_reports(sample_repo)
    step1, step2, newest, lcov_only = _ingest(
        sample_repo,
        ("step1.coverage.json", "default"),
        ("step2.coverage.json", "default"),
        ("step3.coverage.json", "default"),
        ("step3.coverage.lcov", "lcov"),
    )
    _age(sample_repo, 100)
    with open_project(sample_repo) as project:
        project.set_compaction_policy(after_days=30, batch_size=1)
        before = project.file_detail(step1, "inventory/pricing.py")
    async with in_process(Settings.from_env(port=0)) as d:
        client = d.client()
        project_id = discover(sample_repo).project_id
        await asyncio.to_thread(client.register, sample_repo)  # the daemon opens the store: its worker starts

        def passed() -> dict[str, Any] | None:
            found = client.call(project_id, "compaction_inventory")["data"]
            return found if found["last_pass"] else None

        inventory = await asyncio.to_thread(_wait_for, passed, "the worker's first pass")
        assert inventory["last_pass"]["trigger"] == "worker"
        assert (
            inventory["last_pass"]["compacted"] == 1 and inventory["last_pass"]["left"] == 1
        )  # one per tick
        assert inventory["compacted"] == 1 and inventory["relational"] == 3
        # The compacted snapshot's detail over REST is the detail it had.
        after = await asyncio.to_thread(client.file_detail, project_id, step1, "inventory/pricing.py")
        assert after.tests == before.tests
        for table in ("lines", "branches", "functions", "regions"):
            for column, values in getattr(before, table).items():
                assert getattr(after, table)[column].tolist() == values.tolist()
    assert _compacted(sample_repo) == {step1}  # oldest first; the newest of each suite never
    assert {step2, newest, lcov_only}.isdisjoint(_compacted(sample_repo))


def shutil_reports(repo: Path) -> None:
    shutil.copy(SAMPLE / "reports" / "step2.coverage.json", repo / "step2.coverage.json")


def test_snapshots_active_runs_need_are_never_compacted(sample_repo: Path) -> None:
    shutil_reports(sample_repo)
    ids = _ingest(
        sample_repo,
        ("step1.coverage.json", "default"),
        ("step2.coverage.json", "default"),
        ("step3.coverage.json", "default"),
    )

    class RunHoldsStep1(Project):
        def in_use_by_active_runs(self, snapshots: Sequence[Snapshot]) -> dict[str, str]:
            return {
                s.snapshot_id: "incremental baseline of run run-1"
                for s in snapshots
                if s.snapshot_id == ids[0]
            }

    with open_project(sample_repo) as opened:
        project = RunHoldsStep1(opened.checkout, opened.store, opened.settings)
        planned = project.compact(older_than="0", dry_run=True).to_dict()
        assert [p["snapshot_id"] for p in planned["protected"]] == sorted([ids[0], ids[2]])
        done = project.compact(older_than="0")
        assert [c.snapshot_id for c in done.compacted] == [ids[1]]
        assert project.compaction_inventory()["compacted"] == 1


def test_the_inventory_counts_every_protected_snapshot_whatever_its_age(sample_repo: Path) -> None:
    shutil_reports(sample_repo)
    ids = _ingest(
        sample_repo,
        ("step1.coverage.json", "default"),
        ("step2.coverage.json", "default"),
        ("step3.coverage.json", "default"),
        ("step1.coverage.json", "other"),
    )

    class RunHoldsStep1(Project):
        def in_use_by_active_runs(self, snapshots: Sequence[Snapshot]) -> dict[str, str]:
            return {
                s.snapshot_id: "incremental baseline of run run-1"
                for s in snapshots
                if s.snapshot_id == ids[0]
            }

    with open_project(sample_repo) as opened:
        project = RunHoldsStep1(opened.checkout, opened.store, opened.settings)
        young = project.compaction_inventory()
        # The newest of each suite (ids[2], ids[3]) and the active run's baseline (ids[0]); none is 30 days old.
        assert (young["protected"], young["protected_past_threshold"], young["eligible"]) == (3, 0, 0)
        done = project.compact(older_than="0")
        assert sorted(p["snapshot_id"] for p in done.to_dict()["protected"]) == sorted(
            [ids[0], ids[2], ids[3]]
        )
        after = project.compaction_inventory()
        assert (after["protected"], after["compacted"]) == (len(done.protected), 1)
    _age(sample_repo, 40)
    with open_project(sample_repo) as opened:
        project = RunHoldsStep1(opened.checkout, opened.store, opened.settings)
        old = project.compaction_inventory()
        assert (old["protected"], old["protected_past_threshold"], old["eligible"]) == (3, 3, 0)


async def test_compact_on_the_command_line_goes_through_the_daemon_that_holds_the_store(
    sample_repo: Path, isolated_home: Path
) -> None:
    """Seed: "`PATCH /api/projects/{id}`, the dashboard, and the one-shot CLI pass handle later changes." and
    "Manual passes update durable status and byte counters." and "All connector and compaction
    requests go through the shared daemon; only that daemon resolves and opens project stores." """
    old, _new = _ingest(sample_repo, ("step1.coverage.json", "default"), ("step3.coverage.json", "default"))
    async with in_process(Settings.from_env(port=0)) as d:
        await asyncio.to_thread(d.client().register, sample_repo)
        dry = await asyncio.to_thread(
            _cli, sample_repo, "compact", "--older-than", "0", "--dry-run", "--json"
        )
        assert dry.returncode == 0, dry.stderr
        assert [c["snapshot_id"] for c in json.loads(dry.stdout)["data"]["eligible"]] == [old]
        done = await asyncio.to_thread(_cli, sample_repo, "compact", "--older-than", "0")
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0].startswith(f"compacted {old}:")
        status = await asyncio.to_thread(_cli, sample_repo, "compact", "--status", "--json")
        data = json.loads(status.stdout)["data"]
        assert data["compacted"] == 1 and data["last_pass"]["trigger"] == "manual"
        # The pass kept the newest snapshot as protected; the inventory counts it though it is young.
        assert data["protected"] == 1 and data["protected_past_threshold"] == 0
        shown = await asyncio.to_thread(_cli, sample_repo, "compact", "--status")
        assert "protected: 1 (0 of them older than 30 days)" in shown.stdout, shown.stdout
        assert data["payload_bytes"] < data["detail_bytes"]
        # project_context carries the inventory too.
        context = await asyncio.to_thread(
            d.client().call, discover(sample_repo).project_id, "project_context", {}
        )
        assert context["data"]["compaction"]["compacted"] == 1
        assert context["data"]["compaction"]["protected"] == 1
        # Policy through the daemon's settings route (admin), refused out of range, kept when valid.
        bad = await asyncio.to_thread(_cli, sample_repo, "compact", "--set", "batch_size=0")
        assert (
            bad.returncode != 0
            and "compaction_batch_size must be a whole number from 1 to 1000" in bad.stderr
        )
        good = await asyncio.to_thread(_cli, sample_repo, "compact", "--set", "after_days=14", "--json")
        assert good.returncode == 0, good.stderr
        assert json.loads(good.stdout)["data"]["policy"]["after_days"] == 14
    assert _compacted(sample_repo) == {old}


async def test_the_settings_route_validates_compaction_policy_ranges(
    sample_repo: Path, isolated_home: Path
) -> None:
    """Seed: "REST `POST /api/projects` can provide project-creation overrides; `PATCH
    /api/projects/{id}`, the dashboard, and the one-shot CLI pass handle later changes." """
    async with in_process(Settings.from_env(port=0)) as d:
        client = d.client()
        await asyncio.to_thread(client.register, sample_repo)
        project_id = discover(sample_repo).project_id
        client.capability = d.daemon.capability
        for bad in (0, 36501, "7", 1.5, True, None):
            with pytest.raises(CoverageError) as caught:
                await asyncio.to_thread(
                    client.call,
                    project_id,
                    "project_settings_update",
                    {"settings": {"compaction_after_days": bad}},
                )
            assert caught.value.code is ErrorCode.INVALID_ARGUMENT
        answer = await asyncio.to_thread(
            client.call,
            project_id,
            "project_settings_update",
            {"settings": {"compaction_cadence_minutes": 5, "compaction_batch_size": 3}},
        )
        assert answer["data"]["settings"]["compaction_cadence_minutes"] == 5
        assert answer["data"]["settings"]["compaction_batch_size"] == 3
        inventory = (await asyncio.to_thread(client.call, project_id, "compaction_inventory"))["data"]
        assert inventory["policy"] == {
            "after_days": 30,
            "cadence_minutes": 5,
            "batch_size": 3,
            "protect_recent_runs": 10,
        }


@pytest.mark.parametrize("age", ["garbage", "-3", "3w", "1.5d", ""])
def test_an_age_that_is_not_one_is_refused_before_the_store_is_touched(sample_repo: Path, age: str) -> None:
    _ingest(sample_repo, ("step1.coverage.json", "default"), ("step3.coverage.json", "default"))
    done = _cli_here(sample_repo, "compact", "--older-than", age, "--json")
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stderr)["error"]["code"] == "invalid_argument"
    assert _compacted(sample_repo) == set()


def test_compact_on_a_store_another_process_holds_says_who_holds_it(sample_repo: Path) -> None:
    _ingest(sample_repo, ("step1.coverage.json", "default"), ("step3.coverage.json", "default"))
    holder = StoreHolder(sample_repo)
    try:
        # A short wait for the holder (its length and expiry are test_cli_wait's subject).
        done = _cli(
            sample_repo,
            "compact",
            "--older-than",
            "0",
            "--json",
            env={"COVERAGE_MCP_CLI_STORE_WAIT_MS": "300"},
        )
        assert json.loads(done.stderr)["error"]["code"] == "store_locked"
        assert done.returncode != 0
    finally:
        holder.close()
    assert _compacted(sample_repo) == set()


def test_compact_on_another_programs_database_is_refused_and_leaves_it_alone(sample_repo: Path) -> None:
    path = discover(sample_repo).store_path
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE lines (x INTEGER)")
    con.close()
    done = _cli_here(sample_repo, "compact", "--older-than", "0", "--json")
    assert done.returncode != 0
    assert json.loads(done.stderr)["error"]["code"] in (
        "store_unavailable",
        "invalid_argument",
        "schema_too_new",
        "foreign_store",
    )
    con = duckdb.connect(str(path), read_only=True)
    assert [r[0] for r in con.execute("SHOW TABLES").fetchall()] == ["lines"]
    con.close()


@pytest.mark.parametrize(
    "setting, mention",
    [
        ("after_days=abc", "compaction_after_days must be a whole number from 1 to 36500"),
        ("batch_size=1001", "compaction_batch_size must be a whole number from 1 to 1000"),
        ("cadence_minutes=0", "compaction_cadence_minutes must be a whole number from 1 to 10080"),
        ("nonsense=3", "is not FIELD=NUMBER with a policy field"),
        ("after_days", "is not FIELD=NUMBER with a policy field"),
    ],
)
def test_a_policy_value_out_of_range_is_refused_and_the_policy_stays(
    sample_repo: Path, setting: str, mention: str
) -> None:
    done = _cli_here(sample_repo, "compact", "--set", setting, "--json")
    assert done.returncode == 2
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "invalid_argument" and mention in error["message"]
    with open_project(sample_repo) as project:
        assert project.compaction_policy().to_dict() == {
            "after_days": 30,
            "cadence_minutes": 60,
            "batch_size": 8,
            "protect_recent_runs": 10,
        }


# Writes an LCOV report of app.py whose line 2 is hit argv[1] times (default 1).
GEN = (
    "import sys\n"
    "hits = sys.argv[1] if len(sys.argv) > 1 else '1'\n"
    "with open('cov.info', 'w') as out:\n"
    "    out.write('SF:app.py\\nDA:1,1\\nDA:2,%s\\nDA:3,0\\nend_of_record\\n' % hits)\n"
)


def test_the_bases_of_the_newest_runs_are_protected_and_counted_apart_from_the_newest_snapshots(
    tmp_path: Path,
) -> None:
    """Seed: "The dashboard's compaction inventory also counts relational snapshots, compressed payloads,
    protected incremental bases, currently eligible snapshots, and original versus compressed bytes".
    The bases of active runs and of the newest ``compaction_protect_recent_runs`` finished runs are kept
    relational; an older run's base is not, and the inventory counts the bases apart from the newest
    snapshot of each suite."""
    from coverage_core.execution import commands

    from .gitrepo import make_repo

    repo = make_repo(
        tmp_path / "repo", {"app.py": "a = 1\nb = 2\nc = 3\n", "gen.py": GEN, ".gitignore": "*.info\n"}
    )
    with open_project(repo) as project:
        service = Service(project)
        bases = []
        for hits in ("0", "1", "2"):  # three snapshots of suite "base": the third is its newest
            (repo / "base.info").write_text(f"SF:app.py\nDA:1,1\nDA:2,{hits}\nDA:3,0\nend_of_record\n")
            imported = service.call("coverage_import", {"report_path": "base.info", "suite": "base"})
            bases.append(imported["data"]["snapshot"]["snapshot_id"])
        registered = service.call(
            "register_test_command",
            {
                "name": "gen",
                "argv": [sys.executable, "gen.py"],
                "artifacts": [{"path": "cov.info", "suite": "unit"}],
            },
        )["data"]["command"]["id"]
        commands.approve(project, registered, approved_by="tester", via="cli")
        project.set_compaction_policy(protect_recent_runs=1)
        ran = [
            service.call(
                "run_test",
                {
                    "command_id": registered,
                    "wait": True,
                    "args": [],
                    "baseline": {"snapshot_id": base},
                    "reuse_if_unchanged": False,
                },
            )["data"]["run"]
            for base in bases[:2]
        ]
        assert [r["state"] for r in ran] == ["succeeded", "succeeded"]
        inventory = project.compaction_inventory()
        # Newest of "base" and of "unit"; the base of the newest run (bases[1]); bases[0]'s run is older.
        assert (inventory["protected_newest"], inventory["protected_incremental_bases"]) == (2, 1)
        assert inventory["protected"] == 3 and inventory["policy"]["protect_recent_runs"] == 1
        planned = project.compact(older_than="0", dry_run=True).to_dict()
        why = {p["snapshot_id"]: p["why"] for p in planned["protected"]}
        assert why[bases[1]] == f"in use: incremental baseline of succeeded run {ran[1]['id']}"
        assert bases[0] in {c["snapshot_id"] for c in planned["eligible"]}
        project.set_compaction_policy(protect_recent_runs=0)  # the window closed: only active runs hold bases
        assert project.compaction_inventory()["protected_incremental_bases"] == 0
