"""Every run reaches one terminal state by one precedence rule (issue 23): ``cancelled`` and ``timed_out`` keep
their state with a later failure in their detail; any other setup, capture, drain or persistence failure makes the
run ``failed`` with the reason; the state is written as soon as a write can succeed, and a read of a run whose
process is gone never says ``running``. The full-disk cases run on a real small tmpfs (``tests/diskfull.py``)."""

from __future__ import annotations

import json
import os
import sys
import threading
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from coverage_core.execution import runner

from . import diskfull

ROOT = Path(__file__).resolve().parents[1]


@cache
def _played(folder: str) -> dict[str, Any]:
    done = diskfull.run_on_small_tmpfs(
        Path(folder),
        [sys.executable, "-m", "tests.fulldisk_scenario", folder],
        env={
            **os.environ,
            "COVERAGE_MCP_HTTP_TIMEOUT_S": "30",
            "COVERAGE_MCP_DB_QUERY_TIMEOUT_MS": "20000",
            "PYTHONPATH": str(ROOT),
        },
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def full_disk(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    diskfull.require()
    return _played(str(tmp_path_factory.mktemp("fulldisk") / "mnt"))


def _details(case: dict[str, Any]) -> str:
    return " ".join(e["detail"] or "" for e in case["events"])


def test_a_run_that_ends_on_a_full_disk_reads_failed_at_once_and_is_stored_failed_with_the_reason(
    full_disk: dict[str, Any],
) -> None:
    """Seed: "Any setup, polling, capture, or persistence failure terminalizes the durable job as
    `failed`." """
    case = full_disk["exit"]
    assert case["while_full"]["state"] == "failed", case  # its process is gone: never `running`
    assert "No space left on device" in case["while_full"]["reason"], case
    assert case["run_id"] not in case["active_while_full"]
    assert case["stored"]["state"] == "failed" and "No space left on device" in case["stored"]["reason"], case


def test_a_timed_out_run_that_met_a_full_disk_stays_timed_out_with_the_failure_in_its_detail(
    full_disk: dict[str, Any],
) -> None:
    case = full_disk["sleep"]
    assert case["while_full"]["state"] == "timed_out" and case["stored"]["state"] == "timed_out", case
    assert "No space left on device" in _details(case), case


def test_a_cancelled_run_that_met_a_full_disk_stays_cancelled_with_the_failure_in_its_detail(
    full_disk: dict[str, Any],
) -> None:
    case = full_disk["cancel"]
    assert case["while_full"]["state"] == "cancelled" and case["stored"]["state"] == "cancelled", case
    assert "No space left on device" in _details(case), case


class _Unreadable:
    """A pipe end whose reads fail: a real descriptor of a directory (``read`` gives EISDIR)."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY)

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        os.close(self.fd)


def test_a_read_error_in_a_drain_is_recorded_as_the_streams_error(tmp_path: Path) -> None:
    stream = runner.Stream(tmp_path / "stdout", 1024)
    stream.fd = os.open(stream.path, os.O_WRONLY | os.O_CREAT, 0o600)
    runner._drain(_Unreadable(tmp_path), stream, threading.Event())
    assert stream.error is not None and "reading stdout failed" in stream.error


@pytest.mark.parametrize(
    ("state", "failure", "expected"),
    [
        ("succeeded", "capturing its output failed: x", "failed"),
        ("failed", "persisting its results failed: x", "failed"),
        ("timed_out", "capturing its output failed: x", "timed_out"),
        ("cancelled", "persisting its results failed: x", "cancelled"),
    ],
)
def test_the_precedence_rule_keeps_a_stop_and_makes_any_other_failure_failed(
    state: str, failure: str, expected: str
) -> None:
    """Seed: "Any setup, polling, capture, or persistence failure terminalizes the durable job as
    `failed`." """
    from coverage_core.execution.terminal import settle

    ended = settle(state, "why it ended", [failure])
    assert ended.state == expected
    if expected == state and state in ("timed_out", "cancelled"):
        assert ended.reason == "why it ended" and failure in ended.detail
    else:
        assert failure in ended.reason
