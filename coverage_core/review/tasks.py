"""``coverage_review``: one function per task, selected by ``task``.

Every task answers from stored detail only (no report is re-read, no test
run): it resolves ``measurement`` to snapshots, applies ``limits`` as one
budget over ``data`` and states its ``claim_status``. With nothing stored yet
the answer is ``not_measured`` and says how to get a measurement.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import CoverageError, ErrorCode
from .audit import audit
from .budget import Budget, size
from .call import Call
from .context import CLAIM_ORDER
from .change import change
from .history import history
from .incremental import incremental
from .insight import insight
from .listing import file, files, snapshots
from .named_tests import tests
from .select import Selection, select
from .source import source

Task = Callable[[Call, Selection, Budget], dict[str, Any]]

# Share of the budget each part of task=all gets, with and without a change part.
ALL_SHARES = {"change": 0.4, "insight": 0.35, "history": 0.25}
ALL_SHARES_NO_BASELINE = {"insight": 0.6, "history": 0.4}


def _part(call: Call, name: str, sel: Selection, budget: Budget, share: float) -> dict[str, Any]:
    part_budget = Budget(
        {**(call.args.get("limits") or {}),
         "max_words": max(1, int(budget.max_words * share)),
         "max_bytes": max(1, int(budget.max_bytes * share))},
    )
    if name != "change":
        return TASKS[name](call, sel, part_budget)
    # The page of task=all continues insight; the change part is one first page.
    sub = Call(call.project, call.con, {k: v for k, v in call.args.items() if k != "cursor"})
    sub.suite = call.suite
    try:
        return change(sub, sel, part_budget)
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
            ErrorCode.BASELINE_UNAVAILABLE, ErrorCode.NOT_FOUND, ErrorCode.INCOMPATIBLE_SNAPSHOTS,
        )
        if not (missing or error.code is ErrorCode.BUDGET_TOO_SMALL):
            raise
        notes.append(f"change omitted: {error.message}")
        shares = ALL_SHARES_NO_BASELINE
    for name in ("insight", "history"):
        parts[name] = _part(call, name, sel, budget, shares[name] * scale)
    data: dict[str, Any] = {"task": "all"}
    status, reasons = "supported", []
    for name, part in parts.items():
        data[name] = part["data"]
        part_status = data[name].pop("claim_status", "supported")
        part_reasons = data[name].pop("reasons", [])
        if name != "history":
            status = min(status, part_status, key=CLAIM_ORDER.index)
            reasons += [r for r in part_reasons if r not in reasons]
    data["claim_status"] = status
    data["reasons"] = notes + reasons
    return {"data": data, "page": parts["insight"]["page"]}


TASKS: dict[str, Task] = {
    "insight": insight,
    "change": change,
    "incremental": incremental,
    "history": history,
    "source": source,
    "tests": tests,
    "audit": audit,
    "all": review_all,
    "files": files,
    "file": file,
}
# Tasks that read no measurement (listings across snapshots).
UNSELECTED = {"snapshots": snapshots}
TASK_NAMES = (*TASKS, *UNSELECTED)


def coverage_review(call: Call) -> dict[str, Any]:
    task = call.args["task"]
    budget = Budget(call.args.get("limits"))
    if task in UNSELECTED:
        return UNSELECTED[task](call, budget)
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
    return TASKS[task](call, sel, budget)
