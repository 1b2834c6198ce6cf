"""LCOV tracefiles (geninfo/lcov, coverage.py, istanbul/nyc/c8 and llvm-cov writers).

This module owns reading LCOV into a ``NormalizedReport``: records split on
``end_of_record``, the records of one file merged the way ``lcov --summary``
merges them, per-test observations from ``TN:``, and the choice between a
writer's summary lines and its detail (FORMATS.md).

Grammar (one item per line)::

    TN:<test name>                      test of the records that follow
    SF:<source file>                    starts a record
    FN:<line>[,<end line>],<name>       a function
    FNDA:<count>,<name>                 its execution count
    FNF:<n> / FNH:<n>                   functions found / hit
    BRDA:<line>,<block>,<branch>,<taken|->
    BRF:<n> / BRH:<n>                   branches found / hit
    DA:<line>,<count>[,<checksum>]      a line and its execution count
    LF:<n> / LH:<n>                     lines found / hit
    end_of_record                       ends the record

Totals: a file with one record takes its LF/LH, BRF/BRH, FNF/FNH lines (the
producing tool's own figures); a file with several records (geninfo writes
one per ``TN:`` test) takes the merged detail, as ``lcov --summary`` does.
Every disagreement between a record's summary lines and its detail is a
warning naming both figures.

Speed: each record's run of ``DA:`` (and ``BRDA:``) lines is cut out with
``bytes.find`` and proven to hold nothing but well-formed such lines: deleting
its digits must leave exactly ``DA:,`` on every line, and NumPy, reading it
with the tag letters as blanks, must find two numbers a line (see DA_NUMBERS).
The runs of a batch of records (up to BATCH_BYTES) are parsed by one NumPy
call; records of one file listing the same lines merge by adding arrays. A
run that fails (text branch ids, a minus sign, a damaged line) is read by the
exact line-by-line reader, which is also what names the line of an error; a
test proves both readers give the same report for damaged input.

Counts add up as lcov adds them, but clamped at 2^63-1 (``coverage_core.counts``):
a merged count past it is kept at the maximum and the report says
``saturated: true`` (a ``counts_saturated`` warning), never a wrapped number.

Streaming: ``parse_chunks`` reads the report as it arrives (an ingest passes 2 MiB chunks), each
record once its ``end_of_record`` line is complete, and parses each chunk's batch before the next
chunk comes, so that an error still names its line. With an ``ObservationSink`` (the store's
snapshot writer) the named-test observations, the one table that grows with tests x lines, leave
batch by batch; what stays is the per-file merge, the size of the files' own detail.

A report whose last record has no ``end_of_record`` is refused as truncated:
a cut-off tracefile would otherwise give plausible but wrong totals.
"""

from __future__ import annotations

import re
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, Protocol

import numpy as np

from .. import counts as sums
from ..report import (
    I32,
    I64,
    OBS_BRANCH,
    OBS_FUNCTION,
    OBS_LINE,
    SCHEMAS,
    NormalizedReport,
    PathTooLong,
    ReportBuilder,
)
from .reading import ReportBytes, excerpt, malformed, path_too_long
from .report_numbers import INT64_MAX, count

FORMAT = "lcov"
TOOL = None

END = b"end_of_record"
INT32_MAX = 2**31 - 1  # line, block and numeric branch ids land in int32 columns
# Text branch ids (coverage.py: "jump to line 5") get keys above every numeric
# id, so one int64 key column orders and merges both kinds.
TEXT_KEY = 2**40
BATCH_BYTES = 8 * 2**20  # run text per batch: bounds the memory held for parsing
BATCH_RECORDS = 4096
BULK_FNDA_BYTES = 2048  # smaller FNDA runs are cheaper to read line by line
MAX_WARNINGS = 20
# counter -> (found tag, hit tag, the detail records they summarize)
SUMMARIES = {
    "lines": (b"LF", b"LH", "DA"),
    "branches": (b"BRF", b"BRH", "BRDA"),
    "functions": (b"FNF", b"FNH", "FN/FNDA"),
}
SUMMARY_TAGS = frozenset(tag for found, hit, _ in SUMMARIES.values() for tag in (found, hit))
# Tags of other lcov versions (VER:, FNL:, FNA:, MCDC:...) carry nothing counted here.
OTHER_TAG = re.compile(rb"[A-Z][A-Z0-9_]*\Z")
SIGNED_INTEGER = re.compile(rb"\s*[+-]?[0-9]+\s*")
BULK_TAGS = (b"\nDA:", b"\nBRDA:", b"\nFN:", b"\nFNDA:")
CHECKSUM = re.compile(rb"^(DA:[^,\n]*,[^,\n]*),[^\n]*$", re.MULTILINE)
DIGITS = b"0123456789"
# For NumPy, a tag's letters become spaces and newlines commas: "DA:12,3\nDA:13,0"
# reads as "   12,3,   13,0". A digit glued to a tag ("1DA:2,3") then leaves two
# numbers with no comma between them, which NumPy refuses; an empty field
# leaves ",," (refused) or, for a line number, blanks that NumPy reads as 0,
# so the bulk path refuses line 0 and lets the exact reader judge.
DA_NUMBERS = bytes.maketrans(b"DA:\n", b"   ,")
BRDA_NUMBERS = bytes.maketrans(b"BRDA:\n-", b"     ,0")

# int64 detail rows: lines (line, count); branches (line, block, key, taken).
Rows = np.ndarray


def sniff(head: bytes, tail: bytes) -> bool:
    """A tracefile starts with ``TN:`` or ``SF:`` and names a source file early."""
    return head.startswith(b"SF:") or (head.startswith(b"TN:") and b"\nSF:" in head)


