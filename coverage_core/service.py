"""The transport-neutral API: validation, dispatch and envelopes over the operation table.

Every wrapper (MCP tools, REST, CLI ``--json``, notebooks) calls
``Service.call(name, arguments)`` and gets the same envelope back::

    {"context": {repo_key, project_id, checkout_path, suite, schema_revision,
                 stats: {elapsed_ms, rows_scanned}},
     "data": {..., "claim_status", "reasons"},
     "page": {...} | None}

The rows (name, description, input and output schemas, behaviour hints, handler) are declared once in
``coverage_core.operations.table.OPERATIONS``; this module validates a call against its row, runs the
row's handler and wraps the answer.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, NoReturn

import duckdb

from . import faults
from .errors import CoverageError, ErrorCode, Remedy
from .operations.table import OPERATIONS, Operation
from .principals import HOW_TO_BE, PREFERENCE, Principal
from .project import Project
from .review import budget, cursors
from .review.call import Call
from .storage.schema import SCHEMA_REVISION
from .validation import Validator

_VALIDATORS = {name: Validator(op.input_schema) for name, op in OPERATIONS.items()}


class Service:
    """The operations of one open project."""

    def __init__(self, project: Project) -> None:
        self.project = project

    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        con: Any = None,
        deadline: float | None = None,
        principal: Principal = Principal.ADMIN,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Validate, dispatch and wrap one operation. ``con`` is an optional
        pooled read connection of this project's store (one is made otherwise); ``deadline``
        (``time.monotonic()``) is when the caller needs the answer by, if it must have it by then;
        ``principal`` who calls (in process: the store's owner), refused where the row does not admit it;
        ``progress`` hears the stages of an import."""
        op = OPERATIONS.get(name)
        if op is None:
            raise CoverageError(
                ErrorCode.NOT_FOUND,
                f"unknown operation {name!r}",
                f"Use one of: {', '.join(OPERATIONS)}.",
            )
        admitting(op, frozenset({principal}))
        args = {} if arguments is None else arguments
        try:
            _VALIDATORS[name].check(args, what=name)
        except CoverageError as error:
            raised = budget_below_minimum(op, args, error)
            if raised is not None:  # the remedy: the same call with the budget it needs, measured
                error.remedy = self._budget_remedy(op, raised)
            raise
        started = time.perf_counter()
        own = con is None
        con = self.project.store.cursor() if own else con
        # A read holds the store's read gate: a compaction cannot take the detail rows it is reading.
        gate = self.project.store.gate.reading() if op.read_only else contextlib.nullcontext()
        try:
            with gate:
                call = Call(
                    self.project,
                    con,
                    args,
                    review=answer_review,
                    ask=lambda name, arguments: self._ask(name, arguments, con, deadline),
                    deadline=deadline,
                    principal=principal,
                    progress=progress,
                )
                try:
                    result = op.answer(call)
                except CoverageError as error:
                    if error.remedy is None:
                        error.remedy = remedy_for(op, args, error, self._rebind)
                    raise
                except (OSError, duckdb.Error) as exc:
                    _raise_fault(exc, self.project)
        finally:
            if own:
                con.close()
        return envelope(call, result, started)

    def _ask(self, name: str, arguments: dict[str, Any], con: Any, deadline: float | None) -> dict[str, Any]:
        """A read-only row asked by a row made of others (the dashboard's), on the asking call's connection.
        It runs as the store's owner: the asking row was admitted, and what it reads is part of its own
        answer; a write is never asked."""
        assert OPERATIONS[name].read_only, f"{name} writes: a row asks only reads"
        return self.call(name, arguments, con=con, deadline=deadline)

    def _rebind(self, cursor: str, old: dict[str, Any], new: dict[str, Any]) -> str | None:
        return cursors.rebind(self.project.store.cursor_secret, cursor, old, new)

    def _budget_remedy(self, op: Operation, raised: dict[str, Any]) -> Remedy | None:
        """The remedy of a budget below its minimum: the call at the minimum when that answers, else
        with what that call measured it needs. The validator refused before any handler ran, so
        nothing was measured yet: this one call at the minimum is the measurement."""
        con = self.project.store.cursor()
        try:
            with self.project.store.gate.reading():
                try:
                    op.answer(Call(self.project, con, raised, review=answer_review))
                except CoverageError as error:
                    # Another mistake in the call as well: no remedy, rather than one that fails.
                    return remedy_for(op, raised, error, self._rebind)
        except (OSError, duckdb.Error):
            pass  # the store cannot answer now: the call at the minimum is the remedy, as the schema says
        finally:
            con.close()
        return Remedy(operation=op.name, arguments=raised)


def admitting(op: Operation, principals: frozenset[Principal]) -> Principal:
    """The principal ``op`` runs as among those a caller proved (``PREFERENCE``); ``forbidden`` when it
    admits none of them, saying how to become one it admits. A refusal changes nothing: nothing ran."""
    for principal in PREFERENCE:
        if principal in principals and principal in op.principals:
            return principal
    ways = [HOW_TO_BE[p] for p in PREFERENCE if p in op.principals]
    raise CoverageError(
        ErrorCode.FORBIDDEN,
        f"{op.name} admits {', '.join(sorted(p.value for p in op.principals))}; this caller is "
        f"{', '.join(sorted(p.value for p in principals)) or 'none of them'}",
        " Or: ".join(ways),
        {"operation": op.name, "admits": sorted(p.value for p in op.principals)},
    )


