"""The durable run queue: runs and their state transitions are rows of the project store.

A run is mutable only while ``queued`` or ``running``; which state may follow
which is one table (``TRANSITIONS``), checked wherever a state is written, and
every transition is also a ``run_events`` row. Runs, their artifacts and
transitions are records (``records``); ``brief`` is a run's JSON view. ``claim`` moves the oldest queued run of an
approved command to ``running`` in one transaction (one writer per store:
the execution connection's lock). ``recover`` is what a store's new owner
does first: runs left ``running`` by a process that died become
``interrupted`` (their process groups killed first), queued runs stay queued.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from typing import Any

from ..errors import CoverageError, ErrorCode, Remedy
from ..project import Project
from ..storage import project_settings
from ..storage.exec_db import exec_db, reader
from ..storage.store import ProjectStore
from ..vocabulary import ACTIVE_RUN_STATES, RUN_STATES
from . import terminal
from .records import Artifact, ReportUse, Run, Transition

ACTIVE = ACTIVE_RUN_STATES
# Which state may follow which. A queued run starts (claim) or is cancelled before it starts; a running one ends
# by its exit, a cancel or shutdown, its timeout, or its owner's death (recover). An ended run never changes.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    "queued": ("running", "cancelled"),
    "running": ("succeeded", "failed", "cancelled", "timed_out", "interrupted"),
    **{state: () for state in RUN_STATES if state not in ACTIVE},
}

_COLUMNS = (
    "run_id, command_id, command_hash, args, baseline, idempotency_key, fingerprint, worktree_path, state, "
    "reason, exit_code, pgid, cancel_requested, queued_at, started_at, ended_at, stdout_bytes, stderr_bytes, "
    "stdout_truncated, stderr_truncated, incremental_review"
)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def new_run_id() -> str:
    return "run-" + secrets.token_hex(8)


def _event(con: Any, run_id: str, state: str, detail: str | None) -> None:
    """The transition's ``run_events`` row, after ``_check`` allowed it."""
    con.execute(
        "INSERT INTO run_events SELECT ?, coalesce(max(seq), 0) + 1, ?, ?, ? FROM run_events WHERE run_id = ?",
        [run_id, now(), state, detail, run_id],
    )


def _check(run_id: str, current: str, state: str) -> None:
    """Refuse a transition ``TRANSITIONS`` does not allow (raised inside the write's transaction: nothing of it
    is written)."""
    if state not in TRANSITIONS.get(current, ()):
        allowed = TRANSITIONS.get(current, ())
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"run {run_id} is {current}; it cannot become {state}",
            f"A {current} run can only become {' or '.join(allowed)}."
            if allowed
            else f"A {current} run has ended and never changes; start a new run with run_test.",
            {"run_id": run_id, "state": current, "refused": state, "reason": "illegal_transition"},
        )


