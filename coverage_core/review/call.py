"""One operation call: the project, a read connection, the arguments, telemetry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from ..project import DEFAULT_SUITE, Project


class Call:
    """What a handler needs. Queries go through ``rows`` so telemetry stays honest."""

    def __init__(self, project: Project, con: duckdb.DuckDBPyConnection, args: dict[str, Any]) -> None:
        self.project = project
        self.con = con
        self.args = args
        measurement = args.get("measurement") or {}
        self.suite: str = measurement.get("suite") or args.get("suite") or DEFAULT_SUITE
        self.rows_scanned = 0

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple]:
        out = self.con.execute(sql, params if isinstance(params, dict) else list(params)).fetchall()
        self.rows_scanned += len(out)
        return out

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        row = self.con.execute(sql, list(params)).fetchone()
        self.rows_scanned += row is not None
        return row

    def numpy(self, sql: str, params: Sequence[Any] = ()) -> dict:
        out = self.con.execute(sql, list(params)).fetchnumpy()
        self.rows_scanned += len(next(iter(out.values()), ()))
        return out
