"""coverage.py JSON reports (``coverage json``, format 3).

This module owns reading a coverage.py JSON document into a
``NormalizedReport``. The shape it relies on::

    {"meta": {"format": 3, "version": "7.x", "branch_coverage": bool, "show_contexts": bool},
     "files": {"<path>": {
         "executed_lines": [int], "missing_lines": [int], "excluded_lines": [int],
         "executed_branches": [[from, to]], "missing_branches": [[from, to]],
         "contexts": {"<line>": ["<context>", ...]},      # with --show-contexts
         "summary": {"num_statements", "covered_lines", "num_branches", "covered_branches", ...},
         "functions": {"<name>" | "": {"executed_lines", "missing_lines", "summary", "start_line"}},
         "classes": {...}}},
     "totals": {"num_statements", "covered_lines", "num_branches", "covered_branches", ...}}

Counters: ``statements`` (and ``lines``, the same figures) are statements,
not physical lines: excluded lines are not statements. ``branches`` are arcs;
a negative ``to`` leaves the code object. ``functions`` count the named
entries of ``functions`` that have statements, hit when one ran (what
``coverage lcov`` writes as FNF/FNH); ``""`` is module-level code, not a
function. A branch is an arc (line = from, id "jump to line N" or "exit"),
taken 1 or 0, or -1 ("never evaluated") for every arc of a line none of whose
arcs ran, as ``coverage lcov`` writes it. Totals are the report's own ``totals``, per file its ``summary``;
every disagreement with the detail is a warning naming both figures.

Per-test coverage: each non-empty context (``""`` is code run outside any
test) is a test; each (context, statement line) pair is an observation.
Contexts on lines that are not statements (a docstring, an excluded line)
make a test but no observation, because no line item exists for them.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ..report import I64, OBS_LINE, Counter, NormalizedReport, ReportBuilder
from .reading import ReportBytes, excerpt, malformed
from .report_numbers import INT64_MAX

FORMAT = "coveragepy"
TOOL = "coverage.py"

INT32_MAX = 2**31 - 1
# coverage.py writes "meta" first, and in it "format" and "branch_coverage".
_HEAD = re.compile(rb'\{\s*"meta"\s*:\s*\{[^{}]*"format"\s*:\s*\d')


def sniff(head: bytes, tail: bytes) -> bool:
    match = _HEAD.match(head)
    return match is not None and b'"branch_coverage"' in head[: match.end() + 400]


def parse_bytes(report: ReportBytes) -> NormalizedReport:
    return _Reader(report.origin).read(_load(report))


def _load(report: ReportBytes) -> dict[str, Any]:
    try:
        doc = json.loads(report.data)
    except UnicodeDecodeError as exc:
        raise malformed(report.origin, f"not UTF-8 JSON (byte {exc.start})") from None
    except RecursionError:
        raise malformed(report.origin, "not valid JSON (nested too deeply)") from None
    except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
        raise malformed(
            report.origin, f"not valid JSON ({str(exc)[:120]})", getattr(exc, "lineno", None)
        ) from None
    if not isinstance(doc, dict):
        raise malformed(
            report.origin, "$: a coverage.py JSON report is an object with meta, files and totals"
        )
    return doc


class _Reader:
    """Validates the document as it reads it; every error names its JSON path."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.builder = ReportBuilder(FORMAT, TOOL)

    def read(self, doc: dict[str, Any]) -> NormalizedReport:
        b = self.builder
        meta = self._object(doc.get("meta"), "$.meta")
        version = self._int(meta.get("format"), "$.meta.format")
        if version not in (2, 3):
            raise malformed(
                self.origin, f"$.meta.format: coverage.py JSON format {version} is not supported (2 or 3)"
            )
        branch = meta.get("branch_coverage") is True
        b.metadata.update(
            {
                "coverage_version": str(meta.get("version", "")),
                "branch_coverage": branch,
                "show_contexts": meta.get("show_contexts") is True,
            }
        )
        files = self._object(doc.get("files"), "$.files")
        parsed = [
            self._file(path, self._object(entry, f"$.files[{_key(path)}]"), branch)
            for path, entry in files.items()
        ]
        self._tests(parsed)
        counters = ("statements", "branches", "functions") if branch else ("statements", "functions")
        file_totals = {
            c: (
                np.array([f.totals[c][0] for f in parsed], dtype=I64),
                np.array([f.totals[c][1] for f in parsed], dtype=I64),
            )
            for c in counters
        }
        totals = self._totals(doc.get("totals"), file_totals, branch)
        file_totals["lines"] = file_totals["statements"]
        totals["lines"] = totals["statements"]
        return b.build(totals, file_totals, merge_lines=None, merge_observations=False)

    # -- one file ---------------------------------------------------------------
    def _file(self, path: str, entry: dict[str, Any], branch: bool) -> _File:
        where = f"$.files[{_key(path)}]"
        index = self.builder.file(path)
        executed = self._lines(entry.get("executed_lines", []), f"{where}.executed_lines")
        missing = self._lines(entry.get("missing_lines", []), f"{where}.missing_lines")
        excluded = self._lines(entry.get("excluded_lines", []), f"{where}.excluded_lines")
        if len(excluded):
            self.builder.add("excluded_lines", file=index, line=np.unique(excluded))
        line = np.concatenate([executed, missing])
        hits = np.concatenate([np.ones(len(executed), I64), np.zeros(len(missing), I64)])
        order = np.argsort(line, kind="stable")
        line, hits = line[order], hits[order]
        if len(line) > 1 and (both := line[1:] == line[:-1]).any():
            self.builder.warn(
                "summary_detail_mismatch",
                f"{where}: line(s) {line[1:][both][:5].tolist()} "
                "are listed as both executed and missing; they count as executed",
            )
            keep = np.ones(len(line), dtype=bool)
            keep[1:] = ~both  # of two equal lines the executed one sorts first
            line, hits = line[keep], hits[keep]
        self.builder.add_lines(index, line, hits)
        summary = self._object(entry.get("summary", {}), f"{where}.summary")
        stated = self._stated(summary, f"{where}.summary", ("num_statements", "covered_lines"))
        totals = {"statements": self._agree(where, "statements", stated, (len(line), int(hits.sum())))}
        if branch:
            arcs = self._branches(index, entry, where)
            stated = self._stated(summary, f"{where}.summary", ("num_branches", "covered_branches"))
            totals["branches"] = self._agree(where, "branches", stated, arcs)
        totals["functions"] = self._functions(index, entry.get("functions", {}), f"{where}.functions")
        contexts = entry.get("contexts")
        names = {} if contexts is None else self._contexts(contexts, f"{where}.contexts")
        return _File(index, line, totals, names)

    def _branches(self, index: int, entry: dict[str, Any], where: str) -> tuple[int, int]:
        """Arcs ``[from, to]`` as branches: line = from, id "jump to line N" or "exit"."""
        arcs = []
        for key, taken in (("executed_branches", 1), ("missing_branches", 0)):
            for i, arc in enumerate(self._list(entry.get(key, []), f"{where}.{key}")):
                at = f"{where}.{key}[{i}]"
                if not (isinstance(arc, list) and len(arc) == 2):
                    raise malformed(self.origin, f"{at} must be a [from, to] pair")
                start = self._int(arc[0], f"{at}[0]")
                if not 1 <= start <= INT32_MAX:
                    raise malformed(self.origin, f"{at}[0]: line {start} is out of range")
                to = arc[1]
                if type(to) is not int or abs(to) > INT32_MAX:
                    raise malformed(self.origin, f"{at}[1] must be a line number, got {excerpt(repr(to))}")
                arcs.append((start, to < 0, to, taken))
        arcs.sort()  # by line, exits after jumps (as coverage lcov orders them)
        # As coverage lcov writes it: when none of a line's arcs ran, they were never evaluated ("-").
        ran = {arc[0] for arc in arcs if arc[3]}
        arcs = [arc if arc[0] in ran else (*arc[:3], -1) for arc in arcs]
        if arcs:
            self.builder.add(
                "branches",
                file=index,
                line=[a[0] for a in arcs],
                block=0,
                branch=np.array(["exit" if a[1] else f"jump to line {a[2]}" for a in arcs], dtype=object),
                taken=[a[3] for a in arcs],
            )
        return len(arcs), sum(a[3] > 0 for a in arcs)

    def _functions(self, index: int, functions: Any, where: str) -> tuple[int, int]:
        """Named functions with statements, hit when one of them ran.

        A function starts where ``coverage lcov`` says it does and ends at its
        last statement (coverage lcov ends it after the statement's last
        continuation line, which the JSON does not give).
        """
        rows = []
        for name, entry in self._object(functions, where).items():
            at = f"{where}[{_key(name)}]"
            entry = self._object(entry, at)
            ran, missed, excluded = (
                self._lines(entry.get(key, []), f"{at}.{key}")
                for key in ("executed_lines", "missing_lines", "excluded_lines")
            )
            if not name or not len(ran) + len(missed):
                continue  # module-level code, or a function without statements
            span = np.concatenate([ran, missed, excluded])
            start = entry.get("start_line")
            first = (
                int(span.min())
                if start is None
                else min(self._int(start, f"{at}.start_line"), int(span.min()))
            )
            rows.append((name, first, int(span.max()), int(len(ran) > 0)))
        if rows:
            self.builder.add(
                "functions",
                file=index,
                name=np.array([r[0] for r in rows], dtype=object),
                start_line=[r[1] for r in rows],
                end_line=[r[2] for r in rows],
                hits=[r[3] for r in rows],
            )
        return len(rows), sum(r[3] for r in rows)

    def _contexts(self, contexts: Any, where: str) -> dict[str, np.ndarray]:
        """context name -> the lines it ran, from ``{"<line>": [names]}``."""
        by_name: dict[str, list[int]] = {}
        for key, names in self._object(contexts, where).items():
            if not (key.isascii() and key.isdigit()) or not 1 <= int(key) <= INT32_MAX:
                raise malformed(self.origin, f"{where}: key is not a line number ({excerpt(key)})")
            line = int(key)
            for i, name in enumerate(self._list(names, f"{where}[{_key(key)}]")):
                if not isinstance(name, str):
                    raise malformed(
                        self.origin, f"{where}[{_key(key)}][{i}] must be a context name (a string)"
                    )
                if name:
                    by_name.setdefault(name, []).append(line)
        return {name: np.array(lines, dtype=I64) for name, lines in by_name.items()}

    def _tests(self, parsed: list[_File]) -> None:
        """Register tests in name order; one observation per (test, statement line)."""
        b = self.builder
        for name in sorted({name for f in parsed for name in f.contexts}):
            b.test(name)
        for f in parsed:
            for name, lines in f.contexts.items():
                lines = np.unique(lines)
                lines = lines[np.isin(lines, f.lines, assume_unique=True)]
                if len(lines):
                    b.add(
                        "test_observations",
                        test=b.test(name),
                        file=f.index,
                        kind=OBS_LINE,
                        line=lines,
                        item=0,
                        hits=1,
                    )

    # -- totals -------------------------------------------------------------------
    def _totals(
        self, totals: Any, file_totals: dict[str, tuple[np.ndarray, np.ndarray]], branch: bool
    ) -> dict[str, Counter]:
        """The report's ``totals`` (what ``coverage report`` prints), checked against its files."""
        summed = {c: Counter(int(f.sum()), int(h.sum())) for c, (f, h) in file_totals.items()}
        if totals is None:
            return summed
        totals = self._object(totals, "$.totals")
        fields = {"statements": ("num_statements", "covered_lines")}
        if branch:
            fields["branches"] = ("num_branches", "covered_branches")
        out = dict(summed)
        for counter, keys in fields.items():
            stated = self._stated(totals, "$.totals", keys)
            if stated is None:
                continue
            out[counter] = Counter(*stated)
            if out[counter] != summed[counter]:
                self.builder.warn(
                    "summary_detail_mismatch",
                    f"$.totals: {keys[0]}/{keys[1]} say {stated[0]:,}/{stated[1]:,} but the files' "
                    f"summaries add up to {summed[counter].found:,}/{summed[counter].hit:,}; "
                    "the totals use $.totals, the producing tool's figures",
                )
        return out

    def _stated(self, summary: dict[str, Any], where: str, keys: tuple[str, str]) -> tuple[int, int] | None:
        found, hit = (summary.get(k) for k in keys)
        if found is None and hit is None:
            return None
        return self._int(found, f"{where}.{keys[0]}"), self._int(hit, f"{where}.{keys[1]}")

    def _agree(
        self, where: str, counter: str, stated: tuple[int, int] | None, detail: tuple[int, int]
    ) -> tuple[int, int]:
        """The summary's figures when stated (warning if the detail says otherwise), else the detail's."""
        if stated is None:
            return detail
        if stated != detail:
            self.builder.warn(
                "summary_detail_mismatch",
                f"{where}: the summary says {stated[0]:,} {counter}, {stated[1]:,} covered; the detail "
                f"lists {detail[0]:,}, {detail[1]:,} covered. The detail is kept; the totals use the summary",
            )
        return stated

    # -- validation ---------------------------------------------------------------
    def _object(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise malformed(self.origin, f"{where} must be an object, got {_kind(value)}")
        return value

    def _list(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise malformed(self.origin, f"{where} must be a list, got {_kind(value)}")
        return value

    def _int(self, value: Any, where: str) -> int:
        """A non-negative int64: JSON floats (even 3.0), booleans and NaN are refused."""
        if type(value) is not int:
            raise malformed(
                self.origin, f"{where} must be an integer, got {_kind(value)} ({excerpt(repr(value))})"
            )
        if value < 0:
            raise malformed(self.origin, f"{where} is negative ({value})")
        if value > INT64_MAX:
            raise malformed(self.origin, f"{where} overflows a 64-bit counter ({value})")
        return value

    def _lines(self, value: Any, where: str) -> np.ndarray:
        values = self._list(value, where)
        if not set(map(type, values)) <= {int}:
            i = next(i for i, v in enumerate(values) if type(v) is not int)
            raise malformed(
                self.origin,
                f"{where}[{i}] must be a line number, got {_kind(values[i])} ({excerpt(repr(values[i]))})",
            )
        if values and not (1 <= min(values) and max(values) <= INT32_MAX):
            i = next(i for i, v in enumerate(values) if not 1 <= v <= INT32_MAX)
            raise malformed(self.origin, f"{where}[{i}]: line {values[i]} is out of range")
        return np.array(values, dtype=I64)


class _File:
    """What the report-level steps need of a parsed file."""

    def __init__(
        self,
        index: int,
        lines: np.ndarray,
        totals: dict[str, tuple[int, int]],
        contexts: dict[str, np.ndarray],
    ) -> None:
        self.index = index
        self.lines = lines
        self.totals = totals
        self.contexts = contexts


def _key(name: str) -> str:
    return json.dumps(name[:80])


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)
