"""Registered test commands: immutable, content-hashed, approved by a person.

A registration is canonical JSON of ``{argv, cwd, timeout_s, env, runners,
inherit, artifacts, args_policy}`` (and ``selector_roots`` when declared;
``environment`` owns what ``runners`` and ``inherit`` mean); its SHA-256 is the
content hash and ``cmd-`` plus its first 16 hex digits the command id, so
registering the same content again finds the same command. Its words hold no
control, format, bidi or invisible character (``words``), its paths lie in the
checkout with no link (``selectors``), and it is shown through one display
(``display``). An approval also binds the executable ``argv[0]`` resolves to
(``executable``), recorded with the decision and checked when a run starts. A change is a new registration. Status is the latest decision
(``approved`` / ``rejected``), ``pending`` before any; decisions are
append-only rows recording who, when and from where (``cli``, ``dashboard``,
``attested``).

Approval is never reachable from the MCP surface or with the client token:
``approve`` and ``reject`` run as the command_approve and command_reject rows,
which admit only the store's owner (the admin capability) and, to approve, a
dashboard session with its CSRF token. Only ``attested`` mode lets a
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

import attrs

from ..composite.build import report_spec
from ..errors import CoverageError, ErrorCode, Remedy
from ..ids import COMMAND_ID_PATTERN
from ..model import the_converter
from ..parsers import FORMATS
from ..project import Project
from ..storage import project_settings
from ..storage.exec_db import exec_db, reader
from ..vocabulary import COMMAND_STATUSES, SCOPES
from . import case_selectors, display, environment, words
from .executable import Executable, difference, resolve, search_path
from .records import (
    Command,
    CommandSpec,
    CompositeArtifact,
    CompositeReport,
    Decision,
    ReportArtifact,
    SpecArtifact,
    spec_json,
    spec_of_json,
)

converter = the_converter()  # the one converter (coverage_core.model), built when records are first needed

VIAS = ("cli", "dashboard", "attested")
ARGS_POLICIES = ("none", "selectors")
DEFAULT_TIMEOUT_S = 600
MAX_TIMEOUT_S = 24 * 3600
MAX_ARGV = 256
MAX_WORD = 4096
MAX_ENV = 64
MAX_ARTIFACTS = 16
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
COMMAND_ID = re.compile(COMMAND_ID_PATTERN)


def _bad(message: str, suggestion: str, **details: Any) -> CoverageError:
    return CoverageError(ErrorCode.INVALID_ARGUMENT, message, suggestion, details)


def _word(value: Any, what: str, *, multiline: bool = False) -> str:
    if not isinstance(value, str) or "\0" in value or len(value) > MAX_WORD:
        raise _bad(
            f"{what} must be a string without NUL of at most {MAX_WORD} characters",
            "Pass each word of the command as its own string.",
            argument=what,
        )
    return words.check(value, what, multiline=multiline)


def inside_checkout(root: Path, text: Any, what: str, *, allow_root: bool = False) -> str:
    """``text`` as a normalized path relative to the checkout ``root``; refused when it leaves it (absolute
    elsewhere, ``..`` past the root, through a link), when it goes through any symbolic link, or when it holds a
    refused character (``words``)."""
    _word(text, what)
    if not text or text.startswith("-"):
        raise _bad(
            f"{what} {words.quoted(text)} is not a path",
            "Pass a path relative to the checkout root.",
            argument=what,
        )
    return case_selectors.checkout_path(Path(os.path.realpath(root)), text, what, allow_root=allow_root)


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


def canonical_spec(project: Project, args: dict[str, Any]) -> CommandSpec:
    """The registration's canonical content from ``register_test_command``'s arguments (validated)."""
    root = project.checkout.worktree_path
    argv = args.get("argv")
    if not isinstance(argv, list) or not argv or len(argv) > MAX_ARGV:
        raise _bad(
            f"argv must be a list of 1 to {MAX_ARGV} words (never a shell string)",
            'e.g. ["python", "-m", "pytest", "--cov", "--cov-report=json"]',
            argument="argv",
        )
    argv_words = [_word(w, f"argv[{i}]", multiline=True) for i, w in enumerate(argv)]
    if not argv_words[0]:
        raise _bad("argv[0] (the program) is empty", "Name the program to run first.", argument="argv")
    if any(c.isspace() for c in argv_words[0]):
        split = argv_words[0].split()
        raise _bad(
            f"argv[0] {words.quoted(argv_words[0][:100])} contains whitespace: it looks like a shell string, and argv is "
            "never run through a shell",
            f"Split it into words: {json.dumps(split[:8] + argv[1:3])[:300]} "
            "(a program whose path has a space: name it through a link without one).",
            argument="argv",
        )
    cwd = inside_checkout(root, args.get("cwd", "."), "cwd", allow_root=True)
    if not (root / cwd).is_dir():
        raise _bad(
            f"cwd {words.quoted(cwd)} is not a directory of the checkout",
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
                f"env name {words.quoted(str(key)[:100])} is not allowed",
                "Use NAME=value names like PYTHONHASHSEED (COVERAGE_MCP_ names are the daemon's own).",
                argument="env",
            )
        words.check(key, "env name")
        _word(value, f"env {key}", multiline=True)
    artifacts_in = args.get("artifacts")
    if not isinstance(artifacts_in, list) or not artifacts_in or len(artifacts_in) > MAX_ARTIFACTS:
        raise _bad(
            f"artifacts must list 1 to {MAX_ARTIFACTS} reports the command writes",
            '[{"path": "coverage.json", "suite": "unit"}]',
            argument="artifacts",
        )
    artifacts: list[SpecArtifact] = []
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
        if not isinstance(suite, str) or not suite.strip() or len(suite) > 200:
            raise _bad("artifact suite must be a one-line name", "e.g. 'unit'", argument="artifacts")
        words.check(suite, "artifact suite")
        scope = item.get("scope", "complete")
        if scope not in SCOPES:
            raise _bad(f"artifact scope must be one of {SCOPES}", "complete or subset", argument="artifacts")
        artifacts.append(ReportArtifact(path, fmt, suite, scope))
    named = [a.inventory if isinstance(a, CompositeArtifact) else a.path for a in artifacts]
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
    roots = None
    if "selector_roots" in args:  # only when declared: registrations without it keep their content hash
        if policy != "selectors":
            raise _bad(
                "selector_roots bounds case arguments, and this command's args_policy is none",
                "Register it with args_policy selectors, or drop selector_roots.",
                argument="selector_roots",
            )
        roots = tuple(case_selectors.selector_roots(Path(os.path.realpath(root)), args["selector_roots"]))
    runners, inherit = environment.canonical(args, argv_words)  # what a run takes from its daemon's env
    return CommandSpec(
        argv=tuple(argv_words),
        cwd=cwd,
        timeout_s=timeout,
        env=dict(sorted(env.items())),
        runners=tuple(runners),
        inherit=tuple(inherit),
        artifacts=tuple(artifacts),
        args_policy=policy,
        selector_roots=roots,
    )


COMPOSITE_EXAMPLE = (
    '{"composite": {"inventory": "coverage-inventory.json", "reports": [{"component": "native", '
    '"variant": "fast", "path": "build/fast.json"}, {"component": "python", "path": "coverage.json"}]}}'
)
MAX_COMPOSITE_REPORTS = 64
_COMPONENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # an inventory's component and variant ids


def _composite(project: Project, item: dict[str, Any]) -> CompositeArtifact:
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
    reports: list[CompositeReport] = []
    for given in reports_in:
        # The spelling coverage_import takes is one here too: COMPONENT[:VARIANT]=PATH is the same report.
        report = _as_record(given)
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
        reports.append(CompositeReport(report["component"], report.get("variant"), path))
    keys = [(r.component, r.variant, r.path) for r in reports]
    if len(set(keys)) != len(keys):
        raise _bad(
            "a composite report (component, variant, path) is listed twice",
            "List each report once.",
            argument="artifacts",
        )
    return CompositeArtifact(inventory, tuple(reports))


def _as_record(report: Any) -> Any:
    """A composite report given as ``COMPONENT[:VARIANT]=PATH`` text, as its ``{component, variant?, path}``."""
    if not isinstance(report, str):
        return report
    spec = report_spec(report)
    record = {"path": spec.path}
    if spec.component is not None:
        record["component"] = spec.component
    if spec.variant is not None:
        record["variant"] = spec.variant
    return record


def content_hash(spec: CommandSpec) -> str:
    text = json.dumps(spec_json(spec), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def approval_mode(project: Project) -> str:
    """The project's ``approval_mode`` setting (``storage.project_settings``), default out_of_band."""
    db, key = exec_db(project.store), project_settings.APPROVAL.key
    with db.lock:
        return str(project_settings.read(db.con, [key])[key])