def remedy_for(
    op: Operation,
    args: dict[str, Any],
    error: CoverageError,
    rebind: Callable[[str, dict[str, Any], dict[str, Any]], str | None] | None = None,
) -> Remedy | None:
    """The call that fixes a failed one, from what the failure measured; the handler is not run again.

    A budget too small gets the same call with the words and bytes the failure
    measured (``details.needed_words``/``needed_bytes``: the size of the page it
    would have answered, so that budget holds it; read-only operations only). A
    cursor that does not continue this query gets the same call without it. A
    cursor is bound to its call's budget: the remedy of a page carries the same
    position re-bound to the new budget (``rebind``).
    """
    if error.code is ErrorCode.BUDGET_TOO_SMALL and op.read_only and "needed_words" in error.details:
        nested = "limits" in op.input_schema["properties"]
        given = (args.get("limits") or {}) if nested else args
        words = max(error.details["needed_words"], given.get("max_words", budget.DEFAULT_MAX_WORDS))
        size = max(error.details["needed_bytes"], given.get("max_bytes", budget.DEFAULT_MAX_BYTES))
        # A need past what a call may ask for (or, without limits, past the fixed byte budget) has no
        # remedy in the budget: none, rather than one that fails.
        if words > budget.MAX_WORDS or size > (budget.MAX_BYTES if nested else budget.DEFAULT_MAX_BYTES):
            return None
        need: dict[str, Any] = {"max_words": words}
        if nested:
            need["max_bytes"] = size
            fixed = {**args, "limits": {**given, **need}}
        else:
            fixed = {**args, **need}
        if "cursor" in args and rebind is not None:
            moved = rebind(args["cursor"], args, fixed)
            if moved is None:
                return None
            fixed["cursor"] = moved
        return Remedy(operation=op.name, arguments=fixed)
    if error.code is ErrorCode.INVALID_CURSOR and "cursor" in args:
        return Remedy(operation=op.name, arguments={k: v for k, v in args.items() if k != "cursor"})
    return None


# Budget arguments whose minimum a call may be below: the remedy is the same call with what it needs.
BUDGET_PATHS = {
    "$.limits.max_words": ("limits", "max_words", budget.MIN_WORDS),
    "$.limits.max_bytes": ("limits", "max_bytes", budget.MIN_BYTES),
    "$.max_words": (None, "max_words", budget.MIN_WORDS),
}


def budget_below_minimum(op: Operation, args: dict[str, Any], error: CoverageError) -> dict[str, Any] | None:
    """The arguments with a budget below its minimum raised to it, when that is the only thing wrong."""
    where = BUDGET_PATHS.get(error.details.get("path", ""))
    if where is None or error.details.get("errors") != 1 or not op.read_only:
        return None
    parent, key, least = where
    holder = args.get(parent) if parent else args
    if not isinstance(holder, dict) or not isinstance(holder.get(key), int) or holder[key] >= least:
        return None
    fixed = {**holder, key: least}
    return {**args, parent: fixed} if parent else fixed


def answer_review(
    project: Project, arguments: dict[str, Any], con: duckdb.DuckDBPyConnection
) -> dict[str, Any]:
    """coverage_review's envelope for ``project``: how the execution runtime answers a run's attached review."""
    return Service(project).call("coverage_review", arguments, con=con)


def owner_import(
    project: Project, arguments: dict[str, Any], *, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The owner_import row on a project this process holds (``progress`` hears each stage)."""
    return Service(project).call("owner_import", arguments, progress=progress)


def _raise_fault(exc: OSError | duckdb.Error, project: Project) -> NoReturn:
    """A full disk, a damaged store or a refused read is coded (``faults``), never ``internal``."""
    coded = faults.classify(exc, project.store.path)
    if coded is None:
        raise exc
    raise coded from exc


def envelope(call: Call, result: dict[str, Any], started: float) -> dict[str, Any]:
    """Wrap a handler's result (also one computed outside ``Service.call``, e.g. of an unstored report)."""
    return envelope_for(
        call.project,
        result["data"],
        result.get("page"),
        suite=call.suite,
        started=started,
        rows=call.rows_scanned,
    )


def envelope_for(
    project: Project,
    data: dict[str, Any],
    page: dict[str, Any] | None,
    *,
    suite: str | None,
    started: float,
    rows: int,
) -> dict[str, Any]:
    """The one ``{context, data, page}`` shape every answer has (operations and plain store reads)."""
    checkout = project.checkout
    return {
        "context": {
            "repo_key": checkout.repo_key,
            "project_id": checkout.project_id,
            "checkout_path": str(checkout.worktree_path),
            "suite": suite,
            "schema_revision": SCHEMA_REVISION,
            "stats": {"elapsed_ms": round((time.perf_counter() - started) * 1000, 3), "rows_scanned": rows},
        },
        "data": data,
        "page": page,
    }
