"""Compactions killed mid-pass: each one a process of its own, forked from a server that imported the product once.

``python -m tests.compaction_child`` reads one job a line (JSON: the repository, the stage to pause at and at
which of its occurrences) and forks for each: the fork opens the store (after the fork: nothing of DuckDB is
shared), compacts everything, and at that stage says ``paused`` and sleeps until it is killed; it says
``finished`` if it never got there. Every line a fork and the server write goes to the server's standard
output: the stages as the fork reaches them, ``pid N`` (the fork's) and, once the fork is gone, ``exit N``
(its exit code, -9 for a SIGKILL, as ``subprocess`` reports it). The test kills the fork, as it killed a child
it started itself: the kill hits a real separate process in the middle of its compaction; only the
interpreter start and the imports, which are not what a kill tests, are paid once instead of per case.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from .lineserver import LineServer

# The imports every fork shares: what opening a project and compacting it import.
PRELOADED = ("coverage_core", "coverage_core.project", "coverage_core.storage.compaction")
PAUSE_S = 600  # a paused fork sleeps until it is killed: far longer than any test waits


def compact_until(repo: str, stop_at: str, nth: int) -> None:
    """Compact ``repo``, pausing for good at the ``nth`` occurrence of stage ``stop_at``."""
    from coverage_core import open_project

    seen: list[str] = []

    def stage(name: str) -> None:
        seen.append(name)
        print(name, flush=True)
        if name == stop_at and seen.count(name) == nth:
            print("paused", flush=True)
            time.sleep(PAUSE_S)

    with open_project(repo) as project:
        project.compact(older_than="0", on_stage=stage)
    print("finished", flush=True)


def serve() -> None:
    """The server: one fork per job line, answered with ``pid N`` and then ``exit N``."""
    for name in PRELOADED:
        importlib.import_module(name)

    for line in sys.stdin:
        repo, stop_at, nth = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the compaction
            code = 1
            try:
                with open(os.devnull) as nothing:
                    os.dup2(nothing.fileno(), 0)
                compact_until(repo, stop_at, nth)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {os.waitstatus_to_exitcode(status)}", flush=True)


class Compactions(LineServer):
    """The test's side: ``with Compactions(stderr) as c``; ``c.until_paused(...)``, then ``c.kill(pid)``."""

    def __init__(self, stderr: Path, env: Mapping[str, str] | None = None) -> None:
        self.stderr = stderr
        with stderr.open("wb") as errors:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.compaction_child"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
                env=dict(os.environ if env is None else env),
                cwd=Path(__file__).resolve().parents[1],
            )
        self._pid: int | None = None

    def _lines(self) -> IO[str]:
        assert self.process.stdout is not None
        return self.process.stdout

    def until_paused(self, repo: Path, stage: str, nth: int) -> tuple[list[str], int]:
        """Start a compaction of ``repo`` that pauses at ``stage``'s ``nth`` occurrence: what it said up to
        ``paused`` or ``finished`` (bounded: it does one or the other), and its pid."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps([str(repo), stage, nth]) + "\n")
        self.process.stdin.flush()
        heard: list[str] = []
        pid: int | None = None
        for line in self._lines():
            said = line.strip()
            if said.startswith("pid "):
                pid = int(said.split()[1])
            elif said.startswith("exit "):  # gone before it paused: its stages and how it ended
                heard.append(said)
                assert pid is not None, (heard, self.stderr.read_text(errors="replace"))
                return heard, pid
            else:
                heard.append(said)
            if pid is not None and heard and heard[-1] in ("paused", "finished"):
                break
        assert pid is not None, (heard, self.stderr.read_text(errors="replace"))
        self._pid = pid
        return heard, pid

    def errors(self) -> str:
        """What the forks and the server wrote on standard error so far."""
        return self.stderr.read_text(errors="replace")

    def wait(self) -> int:
        """The exit code of the last fork, once it is gone (what its server saw)."""
        for line in self._lines():
            said = line.strip()
            if said.startswith("exit "):
                self._pid = None
                return int(said.split()[1])
        raise AssertionError(f"the server ended: {self.stderr.read_text(errors='replace')}")

    def kill(self, pid: int) -> int:
        """SIGKILL the fork ``pid`` (no handler, no cleanup, no rollback in it); its exit code."""
        os.kill(pid, signal.SIGKILL)
        return self.wait()

    def gone(self) -> None:
        """The last fork killed and waited for if it is still there (a case that failed before its kill), so
        the server takes the next job."""
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.wait()

    def close(self) -> None:
        self.gone()
        super().close()


if __name__ == "__main__":
    serve()
