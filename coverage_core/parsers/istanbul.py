"""Istanbul ``coverage-final.json`` (nyc and c8): statements, branches, functions, lines.

The document maps each file to its maps and counters::

    {"<path>": {"path": "<path>",
                "statementMap": {"0": {"start": {"line": 4, "column": 9}, "end": {...}}, ...},
                "s": {"0": 12, ...},
                "fnMap": {"0": {"name": "f", "decl": {...}, "loc": {...}, "line": 3}, ...},
                "f": {"0": 1, ...},
                "branchMap": {"0": {"type": "if", "loc": {...}, "locations": [...], "line": 6}, ...},
                "b": {"0": [3, 0], ...}}}

Totals follow istanbul-lib-coverage's summary (what nyc and c8 print):
statements are the entries of ``s``, functions the entries of ``f``, branches
the outcomes in ``b``, and lines the distinct start lines of statements, a
line's count being the largest of its statements' counts.

Two instrumenters write this shape with very different counts: nyc
(istanbul-lib-instrument, marked by ``_coverageSchema``) and c8
(v8-to-istanbul, marked by ``all``; one statement per line and every branch
of type ``branch`` with one outcome). The report's ``tool`` says which.

Columns are stored 1-based, as LLVM and Go write them (Istanbul's are 0-based).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..report import I32, I64, REGION_CODE, NormalizedReport, ReportBuilder
from .reading import ReportBytes, excerpt, malformed
from .report_numbers import count

FORMAT = "istanbul"
TOOL = "nyc"
COUNTERS = ("statements", "branches", "functions", "lines")

# {"<path>": {"path": ... or {"<path>": {"statementMap": ... at the very start.
_HEAD = re.compile(rb'\{\s*"(?:[^"\\]|\\.)*"\s*:\s*\{\s*"(?:path|statementMap|all)"\s*:')


def sniff(head: bytes, tail: bytes) -> bool:
    return _HEAD.match(head) is not None and b'"statementMap"' in head


def parse_bytes(report: ReportBytes) -> NormalizedReport:
    doc = _load_json(report)
    if not isinstance(doc, dict):
        raise malformed(report.origin, "$: an Istanbul report is a JSON object of files")
    builder = ReportBuilder(FORMAT, TOOL)
    instrumenters = set()
    # Every counter per file, so that a report without (say) branches still
    # totals 0 of 0 branches, as nyc prints it.
    tallies: dict[str, list[tuple[int, int]]] = {name: [] for name in COUNTERS}
    seen: dict[str, str] = {}
    for key, entry in doc.items():
        where = f"$[{json.dumps(key[:80])}]"
        if not isinstance(entry, dict):
            raise malformed(report.origin, f"{where}: a file's coverage must be an object")
        path = entry.get("path", key)
        if not isinstance(path, str) or not path:
            raise malformed(report.origin, f"{where}.path: must be a non-empty string")
        if path in seen:
            raise malformed(report.origin, f"{where}.path: the same path as {seen[path]} ({excerpt(path)})")
        seen[path] = where
        fc = _FileCoverage(entry, where, report.origin)
        for name, counter in fc.add_to(builder, builder.file(path)).items():
            tallies[name].append(counter)
        instrumenters.add(fc.instrumenter())
    if len(instrumenters) > 1:
        builder.tool = None
        builder.warn(
            "mixed_instrumenters",
            "the report holds files instrumented by nyc (istanbul) and by c8 (V8); their counts are "
            "not comparable and should come from separate runs",
        )
    elif instrumenters:
        builder.tool = instrumenters.pop()
    file_totals = {
        name: (np.array([f for f, _ in rows], I64), np.array([h for _, h in rows], I64))
        for name, rows in tallies.items()
    }
    return builder.build(file_totals=file_totals, merge_lines="max")


def _load_json(report: ReportBytes) -> Any:
    """The report's JSON, or a malformed_report error naming the line."""
    try:
        return json.loads(report.data)
    except json.JSONDecodeError as exc:
        raise malformed(
            report.origin, f"not valid JSON ({exc.msg}, column {exc.colno})", exc.lineno
        ) from None
    except UnicodeDecodeError as exc:
        raise malformed(report.origin, f"not UTF-8 JSON (byte {exc.start})") from None