def approve_line(command_id: str) -> str:
    return f"coverage-mcp command approve {command_id}"


@attrs.frozen
class Registered:
    """What a registration did: the command (new or found), and whether an agent's ``human_approved`` was
    ignored (the project's approval_mode is out_of_band)."""

    command: Command
    new: bool
    attestation_ignored: bool


ATTESTATION_IGNORED = (
    "human_approved was ignored: this project's approval_mode is out_of_band, so a person approves with the CLI "
    "or the dashboard"
)


def register(project: Project, args: dict[str, Any]) -> Registered:
    """Register (or find) the command ``args`` describe.

    Under ``attested`` mode ``human_approved: true`` with ``approved_by`` and
    ``approval_note`` is recorded as the approval (via ``attested``); under
    ``out_of_band`` the command stays pending whatever the agent says.
    """
    name = args.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise _bad(
            "name must be a one-line name of at most 200 characters", "e.g. 'unit tests'", argument="name"
        )
    words.check(name, "name")
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
    if attested and mode == "attested" and given:
        words.check(args["approved_by"], "approved_by")
        words.check(args["approval_note"], "approval_note", multiline=True)
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
                [command_id, digest, name.strip(), json.dumps(spec_json(spec)), now],
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
                executable_now(project, spec),
            )
    return Registered(command(project, command_id), new, attested and mode != "attested")


