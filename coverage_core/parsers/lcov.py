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

Speed: a record's run of ``DA:`` (likewise ``BRDA:``, ``FNDA:``) lines is cut
out with ``bytes.find`` and its numbers parsed by NumPy in one call, after a
check that proves the run holds nothing but such lines: deleting the digits
must leave exactly ``DA:,`` on every line. Any run that fails the check (text
branch ids, a minus sign, a damaged line) is read by the exact line-by-line
reader, which is also what names the line of an error.

A report whose last record has no ``end_of_record`` is refused as truncated:
a cut-off tracefile would otherwise give plausible but wrong totals.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator

import numpy as np

from ..report import I64, OBS_BRANCH, OBS_FUNCTION, OBS_LINE, NormalizedReport, ReportBuilder
from .numbers import INT64_MAX, count
from .source import ReportBytes, malformed

FORMAT = "lcov"
TOOL = None

END = b"end_of_record"
INT32_MAX = 2**31 - 1  # line, block and numeric branch ids land in int32 columns
# Text branch ids (coverage.py: "jump to line 5") get keys above every numeric
# id, so one int64 key column orders and merges both kinds.
TEXT_KEY = 2**40
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
BULK_TAGS = (b"\nDA:", b"\nBRDA:", b"\nFN:", b"\nFNDA:")
CHECKSUM = re.compile(rb"^(DA:[^,\n]*,[^,\n]*),[^\n]*$", re.M)
DIGITS = b"0123456789"
# For NumPy, a run's tags become leading zeros and its newlines commas:
# "DA:12,3\nDA:13,0" reads as "00012,3,00013,0". An empty line-number field
# would read as 0, so the fast path refuses line 0 and lets the exact reader judge.
DA_NUMBERS = bytes.maketrans(b"DA:\n", b"000,")
BRDA_NUMBERS = bytes.maketrans(b"BRDA:\n-", b"00000,0")

Rows = np.ndarray  # int64 (n, 2) lines: line, count | (n, 4) branches: line, block, key, taken


def sniff(head: bytes, tail: bytes) -> bool:
    """A tracefile starts with ``TN:`` or ``SF:`` and names a source file early."""
    return head.startswith(b"SF:") or (head.startswith(b"TN:") and b"\nSF:" in head)


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
    """Each record as ``(offset in data of rec[0], rec)``, ``rec = b"\\n" + its lines``.

    The leading newline lets every tag be found as ``b"\\nTAG:"``; a record
    ends with the newline before its ``end_of_record``.
    """
    pos = search = 0
    while (end := data.find(END, search)) >= 0:
        after = search = end + len(END)
        if (end and data[end - 1] != 0x0A) or data[after : after + 1] not in (b"", b"\n", b" ", b"\t"):
            continue  # inside another line, which the record's reader will judge
        yield pos - 1, (data[pos - 1 : end] if pos else b"\n" + data[:end])
        pos = search = data.find(b"\n", after) + 1 or len(data)
    if data[pos:].strip():
        line = data.count(b"\n", 0, pos) + 1
        sf = re.search(rb"^SF:([^\n]*)", data[pos:], re.M)
        what = f"the record for {_text(sf.group(1))}" if sf else "the last record"
        raise malformed(
            origin,
            f"{what} (from line {line}) has no end_of_record: the report looks truncated",
            line,
            "Regenerate the report or copy it again in full; every LCOV record ends with end_of_record.",
        )
    if not pos:
        raise malformed(origin, "no LCOV record (SF: ... end_of_record) found")


