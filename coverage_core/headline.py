"""The headline: the one figure a snapshot's producing tool prints, computed and rounded as that tool does.

One rule per format and dialect (``RULES``; the README's table "Whose headline"
is this table in prose). A rule names the counters summed into the headline
(coverage.py adds statements and branches when it measured branches), how the
tool rounds the percentage it prints, and how its own ``--fail-under`` (or
check) compares a total with a minimum. Counts stay exact integers; a
percentage is made only here, for display, by the tool's rule.

The display rules, each as its tool prints a total:
- coverage.py: ``100 * hit / found`` as a float, rounded to ``precision``
  decimals, but never shown as 0 or 100 unless exact (``display_covered``);
  ``--fail-under`` fails when ``round(total, precision) < minimum``, and a
  minimum of 100 only passes an exact 100.
- lcov: one decimal, never 0.0 or 100.0 unless exact (``lcov --summary``).
- gcovr: one decimal, at most 99.9 unless everything is covered.
- Istanbul (nyc, c8): floored to two decimals, printed as a JavaScript number
  (``98.47``, ``88.8``, ``100``); ``check-coverage`` compares that figure.
- llvm-cov: two decimals (``llvm-cov report``'s TOTAL row).
- Go: one decimal (``go test -cover``).
- JaCoCo: a whole percent, rounded down (the HTML report's Cov. column);
  ``jacoco:check``'s default counter is instructions, which is what we keep.
- regions-v1 (ours) and anything else: two decimals, exact, never 0 or 100
  unless exact (``display.percent``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import attrs

from .display import percent as exact_percent

if TYPE_CHECKING:
    from .report import Counter


@attrs.frozen
class Rule:
    """How one producing tool computes and prints its headline."""

    name: str  # the dialect, e.g. "coverage.py JSON"
    counters: tuple[str, ...]  # summed into the headline, in this order
    style: str  # display and fail-under rule: a key of _STYLES
    formula: str  # for the docs
    rounding: str  # for the docs


@attrs.frozen
class Headline:
    """A snapshot's (or a file's) headline: exact counts, the counters they sum, the rule that prints them."""

    counter: str  # "statements+branches", "lines", "instructions", ...
    found: int
    hit: int
    rule: Rule

    @property
    def percent(self) -> str:
        return display(self.rule.style, self.hit, self.found)

    def to_dict(self) -> dict[str, Any]:
        return {
            "counter": self.counter,
            "hit": self.hit,
            "found": self.found,
            "percent": self.percent,
            "rule": self.rule.name,
        }

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> Headline:
        """The record of ``to_dict``'s shape (a gate reads the current side's headline from the answer)."""
        return cls(
            str(body["counter"]), int(body["found"]), int(body["hit"]), BY_NAME.get(body["rule"], LINES_RULE)
        )


_CPY_FORMULA = "(statements + branches covered) / (statements + branches) with branch data, else statements"
_CPY_ROUNDING = (
    "round(total, precision); never 0 or 100 unless exact; --fail-under: round(total, precision) < P"
)

# (format, producing tool or None for any) -> rule; the first match wins.
RULES: dict[tuple[str, str | None], Rule] = {
    ("coveragepy", None): Rule(
        "coverage.py JSON", ("statements", "branches"), "coveragepy", _CPY_FORMULA, _CPY_ROUNDING
    ),
    ("cobertura", "coverage.py"): Rule(
        "coverage.py Cobertura", ("lines", "branches"), "coveragepy", _CPY_FORMULA, _CPY_ROUNDING
    ),
    ("cobertura", "gcovr"): Rule(
        "gcovr Cobertura",
        ("lines",),
        "gcovr",
        "lines (root lines-covered / lines-valid)",
        "one decimal, at most 99.9 unless all covered",
    ),
    ("cobertura", None): Rule(
        "Cobertura", ("lines",), "exact", "lines (root line-rate)", "two decimals, exact"
    ),
    ("lcov", None): Rule(
        "LCOV",
        ("lines",),
        "lcov",
        "lines (LH / LF, records merged per file)",
        "one decimal, never 0.0 or 100.0 unless exact",
    ),
    ("istanbul", None): Rule(
        "Istanbul (nyc, c8)",
        ("lines",),
        "istanbul",
        "lines; statements, branches and functions each by name",
        "floored to two decimals",
    ),
    ("llvm", None): Rule(
        "llvm-cov",
        ("lines",),
        "llvm",
        "lines of the TOTAL row; regions, functions, branches by name",
        "two decimals",
    ),
    ("jacoco", None): Rule(
        "JaCoCo",
        ("instructions",),
        "jacoco",
        "instructions (jacoco:check's default counter)",
        "whole percent, rounded down",
    ),
    ("go", None): Rule(
        "Go coverprofile", ("statements",), "go", "statements (identical blocks merged)", "one decimal"
    ),
    ("regions-v1", None): Rule("regions-v1", ("regions",), "exact", "regions", "two decimals, exact"),
}
COMPOSITE_RULE = Rule(
    "composite", ("regions",), "exact", "code and branch regions together", "two decimals, exact"
)
LINES_RULE = Rule("lines", ("lines",), "exact", "lines", "two decimals, exact")
BY_NAME = {r.name: r for r in (*RULES.values(), COMPOSITE_RULE, LINES_RULE)}


def rule_for(fmt: str, tool: str | None) -> Rule:
    """The rule of a format and its producing tool (the dialect of a Cobertura report)."""
    return RULES.get((fmt, tool)) or RULES.get((fmt, None)) or LINES_RULE


def compute(rule: Rule, totals: Mapping[str, Counter]) -> Headline | None:
    """The headline of ``totals`` by ``rule``; None when the report has none of its counters."""
    if rule.counters[0] not in totals:
        return None
    present = [c for c in rule.counters if c in totals]
    return Headline(
        "+".join(present),
        sum(totals[c].found for c in present),
        sum(totals[c].hit for c in present),
        rule,
    )


def of(fmt: str, tool: str | None, totals: Mapping[str, Counter]) -> Headline | None:
    """A snapshot's headline, from its format, producing tool and totals."""
    return compute(rule_for(fmt, tool), totals)


