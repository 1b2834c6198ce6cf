"""The Python client: the library's records over REST, and open_project routing to whoever owns the store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from coverage_core import Project
from coverage_core import open_project as open_direct
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_daemon.client import DaemonProject, open_project
from coverage_daemon.rest_client import DaemonClient

from .daemons import COMPACTION_DEFAULTS, RUN_BOUND_DEFAULTS, Running, StoreHolder, in_process


def test_open_project_opens_the_store_directly_when_no_one_holds_it(sample_repo: Path) -> None:
    with open_project(sample_repo) as project:
        assert isinstance(project, Project)


async def test_open_project_routes_to_the_owning_daemon_with_identical_results(
    isolated_home: Path, sample_repo: Path
) -> None:
    """Seed: "This preserves coverage history and approvals across stdio client restarts without allowing
    each client to own DuckDB." """
    with open_direct(sample_repo) as project:
        snap = project.ingest(sample_repo / "step3.coverage.json", suite="unit")
        expected = {
            "snapshots": project.snapshots(),
            "snapshot": project.snapshot(snap.snapshot_id),
            "latest": project.latest("unit"),
            "files": project.files(snap.snapshot_id, limit=3, order="uncovered"),
            "later files": project.files(snap.snapshot_id, offset=1, limit=2),
        }
        path = expected["files"].files[0].path
        detail = project.file_detail(snap.snapshot_id, path)

    async with in_process(Settings.from_env(port=0)) as d:
        await asyncio.to_thread(d.client().register, sample_repo)  # the daemon now holds the store

        def through_the_daemon() -> dict[str, object]:
            with open_project(sample_repo / "inventory") as routed:
                assert isinstance(routed, DaemonProject)
                got = {
                    "snapshots": routed.snapshots(),
                    "snapshot": routed.snapshot(snap.snapshot_id),
                    "latest": routed.latest("unit"),
                    "files": routed.files(snap.snapshot_id, limit=3, order="uncovered"),
                    "later files": routed.files(snap.snapshot_id, offset=1, limit=2),
                }
                got["detail"] = routed.file_detail(snap.snapshot_id, path)
                got["duplicate"] = routed.ingest(sample_repo / "step3.coverage.json", suite="unit")
                got["new"] = routed.ingest(sample_repo / "step1.coverage.json", suite="unit")
                # The CLI is the store's owner: path maps work as they do without a daemon.
                got["path_mapped"] = routed.ingest(sample_repo / "step1.coverage.json", path_map=[("a", "b")])
                return got

        got = await asyncio.to_thread(through_the_daemon)

    for key, value in expected.items():
        assert got[key] == value, key
    routed_detail = got["detail"]
    assert routed_detail.summary == detail.summary and routed_detail.tests == detail.tests
    for table in ("lines", "branches", "functions", "regions"):
        ours, theirs = getattr(routed_detail, table), getattr(detail, table)
        assert list(ours) == list(theirs)
        assert all(ours[c].tolist() == theirs[c].tolist() for c in theirs), table
    assert got["duplicate"].duplicate is True and got["duplicate"].snapshot_id == snap.snapshot_id
    assert got["new"].duplicate is False and got["new"].suite == "unit"
    assert got["path_mapped"].suite == "default" and got["path_mapped"].path_mapping.mapped == 3
    with open_direct(sample_repo) as project:  # the daemon is gone; its writes are in the store
        assert project.latest("unit") == got["new"]


def test_open_project_never_routes_to_a_holder_that_is_not_the_daemon(
    sample_repo: Path, store_holder: StoreHolder
) -> None:
    with pytest.raises(CoverageError) as caught:
        open_project(sample_repo)
    assert caught.value.code == ErrorCode.STORE_LOCKED and f"pid {store_holder.pid}" in caught.value.message


def test_an_unreachable_daemon_is_a_clear_error() -> None:
    with pytest.raises(CoverageError) as caught:
        DaemonClient("http://127.0.0.1:9").health()
    assert (
        caught.value.code == ErrorCode.DAEMON_UNREACHABLE and "coverage-mcp status" in caught.value.suggestion
    )


async def test_the_client_raises_the_daemons_errors_with_their_codes(
    daemon: Running, sample_repo: Path
) -> None:
    def work() -> None:
        client = daemon.client()
        project_id = client.register(sample_repo)["project_id"]
        with pytest.raises(CoverageError) as caught:
            client.call(
                project_id, "coverage_review", {"task": "files", "measurement": {"snapshot_id": "snap-00"}}
            )
        assert caught.value.code == ErrorCode.NOT_FOUND and caught.value.suggestion
        client.capability = daemon.daemon.capability
        with pytest.raises(CoverageError) as caught:
            client.call(project_id, "project_settings_update", {"settings": {"nope": 1}})
        assert caught.value.code == ErrorCode.INVALID_ARGUMENT
        assert client.call(
            project_id, "project_settings_update", {"settings": {"approval_mode": "attested"}}
        )["data"]["settings"] == {"approval_mode": "attested", **COMPACTION_DEFAULTS, **RUN_BOUND_DEFAULTS}
        assert [p["project_id"] for p in client.projects()] == [project_id]
        envelope = client.call(project_id, "coverage_review", {"task": "insight"})
        assert envelope["data"]["claim_status"] == "not_measured"

    await asyncio.to_thread(work)
