"""A run's supervisor: the run's direct child, the reaper of everything the command starts, and the kill of it all.

Run as a script (``python -I -S supervisor.py GRACE OWNER_PID PROGRAM ARGV...``: the
standard library only, nothing of the package imported) in the run's own
session, with the run's pipes as its standard output and error. On Linux it
makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``), so every process
the command starts stays its descendant even after leaving the run's group
and session (``setsid``), double-forking, or clearing its environment (and
with it the run's marker): an orphan reparents to the supervisor, not to
init. It asks for SIGTERM when its own parent (the owner's worker) dies.

It spawns the command (``PROGRAM`` with ``ARGV``, in this process's
environment and directory), reaps every child, and when the command exits
or when the supervisor gets SIGTERM, SIGINT or SIGHUP (timeout, cancel,
shutdown, or the owner's death), it stops its whole descendant tree: walks
``/proc/*/stat`` parent links from itself, TERM to each, ``GRACE`` seconds,
then KILL until none is left. Then it exits with the command's status (a
command killed by a signal: the same signal). Nothing it starts outlives it,
and so nothing holds the run's pipes once it is gone.

The owner's group and marker kill (``watchdog.kill_runs``) stays as a second
layer.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing's own would cost its import; type checkers take any TYPE_CHECKING as true
if TYPE_CHECKING:
    import signal  # the same names, typed (typeshed has no stub for _signal)
else:
    import _signal as signal  # the C module: ``signal`` would import enum, 4 ms of the start-up

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class _Stop(Exception):
    pass


def _quiet() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)


def _stop(signum: int, frame: object) -> None:
    _quiet()  # raised once: a second signal cannot interrupt the kill
    raise _Stop(signum)


_PRCTL: list = []


def _prctl(option: int, value: int) -> bool:
    """prctl(2) through ``_ctypes`` (the C module: 0.4 ms to import where ``ctypes`` costs 4 ms of a start-up paid
    by every run), ``ctypes`` if that fails."""
    if not _PRCTL:
        try:
            from _ctypes import FUNCFLAG_CDECL, CFuncPtr, dlopen

            class _Libc:
                _handle = dlopen(None)  # type: ignore[arg-type]  # None: the program itself (dlopen(3))

            class _Function(CFuncPtr):
                _flags_ = FUNCFLAG_CDECL

            # A function pointer takes (name, library); the stubs want a CDLL, any object with _handle will do.
            _PRCTL.append(_Function(("prctl", _Libc)))  # type: ignore[arg-type]
        except Exception:
            try:
                import ctypes

                _PRCTL.append(ctypes.CDLL(None).prctl)
            except (OSError, AttributeError):
                _PRCTL.append(None)
    try:
        return _PRCTL[0] is not None and _PRCTL[0](option, value, 0, 0, 0) == 0
    except Exception:
        return False


def descendants(root: int) -> list[int]:
    """Live (not zombie) processes whose parent chain leads to ``root``."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
            fields = stat[stat.rindex(b")") + 2 :].split()
        except (OSError, ValueError):
            continue
        if fields and fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _no_children() -> bool:
    """Whether this process has no child at all (so, as a subreaper, no descendant): reaps what has exited."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


def kill_tree(grace: float) -> None:
    """TERM every descendant, ``grace`` seconds for them to go, then KILL until none is left."""
    if _no_children():  # the usual end: nothing left, no need to read /proc
        return
    me = os.getpid()
    left = descendants(me)
    if not left:
        return
    _signal(left, signal.SIGTERM)
    give_up = time.monotonic() + grace
    while time.monotonic() < give_up:
        _reap()
        left = descendants(me)
        if not left:
            return
        _signal(left, signal.SIGTERM)  # a process started meanwhile
        time.sleep(0.02)
    for _ in range(500):
        left = descendants(me)
        if not left:
            return
        _signal(left, signal.SIGKILL)
        _reap()
        time.sleep(0.01)


def main(argv: list[str]) -> int:
    grace, parent, program, words = float(argv[1]), int(argv[2]), argv[3], argv[4:]
    status: int | None = None
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, _stop)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the owner died before the parent-death signal was set
            raise _Stop(signal.SIGTERM)
        try:  # the command gets the default SIGPIPE and SIGXFSZ, as subprocess gives them (Python ignores them)
            child = os.posix_spawn(program, words, os.environ, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        except OSError as exc:
            os.write(2, f"coverage-mcp: could not start {program}: {exc.strerror}\n".encode())
            status = 127
        while status is None:
            pid, raw = os.waitpid(-1, 0)
            if pid == child:
                status = os.waitstatus_to_exitcode(raw)
        _quiet()
    except (_Stop, ChildProcessError):
        _quiet()
    kill_tree(grace)
    _reap()
    if status is None:
        return 128 + signal.SIGTERM
    if status < 0:  # killed by a signal: end the same way
        try:
            signal.signal(-status, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), -status)
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