def parse_bytes(report: ReportBytes) -> NormalizedReport:
    return parse_chunks([report.data], report.origin)


class ObservationSink(Protocol):
    """Where a streamed parse puts its named-test observations instead of holding them (the store)."""

    def add(self, columns: dict[str, np.ndarray]) -> None:
        """One batch, laid out as ``report.SCHEMAS["test_observations"]``."""

    def merge(self) -> bool:
        """Sum rows repeated across batches (one test's several records of a file); True if a sum saturated."""
        ...


def parse_chunks(
    chunks: Iterable[bytes], origin: str, observations: ObservationSink | None = None
) -> NormalizedReport:
    """The report whose bytes are ``chunks`` joined, holding only a chunk and a batch at a time.

    Records are read as soon as their ``end_of_record`` line is complete; a record cut by a chunk's
    end waits for the next chunk. With ``observations``, the named-test observations go there batch by
    batch (the report's ``test_observations`` stay empty); what the report keeps is the merged per-file
    detail, whose size is the files' lines, branches and functions, not the report's.
    """
    parser = _Parser(origin, observations)
    carry, lead = b"", 0
    for chunk in _normalized(chunks):
        buffer = carry + chunk if carry else chunk
        pos = parser.feed(buffer, lead, final=False)
        if pos > lead:  # keep the newline ending the last record: the next buffer starts with it
            parser.advance(buffer, pos - 1)
            carry, lead = buffer[pos - 1 :], 1
        else:
            carry = buffer
    parser.feed(carry, lead, final=True)
    return parser.build()


