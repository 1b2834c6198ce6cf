"""Where a command's operations run: on the daemon that owns the store, or in this process.

``store_owner(repo)`` yields something whose ``call(name, arguments, progress=...)`` answers a row's
envelope. When this home's daemon holds the store (``rest_client.owning_daemon``: files and the daemon's
word, no DuckDB, NumPy or pygit2), the rows go to it and the command imports nothing more; otherwise the
library's ``open_project`` opens the store here (or finds the daemon the way it always does, waiting for
another holder), and the rows run in this process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from coverage_core.config import Settings
from coverage_daemon.rest_client import owning_daemon

if TYPE_CHECKING:
    from coverage_core.project import Project
    from coverage_daemon.client import DaemonProject


class Owner(Protocol):
    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]: ...


@contextlib.contextmanager
def store_owner(repo: str) -> Iterator[Owner]:
    """The owner of the store of the checkout at ``repo`` for the time of a ``with`` block."""
    settings = Settings.from_env()
    route = owning_daemon(repo, settings)
    if route is not None:
        yield route
        return
    # The library (DuckDB, NumPy, pygit2) only when this process may own the store.
    from coverage_daemon import client

    with client.open_project(repo, settings=settings) as project:
        yield _Held(project, client.call)


class _Held:
    """A store this process opened, or a daemon ``open_project`` routed to: rows through ``client.call``."""

    def __init__(self, project: Project | DaemonProject, call: Callable[..., dict[str, Any]]) -> None:
        self._project, self._call = project, call

    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        return self._call(self._project, name, arguments, progress=progress)