class _Functions:
    """A record's functions in FN order, keyed (name, ordinal among equal names).

    c8 writes several functions with one name and pairs them with FNDA lines
    in order, so the k-th ``FNDA:<n>,f`` belongs to the k-th ``FN:..,f``.
    """

    def __init__(self, fn: list[tuple[bytes, int, int]]) -> None:
        self.items = fn
        per_name: dict[bytes, int] = {}
        keys = []
        for name, _, _ in fn:
            k = per_name.get(name, 0)
            keys.append((name, k))
            per_name[name] = k + 1
        self.keys = keys
        self.per_name = per_name
        self.start = np.array([start for _, start, _ in fn], dtype=I64)
        self.position = {key: i for i, key in enumerate(keys)}
        # name -> position when no name repeats: lets FNDA runs be matched in bulk
        self.unique_names = {name: i for (name, _), i in self.position.items()} if len(per_name) == len(keys) else None

    def extended(self, more: list[tuple[bytes, int, int]]) -> _Functions:
        return _Functions(self.items + more) if more else self

    def match(self, fnda: list[tuple[bytes, int]], hits: np.ndarray) -> dict[bytes, int]:
        """Add FNDA counts to ``hits``; return the counts of names no FN line declares."""
        seen: dict[bytes, int] = {}
        orphans: dict[bytes, int] = {}
        for name, n in fnda:
            k = seen.get(name, 0)
            seen[name] = k + 1
            declared = self.per_name.get(name, 0)
            if declared:  # more FNDA than FN lines for a name: lcov sums them by name
                hits[self.position[(name, min(k, declared - 1))]] += n
            else:
                orphans[name] = orphans.get(name, 0) + n
        return orphans


class _Record:
    """One record's detail, gathered from fast runs and exact lines."""

    def __init__(self) -> None:
        self.path: bytes | None = None
        self.summary: dict[bytes, int] = {}
        self.lines: list[Rows] = []
        self.branches: list[Rows] = []
        self.functions: _Functions | None = None
        self.fn_hits = np.empty(0, I64)
        self.exact_lines: list[tuple[int, int]] = []
        self.exact_branches: list[tuple[int, int, int, int]] = []
        self.exact_fn: list[tuple[bytes, int, int]] = []
        self.exact_fnda: list[tuple[bytes, int]] = []