def _normalized(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """``chunks`` without a leading UTF-8 BOM, and with CRLF as LF when the first 64 KiB use CRLF."""
    pending = b""
    pieces = iter(chunks)
    for chunk in pieces:
        pending += chunk
        if len(pending) >= 65536:
            break
    if pending.startswith(b"\xef\xbb\xbf"):
        pending = pending[3:]
    if b"\r\n" not in pending[:65536]:
        if pending:
            yield pending
        yield from pieces
        return
    for chunk in pieces:
        pending += chunk
        # A CR ending a chunk may start a CRLF that the next chunk completes.
        cut = len(pending) - 1 if pending.endswith(b"\r") else len(pending)
        yield pending[:cut].replace(b"\r\n", b"\n")
        pending = pending[cut:]
    if pending:
        yield pending.replace(b"\r\n", b"\n")


def _regions(rec: bytes, lo: int, hi: int) -> list[tuple[int, int, bytes | None]]:
    """Split the record ``rec[lo:hi]`` into disjoint ``(start, stop, tag)`` regions covering it.

    A tagged region runs from the tag's first line to its last line before
    the next tag's first line. Writers group each tag's lines, so a region
    normally holds all of them and nothing else; when one does not (coverage.py
    writes FN and FNDA lines in turns), the bulk check fails and the region is
    read line by line, like the untagged gaps between regions.
    """
    da = rec.find(b"\nDA:", lo, hi)
    if da >= 0 and rec.find(b"\nBR", lo, hi) < 0 and rec.find(b"\nFN", lo, hi) < 0:
        # DA lines only, the common record of line-only writers: one tagged region
        stop = rec.find(b"\n", rec.rfind(b"\nDA:", da, hi) + 1, hi)
        return [(lo, da + 1, None), (da + 1, stop, b"\nDA:"), (stop, hi, None)]
    firsts = sorted((at + 1, tag) for tag in BULK_TAGS if (at := rec.find(tag, lo, hi)) >= 0)
    regions: list[tuple[int, int, bytes | None]] = []
    at = lo
    for i, (first, tag) in enumerate(firsts):
        limit = firsts[i + 1][0] if i + 1 < len(firsts) else hi
        stop = rec.find(b"\n", rec.rfind(tag, first - 1, limit) + 1, hi)
        regions += [(at, first, None), (first, stop, tag)]
        at = stop
    regions.append((at, hi, None))
    return regions


class _Functions:
    """A record's functions in FN order, keyed (name, ordinal among equal names).

    c8 writes several functions with one name and pairs them with FNDA lines
    in order, so the k-th ``FNDA:<n>,f`` belongs to the k-th ``FN:..,f``.
    """

    def __init__(self, items: list[tuple[bytes, int, int]]) -> None:
        self.items = items  # (name, start line, end line or 0)
        per_name: dict[bytes, int] = {}
        keys = []
        for name, _, _ in items:
            k = per_name.get(name, 0)
            keys.append((name, k))
            per_name[name] = k + 1
        self.keys = keys
        self.per_name = per_name
        self.start = np.array([start for _, start, _ in items], dtype=I64)
        self.position = {key: i for i, key in enumerate(keys)}
        # name -> position when no name repeats: lets FNDA runs be matched in bulk
        self.unique_names = (
            {name: i for (name, _), i in self.position.items()} if len(per_name) == len(keys) else None
        )

    def extended(self, more: list[tuple[bytes, int, int]]) -> _Functions:
        return _Functions(self.items + more) if more else self

    def match(self, fnda: list[tuple[bytes, int]], hits: np.ndarray, b: ReportBuilder) -> dict[bytes, int]:
        """Add FNDA counts to ``hits`` (clamped: ``b.saturated``); return the counts of names no FN line
        declares."""
        seen: dict[bytes, int] = {}
        orphans: dict[bytes, int] = {}
        for name, n in fnda:
            k = seen.get(name, 0)
            seen[name] = k + 1
            declared = self.per_name.get(name, 0)
            if declared:  # more FNDA than FN lines for a name: lcov sums them by name
                at = self.position[(name, min(k, declared - 1))]
                hits[at], over = sums.add_scalar(hits[at], n)
            else:
                orphans[name], over = sums.add_scalar(orphans.get(name, 0), n)
            b.saturated |= over
        return orphans


NO_FUNCTIONS = _Functions([])
# Shared, never written: a record or file without functions, lines or branches (most records of
# line-only writers) allocates nothing for them.
NO_HITS = np.empty(0, I64)
NO_LINES = np.empty((0, 2), I64)
NO_BRANCHES = np.empty((0, 4), I64)


class _Record:
    """What one record said, before its runs are parsed in bulk."""

    __slots__ = (
        "exact_branches",
        "exact_fn",
        "exact_fnda",
        "exact_lines",
        "file",
        "fn_hits",
        "functions",
        "path",
        "summary",
        "test",
    )

    def __init__(self) -> None:
        self.path: bytes | None = None
        self.file = -1
        self.test = ""
        self.summary: dict[bytes, int] = {}
        self.functions = NO_FUNCTIONS
        self.fn_hits = NO_HITS
        # what the exact reader found
        self.exact_lines: list[tuple[int, int]] = []
        self.exact_branches: list[tuple[int, int, int, int]] = []
        self.exact_fn: list[tuple[bytes, int, int]] = []
        self.exact_fnda: list[tuple[bytes, int]] = []


class _RunKind(NamedTuple):
    shape: Callable[[bytes], tuple[bytes, bytes] | None]  # (text, skeleton) if only this tag's lines
    rows: Callable[[bytes, bytes], Rows | None]  # the rows of shaped text, None if a number is off
    width: int
    exact: str  # the _Record list the exact reader fills with this tag's items


class _Runs:
    """One tag's runs from the records of a batch, shaped, waiting to be parsed together."""

    def __init__(self, kind: _RunKind) -> None:
        self.kind = kind
        self.sources: list[bytes] = []  # each run as written
        self.texts: list[bytes] = []  # as shaped for NumPy (checksums dropped)
        self.skeletons: list[bytes] = []
        self.owners: list[int] = []  # index of each run's record in the batch
        self.offsets: list[int] = []
        self.size = 0

    def add(self, text: bytes, owner: int, offset: int) -> bool:
        shaped = self.kind.shape(text)
        if shaped is None:
            return False
        self.sources.append(text)
        self.texts.append(shaped[0])
        self.skeletons.append(shaped[1])
        self.owners.append(owner)
        self.offsets.append(offset)
        self.size += len(text)
        return True


class _Parser:
    """Reads records, parses their runs in batches and merges them per source file."""

    def __init__(self, origin: str, observations: ObservationSink | None = None) -> None:
        self.origin = origin
        self.sink = observations
        # The buffer being read, the report offset of its first byte and the report's newlines before it:
        # what turns an offset into a line number for a message.
        self.data = b""
        self.base = 0
        self.lines_before = 0
        self.records = 0
        self.builder = ReportBuilder(FORMAT, TOOL)
        self.test = ""  # TN: holds until the next TN: line, as in lcov
        self.files: list[_FileMerge] = []
        self.paths: list[str] = []
        self.batch: list[_Record] = []
        self.da, self.brda = _Runs(DA_RUNS), _Runs(BRDA_RUNS)
        self.branch_texts: dict[bytes, int] = {}
        self.fn_runs: dict[bytes, _Functions] = {}
        self.observed: set[tuple[int, int]] = set()
        self.repeated_observations = False
        self.mismatches: list[tuple[int, str, str, tuple[int, int], tuple[int, int]]] = []
        self.notes: list[str] = []

    def feed(self, data: bytes, lead: int, final: bool) -> int:
        """Read each record of ``data`` whose ``end_of_record`` line is complete; return where the rest starts.

        ``data[0]`` is the report's byte ``self.base``; ``lead`` is 1 when that byte is the newline ending
        the previous record. Each record reaches ``record`` with a newline before its first line, so that
        every tag is found as ``b"\\nTAG:"``: the one before it in ``data``, or for the report's first
        record (which no newline precedes) a copy with one prepended. The batch is parsed before ``data``
        goes, so that a run's error can still name its line. ``final``: nothing follows ``data``.
        """
        self.data = data
        pos = search = lead
        while (end := data.find(END, search)) >= 0:
            after = search = end + len(END)
            newline = data.find(b"\n", after)
            if newline < 0 and not final:
                break  # the line may go on in the next chunk
            line_end = len(data) if newline < 0 else newline
            if (end and data[end - 1] != 0x0A) or data[after:line_end].strip():
                continue  # inside another line, which the record's reader will judge
            if pos:
                self.record(data, self.base, pos - 1, end)
            else:
                self.record(b"\n" + data[:end], self.base - 1, 0, end + 1)
            self.records += 1
            pos = search = line_end + 1
        self._flush()
        if final and data[pos:].strip():
            line = self._line_of(self.base + pos)
            sf = re.search(rb"^SF:([^\n]*)", data[pos:], re.MULTILINE)
            what = f"a record ({excerpt(b'SF:' + sf.group(1))})" if sf else "the last record"
            raise malformed(
                self.origin,
                f"{what} (from line {line}) has no end_of_record: the report looks truncated",
                line,
                "Regenerate the report or copy it again in full; every LCOV record ends with end_of_record.",
            )
        if final and not self.records:
            raise malformed(self.origin, "no LCOV record (SF: ... end_of_record) found")
        return pos

    def advance(self, data: bytes, to: int) -> None:
        """The next buffer starts at ``data[to]``."""
        self.lines_before += data.count(b"\n", 0, to)
        self.base += to

    def record(self, rec: bytes, offset: int, lo: int, hi: int) -> None:
        """Read the record ``rec[lo:hi]``; ``rec[i]`` is the report's byte ``i + offset``."""
        r = _Record()
        owner = len(self.batch)
        fnda = None
        for start, stop, tag in _regions(rec, lo, hi):
            part, here = rec[start:stop], offset + start
            if tag == b"\nFN:":
                self._fn(part, here, r)
            elif tag == b"\nFNDA:":
                fnda = (part, here)  # read once the record's FN lines are known
            elif not (
                (tag == b"\nDA:" and self.da.add(part, owner, here))
                or (tag == b"\nBRDA:" and self.brda.add(part, owner, here))
            ):
                self._exact(part, here, r)
        self._functions(r, fnda)
        if r.path is None:
            raise malformed(self.origin, "a record has no SF: line", self._line_of(offset + lo + 1))
        path = _text(r.path)
        try:
            r.file = self.builder.file(path)
        except PathTooLong:
            raise path_too_long(
                self.origin, path, self._line_of(offset + rec.find(b"\nSF:", lo, hi) + 1)
            ) from None
        if r.file == len(self.files):
            self.files.append(_FileMerge(self.builder))
            self.paths.append(path)
        r.test = self.test
        self.batch.append(r)
        if self.da.size + self.brda.size > BATCH_BYTES or len(self.batch) >= BATCH_RECORDS:
            self._flush()

    def _line_of(self, offset: int) -> int:
        return self.lines_before + self.data.count(b"\n", 0, max(offset - self.base, 0)) + 1

    # -- the exact reader ------------------------------------------------------------
    def _exact(self, text: bytes, offset: int, r: _Record) -> None:
        for line in text.split(b"\n"):
            item = line.rstrip()
            if item:
                tag, colon, value = item.partition(b":")
                if not colon:
                    self._bad(offset, f"not an LCOV line ({excerpt(item)})")
                self._item(tag, value, offset, r)
            offset += len(line) + 1

    def _item(self, tag: bytes, value: bytes, here: int, r: _Record) -> None:
        """One ``TAG:value`` line, checked exactly; ``here`` is its offset in the report."""
        if tag in SUMMARY_TAGS:  # LF:<n> and the like, the most frequent lines outside runs
            r.summary[tag] = (
                int(value)
                if value.isdigit() and len(value) < 19
                else self._int(value, f"{tag.decode()} value", here)
            )
        elif tag == b"DA":
            # DA:<line>,<count>[,<checksum>]
            fields = value.split(b",")
            if len(fields) < 2:
                self._bad(here, "DA needs <line>,<count>")
            r.exact_lines.append(
                (
                    self._int(fields[0], "DA line number", here, INT32_MAX),
                    self._int(fields[1], "DA execution count", here),
                )
            )
        elif tag == b"BRDA":
            # BRDA:<line>,<block>,<branch>,<taken|->; a text branch id may hold
            # commas, so the last field is split off from the right.
            head = value.split(b",", 2)
            branch, _, taken = head[-1].rpartition(b",")
            if len(head) < 3 or not branch:
                self._bad(here, "BRDA needs <line>,<block>,<branch>,<taken>")
            r.exact_branches.append(
                (
                    self._int(head[0], "BRDA line number", here, INT32_MAX),
                    self._int(head[1], "BRDA block", here, INT32_MAX),
                    self._branch_key(branch),
                    -1 if taken == b"-" else self._int(taken, "BRDA taken count", here),
                )
            )
        elif tag == b"FN":
            # FN:<line>[,<end line>],<name>
            start, _, rest = value.partition(b",")
            end, comma, name = rest.partition(b",")
            if not (comma and end.isdigit()):
                end, name = b"0", rest
            if not name:
                self._bad(here, "FN needs <line>[,<end line>],<name>")
            r.exact_fn.append(
                (
                    name,
                    self._int(start, "FN line number", here, INT32_MAX),
                    self._int(end, "FN end line", here, INT32_MAX),
                )
            )
        elif tag == b"FNDA":
            # FNDA:<count>,<name>
            hits, _, name = value.partition(b",")
            if not name:
                self._bad(here, "FNDA needs <count>,<name>")
            r.exact_fnda.append((name, self._int(hits, "FNDA execution count", here)))
        elif tag == b"SF":
            if r.path is not None:
                self._bad(here, "a second SF: in one record (end_of_record missing before it)")
            if not value.strip():
                self._bad(here, "SF: names no file")
            r.path = value.strip()
        elif tag == b"TN":
            self.test = _text(value.strip())
        elif not OTHER_TAG.match(tag):
            self._bad(here, f"not an LCOV line ({excerpt(tag + b':' + value)})")

    def _bad(self, here: int, what: str) -> None:
        raise malformed(self.origin, what, self._line_of(here))

    def _int(self, text: bytes, what: str, here: int, maximum: int = INT64_MAX) -> int:
        if text.isdigit() and len(text) < 19:
            value = int(text)
        elif not SIGNED_INTEGER.fullmatch(text):
            self._bad(here, f"{what} must be an integer ({excerpt(text)})")
        elif len(text) > 40:
            self._bad(here, f"{what} overflows a 64-bit counter ({excerpt(text[:20])} ...)")
        else:  # numbers.count words the error; the line number is worked out only for it
            value = count(text, self.origin, what, self._line_of(here))
        if value > maximum:
            self._bad(here, f"{what} is out of range ({value})")
        return value

    def _branch_key(self, branch: bytes) -> int:
        if branch.isdigit() and int(branch) <= INT32_MAX:
            return int(branch)
        return TEXT_KEY + self.branch_texts.setdefault(branch, len(self.branch_texts))

    # -- functions, per record ---------------------------------------------------------
    def _fn(self, run: bytes, here: int, r: _Record) -> None:
        """A run of FN lines, read exactly; the same run in another record is read once."""
        functions = self.fn_runs.get(run)
        if functions is None:
            if run.count(b"\nFN:") != run.count(b"\n"):  # other lines in between: no reuse
                self._exact(run, here, r)
                return
            exact = _Record()
            self._exact(run, here, exact)
            functions = _Functions(exact.exact_fn)
            if len(self.fn_runs) > 1024:
                self.fn_runs.clear()
            self.fn_runs[run] = functions
        r.functions = functions

    def _functions(self, r: _Record, fnda: tuple[bytes, int] | None) -> None:
        """Pair FNDA counts with the record's FN lines."""
        if fnda is None and r.functions is NO_FUNCTIONS and not r.exact_fn and not r.exact_fnda:
            return  # no function at all: most records of line-only writers
        fn = r.functions.extended(r.exact_fn)
        hits = np.zeros(len(fn.keys), I64)
        if fnda is not None and not (
            len(fnda[0]) > BULK_FNDA_BYTES and _bulk_fnda(fnda[0], fn, hits, self.builder)
        ):
            self._exact(*fnda, r)  # which may hold FN lines too: coverage.py alternates them
            fn = r.functions.extended(r.exact_fn)
            hits = np.zeros(len(fn.keys), I64)
        orphans = fn.match(r.exact_fnda, hits, self.builder)
        if orphans:  # FNDA without FN: lcov still counts the function; its line is unknown (0)
            fn = fn.extended([(name, 0, 0) for name in orphans])
            hits = np.concatenate([hits, np.array(list(orphans.values()), dtype=I64)])
        r.functions = fn
        r.fn_hits = hits

    # -- a batch of records ---------------------------------------------------------------
    def _flush(self) -> None:
        """Parse the batch's runs, then merge its records into their files."""
        if not self.batch:
            return
        # Rows stay grouped by record: record i owns rows[at[i]:at[i + 1]].
        lines, line_at = self._rows(self.da)
        branches, branch_at = self._rows(self.brda)
        line_hit, branch_hit = lines[:, 1] > 0, branches[:, 3] > 0
        # rows hit before each record's first row
        line_hits_at = np.concatenate([[0], np.cumsum(line_hit)])[line_at]
        branch_hits_at = np.concatenate([[0], np.cumsum(branch_hit)])[branch_at]
        self._check_summaries(
            line_at.tolist(), line_hits_at.tolist(), branch_at.tolist(), branch_hits_at.tolist()
        )
        self._observe(lines[line_hit], np.diff(line_hits_at), branches[branch_hit], np.diff(branch_hits_at))
        for i, r in enumerate(self.batch):
            self.files[r.file].add(
                lines[line_at[i] : line_at[i + 1]], branches[branch_at[i] : branch_at[i + 1]], r
            )
        self.batch = []
        self.da, self.brda = _Runs(DA_RUNS), _Runs(BRDA_RUNS)

    def _rows(self, runs: _Runs) -> tuple[Rows, np.ndarray]:
        """The batch's rows of one tag, grouped by record, each record's sorted and unique."""
        kind = runs.kind
        pieces: list[list[Rows]] = [[] for _ in self.batch]
        # All runs in one NumPy call; if that is refused, each run alone, and a
        # run still refused (a bad number) goes to the exact reader.
        rows = kind.rows(b"\n".join(runs.texts), b"\n".join(runs.skeletons)) if runs.texts else None
        if rows is not None:
            at = 0
            for owner, skeleton in zip(runs.owners, runs.skeletons):
                size = skeleton.count(b"\n") + 1
                pieces[owner].append(rows[at : at + size])
                at += size
        else:
            for source, text, skeleton, owner, offset in zip(
                runs.sources, runs.texts, runs.skeletons, runs.owners, runs.offsets
            ):
                alone = kind.rows(text, skeleton)
                if alone is None:
                    self._exact(source, offset, self.batch[owner])
                else:
                    pieces[owner].append(alone)
        exact_any = False
        for own, r in zip(pieces, self.batch):
            exact = getattr(r, kind.exact)
            if exact:
                own.append(np.array(exact, dtype=I64).reshape(-1, kind.width))
                exact_any = True
        return _by_record(pieces, kind.width, self.builder, rows if not exact_any else None)

    def _check_summaries(
        self, line_at: list[int], line_hits_at: list[int], branch_at: list[int], branch_hits_at: list[int]
    ) -> None:
        """Note every disagreement of LF/LH, BRF/BRH, FNF/FNH with the record's own detail."""
        for i, r in enumerate(self.batch):
            said = r.summary
            if not said:
                continue
            for counter, found, hit in (
                ("lines", line_at[i + 1] - line_at[i], line_hits_at[i + 1] - line_hits_at[i]),
                ("branches", branch_at[i + 1] - branch_at[i], branch_hits_at[i + 1] - branch_hits_at[i]),
                ("functions", len(r.fn_hits), -1),
            ):
                found_tag, hit_tag, _ = SUMMARIES[counter]
                if found_tag in said or hit_tag in said:
                    hit = int(np.count_nonzero(r.fn_hits)) if hit < 0 else hit
                    stated = (said.get(found_tag, found), said.get(hit_tag, hit))
                    if stated != (found, hit):
                        self.mismatches.append((r.file, r.test, counter, stated, (found, hit)))

    def _observe(
        self, lines: Rows, lines_per_record: np.ndarray, branches: Rows, branches_per_record: np.ndarray
    ) -> None:
        """Per-test observations: every line, branch and function a named test's record hit."""
        b = self.builder
        tests = np.array([b.test(r.test) if r.test else -1 for r in self.batch], dtype=I32)
        if not (tests >= 0).any():
            return
        files = np.array([r.file for r in self.batch], dtype=I32)
        for r, t in zip(self.batch, tests.tolist()):
            if t >= 0:
                self.repeated_observations |= (t, r.file) in self.observed
                self.observed.add((t, r.file))
        test, file = np.repeat(tests, lines_per_record), np.repeat(files, lines_per_record)
        named = test >= 0
        self._observed(
            test=test[named],
            file=file[named],
            kind=OBS_LINE,
            line=lines[named, 0],
            item=0,
            hits=lines[named, 1],
        )
        test, file = np.repeat(tests, branches_per_record), np.repeat(files, branches_per_record)
        # A text id's item comes from its text, not from when it was first seen:
        # 0x8000 | 15 bits of its CRC-32 (a clash needs two texts on one line).
        text_items = np.array([0x8000 | zlib.crc32(text) & 0x7FFF for text in self.branch_texts], dtype=I64)
        is_text = branches[:, 2] >= TEXT_KEY
        branch = branches[:, 2].copy()
        branch[is_text] = text_items[branch[is_text] - TEXT_KEY]
        named = test >= 0
        kept = named & (branches[:, 1] < 2**15) & (branch < 2**16)  # item = block << 16 | branch, an int32
        if (kept != named).any():
            self.notes.append(
                f"{int((kept != named).sum())} branch observations are not kept "
                "(block above 32767 or branch id above 65535)"
            )
        self._observed(
            test=test[kept],
            file=file[kept],
            kind=OBS_BRANCH,
            line=branches[kept, 0],
            item=(branches[kept, 1] << 16) | branch[kept],
            hits=branches[kept, 3],
        )
        named_records = [i for i, t in enumerate(tests.tolist()) if t >= 0]
        owner = np.repeat(named_records, [len(self.batch[i].fn_hits) for i in named_records]).astype(np.intp)
        start = np.concatenate([self.batch[i].functions.start for i in named_records])
        hits = np.concatenate([self.batch[i].fn_hits for i in named_records])
        called = hits > 0
        self._observed(
            test=tests[owner[called]],
            file=files[owner[called]],
            kind=OBS_FUNCTION,
            line=start[called],
            item=0,
            hits=hits[called],
        )

    def _observed(self, **columns: Any) -> None:
        """One batch of observations: into the report, or into the sink that streams them out."""
        if self.sink is None:
            self.builder.add("test_observations", **columns)
            return
        n = max(len(v) for v in columns.values() if np.ndim(v))
        if n:
            self.sink.add(
                {
                    name: np.full(n, columns[name], dtype)
                    if np.ndim(columns[name]) == 0
                    else np.ascontiguousarray(columns[name], dtype)
                    for name, dtype in SCHEMAS["test_observations"].items()
                }
            )

    # -- the report -----------------------------------------------------------------------
    def build(self) -> NormalizedReport:
        self._flush()
        b = self.builder
        if self.sink is not None and self.repeated_observations:
            b.saturated |= self.sink.merge()
        n = len(self.files)
        lines = _stack([m.lines for m in self.files], 2)  # file, line, count
        branches = _stack([m.branches for m in self.files], 4)  # file, line, block, key, taken
        functions = _stack([m.fn_hits.reshape(-1, 1) for m in self.files], 1)  # file, hits
        b.add("lines", file=lines[:, 0], line=lines[:, 1], hits=lines[:, 2])
        keys, which = np.unique(branches[:, 3], return_inverse=True)
        texts = list(self.branch_texts)
        labels = np.array(
            [_text(texts[k - TEXT_KEY]) if k >= TEXT_KEY else str(k) for k in keys.tolist()], dtype=object
        )
        b.add(
            "branches",
            file=branches[:, 0],
            line=branches[:, 1],
            block=branches[:, 2],
            branch=labels[which.reshape(-1)],
            taken=branches[:, 4],
        )
        items = [item for m in self.files for item in m.fn_items]
        b.add(
            "functions",
            file=functions[:, 0],
            name=np.array([_text(name) for name, _, _ in items], dtype=object),
            start_line=[start for _, start, _ in items],
            end_line=[end for _, _, end in items],
            hits=functions[:, 1],
        )
        # A file's totals: the merged detail, or its one record's summary lines.
        file_totals = {
            counter: (
                np.bincount(rows[:, 0], minlength=n).astype(I64),
                np.bincount(rows[:, 0], rows[:, -1] > 0, n).astype(I64),
            )
            for counter, rows in (("lines", lines), ("branches", branches), ("functions", functions))
        }
        said: dict[bytes, tuple[list[int], list[int]]] = {tag: ([], []) for tag in SUMMARY_TAGS}
        for index, merge in enumerate(self.files):
            if merge.records == 1:
                for tag, value in merge.summary.items():
                    said[tag][0].append(index)
                    said[tag][1].append(value)
        for counter, (found_tag, hit_tag, _) in SUMMARIES.items():
            for tag, column in zip((found_tag, hit_tag), file_totals[counter]):
                at, values = said[tag]
                column[at] = values
        for message in self._mismatch_messages():
            b.warn("summary_detail_mismatch", message)
        for note in self.notes[:MAX_WARNINGS]:
            b.warn("observations_dropped", note)
        return b.build(
            file_totals=file_totals, merge_lines=None, merge_observations=self.repeated_observations
        )

    def _mismatch_messages(self) -> Iterator[str]:
        for index, test, counter, said, detail in self.mismatches[:MAX_WARNINGS]:
            found_tag, hit_tag, records = SUMMARIES[counter]
            tags = f"{found_tag.decode()}/{hit_tag.decode()}"
            where = self.paths[index] + (f" (TN:{test})" if test else "")
            use = (
                f"the totals use {tags}, the producing tool's figures"
                if self.files[index].records == 1
                else "the totals merge the file's records like lcov --summary"
            )
            yield (
                f"{where}: {tags} say {said[0]:,} {counter} found, {said[1]:,} hit; the {records} records "
                f"give {detail[0]:,} found, {detail[1]:,} hit. The detail is kept; {use}"
            )
        if len(self.mismatches) > MAX_WARNINGS:
            yield f"{len(self.mismatches) - MAX_WARNINGS} more summary/detail disagreements are not listed"


class _FileMerge:
    """All records of one source file, merged as ``lcov --summary`` merges them.

    Lines: union, counts summed. Branches: union, taken summed, "-" (-1) only
    where every record says "-". Functions: union by (name, ordinal), counts
    summed. Geninfo repeats the same lines and branches in every test's record,
    so the common case is an element-wise sum of equal-shaped arrays.
    """

    def __init__(self, builder: ReportBuilder) -> None:
        self.builder = builder  # hears of a clamped sum (``saturated``)
        self.records = 0
        self.summary: dict[bytes, int] = {}
        self.lines = NO_LINES
        self.branches = NO_BRANCHES
        self.fn_keys: list[tuple[bytes, int]] = []
        self.fn_index: dict[tuple[bytes, int], int] = {}
        self.fn_items: list[tuple[bytes, int, int]] = []
        self.fn_hits = NO_HITS

    def add(self, lines: Rows, branches: Rows, r: _Record) -> None:
        """Merge one record: its rows sorted and unique, its functions and their counts."""
        self.records += 1
        self.summary = r.summary
        self.lines = _combine(self.lines, lines, 1, self.builder)
        self.branches = _combine(self.branches, branches, 3, self.builder)
        fn = r.functions
        if fn.keys == self.fn_keys:
            if not fn.keys:
                return
            self.fn_hits, over = sums.add(self.fn_hits, r.fn_hits)
            self.builder.saturated |= over
            return
        where = []
        for key, item in zip(fn.keys, fn.items):
            i = self.fn_index.get(key)
            if i is None:
                i = self.fn_index[key] = len(self.fn_keys)
                self.fn_keys.append(key)
                self.fn_items.append(item)
            where.append(i)
        merged = np.zeros(len(self.fn_keys), I64)
        merged[: len(self.fn_hits)] = self.fn_hits
        self.builder.saturated |= sums.add_at(merged, np.array(where, dtype=np.intp), r.fn_hits)
        self.fn_hits = merged


# -- runs -------------------------------------------------------------------------------
def _da_shape(text: bytes) -> tuple[bytes, bytes] | None:
    """``(text, skeleton)`` if each line is ``DA:`` then digits, a comma and digits (checksums
    dropped), in some order the digits-less skeleton cannot tell: see DA_NUMBERS. Else None."""
    skeleton = text.translate(None, DIGITS)
    n = (len(skeleton) + 1) // 5
    if skeleton != b"DA:," + b"\nDA:," * (n - 1):
        text = CHECKSUM.sub(rb"\1", text)  # DA:<line>,<count>,<checksum>
        skeleton = text.translate(None, DIGITS)
        n = (len(skeleton) + 1) // 5
        if skeleton != b"DA:," + b"\nDA:," * (n - 1):
            return None
    return text, skeleton


def _da_rows(text: bytes, skeleton: bytes) -> Rows | None:
    """Shaped DA lines as (line, count) rows, or None if a number is out of bounds."""
    n = (len(skeleton) + 1) // 5
    values = _ints(text.translate(DA_NUMBERS), 2 * n)
    if values is None or not 1 <= values[0::2].min() <= values[0::2].max() <= INT32_MAX:
        return None
    return values.reshape(n, 2)


def _brda_shape(text: bytes) -> tuple[bytes, bytes] | None:
    """``(text, skeleton)`` if every line is ``BRDA:`` and four fields of digits or "-", else None."""
    skeleton = text.translate(None, DIGITS)
    bare = skeleton.translate(None, b"-") if b"-" in skeleton else skeleton
    n = (len(bare) + 1) // 9
    return (text, skeleton) if bare == b"BRDA:,,," + b"\nBRDA:,,," * (n - 1) else None


def _brda_rows(text: bytes, skeleton: bytes) -> Rows | None:
    """Shaped BRDA lines as (line, block, branch, taken) rows with "-" as -1, or None."""
    dash_lines = np.empty(0, np.intp)
    if b"-" in skeleton:
        # A "-" is fine only as a whole taken field: after a comma, at a line's end.
        a = np.frombuffer(text, np.uint8)
        at = np.flatnonzero(a == 0x2D)
        after = np.minimum(at + 1, len(a) - 1)
        if not ((a[at - 1] == 0x2C) & ((at + 1 == len(a)) | (a[after] == 0x0A))).all():
            return None
        # Each skeleton line is "BRDA:,,,\n" (9 bytes) plus its dash.
        in_skeleton = np.flatnonzero(np.frombuffer(skeleton, np.uint8) == 0x2D)
        dash_lines = (in_skeleton - np.arange(len(in_skeleton))) // 9
    n = (len(skeleton) + 1 - len(dash_lines)) // 9
    values = _ints(text.translate(BRDA_NUMBERS), 4 * n)
    if values is None:
        return None
    rows = values.reshape(n, 4)
    if rows[:, 0].min() < 1 or rows[:, :3].max() > INT32_MAX:
        return None
    rows[dash_lines, 3] = -1
    return rows


DA_RUNS = _RunKind(_da_shape, _da_rows, 2, "exact_lines")
BRDA_RUNS = _RunKind(_brda_shape, _brda_rows, 4, "exact_branches")


def _bulk_fnda(run: bytes, fn: _Functions, hits: np.ndarray, b: ReportBuilder) -> bool:
    """Add a run of ``FNDA:<count>,<name>`` lines to ``hits`` in bulk; False if it needs the exact reader."""
    if fn.unique_names is None:
        return False
    a = np.frombuffer(run, np.uint8)
    commas, newlines = np.flatnonzero(a == 0x2C), np.flatnonzero(a == 0x0A)
    n = len(newlines) + 1
    # exactly one comma on each line (else a name holds commas: the exact reader splits it)
    if len(commas) != n or (commas[:-1] > newlines).any() or (commas[1:] < newlines).any():
        return False
    parts = run[5:].replace(b"\nFNDA:", b",").split(b",")
    counts = b",".join(parts[0::2])
    if len(parts) != 2 * n or counts.translate(None, DIGITS + b","):  # some line is not FNDA:<digits>,
        return False
    where = list(map(fn.unique_names.get, parts[1::2]))
    values = _ints(counts, n)
    if values is None or None in where:
        return False
    b.saturated |= sums.add_at(hits, np.array(where, dtype=np.intp), values)
    return True


def _ints(text: bytes, expected: int) -> np.ndarray | None:
    """Exactly ``expected`` comma-separated integers, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # numpy < 2 warns on bad data
            values = np.fromstring(text, dtype=I64, sep=",")
    except ValueError:
        return None
    # fromstring clamps overflowing numbers to INT64_MAX: the exact reader judges them.
    if len(values) != expected or not expected or values.max() == INT64_MAX:
        return None
    return values


# -- merging ----------------------------------------------------------------------------
def _by_record(
    pieces: list[list[Rows]], width: int, b: ReportBuilder, whole: Rows | None
) -> tuple[Rows, np.ndarray]:
    """Each record's pieces as one table; record i owns ``rows[at[i]:at[i + 1]]``, sorted and unique.

    ``whole``, when given, is already that table: the pieces are its slices, in order.
    """
    at = np.zeros(len(pieces) + 1, dtype=np.intp)
    np.cumsum([sum(len(p) for p in own) for own in pieces], out=at[1:])
    if whole is not None:
        rows = whole
    else:
        flat = [p for own in pieces for p in own]
        rows = flat[0] if len(flat) == 1 else np.concatenate(flat) if flat else np.empty((0, width), I64)
    keys = width - 1
    increasing = _increasing(rows[:, :keys])
    inner = at[1:-1]
    increasing[inner[(inner > 0) & (inner < len(rows))] - 1] = True  # a record's first row starts afresh
    unsorted = np.flatnonzero(~increasing)
    if len(unsorted):
        owners = set((np.searchsorted(at, unsorted, side="right") - 1).tolist())
        parts = [
            _unique(rows[at[i] : at[i + 1]], keys, b) if i in owners else rows[at[i] : at[i + 1]]
            for i in range(len(pieces))
        ]
        rows = np.concatenate(parts)
        np.cumsum([len(p) for p in parts], out=at[1:])
    return rows, at


def _stack(per_file: list[Rows], width: int) -> Rows:
    """Per-file rows as one table whose first column is the file index."""
    sizes = np.fromiter(map(len, per_file), np.intp, len(per_file))
    out = np.empty((int(sizes.sum()), width + 1), I64)
    out[:, 0] = np.repeat(np.arange(len(per_file)), sizes)
    if len(out):
        # One C loop over the files (a slice assignment per file costs microseconds at 100,000 files).
        np.concatenate(per_file, out=out[:, 1:])
    return out


def _combine(acc: Rows, rows: Rows, keys: int, b: ReportBuilder) -> Rows:
    """A file's sorted unique rows merged with a record's.

    The last column is summed; for branches it is a taken count, and -1
    ("-") survives only where every merged count is -1.
    """
    if not len(acc):
        return rows
    if len(acc) == len(rows) and np.array_equal(acc[:, :keys], rows[:, :keys]):
        # In place: ``acc`` is this file's alone (a copy, or a slice of a finished batch).
        a, c = acc[:, keys], rows[:, keys]
        if keys == 1:  # line counts are never negative
            acc[:, keys], over = sums.add(a, c)
        else:
            total, over = sums.add(np.maximum(a, 0), np.maximum(c, 0))
            acc[:, keys] = np.where((a < 0) & (c < 0), -1, total)
        b.saturated |= over
        return acc
    return _unique(np.concatenate([acc, rows]), keys, b)


def _unique(rows: Rows, keys: int, b: ReportBuilder) -> Rows:
    """Rows sorted by their first ``keys`` columns; rows with equal keys merged as in ``_combine``."""
    if _increasing(rows[:, :keys]).all():
        return rows
    rows = rows[np.lexsort(rows[:, :keys].T[::-1])]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (rows[1:, :keys] != rows[:-1, :keys]).any(axis=1)
    starts = np.flatnonzero(first)
    values = rows[:, keys]
    summed, over = sums.reduceat(np.maximum(values, 0), starts)
    b.saturated |= over
    out = rows[starts]
    out[:, keys] = np.where(np.maximum.reduceat(values, starts) < 0, -1, summed)
    return out


def _increasing(keys: Rows) -> np.ndarray:
    """For each row after the first: are its keys above the previous row's (lexicographically)?"""
    above = keys[1:, -1] > keys[:-1, -1]
    for j in range(keys.shape[1] - 2, -1, -1):  # the first column that differs decides
        a, b = keys[1:, j], keys[:-1, j]
        above = (a > b) | ((a == b) & above)
    return above


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")