def enqueue(
    store: ProjectStore,
    *,
    command_id: str,
    command_hash: str,
    args: list[str],
    baseline: list[str] | None,
    idempotency_key: str | None,
    fingerprint: str,
    worktree_path: str,
    limit: int | None = None,
) -> tuple[str, bool]:
    """A new queued run (its id, True); or, for an ``idempotency_key`` used already, that run (its id, False):
    checked and inserted in one transaction, so two racing calls with one key make one run. Past ``limit``
    runs already queued (or the repository's ``run_queue_limit`` when its settings set one), refused
    (``too_many_requests``, naming the setting)."""
    run_id = new_run_id()
    with exec_db(store).transaction() as con:
        if idempotency_key is not None:
            found = con.execute(
                "SELECT run_id FROM runs WHERE idempotency_key = ? ORDER BY queued_at LIMIT 1",
                [idempotency_key],
            ).fetchone()
            if found is not None:
                return str(found[0]), False
        counted = con.execute("SELECT count(*) FROM runs WHERE state = 'queued'").fetchone()
        queued = counted[0] if counted else 0
        named = "COVERAGE_MCP_RUN_QUEUE_LIMIT"
        if limit is not None:  # the repository's own bound, where its settings give one
            limit, named = project_settings.bound(con, project_settings.RUN_QUEUE_LIMIT, limit)
        if limit is not None and queued >= limit:
            raise CoverageError(
                ErrorCode.TOO_MANY_REQUESTS,
                f"this project already has {queued} runs queued, its limit ({named}={limit})",
                f"Wait for queued runs to end, or cancel them: `coverage-mcp runs cancel --command {command_id}` "
                f"cancels every queued run of a command (or raise {named}).",
                {"queued": int(queued), "limit": limit, "command_id": command_id, "setting": named},
                # A repository's own bound is changed by a person (the project_settings_update row, which no
                # agent may call): no remedy an agent's first try would fail on.
                Remedy(setting=named, value=limit * 2) if named.startswith("COVERAGE_MCP_") else None,
            )
        con.execute(
            f"INSERT INTO runs ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', NULL, NULL, NULL, FALSE, ?, "
            "NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
            [
                run_id,
                command_id,
                command_hash,
                json.dumps(args),
                json.dumps(baseline) if baseline else None,
                idempotency_key,
                fingerprint,
                worktree_path,
                now(),
            ],
        )
        _event(con, run_id, "queued", None)
    return run_id, True


_NAMES = [c.strip() for c in _COLUMNS.split(",")]
_JSON_COLUMNS = ("args", "baseline", "incremental_review")


def _run(columns: dict[str, Any]) -> Run:
    """A run record from its columns (the JSON ones as stored, text)."""
    decoded = {k: (None if columns[k] is None else json.loads(columns[k])) for k in _JSON_COLUMNS}
    decoded["args"] = tuple(decoded["args"] or ())
    if decoded["baseline"] is not None:
        decoded["baseline"] = tuple(decoded["baseline"])
    return Run(**{**columns, **decoded, "cancel_requested": bool(columns["cancel_requested"])})


def row(store: ProjectStore, run_id: str, con: Any = None) -> Run | None:
    """The run; an end this process knows and has not written yet (a full disk) is shown as written.
    Read on ``con`` when given (an answer's connection), else on the execution connection."""
    found = reader(store, con).one(f"SELECT {_COLUMNS} FROM runs WHERE run_id = ?", [run_id])
    if found is None:
        return None
    out = dict(zip(_NAMES, found))
    ended = terminal.unwritten(run_id)
    if ended is not None and out["state"] in ACTIVE:
        out.update(ended)
    return _run(out)


def get(store: ProjectStore, run_id: str, con: Any = None) -> Run:
    if not isinstance(run_id, str) or not run_id.startswith("run-") or len(run_id) > 64:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{run_id!r} is not a run id",
            "Run ids look like run-0123456789abcdef (run_test answers one).",
            {"run_id": run_id},
        )
    found = row(store, run_id, con)
    if found is None:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            f"no run {run_id!r} in this repository's store",
            # No operation lists runs (project_context names the active ones only): no remedy to run.
            "List runs with `coverage-mcp runs`; run_test answers a run id.",
            {"run_id": run_id},
        )
    return found


def by_idempotency_key(store: ProjectStore, key: str) -> Run | None:
    found = exec_db(store).one(
        "SELECT run_id FROM runs WHERE idempotency_key = ? ORDER BY queued_at LIMIT 1", [key]
    )
    return None if found is None else row(store, found[0])


def last_success(store: ProjectStore, fingerprint: str) -> Run | None:
    found = exec_db(store).one(
        "SELECT run_id FROM runs WHERE fingerprint = ? AND state = 'succeeded' ORDER BY ended_at DESC LIMIT 1",
        [fingerprint],
    )
    return None if found is None else row(store, found[0])