class _Parser:
    """Reads records one at a time and merges them per source file."""

    def __init__(self, data: bytes, origin: str) -> None:
        self.data = data
        self.origin = origin
        self.builder = ReportBuilder(FORMAT, TOOL)
        self.test = ""  # TN: holds until the next TN: line, as in lcov
        self.files: list[_FileMerge] = []
        self.paths: list[str] = []
        self.branch_texts: dict[bytes, int] = {}
        self.observed: set[tuple[int, int]] = set()
        self.repeated_observations = False
        self.mismatches: list[tuple[int, str, str, tuple[int, int], tuple[int, int]]] = []
        self.notes: list[str] = []
        self._fn_runs: dict[bytes, _Functions] = {}

    # -- one record -------------------------------------------------------------
    def record(self, offset: int, rec: bytes) -> None:
        r = _Record()
        fnda = None
        fast = {b"\nDA:": self._da, b"\nBRDA:": self._brda}
        for start, stop, tag in _regions(rec):
            part, here = rec[start:stop], offset + start
            if tag == b"\nFNDA:":
                fnda = (part, here)  # read once the record's FN lines are known
            elif tag == b"\nFN:":
                self._fn(part, here, r)
            elif tag is None or not fast[tag](part, r):
                self._exact(part, here, r)
        if r.path is None:
            raise malformed(self.origin, "a record has no SF: line", self._line_of(offset + 1))
        self._functions(r, fnda)
        self._merge(r)

    def _line_of(self, offset: int) -> int:
        return self.data.count(b"\n", 0, max(offset, 0)) + 1

    # -- the exact reader -------------------------------------------------------
    def _exact(self, text: bytes, offset: int, r: _Record) -> None:
        for line in text.split(b"\n"):
            item = line.rstrip()
            if item:
                tag, colon, value = item.partition(b":")
                if not colon:
                    self._bad(offset, f"not an LCOV line: {_text(item[:60])!r}")
                self._item(tag, value, offset, r)
            offset += len(line) + 1

    def _item(self, tag: bytes, value: bytes, here: int, r: _Record) -> None:
        """One ``TAG:value`` line, checked exactly; ``here`` is its offset in the report."""
        if tag == b"DA":
            # DA:<line>,<count>[,<checksum>]
            fields = value.split(b",")
            if len(fields) < 2:
                self._bad(here, "DA needs <line>,<count>")
            r.exact_lines.append((self._int(fields[0], "DA line number", here, INT32_MAX),
                                  self._int(fields[1], "DA execution count", here)))
        elif tag == b"BRDA":
            # BRDA:<line>,<block>,<branch>,<taken|->; a text branch id may hold
            # commas, so the last field is split off from the right.
            head = value.split(b",", 2)
            branch, _, taken = head[-1].rpartition(b",")
            if len(head) < 3 or not branch:
                self._bad(here, "BRDA needs <line>,<block>,<branch>,<taken>")
            r.exact_branches.append((
                self._int(head[0], "BRDA line number", here, INT32_MAX),
                self._int(head[1], "BRDA block", here, INT32_MAX),
                self._branch_key(branch),
                -1 if taken == b"-" else self._int(taken, "BRDA taken count", here),
            ))
        elif tag == b"FN":
            # FN:<line>[,<end line>],<name>
            start, _, rest = value.partition(b",")
            end, comma, name = rest.partition(b",")
            if not (comma and end.isdigit()):
                end, name = b"0", rest
            if not name:
                self._bad(here, "FN needs <line>[,<end line>],<name>")
            r.exact_fn.append((name, self._int(start, "FN line number", here, INT32_MAX),
                               self._int(end, "FN end line", here, INT32_MAX)))
        elif tag == b"FNDA":
            # FNDA:<count>,<name>
            hits, _, name = value.partition(b",")
            if not name:
                self._bad(here, "FNDA needs <count>,<name>")
            r.exact_fnda.append((name, self._int(hits, "FNDA execution count", here)))
        elif tag in SUMMARY_TAGS:
            r.summary[tag] = self._int(value, f"{tag.decode()} value", here)
        elif tag == b"SF":
            if r.path is not None:
                self._bad(here, "a second SF: in one record (end_of_record missing before it)")
            if not value.strip():
                self._bad(here, "SF: names no file")
            r.path = value.strip()
        elif tag == b"TN":
            self.test = _text(value.strip())
        elif not OTHER_TAG.match(tag):
            self._bad(here, f"not an LCOV line: {_text((tag + b':' + value)[:60])!r}")

    def _bad(self, here: int, what: str) -> None:
        raise malformed(self.origin, what, self._line_of(here))

    def _int(self, text: bytes, what: str, here: int, maximum: int = INT64_MAX) -> int:
        if text.isdigit() and len(text) < 19:
            value = int(text)
        elif len(text) > 40:
            self._bad(here, f"{what} must be an integer below 2**63, got {_text(text[:20])!r}...")
        else:  # the line number is worked out only for the report's one error
            value = count(text, self.origin, what, self._line_of(here))
        if value > maximum:
            self._bad(here, f"{what} is out of range ({value})")
        return value

    def _branch_key(self, branch: bytes) -> int:
        if branch.isdigit() and int(branch) <= INT32_MAX:
            return int(branch)
        return TEXT_KEY + self.branch_texts.setdefault(branch, len(self.branch_texts))

    # -- the fast path: whole runs at once; False sends a run to the exact reader -
    def _da(self, run: bytes, r: _Record) -> bool:
        """``DA:<line>,<count>`` lines (checksums dropped) as one NumPy parse."""
        skeleton = run.translate(None, DIGITS)
        n = (len(skeleton) + 1) // 5
        if skeleton != b"DA:," + b"\nDA:," * (n - 1):
            run = CHECKSUM.sub(rb"\1", run)  # DA:<line>,<count>,<checksum>
            skeleton = run.translate(None, DIGITS)
            n = (len(skeleton) + 1) // 5
            if skeleton != b"DA:," + b"\nDA:," * (n - 1):
                return False
        values = _ints(run.translate(DA_NUMBERS), 2 * n)
        if values is None:
            return False
        rows = values.reshape(n, 2)
        if rows[:, 0].min() < 1 or rows[:, 0].max() > INT32_MAX:
            return False
        r.lines.append(rows)
        return True

    def _brda(self, run: bytes, r: _Record) -> bool:
        """``BRDA:<line>,<block>,<branch>,<taken|->`` lines with numeric ids."""
        skeleton = run.translate(None, DIGITS)
        dash_lines = None
        if b"-" in skeleton:
            # A "-" is fine only as a whole taken field: after a comma, at a line's end.
            a = np.frombuffer(run, np.uint8)
            at = np.flatnonzero(a == 0x2D)
            nxt = np.minimum(at + 1, len(a) - 1)
            if not ((a[at - 1] == 0x2C) & ((at + 1 == len(a)) | (a[nxt] == 0x0A))).all():
                return False
            # Each skeleton line is "BRDA:,,,\n" (9 bytes) plus its dash.
            in_skeleton = np.flatnonzero(np.frombuffer(skeleton, np.uint8) == 0x2D)
            dash_lines = (in_skeleton - np.arange(len(in_skeleton))) // 9
            skeleton = skeleton.translate(None, b"-")
        n = (len(skeleton) + 1) // 9
        if skeleton != b"BRDA:,,," + b"\nBRDA:,,," * (n - 1):
            return False
        values = _ints(run.translate(BRDA_NUMBERS), 4 * n)
        if values is None:
            return False
        rows = values.reshape(n, 4)
        if rows[:, 0].min() < 1 or rows[:, :3].max() > INT32_MAX:
            return False
        if dash_lines is not None:
            rows[dash_lines, 3] = -1
        r.branches.append(rows)
        return True

    def _fn(self, run: bytes, here: int, r: _Record) -> None:
        """A run of FN lines, read exactly; the same run in another record is read once."""
        functions = self._fn_runs.get(run)
        if functions is None:
            exact = _Record()
            self._exact(run, here, exact)
            functions = _Functions(exact.exact_fn)
            if len(self._fn_runs) > 1024:
                self._fn_runs.clear()
            self._fn_runs[run] = functions
        r.functions = functions

    def _functions(self, r: _Record, fnda: tuple[bytes, int] | None) -> None:
        """Pair FNDA counts with the record's FN lines."""
        fn = r.functions.extended(r.exact_fn) if r.functions is not None else _Functions(r.exact_fn)
        hits = np.zeros(len(fn.keys), I64)
        if fnda is not None and not _bulk_fnda(fnda[0], fn, hits):
            self._exact(*fnda, r)
        orphans = fn.match(r.exact_fnda, hits)
        if orphans:  # FNDA without FN: lcov still counts the function; its line is unknown (0)
            fn = fn.extended([(name, 0, 0) for name in orphans])
            hits = np.concatenate([hits, np.array(list(orphans.values()), dtype=I64)])
        r.functions = fn
        r.fn_hits = _checked(hits, self.origin)

    # -- merging -----------------------------------------------------------------
    def _merge(self, r: _Record) -> None:
        assert r.path is not None and r.functions is not None
        path = _text(r.path)
        index = self.builder.file(path)
        if index == len(self.files):
            self.files.append(_FileMerge(self.origin))
            self.paths.append(path)
        merge = self.files[index]
        merge.lines, lines = _combine(merge.lines, _rows(r.lines, r.exact_lines, 2), 1, self.origin)
        merge.branches, branches = _combine(merge.branches, _rows(r.branches, r.exact_branches, 4), 3, self.origin)
        merge.add_functions(r.functions, r.fn_hits, r.summary)
        self._check_summary(index, r.summary, lines, branches, r.fn_hits)
        if self.test:
            self._observe(index, lines, branches, r.functions, r.fn_hits)

    def _check_summary(self, index: int, summary: dict[bytes, int], lines: Rows, branches: Rows,
                       fn_hits: np.ndarray) -> None:
        """Note every disagreement of LF/LH, BRF/BRH, FNF/FNH with the record's own detail."""
        detail = {
            "lines": (len(lines), int(np.count_nonzero(lines[:, 1] > 0))),
            "branches": (len(branches), int(np.count_nonzero(branches[:, 3] > 0))),
            "functions": (len(fn_hits), int(np.count_nonzero(fn_hits))),
        }
        for counter, (found_tag, hit_tag, _) in SUMMARIES.items():
            if found_tag in summary or hit_tag in summary:
                found, hit = detail[counter]
                said = (summary.get(found_tag, found), summary.get(hit_tag, hit))
                if said != (found, hit):
                    self.mismatches.append((index, self.test, counter, said, (found, hit)))

    def _observe(self, index: int, lines: Rows, branches: Rows, fn: _Functions, fn_hits: np.ndarray) -> None:
        """Per-test observations: every line, branch and function the record's test hit."""
        test = self.builder.test(self.test)
        self.repeated_observations |= (test, index) in self.observed
        self.observed.add((test, index))
        add = self.builder.add
        hit = lines[lines[:, 1] > 0]
        add("test_observations", test=test, file=index, kind=OBS_LINE, line=hit[:, 0], item=0, hits=hit[:, 1])
        taken = branches[branches[:, 3] > 0]
        branch = np.where(taken[:, 2] >= TEXT_KEY, taken[:, 2] - TEXT_KEY, taken[:, 2])
        fits = (taken[:, 1] < 2**15) & (branch < 2**16)  # item = block << 16 | branch, an int32
        if not fits.all():
            self.notes.append(f"{self.paths[index]}: {int((~fits).sum())} branch observations of test "
                              f"{self.test!r} are not kept (block above 32767 or branch above 65535)")
        add("test_observations", test=test, file=index, kind=OBS_BRANCH, line=taken[fits, 0],
            item=(taken[fits, 1] << 16) | branch[fits], hits=taken[fits, 3])
        called = fn_hits > 0
        add("test_observations", test=test, file=index, kind=OBS_FUNCTION, line=fn.start[called],
            item=0, hits=fn_hits[called])

    def build(self) -> NormalizedReport:
        b = self.builder
        n = b.n_files
        file_totals = {k: (np.zeros(n, I64), np.zeros(n, I64)) for k in SUMMARIES}
        texts = {TEXT_KEY + i: _text(t) for t, i in self.branch_texts.items()}
        for index, merge in enumerate(self.files):
            merge.emit(b, index, texts)
            for counter, (found, hit) in merge.totals().items():
                file_totals[counter][0][index] = found
                file_totals[counter][1][index] = hit
        for message in self._mismatch_messages():
            b.warn("summary_detail_mismatch", message)
        for note in self.notes[:MAX_WARNINGS]:
            b.warn("observations_dropped", note)
        return b.build(file_totals=file_totals, merge_lines=None, merge_observations=self.repeated_observations)

    def _mismatch_messages(self) -> Iterator[str]:
        for index, test, counter, said, detail in self.mismatches[:MAX_WARNINGS]:
            found_tag, hit_tag, records = SUMMARIES[counter]
            tags = f"{found_tag.decode()}/{hit_tag.decode()}"
            where = self.paths[index] + (f" (TN:{test})" if test else "")
            use = (f"the totals use {tags}, the producing tool's figures" if self.files[index].records == 1
                   else "the totals merge the file's records like lcov --summary")
            yield (f"{where}: {tags} say {said[0]:,} {counter} found, {said[1]:,} hit; the {records} records "
                   f"give {detail[0]:,} found, {detail[1]:,} hit. The detail is kept; {use}")
        if len(self.mismatches) > MAX_WARNINGS:
            yield f"{len(self.mismatches) - MAX_WARNINGS} more summary/detail disagreements are not listed"


