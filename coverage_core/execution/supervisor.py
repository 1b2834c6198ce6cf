"""A run's supervisor: the run's direct child, the reaper of everything the command starts, and the kill of it all.

Run as a script (``python -I -S supervisor.py GRACE OWNER_PID CGROUP PROGRAM ARGV...``, CGROUP ``-``
for none: the
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
then SIGKILL to the run's cgroup (``cgroup.kill``, when the run has one: the
command was spawned inside it) and to each direct child, reaping, until
``waitpid`` reports no child left. No round limit: a process that forks and
exits in a loop only makes new children of this subreaper, each one killed
at the next turn. Then it exits with the command's status (a
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
    from collections.abc import Callable
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


_PRCTL: list[Callable[..., int] | None] = []


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


def children() -> list[int]:
    """This process's direct children (``/proc/self/task/*/children``; a scan of ``/proc`` where it is absent)."""
    found: list[int] = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", "rb") as handle:
                found.extend(int(p) for p in handle.read().split())
        return found
    except (OSError, ValueError):
        me = os.getpid()
        return [pid for pid in descendants(me) if _parent(pid) == me]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _cgroup_write(path: str, name: str, value: str) -> bool:
    try:
        fd = os.open(os.path.join(path, name), os.O_WRONLY)
    except OSError:
        return False
    try:
        os.write(fd, value.encode())
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def kill_tree(grace: float, cgroup: str | None = None, command: int | None = None) -> None:
    """TERM every descendant, ``grace`` seconds for them to go, then SIGKILL (the run's cgroup, if it has one, and
    every direct child) and reap, until ``waitpid`` says no child is left.

    There is no round limit: as a subreaper this process inherits every orphan of the run, so a process that
    forks and exits in a loop only ever makes new children of this one, and a SIGKILLed child cannot fork again.
    Where there is no /proc (macOS: no subreaper either) only the ``command`` itself, still running, can be
    named: it is SIGKILLed and reaped; what it started and left is out of reach (the owner's group kill remains)."""
    if _no_children():  # the usual end: nothing left, no need to read /proc
        return
    me = os.getpid()
    _signal(descendants(me), signal.SIGTERM)
    give_up = time.monotonic() + grace
    while time.monotonic() < give_up:
        if _no_children():
            return
        _signal(descendants(me), signal.SIGTERM)  # a process started meanwhile
        time.sleep(0.02)
    while True:
        if cgroup:
            _cgroup_write(cgroup, "cgroup.kill", "1")
        _signal(children() or ([command] if command is not None else []), signal.SIGKILL)
        if _no_children():
            return
        time.sleep(0.001)


def main(argv: list[str]) -> int:
    grace, parent, program, words = float(argv[1]), int(argv[2]), argv[4], argv[5:]
    cgroup = None if argv[3] == "-" else argv[3]
    status: int | None = None
    child: int | None = None
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, _stop)
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the owner died before the parent-death signal was set
            raise _Stop(signal.SIGTERM)
        # In the run's cgroup while the command is spawned (it starts inside), then back out: a cgroup.kill of
        # the run must not kill the supervisor that reaps it. A cgroup that cannot be joined: the subreaper holds.
        if cgroup and not _cgroup_write(cgroup, "cgroup.procs", "0"):
            cgroup = None
        try:  # the command gets the default SIGPIPE and SIGXFSZ, as subprocess gives them (Python ignores them)
            child = os.posix_spawn(program, words, os.environ, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        except OSError as exc:
            os.write(2, f"coverage-mcp: could not start {program}: {exc.strerror}\n".encode())
            status = 127
        finally:
            if cgroup and not _cgroup_write(os.path.dirname(cgroup), "cgroup.procs", "0"):
                cgroup = None  # still inside: a cgroup.kill would kill this process before it reaps

        while status is None:
            pid, raw = os.waitpid(-1, 0)
            if pid == child:
                status = os.waitstatus_to_exitcode(raw)
        _quiet()
    except (_Stop, ChildProcessError):
        _quiet()
    kill_tree(grace, cgroup, child if status is None and child is not None else None)
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