def _status(con: Any, command_id: str) -> str:
    row = con.execute(
        "SELECT decision FROM command_decisions WHERE command_id = ? ORDER BY seq DESC LIMIT 1", [command_id]
    ).fetchone()
    return "pending" if row is None else str(row[0])


def _decide(
    con: Any,
    command_id: str,
    decision: str,
    who: str,
    via: str,
    note: str | None,
    now: dt.datetime,
    executable: Executable | None = None,
) -> None:
    seq = con.execute(
        "SELECT coalesce(max(seq), 0) + 1 FROM command_decisions WHERE command_id = ?", [command_id]
    ).fetchone()[0]
    con.execute(
        "INSERT INTO command_decisions (command_id, seq, decision, decided_by, via, note, decided_at, executable) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            command_id,
            seq,
            decision,
            who,
            via,
            note,
            now,
            None if executable is None else json.dumps(executable.as_dict()),
        ],
    )


def executable_now(project: Project, spec: CommandSpec, *, cached: bool = False) -> Executable:
    """What ``argv[0]`` resolves to now, as the run would resolve it (its PATH, its cwd), with its identity
    (``cached``: a content hash remembered for the same file status, for displays only)."""
    root = Path(os.path.realpath(project.checkout.worktree_path))
    return resolve(spec.argv[0], cwd=root / spec.cwd, path=search_path(spec), cached=cached)


def approved_executable(project: Project, command_id: str) -> Executable | None:
    """The executable the command's latest decision approved; None when it is not approved, or was approved
    before approvals recorded their executable (schema revision 9)."""
    row = exec_db(project.store).one(
        "SELECT decision, executable FROM command_decisions WHERE command_id = ? ORDER BY seq DESC LIMIT 1",
        [command_id],
    )
    if row is None or row[0] != "approved" or row[1] is None:
        return None
    return Executable.of(json.loads(row[1]))


def stored_problem(name: str, spec: CommandSpec) -> str | None:
    """Why a stored registration can no longer run: a character registration now refuses (it was stored
    before the rule), or None. Such a registration is shown escaped and must be registered again."""
    parts: list[tuple[str, str, bool]] = [("name", name, False), ("cwd", spec.cwd, False)]
    parts += [(f"argv[{i}]", w, True) for i, w in enumerate(spec.argv)]
    for key, value in spec.env.items():
        parts += [("env name", key, False), (f"env {key}", value, True)]
    parts += [("artifact path", p, False) for p in spec.artifact_paths()]
    for a in spec.artifacts:
        if isinstance(a, CompositeArtifact):
            parts.append(("composite inventory", a.inventory, False))
        else:
            parts.append(("artifact suite", a.suite, False))
    parts += [("selector root", r, False) for r in spec.selector_roots or ()]
    for what, text, multiline in parts:
        found = words.refused_char(text, multiline=multiline)
        if found is not None:
            return f"its {what} {words.quoted(text[:200])} holds {found}, which registrations now refuse"
    return None


