"""LCOV tracefiles (geninfo/lcov, coverage.py, istanbul/nyc/c8, llvm-cov writers).

This module owns reading LCOV into a ``NormalizedReport``: records split on
``end_of_record``, several records of one file merged the way ``lcov
--summary`` merges them, per-test observations from ``TN:``, and the choice
between a writer's summary lines and its detail (see FORMATS.md).

Grammar (one item per line; a record ends with ``end_of_record``)::

    TN:<test name>                      test of the records that follow
    SF:<source file>                    starts a record
    FN:<line>[,<end line>],<name>       a function
    FNDA:<count>,<name>                 its execution count
    FNF:<n> / FNH:<n>                   functions found / hit
    BRDA:<line>,<block>,<branch>,<taken|->
    BRF:<n> / BRH:<n>                   branches found / hit
    DA:<line>,<count>[,<checksum>]      a line and its execution count
    LF:<n> / LH:<n>                     lines found / hit
    end_of_record

Speed: a record's contiguous run of ``DA:`` (or ``BRDA:``, ``FN:``,
``FNDA:``) lines is cut out with ``bytes.find`` and its numbers parsed by
NumPy in one call; everything else, and any run the fast path cannot vouch
for, goes through an exact line-by-line parser that also names the line of
any error. The 108 MB SQLite tracefile parses ~20x faster than ``lcov
--summary`` (benchmarks/README.md).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator

import numpy as np

from ..report import I32, I64, OBS_BRANCH, OBS_FUNCTION, OBS_LINE, NormalizedReport, ReportBuilder
from .numbers import INT64_MAX, count
from .source import ReportBytes, malformed

FORMAT = "lcov"
TOOL = None

END = b"end_of_record"
LINE_MAX = 2**31 - 1  # line, block and numeric branch columns are int32
# Text branch ids (coverage.py: "jump to line 5") get keys above every
# numeric id so one int64 key column orders and merges both kinds.
TEXT_KEY_BASE = 2**40
MAX_WARNINGS = 20
SUMMARY_TAGS = (b"LF", b"LH", b"FNF", b"FNH", b"BRF", b"BRH")
# Tags of newer lcov versions and other writers that carry nothing we count.
IGNORED_TAG = re.compile(rb"[A-Z][A-Z0-9_]*\Z")


def sniff(head: bytes, tail: bytes) -> bool:
    """A tracefile starts with ``TN:`` or ``SF:`` and names a source file early."""
    if not (head.startswith(b"TN:") or head.startswith(b"SF:")):
        return False
    return head.startswith(b"SF:") or b"\nSF:" in head


def parse_bytes(report: ReportBytes) -> NormalizedReport:
    data = report.data
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\r\n" in data[:65536]:
        data = data.replace(b"\r\n", b"\n")
    parser = _Parser(data, report.origin)
    for offset, rec in _records(data, report.origin):
        parser.record(offset, rec)
    return parser.build()


def _records(data: bytes, origin: str) -> Iterator[tuple[int, bytes]]:
    """Each record as ``(offset of its first byte - 1, b"\\n" + its lines)``.

    The leading newline lets every tag be found as ``b"\\nTAG:"``; the record
    ends with the newline before its ``end_of_record``.
    """
    pos = 0
    search = 0
    while True:
        end = data.find(END, search)
        if end < 0:
            break
        after = end + len(END)
        at_line_start = end == 0 or data[end - 1] == 0x0A
        if not at_line_start or (after < len(data) and data[after] not in b"\n \t"):
            search = after  # part of another line; the record parser judges it
            continue
        yield (pos - 1, data[pos - 1 : end] if pos else b"\n" + data[:end])
        pos = search = data.find(b"\n", after) + 1 or len(data)
    rest = data[pos:]
    if rest.strip():
        sf = rest.find(b"SF:")
        name = rest[sf + 3 : rest.find(b"\n", sf) if b"\n" in rest[sf:] else None] if sf >= 0 else b""
        line = data.count(b"\n", 0, pos) + 1
        what = f"the record for {_text(name)}" if name else "the last record"
        raise malformed(
            origin,
            f"{what} (from line {line}) has no end_of_record: the report looks truncated",
            line,
            suggestion="Regenerate the report or copy it again completely; LCOV records end with end_of_record.",
        )
    if not pos:
        raise malformed(origin, "no LCOV record (SF: ... end_of_record) found")


class _Record:
    """The detail of one record, as arrays, before merging with other records."""

    def __init__(self) -> None:
        self.path: bytes | None = None
        self.lines = np.empty(0, I32)
        self.hits = np.empty(0, I64)
        # branch columns: line, block, key (numeric id or TEXT_KEY_BASE + text index), taken
        self.branches = np.empty((0, 4), I64)
        self.fn_keys: tuple = ()  # (name, ordinal) per FN, in FN order
        self.fn_start = np.empty(0, I32)
        self.fn_end = np.empty(0, I32)
        self.fn_hits = np.empty(0, I64)
        self.summary: dict[bytes, int] = {}


class _Parser:
    """Reads records one at a time and merges them per source file."""

    def __init__(self, data: bytes, origin: str) -> None:
        self.data = data
        self.origin = origin
        self.builder = ReportBuilder(FORMAT, TOOL)
        self.test = ""  # TN: persists until the next TN: line, as in lcov
        self.files: list[_FileMerge] = []
        self.branch_texts: dict[bytes, int] = {}
        self.observed: set[tuple[int, int]] = set()
        self.repeat_observations = False
        self.warnings: list[str] = []
        self._fn_cache: tuple[bytes, tuple, np.ndarray, np.ndarray, dict] | None = None

    # -- one record ---------------------------------------------------------
    def record(self, offset: int, rec: bytes) -> None:
        r = _Record()
        slow: list[tuple[int, int]] = []  # (start, end) of rec parts for the line parser
        cuts: list[tuple[int, int, bytes]] = []
        for tag in (b"\nDA:", b"\nBRDA:", b"\nFN:", b"\nFNDA:"):
            first = rec.find(tag)
            if first < 0:
                continue
            last = rec.rfind(tag)
            stop = rec.find(b"\n", last + 1)
            block = rec[first + 1 : stop]
            n = block.count(tag) + 1
            if block.count(b"\n") + 1 == n:  # one contiguous run of this tag
                cuts.append((first + 1, stop + 1, tag))
        cuts.sort()
        at = 0
        fast: list[tuple[int, bytes]] = []
        for start, stop, tag in cuts:
            slow.append((at, start))
            fast.append((start, tag))
            at = stop
        slow.append((at, len(rec)))
        lists = _Lists()
        for start, stop in slow:
            self._lines(rec, start, stop, offset, r, lists)
        if r.path is None:
            raise malformed(self.origin, "record without SF: line", self._line_of(offset + 1))
        fnda: tuple[int, bytes] | None = None
        for start, tag in fast:
            stop = rec.find(b"\n", rec.rfind(tag) + 1)
            block = rec[start:stop]
            if tag == b"\nDA:":
                self._da(block, offset + start, r)
            elif tag == b"\nBRDA:":
                self._brda(block, offset + start, r)
            elif tag == b"\nFN:":
                self._fn(block, offset + start, r)
            else:
                fnda = (start, block)
        lists.into(r, self)
        if fnda is not None:
            self._fnda(fnda[1], offset + fnda[0], r, lists)
        lists.fnda_into(r, self)
        self._merge(r)

    def _line_of(self, offset: int) -> int:
        return self.data.count(b"\n", 0, max(offset, 0)) + 1

    # -- the exact, line-by-line path ---------------------------------------
    def _lines(self, rec: bytes, start: int, stop: int, offset: int, r: _Record, out: _Lists) -> None:
        at = start
        for raw in rec[start:stop].split(b"\n"):
            here = offset + at
            at += len(raw) + 1
            line = raw.rstrip()
            if not line:
                continue
            tag, colon, value = line.partition(b":")
            if not colon:
                raise malformed(self.origin, f"not an LCOV line: {_text(line[:60])!r}", self._line_of(here))
            self._item(tag, value, here, r, out)

    def _item(self, tag: bytes, value: bytes, here: int, r: _Record, out: _Lists) -> None:
        """One ``TAG:value`` line, checked exactly."""
        if tag == b"DA":
            # DA:<line>,<count>[,<checksum>]
            fields = value.split(b",")
            if len(fields) < 2:
                self._bad(here, "DA needs <line>,<count>")
            out.lines.append(self._int(fields[0], "DA line number", here, LINE_MAX))
            out.hits.append(self._int(fields[1], "DA execution count", here))
        elif tag == b"BRDA":
            # BRDA:<line>,<block>,<branch>,<taken|->; the branch id may be
            # text with commas in it ("jump to line 5"), so split from both ends.
            head = value.split(b",", 2)
            if len(head) < 3 or b"," not in head[2]:
                self._bad(here, "BRDA needs <line>,<block>,<branch>,<taken>")
            branch, _, taken = head[2].rpartition(b",")
            if not branch:
                self._bad(here, "BRDA branch id is empty")
            out.branches.append((
                self._int(head[0], "BRDA line number", here, LINE_MAX),
                self._int(head[1], "BRDA block", here, LINE_MAX),
                self._branch_key(branch),
                -1 if taken.strip() == b"-" else self._int(taken, "BRDA taken count", here),
            ))
        elif tag == b"FN":
            # FN:<line>[,<end line>],<name>
            first, _, rest = value.partition(b",")
            end = b"0"
            maybe_end, comma, name = rest.partition(b",")
            if comma and maybe_end.strip().isdigit():
                end, rest = maybe_end, name
            if not rest:
                self._bad(here, "FN needs <line>[,<end line>],<name>")
            out.fn.append((rest, self._int(first, "FN line number", here, LINE_MAX), self._int(end, "FN end line", here, LINE_MAX)))
        elif tag == b"FNDA":
            # FNDA:<count>,<name>
            hits, comma, name = value.partition(b",")
            if not comma or not name:
                self._bad(here, "FNDA needs <count>,<name>")
            out.fnda.append((name, self._int(hits, "FNDA execution count", here), here))
        elif tag in SUMMARY_TAGS:
            r.summary[tag] = self._int(value, tag.decode(), here)
        elif tag == b"SF":
            if r.path is not None:
                self._bad(here, "second SF: in one record (missing end_of_record before it)")
            if not value:
                self._bad(here, "SF: names no file")
            r.path = value
        elif tag == b"TN":
            self.test = _text(value.strip())
        elif not IGNORED_TAG.match(tag):
            self._bad(here, f"not an LCOV line: {_text((tag + b':' + value)[:60])!r}")

    def _bad(self, here: int, what: str) -> None:
        raise malformed(self.origin, what, self._line_of(here))

    def _int(self, text: bytes, what: str, here: int, maximum: int = INT64_MAX) -> int:
        value = count(text, self.origin, what, self._line_of(here))
        if value > maximum:
            self._bad(here, f"{what} is out of range ({value})")
        return value

    def _branch_key(self, branch: bytes) -> int:
        if branch.isdigit() and int(branch) <= LINE_MAX:
            return int(branch)
        return TEXT_KEY_BASE + self.branch_texts.setdefault(branch, len(self.branch_texts))

    # -- the vectorized path for contiguous runs ------------------------------
    def _da(self, block: bytes, here: int, r: _Record) -> None:
        """``DA:<line>,<count>`` lines as a (line, count) array, or the exact path."""
        n = block.count(b"\n") + 1
        text = block[3:].replace(b"\nDA:", b",")
        if text.count(b",") == 2 * n - 1 + n:  # checksums: drop the third field
            text = re.sub(rb",[^,]*(,|\Z)", lambda m: m.group(1) and b",", text.replace(b",", b",", 0))
            text = _drop_every_third(text)
        values = _ints(text, 2 * n)
        if values is not None:
            pairs = values.reshape(n, 2)
            if pairs[:, 0].max() <= LINE_MAX and pairs[:, 1].max() < INT64_MAX:
                r.lines = np.concatenate([r.lines, pairs[:, 0].astype(I32)])
                r.hits = np.concatenate([r.hits, pairs[:, 1]])
                return
        out = _Lists()
        self._block(block, here, r, out)
        out.into(r, self)

    def _brda(self, block: bytes, here: int, r: _Record) -> None:
        n = block.count(b"\n") + 1
        text = block[5:].replace(b"\nBRDA:", b",")
        # "-" (never evaluated) becomes -1; any other minus sign is an error
        # the exact path reports.
        dashes = text.count(b",-,") + text.endswith(b",-")
        values = None
        if text.count(b"-") == dashes:
            text = text.replace(b",-,", b",-1,") + (b"1" if text.endswith(b",-") else b"")
            values = _ints(text, 4 * n, allow_negative=True)
        if values is not None:
            rows = values.reshape(n, 4)
            ids = rows[:, :3]
            if ids.min() >= 0 and ids.max() <= LINE_MAX and rows[:, 3].max() < INT64_MAX:
                r.branches = np.concatenate([r.branches, rows])
                return
        out = _Lists()
        self._block(block, here, r, out)
        out.into(r, self)

    def _fn(self, block: bytes, here: int, r: _Record) -> None:
        """FN lines; a run identical to the previous record's is parsed once."""
        cache = self._fn_cache
        if cache is None or cache[0] != block:
            out = _Lists()
            self._block(block, here, r, out)
            keys, start, end = _function_keys(out.fn)
            position: dict = {}
            for i, key in enumerate(keys):
                position.setdefault(key[0], i)
            self._fn_cache = cache = (block, keys, start, end, position)
        _, r.fn_keys, r.fn_start, r.fn_end, _ = cache
        r.fn_hits = np.zeros(len(r.fn_keys), I64)

    def _fnda(self, block: bytes, here: int, r: _Record, out: _Lists) -> None:
        """FNDA lines matched to the record's FN lines by name."""
        n = block.count(b"\n") + 1
        parts = block[5:].replace(b"\nFNDA:", b",").split(b",")
        cache = self._fn_cache
        names = parts[1::2]
        if cache is not None and cache[1] is r.fn_keys and len(parts) == 2 * n and len(cache[4]) == len(r.fn_keys):
            where = list(map(cache[4].get, names))
            hits = _ints(b",".join(parts[0::2]), n)
            if hits is not None and None not in where and hits.max() < INT64_MAX:
                np.add.at(r.fn_hits, np.array(where, dtype=np.intp), hits)
                return
        self._block(block, here, r, out)

    def _block(self, block: bytes, here: int, r: _Record, out: _Lists) -> None:
        at = here
        for line in block.split(b"\n"):
            tag, _, value = line.rstrip().partition(b":")
            self._item(tag, value, at, r, out)
            at += len(line) + 1

    # -- merging ---------------------------------------------------------------
    def _merge(self, r: _Record) -> None:
        assert r.path is not None
        path = _text(r.path)
        index = self.builder.file(path)
        if index == len(self.files):
            self.files.append(_FileMerge(path))
        merge = self.files[index]
        merge.add(r, self.origin)
        self._check_summary(r, path)
        if not self.test:
            return
        test = self.builder.test(self.test)
        if (test, index) in self.observed:
            self.repeat_observations = True
        self.observed.add((test, index))
        add = self.builder.add
        hit = r.hits > 0
        if hit.any():
            add("test_observations", test=test, file=index, kind=OBS_LINE, line=r.lines[hit], item=0, hits=r.hits[hit])
        taken = r.branches[r.branches[:, 3] > 0]
        items = (taken[:, 1] << 16) | (taken[:, 2] & 0xFFFF)
        fits = (taken[:, 1] < 2**15) & (taken[:, 2] < 2**16)
        if not fits.all():
            self.warn(f"{path}: {int((~fits).sum())} branch observations of TN:{self.test} are not kept "
                      "(block or branch id too large for an observation key)")
        if fits.any():
            add("test_observations", test=test, file=index, kind=OBS_BRANCH, line=taken[fits, 0],
                item=items[fits], hits=taken[fits, 3])
        called = r.fn_hits > 0
        if called.any():
            add("test_observations", test=test, file=index, kind=OBS_FUNCTION, line=r.fn_start[called],
                item=0, hits=r.fn_hits[called])

    def _check_summary(self, r: _Record, path: str) -> None:
        """Compare a record's LF/LH, BRF/BRH, FNF/FNH with its own detail."""
        detail = _record_counts(r)
        where = f"{path} (TN:{self.test})" if self.test else path
        for counter, (found_tag, hit_tag, records) in _SUMMARIES.items():
            if found_tag not in r.summary and hit_tag not in r.summary:
                continue
            found, hit = detail[counter]
            said = (r.summary.get(found_tag, found), r.summary.get(hit_tag, hit))
            if said != (found, hit):
                self.warn(
                    f"{where}: {found_tag.decode()}/{hit_tag.decode()} say {said[0]:,} {counter} found, "
                    f"{said[1]:,} hit, but the {records} records give {found:,} found, {hit:,} hit"
                )

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def build(self) -> NormalizedReport:
        b = self.builder
        n = b.n_files
        ft = {k: (np.zeros(n, I64), np.zeros(n, I64)) for k in _SUMMARIES}
        for index, merge in enumerate(self.files):
            merge.emit(b, index)
            for counter, (found, hit) in merge.totals().items():
                ft[counter][0][index] = found
                ft[counter][1][index] = hit
        if any(m.records > 1 for m in self.files) and any(m.records == 1 and m.summary for m in self.files):
            pass
        rule = (
            "totals use each file's summary lines where the file has one record, "
            "and the merged detail (lcov --summary) where it has several"
        )
        for message in self.warnings[:MAX_WARNINGS]:
            b.warn("summary_detail_mismatch", f"{message}; {rule}" if "say" in message else message)
        if len(self.warnings) > MAX_WARNINGS:
            b.warn("summary_detail_mismatch", f"{len(self.warnings) - MAX_WARNINGS} more disagreements not listed")
        return b.build(file_totals=ft, merge_lines=None, merge_observations=self.repeat_observations)


_SUMMARIES = {
    "lines": (b"LF", b"LH", "DA"),
    "branches": (b"BRF", b"BRH", "BRDA"),
    "functions": (b"FNF", b"FNH", "FN/FNDA"),
}
