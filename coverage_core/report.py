"""The normalized, columnar report that every parser produces.

A report is a list of files plus a few tables of equal-length NumPy columns
(lines, branches, functions, regions, named-test observations). There is never
one Python object per line: detail is appended in chunks of arrays and merged
once, in ``ReportBuilder.build``. ``totals`` are the producing tool's own
figures (see FORMATS.md); they may differ from what the detail sums to, and a
parser records every such disagreement as a warning naming both figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from . import counts
from .vocabulary import COUNTERS

if TYPE_CHECKING:
    import numpy as np

# Region kinds follow llvm-cov's numbering so LLVM data needs no translation.
REGION_CODE, REGION_EXPANSION, REGION_SKIPPED, REGION_GAP, REGION_BRANCH = 0, 1, 2, 3, 4
REGION_KINDS = {
    REGION_CODE: "code",
    REGION_EXPANSION: "expansion",
    REGION_SKIPPED: "skipped",
    REGION_GAP: "gap",
    REGION_BRANCH: "branch",
}

# Kinds of named-test observations.
OBS_LINE, OBS_BRANCH, OBS_FUNCTION = 0, 1, 2

# NumPy dtypes by name (NumPy takes a name wherever it takes a dtype): the records of this module are
# imported by reads that never touch a column, and NumPy costs them 60-120 ms of start-up.
I32, I64, I8, OBJ = "int32", "int64", "int8", "object"

# Column layout of each detail table. ``file`` is an index into ``report.files``.
# ``taken`` is -1 where the report says the branch was never evaluated ("-").
SCHEMAS: dict[str, dict[str, str]] = {
    "lines": {"file": I32, "line": I32, "hits": I64},
    "branches": {"file": I32, "line": I32, "block": I32, "branch": OBJ, "taken": I64},
    "functions": {"file": I32, "name": OBJ, "start_line": I32, "end_line": I32, "hits": I64},
    "regions": {
        "file": I32,
        "start_line": I32,
        "start_col": I32,
        "end_line": I32,
        "end_col": I32,
        "hits": I64,
        "kind": I8,
    },
    # One row per (test, observed item) that the test hit; unhit items are not
    # stored. ``item`` tells items of one line apart: 0 for a line, the
    # branch's ordinal on its line for a branch (LCOV: block << 16 | branch),
    # 0 for a function (``line`` is its start line).
    "test_observations": {
        "test": I32,
        "file": I32,
        "kind": I8,
        "line": I32,
        "item": I32,
        "hits": I64,
    },
    # Lines the tool excluded from measurement (coverage.py's ``excluded_lines``: ``# pragma: no cover``
    # and the like). They are not executable lines and count in no total.
    "excluded_lines": {"file": I32, "line": I32},
}


# The longest file path a report may name (PATH_MAX on Linux): no real file
# has a longer one, and every later step (mapping, storing, answers) stays
# proportionate to the paths it is given.
MAX_PATH_BYTES = 4096


class PathTooLong(Exception):
    """A report names a path longer than MAX_PATH_BYTES (``parse_bytes`` names its line)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"a file path is longer than {MAX_PATH_BYTES} bytes")
        self.path = path


@attrs.frozen
class Counter:
    """Exact ``found``/``hit`` integers; percentages exist only at display time."""

    found: int
    hit: int

    def __add__(self, other: Counter) -> Counter:
        return Counter(self.found + other.found, self.hit + other.hit)

    def to_dict(self) -> dict[str, int]:
        return {"found": self.found, "hit": self.hit}


@attrs.frozen
class ReportWarning:
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@attrs.frozen
class FileInfo:
    """One file as the report names it. The optional fields come from regions-v1."""

    path: str
    source_sha256: str | None = None
    logical_source_id: str | None = None
    variant: str | None = None


@attrs.frozen(eq=False)
class Table:
    """Equal-length NumPy columns laid out as ``SCHEMAS[name]``."""

    name: str
    columns: Mapping[str, np.ndarray]

    def __len__(self) -> int:
        first = next(iter(self.columns.values()), None)
        return 0 if first is None else len(first)

    def __getitem__(self, column: str) -> np.ndarray:
        return self.columns[column]

    @classmethod
    def empty(cls, name: str) -> Table:
        import numpy as np

        return cls(name, {c: np.empty(0, dtype=t) for c, t in SCHEMAS[name].items()})

    def take(self, index: np.ndarray) -> Table:
        return Table(self.name, {c: v[index] for c, v in self.columns.items()})