def _regions(rec: bytes) -> list[tuple[int, int, bytes | None]]:
    """Split a record into disjoint ``(start, stop, tag)`` regions covering it.

    A tagged region runs from the tag's first line to its last line before
    the next tag's first line. Writers group each tag's lines, so a region
    normally holds all of them and nothing else; when one does not (coverage.py
    writes FN and FNDA lines in turns), the fast path's check fails and the
    region is read line by line, like the untagged gaps between regions.
    """
    firsts = sorted((at + 1, tag) for tag in BULK_TAGS if (at := rec.find(tag)) >= 0)
    regions: list[tuple[int, int, bytes | None]] = []
    at = 0
    for i, (first, tag) in enumerate(firsts):
        limit = firsts[i + 1][0] if i + 1 < len(firsts) else len(rec)
        stop = rec.find(b"\n", rec.rfind(tag, first - 1, limit) + 1)
        regions += [(at, first, None), (first, stop, tag)]
        at = stop
    regions.append((at, len(rec), None))
    return regions


def _bulk_fnda(run: bytes, fn: _Functions, hits: np.ndarray) -> bool:
    """``FNDA:<count>,<name>`` lines matched to FN names in bulk, when no name repeats."""
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
    np.add.at(hits, np.array(where, dtype=np.intp), values)
    return True


