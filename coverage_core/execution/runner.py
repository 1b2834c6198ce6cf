"""One managed process: its own session and process group, bounded capture, a kill that reaches every descendant.

The command starts in a new session (so its process group id is its pid) with
standard input closed, and on Linux with ``PR_SET_PDEATHSIG`` = SIGKILL, so it
dies with the thread that started it if the daemon is killed. Its standard
output and error are drained by two threads into files, each kept up to a
byte cap (``truncated`` past it; the rest is read and counted, never
buffered), so a chatty command never blocks on a full pipe.

Stopping (timeout, cancel, shutdown, or the leader's own exit) is SIGTERM to
the group, a grace period, then SIGKILL to the group and to any process that
carries the run's marker in its environment (a descendant that left the group
or ignored TERM), until none is left (``watchdog.kill_group``: the same kill the watchdog process
makes when the owner dies).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from .. import safefs
from .watchdog import KILL_GRACE_S, MARKER_ENV, kill_group, members

__all__ = ["KILL_GRACE_S", "MARKER_ENV", "Process", "Stream", "kill_group", "members", "setpriv"]

_PR_SET_PDEATHSIG = 1
_CHUNK = 64 * 1024

try:
    _LIBC = ctypes.CDLL(None, use_errno=True)
    _PRCTL = _LIBC.prctl
except (OSError, AttributeError):  # not Linux: no parent-death signal; recovery kills the recorded group
    _PRCTL = None


def _find_setpriv() -> str | None:
    """setpriv, if it is util-linux's and knows --pdeathsig."""
    found = shutil.which("setpriv")
    if found is None or not sys.platform.startswith("linux"):
        return None
    try:
        probe = subprocess.run([found, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=10,
                               check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return found if probe.returncode == 0 else None


_SETPRIV: list[str | None] = []  # found on first use, not at import (the CLI imports this module)


def setpriv() -> str | None:
    if not _SETPRIV:
        _SETPRIV.append(_find_setpriv())
    return _SETPRIV[0]


def _child_setup() -> None:  # runs in the child between fork and exec: async-signal-safe calls only
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@attrs.define
class Stream:
    """One drained output stream: the bytes kept in ``path``, all bytes seen, and whether some were dropped."""

    path: Path
    cap: int
    total: int = 0
    truncated: bool = False
    error: str | None = None  # a write to the log failed: the rest is still read (and counted), not kept
    fd: int = -1


def _drain(pipe, stream: Stream) -> None:
    try:
        while True:
            chunk = pipe.read1(_CHUNK) if hasattr(pipe, "read1") else pipe.read(_CHUNK)
            if not chunk:
                break
            room = stream.cap - stream.total
            if room > 0 and stream.error is None:
                try:
                    os.write(stream.fd, chunk[:room])
                except OSError as exc:  # never stop reading: a full pipe would block the command
                    stream.error = f"writing {stream.path.name} failed: {exc.strerror}"
            if len(chunk) > room:
                stream.truncated = True
            stream.total += len(chunk)
    finally:
        os.close(stream.fd)
        pipe.close()


class Process:
    """A started command; ``wait`` it, ``stop`` it."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], marker: str, log_dir: Path,
                 cap_bytes: int) -> None:
        self.marker = marker
        self.stdout = Stream(log_dir / "stdout", cap_bytes)
        self.stderr = Stream(log_dir / "stderr", cap_bytes)
        program = argv[0]
        found = (str(cwd / program) if "/" in program else shutil.which(program, path=env.get("PATH", os.defpath)))
        if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
            raise FileNotFoundError(f"{program}: no such executable (looked in "
                                    f"{'the cwd' if '/' in program else 'PATH'})")
        # The logs are opened before the command starts: a log that cannot be made means no run.
        self.stdout.fd = safefs.open_file(self.stdout.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            self.stderr.fd = safefs.open_file(self.stderr.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        except BaseException:
            os.close(self.stdout.fd)
            raise
        # setpriv (util-linux) sets the parent-death signal and execs the command: the same process,
        # started without the slow fork a preexec_fn forces; without it, prctl in the child.
        wrapper = setpriv()
        words = [wrapper, "--pdeathsig", "KILL", "--", *argv] if wrapper else list(argv)
        try:
            self.popen = subprocess.Popen(  # argv words, never a shell
                words, cwd=cwd, env={**env, MARKER_ENV: marker}, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, close_fds=True,
                preexec_fn=None if wrapper else _child_setup,  # noqa: PLW1509 - prctl only, no locks taken
            )
        except BaseException:
            os.close(self.stdout.fd)
            os.close(self.stderr.fd)
            raise
        self.pgid = self.popen.pid
        self._drains = [threading.Thread(target=_drain, args=(pipe, stream), daemon=True,
                                         name=f"drain-{marker}")
                        for pipe, stream in ((self.popen.stdout, self.stdout), (self.popen.stderr, self.stderr))]
        for thread in self._drains:
            thread.start()

    def wait(self, timeout: float) -> int | None:
        """The leader's exit status once it exits within ``timeout`` seconds, else None."""
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace: float = KILL_GRACE_S) -> None:
        """TERM the group, wait up to ``grace``, then KILL whatever is left (group and marked processes)."""
        kill_group(self.pgid, self.marker, grace, leader=self.popen)

    def finish(self, timeout: float = 10.0) -> None:
        """Reap the leader and end the drains (every writer of the pipes is gone after ``stop``)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)
        for thread in self._drains:
            thread.join(timeout)
