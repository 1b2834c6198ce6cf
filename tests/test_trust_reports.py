"""Report reads that cannot be raced, hung or pointed outside the checkout (issue 9).

Every attack runs for real: FIFOs from os.mkfifo, Unix sockets, symlinks, and
a path swapped between the check and the open through the opening module's
test hook. Waits are bounded (10 s) so a regression shows as a failure, not a hang.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coverage_core import open_project
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.parsers import opening
from coverage_core.service import Service, owner_import

from . import commandline
from .daemons import in_process

WAIT_S = 10.0
SECRET_LCOV = "TN:\nSF:/outside/secret.c\nDA:1,1\nend_of_record\n"


def bounded(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a thread and wait at most WAIT_S: a hang fails the test instead of blocking it."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = fn()
        except BaseException as exc:  # handed back to the test thread
            result["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(WAIT_S)
    assert not worker.is_alive(), f"still running after {WAIT_S} s"
    if "error" in result:
        raise result["error"]
    return result["value"]


def refused(fn: Callable[[], Any]) -> CoverageError:
    with pytest.raises(CoverageError) as info:
        bounded(fn)
    return info.value


@pytest.fixture
def hook() -> Iterator[Callable[[Callable[[Path], None]], None]]:
    def install(fn: Callable[[Path], None]) -> None:
        opening.BEFORE_OPEN = fn

    yield install
    opening.BEFORE_OPEN = None


def import_report(repo: Path, report_path: str) -> dict[str, Any]:
    with open_project(repo) as project:
        return Service(project).call("coverage_import", {"report_path": report_path})


def stored_paths(repo: Path) -> list[str]:
    with open_project(repo) as project:
        return [f.path for s in project.snapshots() for f in project.files(s.snapshot_id).files]


def test_a_fifo_import_is_refused_at_once_and_the_repository_stays_usable(sample_repo: Path) -> None:
    os.mkfifo(sample_repo / "coverage.pipe")
    error = refused(lambda: import_report(sample_repo, "coverage.pipe"))
    assert error.code is ErrorCode.INVALID_ARGUMENT
    assert "FIFO" in error.message and "ingest -" in error.suggestion
    answer = bounded(lambda: import_report(sample_repo, "step3.coverage.json"))
    assert answer["data"]["snapshot"]["files"] > 0


def test_a_unix_socket_and_a_directory_are_refused_as_not_regular_files(sample_repo: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(sample_repo / "cov.sock"))
        server.listen(1)
        error = refused(lambda: import_report(sample_repo, "cov.sock"))
    finally:
        server.close()
    assert error.code is ErrorCode.INVALID_ARGUMENT and "regular" in error.message
    (sample_repo / "reports").mkdir()
    assert refused(lambda: import_report(sample_repo, "reports")).code is ErrorCode.INVALID_ARGUMENT


def test_a_link_to_a_report_outside_the_checkout_is_refused(sample_repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.info"
    outside.write_text(SECRET_LCOV)
    (sample_repo / "cov.info").symlink_to(outside)
    assert refused(lambda: import_report(sample_repo, "cov.info")).code is ErrorCode.PATH_OUTSIDE_CHECKOUT
    assert stored_paths(sample_repo) == []


def test_a_directory_swapped_for_a_link_between_check_and_open_never_stores_the_outside_file(
    sample_repo: Path, tmp_path: Path, hook
) -> None:
    reports = sample_repo / "reports"
    reports.mkdir()
    shutil.copy(sample_repo / "step3.coverage.lcov", reports / "cov.info")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "cov.info").write_text(SECRET_LCOV)

    def swap(_: Path) -> None:
        reports.rename(sample_repo / "reports.moved")
        reports.symlink_to(outside, target_is_directory=True)

    hook(swap)
    error = refused(lambda: import_report(sample_repo, "reports/cov.info"))
    assert error.code is ErrorCode.PATH_OUTSIDE_CHECKOUT
    assert "/outside/secret.c" not in stored_paths(sample_repo)
    assert stored_paths(sample_repo) == []


def test_a_report_swapped_for_a_link_between_check_and_open_is_not_followed(
    sample_repo: Path, tmp_path: Path, hook
) -> None:
    report = sample_repo / "cov.info"
    shutil.copy(sample_repo / "step3.coverage.lcov", report)
    outside = tmp_path / "outside.info"
    outside.write_text(SECRET_LCOV)

    def swap(_: Path) -> None:
        report.unlink()
        report.symlink_to(outside)

    hook(swap)
    error = refused(lambda: import_report(sample_repo, "cov.info"))
    # Resolved as a regular file, a link when opened: it changed under us, and is not followed.
    assert error.code is ErrorCode.REPORT_CHANGED and "symbolic link" in error.message
    assert stored_paths(sample_repo) == []


def test_a_link_to_a_report_inside_the_checkout_is_imported_from_its_target(sample_repo: Path) -> None:
    (sample_repo / "build").mkdir()
    shutil.copy(sample_repo / "step3.coverage.json", sample_repo / "build" / "coverage.json")
    (sample_repo / "latest.json").symlink_to(sample_repo / "build" / "coverage.json")
    answer = bounded(lambda: import_report(sample_repo, "latest.json"))
    assert answer["data"]["snapshot"]["artifact_path"] == "build/coverage.json"


@pytest.mark.parametrize("report_path", ["cov\0.json", "step3.coverage.json\0/../x", "\udc80\ud800.json"])
def test_a_nul_or_unencodable_character_in_report_path_is_an_invalid_argument(
    sample_repo: Path, report_path: str
) -> None:
    error = refused(lambda: import_report(sample_repo, report_path))
    assert error.code is ErrorCode.INVALID_ARGUMENT
    with open_project(sample_repo) as project:
        owner = refused(lambda: owner_import(project, {"report_path": report_path}))
    assert owner.code is ErrorCode.INVALID_ARGUMENT


def test_the_owner_import_reads_outside_the_checkout_but_refuses_fifos_and_final_links(
    sample_repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "ci"
    outside.mkdir()
    shutil.copy(sample_repo / "step3.coverage.json", outside / "coverage.json")
    os.mkfifo(outside / "pipe")
    (outside / "link.json").symlink_to(outside / "coverage.json")
    with open_project(sample_repo) as project:
        fifo = refused(lambda: owner_import(project, {"report_path": str(outside / "pipe")}))
        link = refused(lambda: owner_import(project, {"report_path": str(outside / "link.json")}))
        stored = bounded(lambda: owner_import(project, {"report_path": str(outside / "coverage.json")}))
    assert fifo.code is ErrorCode.INVALID_ARGUMENT and "FIFO" in fifo.message
    assert link.code is ErrorCode.INVALID_ARGUMENT and "symbolic link" in link.message
    assert stored["data"]["snapshot"]["files"] > 0


def cli(repo: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """A child process reading ``stdin`` as bytes: standard input is what these tests are about."""
    return commandline.cli(*args, repo=repo, cwd=Path.cwd(), stdin=stdin or b"", process=True)


def test_ingest_dash_reads_standard_input_without_a_daemon(sample_repo: Path) -> None:
    report = (sample_repo / "step3.coverage.json").read_bytes()
    out = cli(sample_repo, "ingest", "-", "--json", stdin=report)
    assert out.returncode == 0, out.stderr
    again = cli(sample_repo, "ingest", str(sample_repo / "step3.coverage.json"), "--json")
    assert b'"duplicate": true' in again.stdout, again.stderr


def test_the_cli_reads_a_pipe_it_was_given_and_leaves_no_spool_file_behind(
    sample_repo: Path, isolated_home: Path
) -> None:
    report = (sample_repo / "step3.coverage.lcov").read_bytes()
    # /dev/fd/N of this process: what the shell's <(...) passes.
    script = (
        "import os, subprocess, sys\n"
        "r, w = os.pipe()\n"
        f"os.write(w, {report!r}); os.close(w)\n"
        "sys.exit(subprocess.run([sys.executable, '-m', 'coverage_cli', 'ingest', f'/dev/fd/{r}', '--json',"
        f" '--repo', {str(sample_repo)!r}], pass_fds=(r,)).returncode)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert b'"files": ' in out.stdout
    assert not list(isolated_home.glob("ingest-*"))


async def test_ingest_dash_through_the_daemon_reads_standard_input_in_the_cli(sample_repo: Path) -> None:
    report = (sample_repo / "step3.coverage.json").read_bytes()
    async with in_process(Settings.from_env(port=0)) as d:
        await asyncio.to_thread(d.client().register, sample_repo)  # the daemon now holds the store
        out = await asyncio.to_thread(cli, sample_repo, "ingest", "-", "--json", stdin=report)
        listed = await asyncio.to_thread(cli, sample_repo, "snapshots", "--json")
    assert out.returncode == 0, out.stderr
    assert len(json.loads(listed.stdout)["data"]["snapshots"]) == 1, listed.stderr


async def test_a_fifo_import_over_the_daemon_answers_at_once_and_a_normal_import_follows(
    sample_repo: Path,
) -> None:
    os.mkfifo(sample_repo / "coverage.pipe")
    async with in_process(Settings.from_env(port=0)) as d:
        client = d.client()
        project_id = (await asyncio.to_thread(client.register, sample_repo))["project_id"]
        with pytest.raises(CoverageError) as info:
            await asyncio.wait_for(
                asyncio.to_thread(
                    client.call, project_id, "coverage_import", {"report_path": "coverage.pipe"}
                ),
                WAIT_S,
            )
        stored = await asyncio.wait_for(
            asyncio.to_thread(
                client.call, project_id, "coverage_import", {"report_path": "step3.coverage.json"}
            ),
            WAIT_S,
        )
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "FIFO" in info.value.message
    assert stored["data"]["snapshot"]["files"] > 0
