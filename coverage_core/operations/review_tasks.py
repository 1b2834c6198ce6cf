"""``coverage_review``: one function per task, selected by ``task``.

Every task answers from stored detail only (no report is re-read, no test
run): it resolves ``measurement`` to snapshots, applies ``limits`` as one
budget over ``data`` and states its ``claim_status``. With nothing stored yet
the answer is ``not_measured`` and says how to get a measurement.

Each task's record (``review_task_table``) declares, once, which arguments
it reads. Any other argument is refused before dispatch (``invalid_argument`` naming the tasks
that read it), never silently dropped; so are ``lines``/``ranges`` without
``file``, and a line range that starts past the last line of the file at the
snapshot's commit (it names no line; a range that runs past the end is the
file's lines within it).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

from ..errors import CoverageError, ErrorCode
from ..review.budget import Budget, size
from ..review.call import Call
from ..review.selection import Selection, line_range, select
from ..vocabulary import CLAIM_ORDER
from .review_task_table import ARGUMENTS, BY_NAME, NEEDS, TASK_NAMES, tasks_using

Handler = Callable[[Call, Selection, Budget], dict[str, Any]]

# Share of the budget each part of task=all gets, with and without a change part.
ALL_SHARES = {"change": 0.4, "insight": 0.35, "history": 0.25}
ALL_SHARES_NO_BASELINE = {"insight": 0.6, "history": 0.4}


def _part(call: Call, name: str, sel: Selection, budget: Budget, share: float) -> dict[str, Any]:
    """One part under its share of the budget. A part too small for its share fails with what the whole
    budget needs for that share to hold it (the remedy of task=all is a budget, not a part's)."""
    try:
        return _run_part(call, name, sel, budget, share)
    except CoverageError as error:
        if error.code is not ErrorCode.BUDGET_TOO_SMALL or "needed_words" not in error.details:
            raise
        # At a larger budget the change part may fit and take its share: the part's smallest share counts.
        least = min(
            share, ALL_SHARES[name] * share / max(ALL_SHARES[name], ALL_SHARES_NO_BASELINE.get(name, 0))
        )
        need = error.details
        raise budget.too_small(
            max(budget.max_words, math.ceil((need["needed_words"] + 1) / least)),
            max(budget.max_bytes, math.ceil((need["needed_bytes"] + 1) / least)),
        ) from None


def _run_part(call: Call, name: str, sel: Selection, budget: Budget, share: float) -> dict[str, Any]:
    part_budget = Budget(
        {
            **(call.args.get("limits") or {}),
            "max_words": max(1, int(budget.max_words * share)),
            "max_bytes": max(1, int(budget.max_bytes * share)),
        },
    )
    if name == "insight":
        return handler("insight")(call, sel, part_budget)
    # The page of task=all continues insight; the other parts are first pages
    # (their page says what is left, continued by the task itself).
    sub = Call(call.project, call.con, {k: v for k, v in call.args.items() if k != "cursor"})
    sub.suite = call.suite
    try:
        return handler(name)(sub, sel, part_budget)
    finally:
        call.rows_scanned += sub.rows_scanned


def review_all(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    """change (when a baseline resolves), insight and history under one budget.

    The parts share the budget; the wrapper and the merged reasons are counted
    too, so the parts are shrunk until the whole ``data`` fits.
    """
    scale = 1.0
    for _ in range(4):
        result = _assemble(call, sel, budget, scale)
        words, size_bytes = size(result["data"])
        if words <= budget.max_words and size_bytes <= budget.max_bytes:
            return result
        scale *= 0.95 * min(budget.max_words / words, budget.max_bytes / size_bytes)
    raise budget.too_small(words, size_bytes)


def _assemble(call: Call, sel: Selection, budget: Budget, scale: float) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    notes: list[str] = []
    try:
        parts["change"] = _part(call, "change", sel, budget, ALL_SHARES["change"] * scale)
        shares = ALL_SHARES
    except CoverageError as error:
        # Without an explicit baseline, a missing one only drops the change part;
        # so does a budget too small for it (the note says what it would need).
        missing = "baseline" not in call.args and error.code in (
            ErrorCode.BASELINE_UNAVAILABLE,
            ErrorCode.NOT_FOUND,
            ErrorCode.INCOMPATIBLE_SNAPSHOTS,
        )
        if not (missing or error.code is ErrorCode.BUDGET_TOO_SMALL):
            raise
        notes.append(f"change omitted: {error.message}")
        shares = ALL_SHARES_NO_BASELINE
    # Every part is measured before a failure is raised: the need is the largest, so its remedy answers.
    short: list[CoverageError] = []
    for name in ("insight", "history"):
        try:
            parts[name] = _part(call, name, sel, budget, shares[name] * scale)
        except CoverageError as error:
            if error.code is not ErrorCode.BUDGET_TOO_SMALL:
                raise
            short.append(error)
    if short:
        raise budget.too_small(
            max(e.details["needed_words"] for e in short), max(e.details["needed_bytes"] for e in short)
        )
    data: dict[str, Any] = {"task": "all"}
    status, reasons, codes = "supported", [], []
    more: dict[str, Any] = {}
    for name, part in parts.items():
        # Each part keeps its own claim_status; its reasons join the answer's (once each),
        # and the answer claims no more than its weakest part.
        data[name] = part["data"]
        part_status = data[name].get("claim_status", "supported")
        part_reasons = data[name].pop("reasons", [])
        status = min(status, part_status, key=CLAIM_ORDER.index)
        reasons += [r for r in part_reasons if r not in reasons]
        codes += [c for c in data[name].get("reason_codes", []) if c not in codes]
        if name != "insight" and (part.get("page") or {}).get("next_cursor"):
            more[name] = True  # task=<name> with the same measurement continues it
    data["claim_status"] = status
    data["reasons"] = notes + reasons
    if codes:  # what a caller should act on is said at the top, as each part says it
        data["reason_codes"] = codes
    page = dict(parts["insight"]["page"])
    if more:
        page["parts_truncated"] = more
    return {"data": data, "page": page}


# Each task's handler by its record's name, as "module:function" (coverage_core.review's modules): a task's
# module is imported when the task is first asked, so a process that answers one task (a CLI read) imports
# that task's modules, not every task's (``handler`` resolves; the suite resolves every one).
TASKS: dict[str, str] = {
    "insight": "insight:insight",
    "change": "change:change",
    "incremental": "incremental:incremental",
    "history": "history:history",
    "source": "annotated_source:source",
    "tests": "named_tests:tests",
    "audit": "audit:audit",
    "all": "-:review_all",  # this module's own
    "files": "listing:files",
    "file": "listing:file",
}
# Tasks that read no measurement (listings across snapshots).
UNSELECTED = {"snapshots": "listing:snapshots"}
assert set(TASKS) == {n for n in TASK_NAMES if BY_NAME[n].measured}
assert set(UNSELECTED) == {n for n in TASK_NAMES if not BY_NAME[n].measured}


def _review(module: str) -> Any:
    """``coverage_core.review.<module>``, imported on first use."""
    return importlib.import_module(f"coverage_core.review.{module}")


def handler(task: str) -> Callable[..., dict[str, Any]]:
    """The handler of ``task`` (measured ones take a call, a selection and a budget; ``snapshots`` a call and a
    budget), its module imported on first use."""
    module, _, name = (TASKS.get(task) or UNSELECTED[task]).partition(":")
    found: Callable[..., dict[str, Any]] = (
        globals()[name] if module == "-" else getattr(_review(module), name)
    )
    return found


def check_arguments(args: dict[str, Any]) -> None:
    """Refuse what ``task`` would not read: an unused argument, or one missing what it needs."""
    task = args["task"]
    for name in args:
        if name == "task" or name in ARGUMENTS[task]:
            continue
        users = tasks_using(name)
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"task={task} does not use {name}; "
            + (f"{name} is read by task " + ", ".join(users) if users else f"no task reads {name}"),
            f"Drop {name}, or ask task " + " or ".join(users) + " instead." if users else f"Drop {name}.",
            {"argument": name, "task": task, "used_by": users},
        )
    # What needs no store is refused before any store work: a baseline naming no side, an empty line
    # range, task=file without its file.
    if isinstance(args.get("baseline"), dict):
        _review("baseline").check_spec(args["baseline"])
    for text in [args.get("lines"), *(args.get("ranges") or [])]:
        line_range(text)
    for name, needed in NEEDS.items():
        if name in args and needed not in args:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"{name} needs {needed}: line numbers are asked of one file",
                f"Name the {needed} (repository-relative) together with the {name}.",
                {"argument": name, "needs": needed},
            )
    if task == "file" and not args.get("file"):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "task=file needs file",
            "Name the file: a repository-relative path as the files listing shows it.",
            {"argument": "file"},
        )