def not_runnable(command_id: str, problem: str) -> CoverageError:
    """The error for a stored registration that holds now-refused characters."""
    return CoverageError(
        ErrorCode.NOT_APPROVED,
        f"command {command_id} cannot be approved or run: {problem}; register it again",
        "Register the command again in plain text (register_test_command) and have a person approve the new "
        "registration.",
        {"command_id": command_id, "reason": "register_again"},
        Remedy(operation="register_test_command", arguments={}),
    )


_LIST_SQL = """
    SELECT c.command_id, c.name, c.content_hash, c.spec, c.registered_at,
           coalesce(d.decision, 'pending') AS status, d.decided_by, d.via, d.note, d.decided_at
    FROM commands c
    LEFT JOIN (SELECT * FROM command_decisions QUALIFY row_number() OVER (PARTITION BY command_id ORDER BY seq DESC) = 1) d
      USING (command_id)
"""


def _command(row: tuple[Any, ...]) -> Command:
    """A command record from a ``_LIST_SQL`` row."""
    latest = None if row[6] is None else Decision(row[5], row[6], row[7], row[8], row[9])
    return Command(row[0], row[1], row[2], spec_of_json(json.loads(row[3])), row[4], row[5], latest)


def view(command: Command, *, full: bool) -> dict[str, Any]:
    """A command's JSON view: brief (a listing's item) or ``full`` (its registration, decision, display)."""
    spec = spec_json(command.spec)
    out: dict[str, Any] = {"id": command.id, "name": command.name, "status": command.status}
    if full:
        out.update(
            {"content_hash": command.content_hash, **spec, "registered_at": command.registered_at.isoformat()}
        )
    else:
        out.update({"argv": spec["argv"], "args_policy": spec["args_policy"]})
    if command.status == "pending":
        out["approve_with"] = approve_line(command.id)
    elif full and command.decision is not None:
        latest = converter.unstructure(command.decision)
        del latest["decision"]  # the status says it
        out["decision"] = latest
    if full:
        problem = stored_problem(command.name, command.spec)
        if problem is not None:
            out["not_runnable"] = problem + "; register it again"
        out["display"] = display.registration_lines(out)
    return out


def _check_status(status: str | None) -> None:
    if status is not None and status not in COMMAND_STATUSES:
        raise _bad(
            f"status must be one of {COMMAND_STATUSES}", "pending, approved or rejected", argument="status"
        )


def list_commands(
    project: Project,
    status: str | None = None,
    *,
    limit: int = 200,
    offset: int = 0,
    brief: bool = False,
    statuses: tuple[str, ...] | None = None,
    con: Any = None,
) -> list[dict[str, Any]]:
    """Commands, approved first then pending then rejected, newest first within each; ``status`` (or
    several ``statuses``) filters. Read on ``con`` when given (an answer's connection)."""
    _check_status(status)
    wanted = [status] if status else list(statuses or ())
    sql = _LIST_SQL + (" WHERE list_contains(?, coalesce(d.decision, 'pending'))" if wanted else "")
    sql += (
        " ORDER BY CASE coalesce(d.decision, 'pending') WHEN 'approved' THEN 0 WHEN 'pending' THEN 1 ELSE 2 END,"
        " c.registered_at DESC, c.command_id LIMIT ? OFFSET ?"
    )
    params: list[Any] = ([wanted] if wanted else []) + [int(limit), int(offset)]
    return [view(_command(r), full=not brief) for r in reader(project.store, con).rows(sql, params)]


def _load(project: Project, command_id: str) -> tuple[Any, ...]:
    if not isinstance(command_id, str) or not COMMAND_ID.match(command_id):
        error = _bad(
            f"{command_id!r} is not a command id",
            "Command ids look like cmd-0123456789abcdef; the project's context lists the registered ones.",
            argument="command_id",
        )
        error.remedy = Remedy(operation="project_context", arguments={})
        raise error
    row = exec_db(project.store).one(_LIST_SQL + " WHERE c.command_id = ?", [command_id])
    if row is None:
        raise CoverageError(
            ErrorCode.NOT_FOUND,
            f"no registered command {command_id!r} in this repository's store",
            "List the registered commands and use one of their ids.",
            {"command_id": command_id},
            Remedy(operation="project_context", arguments={}),
        )
    return row


