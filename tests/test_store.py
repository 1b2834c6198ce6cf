"""The project store: git identity, one-transaction ingest, leases, schema, reads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.git import discover
from coverage_core.storage import schema
from coverage_core.storage.paths import AMBIGUOUS, MAPPED, UNMAPPED, map_paths

from . import commandline
from .gitrepo import commit, git, lcov, make_repo, write

SOURCES = {"src/app/core.py": "a\nb\nc\nd\n", "src/app/util.py": "x\ny\n", "README.md": "hi\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", SOURCES)


def write_report(repo: Path, name: str, records: dict[str, dict[int, int]], test: str = "") -> Path:
    path = repo / name
    path.write_text(lcov(records, test))
    return path


def test_ingest_records_git_identity_totals_and_an_immutable_snapshot_id(repo: Path) -> None:
    """Seed: "Coverage snapshots, registered command approvals, and completed runs are immutable records." """
    report = write_report(
        repo, "cov.info", {"src/app/core.py": {1: 1, 2: 0, 3: 4}, "src/app/util.py": {1: 1}}
    )
    with open_project(repo) as project:
        snap = project.ingest(report, suite="unit")
        head = git(repo, "rev-parse", "HEAD")
        assert snap.snapshot_id.startswith("snap-")
        assert (snap.suite, snap.format, snap.scope, snap.provenance) == (
            "unit",
            "lcov",
            "complete",
            "import",
        )
        assert (snap.commit, snap.branch, snap.dirty, snap.worktree) == (head, "main", False, "main")
        assert snap.totals["lines"].to_dict() == {"found": 4, "hit": 3}
        assert (snap.path_mapping.mapped, snap.path_mapping.unmapped) == (2, 0)
        assert len(snap.artifact_sha256) == 64 and snap.artifact_bytes == report.stat().st_size
        assert project.snapshots() == [snap]


def test_the_store_lives_in_the_main_worktree_and_ignores_itself(repo: Path) -> None:
    """Seed: "The shared daemon registry defaults to `~/.coverage-mcp/common.duckdb`, while project stores
    live at `<repository>/.coverage-mcp/coverage.duckdb`." """
    with open_project(repo / "src") as project:
        assert project.store.path == repo.resolve() / ".coverage-mcp" / "coverage.duckdb"
    assert (repo / ".coverage-mcp" / ".gitignore").read_text() == "*\n"
    assert git(repo, "status", "--porcelain") == ""


def test_reimporting_an_identical_artifact_returns_the_existing_snapshot_marked_duplicate(repo: Path) -> None:
    report = write_report(repo, "cov.info", {"src/app/core.py": {1: 1}})
    with open_project(repo) as project:
        first = project.ingest(report)
        again = project.ingest(report)
        assert again.duplicate and not first.duplicate
        assert again.snapshot_id == first.snapshot_id
        assert len(project.snapshots()) == 1
        rows = project.store.con.execute("SELECT count(*) FROM lines").fetchone()[0]
        assert rows == 1
        other_suite = project.ingest(report, suite="integration")
        assert not other_suite.duplicate and other_suite.snapshot_id != first.snapshot_id


def test_a_path_outside_any_git_repository_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CoverageError) as err:
        open_project(tmp_path)
    assert err.value.code is ErrorCode.NOT_A_REPOSITORY
    assert "--repo" in err.value.suggestion


def test_dirty_means_tracked_changes_only(repo: Path) -> None:
    report = write_report(repo, "cov.info", {"src/app/core.py": {1: 1}})  # untracked: not dirty
    with open_project(repo) as project:
        assert project.ingest(report).dirty is False
        (repo / "src/app/util.py").write_text("changed\n")
        report.write_text(lcov({"src/app/core.py": {1: 2}}))
        assert project.ingest(report).dirty is True