@attrs.frozen(eq=False)
class NormalizedReport:
    format: str
    files: tuple[FileInfo, ...]
    lines: Table
    branches: Table
    functions: Table
    regions: Table
    test_observations: Table
    tests: tuple[str, ...]
    totals: Mapping[str, Counter]
    # Per-file summary figures where the tool states them (or they follow from
    # detail): counter -> (found[n_files], hit[n_files]).
    file_totals: Mapping[str, tuple[np.ndarray, np.ndarray]]
    warnings: tuple[ReportWarning, ...] = ()
    tool: str | None = None
    # Report-level facts that path mapping uses later (e.g. Cobertura <sources>).
    source_roots: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    excluded_lines: Table = attrs.field(factory=lambda: Table.empty("excluded_lines"))

    def summary(self) -> dict[str, Any]:
        """The ``parse --json`` shape: format, files, totals, tests, warnings."""
        return {
            "format": self.format,
            "files": len(self.files),
            "totals": {k: self.totals[k].to_dict() for k in COUNTERS if k in self.totals},
            "tests": len(self.tests),
            **({"excluded_lines": len(self.excluded_lines)} if len(self.excluded_lines) else {}),
            "warnings": [w.to_dict() for w in self.warnings],
        }


def _concat(name: str, chunks: list[dict[str, np.ndarray]]) -> Table:
    import numpy as np

    if not chunks:
        return Table.empty(name)
    schema = SCHEMAS[name]
    cols = {}
    for col, dtype in schema.items():
        parts = [np.asarray(ch[col], dtype=dtype) for ch in chunks]
        cols[col] = parts[0] if len(parts) == 1 else np.concatenate(parts)
    n = {len(v) for v in cols.values()}
    if len(n) != 1:
        raise ValueError(f"{name}: columns of unequal length {sorted(n)}")
    return Table(name, cols)


