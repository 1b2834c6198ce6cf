"""``llvm-cov export`` JSON (``llvm.coverage.json.export`` 2.x/3.x): lines, branches, functions, regions.

Shape (arrays are positional)::

    {"data": [{"files": [{"filename": ..., "segments": [[line, col, count, hasCount,
                                                         isRegionEntry, isGapRegion], ...],
                          "branches": [[line, col, endLine, endCol, trueCount, falseCount,
                                        fileId, expandedFileId, kind], ...],
                          "expansions": [{"source_region": [...], "branches": [...],
                                          "filenames": [...], "target_regions": [...]}],
                          "summary": {"lines": {"count": .., "covered": ..}, ...}}],
               "functions": [{"name": ..., "count": .., "filenames": [...],
                              "regions": [[line, col, endLine, endCol, count, fileId,
                                           expandedFileId, kind], ...], "branches": [...]}],
               "totals": {"lines": {...}, "functions": {...}, "instantiations": {...},
                          "regions": {...}, "branches": {...}}}],
     "type": "llvm.coverage.json.export", "version": "2.0.1"}

Totals are ``data[].totals`` (``llvm-cov report``'s TOTAL row), summed over
``data[]``; per-file totals are ``files[].summary``. Detail:

- lines: derived from ``segments`` exactly as llvm-cov's LineCoverageIterator
  does (the view ``llvm-cov show`` and llvm-cov's own LCOV writer use). The
  summary counts lines per function in its own file instead, so headers full
  of macros, ``.inc`` files and static inline functions disagree; each
  disagreement becomes a warning naming both figures.
- branches: two rows (``true``, ``false``) per file branch, plus the branches
  inside macro expansions placed on the line where the macro is used, as
  llvm-cov's LCOV writer places them. ``block`` is the branch's position in
  the file's list.
- functions: one row per function definition. Function records are
  instantiations; llvm-cov groups those that start at the same place of the
  same file into one function (static inline functions of a header, one copy
  per translation unit; C++ templates), and so do we.
- regions: function regions, identical ones (several instantiations of the
  same code) merged by summing counts, as llvm-cov's file view does; a sum
  past 2^63-1 stays at that maximum and the report says ``saturated: true``
  (as a function's sum over its instantiations does).

Exports reach hundreds of MB, nearly all of it expansions' ``target_regions``
(a copy of the expanding function's regions per macro use, which nothing here
needs). They are cut out of the text before ``json.loads`` sees it, so the
Python objects built are a small fraction of the document.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable
from itertools import chain
from typing import Any

import numpy as np

from .. import counts as sums
from ..report import I32, I64, REGION_KINDS, Counter, NormalizedReport, ReportBuilder
from .reading import ReportBytes, excerpt, malformed
from .report_numbers import count

FORMAT = "llvm"
TOOL = "llvm-cov"

EXPORT_TYPE = "llvm.coverage.json.export"
SUPPORTED_MAJOR = ("2", "3")
COUNTERS = ("lines", "functions", "instantiations", "regions", "branches")
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Lines derived from segments: a real file spans its own length; this only
# stops a damaged export (a segment on line two billion) from exhausting memory.
MAX_LINE_ROWS = 2**25

_HEAD = re.compile(rb'\{\s*"data"\s*:\s*\[')


def sniff(head: bytes, tail: bytes) -> bool:
    marker = f'"{EXPORT_TYPE}"'.encode()
    return _HEAD.match(head) is not None and (marker in tail or marker in head)


def parse_bytes(report: ReportBytes) -> NormalizedReport:
    origin = report.origin
    doc = _load(report.data, origin)
    _check_header(doc, origin)
    data = doc.get("data")
    if not isinstance(data, list):
        raise malformed(origin, "$.data: must be a list of exports")
    builder = ReportBuilder(FORMAT, TOOL)
    builder.metadata["version"] = doc["version"]
    files = _Files(builder)
    exports = [_Export(entry, f"$.data[{i}]", origin) for i, entry in enumerate(data)]
    # Files take their indexes in the export's order, before functions name others.
    for export in exports:
        export.register_files(files)
    totals: dict[str, Counter] = {}
    tallies = _Tallies()
    for export in exports:
        for name, counter in export.totals().items():
            totals[name] = totals.get(name, Counter(0, 0)) + counter
        export.add_detail(builder, files, tallies)
    tallies.warn_disagreements(builder, files.paths)
    return builder.build(totals, tallies.file_totals(len(files.paths)), merge_lines="sum")


class _Files:
    """The builder's file indexes, remembering each index's path for warnings."""

    def __init__(self, builder: ReportBuilder) -> None:
        self.builder = builder
        self.paths: list[str] = []

    def __call__(self, path: str) -> int:
        index = self.builder.file(path)
        if index == len(self.paths):
            self.paths.append(path)
        return index


# -- loading ----------------------------------------------------------------

_SKIPPED_KEY = b'"target_regions"'
_NUMERIC = b"0123456789,[]- \t\r\n"


def _load(data: bytes, origin: str) -> Any:
    """The document with every expansion's ``target_regions`` replaced by ``[]``.

    The cut is made only where it is certain to be a whole value: the key is
    preceded by ``{`` or ``,`` (inside a JSON string a ``"`` is always escaped
    by a backslash) and its value holds nothing but integers and brackets.
    Anything else stays in the text, so the result is what ``json.loads`` of
    the whole document gives, less those arrays.
    """
    pieces: list[bytes] = []
    cuts: list[tuple[int, int]] = []  # (offset in skeleton, offset in data) after each cut
    kept = pos = length = 0
    find = data.find
    while (key := find(_SKIPPED_KEY, pos)) >= 0:
        pos = key + 1
        start = _value_start(data, key)
        if start < 0:
            continue
        end = _numeric_array_end(data, start)
        if end < 0:
            continue
        pieces += (data[kept:start], b"[]")
        length += start - kept + 2
        kept = pos = end
        cuts.append((length, end))
    skeleton = b"".join(pieces) + data[kept:] if pieces else data
    try:
        return json.loads(skeleton)
    except json.JSONDecodeError as exc:
        # Report the position in the original text, not in the skeleton.
        i = bisect.bisect_right(cuts, (exc.pos, len(data))) - 1
        where = exc.pos if i < 0 else cuts[i][1] + exc.pos - cuts[i][0]
        line = data.count(b"\n", 0, where) + 1
        column = where - data.rfind(b"\n", 0, where)
        raise malformed(origin, f"not valid JSON ({exc.msg}, column {column})", line) from None
    except UnicodeDecodeError as exc:
        raise malformed(origin, f"not UTF-8 JSON (byte {exc.start})") from None


def _value_start(data: bytes, key: int) -> int:
    """Offset of the ``[`` of ``"target_regions": [`` at ``key``, or -1."""
    before = key - 1
    while before >= 0 and data[before] in b" \t\r\n":
        before -= 1
    if before < 0 or data[before] not in b"{,":
        return -1
    i = key + len(_SKIPPED_KEY)
    while i < len(data) and data[i] in b" \t\r\n":
        i += 1
    if i >= len(data) or data[i] != ord(":"):
        return -1
    i += 1
    while i < len(data) and data[i] in b" \t\r\n":
        i += 1
    return i if i < len(data) and data[i] == ord("[") else -1


def _numeric_array_end(data: bytes, start: int) -> int:
    """End of the list of integer lists at ``start``, or -1 if it is anything else."""
    inner = start + 1
    while inner < len(data) and data[inner] in b" \t\r\n":
        inner += 1
    if inner < len(data) and data[inner] == ord("]"):
        return inner + 1
    close = data.find(b"]]", start)
    if close < 0:
        return -1
    value = data[start : close + 2]
    # Rows hold no brackets, so the first "]]" closes the list, provided the
    # text between is only numbers and the brackets balance.
    if value.translate(None, _NUMERIC) or value.count(b"[") != value.count(b"]"):
        return -1
    return close + 2


def _check_header(doc: Any, origin: str) -> None:
    if not isinstance(doc, dict) or doc.get("type") != EXPORT_TYPE:
        raise malformed(origin, f'$.type: not an llvm-cov export (expected "{EXPORT_TYPE}")')
    version = doc.get("version")
    if not isinstance(version, str) or version.split(".")[0] not in SUPPORTED_MAJOR:
        raise malformed(
            origin,
            f"$.version: unsupported llvm-cov export version ({excerpt(str(version))})",
            suggestion="This parser reads export versions 2.x and 3.x (LLVM 12 and later); "
            "export again with a newer llvm-cov.",
        )


# -- numbers ----------------------------------------------------------------

RowPath = Callable[[int], str]


def _matrix(rows: Any, width: int, origin: str, path: str | RowPath, positions: int = 2) -> np.ndarray:
    """``rows`` as an (n, width) int64 array of non-negative integers.

    ``path`` is the list's JSON path, or a function giving row i's path when
    the rows were gathered from several lists. JSON true/false read as 1/0
    (segments carry flags). Extra trailing columns, as newer exports may add,
    are dropped. The first ``positions`` columns are lines/columns and must
    fit in 32 bits.
    """
    row_path = path if callable(path) else lambda i: f"{path}[{i}]"
    if not isinstance(rows, list):
        raise malformed(origin, f"{row_path(0).rpartition('[')[0]}: must be a list")
    if not rows:
        return np.empty((0, width), I64)
    try:
        arr = np.array(rows)
    except (ValueError, TypeError, OverflowError):
        arr = None
    if arr is None or arr.dtype.kind != "i" or arr.ndim != 2 or arr.shape[1] < width:
        arr = _slow_matrix(rows, width, origin, row_path)
    arr = np.ascontiguousarray(arr[:, :width], dtype=I64)
    bad = arr < 0
    bad[:, :positions] |= arr[:, :positions] > INT32_MAX
    if bad.any():
        i, j = divmod(int(np.argmax(bad)), width)
        what = "is negative" if arr[i, j] < 0 else "is larger than a line or column can be"
        raise malformed(origin, f"{row_path(i)}[{j}] {what} ({int(arr[i, j])})")
    return arr


def _slow_matrix(rows: list[Any], width: int, origin: str, row_path: RowPath) -> np.ndarray:
    """Find the offending value and name it; rows of uneven length are cut to ``width``."""
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) < width:
            raise malformed(origin, f"{row_path(i)}: must be a list of at least {width} integers")
        for j, value in enumerate(row[:width]):
            if not isinstance(value, bool):
                _count(value, origin, f"{row_path(i)}[{j}]")
    return np.array([row[:width] for row in rows], dtype=I64)


def _count(value: Any, origin: str, path: str) -> int:
    """numbers.count for JSON, where "7" is a string and not a number."""
    if isinstance(value, str):
        raise malformed(origin, f"{path} must be an integer, got a string ({excerpt(value)})")
    return count(value, origin, path)


def _counter(obj: Any, origin: str, path: str) -> Counter:
    """``{"count": n, "covered": k}`` as a Counter."""
    if not isinstance(obj, dict):
        raise malformed(origin, f"{path}: must be an object with count and covered")
    found = _count(obj.get("count"), origin, f"{path}.count")
    hit = _count(obj.get("covered"), origin, f"{path}.covered")
    if hit > found:
        raise malformed(origin, f"{path}: covered ({hit}) is larger than count ({found})")
    return Counter(found, hit)


# -- line coverage ----------------------------------------------------------


def line_coverage(segments: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lines, counts) of the mapped lines, as llvm-cov's LineCoverageIterator sees them.

    ``segments`` rows are [line, col, count, hasCount, isRegionEntry,
    isGapRegion] sorted by position. Walking lines from the first segment's
    to the last one's, a line with segments S and wrapped segment W (the last
    segment before the line) is:

    - not mapped if its first segment starts a skipped region (no count, region
      entry), else mapped if W has a count or a region starts on it
      (non-gap, has a count, region entry);
    - counted as the largest of W's count and the counts of regions starting on it.
    """
    if not len(segments):
        return np.empty(0, I32), np.empty(0, I64)
    line, cnt, has, entry, gap = (segments[:, k] for k in (0, 2, 3, 4, 5))
    first, last = int(line[0]), int(line[-1])
    lines = np.arange(first, last + 1, dtype=I64)
    starts_on = np.flatnonzero(np.r_[True, line[1:] != line[:-1]])  # first segment of each line
    on = line[starts_on] - first
    region_start = np.where((gap == 0) & (has != 0) & (entry != 0), cnt, -1)
    best_start = np.full(len(lines), -1, I64)
    best_start[on] = np.maximum.reduceat(region_start, starts_on)
    skipped = np.zeros(len(lines), bool)
    skipped[on] = (has[starts_on] == 0) & (entry[starts_on] != 0)
    wrapped = np.searchsorted(line, lines, side="left") - 1  # -1: no segment before the line
    w = np.maximum(wrapped, 0)
    wrapped_has = (wrapped >= 0) & (has[w] != 0)
    wrapped_count = np.where(wrapped >= 0, cnt[w], 0)
    mapped = ~skipped & (wrapped_has | (best_start >= 0))
    counts = np.maximum(wrapped_count, best_start)
    return lines[mapped].astype(I32), counts[mapped]


# -- one export (one data[] entry) -------------------------------------------


class _Tallies:
    """Per-file summary figures and the figures our detail gives, to compare."""

    def __init__(self) -> None:
        self.summary: dict[str, list[tuple[int, Counter]]] = {k: [] for k in COUNTERS}
        self.detail: dict[str, list[tuple[int, Counter]]] = {
            k: [] for k in ("lines", "branches", "functions")
        }

    def file_totals(self, n_files: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {name: _per_file(rows, n_files) for name, rows in self.summary.items() if rows}

    def warn_disagreements(self, builder: ReportBuilder, paths: list[str]) -> None:
        for name, rows in self.detail.items():
            if not rows or not self.summary[name]:
                continue
            ours = _per_file(rows, len(paths))
            theirs = _per_file(self.summary[name], len(paths))
            differ = np.flatnonzero((ours[0] != theirs[0]) | (ours[1] != theirs[1]))
            if not len(differ):
                continue
            examples = "; ".join(
                f"{paths[i]}: {ours[0][i]:,}/{ours[1][i]:,} vs {theirs[0][i]:,}/{theirs[1][i]:,}"
                for i in differ[:3]
            )
            builder.warn(
                "detail_differs_from_summary",
                f"{name}: the detail (found/hit) differs from llvm-cov's per-file summary in "
                f"{len(differ)} of {len(paths)} files, {int(ours[0].sum()):,}/{int(ours[1].sum()):,} "
                f"in the detail vs {int(theirs[0].sum()):,}/{int(theirs[1].sum()):,} in the summary "
                f"(e.g. {examples}); totals are the summary's. {_WHY[name]}",
            )


_WHY = {
    "lines": "llvm-cov's summary counts lines per function in the function's own file; "
    "the segments also map macro bodies, included files and every copy of inline functions.",
    "branches": "The export lists constant-folded branches (both counts 0) that llvm-cov's summary "
    "skips, and the branches of every copy of a function instantiated several times, "
    "where the summary keeps one copy.",
    "functions": "Functions were grouped by where they start, as llvm-cov groups instantiations.",
}


def _per_file(rows: list[tuple[int, Counter]], n_files: int) -> tuple[np.ndarray, np.ndarray]:
    found, hit = np.zeros(n_files, I64), np.zeros(n_files, I64)
    for file, c in rows:
        found[file] += c.found
        hit[file] += c.hit
    return found, hit


class _Export:
    """One ``data[]`` entry (one binary's coverage mapping): its files, functions and totals."""

    def __init__(self, entry: Any, path: str, origin: str) -> None:
        if not isinstance(entry, dict):
            raise malformed(origin, f"{path}: must be an object")
        self.entry = entry
        self.path = path
        self.origin = origin
        self.files = self._list("files")
        self.file_ids: list[int] = []

    def _list(self, key: str, obj: dict[str, Any] | None = None, path: str | None = None) -> list[Any]:
        # -skip-functions / -skip-expansions / -summary-only leave keys out.
        value = (self.entry if obj is None else obj).get(key, [])
        if not isinstance(value, list):
            raise malformed(self.origin, f"{path or self.path}.{key}: must be a list")
        return value

    def register_files(self, files: _Files) -> None:
        for i, f in enumerate(self.files):
            name = f.get("filename") if isinstance(f, dict) else None
            if not isinstance(name, str) or not name:
                raise malformed(self.origin, f"{self.path}.files[{i}].filename: must be a non-empty string")
            self.file_ids.append(files(name))

    def totals(self) -> dict[str, Counter]:
        totals = self.entry.get("totals")
        if not isinstance(totals, dict):
            raise malformed(self.origin, f"{self.path}.totals: missing (llvm-cov export always writes it)")
        return {
            name: _counter(totals[name], self.origin, f"{self.path}.totals.{name}")
            for name in COUNTERS
            if name in totals
        }

    def add_detail(self, builder: ReportBuilder, files: _Files, tallies: _Tallies) -> None:
        budget = MAX_LINE_ROWS
        for i, (f, file) in enumerate(zip(self.files, self.file_ids, strict=True)):
            path = f"{self.path}.files[{i}]"
            summary = f.get("summary")
            if not isinstance(summary, dict):
                raise malformed(self.origin, f"{path}.summary: must be an object")
            for name in COUNTERS:
                if name in summary:
                    counter = _counter(summary[name], self.origin, f"{path}.summary.{name}")
                    tallies.summary[name].append((file, counter))
            budget -= self._lines(builder, tallies, f, file, path, budget)
            self._branches(builder, tallies, f, file, path)
        self._functions(builder, files, tallies)

    def _lines(
        self, builder: ReportBuilder, tallies: _Tallies, f: dict[str, Any], file: int, path: str, budget: int
    ) -> int:
        """Add the file's lines; how many lines its segments span (counted against ``budget``)."""
        if "segments" not in f:  # -summary-only
            return 0
        rows = self._list("segments", f, path)
        width = 6 if rows and isinstance(rows[0], list) and len(rows[0]) >= 6 else 5
        segs = _matrix(rows, width, self.origin, f"{path}.segments")
        if width == 5:  # export 2.0.0 had no gap flag
            segs = np.c_[segs, np.zeros(len(segs), I64)]
        if len(segs) and np.any(np.diff(segs[:, 0] * (INT32_MAX + 1) + segs[:, 1]) < 0):
            segs = segs[np.lexsort((segs[:, 1], segs[:, 0]))]
        span = int(segs[-1, 0] - segs[0, 0] + 1) if len(segs) else 0
        if span > budget:
            raise malformed(
                self.origin,
                f"{path}.segments: spans {span:,} lines, which takes the export "
                f"past the {MAX_LINE_ROWS:,} lines it can plausibly cover",
            )
        lines, counts = line_coverage(segs)
        builder.add_lines(file, lines, counts)
        tallies.detail["lines"].append((file, Counter(len(lines), int((counts > 0).sum()))))
        return span

    def _branches(
        self, builder: ReportBuilder, tallies: _Tallies, f: dict[str, Any], file: int, path: str
    ) -> None:
        parts = [_matrix(self._list("branches", f, path), 9, self.origin, f"{path}.branches", 4)]
        for j, ex in enumerate(self._list("expansions", f, path)):
            xpath = f"{path}.expansions[{j}]"
            if not isinstance(ex, dict):
                raise malformed(self.origin, f"{xpath}: must be an object")
            inner = _matrix(self._list("branches", ex, xpath), 9, self.origin, f"{xpath}.branches", 4)
            if len(inner):
                # Branches inside a macro count on the line that uses the macro.
                source = ex.get("source_region")
                if not isinstance(source, list) or not source:
                    raise malformed(self.origin, f"{xpath}.source_region: must be a region array")
                inner[:, 0] = _count(source[0], self.origin, f"{xpath}.source_region[0]")
                parts.append(inner)
        branches = np.concatenate(parts)
        n = len(branches)
        if not n:
            if "branches" in f:
                tallies.detail["branches"].append((file, Counter(0, 0)))
            return
        builder.add(
            "branches",
            file=file,
            line=np.repeat(branches[:, 0], 2),
            block=np.repeat(np.arange(n), 2),
            branch=np.tile(np.array(["true", "false"], dtype=object), n),
            taken=branches[:, 4:6].ravel(),
        )
        taken = branches[:, 4:6]
        tallies.detail["branches"].append((file, Counter(2 * n, int((taken > 0).sum()))))

    def _functions(self, builder: ReportBuilder, files: _Files, tallies: _Tallies) -> None:
        functions = self._list("functions")
        if not functions:
            return
        records = _FunctionRecords(functions, f"{self.path}.functions", self.origin, files)
        records.add_regions(builder)
        records.add_functions(builder, tallies)


class _FunctionRecords:
    """All function records of one export, their regions in one array."""

    def __init__(self, functions: list[Any], path: str, origin: str, files: _Files) -> None:
        self.path = path
        self.origin = origin
        names, hits, region_lists, filename_lists = [], [], [], []
        for i, fn in enumerate(functions):
            where = f"{path}[{i}]"
            if not isinstance(fn, dict):
                raise malformed(origin, f"{where}: must be an object")
            name, filenames, regions = fn.get("name"), fn.get("filenames"), fn.get("regions")
            if not isinstance(name, str):
                raise malformed(origin, f"{where}.name: must be a string")
            if not isinstance(filenames, list) or not all(isinstance(p, str) for p in filenames):
                raise malformed(origin, f"{where}.filenames: must be a list of strings")
            if not isinstance(regions, list):
                raise malformed(origin, f"{where}.regions: must be a list")
            names.append(name)
            hits.append(_count(fn.get("count"), origin, f"{where}.count"))
            region_lists.append(regions)
            filename_lists.append(filenames)
        self.names = names
        self.hits = np.array(hits, dtype=I64)
        lengths = np.array([len(r) for r in region_lists], dtype=I64)
        self.region_start = np.r_[0, np.cumsum(lengths)]
        self.function = np.repeat(np.arange(len(functions)), lengths)

        def row_path(k: int) -> str:
            fn = int(self.function[k])
            return f"{path}[{fn}].regions[{k - self.region_start[fn]}]"

        self.regions = _matrix(list(chain.from_iterable(region_lists)), 8, origin, row_path, 4)
        # Each record names its files by position; map them to report files.
        name_lengths = np.array([len(f) for f in filename_lists], dtype=I64)
        name_start = np.r_[0, np.cumsum(name_lengths)]
        file_of = np.array([files(p) for p in chain.from_iterable(filename_lists)], dtype=I32)
        file_id = self.regions[:, 5]
        outside = file_id >= name_lengths[self.function]
        if outside.any():
            k = int(np.argmax(outside))
            fn = int(self.function[k])
            raise malformed(
                origin,
                f"{path}[{fn}].regions[{k - self.region_start[fn]}][5]: file id "
                f"{int(file_id[k])} is not in the function's {int(name_lengths[fn])} filenames",
            )
        self.region_file = file_of[name_start[self.function] + file_id] if len(file_id) else np.empty(0, I32)

    def add_regions(self, builder: ReportBuilder) -> None:
        r = self.regions
        if not len(r):
            return
        keys = [r[:, 7], r[:, 3], r[:, 2], r[:, 1], r[:, 0], self.region_file]
        order = np.lexsort(keys)
        sorted_keys = np.stack([k[order] for k in keys])
        first = np.flatnonzero(np.r_[True, (sorted_keys[:, 1:] != sorted_keys[:, :-1]).any(axis=0)])
        unknown = ~np.isin(r[:, 7], list(REGION_KINDS))
        if unknown.any():
            k = int(np.argmax(unknown))
            fn = int(self.function[k])
            raise malformed(
                self.origin,
                f"{self.path}[{fn}].regions[{k - self.region_start[fn]}][7]: region kind "
                f"{int(r[k, 7])} is not one llvm-cov writes (0 to 4)",
            )
        # Identical regions of several instantiations add up; past 2^63-1 the sum stays at that maximum
        # and the report says saturated (coverage_core.counts), as LCOV merges do.
        hits, over = sums.reduceat(r[order, 4], first)
        builder.saturated |= over
        rows = order[first]
        builder.add(
            "regions",
            file=self.region_file[rows],
            start_line=r[rows, 0],
            start_col=r[rows, 1],
            end_line=r[rows, 2],
            end_col=r[rows, 3],
            hits=hits,
            kind=r[rows, 7],
        )

    def add_functions(self, builder: ReportBuilder, tallies: _Tallies) -> None:
        """One row per group of instantiations starting at the same place (llvm-cov's InstantiationGroup)."""
        groups: dict[tuple[int, int, int], list[int]] = {}
        body: dict[tuple[int, int, int], int] = {}  # group -> row of its first region in its main file
        for fn in range(len(self.names)):
            lo, hi = self.region_start[fn], self.region_start[fn + 1]
            if lo == hi:
                continue  # no region, no place in any file
            regions = self.regions[lo:hi]
            in_main = np.flatnonzero(regions[:, 5] == _main_file_id(regions))
            if not len(in_main):
                continue
            row = lo + int(in_main[0])
            key = (int(self.region_file[row]), int(self.regions[row, 0]), int(self.regions[row, 1]))
            groups.setdefault(key, []).append(fn)
            body.setdefault(key, row)
        if not groups:
            return
        summed = [sum(int(self.hits[m]) for m in members) for members in groups.values()]
        hits = [min(h, INT64_MAX) for h in summed]  # clamped and flagged, never refused or wrapped
        builder.saturated |= hits != summed
        files = np.array([file for file, _, _ in groups], I32)
        names = np.array(
            [_group_name([self.names[m] for m in members]) for members in groups.values()], object
        )
        rows = np.array(list(body.values()), I64)
        builder.add(
            "functions",
            file=files,
            name=names,
            start_line=self.regions[rows, 0],
            end_line=self.regions[rows, 2],
            hits=np.array(hits, I64),
        )
        for file, h in zip(files.tolist(), hits, strict=True):
            tallies.detail["functions"].append((file, Counter(1, int(h > 0))))


def _main_file_id(regions: np.ndarray) -> int:
    """The first file id that no expansion region expands into (llvm's findMainViewFileID)."""
    expanded = set(regions[regions[:, 7] == 1, 6].tolist())
    i = 0
    while i in expanded:
        i += 1
    return i


def _group_name(names: list[str]) -> str:
    """The name shared by a group's instantiations.

    Static functions are named ``file.c:name`` per translation unit; when
    only that prefix differs, the bare name is the function's name.
    """
    if len(set(names)) == 1:
        return names[0]
    bare = {n.rsplit(":", 1)[-1] for n in names}
    return bare.pop() if len(bare) == 1 else names[0]
