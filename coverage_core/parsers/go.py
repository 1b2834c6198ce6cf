"""Go coverprofiles (``go test -coverprofile``): blocks, statements and lines.

The grammar, as ``golang.org/x/tools/cover`` reads it::

    mode: set|count|atomic
    importpath/file.go:startLine.startCol,endLine.endCol numStmt count

``-coverpkg`` repeats every block once per test binary, so identical blocks
(same file and range) are merged first, as ``go tool cover`` does: counts are
summed in count/atomic mode and ORed in set mode, and the copies must agree
on ``numStmt``.

Totals are ``statements`` over every merged block, which is what ``go test
-cover`` prints. ``go tool cover -func`` counts only blocks inside function
declarations; telling those apart needs the Go source, which a parser never
reads (the manifest gives both views; ours is the all-blocks one). There is
no function detail for the same reason.

File names stay import paths: mapping them to repository paths needs the
module path, which is the path-mapping step's business.
"""

from __future__ import annotations

import re

import numpy as np

from .. import counts as sums
from ..report import I32, I64, REGION_CODE, Counter, NormalizedReport, ReportBuilder
from .reading import ReportBytes, excerpt, malformed
from .report_numbers import count

FORMAT = "go"
TOOL = "go test"

MODES = ("set", "count", "atomic")
_MODE_LINE = re.compile(rb"mode: (set|count|atomic)[ \t]*\r?(\n|$)")

# One alternative per profile line: a block, or anything else (group 8) so that
# findall yields exactly one tuple per line and a tuple's index is its line.
_LINE = re.compile(
    r"^(?:(.+):([0-9]+)\.([0-9]+),([0-9]+)\.([0-9]+) ([0-9]+) ([0-9]+)[ \t]*\r?|(.*?)\r?)$",
    re.MULTILINE,
)
# Looser shape, only used to say what is wrong with a line that failed _LINE.
_LOOSE = re.compile(r"^(.+):(\S+)\.(\S+),(\S+)\.(\S+) (\S+) (\S+)\s*$")
_FIELDS = ("start line", "start column", "end line", "end column", "numStmt", "count")

INT32_MAX = 2**31 - 1
# Lines are derived by expanding each block over the lines it spans; a real
# profile spans a few lines per block, so this cap only stops a damaged or
# hostile profile (one block "spanning" two billion lines) from exhausting
# memory.
MAX_LINE_ROWS = 2**25


def sniff(head: bytes, tail: bytes) -> bool:
    return _MODE_LINE.match(head) is not None


def parse_bytes(report: ReportBytes) -> NormalizedReport:
    origin = report.origin
    try:
        text = report.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise malformed(origin, f"not UTF-8 text (byte {exc.start})") from None
    text = text.removeprefix("\ufeff")
    first, _, body = text.partition("\n")
    mode_line = first.strip()
    mode = mode_line.removeprefix("mode: ")
    if not mode_line.startswith("mode: ") or mode not in MODES:
        raise malformed(
            origin,
            f"the first line must be 'mode: set|count|atomic' ({excerpt(first)})",
            1,
            "Pass a profile written by go test -coverprofile (or go tool covdata textfmt).",
        )
    blocks = _read_blocks(body, origin, mode_line)
    builder = ReportBuilder(FORMAT, TOOL)
    builder.metadata["mode"] = mode
    return _build(builder, blocks, mode, origin)


class _Blocks:
    """The profile's block lines as columns, each with its profile line number."""

    def __init__(self, files: list[str], file: np.ndarray, cols: np.ndarray, lineno: np.ndarray) -> None:
        self.files = files  # file index -> import path, in order of appearance
        self.file = file
        self.start_line, self.start_col, self.end_line, self.end_col, self.stmts, self.count = cols
        self.lineno = lineno


def _read_blocks(body: str, origin: str, mode_line: str) -> _Blocks:
    rows = _LINE.findall(body)
    blocks = []
    linenos = []
    for i, row in enumerate(rows):
        if row[0]:
            blocks.append(row)
            linenos.append(i + 2)
        elif row[7] and row[7].strip() != mode_line:
            # Profiles concatenated with `cat` repeat the same mode line; that
            # is harmless, anything else is not a block.
            raise _explain(row[7], origin, i + 2, mode_line)
    lineno = np.array(linenos, dtype=I64)
    if not blocks:
        return _Blocks([], np.empty(0, I32), np.empty((6, 0), I64), lineno)
    names, *fields = zip(*blocks)
    index: dict[str, int] = {}
    file = np.array([index.setdefault(n, len(index)) for n in names], dtype=I32)
    try:
        cols = np.array(fields[:6], dtype=I64)
    except OverflowError:
        # Name the first number that does not fit in 64 bits.
        for j, values in enumerate(fields[:6]):
            for k, v in enumerate(values):
                count(v, origin, _FIELDS[j], int(lineno[k]))
        raise
    _check_positions(cols, lineno, origin)
    return _Blocks(list(index), file, cols, lineno)


def _check_positions(cols: np.ndarray, lineno: np.ndarray, origin: str) -> None:
    start_line, start_col, end_line, end_col = cols[:4]
    problems = (
        (start_line < 1, "start line must be at least 1"),
        (end_line < start_line, "block ends before it starts"),
        ((end_line == start_line) & (end_col < start_col), "block ends before it starts"),
        ((cols[:4] > INT32_MAX).any(axis=0), f"line or column is larger than {INT32_MAX}"),
    )
    for bad, what in problems:
        if bad.any():
            k = int(np.argmax(bad))
            raise malformed(origin, what, int(lineno[k]))


