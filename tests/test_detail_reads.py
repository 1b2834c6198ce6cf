"""A read of detail declares the tables it reads, and that declaration alone restores compacted snapshots.

The suite checks every query through ``Call`` against its declaration (tests/detail_reads.py, installed by
conftest.py for every test): these tests prove the check fails where a declaration is missing, and why it
matters: without it a compacted snapshot's detail reads as empty, with no error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coverage_core import open_project
from coverage_core.project import DEFAULT_SUITE, Project
from coverage_core.review.call import Call
from coverage_core.service import Service
from coverage_core.storage import compaction

from .detail_reads import UNDECLARED


def _ingest(project: Project, report: str) -> str:
    env = Service(project).call("coverage_import", {"report_path": report})
    return str(env["data"]["snapshot"]["snapshot_id"])


def test_a_query_through_a_call_reading_detail_it_does_not_declare_fails_the_suite(sample_repo: Path) -> None:
    with open_project(sample_repo) as project:
        sid = _ingest(project, "step3.coverage.json")
        con = project.store.cursor()
        try:
            snap = project.store.snap_key(sid, con)
            call = Call(project, con, {})
            composed = (
                "SELECT count(*) FROM files f WHERE f.snap = ? AND f.file_id IN "
                "(SELECT file_id FROM (SELECT file_id FROM functions WHERE snap = f.snap))"
            )
            with pytest.raises(AssertionError, match=r"\['functions'\]"):
                call.value(composed, [snap])
            with pytest.raises(AssertionError, match=r"\['lines'\]"):
                call.rows("SELECT line FROM lines WHERE snap = ?", [snap], detail=("branches",))
            with pytest.raises(AssertionError, match=r"\['test_names', 'test_observations'\]"):
                call.numpy(
                    "SELECT n.name FROM test_observations o JOIN test_names n ON n.test_id = o.test_id "
                    "WHERE o.snap = ? AND n.snap = o.snap",
                    [snap],
                )
            assert len(UNDECLARED) == 3  # each would also fail the test that ran it, after the test
            UNDECLARED.clear()
            # Declared, the same queries run; tables named only outside the detail need no declaration.
            assert call.value(composed, [snap], detail=("functions",)) > 0
            assert call.rows("SELECT line FROM lines WHERE snap = ?", [snap], detail=("lines",))
            assert call.value("SELECT count(*) FROM files WHERE snap = ?", [snap]) > 0
        finally:
            con.close()


def test_a_compacted_snapshots_detail_reads_empty_unless_the_read_declares_it(sample_repo: Path) -> None:
    with open_project(sample_repo) as project:
        old = _ingest(project, "step1.coverage.json")
        new = _ingest(project, "step3.coverage.json")
        count = "SELECT count(*) FROM lines WHERE snap = ?"
        relational = {
            sid: project.store.con.execute(count, [project.store.snap_key(sid)]).fetchall()[0][0]
            for sid in (old, new)
        }
        assert all(relational.values())
        for snap, sid, suite, created in project.store.con.execute(
            "SELECT snap, snapshot_id, suite, created_at FROM snapshots ORDER BY snap"
        ).fetchall():
            assert compaction.compact_snapshot(project.store, compaction.Candidate(snap, sid, suite, created))
        con = project.store.cursor()
        try:
            call = Call(project, con, {})
            snaps = {sid: project.store.snap_key(sid, con) for sid in (old, new)}
            # What an undeclared read would answer: nothing, and no error.
            assert con.execute(count, [snaps[old]]).fetchall()[0][0] == 0
            assert call.value(count, [snaps[old]], detail=("lines",)) == relational[old]
            assert call.value(count, [snaps[new]], detail=("lines",)) == relational[new]
            # A history series reads snapshots the call never resolved: it names them with the tables.
            other = project.store.cursor()
            try:
                series = project.store.series(other, DEFAULT_SUITE, max(snaps.values()))
                assert set(series.values()) == {old, new}
                assert other.execute(count, [snaps[old]]).fetchall()[0][0] == 0
                Call(project, other, {}).restore(("lines",), series)
                assert other.execute(count, [snaps[old]]).fetchall()[0][0] == relational[old]
            finally:
                other.close()
        finally:
            con.close()
