"""LCOV tracefiles (geninfo/lcov, coverage.py, istanbul/nyc/c8, llvm-cov writers).

This module owns reading LCOV into a ``NormalizedReport``: records split on
``end_of_record``, several records of one file merged the way ``lcov
--summary`` merges them, per-test observations from ``TN:``, and the choice
between a writer's summary lines and its detail (see FORMATS.md).

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

Speed: a record's contiguous run of ``DA:`` (likewise ``BRDA:``, ``FN:``,
``FNDA:``) lines is located with ``bytes.find`` and its numbers parsed by
NumPy in one call. Everything else, and any run the fast path cannot vouch
for (a count mismatch, a minus sign, text branch ids), goes through the exact
line-by-line reader, which is also what names the line of an error.

A report whose last record has no ``end_of_record`` is refused as truncated:
a cut-off tracefile would otherwise give plausible but wrong totals.
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
INT32_MAX = 2**31 - 1  # line, block and numeric branch ids land in int32 columns
# Text branch ids (coverage.py: "jump to line 5") get keys above every numeric
# id, so one int64 key column orders and merges both kinds.
TEXT_KEY = 2**40
MAX_WARNINGS = 20
# counter -> (found tag, hit tag, the detail records it summarizes)
SUMMARIES = {
    "lines": (b"LF", b"LH", "DA"),
    "branches": (b"BRF", b"BRH", "BRDA"),
    "functions": (b"FNF", b"FNH", "FN/FNDA"),
}
SUMMARY_TAGS = frozenset(tag for found, hit, _ in SUMMARIES.values() for tag in (found, hit))
# Tags of other lcov versions (VER:, FNL:, FNA:, MCDC:...) carry nothing counted here.
OTHER_TAG = re.compile(rb"[A-Z][A-Z0-9_]*\Z")
CHECKSUM = re.compile(rb"^(DA:[^,\n]*,[^,\n]*),[^\n]*$", re.M)
BULK_TAGS = (b"\nDA:", b"\nBRDA:", b"\nFN:", b"\nFNDA:")


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
    """Each record as ``(offset in data of its first byte, b"\\n" + its lines)``.

    The leading newline lets every tag be found as ``b"\\nTAG:"``; a record
    ends with the newline before its ``end_of_record``.
    """
    pos = search = 0
    while (end := data.find(END, search)) >= 0:
        after = end + len(END)
        search = after
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


class _Record:
    """One record's detail as arrays, before it is merged with other records."""

    def __init__(self) -> None:
        self.path: bytes | None = None
        self.summary: dict[bytes, int] = {}
        self.lines: list[np.ndarray] = []  # int64 (n, 2): line, count
        self.branches: list[np.ndarray] = []  # int64 (n, 4): line, block, key, taken
        self.functions: _Functions | None = None  # from a contiguous FN run
        self.fn_hits: np.ndarray | None = None
        # Items read by the exact path.
        self.exact_lines: list[tuple[int, int]] = []
        self.exact_branches: list[tuple[int, int, int, int]] = []
        self.exact_fn: list[tuple[bytes, int, int]] = []
        self.exact_fnda: list[tuple[bytes, int]] = []