def _counts(values: list[Any], origin: str, where: Callable[[int], str]) -> np.ndarray:
    """Non-negative int64 counts, or an error naming the JSON path of the first bad one."""
    # Fast path: one C-level type check for the whole list. JSON true/false
    # are bools (not ints) and NaN/1.5 are floats, so they take the slow path.
    if set(map(type, values)) <= {int}:
        try:
            arr = np.array(values, dtype=I64)
        except OverflowError:
            arr = None
        if arr is not None and not (len(arr) and arr.min() < 0):
            return arr
    for i, v in enumerate(values):
        _count(v, origin, where(i))
    raise AssertionError("unreachable: a value failed the fast path but passed _count()")


def _count(value: Any, origin: str, path: str) -> int:
    """numbers.count for JSON, where "7" is a string and not a number."""
    if isinstance(value, str):
        raise malformed(origin, f"{path} must be an integer, got a string ({excerpt(value)})")
    return count(value, origin, path)


class _FileCoverage:
    """One file's maps and counters, checked as they are read."""

    def __init__(self, entry: dict[str, Any], where: str, origin: str) -> None:
        self.entry = entry
        self.where = where
        self.origin = origin

    def _object(self, name: str) -> dict[str, Any]:
        value = self.entry.get(name, {})
        if not isinstance(value, dict):
            raise malformed(self.origin, f"{self.where}.{name}: must be an object")
        return value

    def _map_entry(self, name: str, key: str) -> dict[str, Any]:
        value = self._object(name).get(key)
        if not isinstance(value, dict):
            raise malformed(self.origin, f"{self.where}.{name}[{json.dumps(key)}]: missing or not an object")
        return value

    def _position(self, obj: Any, path: str, *, column: bool = False) -> int:
        """A line (or a 0-based column, returned 1-based) from ``{"line": .., "column": ..}``."""
        if not isinstance(obj, dict):
            raise malformed(self.origin, f"{path}: must be an object with line and column")
        if column:
            # Some source-mapped reports carry a null column: 0 means unknown.
            value = obj.get("column")
            return 0 if value is None else _count(value, self.origin, f"{path}.column") + 1
        return _count(obj.get("line"), self.origin, f"{path}.line")

    def instrumenter(self) -> str:
        if "_coverageSchema" in self.entry:
            return "nyc"
        if "all" in self.entry:
            return "c8"
        types = {b.get("type") for b in self._object("branchMap").values() if isinstance(b, dict)}
        return "c8" if types == {"branch"} else "nyc"

    def add_to(self, builder: ReportBuilder, file: int) -> dict[str, tuple[int, int]]:
        """Add the file's detail; its (found, hit) per counter."""
        return {
            **self._statements(builder, file),
            "functions": self._functions(builder, file),
            "branches": self._branches(builder, file),
        }

    def _statements(self, builder: ReportBuilder, file: int) -> dict[str, tuple[int, int]]:
        s = self._object("s")
        keys = list(s)
        hits = _counts(list(s.values()), self.origin, lambda i: f"{self.where}.s[{json.dumps(keys[i])}]")
        spans = np.zeros((4, len(keys)), dtype=I64)
        for i, key in enumerate(keys):
            loc = self._map_entry("statementMap", key)
            path = f"{self.where}.statementMap[{json.dumps(key)}]"
            start, end = loc.get("start"), loc.get("end")
            spans[:, i] = (
                self._position(start, f"{path}.start"),
                self._position(start, f"{path}.start", column=True),
                self._position(end, f"{path}.end"),
                self._position(end, f"{path}.end", column=True),
            )
        _check_int32(spans, self.origin, lambda i: f"{self.where}.statementMap[{json.dumps(keys[i])}]")
        builder.add(
            "regions",
            file=file,
            start_line=spans[0],
            start_col=spans[1],
            end_line=spans[2],
            end_col=spans[3],
            hits=hits,
            kind=REGION_CODE,
        )
        # nyc's line rule: a line's count is the largest of the statements that
        # start on it; ReportBuilder.build(merge_lines="max") applies it.
        builder.add_lines(file, spans[0], hits)
        lines = np.unique(spans[0])
        hit_lines = np.unique(spans[0][hits > 0])
        return {"statements": _tally(hits), "lines": (len(lines), len(hit_lines))}

    def _functions(self, builder: ReportBuilder, file: int) -> tuple[int, int]:
        f = self._object("f")
        keys = list(f)
        hits = _counts(list(f.values()), self.origin, lambda i: f"{self.where}.f[{json.dumps(keys[i])}]")
        names = np.empty(len(keys), dtype=object)
        lines = np.zeros((2, len(keys)), dtype=I64)
        for i, key in enumerate(keys):
            fn = self._map_entry("fnMap", key)
            path = f"{self.where}.fnMap[{json.dumps(key)}]"
            name = fn.get("name")
            names[i] = name if isinstance(name, str) else f"(anonymous_{key})"
            # istanbul's LCOV writer names the declaration's line; c8 has only loc.
            decl = fn.get("decl") if isinstance(fn.get("decl"), dict) else fn.get("loc")
            lines[0, i] = self._position(
                decl.get("start") if isinstance(decl, dict) else None, f"{path}.decl.start"
            )
            loc = fn.get("loc")
            lines[1, i] = self._position(loc.get("end") if isinstance(loc, dict) else None, f"{path}.loc.end")
        _check_int32(lines, self.origin, lambda i: f"{self.where}.fnMap[{json.dumps(keys[i])}]")
        builder.add("functions", file=file, name=names, start_line=lines[0], end_line=lines[1], hits=hits)
        return _tally(hits)

    def _branches(self, builder: ReportBuilder, file: int) -> tuple[int, int]:
        b = self._object("b")
        lines: list[int] = []
        taken: list[Any] = []
        block: list[int] = []
        outcome: list[str] = []
        for index, (key, outcomes) in enumerate(b.items()):
            path = f"{self.where}.b[{json.dumps(key)}]"
            if not isinstance(outcomes, list):
                raise malformed(self.origin, f"{path}: must be a list of counts")
            meta = self._map_entry("branchMap", key)
            loc = meta.get("loc")
            mpath = f"{self.where}.branchMap[{json.dumps(key)}]"
            if isinstance(loc, dict) and isinstance(loc.get("start"), dict) and "line" in loc["start"]:
                line = self._position(loc["start"], f"{mpath}.loc.start")
            else:
                line = _count(meta.get("line"), self.origin, f"{mpath}.line")
            n = len(outcomes)
            lines += [line] * n
            taken += outcomes
            block += [index] * n
            outcome += [str(j) for j in range(n)]
        keys = list(b)
        starts = np.cumsum([0] + [len(v) for v in b.values()])

        def where(i: int) -> str:
            k = int(np.searchsorted(starts, i, side="right")) - 1
            return f"{self.where}.b[{json.dumps(keys[k])}][{i - starts[k]}]"

        taken_arr = _counts(taken, self.origin, where)
        line_arr = np.array(lines, dtype=I64)
        _check_int32(line_arr[np.newaxis], self.origin, where)
        builder.add(
            "branches",
            file=file,
            line=line_arr,
            block=np.array(block, dtype=I32),
            branch=np.array(outcome, dtype=object),
            taken=taken_arr,
        )
        return _tally(taken_arr)


def _tally(hits: np.ndarray) -> tuple[int, int]:
    return len(hits), int((hits > 0).sum())


def _check_int32(positions: np.ndarray, origin: str, where: Callable[[int], str]) -> None:
    """Lines and columns are stored in 32 bits; refuse larger ones by path."""
    too_big = (positions > 2**31 - 1).any(axis=0)
    if too_big.any():
        i = int(np.argmax(too_big))
        raise malformed(origin, f"{where(i)}: a line or column is larger than {2**31 - 1}")