def command(project: Project, command_id: str) -> Command:
    """One registered command (``not_found`` when none has this id)."""
    return _command(_load(project, command_id))


def decisions(project: Project, command_id: str) -> list[Decision]:
    """A command's decisions, oldest first."""
    return [
        Decision(*r)
        for r in exec_db(project.store).rows(
            "SELECT decision, decided_by, via, note, decided_at FROM command_decisions WHERE command_id = ? "
            "ORDER BY seq",
            [command_id],
        )
    ]


def show_command(project: Project, command_id: str) -> dict[str, Any]:
    """One command's full JSON view: its registration, status, decision history, its executable (the approved
    one, or what argv[0] resolves to now while it waits for a decision) and its ``display`` lines."""
    found = command(project, command_id)
    record = view(found, full=True)
    record["environment"] = environment.describe(found.spec)
    record["decisions"] = converter.unstructure(decisions(project, command_id))
    approved = approved_executable(project, command_id) if found.status == "approved" else None
    if approved is not None:
        record["executable"] = {**approved.as_dict(), "approved": True}
    else:
        try:
            now = executable_now(project, found.spec, cached=True)
            record["executable"] = {**now.as_dict(), "approved": False}
        except CoverageError as error:
            record["executable"] = {"error": error.message, "approved": False}
    record["display"] = display.registration_lines(record)
    return record


def show_name(project: Project, command_id: str) -> str:
    """A command's registered name."""
    return str(_load(project, command_id)[1])


def runnable_executable(
    project: Project, command_id: str, spec: CommandSpec, *, cached: bool = False
) -> Executable:
    """The approved executable of an approved command, resolved now, the one its run spawns; ``not_approved``
    when the command cannot run now: its stored registration holds now-refused characters, its approval
    predates the executable's record, or argv[0] no longer resolves to the approved executable. ``cached``:
    for run_test's early answer; the run's start hashes the file afresh."""
    name = show_name(project, command_id)
    problem = stored_problem(name, spec)
    if problem is not None:
        raise not_runnable(command_id, problem)
    approved = approved_executable(project, command_id)
    again = (
        f"Have a person check it and run `{approve_line(command_id)}` again (it records the executable "
        "argv[0] resolves to), then retry."
    )
    details = {"command_id": command_id, "approve_with": approve_line(command_id)}
    if approved is None:
        raise CoverageError(
            ErrorCode.NOT_APPROVED,
            f"command {command_id} was approved before approvals recorded the executable they bind",
            again,
            details,
        )
    try:
        now = executable_now(project, spec, cached=cached)
    except CoverageError as error:
        raise CoverageError(
            ErrorCode.NOT_APPROVED, f"command {command_id}: {error.message}", again, details
        ) from None
    changed = difference(approved, now)
    if changed is not None:
        raise CoverageError(
            ErrorCode.NOT_APPROVED,
            f"command {command_id}'s executable is not the approved one: {changed}",
            again,
            details,
        )
    return now


def spec_of(project: Project, command_id: str) -> tuple[CommandSpec, str, str]:
    """(canonical spec, content hash, status) of a command."""
    found = command(project, command_id)
    return found.spec, found.content_hash, found.status


def _decision(
    project: Project, command_id: str, decision: str, who: str, via: str, note: str | None
) -> dict[str, Any]:
    if via not in VIAS:
        raise _bad(f"via must be one of {VIAS}", "cli, dashboard or attested", argument="via")
    if not isinstance(who, str) or not who.strip() or len(who) > 200:
        raise _bad("who decided must be named (at most 200 characters)", "e.g. your user name", argument="by")
    words.check(who, "who decided")
    if note is not None:
        words.check(note, "note", multiline=True)
    found = command(project, command_id)
    executable = None
    if decision == "approved":
        problem = stored_problem(found.name, found.spec)
        if problem is not None:
            raise not_runnable(command_id, problem)
        executable = executable_now(project, found.spec)
    with exec_db(project.store).transaction() as con:
        # Approving again records the executable again (it changed, or the approval predates its record).
        if _status(con, command_id) != decision or (
            executable is not None and approved_executable(project, command_id) != executable
        ):
            _decide(con, command_id, decision, who.strip(), via, note, dt.datetime.now(dt.UTC), executable)
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
