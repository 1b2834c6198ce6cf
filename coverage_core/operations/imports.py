"""The two imports: the agent's (a report inside the checkout) and the store owner's (any readable path)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import CoverageError, ErrorCode
from ..model import snapshot_to_dict
from ..parsers.opening import OpenedReport, check_path_text, open_report, open_within
from ..review import context
from ..review.call import Call
from . import composite_import


def coverage_import(call: Call) -> dict[str, Any]:
    """The agent's import: a report inside the checkout only, opened from the checkout's descriptor."""
    if composite_import.wants_composite(call.args):
        if "report_path" in call.args:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                "pass report_path (an ordinary snapshot) or inventory_path with reports "
                "(a composite), not both",
                "Import the ordinary report and build the composite in two calls.",
            )
        return composite_import.import_answer(call)
    if "report_path" not in call.args:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "coverage_import needs report_path (or inventory_path with reports)",
            'Pass the report\'s path inside the checkout, e.g. {"report_path": "coverage.json"}.',
        )
    root = call.project.checkout.worktree_path
    text = call.args["report_path"]
    check_path_text(text)
    raw = Path(text)
    try:
        path = (raw if raw.is_absolute() else root / raw).resolve()
    except (
        OSError,
        RuntimeError,
    ) as exc:  # a link swapped or looping while it is resolved (RuntimeError: 3.11)
        raise CoverageError(
            ErrorCode.REPORT_CHANGED,
            f"report_path {text!r} could not be resolved: it changed while it was being read ({exc})",
            "Import the report once nothing is moving or relinking it; pass its real path inside the checkout.",
            {"path": str(raw if raw.is_absolute() else root / raw)},
        ) from None
    if not path.is_relative_to(root):
        raise CoverageError(
            ErrorCode.PATH_OUTSIDE_CHECKOUT,
            f"report_path {text!r} is outside the checkout {root}",
            "Pass a report inside the checkout, relative to its root (e.g. 'coverage.json').",
            {"checkout_path": str(root)},
        )
    # Checked above by path, enforced below by descriptor: a directory swapped
    # for a link between the two makes the open fail, never read outside.
    return _ingest_answer(call, open_within(root, path), ())


def owner_import(call: Call) -> dict[str, Any]:
    """The store owner's import: any readable report path and path maps, so an ingest gives the same result
    with and without a daemon; the answer coverage_import gives (``call.progress`` hears each stage)."""
    if composite_import.wants_composite(call.args):
        # The owner's reports may lie anywhere it can read; the inventory stays inside the checkout.
        return composite_import.import_answer(call, inside_checkout=False)
    if "report_path" not in call.args:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "an import needs report_path (or inventory_path with reports)",
            "Pass the report's path.",
        )
    check_path_text(call.args["report_path"])
    # The owner's path, outside the checkout too; still opened once, without
    # blocking, regular files only, and a final link is not followed (the
    # CLI resolves its user's own links before sending the path).
    path = Path(call.args["report_path"]).expanduser().absolute()
    maps = [(old, new) for old, new in call.args.get("path_map", [])]
    return _ingest_answer(call, open_report(path, follow_symlinks=False), maps)


def _ingest_answer(call: Call, report: OpenedReport, path_map: Sequence[tuple[str, str]]) -> dict[str, Any]:
    args, project = call.args, call.project
    with report:
        if args.get("base_ref"):
            project.git.resolve(args["base_ref"])  # refuse an unknown base early
        snap = project.ingest(
            report,
            suite=args.get("suite", call.suite),
            format=args.get("format"),
            scope=args.get("scope", "complete"),
            commit=args.get("commit"),
            branch=args.get("branch"),
            path_map=path_map,
            progress=call.progress,
            require_mapped=True,
        )
    body = snapshot_to_dict(snap)
    body["base_ref"] = args.get("base_ref")
    call.suite = snap.suite
    return {"data": {"snapshot": body, "duplicate": snap.duplicate, **context.claim_for(call, snap)}}
