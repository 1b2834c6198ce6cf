"""Nothing outlives a run (issue 23): a descendant that leaves the session, clears its environment, ignores
SIGTERM and forks and exits in a loop is gone soon after the run ends, whichever way it ends: with the
subreaper fallback (forced by a setting, so it is tested even where a cgroup could be made, as in CI as root)
and, where a delegated cgroup v2 subtree is available, with the run's cgroup."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from coverage_core.execution.watchdog import KILL_GRACE_S
from coverage_core.project import Project, open_project

from .gitrepo import make_repo
from .test_runs import FILES, PY, approved, run, wait_for

# Leaves the run's session, clears its environment (and the run's marker), ignores TERM, then forks and exits in
# a loop: a new pid every few hundred microseconds. Every generation holds the lock taken on ``hopper.lock``
# (one open file description, inherited by each fork), so the lock is free exactly when no generation is left:
# an event to wait for, where a scan of /proc would miss a process that changes its pid faster than the scan.
# So that a failure never leaves it hopping on the machine, it stops by itself at ``SELF_EXPIRY_S``.
HOPPER = """\
import fcntl, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
lock = os.open("hopper.lock", os.O_RDWR | os.O_CREAT)
fcntl.flock(lock, fcntl.LOCK_EX)
give_up = time.time() + float(sys.argv[1])
open("hopping.tmp", "w").write(open("/proc/self/cgroup").read())
os.replace("hopping.tmp", "hopping")
while time.time() < give_up:
    if os.fork():
        os._exit(0)
"""
# Starts the hopper, waits until it hops, then exits 0 (``exit``) or sleeps past its timeout (``sleep``).
LAUNCHER = """\
import os, subprocess, sys, time
subprocess.Popen(["setsid", "env", "-i", sys.executable, "hopper.py", sys.argv[1]])
while not os.path.exists("hopping"):
    time.sleep(0.02)
open("cov.info", "w").write("SF:app.py\\nDA:1,1\\nend_of_record\\n")
if sys.argv[2] == "sleep":
    time.sleep(600)
"""
# The supervisor's documented grace (KILL_GRACE_S: TERM, then SIGKILL until no child is left) plus a generous
# margin for a loaded machine: the deadline of the wait for an event (the hopper's lock released), never a timing
# assertion. The hopper's own expiry is far later, so a hopper that outlived its run fails the test first.
GONE_WITHIN_S = KILL_GRACE_S + 30.0
SELF_EXPIRY_S = GONE_WITHIN_S + 90.0


def hopper_gone(repo: Path) -> bool:
    """Whether no generation of the hopper is left: its lock can be taken."""
    fd = os.open(repo / "hopper.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


@contextlib.contextmanager
def no_hopper_left(repo: Path) -> Iterator[None]:
    """Whatever the test finds, it ends only when no hopper is left (at the latest when the hopper expires)."""
    try:
        yield
    finally:
        if (repo / "hopper.lock").exists():
            wait_for(lambda: hopper_gone(repo), "the hopper's expiry", SELF_EXPIRY_S + 30)


def _cgroup_or_skip() -> None:
    from coverage_core.execution import containment

    found = containment.available()
    if found is None:
        reason = f"no delegated cgroup v2 subtree to put runs in ({containment.why_unavailable()})"
        pytest.skip(reason)


@pytest.fixture(params=["subreaper", "cgroup"])
def project(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Project]:
    forced = request.param == "subreaper"
    monkeypatch.setenv("COVERAGE_MCP_RUN_FORCE_SUBREAPER", "1" if forced else "0")
    if not forced:
        _cgroup_or_skip()
    repo = make_repo(
        tmp_path / "repo",
        {
            **FILES,
            "hopper.py": HOPPER,
            "launcher.py": LAUNCHER,
            ".gitignore": FILES[".gitignore"] + "hopping*\nhopper.lock\n",
        },
    )
    with open_project(repo) as opened:
        opened.mode = request.param  # type: ignore[attr-defined]
        yield opened


def _check_mechanism(project: Project) -> None:
    cgroup = (project.checkout.worktree_path / "hopping").read_text()
    in_run_cgroup = "coverage-mcp-run-" in cgroup
    assert in_run_cgroup == (project.mode == "cgroup"), cgroup  # type: ignore[attr-defined]


@pytest.mark.parametrize(("how", "ends"), [("exit", "succeeded"), ("sleep", "timed_out")])
def test_a_fork_and_exit_loop_is_gone_soon_after_its_run_ends(project: Project, how: str, ends: str) -> None:
    repo = project.checkout.worktree_path
    with no_hopper_left(repo):
        command_id = approved(project, [PY, "launcher.py", str(SELF_EXPIRY_S), how], timeout_s=5)
        done = run(project, command_id=command_id, wait=True)
        assert done["state"] == ends, done
        _check_mechanism(project)
        wait_for(lambda: hopper_gone(repo), "the end of every hopper generation", GONE_WITHIN_S)
