"""The maintenance worker: one asyncio task per open project store, compacting old snapshots.

Each tick reads the persisted policy (``coverage_core.storage.compaction``),
then runs one pass on a worker thread: at most ``batch_size`` snapshots, each
its own transaction under the store's write lock, the read gate held alone
only for the commit, so imports wait at most one snapshot and reads never
wait for the worker (a commit that finds readers waits for them, then gives
up and leaves the snapshot for the next tick). The newest snapshot of each
suite and the incremental bases of the runs in the policy's window (active
runs and the newest ``protect_recent_runs`` finished ones) are never touched. A tick that found snapshots to compact records its pass (trigger
``worker``) in the store; an idle tick writes nothing.

The first tick comes ``FIRST_TICK_S`` after the store opens, then one every
``cadence_minutes``. Shutdown stops the loop at once and a running pass after
its current snapshot; the daemon closes stores only after that.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from coverage_core.checkout import Checkout
from coverage_core.project import Project

if TYPE_CHECKING:
    from .projects import ProjectHandle, Projects

log = logging.getLogger("coverage_daemon")

FIRST_TICK_S = 2.0


class Maintenance:
    """The workers of one daemon's open projects."""

    def __init__(self, projects: Projects) -> None:
        self._projects = projects
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._handles: list[ProjectHandle] = []
        self._stop = asyncio.Event()
        self.ticks = 0  # finished ticks, all projects (for status and tests)

    def start(self, handle: ProjectHandle, checkout: Checkout) -> None:
        if checkout.repo_key not in self._tasks and not self._stop.is_set():
            self._tasks[checkout.repo_key] = asyncio.get_running_loop().create_task(
                self._loop(handle, checkout)
            )
            self._handles.append(handle)

    async def stop(self, grace_s: float) -> None:
        """Stop every loop; wait up to ``grace_s`` for a running pass to finish its current snapshot."""
        self._stop.set()
        tasks = list(self._tasks.values())
        if tasks:
            _done, late = await asyncio.wait(tasks, timeout=grace_s)
            if late:  # a snapshot outlasting the grace: interrupt it (its transaction rolls back whole)
                for handle in self._handles:
                    if handle.store.compacting is not None:
                        handle.store.compacting.interrupt()
                await asyncio.wait(late, timeout=grace_s)

    def _stopping(self) -> bool:
        return self._stop.is_set()

    async def _loop(self, handle: ProjectHandle, checkout: Checkout) -> None:
        projects = self._projects
        wait = FIRST_TICK_S
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=wait)
                return  # stopped while waiting
            except TimeoutError:
                pass
            try:
                project = handle.worktrees.get(checkout.worktree_path)
                if project is None:
                    project = await projects.run(Project, checkout, handle.store, projects.settings)
                    project = handle.worktrees.setdefault(checkout.worktree_path, project)
                wait = await projects.run_unbounded(self._tick, project)
            except Exception:  # a worker that dies silently would stop compacting for good
                log.exception("compaction worker of %s failed; retrying at the next tick", handle.store.path)
                wait = 60.0
            self.ticks += 1

    def _tick(self, project: Project) -> float:
        from coverage_core.execution import logs

        try:  # run logs past the project's bounds (COVERAGE_MCP_RUN_LOGS_KEEP_*): never a reason to skip compaction
            logs.prune(project)
        except Exception:
            log.exception("pruning the run logs of %s failed", project.store.path)
        policy = project.compaction_policy()
        project.compact(
            limit=policy.batch_size, trigger="worker", should_stop=self._stopping, record_idle=False
        )
        return policy.cadence_minutes * 60.0