def _check_lines_in_file(call: Call, sel: Selection) -> None:
    """A range starting past the file's last line names no line: refused.

    The file is the text the snapshot measured (a dirty tree's may be longer or
    shorter than the commit's), as task=source shows it.
    """
    path, commit = call.args.get("file"), sel.primary.commit
    texts = [t for t in [call.args.get("lines"), *(call.args.get("ranges") or [])] if t]
    if not texts or not path:
        return
    lines = _review("annotated_source").text_of(call, sel, path)
    if lines is None:
        return  # neither the measured text nor git has the file: the task says so in its claim
    for text in texts:
        asked = line_range(text)
        assert asked is not None  # texts are the non-empty ones
        start = asked[0]
        if start > len(lines):
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"lines {text} start past the end of {path}: it has {len(lines)} lines as measured",
                f"Ask for lines within 1-{len(lines)}.",
                {"argument": "lines", "file_lines": len(lines), "commit": commit},
            )


def coverage_review(call: Call) -> dict[str, Any]:
    task = call.args["task"]
    check_arguments(call.args)
    budget = Budget(call.args.get("limits"))
    if task in UNSELECTED:
        return handler(task)(call, budget)
    composite_review = _review("composite_view")
    if composite_review.wants_composite(call.args):
        answer: dict[str, Any] = composite_review.review(call, budget)
        return answer
    sel = select(call)
    if sel is None:
        return {
            "data": {
                "task": task,
                "claim_status": "not_measured",
                "reasons": [f"no snapshot of suite {call.suite!r} is stored for this repository"],
                "next": "coverage_import a coverage report of this checkout (e.g. coverage.json, lcov.info)",
            },
            "page": None,
        }
    _check_lines_in_file(call, sel)
    return handler(task)(call, sel, budget)
