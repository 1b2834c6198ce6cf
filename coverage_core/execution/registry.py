"""Registered test commands: immutable, content-hashed, approved by a person.

A registration is canonical JSON of ``{argv, cwd, timeout_s, env, runners,
inherit, artifacts, args_policy}`` (``environment`` owns the last two of the environment's four parts); its SHA-256 is the content hash and ``cmd-`` plus its first 16
hex digits the command id, so registering the same content again finds the
same command. A change is a new registration. Status is the latest decision
(``approved`` / ``rejected``), ``pending`` before any; decisions are
append-only rows recording who, when and from where (``cli``, ``dashboard``,
``attested``).

Approval is never reachable from the MCP surface or with the client token:
``approve`` and ``reject`` are library functions the CLI calls on the store it
holds, or through the daemon's admin routes. Only ``attested`` mode lets a
registration carry its own approval, and only with ``approved_by`` and
``approval_note``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import CoverageError, ErrorCode, Remedy
from ..parsers import FORMATS
from ..project import SCOPES, Project
from . import environment
from .db import exec_db

STATUSES = ("pending", "approved", "rejected")
VIAS = ("cli", "dashboard", "attested")
ARGS_POLICIES = ("none", "selectors")
APPROVAL_MODES = ("out_of_band", "attested")
DEFAULT_TIMEOUT_S = 600
MAX_TIMEOUT_S = 24 * 3600
MAX_ARGV = 256
MAX_WORD = 4096
MAX_ENV = 64
MAX_ARTIFACTS = 16
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
COMMAND_ID = re.compile(r"^cmd-[0-9a-f]{16}$")


def _bad(message: str, suggestion: str, **details: Any) -> CoverageError:
    return CoverageError(ErrorCode.INVALID_ARGUMENT, message, suggestion, details)


def _word(value: Any, what: str) -> str:
    if not isinstance(value, str) or "\0" in value or len(value) > MAX_WORD:
        raise _bad(
            f"{what} must be a string without NUL of at most {MAX_WORD} characters",
            "Pass each word of the command as its own string.",
            argument=what,
        )
    return value


def inside_checkout(root: Path, text: str, what: str, *, allow_root: bool = False) -> str:
    """``text`` as a normalized path relative to the checkout ``root``; refused when it leaves it
    (absolute elsewhere, ``..`` past the root, or through a link that points outside)."""
    _word(text, what)
    if not text or text.startswith("-"):
        raise _bad(
            f"{what} {text!r} is not a path", "Pass a path relative to the checkout root.", argument=what
        )
    raw = Path(text)
    full = raw if raw.is_absolute() else root / raw
    resolved = Path(os.path.realpath(full))
    normal = Path(os.path.normpath(full))
    for candidate in (normal, resolved):
        if not (candidate == root and allow_root) and not candidate.is_relative_to(root):
            raise CoverageError(
                ErrorCode.PATH_OUTSIDE_CHECKOUT,
                f"{what} {text!r} is outside the checkout {root}",
                "Use a path inside the checkout, relative to its root.",
                {"argument": what, "checkout_path": str(root)},
            )
        if candidate == root and not allow_root:
            raise _bad(
                f"{what} {text!r} names the checkout itself",
                "Name a file inside the checkout.",
                argument=what,
            )
    rel = normal.relative_to(root)
    return PurePosixPath(*rel.parts).as_posix() if rel.parts else "."


def outside_store(project: Project, path: str, what: str) -> str:
    """``path`` (checked inside the checkout) unless it lies in a ``.coverage-mcp`` folder or the store's own
    folder: a command's report there would overwrite the store, its lease or a run's logs."""
    root = project.checkout.worktree_path
    store_dir = Path(os.path.realpath(project.checkout.store_dir))
    resolved = Path(os.path.realpath(root / path))
    if ".coverage-mcp" in PurePosixPath(path).parts or resolved.is_relative_to(store_dir):
        raise _bad(
            f"{what} {path!r} is inside coverage-mcp's own folder .coverage-mcp/ (its store, lease and run "
            "logs)",
            "Have the command write its report elsewhere in the checkout, e.g. coverage.json.",
            argument=what,
        )
    return path


def canonical_spec(project: Project, args: dict[str, Any]) -> dict[str, Any]:
    """The registration's canonical content from ``register_test_command``'s arguments (validated)."""
    root = project.checkout.worktree_path
    argv = args.get("argv")
    if not isinstance(argv, list) or not argv or len(argv) > MAX_ARGV:
        raise _bad(
            f"argv must be a list of 1 to {MAX_ARGV} words (never a shell string)",
            'e.g. ["python", "-m", "pytest", "--cov", "--cov-report=json"]',
            argument="argv",
        )
    words = [_word(w, "argv word") for w in argv]
    if not words[0]:
        raise _bad("argv[0] (the program) is empty", "Name the program to run first.", argument="argv")
    if any(c.isspace() for c in words[0]):
        split = words[0].split()
        raise _bad(
            f"argv[0] {words[0][:100]!r} contains whitespace: it looks like a shell string, and argv is "
            "never run through a shell",
            f"Split it into words: {json.dumps(split[:8] + argv[1:3])[:300]} "
            "(a program whose path has a space: name it through a link without one).",
            argument="argv",
        )
    cwd = inside_checkout(root, args.get("cwd", "."), "cwd", allow_root=True)
    if not (root / cwd).is_dir():
        raise _bad(
            f"cwd {cwd!r} is not a directory of the checkout",
            "Use an existing folder, relative to the root.",
            argument="cwd",
        )
    timeout = args.get("timeout_s", DEFAULT_TIMEOUT_S)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= MAX_TIMEOUT_S:
        raise _bad(
            f"timeout_s must be an integer from 1 to {MAX_TIMEOUT_S}", "e.g. 600", argument="timeout_s"
        )
    env = args.get("env", {})
    if not isinstance(env, dict) or len(env) > MAX_ENV:
        raise _bad(
            f"env must be an object of at most {MAX_ENV} variables", '{"PYTHONHASHSEED": "0"}', argument="env"
        )
    for key, value in env.items():
        if not _ENV_NAME.match(key) or key.startswith("COVERAGE_MCP_"):
            raise _bad(
                f"env name {key!r} is not allowed",
                "Use NAME=value names like PYTHONHASHSEED (COVERAGE_MCP_ names are the daemon's own).",
                argument="env",
            )
        _word(value, f"env {key}")
    artifacts_in = args.get("artifacts")
    if not isinstance(artifacts_in, list) or not artifacts_in or len(artifacts_in) > MAX_ARTIFACTS:
        raise _bad(
            f"artifacts must list 1 to {MAX_ARTIFACTS} reports the command writes",
            '[{"path": "coverage.json", "suite": "unit"}]',
            argument="artifacts",
        )
    artifacts = []
    for item in artifacts_in:
        if isinstance(item, dict) and "composite" in item:
            artifacts.append(_composite(project, item))
            continue
        if not isinstance(item, dict) or "path" not in item or "suite" not in item:
            raise _bad(
                "each artifact is {path, suite, format?, scope?} or {composite: {inventory, reports}}",
                '{"path": "coverage.json", "suite": "unit"}',
                argument="artifacts",
            )
        path = outside_store(project, inside_checkout(root, item["path"], "artifact path"), "artifact path")
        fmt = item.get("format")
        if fmt is not None and fmt not in FORMATS:
            raise _bad(
                f"artifact format {fmt!r} is unknown",
                f"Use one of: {', '.join(FORMATS)}, or omit it.",
                argument="artifacts",
            )
        suite = item["suite"]
        if not isinstance(suite, str) or not suite or len(suite) > 200 or any(c in suite for c in "\0\r\n"):
            raise _bad("artifact suite must be a one-line name", "e.g. 'unit'", argument="artifacts")
        scope = item.get("scope", "complete")
        if scope not in SCOPES:
            raise _bad(f"artifact scope must be one of {SCOPES}", "complete or subset", argument="artifacts")
        artifacts.append({"path": path, "format": fmt, "suite": suite, "scope": scope})
    named = [a["composite"]["inventory"] if "composite" in a else a["path"] for a in artifacts]
    if len(set(named)) != len(named):
        raise _bad(
            "an artifact path (or a composite's inventory) is listed twice",
            "List each report once.",
            argument="artifacts",
        )
    policy = args.get("args_policy", "none")
    if policy not in ARGS_POLICIES:
        raise _bad(
            f"args_policy must be one of {ARGS_POLICIES}",
            "none (default) or selectors",
            argument="args_policy",
        )
    return {
        "argv": words,
        "cwd": cwd,
        "timeout_s": timeout,
        "env": dict(sorted(env.items())),
        **environment.canonical(args, words),  # runners and inherit: what a run takes from its daemon's env
        "artifacts": artifacts,
        "args_policy": policy,
    }


COMPOSITE_EXAMPLE = (
    '{"composite": {"inventory": "coverage-inventory.json", "reports": [{"component": "native", '
    '"variant": "fast", "path": "build/fast.json"}, {"component": "python", "path": "coverage.json"}]}}'
)
MAX_COMPOSITE_REPORTS = 64
_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # an inventory's component and variant ids


def _composite(project: Project, item: dict[str, Any]) -> dict[str, Any]:
    """A composite artifact: the inventory (inside the checkout) and the reports the command writes, each naming
    the component (and variant) it measures. Components and variants are checked against the inventory when a
    run ends (the inventory is the checkout's, then)."""
    root = project.checkout.worktree_path
    body = item["composite"]
    if (
        set(item) != {"composite"}
        or not isinstance(body, dict)
        or set(body) - {"inventory", "reports"}
        or "inventory" not in body
        or "reports" not in body
    ):
        raise _bad(
            "a composite artifact is {composite: {inventory, reports: [{component, variant?, path}]}} and "
            "nothing else",
            COMPOSITE_EXAMPLE,
            argument="artifacts",
        )
    inventory = inside_checkout(root, body["inventory"], "composite inventory")
    reports_in = body["reports"]
    if not isinstance(reports_in, list) or not reports_in or len(reports_in) > MAX_COMPOSITE_REPORTS:
        raise _bad(
            f"a composite artifact lists 1 to {MAX_COMPOSITE_REPORTS} reports",
            COMPOSITE_EXAMPLE,
            argument="artifacts",
        )
    reports = []
    for report in reports_in:
        if (
            not isinstance(report, dict)
            or set(report) - {"component", "variant", "path"}
            or "component" not in report
            or "path" not in report
        ):
            raise _bad(
                "each composite report is {component, variant?, path}",
                COMPOSITE_EXAMPLE,
                argument="artifacts",
            )
        for key in ("component", "variant"):
            value = report.get(key)
            if (value is not None or key == "component") and (
                not isinstance(value, str) or not _COMPONENT.match(value)
            ):
                raise _bad(
                    f"composite report {key} {value!r} is not an inventory id (1-64 letters, digits, '_', "
                    "'.', '-')",
                    COMPOSITE_EXAMPLE,
                    argument="artifacts",
                )
        path = outside_store(
            project, inside_checkout(root, report["path"], "composite report path"), "composite report path"
        )
        if path == inventory:
            raise _bad(
                f"composite report {path!r} is the inventory itself",
                "Name the report the command writes.",
                argument="artifacts",
            )
        reports.append({"component": report["component"], "variant": report.get("variant"), "path": path})
    keys = [(r["component"], r["variant"], r["path"]) for r in reports]
    if len(set(keys)) != len(keys):
        raise _bad(
            "a composite report (component, variant, path) is listed twice",
            "List each report once.",
            argument="artifacts",
        )
    return {"composite": {"inventory": inventory, "reports": reports}}


def artifact_paths(spec: dict[str, Any]) -> list[str]:
    """Every report path the command writes: ordinary artifacts and the reports of composite ones."""
    out: list[str] = []
    for artifact in spec["artifacts"]:
        if "composite" in artifact:
            out.extend(r["path"] for r in artifact["composite"]["reports"])
        else:
            out.append(artifact["path"])
    return list(dict.fromkeys(out))


def content_hash(spec: dict[str, Any]) -> str:
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def approval_mode(project: Project) -> str:
    """The project's ``approval_mode`` setting (stored by the daemon's project settings), default out_of_band."""
    row = exec_db(project.store).one("SELECT value FROM settings WHERE key = 'approval_mode'")
    mode = json.loads(row[0]) if row else "out_of_band"
    return mode if mode in APPROVAL_MODES else "out_of_band"


def approve_line(command_id: str) -> str:
    return f"coverage-mcp command approve {command_id}"


def register(project: Project, args: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Register (or find) the command ``args`` describe: (its record, whether it was new).

    Under ``attested`` mode ``human_approved: true`` with ``approved_by`` and
    ``approval_note`` is recorded as the approval (via ``attested``); under
    ``out_of_band`` the command stays pending whatever the agent says.
    """
    name = args.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or any(c in name for c in "\0\r\n"):
        raise _bad(
            "name must be a one-line name of at most 200 characters", "e.g. 'unit tests'", argument="name"
        )
    spec = canonical_spec(project, args)
    digest = content_hash(spec)
    command_id = "cmd-" + digest[:16]
    attested = args.get("human_approved") is True
    mode = approval_mode(project)
    given = (
        isinstance(args.get("approved_by"), str)
        and args["approved_by"].strip()
        and isinstance(args.get("approval_note"), str)
        and args["approval_note"].strip()
    )
    if attested and mode == "attested" and not given:
        raise _bad(
            "human_approved: true needs approved_by (who) and approval_note (what they approved)",
            "Name the person who approved this exact command and what they said.",
            argument="human_approved",
        )
    db = exec_db(project.store)
    now = dt.datetime.now(dt.UTC)
    with db.transaction() as con:
        found = con.execute("SELECT command_id FROM commands WHERE command_id = ?", [command_id]).fetchone()
        new = found is None
        if new:
            con.execute(
                "INSERT INTO commands VALUES (?, ?, ?, ?, ?)",
                [command_id, digest, name.strip(), json.dumps(spec), now],
            )
        if attested and mode == "attested" and _status(con, command_id) == "pending":
            _decide(
                con,
                command_id,
                "approved",
                args["approved_by"].strip(),
                "attested",
                args["approval_note"].strip(),
                now,
            )
    record = show_command(project, command_id)
    if attested and mode != "attested":
        record["note"] = (
            "human_approved was ignored: this project's approval_mode is out_of_band, so a person "
            "approves with the CLI or the dashboard"
        )
    return record, new


def _status(con: Any, command_id: str) -> str:
    row = con.execute(
        "SELECT decision FROM command_decisions WHERE command_id = ? ORDER BY seq DESC LIMIT 1", [command_id]
    ).fetchone()
    return "pending" if row is None else str(row[0])


def _decide(
    con: Any, command_id: str, decision: str, who: str, via: str, note: str | None, now: dt.datetime
) -> None:
    seq = con.execute(
        "SELECT coalesce(max(seq), 0) + 1 FROM command_decisions WHERE command_id = ?", [command_id]
    ).fetchone()[0]
    con.execute(
        "INSERT INTO command_decisions VALUES (?, ?, ?, ?, ?, ?, ?)",
        [command_id, seq, decision, who, via, note, now],
    )


_LIST_SQL = """
    SELECT c.command_id, c.name, c.content_hash, c.spec, c.registered_at,
           coalesce(d.decision, 'pending') AS status, d.decided_by, d.via, d.note, d.decided_at
    FROM commands c
    LEFT JOIN (SELECT * FROM command_decisions QUALIFY row_number() OVER (PARTITION BY command_id ORDER BY seq DESC) = 1) d
      USING (command_id)
"""


def _record(row: tuple[Any, ...], *, full: bool) -> dict[str, Any]:
    spec = json.loads(row[3])
    out: dict[str, Any] = {"id": row[0], "name": row[1], "status": row[5]}
    if full:
        out.update({"content_hash": row[2], **spec, "registered_at": row[4].isoformat()})
    else:
        out.update({"argv": spec["argv"], "args_policy": spec["args_policy"]})
    if row[5] == "pending":
        out["approve_with"] = approve_line(row[0])
    elif full:
        out["decision"] = {"by": row[6], "via": row[7], "note": row[8], "at": row[9].isoformat()}
    return out


def _check_status(status: str | None) -> None:
    if status is not None and status not in STATUSES:
        raise _bad(f"status must be one of {STATUSES}", "pending, approved or rejected", argument="status")


def list_commands(
    project: Project,
    status: str | None = None,
    *,
    limit: int = 200,
    offset: int = 0,
    brief: bool = False,
    statuses: tuple[str, ...] | None = None,
) -> list[dict[str, Any]]:
    """Commands, approved first then pending then rejected, newest first within each; ``status`` (or
    several ``statuses``) filters."""
    _check_status(status)
    wanted = [status] if status else list(statuses or ())
    sql = _LIST_SQL + (" WHERE list_contains(?, coalesce(d.decision, 'pending'))" if wanted else "")
    sql += (
        " ORDER BY CASE coalesce(d.decision, 'pending') WHEN 'approved' THEN 0 WHEN 'pending' THEN 1 ELSE 2 END,"
        " c.registered_at DESC, c.command_id LIMIT ? OFFSET ?"
    )
    params: list[Any] = ([wanted] if wanted else []) + [int(limit), int(offset)]
    return [_record(r, full=not brief) for r in exec_db(project.store).rows(sql, params)]


def count_commands(project: Project, statuses: tuple[str, ...]) -> int:
    row = exec_db(project.store).one(
        "SELECT count(*) FROM (" + _LIST_SQL + ") WHERE list_contains(?, status)", [list(statuses)]
    )
    return int(row[0]) if row else 0


def _load(project: Project, command_id: str) -> tuple[Any, ...]:
    if not isinstance(command_id, str) or not COMMAND_ID.match(command_id):
        raise _bad(
            f"{command_id!r} is not a command id",
            "Command ids look like cmd-0123456789abcdef (`coverage-mcp command list`).",
            argument="command_id",
        )
    row = exec_db(project.store).one(_LIST_SQL + " WHERE c.command_id = ?", [command_id])
    if row is None:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            f"no registered command {command_id!r} in this repository's store",
            "List them with `coverage-mcp command list` (or project_context).",
            {"command_id": command_id},
            Remedy(operation="project_context", arguments={}),
        )
    return row


def show_command(project: Project, command_id: str) -> dict[str, Any]:
    """One command: its full registration, status and decision history."""
    row = _load(project, command_id)
    record = _record(row, full=True)
    rows = exec_db(project.store).rows(
        "SELECT decision, decided_by, via, note, decided_at FROM command_decisions WHERE command_id = ? ORDER BY seq",
        [command_id],
    )
    record["environment"] = environment.describe(json.loads(row[3]))
    record["decisions"] = [
        {"decision": r[0], "by": r[1], "via": r[2], "note": r[3], "at": r[4].isoformat()} for r in rows
    ]
    return record


def spec_of(project: Project, command_id: str) -> tuple[dict[str, Any], str, str]:
    """(canonical spec, content hash, status) of a command."""
    row = _load(project, command_id)
    return json.loads(row[3]), str(row[2]), str(row[5])


def _decision(
    project: Project, command_id: str, decision: str, who: str, via: str, note: str | None
) -> dict[str, Any]:
    if via not in VIAS:
        raise _bad(f"via must be one of {VIAS}", "cli, dashboard or attested", argument="via")
    if not isinstance(who, str) or not who.strip() or len(who) > 200:
        raise _bad("who decided must be named (at most 200 characters)", "e.g. your user name", argument="by")
    _load(project, command_id)
    with exec_db(project.store).transaction() as con:
        if _status(con, command_id) != decision:
            _decide(con, command_id, decision, who.strip(), via, note, dt.datetime.now(dt.UTC))
    return show_command(project, command_id)


def approve(
    project: Project, command_id: str, *, approved_by: str, via: str, note: str | None = None
) -> dict[str, Any]:
    """Approve a registered command (a person's act: CLI, dashboard, or an attested registration)."""
    return _decision(project, command_id, "approved", approved_by, via, note)


def reject(
    project: Project, command_id: str, *, rejected_by: str, via: str, note: str | None = None
) -> dict[str, Any]:
    """Reject (or withdraw the approval of) a registered command; its queued runs stay queued but cannot start."""
    return _decision(project, command_id, "rejected", rejected_by, via, note)


def list_runs(
    project: Project, status: str | None = None, *, limit: int = 50, offset: int = 0
) -> list[dict[str, Any]]:
    """Runs, newest first (``queue.list_runs``; here too for callers that list commands and runs together)."""
    from .queue import list_runs as listed

    return listed(project, status, limit=limit, offset=offset)