def test_ci_paths_are_mapped_by_unique_suffix_and_ambiguous_or_unknown_ones_are_flagged(
    tmp_path: Path,
) -> None:
    repo = make_repo(
        tmp_path / "r", {"src/a/util.c": "", "src/b/util.c": "", "src/main.c": "", "lib/x.c": ""}
    )
    report = write_report(
        repo,
        "cov.info",
        {
            "/build/proj-1.0/src/main.c": {1: 1},  # suffix match -> src/main.c
            "/build/proj-1.0/util.c": {1: 1},  # two tracked util.c -> ambiguous
            "/usr/include/stdio.h": {1: 0},  # nothing -> unmapped
            str(repo / "lib" / "x.c"): {1: 1, 2: 0},  # checkout root stripped
        },
    )
    with open_project(repo) as project:
        snap = project.ingest(report)
        m = snap.path_mapping
        assert (m.mapped, m.ambiguous, m.unmapped) == (2, 1, 1)
        paths = {f.path: f.mapping for f in project.files(snap.snapshot_id).files}
        assert paths == {
            "src/main.c": MAPPED,
            "lib/x.c": MAPPED,
            "/build/proj-1.0/util.c": AMBIGUOUS,
            "/usr/include/stdio.h": UNMAPPED,
        }
        # Unmapped files are still counted: the snapshot's totals equal the report's.
        assert snap.totals["lines"].to_dict() == {"found": 5, "hit": 3}


def test_explicit_prefix_maps_win_over_suffix_matching() -> None:
    result = map_paths(
        ["/ci/work/app/util.c", "/ci/work/other/util.c"],
        checkout_root="/home/me/repo",
        tracked=["src/app/util.c", "src/other/util.c"],
        prefix_map=[("/ci/work", "src")],
    )
    assert result.paths == ("src/app/util.c", "src/other/util.c")
    assert result.status == (MAPPED, MAPPED)


def test_an_ingest_where_nothing_maps_succeeds_with_a_warning(repo: Path) -> None:
    report = write_report(repo, "cov.info", {"/elsewhere/zzz.c": {1: 1}})
    with open_project(repo) as project:
        snap = project.ingest(report)
    assert snap.path_mapping.unmapped == 1
    assert any(w["code"] == "no_files_mapped" for w in snap.warnings)


def test_two_linked_worktrees_share_one_store_and_each_snapshot_records_its_worktree(
    repo: Path, tmp_path: Path
) -> None:
    """Seed: "Linked worktrees resolve through Git's common directory and share the repository store." """
    linked = tmp_path / "wt-feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    a = discover(repo)
    b = discover(linked / "src")
    assert a.repo_key == b.repo_key and a.project_id == b.project_id
    assert a.store_dir == b.store_dir
    report_a = write_report(repo, "a.info", {"src/app/core.py": {1: 1}})
    report_b = write_report(linked, "b.info", {"src/app/core.py": {1: 0}})
    with open_project(repo) as project:
        sa = project.ingest(report_a)
    with open_project(linked) as project:
        sb = project.ingest(report_b)
        snaps = {s.snapshot_id: s for s in project.snapshots()}
    assert set(snaps) == {sa.snapshot_id, sb.snapshot_id}
    assert snaps[sa.snapshot_id].worktree == "main" and snaps[sa.snapshot_id].branch == "main"
    assert snaps[sb.snapshot_id].worktree == "wt-feature" and snaps[sb.snapshot_id].branch == "feature"
    assert snaps[sb.snapshot_id].worktree_path == str(linked.resolve())


HOLDER = textwrap.dedent(
    """
    import sys, time
    from coverage_core import open_project
    project = open_project(sys.argv[1])
    print("held", flush=True)
    time.sleep(60)
    """
)


def test_a_second_owner_gets_store_locked_naming_the_holder_and_a_killed_holder_leaves_no_stale_lock(
    repo: Path,
) -> None:
    """Seed: "Each project store takes `<database>.lock` before opening DuckDB." and "These are advisory
    OS file leases held by live file descriptors; a crashed process does not leave an unrecoverable
    stale lock, and the metadata file is never treated as proof of ownership by itself." and "A
    duplicate daemon or database owner fails fast with holder metadata instead of deleting a lock or
    attempting concurrent DuckDB access." """
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(repo)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(CoverageError) as err:
            open_project(repo)
        assert err.value.code is ErrorCode.STORE_LOCKED
        assert str(holder.pid) in err.value.message
        assert err.value.details["holder"]["pid"] == holder.pid
        assert "daemon" in err.value.suggestion
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    lock = repo / ".coverage-mcp" / "coverage.duckdb.lock"
    assert lock.exists()  # never deleted, and no longer an obstacle
    assert oct(lock.stat().st_mode & 0o777) == "0o600"
    with open_project(repo) as project:
        assert project.snapshots() == []


