"""One managed process: its own session and process group, bounded capture, a kill that reaches every descendant.

The run's direct child is its supervisor (``supervisor.py``, run with
``python -I -S``): it starts in a new session (so the run's process group id
is its pid) with standard input closed, makes itself a child subreaper on
Linux and starts the command (through util-linux ``setpriv --pdeathsig KILL``
when present), so every process the command starts stays its descendant even
after ``setsid``, a double fork or a cleared environment; it asks for SIGTERM
when the thread that started it dies. When the command exits, or the
supervisor is stopped, it kills its whole descendant tree and exits with the
command's status. The command's standard output and error are drained by two
threads into files, each kept up to a byte cap (``truncated`` past it; the
rest is read and counted, never buffered), so a chatty command never blocks
on a full pipe; once the supervisor is gone the drains stop at end of file,
or after ``DRAIN_AFTER_EXIT_S`` if something still holds a pipe.

Stopping (timeout, cancel, shutdown, or the leader's own exit) is SIGTERM to
the group (the supervisor kills its tree, with half the grace), a grace
period, then SIGKILL to every other process of the group and to any process
that carries the run's marker in its environment, until none is left
(``watchdog.kill_group``: the same kill the watchdog process makes when the
owner dies): a second layer. The supervisor itself is not killed while it
still reaps (only past ``watchdog.SUPERVISOR_WAIT_S``): killing it would hand
its orphans to init, out of reach.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import attrs

from .. import safefs
from .watchdog import KILL_GRACE_S, MARKER_ENV, SUPERVISOR, kill_group, members

__all__ = ["KILL_GRACE_S", "MARKER_ENV", "Process", "Stream", "kill_group", "members", "setpriv"]

_CHUNK = 64 * 1024
DRAIN_AFTER_EXIT_S = 2.0  # once the run's processes are gone, how long a pipe held by something else is read


def _find_setpriv() -> str | None:
    """setpriv, if it is util-linux's and knows --pdeathsig."""
    found = shutil.which("setpriv")
    if found is None or not sys.platform.startswith("linux"):
        return None
    try:
        probe = subprocess.run(
            [found, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return found if probe.returncode == 0 else None


_SETPRIV: list[str | None] = []  # found on first use, not at import (the CLI imports this module)


def setpriv() -> str | None:
    if not _SETPRIV:
        _SETPRIV.append(_find_setpriv())
    return _SETPRIV[0]


@attrs.define
class Stream:
    """One drained output stream: the bytes kept in ``path``, all bytes seen, and whether some were dropped."""

    path: Path
    cap: int
    total: int = 0
    truncated: bool = False
    error: str | None = None  # a write to the log failed: the rest is still read (and counted), not kept
    fd: int = -1


def _drain(pipe: IO[bytes], stream: Stream, done: threading.Event) -> None:
    """Read ``pipe`` into ``stream`` until end of file, or until ``done`` is set and nothing is left to read."""
    fd = pipe.fileno()
    try:
        while True:
            try:
                ready, _, _ = select.select([fd], [], [], 0.1)
                if not ready:
                    if done.is_set():
                        break
                    continue
                chunk = os.read(fd, _CHUNK)
            except OSError as exc:  # recorded: the run's end says its output was not all read
                stream.error = stream.error or f"reading {stream.path.name} failed: {exc.strerror}"
                break
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

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        marker: str,
        log_dir: Path,
        cap_bytes: int,
        cgroup: Path | None = None,
    ) -> None:
        self.marker = marker
        self.cgroup = cgroup
        self.stdout = Stream(log_dir / "stdout", cap_bytes)
        self.stderr = Stream(log_dir / "stderr", cap_bytes)
        program = argv[0]
        found = (
            str(cwd / program) if "/" in program else shutil.which(program, path=env.get("PATH", os.defpath))
        )
        if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
            raise FileNotFoundError(
                f"{program}: no such executable (looked in {'the cwd' if '/' in program else 'PATH'})"
            )
        # The logs are opened before the command starts: a log that cannot be made means no run.
        self.stdout.fd = safefs.open_file(self.stdout.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            self.stderr.fd = safefs.open_file(self.stderr.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        except BaseException:
            os.close(self.stdout.fd)
            raise
        # The supervisor starts the command; setpriv (util-linux) gives the command the parent-death signal
        # (the supervisor's own it sets itself) without the slow fork a preexec_fn forces.
        wrapper = setpriv()
        program, spawned = (
            (wrapper, [wrapper, "--pdeathsig", "KILL", "--", *argv]) if wrapper else (found, list(argv))
        )
        words = [
            sys.executable,
            "-I",
            "-S",
            SUPERVISOR,
            str(KILL_GRACE_S / 2),
            str(os.getpid()),
            "-" if cgroup is None else str(cgroup),
            program,
            *spawned,
        ]
        try:
            self.popen = subprocess.Popen(  # argv words, never a shell
                words,
                cwd=cwd,
                env={**env, MARKER_ENV: marker},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                umask=safefs.user_umask(),  # the daemon's own is 077; the command's files are the person's
            )
        except BaseException:
            os.close(self.stdout.fd)
            os.close(self.stderr.fd)
            raise
        self.pgid = self.popen.pid
        self._done = threading.Event()
        self._drains = [
            threading.Thread(
                target=_drain, args=(pipe, stream, self._done), daemon=True, name=f"drain-{marker}"
            )
            for pipe, stream in ((self.popen.stdout, self.stdout), (self.popen.stderr, self.stderr))
        ]
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
        """Reap the leader and end the drains: at end of file, or ``DRAIN_AFTER_EXIT_S`` after the run's processes
        are gone if something else still holds a pipe (the read ends are closed then)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)
        give_up = time.monotonic() + DRAIN_AFTER_EXIT_S
        for thread in self._drains:
            thread.join(max(0.0, give_up - time.monotonic()))
        self._done.set()
        for thread in self._drains:
            thread.join(timeout)