def _group_sum(
    keys: list[np.ndarray], values: np.ndarray, *, how: str = "sum"
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Sort by ``keys`` (last key most significant... as np.lexsort) and reduce duplicates.

    Returns (index of the first row of each group in sorted order, reduced values, whether a sum
    saturated). Sums clamp at the int64 maximum (``counts``); -1 ("not evaluated") stays only
    where every value of the group is -1.
    """
    import numpy as np

    order = np.lexsort(keys)
    if len(order) == 0:
        return order, values[order], False
    sorted_keys = [k[order] for k in keys]
    change = np.zeros(len(order), dtype=bool)
    change[0] = True
    for k in sorted_keys:
        change[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(change)
    sv = values[order]
    if how == "max":
        reduced = np.maximum.reduceat(sv, starts)
    elif how == "or":
        reduced = (np.maximum.reduceat(sv, starts) > 0).astype(sv.dtype)
    else:
        summed, saturated = counts.reduceat(np.maximum(sv, 0), starts)
        reduced = np.where(np.maximum.reduceat(sv, starts) < 0, -1, summed).astype(sv.dtype)
        return order[starts], reduced, saturated
    return order[starts], reduced, False


class ReportBuilder:
    """Collects detail in array chunks and produces one ``NormalizedReport``.

    ``build`` merges repeated (file, line) rows by summing hits, which is
    LCOV's rule for several records of one file; parsers that need another
    rule (Go ``set`` mode ORs, nyc takes the max) merge before adding.
    """

    def __init__(self, fmt: str, tool: str | None = None) -> None:
        self.format = fmt
        self.tool = tool
        self._files: list[FileInfo] = []
        self._index: dict[str, int] = {}
        self._chunks: dict[str, list[dict[str, np.ndarray]]] = {k: [] for k in SCHEMAS}
        self._tests: list[str] = []
        self._test_index: dict[str, int] = {}
        self.warnings: list[ReportWarning] = []
        self.source_roots: list[str] = []
        self.metadata: dict[str, Any] = {}
        # A sum of hit counts clamped at the int64 maximum (``counts``), by ``build`` or the parser.
        self.saturated = False

    # -- identities -------------------------------------------------------
    def file(self, path: str, **info: Any) -> int:
        idx = self._index.get(path)
        if idx is None:
            # Four bytes at most per character: only long paths need encoding to be measured.
            if len(path) * 4 > MAX_PATH_BYTES and len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
                raise PathTooLong(path)
            idx = len(self._files)
            self._index[path] = idx
            self._files.append(FileInfo(path, **info))
        elif info:
            self._files[idx] = attrs.evolve(self._files[idx], **info)
        return idx

    def test(self, name: str) -> int:
        idx = self._test_index.get(name)
        if idx is None:
            idx = len(self._tests)
            self._test_index[name] = idx
            self._tests.append(name)
        return idx

    @property
    def n_files(self) -> int:
        return len(self._files)

    def warn(self, code: str, message: str) -> None:
        self.warnings.append(ReportWarning(code, message))

    # -- detail -----------------------------------------------------------
    def add(self, table: str, **columns: Any) -> None:
        """Append a chunk; scalars broadcast (``file=3`` for a whole chunk)."""
        import numpy as np

        schema = SCHEMAS[table]
        if set(columns) != set(schema):
            raise ValueError(f"{table}: expected columns {sorted(schema)}, got {sorted(columns)}")
        n = max((len(v) for v in columns.values() if np.ndim(v) > 0), default=1)
        chunk = {}
        for col, dtype in schema.items():
            v = columns[col]
            if np.ndim(v) == 0:
                arr = np.empty(n, dtype=dtype)
                arr[:] = v  # works for object scalars (a str) as well as numbers
                v = arr
            # Contiguous copies of strided views: a column sliced out of a wide
            # table must not keep the whole table alive in the report.
            chunk[col] = np.ascontiguousarray(v, dtype=dtype)
        if n:
            self._chunks[table].append(chunk)

    def add_lines(self, file: int, line: Iterable[int] | np.ndarray, hits: Any) -> None:
        import numpy as np

        self.add("lines", file=file, line=np.asarray(line, dtype=I32), hits=hits)

    # -- result -----------------------------------------------------------
    def build(
        self,
        totals: Mapping[str, Counter] | None = None,
        file_totals: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
        *,
        merge_lines: str | None = "sum",
        merge_observations: bool = True,
    ) -> NormalizedReport:
        """Assemble the report.

        ``merge_lines`` reduces repeated (file, line) rows ("sum", "max" or
        "or"); pass None when the parser already produced unique rows sorted
        by (file, line). ``merge_observations=False`` likewise skips the merge
        of named-test observations that are already unique.
        """
        import numpy as np

        lines = _concat("lines", self._chunks["lines"])
        if len(lines) and merge_lines is not None:
            first, hits, saturated = _group_sum(
                [lines["line"], lines["file"]], lines["hits"], how=merge_lines
            )
            self.saturated |= saturated
            lines = Table("lines", {"file": lines["file"][first], "line": lines["line"][first], "hits": hits})
        branches = _concat("branches", self._chunks["branches"])
        functions = _concat("functions", self._chunks["functions"])
        regions = _concat("regions", self._chunks["regions"])
        excluded = _concat("excluded_lines", self._chunks["excluded_lines"])
        obs = _concat("test_observations", self._chunks["test_observations"])
        if len(obs) and merge_observations:
            first, hits, saturated = _group_sum(
                [obs["item"], obs["line"], obs["kind"], obs["file"], obs["test"]], obs["hits"]
            )
            self.saturated |= saturated
            obs = obs.take(first)
            obs = Table(obs.name, {**obs.columns, "hits": hits})
        n = len(self._files)
        derived = {
            "lines": detail_file_totals(lines, n, hit_column="hits"),
            "branches": detail_file_totals(branches, n, hit_column="taken"),
            "functions": detail_file_totals(functions, n, hit_column="hits"),
        }
        ft: dict[str, tuple[np.ndarray, np.ndarray]] = {k: v for k, v in derived.items() if v is not None}
        if file_totals:
            ft.update({k: (np.asarray(f, I64), np.asarray(h, I64)) for k, (f, h) in file_totals.items()})
        if totals is None:
            totals = {k: Counter(int(f.sum()), int(h.sum())) for k, (f, h) in ft.items()}
        if self.saturated:
            self.metadata["saturated"] = True
            self.warn(
                "counts_saturated",
                "some hit counts summed past 2^63-1 and are kept at that maximum (saturated: true); "
                "covered stays covered, the counts above it are not exact",
            )
        return NormalizedReport(
            format=self.format,
            files=tuple(self._files),
            lines=lines,
            branches=branches,
            functions=functions,
            regions=regions,
            test_observations=obs,
            tests=tuple(self._tests),
            totals=dict(totals),
            file_totals=ft,
            warnings=tuple(self.warnings),
            tool=self.tool,
            source_roots=tuple(self.source_roots),
            metadata=dict(self.metadata),
            excluded_lines=excluded,
        )


def detail_file_totals(
    table: Table, n_files: int, *, hit_column: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-file (found, hit) counts of a detail table, or None when it is empty."""
    import numpy as np

    if not len(table):
        return None
    f = table["file"]
    found = np.bincount(f, minlength=n_files).astype(I64)
    hit = np.bincount(f, weights=(table[hit_column] > 0), minlength=n_files).astype(I64)
    return found, hit
