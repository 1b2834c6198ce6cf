"""The four managed-execution operations: register_test_command, run_test, run_review, cancel_run.

Their rows live in ``coverage_core.operations.table.OPERATIONS``; the handlers are here.
None of them can approve a command (see ``registry``): run_test refuses a
command that is not approved, naming the CLI line a person runs.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from .. import safefs
from ..errors import CoverageError, ErrorCode
from ..execution import case_selectors, commands, runner, runs
from ..execution.fingerprint import fingerprint
from ..execution.records import Run
from ..execution.worker import ReviewAnswer, Runtime, command_env, runtime_of, settle_orphans
from ..model import to_json
from ..project import Project
from ..review import cursors
from ..review.call import Call

# run_test wait=true answers this long before the caller's deadline at the latest, with state running.
WAIT_MARGIN_S = 3.0
LOG_PAGE_BYTES = 16 * 1024
SEARCH_MAX_MATCHES = 50
SEARCH_MAX_S = 0.5
STREAMS = ("stdout", "stderr")


def ensure_runtime(project: Project, review: ReviewAnswer) -> Runtime:
    """This store's runtime; started here (in-process, answering its runs' reviews with ``review``) when no
    daemon started one."""
    found = runtime_of(project.store)
    if found is None:
        try:
            found = Runtime(project.store, project.settings, review=review).start()
        except RuntimeError:  # started meanwhile
            found = runtime_of(project.store)
            assert found is not None
    found.add_project(project)
    return found


def _review_of(call: Call) -> ReviewAnswer:
    assert call.review is not None, "the service passes its coverage_review to every call"
    return call.review


# -- register_test_command -------------------------------------------------------------


def register_test_command(call: Call) -> dict[str, Any]:
    registered = commands.register(call.project, call.args)
    record = commands.show_command(call.project, registered.command.id)
    if registered.attestation_ignored:
        record["note"] = commands.ATTESTATION_IGNORED
    if record["status"] == "pending":
        nxt = (
            f"A person approves it out of band: `{record['approve_with']}` (or in the dashboard); "
            "then call run_test with command_id."
        )
    elif record["status"] == "approved":
        nxt = "Call run_test with command_id (wait=true to get the result in the same call)."
    else:
        nxt = "This command was rejected; register a different command and ask a person to approve it."
    return {"data": {"command": record, "approval_mode": commands.approval_mode(call.project), "next": nxt}}


# -- run_test --------------------------------------------------------------------------


def _baseline(call: Call) -> list[str] | None:
    spec = call.args.get("baseline")
    if spec is None:
        return None
    ids = [spec["snapshot_id"]] if "snapshot_id" in spec else list(spec.get("snapshot_ids", []))
    if not ids:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "baseline needs snapshot_id or snapshot_ids",
            '{"snapshot_id": "snap-..."}',
        )
    return list(dict.fromkeys(call.project.store.resolve_id(i, call.con) for i in ids))


def _not_approved(command_id: str, status: str) -> CoverageError:
    if status == "pending":
        return CoverageError(
            ErrorCode.NOT_APPROVED,
            f"command {command_id} is pending: a person has not approved it, so it cannot run",
            f"Ask a person to run `{commands.approve_line(command_id)}` (or approve it in the dashboard), then retry.",
            {"command_id": command_id, "status": status, "approve_with": commands.approve_line(command_id)},
        )
    return CoverageError(
        ErrorCode.NOT_APPROVED,
        f"command {command_id} was rejected, so it cannot run",
        "Register a different command and ask a person to approve it.",
        {"command_id": command_id, "status": status},
    )


def run_test(call: Call) -> dict[str, Any]:
    project, store, a = call.project, call.project.store, call.args
    command_id = a["command_id"]
    spec, command_hash, status = commands.spec_of(project, command_id)
    if status != "approved":
        raise _not_approved(command_id, status)
    program = commands.runnable_executable(project, command_id, spec, cached=True)  # again when it starts
    root = Path(os.path.realpath(project.checkout.worktree_path))
    args = case_selectors.canonical_args(root, spec, a.get("args", []))
    baseline = _baseline(call)
    key = a.get("idempotency_key")
    if key is not None:
        existing = runs.by_idempotency_key(store, key)
        if existing is not None:
            same = (
                existing.command_id == command_id
                and list(existing.args) == args
                and (list(existing.baseline) if existing.baseline else None) == baseline
            )
            if not same:
                raise CoverageError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"idempotency_key {key!r} was used for run {existing.run_id} with another command, args or "
                    "baseline",
                    "Use a new idempotency_key for a different run.",
                    {"run_id": existing.run_id, "idempotency_key": key},
                )
            run = _waited(call, existing) if a.get("wait") else existing
            return _answer(call, run, reused=False)
    owner = runtime_of(store)
    env = command_env(spec, owner.secrets() if owner is not None else ())
    digest, _ = fingerprint(
        project,
        command_hash=f"{command_hash}+{program.sha256}",  # a re-approved, changed executable is a new execution
        args=args,
        env=env,
        baseline=baseline,
        artifacts=spec.artifact_paths(),
    )
    if a.get("reuse_if_unchanged", True):
        previous = runs.last_success(store, digest)
        if previous is not None:
            return _answer(call, previous, reused=True)
    run_id, created = runs.enqueue(
        store,
        command_id=command_id,
        command_hash=command_hash,
        args=args,
        baseline=baseline,
        idempotency_key=key,
        fingerprint=digest,
        worktree_path=str(project.checkout.worktree_path),
        limit=project.settings.run_queue_limit,
    )
    if not created:  # the same key, queued by a call that raced this one
        return run_test(call)
    runtime = ensure_runtime(project, _review_of(call))
    runtime.wake()
    run = runs.get(store, run_id)
    if a.get("wait"):
        run = _waited(call, run)
    return _answer(call, run, reused=False)


def _waited(call: Call, run: Run) -> Run:
    # By the caller's deadline, less a margin for the answer itself; with none, until the run ends.
    budget = None if call.deadline is None else max(1.0, call.deadline - time.monotonic() - WAIT_MARGIN_S)
    return ensure_runtime(call.project, _review_of(call)).wait(run.run_id, budget)


def _logs(run: Run) -> dict[str, Any]:
    return {
        "stdout": {"bytes": run.stdout_bytes, "truncated": run.stdout_truncated},
        "stderr": {"bytes": run.stderr_bytes, "truncated": run.stderr_truncated},
    }


def run_view(store: Any, run: Run, *, reused: bool, full: bool = False, con: Any = None) -> dict[str, Any]:
    """A run's JSON answer (``output_schemas``' run): the edge where its records become JSON (read on
    ``con`` when given)."""
    out = runs.brief(run)
    out["reused"] = reused
    out["artifacts"] = to_json(runs.artifacts(store, run.run_id, con))
    out["logs"] = _logs(run)
    out["incremental_review"] = run.incremental_review
    if full:
        out["events"] = to_json(runs.events(store, run.run_id, con))
    return out


def _answer(call: Call, run: Run, *, reused: bool) -> dict[str, Any]:
    view = run_view(call.project.store, run, reused=reused)
    if run.state in runs.ACTIVE:
        nxt = f"Poll with run_review run_id={run.run_id} view=status (or cancel_run)."
    elif view["artifacts"] and any(x["status"] == "ingested" for x in view["artifacts"]):
        nxt = (
            f'coverage_review with measurement {{"run_id": "{run.run_id}"}} reads what it measured; '
            "run_review view=logs shows its output."
        )
    else:
        nxt = f"run_review run_id={run.run_id} view=logs shows its output."
    return {"data": {"run": view, "next": nxt}}


# -- run_review --------------------------------------------------------------------------


def _read_page(path: Path, offset: int, limit: int) -> tuple[bytes, int]:
    try:
        fd = safefs.open_file(path, os.O_RDONLY)
    except CoverageError:
        return b"", 0
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, limit, offset), size
    finally:
        os.close(fd)


def run_review(call: Call) -> dict[str, Any]:
    store, a = call.project.store, call.args
    settle_orphans(store)  # a run a dead daemon left running reads as interrupted, not running
    # Read on the call's connection (the daemon's pooled one): bounded, tracked, under the query deadline.
    run = runs.get(store, a["run_id"], call.con)
    if a.get("view", "status") == "status":
        return {
            "data": {"view": "status", "run": run_view(store, run, reused=False, full=True, con=call.con)}
        }
    folder = store.path.parent / "runs" / run.run_id
    position = cursors.decode_key(call, "run_review", run.run_id, a.get("cursor")) or [0, 0]
    stream_index, offset = int(position[0]), int(position[1])
    if stream_index not in (0, 1) or offset < 0:
        raise cursors.invalid("the cursor's position is out of range")
    wanted = [a["stream"]] if a.get("stream") else list(STREAMS)
    search = a.get("search")
    needle = search.encode("utf-8", "surrogateescape") if search else None
    text_parts: list[dict[str, Any]] = []
    matches: list[dict[str, Any]] = []
    next_position = None
    started = time.monotonic()
    budget = LOG_PAGE_BYTES
    for index, stream in enumerate(STREAMS):
        if index < stream_index or stream not in wanted:
            continue
        start = offset if index == stream_index else 0
        path = folder / stream
        while True:
            chunk, size = _read_page(path, start, LOG_PAGE_BYTES)
            if not chunk:
                break
            if needle is None:
                cut = (
                    chunk.rfind(b"\n") + 1 if len(chunk) == LOG_PAGE_BYTES and b"\n" in chunk else len(chunk)
                )
                piece = chunk[:cut][:budget]
                text_parts.append(
                    {"stream": stream, "offset": start, "text": piece.decode("utf-8", "replace")}
                )
                budget -= len(piece)
                start += len(piece)
                if budget <= 0 and start < size:
                    next_position = [index, start]
                break
            lines = chunk.split(b"\n")
            consumed = (
                len(chunk) if len(chunk) < LOG_PAGE_BYTES or len(lines) == 1 else len(chunk) - len(lines[-1])
            )
            if len(chunk) == LOG_PAGE_BYTES and len(lines) > 1:
                lines = lines[:-1]
            line_start = start
            for line in lines:
                if needle in line:
                    matches.append(
                        {
                            "stream": stream,
                            "offset": line_start,
                            "line": line[:500].decode("utf-8", "replace"),
                        }
                    )
                line_start += len(line) + 1
                if len(matches) >= SEARCH_MAX_MATCHES:
                    break
            start += consumed if len(matches) < SEARCH_MAX_MATCHES else (line_start - start)
            if len(matches) >= SEARCH_MAX_MATCHES or time.monotonic() - started > SEARCH_MAX_S:
                if start < size:
                    next_position = [index, start]
                break
        if next_position is not None:
            break
    data: dict[str, Any] = {
        "view": "logs",
        "run": {"id": run.run_id, "state": run.state},
        "logs": _logs(run),
    }
    if needle is None:
        data["text"] = text_parts
    else:
        data["search"] = search
        data["matches"] = matches
    cursor = (
        None if next_position is None else cursors.encode_key(call, "run_review", run.run_id, next_position)
    )
    return {"data": data, "page": {"next_cursor": cursor}}


# -- cancel_run ----------------------------------------------------------------------------


def cancel_run(call: Call) -> dict[str, Any]:
    store, run_id = call.project.store, call.args["run_id"]
    settle_orphans(store)
    run = runs.get(store, run_id)
    if run.state in runs.ACTIVE:
        runtime = runtime_of(store)
        if runtime is not None and runtime.cancel(run_id):  # running here: signalled in memory
            run = runtime.wait(run_id, runner.KILL_GRACE_S + 15)
        else:
            state = runs.request_cancel(store, run_id)
            if runtime is not None and state != "running":
                runtime.forget_cancel(run_id)
            run = runtime.wait(run_id, runner.KILL_GRACE_S + 15) if runtime else runs.get(store, run_id)
    return {
        "data": {
            "run": run_view(store, run, reused=False),
            "next": "run_review view=logs shows what it printed before it stopped.",
        }
    }
