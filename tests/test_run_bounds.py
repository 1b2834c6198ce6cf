"""Bounds on what runs leave behind (issue 23): a per-project queue limit, run logs kept for the newest runs only
(pruned by the maintenance worker's pass), every queued run of a command cancelled in one CLI call, an ingest of
a FIFO that says it waits for a writer and gives up after a timeout, and published reports without run output."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from coverage_cli.main import cli
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.execution import logs, runs
from coverage_core.project import Project, open_project
from coverage_core.service import Service

from .daemons import in_process
from .gitrepo import make_repo
from .test_runs import FILES, PY, approved, run, wait_for

CLI = str(Path(sys.executable).parent / "coverage-mcp")
LCOV = "SF:app.py\nDA:1,1\nDA:2,0\nend_of_record\n"
SECRETIVE = "print('AWS_SECRET_ACCESS_KEY=do-not-publish-me')\n" + FILES["gen.py"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {**FILES, "secretive.py": SECRETIVE})


@pytest.fixture
def limited(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Project]:
    monkeypatch.setenv("COVERAGE_MCP_RUN_QUEUE_LIMIT", "2")
    with open_project(repo) as project:
        yield project


def _queue_sleepers(project: Project, count: int) -> tuple[str, list[str]]:
    command_id = approved(project, [PY, "sleepy.py"], name="sleepy")
    ids = [run(project, command_id=command_id, reuse_if_unchanged=False)["id"] for _ in range(count)]
    return command_id, ids


def _queued(project: Project, command_id: str) -> str:
    """A run of ``command_id`` put in the queue directly (no runtime starts it in this process)."""
    return runs.enqueue(
        project.store,
        command_id=command_id,
        command_hash="x",
        args=[],
        baseline=None,
        idempotency_key=None,
        fingerprint="f",
        worktree_path=str(project.checkout.worktree_path),
    )[0]


def test_runs_past_the_projects_queue_limit_are_refused_with_the_setting_named(limited: Project) -> None:
    command_id, ids = _queue_sleepers(limited, 1)
    wait_for(lambda: runs.get(limited.store, ids[0]).state == "running", "the first run's start")
    ids += [run(limited, command_id=command_id, reuse_if_unchanged=False)["id"] for _ in range(2)]
    with pytest.raises(CoverageError) as refused:
        run(limited, command_id=command_id, reuse_if_unchanged=False)
    assert refused.value.code == ErrorCode.TOO_MANY_REQUESTS
    assert "COVERAGE_MCP_RUN_QUEUE_LIMIT" in refused.value.message + refused.value.suggestion
    assert "runs cancel --command" in refused.value.suggestion
    for run_id in ids:
        runs.request_cancel(limited.store, run_id)


def test_one_cli_call_cancels_every_queued_run_of_a_command(repo: Path) -> None:
    with open_project(repo) as project:
        command_id, ids = _queue_sleepers(project, 4)
        wait_for(lambda: runs.get(project.store, ids[0]).state == "running", "the first run's start")
        other = approved(project, [PY, "gen.py"], name="gen")
        kept = _queued(project, other)
    # The project closed: the running run was cancelled (shutdown), the queued ones stayed queued.
    done = CliRunner().invoke(cli, ["runs", "cancel", "--command", command_id, "--repo", str(repo)])
    assert done.exit_code == 0, done.output
    assert "cancelled 3 queued runs" in done.output
    with open_project(repo) as project:
        assert [runs.get(project.store, i).state for i in ids[1:]] == ["cancelled"] * 3
        runs.request_cancel(project.store, kept)


def test_run_logs_are_kept_for_the_newest_runs_only(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COVERAGE_MCP_RUN_LOGS_KEEP_RUNS", "2")
    with open_project(repo) as project:
        command_id = approved(
            project, [PY, "chatty.py"], name="chatty", artifacts=[{"path": "x.info", "suite": "u"}]
        )
        ids = [
            run(project, command_id=command_id, wait=True, reuse_if_unchanged=False)["id"] for _ in range(4)
        ]
        folder = project.store.path.parent / "runs"
        assert all((folder / i / "stdout").exists() for i in ids)
        pruned = logs.prune(project)
        assert sorted(pruned) == sorted(ids[:2])
        assert [(folder / i).exists() for i in ids] == [False, False, True, True]
        assert logs.prune(project) == []


async def test_the_daemons_maintenance_worker_prunes_run_logs_past_the_projects_bounds(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COVERAGE_MCP_RUN_LOGS_KEEP_RUNS", "2")
    with open_project(repo) as project:
        command_id = approved(
            project, [PY, "chatty.py"], name="chatty", artifacts=[{"path": "x.info", "suite": "u"}]
        )
        ids = [
            run(project, command_id=command_id, wait=True, reuse_if_unchanged=False)["id"] for _ in range(4)
        ]
        folder = project.store.path.parent / "runs"
    assert all((folder / i / "stdout").exists() for i in ids)  # nothing pruned them yet
    async with in_process(Settings.from_env(port=0)) as d:
        await asyncio.to_thread(d.client().register, repo)  # the daemon opens the store: its worker starts

        def kept() -> bool:
            return [(folder / i).exists() for i in ids] == [False, False, True, True]

        await asyncio.to_thread(wait_for, kept, "the maintenance worker's pruning of the oldest run logs")


def test_run_logs_past_the_byte_budget_are_pruned_oldest_first(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COVERAGE_MCP_RUN_LOGS_KEEP_MIB", "1")
    big = "import sys\nsys.stdout.write('y' * 700000)\n"
    (repo / "big.py").write_text(big)
    with open_project(repo) as project:
        command_id = approved(
            project, [PY, "big.py"], name="big", artifacts=[{"path": "x.info", "suite": "u"}]
        )
        ids = [
            run(project, command_id=command_id, wait=True, reuse_if_unchanged=False)["id"] for _ in range(3)
        ]
        folder = project.store.path.parent / "runs"
        assert sorted(logs.prune(project)) == sorted(ids[:2])
        assert (folder / ids[2]).exists()


def _cli(repo: Path, *args: str, wait_s: int = 3) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [CLI, *args, "--repo", str(repo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COVERAGE_MCP_INGEST_WAIT_S": str(wait_s)},
    )


def test_an_ingest_of_a_fifo_says_it_waits_for_a_writer_then_reads_what_the_writer_sends(
    repo: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    proc = _cli(repo, "ingest", str(fifo), "--suite", "unit", "--format", "lcov")
    assert proc.stderr is not None
    line = proc.stderr.readline()  # the event: the CLI says it waits
    assert "waiting for a writer" in line and str(fifo) in line, line
    with open(fifo, "w") as writer:
        writer.write(LCOV)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "stored" in out


def test_an_ingest_of_a_fifo_without_a_writer_gives_up_after_its_timeout(repo: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    # The setting's least value: no writer ever comes, so the wait is all this test spends.
    proc = _cli(repo, "ingest", str(fifo), "--suite", "unit", wait_s=1)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert "no writer" in err and "COVERAGE_MCP_INGEST_WAIT_S" in err, err


def test_an_ingest_of_a_process_substitution_still_works(repo: Path) -> None:
    (repo / "cov.info").write_text(LCOV)
    done = subprocess.run(
        [
            "bash",
            "-c",
            f'"{CLI}" ingest <(cat cov.info) --suite unit --format lcov',
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "waiting for a writer" not in done.stderr


def test_a_published_html_report_leaves_run_output_out_unless_asked(repo: Path, tmp_path: Path) -> None:
    with open_project(repo) as project:
        command_id = approved(project, [PY, "secretive.py"], name="secretive")
        assert run(project, command_id=command_id, wait=True)["state"] == "succeeded"
    plain = CliRunner().invoke(cli, ["report", "--html", str(tmp_path / "plain"), "--repo", str(repo)])
    assert plain.exit_code == 0, plain.output
    assert "do-not-publish-me" not in (tmp_path / "plain" / "index.html").read_text()
    with_logs = CliRunner().invoke(
        cli, ["report", "--html", str(tmp_path / "logs"), "--include-logs", "--repo", str(repo)]
    )
    assert with_logs.exit_code == 0, with_logs.output
    assert "do-not-publish-me" in (tmp_path / "logs" / "index.html").read_text()
    assert "warning" in with_logs.output and "run output" in with_logs.output


def test_the_run_list_row_filters_by_command_in_the_store_so_no_page_of_other_commands_hides_one(
    repo: Path,
) -> None:
    with open_project(repo) as project:
        mine = approved(project, [PY, "gen.py"], name="gen")
        other = approved(project, [PY, "sleepy.py"], name="sleepy")
        queued_mine = [_queued(project, mine) for _ in range(2)]
        newer_others = [
            _queued(project, other) for _ in range(3)
        ]  # newer: a page of 1 by queue time holds none of mine
        service = Service(project)
        page = {"status": "queued", "command_id": mine, "limit": 1}
        first = service.call("run_list", page)["data"]["runs"]
        assert len(first) == 1 and first[0]["id"] in queued_mine  # one of mine, none of the other's
        listed = service.call("run_list", {**page, "limit": 10})["data"]["runs"]
        assert sorted(r["id"] for r in listed) == sorted(queued_mine)
        assert {r["command_id"] for r in listed} == {mine}
        with pytest.raises(CoverageError) as refused:
            service.call("run_list", {"command_id": "gen"})
        assert refused.value.code == ErrorCode.INVALID_ARGUMENT
        for run_id in queued_mine + newer_others:
            runs.request_cancel(project.store, run_id)
