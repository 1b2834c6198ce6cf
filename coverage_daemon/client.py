"""``open_project`` that routes to whoever owns the store, and ``DaemonProject``: the library's reads on it.

``open_project(path)`` returns the library's ``Project`` when the store's lease is free, and a
``DaemonProject`` with the same read methods when the running daemon of this home holds it; for any
other holder a coverage-mcp command waits (COVERAGE_MCP_CLI_STORE_WAIT_MS), then it is an error.
``DaemonProject`` hands back the library's own records (``Snapshot``, ``FilesPage``, ``FileDetail``) and
the service's envelopes, over ``rest_client.DaemonClient``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, Self

from coverage_core.checkout import Checkout
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.git import discover
from coverage_core.locks import describe_holder, this_process
from coverage_core.model import FileDetail, FilesPage, Snapshot, the_converter
from coverage_core.parsers.spool import local_report
from coverage_core.principals import Principal
from coverage_core.project import DEFAULT_SUITE, Project, wait_for_store
from coverage_core.project import open_project as open_direct
from coverage_core.service import Service

from .rest_client import DaemonClient, running_daemon


class DaemonProject:
    """A project the daemon owns, with the read methods (and ingest) of ``coverage_core.Project``."""

    def __init__(
        self, client: DaemonClient, checkout: Checkout, settings: Settings, capability: str | None = None
    ) -> None:
        self.checkout = checkout
        self.settings = settings
        self.client = client
        # Read from the daemon's locked lease file: it makes this process the
        # store's owner (the admin rows), exactly as if it held the store itself.
        client.capability = capability
        self.project_id = checkout.project_id

    def ingest(
        self,
        report: str | os.PathLike[str],
        *,
        suite: str = DEFAULT_SUITE,
        format: str | None = None,
        scope: str = "complete",
        commit: str | None = None,
        branch: str | None = None,
        path_map: Any = (),
        provenance: str = "import",
        progress: Any = None,
    ) -> Snapshot:
        if provenance != "import":
            raise CoverageError(
                ErrorCode.NOT_SUPPORTED,
                "run provenance is recorded by the daemon's own runs only",
                "Import the report (provenance 'import').",
            )
        # A stream of this process is copied to a private file, and links are
        # resolved here: the daemon opens neither (coverage_core.parsers.spool).
        with local_report(report, self.settings.home, self.settings.max_report_bytes) as path:
            given = {
                "report_path": str(path),
                "suite": suite,
                "format": format,
                "scope": scope,
                "commit": commit,
                "branch": branch,
                "path_map": [list(p) for p in path_map] or None,
            }
            answer = call(self, "owner_import", {k: v for k, v in given.items() if v is not None})
        return the_converter().structure(answer["data"]["snapshot"], Snapshot)

    def snapshots(
        self,
        *,
        suite: str | None = None,
        branch: str | None = None,
        commit: str | None = None,
        limit: int | None = None,
        chosen: bool = False,
    ) -> list[Snapshot]:
        return self.client.snapshots(
            self.project_id, suite=suite, branch=branch, commit=commit, limit=limit, chosen=chosen
        )

    def snapshot(self, snapshot_id: str) -> Snapshot:
        return self.client.snapshot(self.project_id, snapshot_id)

    def latest(self, suite: str = DEFAULT_SUITE) -> Snapshot | None:
        """The newest snapshot of ``suite`` that may be chosen for a caller (a complete one outranks newer
        subset ones of its commit), as ``Project.latest`` answers it."""
        found = self.snapshots(suite=suite, limit=1, chosen=True)
        return found[0] if found else None

    def analysis(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """What ``coverage_core.analysis`` asks of a project the daemon owns: the helper's answer as columns."""
        return self.call("analysis", {"name": name, "arguments": arguments})["data"]

    def files(
        self, snapshot_id: str, *, offset: int = 0, limit: int = 1000, order: str = "path"
    ) -> FilesPage:
        return self.client.files(self.project_id, snapshot_id, offset=offset, limit=limit, order=order)

    def file_detail(self, snapshot_id: str, path: str) -> FileDetail:
        return self.client.file_detail(self.project_id, snapshot_id, path)

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """A declared operation through the daemon: the same envelope ``Service.call`` returns."""
        return self.client.call(self.project_id, name, arguments)

    def close(self) -> None:
        """Nothing to release: the daemon keeps the store."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def call(
    project: Project | DaemonProject,
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run a row of the table on whichever owns the store; identical envelopes either way (``progress`` hears
    an in-process row's stages; the daemon's stages are its own). In process the
    caller holds the store: it is its owner (``Principal.ADMIN``); through the daemon, the rows the client
    token does not reach need the capability ``open_project`` read from the daemon's lock file."""
    if isinstance(project, DaemonProject):
        return project.call(name, arguments)
    return Service(project).call(name, arguments, principal=Principal.ADMIN, progress=progress)


def open_project(
    path: str | os.PathLike[str] = ".",
    *,
    settings: Settings | None = None,
    owner: str | None = None,
    wait_ms: int | None = None,
) -> Project | DaemonProject:
    """The library's project when its store is free; the daemon's when the daemon of this home holds it.

    Held by anyone else, a coverage-mcp command (``locks.this_process``) waits up
    to COVERAGE_MCP_CLI_STORE_WAIT_MS, saying once on a terminal whom it waits
    for, and routes to the daemon if the daemon takes the store meanwhile; other
    callers wait ``wait_ms`` (default: not at all). Then ``store_locked``,
    naming the holder and how it lets go.
    """
    settings = settings or Settings.from_env()
    is_cli = (owner or this_process()[0]) == "cli"
    if wait_ms is None:
        wait_ms = settings.cli_store_wait_ms if is_cli else 0

    def attempt() -> Project | DaemonProject:
        try:
            return open_direct(path, settings=settings, owner=owner)
        except CoverageError as error:
            if error.code != ErrorCode.STORE_LOCKED:
                raise
            routed = _through_daemon(path, settings, error)
            if routed is None:
                raise
            return routed

    return wait_for_store(
        attempt,
        wait_ms,
        _say_waiting(wait_ms) if is_cli else None,
        limit_name="COVERAGE_MCP_CLI_STORE_WAIT_MS" if is_cli else None,
    )


def _through_daemon(
    path: str | os.PathLike[str], settings: Settings, error: CoverageError
) -> DaemonProject | None:
    """The daemon's project when the holder named in ``error`` is this home's running daemon."""
    holder = error.details.get("holder", {})
    found = running_daemon(settings) if holder.get("owner") == "daemon" else None
    if found is None:
        return None
    client, meta = found
    health = client.health()
    if health.get("pid") != holder.get("pid") or health.get("home") != str(settings.home):
        return None
    checkout = discover(path)
    client.repo = str(checkout.worktree_path)
    client.register(checkout.worktree_path)
    return DaemonProject(client, checkout, settings, meta.get("capability"))


def _say_waiting(wait_ms: int) -> Callable[[dict[str, Any]], None] | None:
    """One line on a terminal's stderr when a command starts waiting (never into a pipe or a log)."""
    if not sys.stderr.isatty():
        return None

    def say(holder: dict[str, Any]) -> None:
        print(
            f"waiting for {describe_holder(holder)} to release the coverage store "
            f"(up to {wait_ms / 1000:g} s, COVERAGE_MCP_CLI_STORE_WAIT_MS)...",
            file=sys.stderr,
            flush=True,
        )

    return say
