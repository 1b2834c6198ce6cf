"""A damaged WAL is kept once per distinct content, and project_context says a kept copy exists."""

from __future__ import annotations

from pathlib import Path

from coverage_core import open_project
from coverage_core.errors import ErrorCode
from coverage_core.service import Service

from .gitrepo import make_repo
from .test_trust_storage import SOURCES, ingest_leaving_wal, refused, two_reports


def _copies(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if ".wal.preserved-" in p.name)


def test_opening_a_store_again_and_again_with_the_same_damaged_wal_keeps_one_copy(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", SOURCES)
    ingest_leaving_wal(repo, *two_reports(repo))
    folder = repo / ".coverage-mcp"
    wal = folder / "coverage.duckdb.wal"
    with open(wal, "r+b") as handle:
        handle.truncate(wal.stat().st_size - 100)
    for _ in range(4):
        assert refused(repo).code is ErrorCode.STORE_UNAVAILABLE
    assert len(_copies(folder)) == 1 and _copies(folder)[0].read_bytes() == wal.read_bytes()
    # Another, different damage is another WAL: it gets its own copy.
    with open(wal, "r+b") as handle:
        handle.truncate(wal.stat().st_size - 10)
    refused(repo)
    refused(repo)
    assert len(_copies(folder)) == 2


def test_project_context_says_a_preserved_copy_exists_once_the_store_opens_again(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", SOURCES)
    ingest_leaving_wal(repo, *two_reports(repo))
    folder = repo / ".coverage-mcp"
    wal = folder / "coverage.duckdb.wal"
    with open(wal, "r+b") as handle:
        handle.truncate(wal.stat().st_size - 100)
    refused(repo)
    (copy,) = _copies(folder)
    # The user accepts the loss: the WAL moved aside, the store opens on what the database holds.
    wal.rename(tmp_path / "moved.wal")
    (folder / "coverage.duckdb.committed").unlink()
    with open_project(repo) as project:
        context = Service(project).call("project_context", {})
    assert context["data"]["preserved_wal"]["copies"] == [str(copy)]
    assert copy.exists()
