"""The store never writes through a link, keeps its files private, never loses a WAL quietly, and leaves someone else's store alone."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from coverage_core import open_project
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_daemon.project_registry import Registry
from coverage_daemon.server import take_daemon_lock

from .environment import test_env
from .gitrepo import commit, git, lcov, make_repo

SOURCES = {"src/app/core.py": "a\nb\nc\nd\n", "README.md": "hi\n"}
OUTSIDE_BYTES = b"a file outside the repository that must never change\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", SOURCES)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file of the user's, outside any repository, mode 0644."""
    target = tmp_path / "outside" / "precious.txt"
    target.parent.mkdir()
    target.write_bytes(OUTSIDE_BYTES)
    target.chmod(0o644)
    return target


def snapshot_of(path: Path) -> tuple[bytes, int, float]:
    st = path.stat()
    return path.read_bytes(), stat.S_IMODE(st.st_mode), st.st_mtime


def commit_link(repo: Path, name: str, target: Path) -> Path:
    """Commit ``.coverage-mcp/<name>`` as a symlink to ``target``, the way a hostile repository would."""
    link = repo / ".coverage-mcp" / name
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(target)
    git(repo, "add", "-f", str(link.relative_to(repo)))
    commit(repo, f"commit a {name} link")
    assert git(repo, "ls-files", "-s", str(link.relative_to(repo))).startswith("120000")
    return link


def refused(repo: Path) -> CoverageError:
    with pytest.raises(CoverageError) as err:
        open_project(repo)
    return err.value


def write_report(repo: Path, name: str, records: dict[str, dict[int, int]]) -> Path:
    path = repo / name
    path.write_text(lcov(records))
    return path


# -- never write through a link ------------------------------------------------

STORE_ENTRIES = [
    ".gitignore",
    "coverage.duckdb.lock",
    "coverage.duckdb",
    "coverage.duckdb.wal",
    "coverage.duckdb.committed",
]


@pytest.mark.parametrize("name", STORE_ENTRIES)
def test_a_committed_symlink_in_the_store_folder_is_refused_and_its_target_is_untouched(
    repo: Path, outside: Path, name: str
) -> None:
    link = commit_link(repo, name, outside)
    before = snapshot_of(outside)
    error = refused(repo)
    assert error.code is ErrorCode.STORE_UNAVAILABLE
    assert str(link) in error.message and error.details["path"] == str(link)
    assert error.details["reason"] == "symlink"
    assert snapshot_of(outside) == before
    assert sorted(p.name for p in link.parent.iterdir()) == [name]  # nothing else was created
    # Removing the link is all it takes to use the repository.
    link.unlink()
    with open_project(repo) as project:
        assert project.ingest(write_report(repo, "cov.info", {"src/app/core.py": {1: 1}})).snapshot_id
    assert snapshot_of(outside) == before


def test_a_committed_symlink_as_duckdbs_temp_folder_is_refused(repo: Path, tmp_path: Path) -> None:
    # DuckDB spills to <database>.tmp by name: a link there would take its writes elsewhere.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = commit_link(repo, "coverage.duckdb.tmp", elsewhere)
    error = refused(repo)
    assert error.code is ErrorCode.STORE_UNAVAILABLE and error.details["path"] == str(link)
    assert list(elsewhere.iterdir()) == []