class _FileMerge:
    """All records of one source file, merged as ``lcov --summary`` merges them.

    Lines: union, counts summed. Branches: union, taken summed, "-" (-1) only
    where every record says "-". Functions: union by (name, ordinal), counts
    summed. Geninfo repeats the same lines and branches in every test's record,
    so the common case is an element-wise sum of equal-shaped arrays.
    """

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.records = 0
        self.summary: dict[bytes, int] = {}
        self.lines = np.empty((0, 2), I64)
        self.branches = np.empty((0, 4), I64)
        self.fn_keys: list[tuple[bytes, int]] = []
        self.fn_index: dict[tuple[bytes, int], int] = {}
        self.fn_start: list[int] = []
        self.fn_end: list[int] = []
        self.fn_hits = np.empty(0, I64)

    def add_functions(self, fn: _Functions, hits: np.ndarray, summary: dict[bytes, int]) -> None:
        self.records += 1
        self.summary = summary
        if fn.keys == self.fn_keys:
            self.fn_hits = _checked(self.fn_hits + hits, self.origin)
            return
        where = []
        for key, (_, start, end) in zip(fn.keys, fn.items):
            i = self.fn_index.get(key)
            if i is None:
                i = self.fn_index[key] = len(self.fn_keys)
                self.fn_keys.append(key)
                self.fn_start.append(start)
                self.fn_end.append(end)
            where.append(i)
        merged = np.zeros(len(self.fn_keys), I64)
        merged[: len(self.fn_hits)] = self.fn_hits
        np.add.at(merged, np.array(where, dtype=np.intp), hits)
        self.fn_hits = _checked(merged, self.origin)

    def totals(self) -> dict[str, tuple[int, int]]:
        """The file's totals: its summary lines if it has one record, else the merged detail."""
        detail = {
            "lines": (len(self.lines), int(np.count_nonzero(self.lines[:, 1] > 0))),
            "branches": (len(self.branches), int(np.count_nonzero(self.branches[:, 3] > 0))),
            "functions": (len(self.fn_hits), int(np.count_nonzero(self.fn_hits))),
        }
        if self.records > 1:
            return detail
        return {
            counter: (self.summary.get(found, detail[counter][0]), self.summary.get(hit, detail[counter][1]))
            for counter, (found, hit, _) in SUMMARIES.items()
        }

    def emit(self, b: ReportBuilder, index: int, texts: dict[int, str]) -> None:
        if len(self.lines):
            b.add("lines", file=index, line=self.lines[:, 0], hits=self.lines[:, 1])
        if len(self.branches):
            keys, at = np.unique(self.branches[:, 2], return_inverse=True)
            labels = np.array([texts.get(k, str(k)) for k in keys.tolist()], dtype=object)
            b.add("branches", file=index, line=self.branches[:, 0], block=self.branches[:, 1],
                  branch=labels[at], taken=self.branches[:, 3])
        if self.fn_keys:
            names = np.array([_text(name) for name, _ in self.fn_keys], dtype=object)
            b.add("functions", file=index, name=names, start_line=self.fn_start, end_line=self.fn_end,
                  hits=self.fn_hits)