def _explain(line: str, origin: str, lineno: int, mode_line: str) -> Exception:
    """The error for a line that is not a block: say which field is wrong."""
    if line.startswith("mode: "):
        return malformed(
            origin,
            f"this mode line contradicts the profile's first one ({excerpt(line.strip())})",
            lineno,
            "Do not concatenate profiles written in different cover modes.",
        )
    loose = _LOOSE.match(line)
    if loose:
        for name, value in zip(_FIELDS, loose.groups()[1:], strict=True):
            count(value, origin, name, lineno)  # raises for negative, fractional, ...
    return malformed(
        origin,
        f"not a block line 'file.go:startLine.startCol,endLine.endCol numStmt count' ({excerpt(line)})",
        lineno,
    )


def _merge(blocks: _Blocks, mode: str, origin: str, builder: ReportBuilder) -> tuple[np.ndarray, np.ndarray]:
    """Identical blocks merged: (first row of each block, merged counts)."""
    b = blocks
    order = np.lexsort((b.end_col, b.end_line, b.start_col, b.start_line, b.file))
    keys = (b.file, b.start_line, b.start_col, b.end_line, b.end_col)
    change = np.zeros(len(order), dtype=bool)
    change[:1] = True
    for k in keys:
        sk = k[order]
        change[1:] |= sk[1:] != sk[:-1]
    starts = np.flatnonzero(change)
    stmts = b.stmts[order]
    differs = np.minimum.reduceat(stmts, starts) != np.maximum.reduceat(stmts, starts)
    if differs.any():
        g = int(np.flatnonzero(differs)[0])
        end = starts[g + 1] if g + 1 < len(starts) else len(order)
        rows = order[starts[g] : end]
        other = rows[stmts[starts[g] : end] != stmts[starts[g]]][0]
        raise malformed(
            origin,
            f"the same block has numStmt {int(b.stmts[rows[0]])} on line {int(b.lineno[rows[0]])} "
            f"and {int(b.stmts[other])} on line {int(b.lineno[other])}",
            int(b.lineno[other]),
            "The profile mixes builds of different sources; regenerate it from one build.",
        )
    counts = b.count[order]
    if mode == "set":
        merged = np.bitwise_or.reduceat(counts, starts)  # x/tools/cover: Count |= b.Count
    else:
        # Sums of int64 counts would wrap: they clamp at the maximum and the report says saturated.
        merged, over = sums.reduceat(counts, starts)
        builder.saturated |= over
    return order[starts], merged


def _build(builder: ReportBuilder, blocks: _Blocks, mode: str, origin: str) -> NormalizedReport:
    for path in blocks.files:
        builder.file(path)
    n_files = len(blocks.files)
    if not len(blocks.file):
        empty = np.zeros(n_files, I64)
        return builder.build({"statements": Counter(0, 0)}, file_totals={"statements": (empty, empty)})
    first, hits = _merge(blocks, mode, origin, builder)
    file = blocks.file[first]
    sl, sc, el, ec, stmts = (
        a[first] for a in (blocks.start_line, blocks.start_col, blocks.end_line, blocks.end_col, blocks.stmts)
    )
    builder.add(
        "regions",
        file=file,
        start_line=sl,
        start_col=sc,
        end_line=el,
        end_col=ec,
        hits=hits,
        kind=REGION_CODE,
    )
    _add_lines(builder, file, sl, el, hits, blocks.lineno[first], origin)
    found = _sum_by_file(file, stmts, n_files, origin)
    hit = _sum_by_file(file, np.where(hits > 0, stmts, 0), n_files, origin)
    # go test reports statements only; lines are our derivation, kept as detail.
    totals = {"statements": Counter(int(found.sum()), int(hit.sum()))}
    return builder.build(totals, file_totals={"statements": (found, hit)}, merge_lines="max")


def _sum_by_file(file: np.ndarray, values: np.ndarray, n_files: int, origin: str) -> np.ndarray:
    """Exact per-file int64 sums (bincount's float weights lose precision past 2**53)."""
    if values.astype(np.float64).sum() >= 2.0**63:
        raise malformed(origin, "numStmt values add up to more than a 64-bit counter holds")
    out = np.zeros(n_files, I64)
    np.add.at(out, file, values)
    return out


def _add_lines(
    builder: ReportBuilder,
    file: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    hits: np.ndarray,
    lineno: np.ndarray,
    origin: str,
) -> None:
    """Every line of a block gets the block's count; a shared line the largest.

    cmd/cover never lets blocks overlap: it ends a block at the ``{`` of any
    nested body or function literal. So a line is shared only where one block
    ends and the next begins (``if cond {``, ``} else {``), and ``go tool
    cover -html`` paints each part in its own block's colour: the condition
    that ran is green even when the body after the ``{`` is red. Taking the
    largest count keeps such a line covered, as the page shows its code;
    taking the smallest would report every skipped body as an uncovered line,
    which is branch information, not line information. llvm-cov's line rule
    is alike: a line's count is the largest of the regions on it.
    """
    span = (end - start + 1).astype(I64)
    total = int(span.sum())
    if total > MAX_LINE_ROWS:
        k = int(np.argmax(span))
        raise malformed(
            origin,
            f"blocks span {total:,} lines in all (this one {int(span[k]):,}), more "
            f"than the {MAX_LINE_ROWS:,} a profile can plausibly cover",
            int(lineno[k]),
        )
    offsets = np.arange(total, dtype=I64) - np.repeat(np.cumsum(span) - span, span)
    builder.add(
        "lines", file=np.repeat(file, span), line=np.repeat(start, span) + offsets, hits=np.repeat(hits, span)
    )
