"""coverage-mcp regions-v1: our own JSON format for tools without a parser.

Shader, WASM or interpreter coverage tools can write this small document
(``docs/regions-v1.md``; JSON Schema in ``regions-v1.schema.json`` beside this
module) instead of waiting for a parser. This module owns its validation and
its reading; the rules are the schema's, checked here without a schema
library, plus the few a schema cannot state (a region ends after it starts,
a test index exists, a path or a line appears once). Every error names the
JSON path of the offending value, e.g. ``$.files[2].regions[5].hits``.

Totals: ``regions`` (code regions; hit when their count is above 0) and
``lines``. Without an explicit ``lines`` list, every line a code region spans
is a line, hit when any code region covering it was hit (its count is the
largest of theirs). A region's ``tests`` become per-test line observations
over the lines it spans.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..report import (
    I32,
    I64,
    OBS_LINE,
    REGION_BRANCH,
    REGION_CODE,
    REGION_GAP,
    REGION_SKIPPED,
    NormalizedReport,
    ReportBuilder,
)
from .reading import ReportBytes, excerpt, malformed

FORMAT = "regions-v1"
TOOL = None

FORMAT_ID = "coverage-mcp-regions-v1"
SUPPORTED_VERSION = 1
# The JSON Schema of the format, shipped as package data for tools to validate against.
SCHEMA_PATH = Path(__file__).with_name("regions-v1.schema.json")
KINDS = {"code": REGION_CODE, "gap": REGION_GAP, "skipped": REGION_SKIPPED, "branch": REGION_BRANCH}

DOCUMENT_KEYS = frozenset({"format", "version", "tool", "tests", "files"})
TOOL_KEYS = frozenset({"name", "version"})
FILE_KEYS = frozenset({"path", "source_sha256", "logical_source_id", "variant", "regions", "lines"})
FILE_REQUIRED = frozenset({"path", "regions"})
REGION_POSITIONS = ("start_line", "start_col", "end_line", "end_col")
REGION_REQUIRED = frozenset({*REGION_POSITIONS, "hits"})
REGION_KEYS = frozenset({*REGION_REQUIRED, "kind", "tests"})

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Lines derived from regions; only a damaged document spans more.
MAX_LINE_ROWS = 2**25
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_SNIFF = re.compile(rb'"format"\s*:\s*"' + FORMAT_ID.encode() + rb'"')

Where = Callable[[int], str]


def sniff(head: bytes, tail: bytes) -> bool:
    return head.startswith(b"{") and _SNIFF.search(head) is not None


class _Invalid(Exception):
    """A rule broken at a JSON path; becomes a malformed_report error."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{path}: {what}")


def parse_bytes(report: ReportBytes) -> NormalizedReport:
    try:
        doc = json.loads(report.data)
    except json.JSONDecodeError as exc:
        raise malformed(
            report.origin, f"not valid JSON ({exc.msg}, column {exc.colno})", exc.lineno
        ) from None
    except UnicodeDecodeError as exc:
        raise malformed(report.origin, f"not UTF-8 JSON (byte {exc.start})") from None
    try:
        return _Reader(doc).report()
    except _Invalid as exc:
        raise malformed(
            report.origin,
            str(exc),
            suggestion="Fix the document to match coverage-mcp-regions-v1 (docs/regions-v1.md, "
            "coverage_core/parsers/regions-v1.schema.json).",
        ) from None


# -- checks of single values ---------------------------------------------------


