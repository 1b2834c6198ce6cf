"""CI gates over a change review: total and patch thresholds, a ratchet, a criteria expression.

``Summary.from_pages`` gathers the pages of a ``coverage_review(task="change",
representation="audit")`` answer (every file row with all twelve counts, the
ranges) into one record; ``evaluate`` turns the requested checks into
``Check`` results, each failure with a sentence a person can act on.

Criteria are expressions over the category names, e.g. the default
``UNC + LBC + UIC == 0``: integers, ``+ - *``, parentheses, comparisons
(``== != < <= > >=``) joined by ``and`` / ``or``. The text is parsed with
``ast`` and walked against that whitelist; nothing is ever evaluated as
Python. From a ``subset`` current run LBC is not evidence of a regression
(``not_observed``), so criteria and the ratchet take it as 0 and say so.
"""

from __future__ import annotations

import ast
import operator
import posixpath
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import attrs

from .. import headline as headlines
from ..display import percent
from ..errors import CoverageError, ErrorCode
from .categories import CATEGORIES

DEFAULT_CRITERIA = "UNC + LBC + UIC == 0"
MAX_CRITERIA_CHARS = 500
MAX_LISTED = 10  # offenders named per failed check

_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_ARITH: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
}


@attrs.frozen
class Summary:
    """A whole change answer: its fixed part and every page's file rows and ranges."""

    data: dict[str, Any]
    files: tuple[dict[str, Any], ...]
    ranges: tuple[dict[str, Any], ...]
    ranges_truncated: bool

    @classmethod
    def from_pages(cls, envelopes: Iterable[dict[str, Any]]) -> Summary:
        pages = [e["data"] for e in envelopes]
        first = {k: v for k, v in pages[0].items() if k not in ("files", "ranges", "ranges_truncated")}
        return cls(
            first,
            tuple(f for p in pages for f in p["files"]),
            tuple(r for p in pages for r in p["ranges"]),
            any(p["ranges_truncated"] for p in pages),
        )

    @property
    def subset(self) -> bool:
        scope: str = self.data["current"]["scope"]
        return scope == "subset"

    def evidence(self) -> dict[str, int]:
        """Category counts as gates read them (LBC is 0 from a subset run)."""
        counts = dict(self.data["categories"])
        if self.subset:
            counts["LBC"] = 0
        return counts


@attrs.frozen
class Check:
    name: str
    passed: bool
    detail: str


class Criteria:
    """A parsed criteria expression; ``holds(counts)`` evaluates it over category counts."""

    def __init__(self, text: str) -> None:
        if len(text) > MAX_CRITERIA_CHARS:
            raise _bad(text, f"it is longer than {MAX_CRITERIA_CHARS} characters")
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise _bad(text, f"it does not parse ({exc.msg} at column {exc.offset})") from None
        self.text = text.strip()
        self.names: list[str] = []
        self._root = tree.body
        self._check(self._root, boolean=True)

    def _check(self, node: ast.AST, *, boolean: bool) -> None:
        if boolean:
            if isinstance(node, ast.BoolOp) and isinstance(node.op, (ast.And, ast.Or)):
                for value in node.values:
                    self._check(value, boolean=True)
                return
            if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
                for operand in (node.left, *node.comparators):
                    self._check(operand, boolean=False)
                return
            raise _bad(self.text, "each part must be a comparison such as 'UNC == 0', joined by and / or")
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            self._check(node.left, boolean=False)
            self._check(node.right, boolean=False)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            self._check(node.operand, boolean=False)
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            pass
        elif isinstance(node, ast.Name) and node.id in CATEGORIES:
            if node.id not in self.names:
                self.names.append(node.id)
        elif isinstance(node, ast.Name):
            raise _bad(self.text, f"{node.id!r} is not a category (use {', '.join(CATEGORIES)})")
        else:
            raise _bad(
                self.text,
                f"{ast.unparse(node)!r} is not allowed (categories, integers, + - * and parentheses)",
            )

    def holds(self, counts: dict[str, int]) -> bool:
        return bool(self._eval(self._root, counts))

    def _eval(self, node: ast.AST, counts: dict[str, int]) -> int | bool:
        if isinstance(node, ast.BoolOp):
            values = (self._eval(v, counts) for v in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, counts)
            for op, right_node in zip(node.ops, node.comparators):
                right = self._eval(right_node, counts)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.BinOp):
            return _ARITH[type(node.op)](self._eval(node.left, counts), self._eval(node.right, counts))
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, counts)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Constant) and isinstance(node.value, int):  # _check admitted only ints
            return node.value
        assert isinstance(node, ast.Name)  # _check admitted only these nodes and category names
        return counts[node.id]


def _bad(text: str, why: str) -> CoverageError:
    return CoverageError(
        ErrorCode.INVALID_ARGUMENT,
        f"criteria {text!r} is not valid: {why}",
        f"Write comparisons over {', '.join(CATEGORIES)} with integers, + - *, parentheses, "
        f"== != < <= > >=, and / or; e.g. '{DEFAULT_CRITERIA}'.",
    )


