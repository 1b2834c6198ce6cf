"""The run watchdog: a small process that stops a dead owner's runs at once, and the kill that reaches every process.

``PR_SET_PDEATHSIG`` kills a run's leader with the process that started it,
but only the leader: a grandchild that ignores TERM would live on until the
next owner opens the store and recovers it. So the first run of a process
(a daemon, or a library owner) starts one watchdog: this file run as a
script (``python -I -S watchdog.py``: the standard library only, nothing of
the package imported), in its own session, reading its standard input, the
read end of a pipe whose write end only the owner holds (non-inheritable, so
no command ever gets it). The owner writes one line per event:

    begin RUN_ID          before the run's command starts
    group RUN_ID PGID     once its process group exists
    end RUN_ID            once every process of the run is gone

When the pipe reaches end of file, the owner is gone (a clean stop closes it
after its runs were stopped; ``kill -9`` closes it too, the kernel does), and
the watchdog stops every run not ended: TERM to its group and to every
process whose environment carries the run's ``COVERAGE_MCP_RUN_ID`` marker,
a grace period, then KILL until none is left; then it exits. It never
outlives that: it holds nothing else, ignores the terminal's signals (its
own session) and exits on end of file whatever it found.

``members``, ``kill_group`` and ``kill_runs`` are also what the owner uses to
stop a run on cancel, timeout or recovery (``runner``), so there is one kill.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

MARKER_ENV = "COVERAGE_MCP_RUN_ID"
KILL_GRACE_S = 2.0
# How long a run's supervisor may go on reaping after its grace before it is SIGKILLed too: generous, since it
# exits by itself as soon as no child is left, and killing it earlier would hand its orphans to init.
SUPERVISOR_WAIT_S = 120.0
WAIT_ON_CLOSE_S = 30.0
Target = tuple[int | None, str | None]  # (pgid or None, marker or None)


# -- the kill ---------------------------------------------------------------------------------------


def members_of(targets: list[Target]) -> list[int]:
    """Live (not zombie) processes in one of the groups, or whose environment carries one of the markers (Linux
    /proc), this process excepted."""
    groups = {pgid for pgid, _ in targets if pgid is not None}
    needles = {f"{MARKER_ENV}={marker}".encode() for _, marker in targets if marker}
    found: list[int] = []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    me = os.getpid()
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read()
            fields = stat[stat.rindex(b")") + 2 :].split()
            state, group = fields[0], int(fields[2])
        except (OSError, ValueError, IndexError):
            continue
        if state in (b"Z", b"X"):
            continue
        if group in groups:
            found.append(pid)
            continue
        if needles:
            try:
                with open(f"/proc/{pid}/environ", "rb") as handle:
                    if needles.intersection(handle.read().split(b"\0")):
                        found.append(pid)
            except OSError:
                continue
    return found


def members(pgid: int | None, marker: str | None) -> list[int]:
    """Live processes in group ``pgid`` or whose environment carries ``marker``."""
    return members_of([(pgid, marker)])


def _signal_all(targets: list[Target], sig: int) -> None:
    for pgid, _ in targets:
        if pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
    for pid in members_of([(None, marker) for _, marker in targets if marker]):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "supervisor.py")


def _is_supervisor(pid: int) -> bool:
    """Whether ``pid`` runs a run's supervisor (a group's leader is one, unless the group is not a run's)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return SUPERVISOR.encode() in handle.read().split(b"\0")
    except OSError:
        return False


def kill_runs(
    targets: list[Target], grace: float = KILL_GRACE_S, leader: subprocess.Popen[bytes] | None = None
) -> None:
    """SIGTERM, ``grace`` seconds for everyone to go, then SIGKILL until nobody of the runs is left.

    A group's leader is its run's supervisor: it gets the TERM (and so kills its own tree) but no SIGKILL while
    it lives, up to ``SUPERVISOR_WAIT_S``: killed, it would hand what it still reaps to init."""
    if not targets or not members_of(targets):
        return
    _signal_all(targets, signal.SIGTERM)
    give_up = time.monotonic() + grace
    while time.monotonic() < give_up:
        if leader is not None:
            leader.poll()  # reap it, so a zombie leader does not count
        if not members_of(targets):
            return
        time.sleep(0.02)
    supervisors = {pgid for pgid, _ in targets if pgid is not None and _is_supervisor(pgid)}
    spare_until = time.monotonic() + SUPERVISOR_WAIT_S
    while True:
        if leader is not None:
            leader.poll()
        left = members_of(targets)
        if not left:
            return
        spared = supervisors if time.monotonic() < spare_until else set()
        for pid in left:
            if pid not in spared:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        if not spared:
            _signal_all(targets, signal.SIGKILL)
            if time.monotonic() > spare_until + 10:  # nothing left to try: a process this user cannot kill
                return
        time.sleep(0.01)