# -- display ------------------------------------------------------------------------------------------


def _coveragepy(hit: int, found: int, precision: int = 2) -> str:
    # coverage.py's display_covered: a total near 0 or 100 shows one step inwards, else round().
    pc = 100.0 * hit / found
    near0 = 1.0 / 10**precision
    if 0 < pc < near0:
        pc = near0
    elif 100.0 - near0 < pc < 100:
        pc = 100.0 - near0
    else:
        pc = round(pc, precision)
    return f"{pc:.{precision}f}%"


def _lcov(hit: int, found: int) -> str:
    # lcov prints sprintf("%.1f") and then moves an inexact 0.0 or 100.0 one step inwards.
    text = f"{hit * 100 / found:.1f}"
    if float(text) == 0 and hit > 0:
        text = "0.1"
    elif float(text) == 100 and hit != found:
        text = "99.9"
    return text + "%"


def _gcovr_value(hit: int, found: int) -> float:
    return 100.0 if hit == found else min(99.9, round(100.0 * hit / found, 1))


def _istanbul_units(hit: int, found: int) -> int:
    return (10000 * hit) // found  # hundredths of a percent, floored


def _istanbul(hit: int, found: int) -> str:
    whole, frac = divmod(_istanbul_units(hit, found), 100)
    text = f"{whole}.{frac:02d}".rstrip("0").rstrip(".")  # a JavaScript number's text
    return text + "%"


_STYLES: dict[str, Callable[[int, int], str]] = {
    "coveragepy": _coveragepy,
    "lcov": _lcov,
    "gcovr": lambda h, f: f"{_gcovr_value(h, f):.1f}%",
    "istanbul": _istanbul,
    "llvm": lambda h, f: f"{100.0 * h / f:.2f}%",
    "go": lambda h, f: f"{100.0 * h / f:.1f}%",
    "jacoco": lambda h, f: f"{(100 * h) // f}%",
    "exact": lambda h, f: exact_percent(h, f),
}


def display(style: str, hit: int, found: int) -> str:
    """``hit`` of ``found`` as the tool of ``style`` prints a total; ``-`` when nothing was found."""
    if found <= 0:
        return "-"
    return _STYLES[style](hit, found)


# -- fail-under ---------------------------------------------------------------------------------------


def fails_under(headline: Headline, minimum: float, precision: int = 0) -> bool:
    """Whether the tool's own gate fails this headline against ``minimum`` percent.

    coverage.py: ``round(total, precision) < minimum``, and 100 needs an exact 100 (``--precision`` is its
    ``report:precision``). Istanbul: the floored two-decimal figure is compared (nyc/c8 ``check-coverage``).
    gcovr: its one-decimal figure (``--fail-under-line``). Others: the exact ratio. Nothing measured fails.
    """
    hit, found = headline.hit, headline.found
    if found <= 0:
        return True
    style = headline.rule.style
    if style == "coveragepy":
        total = 100.0 * hit / found
        if minimum == 100.0 and total != 100.0:
            return True
        return round(total, precision) < minimum
    if style == "istanbul":
        return Fraction(_istanbul_units(hit, found), 100) < Fraction(str(minimum))
    if style == "gcovr":
        return _gcovr_value(hit, found) < minimum
    return Fraction(hit * 100, found) < Fraction(str(minimum))


def shown_at(headline: Headline, precision: int) -> str:
    """The figure the gate compared, as the tool prints it (coverage.py at ``precision`` decimals)."""
    if headline.found <= 0:
        return "-"
    if headline.rule.style == "coveragepy":
        return _coveragepy(headline.hit, headline.found, precision)
    return headline.percent


def counters_sql(fmt: str, tool: str) -> str:
    """A DuckDB expression over the columns ``fmt`` and ``tool``: the list of counters the headline sums,
    by ``RULES`` (so SQL reading ``snapshot_totals`` follows the same table)."""
    cases = [
        f"WHEN {fmt} = '{f}'"
        + (f" AND {tool} = '{t}'" if t is not None else "")
        + f" THEN {list(r.counters)!r}"
        for (f, t), r in RULES.items()
    ]
    return f"CASE {' '.join(cases)} ELSE {list(LINES_RULE.counters)!r} END"