class _Functions:
    """A record's functions in FN order, keyed (name, ordinal among equal names).

    c8 writes several functions with one name and pairs them with FNDA lines
    in order, so the k-th ``FNDA:<n>,f`` belongs to the k-th ``FN:..,f``.
    """

    def __init__(self, fn: list[tuple[bytes, int, int]]) -> None:
        seen: dict[bytes, int] = {}
        keys = []
        for name, _, _ in fn:
            keys.append((name, seen.get(name, 0)))
            seen[name] = seen.get(name, 0) + 1
        self.keys: list[tuple[bytes, int]] = keys
        self.per_name = seen
        self.start = np.array([s for _, s, _ in fn], dtype=I32)
        self.end = np.array([e for _, _, e in fn], dtype=I32)
        self.position = {key: i for i, key in enumerate(keys)}
        self.unique_names = {name: i for i, (name, _) in enumerate(keys)} if len(seen) == len(keys) else None

    def match(self, fnda: list[tuple[bytes, int]], hits: np.ndarray) -> list[tuple[bytes, int]]:
        """Add FNDA counts to ``hits``; return the FNDA lines that name no FN."""
        taken: dict[bytes, int] = {}
        orphans = []
        for name, n in fnda:
            k = taken.get(name, 0)
            taken[name] = k + 1
            have = self.per_name.get(name, 0)
            if not have:
                orphans.append((name, n))
            else:  # more FNDA than FN lines for a name: lcov sums them by name
                hits[self.position[(name, min(k, have - 1))]] += n
        return orphans


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

    # -- one record -----------------------------------------------------------
    def record(self, offset: int, rec: bytes) -> None:
        r = _Record()
        runs = []
        for tag in BULK_TAGS:
            first = rec.find(tag)
            if first >= 0:
                stop = rec.find(b"\n", rec.rfind(tag) + 1)
                run = rec[first + 1 : stop]
                if run.count(tag) == run.count(b"\n"):  # no other line in between
                    runs.append((first + 1, stop, tag, run))
        runs.sort()
        at = 0
        for start, stop, _, _ in runs:
            self._exact(rec[at:start], offset + at, r)
            at = stop
        self._exact(rec[at:], offset + at, r)
        if r.path is None:
            raise malformed(self.origin, "a record has no SF: line", self._line_of(offset + 1))
        fnda = None
        for start, _, tag, run in runs:
            if tag == b"\nFNDA:":
                fnda = (run, offset + start)
            else:
                self._FAST[tag](self, run, offset + start, r)
        self._functions(r, fnda)
        self._merge(r)

    def _line_of(self, offset: int) -> int:
        return self.data.count(b"\n", 0, max(offset, 0)) + 1

    # -- the exact path ---------------------------------------------------------
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
        """One ``TAG:value`` line, checked exactly; ``here`` is its offset."""
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
                -1 if taken.strip() == b"-" else self._int(taken, "BRDA taken count", here),
            ))
        elif tag == b"FN":
            # FN:<line>[,<end line>],<name>
            start, _, rest = value.partition(b",")
            end, comma, name = rest.partition(b",")
            if not (comma and end.strip().isdigit()):
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
            r.path = value
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
        else:  # the line number is only worked out for a report's one error
            value = count(text, self.origin, what, self._line_of(here))
        if value > maximum:
            self._bad(here, f"{what} is out of range ({value})")
        return value

    def _branch_key(self, branch: bytes) -> int:
        if branch.isdigit() and int(branch) <= INT32_MAX:
            return int(branch)
        return TEXT_KEY + self.branch_texts.setdefault(branch, len(self.branch_texts))

    # -- the vectorized path for contiguous runs ----------------------------------
    def _da(self, run: bytes, offset: int, r: _Record) -> None:
        """``DA:<line>,<count>`` lines, parsed as one ``line,count,...`` string."""
        n = run.count(b"\n") + 1
        text = run[3:].replace(b"\nDA:", b",")
        if text.count(b",") == 3 * n - 1:  # every line has a checksum: drop them
            text = CHECKSUM.sub(rb"\1", run)[3:].replace(b"\nDA:", b",")
        values = _ints(text, 2 * n)
        if values is None or values[0::2].max() > INT32_MAX:
            return self._exact(run, offset, r)
        r.lines.append(values.reshape(n, 2))

    def _brda(self, run: bytes, offset: int, r: _Record) -> None:
        """``BRDA:<line>,<block>,<branch>,<taken>`` lines with numeric ids."""
        n = run.count(b"\n") + 1
        text = run[5:].replace(b"\nBRDA:", b",")
        # "-" (never evaluated) is read as -1; any other minus sign is left to
        # the exact path to report.
        ends_with_dash = text.endswith(b",-")
        if text.count(b"-") != text.count(b",-,") + ends_with_dash:
            return self._exact(run, offset, r)
        text = text.replace(b",-,", b",-1,") + (b"1" if ends_with_dash else b"")
        values = _ints(text, 4 * n, negative_ok=True)
        if values is None:
            return self._exact(run, offset, r)
        rows = values.reshape(n, 4)
        ids = rows[:, :3]
        if ids.min() < 0 or ids.max() > INT32_MAX:
            return self._exact(run, offset, r)
        r.branches.append(rows)

    def _fn(self, run: bytes, offset: int, r: _Record) -> None:
        """A run of FN lines; the same run in another record is read once."""
        functions = self._fn_runs.get(run)
        if functions is None:
            before = len(r.exact_fn)
            self._exact(run, offset, r)
            functions = _Functions(r.exact_fn[before:])
            del r.exact_fn[before:]
            if len(self._fn_runs) > 256:
                self._fn_runs.clear()
            self._fn_runs[run] = functions
        r.functions = functions

    _FAST = {b"\nDA:": _da, b"\nBRDA:": _brda, b"\nFN:": _fn}

    def _functions(self, r: _Record, fnda: tuple[bytes, int] | None) -> None:
        """Pair FNDA counts with the record's FN lines (a FN run is all of them)."""
        if r.functions is None:
            r.functions = _Functions(r.exact_fn)
        hits = np.zeros(len(r.functions.keys), I64)
        if fnda is not None and not self._fast_fnda(fnda[0], r.functions, hits):
            self._exact(fnda[0], fnda[1], r)
        orphans: dict[bytes, int] = {}
        for name, n in r.functions.match(r.exact_fnda, hits):
            orphans[name] = orphans.get(name, 0) + n
        if orphans:  # FNDA without FN: lcov still counts the function; its line is unknown (0)
            fn = r.functions
            known = [(name, int(s), int(e)) for (name, _), s, e in zip(fn.keys, fn.start, fn.end)]
            r.functions = _Functions(known + [(name, 0, 0) for name in orphans])
            hits = np.concatenate([hits, np.array(list(orphans.values()), dtype=I64)])
        r.fn_hits = _checked(hits, self.origin)

    @staticmethod
    def _fast_fnda(run: bytes, functions: _Functions, hits: np.ndarray) -> bool:
        n = run.count(b"\n") + 1
        parts = run[5:].replace(b"\nFNDA:", b",").split(b",")
        if functions.unique_names is None or len(parts) != 2 * n:
            return False
        where = list(map(functions.unique_names.get, parts[1::2]))
        counts = _ints(b",".join(parts[0::2]), n)
        if counts is None or None in where:
            return False
        np.add.at(hits, np.array(where, dtype=np.intp), counts)
        return True

    # -- merging ------------------------------------------------------------------
    def _merge(self, r: _Record) -> None:
        assert r.path is not None and r.functions is not None and r.fn_hits is not None
        path = _text(r.path.strip())
        index = self.builder.file(path)
        if index == len(self.files):
            self.files.append(_FileMerge())
            self.paths.append(path)
        lines = _unique(_rows(r.lines, r.exact_lines, 2), 1, _sum, self.origin)
        branches = _unique(_rows(r.branches, r.exact_branches, 4), 3, _sum_taken, self.origin)
        self._check_summary(index, r, lines, branches)
        self.files[index].add(lines, branches, r.functions, r.fn_hits, r.summary, self.origin)
        if self.test:
            self._observe(index, lines, branches, r.functions, r.fn_hits)

    def _check_summary(self, index: int, r: _Record, lines: np.ndarray, branches: np.ndarray) -> None:
        """Record every disagreement of LF/LH, BRF/BRH, FNF/FNH with the record's detail."""
        detail = {
            "lines": (len(lines), int(np.count_nonzero(lines[:, 1] > 0))),
            "branches": (len(branches), int(np.count_nonzero(branches[:, 3] > 0))),
            "functions": (len(r.fn_hits), int(np.count_nonzero(r.fn_hits > 0))),
        }
        for counter, (found_tag, hit_tag, _) in SUMMARIES.items():
            if found_tag in r.summary or hit_tag in r.summary:
                found, hit = detail[counter]
                said = (r.summary.get(found_tag, found), r.summary.get(hit_tag, hit))
                if said != (found, hit):
                    self.mismatches.append((index, self.test, counter, said, (found, hit)))

    def _observe(self, index: int, lines: np.ndarray, branches: np.ndarray, fn: _Functions, fn_hits: np.ndarray) -> None:
        """Per-test observations: every line, branch and function the test hit."""
        test = self.builder.test(self.test)
        if (test, index) in self.observed:
            self.repeated_observations = True
        self.observed.add((test, index))
        add = self.builder.add
        hit = lines[lines[:, 1] > 0]
        add("test_observations", test=test, file=index, kind=OBS_LINE, line=hit[:, 0], item=0, hits=hit[:, 1])
        taken = branches[branches[:, 3] > 0]
        low = np.where(taken[:, 2] >= TEXT_KEY, taken[:, 2] - TEXT_KEY, taken[:, 2])
        fits = (taken[:, 1] < 2**15) & (low < 2**16)
        if not fits.all():
            self.notes.append(f"{self.paths[index]}: {int((~fits).sum())} branch observations of test "
                              f"{self.test!r} are not kept (block above 32767 or branch id above 65535)")
        add("test_observations", test=test, file=index, kind=OBS_BRANCH, line=taken[fits, 0],
            item=(taken[fits, 1] << 16) | low[fits], hits=taken[fits, 3])
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
            single = self.files[index].records == 1
            where = self.paths[index] + (f" (TN:{test})" if test else "")
            yield (
                f"{where}: {found_tag.decode()}/{hit_tag.decode()} say {said[0]:,} {counter} found, {said[1]:,} hit; "
                f"the {records} records give {detail[0]:,} found, {detail[1]:,} hit. The detail is kept; "
                + (f"the totals use {found_tag.decode()}/{hit_tag.decode()}, the producing tool's figures"
                   if single else "the totals merge the file's records like lcov --summary")
            )
        if len(self.mismatches) > MAX_WARNINGS:
            yield f"{len(self.mismatches) - MAX_WARNINGS} more summary/detail disagreements are not listed"