def transition(
    store: ProjectStore,
    run_id: str,
    state: str,
    *,
    detail: str | None = None,
    expect: tuple[str, ...] = ACTIVE,
    **fields: Any,
) -> bool:
    """Move an active run to ``state`` (with column ``fields``); False when it was not in ``expect`` any more
    (another writer moved it first). A move ``TRANSITIONS`` does not allow is refused (``invalid_argument``) and
    nothing is written."""
    sets = ", ".join(["state = ?"] + [f"{k} = ?" for k in fields])
    with exec_db(store).transaction() as con:
        current = con.execute("SELECT state FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if current is None or current[0] not in expect:
            return False
        _check(run_id, current[0], state)
        con.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [state, *fields.values(), run_id])
        _event(con, run_id, state, detail)
    return True


def record_pgid(store: ProjectStore, run_id: str, pgid: int) -> None:
    """The running run's process group, for whoever recovers the store after a crash."""
    with exec_db(store).transaction() as con:
        con.execute("UPDATE runs SET pgid = ? WHERE run_id = ? AND state = 'running'", [pgid, run_id])


def request_cancel(store: ProjectStore, run_id: str) -> str:
    """Cancel: a queued run ends ``cancelled`` at once; a running one is flagged for its worker. The state after."""
    with exec_db(store).transaction() as con:
        current = con.execute("SELECT state FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if current is None:
            raise CoverageError(
                ErrorCode.NOT_FOUND, f"no run {run_id!r}", "List runs with `coverage-mcp runs`."
            )
        if current[0] == "queued":
            _check(run_id, "queued", "cancelled")
            con.execute(
                "UPDATE runs SET state = 'cancelled', reason = 'cancelled before it started', ended_at = ?, "
                "cancel_requested = TRUE WHERE run_id = ?",
                [now(), run_id],
            )
            _event(con, run_id, "cancelled", "cancel_run before start")
            return "cancelled"
        if current[0] == "running":
            con.execute("UPDATE runs SET cancel_requested = TRUE WHERE run_id = ?", [run_id])
        return str(current[0])


def queued_of(store: ProjectStore, command_id: str) -> list[str]:
    """The queued runs of one command, oldest first."""
    return [
        str(r[0])
        for r in exec_db(store).rows(
            "SELECT run_id FROM runs WHERE state = 'queued' AND command_id = ? ORDER BY queued_at, run_id",
            [command_id],
        )
    ]


def claim(store: ProjectStore) -> Run | None:
    """The oldest queued run, now ``running``; None when nothing is queued.

    An idle worker asks every second: an empty queue is seen by a plain read, without the transaction, whose
    commit would start a new store generation and make every cached answer read the store again."""
    db = exec_db(store)
    if db.one("SELECT 1 FROM runs WHERE state = 'queued' LIMIT 1") is None:
        return None
    with db.transaction() as con:
        found = con.execute(
            "SELECT run_id FROM runs WHERE state = 'queued' ORDER BY queued_at, run_id LIMIT 1"
        ).fetchone()
        if found is None:
            return None
        _check(found[0], "queued", "running")
        con.execute("UPDATE runs SET state = 'running', started_at = ? WHERE run_id = ?", [now(), found[0]])
        _event(con, found[0], "running", None)
    return row(store, found[0])


def stale_running(store: ProjectStore) -> list[tuple[str, int | None]]:
    return [
        (r[0], r[1]) for r in exec_db(store).rows("SELECT run_id, pgid FROM runs WHERE state = 'running'")
    ]


def list_runs(
    project: Project,
    status: str | None = None,
    *,
    limit: int = 50,
    offset: int = 0,
    states: tuple[str, ...] | None = None,
    command_id: str | None = None,
    con: Any = None,
) -> list[dict[str, Any]]:
    """Runs, newest first; ``status`` (a state, or several ``states``) and ``command_id`` filter. Each a brief
    record. Read on ``con`` when given (an answer's connection)."""
    if status is not None and status not in RUN_STATES:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"status must be one of {', '.join(RUN_STATES)}",
            "e.g. --status running",
            {"status": status},
        )
    wanted = [status] if status else list(states or ())
    where = [*(["list_contains(?, state)"] if wanted else []), *(["command_id = ?"] if command_id else [])]
    sql = (
        "SELECT run_id FROM runs"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY queued_at DESC, run_id LIMIT ? OFFSET ?"
    )
    params: list[Any] = [
        *([wanted] if wanted else []),
        *([command_id] if command_id else []),
        int(limit),
        int(offset),
    ]
    found = [row(project.store, r[0], con) for r in reader(project.store, con).rows(sql, params)]
    # An unwritten end is no longer active.
    return [brief(r) for r in found if r is not None and (not wanted or r.state in wanted)]


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def brief(run: Run) -> dict[str, Any]:
    """A run's brief JSON view (``output_schemas``' run item): what ``list_runs`` and every run answer start with."""
    return {
        "id": run.run_id,
        "state": run.state,
        "command_id": run.command_id,
        "args": list(run.args),
        "exit_code": run.exit_code,
        "reason": run.reason,
        "queued_at": _iso(run.queued_at),
        "started_at": _iso(run.started_at),
        "ended_at": _iso(run.ended_at),
        "duration_ms": run.duration_ms,
    }


