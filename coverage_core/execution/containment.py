"""Where a run's processes are contained: a cgroup v2 of its own where this process may make one, else nothing more
than the supervisor's subreaper.

Linux with a delegated cgroup v2 subtree (this process's own cgroup is
writable, as under a systemd user service with ``Delegate=yes``, or as root),
and a kernel with ``cgroup.kill`` (5.14+): each run gets
``<this process's cgroup>/coverage-mcp-run-<run id>``; the supervisor puts the
command in it before the command starts and steps back out itself, and the
end of the run writes ``cgroup.kill``, which the kernel applies to every
process of the group, forks in flight included. Everywhere else (no cgroup v2,
a cgroup this user may not write, ``COVERAGE_MCP_RUN_FORCE_SUBREAPER=1``,
macOS) the supervisor's subreaper holds alone: every orphan of the run is
reparented to it and it SIGKILLs and reaps its children until none is left.

The supervisor (``supervisor.py``, standard library only) does the joining and
the kill itself; this module finds the subtree, makes a run's cgroup, and
removes it (a second ``cgroup.kill`` first) once the run is over or was left by
a dead owner.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

PREFIX = "coverage-mcp-run-"
EMPTY_WAIT_S = 10.0  # how long a removal waits for a killed group to empty

_FOUND: list[tuple[Path | None, str]] = []  # (subtree or None, why not), found once per process


def _own_cgroup() -> tuple[Path | None, str]:
    if not sys.platform.startswith("linux"):
        return None, f"cgroups are Linux's ({sys.platform} has none)"
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError as exc:
        return None, f"/proc/self/cgroup is unreadable ({exc.strerror})"
    own = next((line[3:] for line in lines if line.startswith("0::")), None)
    if own is None:
        return None, "this process is in no cgroup v2 hierarchy"
    mount = None
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            if right.split(" ", 1)[0] == "cgroup2":
                mount = left.split(" ")[4]
                break
    except OSError as exc:
        return None, f"/proc/self/mountinfo is unreadable ({exc.strerror})"
    if mount is None:
        return None, "no cgroup v2 file system is mounted"
    base = Path(mount) / own.lstrip("/")
    if not os.access(base, os.W_OK) or not os.access(base / "cgroup.procs", os.W_OK):
        return None, f"this process's cgroup {base} is not delegated to this user (not writable)"
    probe = base / f"{PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as exc:
        return None, f"a cgroup cannot be made under {base} ({exc.strerror})"
    try:
        if not (probe / "cgroup.kill").exists():
            return None, "the kernel has no cgroup.kill (Linux 5.14+)"
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()
    return base, ""


def available() -> Path | None:
    """The delegated cgroup v2 subtree runs go into (this process's own cgroup), or None."""
    if not _FOUND:
        _FOUND.append(_own_cgroup())
    return _FOUND[0][0]


def why_unavailable() -> str:
    """Why ``available`` is None (empty when it is not)."""
    available()
    return _FOUND[0][1]


def path_for(run_id: str) -> Path | None:
    base = available()
    return None if base is None else base / f"{PREFIX}{run_id}"


def create(run_id: str) -> Path | None:
    """A new empty cgroup for the run, or None (no subtree, or it could not be made: the subreaper holds)."""
    path = path_for(run_id)
    if path is None:
        return None
    try:
        path.mkdir()
    except FileExistsError:  # left by a dead owner with this run id: emptied and reused
        kill(path)
    except OSError:
        return None
    return path


def kill(path: Path) -> bool:
    """SIGKILL every process of the cgroup (``cgroup.kill``) and wait, bounded, until it is empty."""
    try:
        (path / "cgroup.kill").write_text("1")
    except OSError:
        return False
    give_up = time.monotonic() + EMPTY_WAIT_S
    while time.monotonic() < give_up:
        try:
            if "populated 0" in (path / "cgroup.events").read_text():
                return True
        except OSError:
            return True
        time.sleep(0.01)
    return False


def remove(path: Path | None) -> None:
    """Kill what is left in the run's cgroup, then remove it (nothing when it is gone already)."""
    if path is None or not path.exists():
        return
    kill(path)
    with contextlib.suppress(OSError):
        path.rmdir()
