"""The dashboard's event streams, bounded and sharing one revision check per project.

Every open stream used to look at its own project's revision (and its
connection every 0.25 s): thousands of streams cost the daemon its CPU. Now
one ``Watch`` per project reads the revision every
``COVERAGE_MCP_DASHBOARD_REFRESH_S`` seconds while at least one stream follows
that project, and wakes the streams waiting on it (an ``asyncio.Event``
replaced at each change). A stream otherwise sleeps until that event, the
daemon's stop, or its keep-alive (a comment line, which is also how a closed
connection is noticed).

``Hub.admit`` bounds the streams: at most ``MAX_STREAMS_PER_SESSION`` per
browser session (a person's tabs) and ``MAX_STREAMS`` in all; past either, a
429 ``too_many_requests`` error saying which.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import weakref
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from coverage_core.errors import CoverageError, ErrorCode

MAX_STREAMS_PER_SESSION = 4
MAX_STREAMS = 16
KEEPALIVE_MAX_S = 15.0


class Watch:
    """One project's revision, read by one task while streams follow it."""

    def __init__(self, revision: str) -> None:
        self.revision = revision
        self.changed = asyncio.Event()  # set (and replaced) when the revision changes
        self.followers = 0
        self.task: asyncio.Task[None] | None = None

    def publish(self, revision: str) -> None:
        if revision != self.revision:
            self.revision = revision
            changed, self.changed = self.changed, asyncio.Event()
            changed.set()


class Hub:
    """The streams of one daemon: how many per session and in all, and each followed project's watch."""

    def __init__(self, daemon: Any) -> None:
        self.daemon = daemon
        self.per_session: Counter[str] = Counter()
        self.total = 0
        self.watches: dict[str, Watch] = {}

    def admit(self, session: str) -> str:
        """Count a new stream of ``session`` (its cookie), or refuse it past a cap; the key to ``release``."""
        key = hashlib.sha256(session.encode()).hexdigest()
        if self.per_session[key] >= MAX_STREAMS_PER_SESSION:
            raise CoverageError(
                ErrorCode.TOO_MANY_REQUESTS,
                f"this browser already has {MAX_STREAMS_PER_SESSION} dashboard event streams open",
                "Close other dashboard tabs (a hidden tab closes its stream), then reload.",
                {"limit": MAX_STREAMS_PER_SESSION, "scope": "session"},
            )
        if self.total >= MAX_STREAMS:
            raise CoverageError(
                ErrorCode.TOO_MANY_REQUESTS,
                f"the daemon already serves {MAX_STREAMS} dashboard event streams",
                "Close dashboard tabs you do not look at, then reload.",
                {"limit": MAX_STREAMS, "scope": "daemon"},
            )
        self.per_session[key] += 1
        self.total += 1
        return key

    def release(self, key: str) -> None:
        self.per_session[key] -= 1
        if self.per_session[key] <= 0:
            del self.per_session[key]
        self.total -= 1

    def follow(self, project_id: str, revision: str, read: Callable[[], Awaitable[str]]) -> Watch:
        """The project's watch (started when its first stream arrives), with one more follower."""
        watch = self.watches.get(project_id)
        if watch is None:
            watch = self.watches[project_id] = Watch(revision)
            watch.task = asyncio.get_running_loop().create_task(self._check(project_id, watch, read))
        watch.followers += 1
        return watch

    def unfollow(self, project_id: str, watch: Watch) -> None:
        watch.followers -= 1
        if watch.followers <= 0 and self.watches.get(project_id) is watch:
            del self.watches[project_id]
            if watch.task is not None:
                watch.task.cancel()

    async def _check(self, project_id: str, watch: Watch, read: Callable[[], Awaitable[str]]) -> None:
        daemon = self.daemon
        while watch.followers > 0 and not daemon.stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(daemon.stop.wait(), daemon.settings.dashboard_refresh_s)
                return
            daemon.touch()  # a visible dashboard is a user of the daemon
            try:
                watch.publish(await read())
            except CoverageError:
                continue  # the store is busy or gone for a moment: the next check tells


_HUBS: weakref.WeakKeyDictionary[Any, Hub] = weakref.WeakKeyDictionary()


def hub(daemon: Any) -> Hub:
    found = _HUBS.get(daemon)
    if found is None:
        found = _HUBS[daemon] = Hub(daemon)
    return found


def keepalive_s(refresh_s: float) -> float:
    """How long a stream sleeps without news before it writes a comment (noticing a closed connection)."""
    return max(0.2, min(refresh_s, KEEPALIVE_MAX_S))