def _object(
    value: Any, path: str, allowed: frozenset[str], required: frozenset[str] = frozenset()
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Invalid(path, f"must be an object, got {_kind(value)}")
    unknown = value.keys() - allowed
    if unknown:
        raise _Invalid(f"{path}.{min(unknown)}", f"unknown key (allowed: {', '.join(sorted(allowed))})")
    missing = required - value.keys()
    if missing:
        raise _Invalid(f"{path}.{min(missing)}", "required")
    return value


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise _Invalid(path, f"must be a non-empty string, got {_kind(value)}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Invalid(path, f"must be a list, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(value)
    names = {dict: "an object", list: "a list", str: "a string", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _integers(values: list[Any], where: Where, minimum: int, maximum: int) -> np.ndarray:
    """Integers within [minimum, maximum], or an error at the first one that is not."""
    # One C-level type check for the whole column; true/false and 1.0 are not integers.
    if set(map(type, values)) <= {int}:
        try:
            arr = np.array(values, dtype=I64)
        except OverflowError:
            arr = None
        if arr is not None and (not len(arr) or (arr.min() >= minimum and arr.max() <= maximum)):
            return arr
    for i, v in enumerate(values):
        if type(v) is not int:
            raise _Invalid(where(i), f"must be an integer, got {_kind(v)}")
        if not minimum <= v <= maximum:
            raise _Invalid(where(i), f"must be between {minimum} and {maximum}, got {v}")
    raise AssertionError("unreachable: the fast path refused a valid column")


# -- the document ----------------------------------------------------------------


class _Reader:
    """Checks a parsed document rule by rule while building its report."""

    def __init__(self, doc: Any) -> None:
        if not isinstance(doc, dict):
            raise _Invalid("$", f"must be an object, got {_kind(doc)}")
        if doc.get("format") != FORMAT_ID:
            raise _Invalid("$.format", f'must be "{FORMAT_ID}" ({excerpt(json.dumps(doc.get("format")))})')
        version = doc.get("version")
        if type(version) is not int or version != SUPPORTED_VERSION:
            raise _Invalid(
                "$.version",
                f"unsupported version {json.dumps(version)}; this coverage-mcp "
                f"reads version {SUPPORTED_VERSION}",
            )
        self.doc = _object(doc, "$", DOCUMENT_KEYS, frozenset({"files"}))
        self.builder = ReportBuilder(FORMAT, TOOL)

    def report(self) -> NormalizedReport:
        self._tool()
        declared = self._tests()
        files = _list(self.doc["files"], "$.files")
        seen: dict[str, int] = {}
        # Both counters for every file, so that a document without code still
        # totals 0 of 0 regions and lines.
        tallies: dict[str, list[tuple[int, int]]] = {"regions": [], "lines": []}
        for i, entry in enumerate(files):
            path = f"$.files[{i}]"
            f = _object(entry, path, FILE_KEYS, FILE_REQUIRED)
            name = _string(f["path"], f"{path}.path")
            if name in seen:
                raise _Invalid(
                    f"{path}.path",
                    f"{json.dumps(name)} already appears at $.files[{seen[name]}]; "
                    "give each file (and each variant of one) its own entry and path",
                )
            seen[name] = i
            file = self.builder.file(name, **self._file_info(f, path))
            for counter, found_hit in self._file(file, f, path, declared).items():
                tallies[counter].append(found_hit)
        file_totals = {
            counter: (np.array([n for n, _ in rows], I64), np.array([h for _, h in rows], I64))
            for counter, rows in tallies.items()
        }
        return self.builder.build(file_totals=file_totals, merge_lines="max", merge_observations=False)

    def _tool(self) -> None:
        if "tool" not in self.doc:
            return
        tool = _object(self.doc["tool"], "$.tool", TOOL_KEYS)
        if "name" in tool:
            self.builder.tool = _string(tool["name"], "$.tool.name")
        if "version" in tool:
            self.builder.metadata["tool_version"] = _string(tool["version"], "$.tool.version")

    def _tests(self) -> int:
        tests = _list(self.doc.get("tests", []), "$.tests")
        for i, name in enumerate(tests):
            _string(name, f"$.tests[{i}]")
            if self.builder.test(name) != i:
                raise _Invalid(f"$.tests[{i}]", f"{json.dumps(name)} is listed twice")
        return len(tests)

    @staticmethod
    def _file_info(f: dict[str, Any], path: str) -> dict[str, str]:
        info = {}
        if "source_sha256" in f:
            digest = _string(f["source_sha256"], f"{path}.source_sha256")
            if not _SHA256.fullmatch(digest):
                raise _Invalid(f"{path}.source_sha256", "must be 64 hexadecimal digits")
            info["source_sha256"] = digest.lower()
        for key in ("logical_source_id", "variant"):
            if key in f:
                info[key] = _string(f[key], f"{path}.{key}")
        return info

    def _file(self, file: int, f: dict[str, Any], path: str, declared: int) -> dict[str, tuple[int, int]]:
        """Add one file's detail; its (found, hit) regions and lines."""
        regions = _list(f["regions"], f"{path}.regions")
        for j, region in enumerate(regions):
            _object(region, f"{path}.regions[{j}]", REGION_KEYS, REGION_REQUIRED)

        def where(key: str) -> Where:
            return lambda j: f"{path}.regions[{j}].{key}"

        sl, sc, el, ec = (
            _integers([r[k] for r in regions], where(k), 1, INT32_MAX) for k in REGION_POSITIONS
        )
        hits = _integers([r["hits"] for r in regions], where("hits"), 0, INT64_MAX)
        backwards = (el < sl) | ((el == sl) & (ec < sc))
        if backwards.any():
            j = int(np.argmax(backwards))
            raise _Invalid(f"{path}.regions[{j}]", "ends before it starts")
        kind = np.empty(len(regions), dtype=np.int8)
        for j, r in enumerate(regions):
            name = r.get("kind", "code")
            if not isinstance(name, str) or name not in KINDS:
                raise _Invalid(
                    f"{path}.regions[{j}].kind", f"must be one of {', '.join(KINDS)}, got {_kind(name)}"
                )
            kind[j] = KINDS[name]
        self.builder.add(
            "regions", file=file, start_line=sl, start_col=sc, end_line=el, end_col=ec, hits=hits, kind=kind
        )
        code = kind == REGION_CODE
        if "lines" in f:
            lines = self._explicit_lines(file, f["lines"], f"{path}.lines")
        else:
            lines = self._derived_lines(file, sl[code], el[code], hits[code], path)
        self._observations(file, regions, sl, el, hits, kind, path, declared)
        return {"regions": (int(code.sum()), int((hits[code] > 0).sum())), "lines": lines}

    def _explicit_lines(self, file: int, rows: Any, path: str) -> tuple[int, int]:
        for k, row in enumerate(_list(rows, path)):
            if not isinstance(row, list) or len(row) != 2:
                raise _Invalid(f"{path}[{k}]", "must be a [line, hits] pair")
        lines = _integers([r[0] for r in rows], lambda k: f"{path}[{k}][0]", 1, INT32_MAX)
        hits = _integers([r[1] for r in rows], lambda k: f"{path}[{k}][1]", 0, INT64_MAX)
        order = np.argsort(lines, kind="stable")
        repeated = np.flatnonzero(lines[order][1:] == lines[order][:-1])
        if len(repeated):
            k = int(order[repeated[0] + 1])
            raise _Invalid(f"{path}[{k}]", f"line {int(lines[k])} is listed twice")
        self.builder.add_lines(file, lines, hits)
        return len(lines), int((hits > 0).sum())

    def _derived_lines(
        self, file: int, start: np.ndarray, end: np.ndarray, hits: np.ndarray, path: str
    ) -> tuple[int, int]:
        line, row = _spanned_lines(start, end, f"{path}.regions")
        self.builder.add_lines(file, line, hits[row])
        return len(np.unique(line)), len(np.unique(line[hits[row] > 0]))

    def _observations(
        self,
        file: int,
        regions: list[Any],
        sl: np.ndarray,
        el: np.ndarray,
        hits: np.ndarray,
        kind: np.ndarray,
        path: str,
        declared: int,
    ) -> None:
        with_tests = [j for j, r in enumerate(regions) if "tests" in r]
        tests: list[int] = []
        owners: list[int] = []
        for j in with_tests:
            where = f"{path}.regions[{j}].tests"
            if kind[j] not in (REGION_CODE, REGION_BRANCH):
                raise _Invalid(where, "only code and branch regions run, so only they can list tests")
            refs = _list(regions[j]["tests"], where)
            if refs and hits[j] == 0:
                raise _Invalid(where, "lists tests but the region's hits are 0")
            for k, ref in enumerate(refs):
                tests.append(self._test(ref, f"{where}[{k}]", declared))
                owners.append(j)
        if not tests:
            return
        owner = np.array(owners, dtype=I64)
        line, row = _spanned_lines(sl[owner], el[owner], f"{path}.regions")
        test = np.array(tests, dtype=I32)[row]
        # A test is recorded once per line: regions-v1 says which tests hit a
        # region, not how often, so hits is 1.
        keys = np.unique(np.stack([test.astype(I64), line.astype(I64)]), axis=1)
        self.builder.add(
            "test_observations", test=keys[0], file=file, kind=OBS_LINE, line=keys[1], item=0, hits=1
        )

    def _test(self, ref: Any, path: str, declared: int) -> int:
        if type(ref) is int:
            if not 0 <= ref < declared:
                raise _Invalid(path, f"test index {ref} is not in $.tests ({declared} tests)")
            return ref
        return self.builder.test(_string(ref, path))


def _spanned_lines(start: np.ndarray, end: np.ndarray, path: str) -> tuple[np.ndarray, np.ndarray]:
    """Every line of every span, and the index of the span it came from."""
    span = end - start + 1
    total = int(span.sum())
    if total > MAX_LINE_ROWS:
        raise _Invalid(
            path, f"regions span {total:,} lines, more than the {MAX_LINE_ROWS:,} a file can plausibly have"
        )
    row = np.repeat(np.arange(len(span)), span)
    offset = np.arange(total, dtype=I64) - np.repeat(np.cumsum(span) - span, span)
    return (start[row] + offset).astype(I32), row