KILLED_INGEST = textwrap.dedent(
    """
    import os, signal, sys
    from coverage_core import open_project
    project = open_project(sys.argv[1])
    def stage(name):
        if name == sys.argv[3]:
            os.kill(os.getpid(), signal.SIGKILL)
    project.ingest(sys.argv[2], progress=stage)
    """
)


@pytest.mark.parametrize("stage", ["lines", "tests"])
def test_an_ingest_killed_mid_transaction_leaves_nothing_behind(repo: Path, stage: str) -> None:
    records = {"src/app/core.py": {n: n % 3 for n in range(1, 5000)}}
    report = write_report(repo, "cov.info", records, test="t1")
    proc = subprocess.run([sys.executable, "-c", KILLED_INGEST, str(repo), str(report), stage])
    assert proc.returncode == -signal.SIGKILL
    with open_project(repo) as project:
        assert project.snapshots() == []
        con = project.store.con
        for table in ("snapshots", "files", "lines", "snapshot_totals", "test_observations", "test_names"):
            assert con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
        snap = project.ingest(report)
        assert snap.totals["lines"].found == 4999 and not snap.duplicate


def test_a_damaged_wal_is_a_clear_error_and_no_file_is_touched(repo: Path) -> None:
    """Seed: "Database open and WAL replay errors fail closed." and "The runtime never removes a WAL,
    lock, or database file automatically; operators should stop competing owners and restore a verified
    database/WAL backup when replay cannot complete." """
    report = write_report(repo, "cov.info", {"src/app/core.py": {1: 1}})
    # The schema is checkpointed into the database first, so the WAL holds the ingest alone
    # (its size then does not depend on how many schema revisions there are).
    open_project(repo).close()
    # Leave a WAL behind: ingest in a process that dies before any checkpoint.
    script = (
        "import os, sys\nfrom coverage_core import open_project\n"
        "p = open_project(sys.argv[1]); p.store.con.execute('PRAGMA disable_checkpoint_on_shutdown');"
        " p.store.con.execute(\"PRAGMA wal_autocheckpoint='1TB'\"); p.ingest(sys.argv[2]); os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(repo), str(report)], check=True)
    db = repo / ".coverage-mcp" / "coverage.duckdb"
    wal = db.with_name(db.name + ".wal")
    assert wal.exists() and wal.stat().st_size > 0
    data = bytearray(wal.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 64] = os.urandom(64)
    wal.write_bytes(bytes(data))
    before = {p.name: p.read_bytes() for p in db.parent.iterdir() if p.is_file()}
    with pytest.raises(CoverageError) as err:
        open_project(repo)
    after = {p.name: p.read_bytes() for p in db.parent.iterdir() if p.is_file()}
    kept = {k: v for k, v in after.items() if not k.endswith(".lock")}
    # Where the random bytes land decides DuckDB's reaction: it refuses the WAL outright, or
    # replays it up to the damage and the committed snapshot is missing. Either way the
    # error says what to do, and nothing is changed; in the second case the WAL as found is
    # also kept, byte for byte, in a preserved copy.
    preserved = {k: v for k, v in kept.items() if ".wal.preserved-" in k}
    if preserved:
        assert err.value.code is ErrorCode.STORE_UNAVAILABLE
        assert "Nothing was deleted" in err.value.suggestion and "backup" in err.value.suggestion
        assert list(preserved.values()) == [before[wal.name]]
    else:  # DuckDB refused the WAL's checksums: the store is damaged, named, and left as it was
        assert err.value.code is ErrorCode.STORE_DAMAGED and str(wal) in err.value.message
        assert "backup" in err.value.suggestion and "not changed" in err.value.message
    assert {k: v for k, v in kept.items() if k not in preserved} == {
        k: v for k, v in before.items() if not k.endswith(".lock")
    }


def test_a_store_from_a_newer_schema_revision_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "future.duckdb"
    con = duckdb.connect(str(path))
    schema.migrate(con)
    con.execute("INSERT INTO schema_revision VALUES (?, now())", [schema.SCHEMA_REVISION + 1])
    con.close()
    con = duckdb.connect(str(path))
    with pytest.raises(CoverageError) as err:
        schema.migrate(con)
    assert err.value.code is ErrorCode.SCHEMA_TOO_NEW
    assert (
        con.execute("SELECT max(revision) FROM schema_revision").fetchone()[0] == schema.SCHEMA_REVISION + 1
    )


def _schema_of(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_name <> 'schema_revision' ORDER BY table_name, ordinal_position"
    ).fetchall()


def test_a_store_migrated_step_by_step_equals_a_freshly_created_one(tmp_path: Path) -> None:
    """Seed: "Fresh schema creation is performed at open and is intentionally owned by storage rather than
    by transport code." """
    old = duckdb.connect(str(tmp_path / "old.duckdb"))
    for step in range(1, schema.SCHEMA_REVISION + 1):
        schema.migrate(old, target=step)
        assert schema.current_revision(old) == step
    fresh = duckdb.connect(str(tmp_path / "fresh.duckdb"))
    schema.migrate(fresh)
    assert _schema_of(old) == _schema_of(fresh)
    assert schema.current_revision(old) == schema.current_revision(fresh) == schema.SCHEMA_REVISION


def test_a_store_of_the_previous_revision_keeps_its_rows_and_migrates_to_a_fresh_stores_schema(
    tmp_path: Path,
) -> None:
    path = tmp_path / "previous.duckdb"
    old = duckdb.connect(str(path))
    schema.migrate(old, target=3)  # before revision 4's content identity
    old.execute(
        "INSERT INTO files (snap, file_id, path, report_path, mapping, lines_found, lines_hit, branches_found, "
        "branches_hit, functions_found, functions_hit) VALUES (1, 0, 'a.py', 'a.py', 'mapped', 2, 1, 0, 0, 0, 0)"
    )
    old.close()
    old = duckdb.connect(str(path))
    assert schema.migrate(old) == schema.SCHEMA_REVISION
    fresh = duckdb.connect(str(tmp_path / "fresh.duckdb"))
    schema.migrate(fresh)
    assert _schema_of(old) == _schema_of(fresh)
    # Revision 4: a file stored before has no recorded content identity, and no text is kept.
    assert old.execute("SELECT path, lines_hit, content_blob FROM files").fetchall() == [("a.py", 1, None)]
    assert old.execute("SELECT count(*) FROM file_texts").fetchone()[0] == 0
    # Revision 5: managed execution's tables start empty; nothing else moves.
    for table in ("commands", "command_decisions", "runs", "run_events", "run_artifacts"):
        assert old.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0


def test_snapshots_filter_by_suite_branch_and_commit_newest_first(repo: Path) -> None:
    with open_project(repo) as project:
        r1 = write_report(repo, "a.info", {"src/app/core.py": {1: 1}})
        s1 = project.ingest(r1, suite="unit")
        first_commit = s1.commit
        write(repo, {"src/app/core.py": "a\nb\nc\nd\ne\n"})
        commit(repo, "second")
        s2 = project.ingest(r1, suite="unit")
        s3 = project.ingest(write_report(repo, "b.info", {"src/app/util.py": {1: 1}}), suite="e2e")
        assert [s.snapshot_id for s in project.snapshots()] == [
            s3.snapshot_id,
            s2.snapshot_id,
            s1.snapshot_id,
        ]
        assert [s.snapshot_id for s in project.snapshots(suite="unit")] == [s2.snapshot_id, s1.snapshot_id]
        assert [s.snapshot_id for s in project.snapshots(commit=first_commit[:10])] == [s1.snapshot_id]
        assert project.snapshots(branch="nope") == []
        assert [s.snapshot_id for s in project.snapshots(limit=1)] == [s3.snapshot_id]


def test_files_come_back_sorted_and_paged_and_detail_as_arrays(repo: Path) -> None:
    names = {f"src/m{i:03d}.c": {1: i % 2, 2: 1} for i in range(30)}
    write(repo, {p: "x\ny\n" for p in names})
    commit(repo, "many files")
    report = write_report(repo, "c.info", names, test="t")
    with open_project(repo) as project:
        snap = project.ingest(report)
        page1 = project.files(snap.snapshot_id, limit=10)
        page2 = project.files(snap.snapshot_id, offset=10, limit=10)
        assert page1.total == 30
        listed = [f.path for f in page1.files + page2.files]
        assert listed == sorted(names)[:20]
        detail = project.file_detail(snap.snapshot_id, "src/m001.c")
        assert detail.lines["line"].tolist() == [1, 2] and detail.lines["hits"].tolist() == [1, 1]
        assert detail.tests == ("t",)
        with pytest.raises(CoverageError) as err:
            project.file_detail(snap.snapshot_id, "nope.c")
        assert err.value.code is ErrorCode.NOT_FOUND
        with pytest.raises(CoverageError) as err:
            project.snapshot("snap-doesnotexist")
        assert err.value.code is ErrorCode.NOT_FOUND


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return commandline.cli(*args, cwd=cwd)  # in process: the output and the exit code are checked


def test_cli_ingest_json_prints_the_snapshot_record_and_snapshots_lists_them(repo: Path) -> None:
    report = write_report(repo, "cov.info", {"src/app/core.py": {1: 1, 2: 0}})
    out = _cli("ingest", str(report), "--suite", "unit", "--json", cwd=repo / "src")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    rec = answer["data"]["snapshot"]
    assert rec["snapshot_id"].startswith("snap-") and rec["provenance"] == "import"
    assert answer["data"]["duplicate"] is False
    assert rec["path_mapping"] == {"mapped": 1, "ambiguous": 0, "unmapped": 0}
    assert rec["totals"]["lines"] == {"found": 2, "hit": 1}
    again = json.loads(_cli("ingest", str(report), "--suite", "unit", "--json", cwd=repo).stdout)["data"]
    assert again["duplicate"] is True and again["snapshot"]["snapshot_id"] == rec["snapshot_id"]
    listed = json.loads(_cli("snapshots", "--json", "--repo", str(repo), cwd=repo.parent).stdout)
    assert [s["snapshot_id"] for s in listed["data"]["snapshots"]] == [rec["snapshot_id"]]
    shown = _cli("show", rec["snapshot_id"], "--file", "src/app/core.py", cwd=repo)
    assert shown.returncode == 0 and "uncovered lines: 2" in shown.stdout


def test_cli_store_errors_use_the_exit_code_table(repo: Path, tmp_path: Path) -> None:
    assert _cli("snapshots", "--repo", str(tmp_path), cwd=tmp_path).returncode == 1  # not a repository
    bad = repo / "bad.info"
    bad.write_text("SF:a\nDA:x,1\nend_of_record\n")
    out = _cli("ingest", str(bad), "--json", cwd=repo)
    assert out.returncode == 2 and json.loads(out.stderr)["error"]["code"] == "malformed_report"
    assert _cli("show", "snap-nope", cwd=repo).returncode == 2


def test_an_exact_path_wins_over_a_suffix_match_and_every_stored_path_is_unique() -> None:
    result = map_paths(
        ["/ci/x/src/a.py", "src/a.py", "/ci/y/src/a.py"],
        checkout_root="/home/me/repo",
        tracked=["src/a.py"],
    )
    assert result.status == (AMBIGUOUS, MAPPED, AMBIGUOUS)
    assert result.paths[1] == "src/a.py"
    assert len(set(result.paths)) == 3


def test_a_report_path_equal_to_a_mapped_path_is_stored_under_a_distinct_name() -> None:
    result = map_paths(["/build/lib/x.c", "lib/x.c"], checkout_root="/r", tracked=["src/lib/x.c"])
    assert result.paths[0] == "src/lib/x.c" and result.status[0] == MAPPED
    assert len(set(result.paths)) == 2
