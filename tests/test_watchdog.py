"""The run watchdog on real processes: what it stops when its pipe closes, and that it never outlives that."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from coverage_core.execution.watchdog import MARKER_ENV, Watchdog

from .test_runs import alive, wait_for

PY = sys.executable
# A process that ignores TERM and starts a grandchild that leaves its group (its own session) and ignores TERM.
STUBBORN = """\
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"], start_new_session=True)
print(child.pid, flush=True)
time.sleep(600)
"""


def start_run(marker: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [PY, "-c", STUBBORN],
        env={**os.environ, MARKER_ENV: marker},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    grandchild = int(proc.stdout.readline())
    return proc, grandchild


def test_closing_the_pipe_stops_every_listed_run_even_a_grandchild_that_left_the_group(
    tmp_path: Path,
) -> None:
    guard = Watchdog()
    guard.acquire()
    listed, listed_grandchild = start_run("run-listed")
    ended, ended_grandchild = start_run("run-ended")
    try:
        guard.begin("run-listed")
        guard.group("run-listed", listed.pid)
        guard.begin("run-ended")
        guard.group("run-ended", ended.pid)
        guard.end("run-ended")  # its owner stopped it: the watchdog forgets it
        watchdog = guard.pid
        assert watchdog is not None and alive(watchdog)
        guard.release()  # the last user: the pipe closes, the watchdog stops what is listed and exits
        assert not alive(watchdog)
        listed.wait(30)
        wait_for(lambda: not alive(listed_grandchild), "the listed run's grandchild killed")
        assert alive(ended.pid) and alive(ended_grandchild)
    finally:
        for pid in (listed.pid, listed_grandchild, ended.pid, ended_grandchild):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        listed.wait(30)
        ended.wait(30)
        listed.stdout.close()
        ended.stdout.close()


def test_a_watchdog_that_died_is_replaced_at_the_next_run_and_learns_what_is_running() -> None:
    guard = Watchdog()
    guard.acquire()
    proc, grandchild = start_run("run-survivor")
    try:
        guard.begin("run-survivor")
        guard.group("run-survivor", proc.pid)
        first = guard.pid
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: not alive(first), "the first watchdog dying")
        guard.begin("run-next")  # a new watchdog, told about run-survivor as well
        second = guard.pid
        assert second is not None and second != first and alive(second)
        guard.release()
        proc.wait(30)
        wait_for(
            lambda: not alive(grandchild), "the surviving run's grandchild killed by the second watchdog"
        )
        assert not alive(second)
    finally:
        for pid in (proc.pid, grandchild):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait(30)
        proc.stdout.close()


@pytest.mark.parametrize("name", ["watchdog", "supervisor"])
def test_the_watchdog_and_supervisor_scripts_import_nothing_of_the_package(name: str) -> None:
    # Run as a script in isolated mode each must start with the standard library alone.
    module = importlib.import_module(f"coverage_core.execution.{name}")
    probe = subprocess.run(
        [
            PY,
            "-I",
            "-S",
            "-c",
            f"import runpy, sys; sys.argv = ['w']; runpy.run_path({module.__file__!r}, "
            "run_name='not_main'); print(sorted(m for m in sys.modules if 'coverage' in m))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "[]"