def _threshold(name: str, what: str, hit: int, found: int, minimum: float, *, empty_passes: bool) -> Check:
    if not found:
        return Check(
            name,
            empty_passes,
            f"{what}: no executable lines to measure"
            + ("" if empty_passes else f", so it cannot reach {minimum:g}%"),
        )
    ok = Fraction(hit * 100, found) >= Fraction(str(minimum))
    verdict = "meets" if ok else "is under"
    return Check(name, ok, f"{what} {hit}/{found} ({percent(hit, found)}) {verdict} the minimum {minimum:g}%")


def _total(data: dict[str, Any], minimum: float, counter: str, precision: int) -> Check:
    """``fail_under_total``: by default the producing tool's own ``--fail-under`` on its headline
    (coverage.py's rounding at ``precision``); ``counter="lines"`` is the exact line total, another counter
    that counter's exact total."""
    current = data["current"]
    if counter == "lines" or (counter == "headline" and not current.get("headline")):
        hit, found = current["lines"]
        what = (
            "total line coverage"
            if counter == "lines"
            else "total line coverage (several snapshots: no tool total)"
        )
        return _threshold("total", what, hit, found, minimum, empty_passes=False)
    if counter != "headline":
        pair = (current.get("totals") or {}).get(counter)
        if pair is None:
            return Check("total", False, f"the current side has no {counter} counter to check")
        return _threshold("total", f"total {counter} coverage", pair[0], pair[1], minimum, empty_passes=False)
    head = headlines.Headline.from_dict(current["headline"])
    if not head.found:
        return Check(
            "total", False, f"total {head.counter}: nothing measured, so it cannot reach {minimum:g}%"
        )
    ok = not headlines.fails_under(head, minimum, precision)
    verdict = "meets" if ok else "is under"
    return Check(
        "total",
        ok,
        f"total coverage ({head.counter}, {head.rule.name}'s) {head.hit}/{head.found} "
        f"({headlines.shown_at(head, precision)}) {verdict} the minimum {minimum:g}%",
    )


def uncovered_growth(summary: Summary) -> dict[str, tuple[int, int]]:
    """(baseline, current) uncovered lines of every file and directory whose count changed."""
    lost = 0 if summary.subset else 1
    out: dict[str, list[int]] = {}
    for row in summary.files:
        c = row["lines"]
        before = c["UBC"] + c["GBC"] + c["EUB"] + c["DUB"]
        after = c["UBC"] + c["LBC"] * lost + c["UIC"] + c["UNC"]
        if before == after:
            continue
        path = row["path"]
        targets = [path]
        parent = posixpath.dirname(path)
        while True:
            targets.append((parent or ".") + "/")
            if not parent:
                break
            parent = posixpath.dirname(parent)
        for target in targets:
            pair = out.setdefault(target, [0, 0])
            pair[0] += before
            pair[1] += after
    return {k: (v[0], v[1]) for k, v in out.items()}


def evaluate(
    summary: Summary,
    *,
    fail_under_total: float | None = None,
    fail_under_patch: float | None = None,
    ratchet: bool = False,
    criteria: Criteria | None = None,
    counter: str = "headline",
    precision: int = 0,
) -> list[Check]:
    """The requested checks, in a fixed order; a check passes or names what failed."""
    checks: list[Check] = []
    data = summary.data
    if fail_under_total is not None:
        checks.append(_total(data, fail_under_total, counter, precision))
    if fail_under_patch is not None:
        p = data["patch"]
        checks.append(
            _threshold("patch", "patch coverage", p["hit"], p["found"], fail_under_patch, empty_passes=True)
        )
    if ratchet:
        grown = sorted(
            ((k, v) for k, v in uncovered_growth(summary).items() if v[1] > v[0]),
            key=lambda kv: (kv[0].endswith("/"), -(kv[1][1] - kv[1][0]), kv[0]),
        )
        if grown:
            listed = "; ".join(f"{k} {b} -> {a} (+{a - b})" for k, (b, a) in grown[:MAX_LISTED])
            more = f"; and {len(grown) - MAX_LISTED} more" if len(grown) > MAX_LISTED else ""
            checks.append(
                Check(
                    "ratchet",
                    False,
                    f"uncovered lines grew in {len(grown)} files or directories: {listed}{more}",
                )
            )
        else:
            checks.append(
                Check("ratchet", True, "no file or directory has more uncovered lines than the baseline")
            )
    if criteria is not None:
        counts = summary.evidence()
        ok = criteria.holds(counts)
        values = ", ".join(f"{n}={counts[n]}" for n in criteria.names)
        note = ""
        if summary.subset and "LBC" in criteria.names:
            seen = data["categories"].get("not_observed", 0)
            note = f" (LBC taken as 0: the current run is a subset; {seen} lines are not_observed)"
        checks.append(
            Check(
                "criteria",
                ok,
                f"criteria `{criteria.text}` {'holds' if ok else 'does not hold'}: {values}{note}",
            )
        )
    return checks