def artifacts(store: ProjectStore, run_id: str, con: Any = None) -> list[Artifact]:
    """A run's artifacts (``output_schemas.RUN_ARTIFACT``); a composite one also says ``kind``, its
    ``composite_snapshot_id`` and status, and each report's status (used or skipped_stale)."""
    rows = reader(store, con).rows(
        "SELECT a.path, a.status, a.snapshot_id, a.error_code, a.detail, a.kind, a.composite_snapshot_id, a.reports, "
        "c.status FROM run_artifacts a LEFT JOIN composite_snapshots c ON c.composite_id = a.composite_snapshot_id "
        "WHERE a.run_id = ? ORDER BY a.kind DESC, a.path",
        [run_id],
    )
    return [
        Artifact(
            path=path,
            status=status,
            snapshot_id=snapshot_id,
            kind="composite" if kind == "composite" else "report",
            composite_snapshot_id=composite_id,
            composite_status=composite_status,
            reports=tuple(ReportUse(**r) for r in json.loads(reports or "[]")),
            error_code=code,
            detail=detail,
        )
        for path, status, snapshot_id, code, detail, kind, composite_id, reports, composite_status in rows
    ]


def events(store: ProjectStore, run_id: str, con: Any = None) -> list[Transition]:
    """A run's transitions, oldest first."""
    return [
        Transition(state, at, detail)
        for state, at, detail in reader(store, con).rows(
            "SELECT state, event_at, detail FROM run_events WHERE run_id = ? ORDER BY seq", [run_id]
        )
    ]


def snapshot_ids(store: ProjectStore, run_id: str) -> list[str]:
    return [
        r[0]
        for r in exec_db(store).rows(
            "SELECT snapshot_id FROM run_artifacts WHERE run_id = ? AND status = 'ingested' AND snapshot_id IS NOT NULL "
            "AND coalesce(kind, 'report') = 'report' "
            "ORDER BY path",
            [run_id],
        )
    ]


def measured_by(store: ProjectStore, run_id: str) -> list[str]:
    """The snapshots a run ingested (``measurement: {"run_id"}``); an error when it has none (yet)."""
    run = get(store, run_id)
    ids = snapshot_ids(store, run_id)
    if not ids:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            f"run {run_id} ({run.state}) has no ingested snapshot",
            "Wait for it to end (run_review view=status) or read its logs (view=logs): an artifact it did not "
            "refresh is skipped_stale, one that failed to parse is failed.",
            {"run_id": run_id, "state": run.state},
            Remedy(operation="run_review", arguments={"run_id": run_id, "view": "status"}),
        )
    return ids
