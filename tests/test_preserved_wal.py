"""A damaged WAL is kept once per distinct content, and project_context says a kept copy exists."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

from coverage_core import open_project
from coverage_core.errors import ErrorCode
from coverage_core.service import Service

from . import commandline
from .daemons import Running
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
    human = commandline.cli("context", cwd=repo)
    assert human.returncode == 0 and f"preserved WAL copies: {copy}" in human.stdout, human.stderr
    assert copy.exists()


def _status(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """``coverage-mcp status`` in ``repo``, in this process (on a thread when a daemon runs in the loop)."""
    return commandline.cli("status", *args, cwd=repo)


def test_status_in_a_checkout_names_its_preserved_wal_copy_without_opening_the_store(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", SOURCES)
    ingest_leaving_wal(repo, *two_reports(repo))
    folder = repo / ".coverage-mcp"
    wal = folder / "coverage.duckdb.wal"
    store = folder / "coverage.duckdb"
    assert _status(repo, "--json").returncode == 1  # no daemon runs
    assert "preserved_wal" not in json.loads(_status(repo, "--json").stdout)  # nothing kept yet
    with open(wal, "r+b") as handle:
        handle.truncate(wal.stat().st_size - 100)
    refused(repo)
    (copy,) = _copies(folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    # The store still refuses to open (its WAL is damaged): status answers from the folder alone.
    done = _status(repo / "src", "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    shown = json.loads(done.stdout)
    assert shown["running"] is False
    assert shown["preserved_wal"]["store"] == str(store) and shown["preserved_wal"]["copies"] == [str(copy)]
    human = _status(tmp_path, "--repo", str(repo))
    assert str(copy) in human.stdout and "preserved WAL" in human.stdout, human.stdout
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before  # nothing written
    # Outside any checkout there is no store to speak of; an explicit --repo that is none is refused.
    assert "preserved_wal" not in json.loads(_status(tmp_path, "--json").stdout)
    wrong = _status(tmp_path, "--repo", str(tmp_path), "--json")
    assert wrong.returncode == 1 and json.loads(wrong.stderr)["error"]["code"] == "not_a_repository"


async def test_status_names_the_preserved_copy_while_a_daemon_runs_too(
    tmp_path: Path, daemon: Running
) -> None:
    repo = make_repo(tmp_path / "repo", SOURCES)
    ingest_leaving_wal(repo, *two_reports(repo))
    folder = repo / ".coverage-mcp"
    wal = folder / "coverage.duckdb.wal"
    with open(wal, "r+b") as handle:
        handle.truncate(wal.stat().st_size - 100)
    refused(repo)
    (copy,) = _copies(folder)
    done = await asyncio.to_thread(_status, repo, "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["running"] is True and shown["preserved_wal"]["copies"] == [str(copy)]