def kill_group(
    pgid: int | None,
    marker: str | None,
    grace: float = KILL_GRACE_S,
    leader: subprocess.Popen[bytes] | None = None,
) -> None:
    """One run's kill: its group and its marked processes."""
    kill_runs([(pgid, marker)], grace, leader)


# -- the watchdog process -----------------------------------------------------------------------------


def serve(fd: int) -> dict[str, int | None]:
    """Read events from ``fd`` until end of file; the runs begun and not ended (run id -> pgid)."""
    runs: dict[str, int | None] = {}
    pending = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except InterruptedError:
            continue
        except OSError:
            break
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            words = line.decode("ascii", "replace").split()
            if len(words) == 2 and words[0] == "begin":
                runs.setdefault(words[1], None)
            elif len(words) == 3 and words[0] == "group" and words[2].isdigit():
                runs[words[1]] = int(words[2])
            elif len(words) == 2 and words[0] == "end":
                runs.pop(words[1], None)
    return runs


def main() -> int:
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.chdir("/")
    left = serve(0)
    kill_runs([(pgid, run_id) for run_id, pgid in left.items()])
    return 0


# -- the owner's side ---------------------------------------------------------------------------------


class Watchdog:
    """The owner's end: starts the watchdog at the first run, tells it each run's begin, group and end, and
    closes the pipe when the last runtime of this process stops (``acquire`` / ``release``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._write: int | None = None
        self._users = 0
        self._runs: dict[str, int | None] = {}

    @property
    def pid(self) -> int | None:
        with self._lock:
            return None if self._proc is None else self._proc.pid

    def acquire(self) -> None:
        with self._lock:
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users = max(0, self._users - 1)
            if self._users == 0:
                self._close()

    def _spawn(self) -> None:
        read, write = os.pipe()  # both non-inheritable: a command never holds the write end
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__)],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,
                cwd="/",
            )
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        self._write = write
        for run_id, pgid in self._runs.items():  # a restarted watchdog learns what is running
            self._line(f"begin {run_id}\n" + (f"group {run_id} {pgid}\n" if pgid else ""))

    def _line(self, text: str) -> None:
        assert self._write is not None
        data = text.encode("ascii")
        while data:
            data = data[os.write(self._write, data) :]

    def _send(self, text: str) -> None:  # under the lock
        for attempt in (0, 1):
            if self._write is None or (self._proc is not None and self._proc.poll() is not None):
                self._close()
                self._spawn()
            try:
                self._line(text)
                return
            except OSError:  # the watchdog died: start another one, once
                self._close()
                if attempt:
                    raise

    def begin(self, run_id: str) -> None:
        """Before a run's command starts (an OSError means no watchdog could start: the run does not)."""
        with self._lock:
            self._runs[run_id] = None
            try:
                self._send(f"begin {run_id}\n")
            except BaseException:
                self._runs.pop(run_id, None)
                raise

    def group(self, run_id: str, pgid: int) -> None:
        with self._lock:
            self._runs[run_id] = pgid
            self._send(f"group {run_id} {pgid}\n")

    def end(self, run_id: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)
            if self._write is not None:
                try:
                    self._line(f"end {run_id}\n")
                except OSError:
                    self._close()

    def _close(self) -> None:
        """Close the pipe (the watchdog stops what is left and exits) and reap it."""
        write, proc = self._write, self._proc
        self._write = self._proc = None
        if write is not None:
            with contextlib.suppress(OSError):
                os.close(write)
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(WAIT_ON_CLOSE_S)


WATCHDOG = Watchdog()  # one per process: every runtime of the process shares it


if __name__ == "__main__":
    sys.exit(main())
