"""The owner's import reports each ingest stage to whoever watches (the CLI at a terminal)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from coverage_core import open_project
from coverage_daemon.client import call


def test_the_owners_import_names_each_stage_as_it_starts(sample_repo: Path) -> None:
    seen: list[str] = []
    with open_project(sample_repo) as project:
        answer = call(
            project,
            "owner_import",
            {"report_path": str(sample_repo / "step3.coverage.json")},
            progress=seen.append,
        )
    assert answer["data"]["duplicate"] is False
    assert len(seen) >= 3 and any("pars" in stage for stage in seen), seen


def test_ingest_at_a_terminal_shows_progress_on_stderr_and_json_output_stays_clean(sample_repo: Path) -> None:
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "coverage_cli", "ingest", "step3.coverage.json"],
            cwd=sample_repo,
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            timeout=60,
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert proc.returncode == 0 and "stored" in proc.stdout
    assert b"s] " in shown  # "[  0.01s] parsing..."-style stage lines went to the terminal
    plain = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "ingest", "step1.coverage.json", "--json"],
        cwd=sample_repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.returncode == 0 and plain.stderr == ""