class _FileMerge:
    """All records of one source file, merged as ``lcov --summary`` merges them.

    Lines: union, counts summed. Branches: union, taken summed, ``-`` only
    where every record says ``-``. Functions: union by (name, ordinal), counts
    summed. Geninfo repeats the same lines and branches in every test's
    record, so the common case is an element-wise sum of equal-shaped arrays.
    """

    def __init__(self) -> None:
        self.records = 0
        self.lines = np.empty((0, 2), I64)
        self.branches = np.empty((0, 4), I64)
        self.fn_keys: list[tuple[bytes, int]] = []
        self.fn_index: dict[tuple[bytes, int], int] = {}
        self.fn_start: list[int] = []
        self.fn_hits = np.empty(0, I64)
        self.summary: dict[bytes, int] = {}

    def add(self, lines: np.ndarray, branches: np.ndarray, fn: _Functions, fn_hits: np.ndarray,
            summary: dict[bytes, int], origin: str) -> None:
        self.records += 1
        self.summary = summary
        self.lines = _combine(self.lines, lines, 1, _sum, origin)
        self.branches = _combine(self.branches, branches, 3, _sum_taken, origin)
        if fn.keys == self.fn_keys:
            self.fn_hits = _checked(self.fn_hits + fn_hits, origin)
            return
        where = []
        for key, start in zip(fn.keys, fn.start.tolist()):
            i = self.fn_index.get(key)
            if i is None:
                i = self.fn_index[key] = len(self.fn_keys)
                self.fn_keys.append(key)
                self.fn_start.append(start)
            where.append(i)
        hits = np.zeros(len(self.fn_keys), I64)
        hits[: len(self.fn_hits)] = self.fn_hits
        np.add.at(hits, np.array(where, dtype=np.intp), fn_hits)
        self.fn_hits = _checked(hits, origin)

    def totals(self) -> dict[str, tuple[int, int]]:
        """The file's totals: its summary lines if it has one record, else the merged detail."""
        detail = {
            "lines": (len(self.lines), int(np.count_nonzero(self.lines[:, 1] > 0))),
            "branches": (len(self.branches), int(np.count_nonzero(self.branches[:, 3] > 0))),
            "functions": (len(self.fn_hits), int(np.count_nonzero(self.fn_hits > 0))),
        }
        if self.records > 1:
            return detail
        return {
            counter: (self.summary.get(found_tag, detail[counter][0]), self.summary.get(hit_tag, detail[counter][1]))
            for counter, (found_tag, hit_tag, _) in SUMMARIES.items()
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
            b.add("functions", file=index, name=names, start_line=self.fn_start, end_line=0, hits=self.fn_hits)


# -- array helpers ------------------------------------------------------------------
def _ints(text: bytes, expected: int, *, negative_ok: bool = False) -> np.ndarray | None:
    """``expected`` comma-separated integers, or None if the text is anything else."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # numpy < 2 warns on bad data
            values = np.fromstring(text, dtype=I64, sep=",")
    except ValueError:
        return None
    if len(values) != expected or not expected:
        return None
    # fromstring clamps overflowing numbers to INT64_MAX: let the exact path judge them.
    if values.max() == INT64_MAX or (not negative_ok and values.min() < 0):
        return None
    return values


def _rows(chunks: list[np.ndarray], exact: list[tuple[int, ...]], width: int) -> np.ndarray:
    if exact:
        chunks = [*chunks, np.array(exact, dtype=I64).reshape(-1, width)]
    if not chunks:
        return np.empty((0, width), I64)
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def _sum(a: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    return np.add.reduceat(a, starts) if starts is not None else a


def _sum_taken(a: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Merge ``taken`` counts: -1 ("-") only where every merged count is -1."""
    total = np.add.reduceat(np.maximum(a, 0), starts)
    return np.where(np.maximum.reduceat(a, starts) < 0, -1, total)


def _unique(rows: np.ndarray, keys: int, reduce, origin: str) -> np.ndarray:
    """Rows sorted by their first ``keys`` columns, duplicates merged by ``reduce``."""
    if len(rows) < 2:
        return rows
    k = rows[:, :keys]
    step = k[1:] - k[:-1]
    # strictly increasing in lexicographic order <=> first nonzero step of each row > 0
    first = np.argmax(step != 0, axis=1)
    if (step[np.arange(len(step)), first] > 0).all():
        return rows
    order = np.lexsort(k.T[::-1])
    rows = rows[order]
    change = np.ones(len(rows), dtype=bool)
    change[1:] = (rows[1:, :keys] != rows[:-1, :keys]).any(axis=1)
    starts = np.flatnonzero(change)
    out = rows[starts]
    if len(starts) < len(rows):
        wide = np.add.reduceat(rows[:, keys].astype(np.float64), starts)
        if (wide > INT64_MAX).any():
            raise malformed(origin, "a merged execution count overflows a 64-bit counter")
        out[:, keys] = reduce(rows[:, keys], starts)
    return out


def _combine(acc: np.ndarray, rows: np.ndarray, keys: int, reduce, origin: str) -> np.ndarray:
    """Merge a record's unique sorted rows into the file's."""
    if not len(acc):
        return rows
    if len(acc) == len(rows) and np.array_equal(acc[:, :keys], rows[:, :keys]):
        out = acc.copy()
        a, b = acc[:, keys], rows[:, keys]
        if reduce is _sum:
            out[:, keys] = _checked(a + b, origin)
        else:
            out[:, keys] = np.where((a < 0) & (b < 0), -1, _checked(np.maximum(a, 0) + np.maximum(b, 0), origin))
        return out
    return _unique(np.concatenate([acc, rows]), keys, reduce, origin)


def _checked(total: np.ndarray, origin: str) -> np.ndarray:
    """Sums of non-negative int64 counts are negative exactly when they overflowed."""
    if len(total) and total.min() < 0:
        raise malformed(origin, "a merged execution count overflows a 64-bit counter")
    return total


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")
