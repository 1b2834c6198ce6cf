"""project_context reads what it knows about the whole store once per generation of the store (issue 29),
and every kind of write starts a new one: each step below changes the store one way, and the very next
answer of the same open project must show it (a cache that missed one kind of write fails here).

The oracle is the write itself: the command just registered or approved, the run just queued or cancelled,
the snapshots just compacted or deleted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from coverage_core import open_project
from coverage_core.execution import runs
from coverage_core.service import Service
from coverage_core.storage.exec_db import exec_db

from .test_run_bounds import _queued as queued


def _context(service: Service) -> dict[str, Any]:
    data: dict[str, Any] = service.call("project_context", {"max_words": 50_000})["data"]
    return data


def test_every_kind_of_write_shows_in_the_next_project_context_of_the_same_open_project(
    sample_repo: Path,
) -> None:
    with open_project(sample_repo) as project:
        service = Service(project)
        for report in ("step1.coverage.json", "step3.coverage.json", "step3.coverage.lcov"):
            project.ingest(sample_repo / report, suite="unit")
        before = _context(service)
        assert before["commands"] == [] and before["active_runs"] == []
        assert before["compaction"]["compacted"] == 0 and before["compaction"]["relational"] == 3

        registered = service.call(
            "register_test_command",
            {
                "name": "unit",
                "argv": [sys.executable, "-m", "pytest"],
                "artifacts": [{"path": "cov.json", "suite": "unit"}],
            },
        )["data"]["command"]["id"]
        assert [(c["id"], c["status"]) for c in _context(service)["commands"]] == [(registered, "pending")]

        service.call("command_approve", {"command_id": registered, "by": "tester"})
        assert [(c["id"], c["status"]) for c in _context(service)["commands"]] == [(registered, "approved")]

        run_id = queued(project, registered)
        assert [r["id"] for r in _context(service)["active_runs"]] == [run_id]
        service.call("cancel_run", {"run_id": run_id})
        assert _context(service)["active_runs"] == []

        service.call("command_reject", {"command_id": registered, "by": "tester"})
        assert _context(service)["commands"] == []  # rejected commands are not an agent's to use

        done = service.call("compact", {"older_than": "0"})["data"]
        compaction = _context(service)["compaction"]
        assert (compaction["compacted"], compaction["relational"]) == (len(done["compacted"]), 3 - 2)
        assert compaction["last_pass"] is not None

        deleted = service.call("snapshot_delete", {"suite": "unit", "keep": 1})["data"]["deleted"]
        assert len(deleted) == 2
        assert (
            _context(service)["compaction"]["compacted"],
            _context(service)["compaction"]["relational"],
        ) == (
            0,
            1,
        )


def test_history_names_the_run_that_recorded_an_already_stored_snapshot_after_it_was_first_asked(
    sample_repo: Path,
) -> None:
    # A run whose report is identical to a stored snapshot records that snapshot as its artifact later, in
    # the execution tables (execution.worker): the next history must name the run, not the import.
    with open_project(sample_repo) as project:
        service = Service(project)
        snapshot_id = project.ingest(sample_repo / "step3.coverage.json").snapshot_id

        def runs() -> list[Any]:
            points = service.call("coverage_review", {"task": "history", "representation": "review"})
            return [p["run"] for p in points["data"]["points"]]

        assert runs() == [None]
        command = service.call(
            "register_test_command",
            {
                "name": "unit",
                "argv": [sys.executable, "-m", "pytest"],
                "artifacts": [{"path": "x", "suite": "default"}],
            },
        )["data"]["command"]["id"]
        run_id = queued(project, command)
        with exec_db(project.store).transaction() as con:
            con.execute(
                "INSERT INTO run_artifacts (run_id, path, status, snapshot_id, detail) VALUES (?, ?, 'ingested', ?, ?)",
                [
                    run_id,
                    "step3.coverage.json",
                    snapshot_id,
                    "an identical report of this commit was stored already",
                ],
            )
        assert [r and r["run_id"] for r in runs()] == [run_id]


def test_changing_an_answer_in_process_leaves_the_next_answer_as_stored(sample_repo: Path) -> None:
    with open_project(sample_repo) as project:
        service = Service(project)
        service.call(
            "register_test_command",
            {"name": "unit", "argv": ["true"], "artifacts": [{"path": "cov.json", "suite": "unit"}]},
        )
        first = _context(service)
        first["commands"][0]["name"] = "changed by the caller"
        first["commands"][0]["argv"].append("--injected")
        again = _context(service)["commands"][0]
        assert (again["name"], again["argv"]) == ("unit", ["true"])


def test_a_worker_finding_nothing_queued_leaves_every_cached_answer_cached(sample_repo: Path) -> None:
    """An idle execution worker looks at the queue every second; a look that claims nothing writes nothing,
    so it must not start a new generation (each one makes project_context and every review read the whole
    store again: under an open loop of reads that was a recomputation each second, issue 29's p99)."""
    with open_project(sample_repo) as project:
        project.ingest(sample_repo / "step3.coverage.json", suite="unit")
        store = project.store
        before = store.generation
        for _ in range(3):
            assert runs.claim(store) is None
        assert store.generation == before