def test_a_store_folder_that_is_a_symlink_is_refused_and_the_folder_it_points_to_stays_empty(
    repo: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    elsewhere.chmod(0o755)
    (repo / ".coverage-mcp").symlink_to(elsewhere)
    git(repo, "add", "-f", ".coverage-mcp")
    commit(repo, "store folder link")
    error = refused(repo)
    assert error.code is ErrorCode.STORE_UNAVAILABLE
    assert error.details["path"] == str(repo / ".coverage-mcp") and "symbolic link" in error.message
    assert list(elsewhere.iterdir()) == [] and stat.S_IMODE(elsewhere.stat().st_mode) == 0o755


def test_a_store_path_that_is_a_regular_file_is_refused(repo: Path) -> None:
    (repo / ".coverage-mcp").write_text("not a folder\n")
    error = refused(repo)
    assert error.code is ErrorCode.STORE_UNAVAILABLE and "is a regular file, not a directory" in error.message
    assert (repo / ".coverage-mcp").read_text() == "not a folder\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_store_folder_owned_by_another_user_is_refused_untouched(repo: Path) -> None:
    folder = repo / ".coverage-mcp"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    os.chown(folder, 65534, 65534)
    error = refused(repo)
    assert error.code is ErrorCode.STORE_UNAVAILABLE and error.details["reason"] == "owner"
    assert "uid 65534" in error.message
    assert list(folder.iterdir()) == [] and stat.S_IMODE(folder.stat().st_mode) == 0o777


def test_a_lock_file_that_is_a_directory_or_a_fifo_is_store_unavailable_at_once(repo: Path) -> None:
    folder = repo / ".coverage-mcp"
    folder.mkdir()
    (folder / "coverage.duckdb.lock").mkdir()
    error = refused(repo)
    assert error.code is ErrorCode.STORE_UNAVAILABLE and "coverage.duckdb.lock" in error.message
    assert "directory" in error.message
    (folder / "coverage.duckdb.lock").rmdir()
    os.mkfifo(folder / "coverage.duckdb.lock")
    error = refused(repo)  # a FIFO must not block the open: opening it for reading would wait forever
    assert error.code is ErrorCode.STORE_UNAVAILABLE and "is a FIFO" in error.message


def test_an_existing_gitignore_is_kept_and_a_missing_one_is_written_whole(repo: Path) -> None:
    folder = repo / ".coverage-mcp"
    folder.mkdir()
    (folder / ".gitignore").write_text("*\n# mine\n")
    with open_project(repo):
        pass
    assert (folder / ".gitignore").read_text() == "*\n# mine\n"
    (folder / ".gitignore").unlink()
    with open_project(repo):
        pass
    assert (folder / ".gitignore").read_text() == "*\n"
    assert not [p.name for p in folder.iterdir() if ".tmp-" in p.name]  # no temp file left behind


def test_home_files_are_never_opened_through_a_link(isolated_home: Path, outside: Path) -> None:
    before = snapshot_of(outside)
    settings = Settings.from_env()
    (isolated_home / "daemon.lock").symlink_to(outside)
    with pytest.raises(CoverageError) as err:
        take_daemon_lock(settings, "fingerprint")
    assert err.value.code is ErrorCode.STORE_UNAVAILABLE
    assert err.value.details["path"] == str(isolated_home / "daemon.lock")
    (isolated_home / "common.duckdb").symlink_to(outside)
    with pytest.raises(CoverageError) as err:
        Registry(isolated_home / "common.duckdb")
    assert err.value.code is ErrorCode.STORE_UNAVAILABLE
    assert err.value.details["path"] == str(isolated_home / "common.duckdb")
    (isolated_home / "common.duckdb").unlink()
    (isolated_home / "common.duckdb.wal").symlink_to(outside)
    with pytest.raises(CoverageError) as err:
        Registry(isolated_home / "common.duckdb")
    assert err.value.details["path"] == str(isolated_home / "common.duckdb.wal")
    assert not (isolated_home / "common.duckdb").exists()
    assert snapshot_of(outside) == before


def test_a_daemon_lock_that_is_a_directory_is_store_unavailable_not_internal(isolated_home: Path) -> None:
    (isolated_home / "daemon.lock").mkdir()
    with pytest.raises(CoverageError) as err:
        take_daemon_lock(Settings.from_env(), "fingerprint")
    assert err.value.code is ErrorCode.STORE_UNAVAILABLE
    assert "daemon.lock" in err.value.message and "directory" in err.value.message


def test_a_daemon_lock_that_is_a_directory_makes_serve_fail_with_store_unavailable(
    isolated_home: Path,
) -> None:
    (isolated_home / "daemon.lock").mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "serve", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=test_env(home=isolated_home),
    )
    assert proc.returncode not in (0, None)
    out = proc.stdout + proc.stderr
    assert "daemon.lock" in out and "directory" in out
    assert "Traceback" not in out and "internal" not in out


# -- files and durability -----------------------------------------------------