# -- array helpers ---------------------------------------------------------------
def _ints(text: bytes, expected: int) -> np.ndarray | None:
    """Exactly ``expected`` comma-separated integers, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # numpy < 2 warns on bad data
            values = np.fromstring(text, dtype=I64, sep=",")
    except ValueError:
        return None
    # fromstring clamps overflowing numbers to INT64_MAX: the exact reader judges them.
    if len(values) != expected or values.max() == INT64_MAX:
        return None
    return values


def _rows(chunks: list[Rows], exact: list[tuple[int, ...]], width: int) -> Rows:
    if exact:
        chunks = [*chunks, np.array(exact, dtype=I64).reshape(-1, width)]
    if not chunks:
        return np.empty((0, width), I64)
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def _combine(acc: Rows, rows: Rows, keys: int, origin: str) -> tuple[Rows, Rows]:
    """Merge a record's rows into a file's; return (merged rows, the record's unique rows).

    The last column is summed; for branches it is a taken count, and -1
    ("-") survives only where every merged count is -1.
    """
    if len(acc) == len(rows) and np.array_equal(acc[:, :keys], rows[:, :keys]):
        merged = acc.copy()
        a, b = acc[:, keys], rows[:, keys]
        if keys == 1:  # line counts are never negative
            merged[:, 1] = _checked(a + b, origin)
        else:
            total = _checked(np.maximum(a, 0) + np.maximum(b, 0), origin)
            merged[:, keys] = np.where((a < 0) & (b < 0), -1, total)
        return merged, rows
    rows = _unique(rows, keys, origin)
    if not len(acc):
        return rows, rows
    return _unique(np.concatenate([acc, rows]), keys, origin), rows


def _unique(rows: Rows, keys: int, origin: str) -> Rows:
    """Rows sorted by their first ``keys`` columns; rows with equal keys merged."""
    if len(rows) < 2:
        return rows
    step = np.diff(rows[:, :keys], axis=0)
    increasing = step[:, keys - 1] > 0
    for j in range(keys - 2, -1, -1):  # lexicographic: the first nonzero step decides
        increasing = (step[:, j] > 0) | ((step[:, j] == 0) & increasing)
    if increasing.all():
        return rows
    rows = rows[np.lexsort(rows[:, :keys].T[::-1])]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (rows[1:, :keys] != rows[:-1, :keys]).any(axis=1)
    starts = np.flatnonzero(first)
    values = rows[:, keys]
    counts = np.maximum(values, 0)
    if (np.add.reduceat(counts.astype(np.float64), starts) > 9.2e18).any():
        raise malformed(origin, "a merged execution count overflows a 64-bit counter")
    out = rows[starts]
    out[:, keys] = np.where(np.maximum.reduceat(values, starts) < 0, -1, np.add.reduceat(counts, starts))
    return out


def _checked(total: np.ndarray, origin: str) -> np.ndarray:
    """Sums of non-negative int64 counts are negative exactly when they overflowed."""
    if len(total) and total.min() < -1:
        raise malformed(origin, "a merged execution count overflows a 64-bit counter")
    return total


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")
