"""The common registry, ``$COVERAGE_MCP_HOME/common.duckdb``: every project the daemon has served.

Only the daemon opens it, and only while it holds ``daemon.lock``, so it has one
writer by construction. It maps a project id (the short hash of the canonical
repository key) to the checkout the project was first opened from, so
``/p/{project_id}/mcp`` and ``/api/projects/{id}`` resolve without a path.
Calls block on DuckDB: the daemon makes them from its worker threads.
DuckDB opens the file by name, so it and its WAL are ``lstat``-checked first
(never a link, only our own files), and the file is kept 0600.
"""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from typing import Any

import attrs

from coverage_core import safefs
from coverage_core.checkout import Checkout
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.storage.guard import check_duckdb_paths, open_database
from coverage_core.storage.transactions import transaction

REGISTRY_REVISION = 1

_SCHEMA = """
-- One row: the registry's schema revision.
CREATE TABLE registry_revision (revision INTEGER NOT NULL);

-- Projects the daemon has opened, keyed by the id derived from the repository key.
CREATE TABLE projects (
    project_id    VARCHAR PRIMARY KEY,
    repo_key      VARCHAR NOT NULL UNIQUE,  -- real path of git's common directory
    checkout_path VARCHAR NOT NULL,         -- main worktree (or the first checkout seen)
    store_path    VARCHAR NOT NULL,
    first_seen    TIMESTAMPTZ NOT NULL,
    last_seen     TIMESTAMPTZ NOT NULL
);
"""


@attrs.frozen
class ProjectRecord:
    project_id: str
    repo_key: str
    checkout_path: str
    store_path: str
    first_seen: dt.datetime
    last_seen: dt.datetime

    def to_dict(self) -> dict[str, Any]:
        body = attrs.asdict(self)
        body["first_seen"] = self.first_seen.isoformat()
        body["last_seen"] = self.last_seen.isoformat()
        return body


class Registry:
    """The open common registry; thread-safe (one lock around its one connection)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.Lock()
        check_duckdb_paths(path)
        self._con = open_database(path)
        try:
            safefs.make_private(path)
            self._migrate()
        except BaseException:
            self._con.close()
            raise

    def _migrate(self) -> None:
        con = self._con
        exists = con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'registry_revision'"
        ).fetchall()[0][0]
        if not exists:
            with transaction(con):  # all of the schema or none of it
                con.execute(_SCHEMA)
                con.execute("INSERT INTO registry_revision VALUES (?)", [REGISTRY_REVISION])
            return
        revision = con.execute("SELECT max(revision) FROM registry_revision").fetchall()[0][0]
        if revision > REGISTRY_REVISION:
            raise CoverageError(
                ErrorCode.SCHEMA_TOO_NEW,
                f"{self.path} has registry revision {revision}; this coverage-mcp knows up to {REGISTRY_REVISION}",
                "Run the newer coverage-mcp that wrote it, or point COVERAGE_MCP_HOME at another folder.",
            )

    def record(self, checkout: Checkout, store_path: Path) -> bool:
        """Register (or touch) ``checkout``'s project; True when it was not known before."""
        now = dt.datetime.now(dt.UTC)
        home = checkout.main_worktree or checkout.worktree_path
        with self._lock:
            known = self._con.execute(
                "SELECT 1 FROM projects WHERE project_id = ?", [checkout.project_id]
            ).fetchone()
            self._con.execute(
                """INSERT INTO projects VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT (project_id) DO UPDATE SET last_seen = excluded.last_seen""",
                [checkout.project_id, checkout.repo_key, str(home), str(store_path), now, now],
            )
        return known is None

    def get(self, project_id: str) -> ProjectRecord | None:
        with self._lock:
            row = self._con.execute(
                f"SELECT {_COLUMNS} FROM projects WHERE project_id = ?", [project_id]
            ).fetchone()
        return None if row is None else ProjectRecord(*row)

    def all(self) -> list[ProjectRecord]:
        with self._lock:
            rows = self._con.execute(f"SELECT {_COLUMNS} FROM projects ORDER BY last_seen DESC").fetchall()
        return [ProjectRecord(*row) for row in rows]

    def close(self) -> None:
        with self._lock:
            self._con.close()


_COLUMNS = "project_id, repo_key, checkout_path, store_path, first_seen, last_seen"
