"""coverage_review: one function per task, selected by ``task``."""

from __future__ import annotations

from typing import Any

from ..errors import CoverageError, ErrorCode
from .call import Call

TASKS: dict[str, Any] = {name: None for name in ("insight", "history", "source", "tests", "audit", "all")}


def coverage_review(call: Call) -> dict[str, Any]:
    task = TASKS[call.args["task"]]
    if task is None:
        raise CoverageError(ErrorCode.NOT_SUPPORTED, f"task {call.args['task']!r} is being built", "Use another task.")
    return task(call)
