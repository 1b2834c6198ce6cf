"""One operation call: the project, a read connection, the arguments, telemetry."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from ..principals import Principal
from ..project import DEFAULT_SUITE, Project

if TYPE_CHECKING:
    from ..execution.worker import ReviewAnswer

# Another read-only row's envelope, on the asking call's project and connection: ``ask(name, arguments)``.
Ask = Callable[[str, dict[str, Any]], dict[str, Any]]


T = TypeVar("T")


class Call:
    """What a handler needs. Queries go through ``rows`` so telemetry stays honest, each naming the detail
    tables it reads (``detail=``) so compacted snapshots are restored first."""

    def __init__(
        self,
        project: Project,
        con: duckdb.DuckDBPyConnection,
        args: dict[str, Any],
        *,
        review: ReviewAnswer | None = None,
        ask: Ask | None = None,
        deadline: float | None = None,
        principal: Principal = Principal.ADMIN,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.project = project
        # Who the service admitted this call as (a row's handler may record it: a decision's ``via``).
        self.principal = principal
        # Hears each stage of long work (an import), in the caller's own process only.
        self.progress = progress
        # How coverage_review is answered for work this call starts (a managed run's attached review): the
        # service passes its own, so nothing below the service imports it.
        self.review = review
        # How a row made of other rows (the dashboard's) reads them: the service binds it to this call's
        # project and connection, so the handler needs nothing from the floor above it.
        self._ask = ask
        # When the caller needs the answer by (time.monotonic()); None: whenever it is ready. The daemon sets it
        # from its request deadline; work that can end early with a partial answer (run_test wait) keeps to it.
        self.deadline = deadline
        self.con = con
        self.args = args
        measurement = args.get("measurement") or {}
        self.suite: str = measurement.get("suite") or args.get("suite") or DEFAULT_SUITE
        self.rows_scanned = 0
        self._once: dict[Hashable, Any] = {}

    def ask(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The envelope of the read-only row ``name`` with ``arguments``, on this call's connection."""
        assert self._ask is not None, "the service passes its own ask to every call"
        return self._ask(name, arguments)

    def once(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()``'s value, computed once per call: one answer reads one view of the checkout."""
        if key not in self._once:
            self._once[key] = compute()
        return self._once[key]

    def restore(self, tables: Sequence[str], snaps: dict[int, str] | None = None) -> None:
        """Make the detail ``tables`` of the snapshots this call resolved on its connection (or of ``snaps``,
        snap -> snapshot id) readable, restoring compacted ones (``ProjectStore.materialize``). A query that
        reads detail names its tables: ``detail=`` of ``rows``, ``one``, ``value`` and ``numpy``, or this
        before a query run on ``con`` itself. An undeclared table would read a compacted snapshot's detail as
        empty; the suite checks every query through ``Call`` (tests/detail_reads.py)."""
        if tables:
            self.project.store.materialize(self.con, tables, snaps)

    def rows(
        self, sql: str, params: Sequence[Any] | dict[str, Any] = (), *, detail: Sequence[str] = ()
    ) -> list[tuple[Any, ...]]:
        self.restore(detail)
        out = self.con.execute(sql, params if isinstance(params, dict) else list(params)).fetchall()
        self.rows_scanned += len(out)
        return out

    def as_of_generation(self, key: Hashable, read: Callable[[], T]) -> T:
        """``read()`` once per generation of the store (every write starts a new one), for what changes only
        with a write: which snapshots exist and how they rank, the runs and commands, the inventory."""
        store = self.project.store
        value: T = store.per_generation.get((store.generation, key), read)
        return value

    def listed(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """``rows`` of a query over the stored records alone (never detail), once per generation."""
        return self.as_of_generation(
            ("listed", sql, json.dumps(list(params), default=str)), lambda: self.rows(sql, params)
        )

    def one(
        self, sql: str, params: Sequence[Any] = (), *, detail: Sequence[str] = ()
    ) -> tuple[Any, ...] | None:
        self.restore(detail)
        row = self.con.execute(sql, list(params)).fetchone()
        self.rows_scanned += row is not None
        return row

    def value(self, sql: str, params: Sequence[Any] = (), *, detail: Sequence[str] = ()) -> Any:
        """The one value of a query that always answers one row (an aggregate such as ``count(*)``)."""
        row = self.one(sql, params, detail=detail)
        assert row is not None, "an aggregate query answers one row"
        return row[0]

    def numpy(self, sql: str, params: Sequence[Any] = (), *, detail: Sequence[str] = ()) -> dict[str, Any]:
        self.restore(detail)
        out = self.con.execute(sql, list(params)).fetchnumpy()
        self.rows_scanned += len(next(iter(out.values()), ()))
        return out
