"""``coverage_import`` with ``inventory_path`` and ``reports``: build and store one composite snapshot.

An agent's import reads the inventory and the reports from inside the checkout
only (as the ordinary import does); the store owner's (the CLI) may name
reports anywhere it can read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..composite.build import ReportSpec, build, report_spec
from ..errors import CoverageError, ErrorCode
from ..parsers.opening import check_path_text
from ..review.call import Call
from ..review.composite_view import claim
from ..review.evidence import report_identity

COMPOSITE_ARGUMENTS = frozenset({"inventory_path", "reports"})


def wants_composite(args: dict[str, Any]) -> bool:
    return bool(COMPOSITE_ARGUMENTS & set(args))


def _within(root: Path, text: str, what: str) -> str:
    check_path_text(text)
    raw = Path(text)
    path = (raw if raw.is_absolute() else root / raw).resolve()
    if not path.is_relative_to(root.resolve()):
        raise CoverageError(
            ErrorCode.PATH_OUTSIDE_CHECKOUT,
            f"{what} {text!r} is outside the checkout {root}",
            "Pass files inside the checkout, relative to its root.",
            {"checkout_path": str(root), "path": text},
        )
    return str(path)


def import_answer(call: Call, *, inside_checkout: bool = True) -> dict[str, Any]:
    args = call.args
    extra = sorted(set(args) - COMPOSITE_ARGUMENTS)
    if "inventory_path" not in args or "reports" not in args or extra:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "a composite import takes inventory_path and reports ({component, variant?, path} or "
            "COMPONENT[:VARIANT]=PATH each) and nothing else"
            + (f"; drop {', '.join(extra)}" if extra else ""),
            "Pass report_path for an ordinary snapshot, or inventory_path with reports for a composite.",
            {"unexpected": extra},
        )
    root = Path(call.project.checkout.worktree_path)
    specs: list[ReportSpec] = []
    for item in args["reports"]:
        spec = report_spec(item)
        path = (
            _within(root, spec.path, "report")
            if inside_checkout
            else str(Path(spec.path).expanduser().absolute())
        )
        specs.append(ReportSpec(path, spec.component, spec.variant))
    inventory = args["inventory_path"]
    if inside_checkout:
        inventory = _within(root, inventory, "inventory_path")
    git = call.project.git
    record = build(
        call.project,
        inventory,
        specs,
        judge_identity=lambda report, mapping, data, path: (
            report_identity(git, report, mapping, data, path).missing
        ),
    )
    # Re-importing the same evidence answers the composite it made, as an ordinary import's duplicate does.
    body = {"composite": record.to_dict(blocking_limit=50), "duplicate": record.duplicate}
    return {"data": {**body, **claim(call, record)}}
