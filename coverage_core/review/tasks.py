"""``coverage_review``: one function per task, selected by ``task``.

Every task answers from stored detail only (no report is re-read, no test
run): it resolves ``measurement`` to snapshots, applies ``limits`` as one
budget over ``data`` and states its ``claim_status``. With nothing stored yet
the answer is ``not_measured`` and says how to get a measurement.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .audit import audit
from .budget import Budget
from .call import Call
from .history import history
from .insight import insight
from .named_tests import tests
from .select import Selection, select
from .source import source

Task = Callable[[Call, Selection, Budget], dict[str, Any]]

# Share of the budget each part of task=all gets.
ALL_SHARES = {"insight": 0.6, "history": 0.4}


def review_all(call: Call, sel: Selection, budget: Budget) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    for name, share in ALL_SHARES.items():
        part_budget = Budget(
            {**(call.args.get("limits") or {}),
             "max_words": max(40, int(budget.max_words * share)),
             "max_bytes": max(512, int(budget.max_bytes * share))},
        )
        parts[name] = TASKS[name](call, sel, part_budget)
    data = {
        "task": "all",
        "insight": parts["insight"]["data"],
        "history": parts["history"]["data"],
        "claim_status": parts["insight"]["data"]["claim_status"],
        "reasons": parts["insight"]["data"]["reasons"],
    }
    for part in ("insight", "history"):
        data[part].pop("claim_status", None)
        data[part].pop("reasons", None)
    return {"data": data, "page": parts["insight"]["page"]}


TASKS: dict[str, Task] = {
    "insight": insight,
    "history": history,
    "source": source,
    "tests": tests,
    "audit": audit,
    "all": review_all,
}


def coverage_review(call: Call) -> dict[str, Any]:
    task = call.args["task"]
    budget = Budget(call.args.get("limits"))
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