def test_the_store_folder_is_0700_and_its_database_and_lock_are_0600(repo: Path, isolated_home: Path) -> None:
    """Seed: "All parent directories are created by the Rust storage layer." """
    folder = repo / ".coverage-mcp"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)  # as an older version left it
    with open_project(repo) as project:
        project.ingest(write_report(repo, "cov.info", {"src/app/core.py": {1: 1}}))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in ("coverage.duckdb", "coverage.duckdb.lock"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name
    Registry(isolated_home / "common.duckdb").close()
    assert stat.S_IMODE((isolated_home / "common.duckdb").stat().st_mode) == 0o600


LEAVE_WAL = """
import os, sys
from coverage_core import open_project
p = open_project(sys.argv[1])
p.store.con.execute('PRAGMA disable_checkpoint_on_shutdown')
p.store.con.execute("PRAGMA wal_autocheckpoint='1TB'")
for report in sys.argv[2:]:
    print(p.ingest(report).snapshot_id, flush=True)
os._exit(0)  # no checkpoint: the snapshots live only in the WAL
"""


def ingest_leaving_wal(repo: Path, *reports: Path) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", LEAVE_WAL, str(repo), *map(str, reports)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out.stdout.split()


def two_reports(repo: Path) -> tuple[Path, Path]:
    return (
        write_report(repo, "one.info", {"src/app/core.py": {1: 1, 2: 0}}),
        write_report(repo, "two.info", {"src/app/core.py": {1: 1, 2: 1, 3: 1}}),
    )


def test_a_wal_with_a_damaged_tail_fails_closed_naming_a_preserved_copy_and_loses_nothing(repo: Path) -> None:
    """Seed: "Database open and WAL replay errors fail closed." """
    first, second = ingest_leaving_wal(repo, *two_reports(repo))
    folder = repo / ".coverage-mcp"
    wal = folder / "coverage.duckdb.wal"
    # Cut the last record short: DuckDB alone would replay the first snapshot,
    # delete the WAL and open with the second one gone.
    with open(wal, "r+b") as handle:
        handle.truncate(wal.stat().st_size - 100)
    damaged = wal.read_bytes()
    error = refused(repo)
    assert error.code is ErrorCode.STORE_UNAVAILABLE
    assert error.details["missing_snapshot"] == second
    preserved = Path(error.details["preserved_wal"])
    assert preserved.parent == folder and preserved.name.startswith("coverage.duckdb.wal.preserved-")
    assert str(preserved) in error.message
    assert preserved.read_bytes() == damaged
    assert wal.read_bytes() == damaged  # refused before DuckDB could write: the WAL itself is intact too
    # Every later open keeps refusing: the loss is never accepted silently.
    assert refused(repo).details["missing_snapshot"] == second
    assert first != second


def test_a_sound_wal_is_replayed_and_no_preserved_copy_is_left_behind(repo: Path) -> None:
    ids = ingest_leaving_wal(repo, *two_reports(repo))
    folder = repo / ".coverage-mcp"
    assert (folder / "coverage.duckdb.wal").stat().st_size > 0
    with open_project(repo) as project:
        assert sorted(s.snapshot_id for s in project.snapshots()) == sorted(ids)
    assert not [p.name for p in folder.iterdir() if "preserved" in p.name]
    with open_project(repo) as project:  # and a plain reopen stays clean
        assert len(project.snapshots()) == 2
    assert not [p.name for p in folder.iterdir() if "preserved" in p.name]


def test_a_database_replaced_by_an_older_copy_is_refused_until_the_marker_is_removed(repo: Path) -> None:
    one, two = two_reports(repo)
    folder = repo / ".coverage-mcp"
    with open_project(repo) as project:
        project.ingest(one)
    older = (folder / "coverage.duckdb").read_bytes()
    with open_project(repo) as project:
        newest = project.ingest(two).snapshot_id
    (folder / "coverage.duckdb").write_bytes(older)
    error = refused(repo)
    assert error.code is ErrorCode.STORE_UNAVAILABLE and error.details["missing_snapshot"] == newest
    assert error.details["preserved_wal"] is None and "coverage.duckdb.committed" in error.suggestion
    assert (folder / "coverage.duckdb").read_bytes() == older
    (folder / "coverage.duckdb.committed").unlink()  # the user restored it on purpose
    with open_project(repo) as project:
        assert len(project.snapshots()) == 1


# -- someone else's store at our path -----------------------------------------


def make_foreign_store(path: Path) -> None:
    """A store shaped like the Python predecessor's: its own tables, no schema_revision."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE worktrees (id INTEGER PRIMARY KEY, path VARCHAR)")
    con.execute("CREATE TABLE runs (id INTEGER, worktree INTEGER, percent DOUBLE)")
    con.execute("INSERT INTO worktrees VALUES (1, '/src/app')")
    con.execute("INSERT INTO runs VALUES (1, 1, 87.5)")
    con.close()


def test_a_store_another_program_created_is_refused_by_name_and_left_byte_identical(repo: Path) -> None:
    folder = repo / ".coverage-mcp"
    make_foreign_store(folder / "coverage.duckdb")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    error = refused(repo)
    assert error.code is ErrorCode.STORE_UNAVAILABLE and error.details["reason"] == "foreign_store"
    assert error.details["tables"] == ["runs", "worktrees"] and "worktrees" in error.message
    assert f"mv {folder} {folder}.old" in error.suggestion
    # The lock and .gitignore are ours to add; the foreign database (and its absent WAL) are not touched.
    after = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert {k: after[k] for k in before} == before
    assert set(after) - set(before) <= {"coverage.duckdb.lock", ".gitignore"}
    # Moved aside as suggested, the repository gets a fresh store and the old one survives as it was.
    folder.rename(repo / ".coverage-mcp.old")
    with open_project(repo) as project:
        assert project.snapshots() == []
    assert (repo / ".coverage-mcp.old" / "coverage.duckdb").read_bytes() == before["coverage.duckdb"]


def test_an_empty_duckdb_file_at_our_path_becomes_our_store(repo: Path) -> None:
    path = repo / ".coverage-mcp" / "coverage.duckdb"
    path.parent.mkdir()
    duckdb.connect(str(path)).close()
    with open_project(repo) as project:
        assert project.snapshots() == []


def test_a_cloned_repository_with_a_linked_lock_makes_the_cli_fail_cleanly_and_leaves_the_target_alone(
    repo: Path, outside: Path, tmp_path: Path
) -> None:
    commit_link(repo, "coverage.duckdb.lock", outside)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    assert (clone / ".coverage-mcp" / "coverage.duckdb.lock").is_symlink()
    report = write_report(clone, "cov.info", {"src/app/core.py": {1: 1}})
    before = snapshot_of(outside)
    out = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "ingest", str(report), "--json"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=60,
    )
    error = json.loads(out.stderr)["error"]
    assert out.returncode == 1 and error["code"] == "store_unavailable"
    assert error["details"]["path"] == str(clone / ".coverage-mcp" / "coverage.duckdb.lock")
    assert snapshot_of(outside) == before
