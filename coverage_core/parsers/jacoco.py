"""JaCoCo reports: the XML report (report.dtd 1.1) and, for its totals only, the CSV report.

The XML grammar (``report.dtd``, which is never fetched)::

    <report name>
      <sessioninfo id start dump/>*
      (<group name> ... </group> | <package name>)*
        <class name="pkg/Outer$Inner" sourcefilename>       (no counters: an interface)
          <method name="&lt;init&gt;" desc="()V" line><counter .../>*</method>
          <counter .../>*
        </class>
        <sourcefile name="Outer.java">
          <line nr mi ci mb cb/>*                            (instructions, branches missed/covered)
          <counter .../>*
        </sourcefile>
        <counter .../>*
      </package>
      <counter type="INSTRUCTION|BRANCH|LINE|COMPLEXITY|METHOD|CLASS" missed covered/>*

Totals are the ``<counter>`` elements directly under ``<report>``; a counter
type that is absent has a total of zero (JaCoCo writes only non-empty ones).
Class counters are never summed: a source line shared by an outer class and
its inner classes is counted once per class. Files are ``package/sourcefile``
paths.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from ..report import Counter, NormalizedReport, ReportBuilder
from . import safe_xml
from .reading import ReportBytes, excerpt, malformed
from .report_numbers import count

FORMAT = "jacoco"
TOOL = "jacoco"

COUNTERS: dict[str, str] = {
    "INSTRUCTION": "instructions",
    "BRANCH": "branches",
    "LINE": "lines",
    "COMPLEXITY": "complexity",
    "METHOD": "functions",
    "CLASS": "classes",
}

CSV_HEADER = (
    b"GROUP,PACKAGE,CLASS,INSTRUCTION_MISSED,INSTRUCTION_COVERED,BRANCH_MISSED,BRANCH_COVERED,"
    b"LINE_MISSED,LINE_COVERED,COMPLEXITY_MISSED,COMPLEXITY_COVERED,METHOD_MISSED,METHOD_COVERED"
)

_NO_FILE = -1


def sniff(head: bytes, tail: bytes) -> bool:
    if head.startswith(CSV_HEADER) and head[len(CSV_HEADER) : len(CSV_HEADER) + 1] in (b"\r", b"\n", b""):
        return True
    root = safe_xml.root_element(head)
    if root is None or root.name != b"report":
        return False
    # JaCoCo always writes its DOCTYPE; without one, its first child tells it
    # from other <report> roots (EMMA's starts with <stats>).
    first_child = head[head.find(b">", root.offset) + 1 :].lstrip()
    return b"-//JACOCO//DTD Report" in root.doctype or first_child.startswith(
        (b"<sessioninfo", b"<package", b"<group")
    )


def parse_bytes(report: ReportBytes) -> NormalizedReport:
    if report.data.lstrip(b"\xef\xbb\xbf").startswith(CSV_HEADER):
        return _parse_csv(report)
    collector = _Collector(report)
    safe_xml.stream(report, collector)
    return collector.report()


class _Collector:
    """lxml parser target for the XML report.

    A stack of open tags says whose a ``<counter>`` is. ``<line>`` attributes
    stay strings until the end and become integer columns in one step. Every
    element that can be refused later is remembered with its ordinal among
    same-named elements, which is how an error found after the stream still
    names its line (``safe_xml.sourceline``); for ``<line>`` that is its list index.
    """

    def __init__(self, report: ReportBytes) -> None:
        self._report = report
        self._builder = ReportBuilder(FORMAT, TOOL)
        self._open: list[str] = []
        self._saw_report = False
        self._sessions: list[str] = []
        self._package = ""
        self._class_name = ""
        self._class_file: str | None = None  # package/sourcefilename of the open <class>
        self._file = _NO_FILE  # the open <sourcefile>
        # <line> attributes, and the file of each stretch of them: (first index, file).
        self._nr: list[str | None] = []
        self._mi: list[str | None] = []
        self._ci: list[str | None] = []
        self._mb: list[str | None] = []
        self._cb: list[str | None] = []
        self._runs: list[tuple[int, int]] = []
        # Counters as (type, missed, covered, ordinal); a file's also name the file.
        self._n_counters = 0
        self._report_counters: list[tuple[str, str | None, str | None, int]] = []
        self._file_counters: list[tuple[int, str, str | None, str | None, int]] = []
        # Methods as (file path, name, line, ordinal) and their METHOD counter's (covered, ordinal).
        self._n_methods = 0
        self._methods: list[tuple[str, str, str, int]] = []
        self._method_covered: list[tuple[str | None, int] | None] = []
        self._open_method: int | None = None  # index in _methods of the open <method>
        self._methods_without_source = 0

    # -- lxml target interface ---------------------------------------------
    def start(self, tag: str, attrib: dict[str, str]) -> None:
        parent = self._open[-1] if self._open else None
        self._open.append(tag)
        if tag == "line":
            if self._file == _NO_FILE:
                line = self._line_of("line", len(self._nr))
                raise malformed(self._report.origin, "<line> outside a <sourcefile>", line)
            self._nr.append(attrib.get("nr"))
            self._mi.append(attrib.get("mi"))
            self._ci.append(attrib.get("ci"))
            self._mb.append(attrib.get("mb"))
            self._cb.append(attrib.get("cb"))
        elif tag == "counter":
            self._counter(parent, attrib)
        elif tag == "method":
            self._method(attrib)
        elif tag == "sourcefile":
            self._file = self._builder.file(_path(self._package, attrib.get("name", "")))
            self._runs.append((len(self._nr), self._file))
        elif tag == "class":
            self._class_name = attrib.get("name", "")
            source = attrib.get("sourcefilename")
            self._class_file = _path(self._package, source) if source else None
        elif tag == "package":
            self._package = attrib.get("name", "")
        elif tag == "sessioninfo":
            self._sessions.append(attrib.get("id", ""))
        elif tag == "report" and parent is None:
            self._saw_report = True
            if name := attrib.get("name"):
                self._builder.metadata["name"] = name

    def end(self, tag: str) -> None:
        self._open.pop()
        if tag == "sourcefile":
            self._file = _NO_FILE
        elif tag == "method":
            self._open_method = None

    def close(self) -> None:
        """lxml calls this when the document ends; ``report()`` builds the result."""

    def _line_of(self, tag: str, ordinal: int) -> int | None:
        return safe_xml.sourceline(self._report, tag, ordinal)

    def _counter(self, parent: str | None, attrib: dict[str, str]) -> None:
        ordinal = self._n_counters
        self._n_counters += 1
        kind = attrib.get("type", "")
        if kind not in COUNTERS:
            raise malformed(
                self._report.origin,
                f"unknown counter type ({excerpt(kind)}); expected one of {', '.join(COUNTERS)}",
                self._line_of("counter", ordinal),
            )
        missed, covered = attrib.get("missed"), attrib.get("covered")
        if parent == "report":
            self._report_counters.append((kind, missed, covered, ordinal))
        elif parent == "sourcefile":
            self._file_counters.append((self._file, kind, missed, covered, ordinal))
        elif parent == "method" and kind == "METHOD" and self._open_method is not None:
            self._method_covered[self._open_method] = (covered, ordinal)

    def _method(self, attrib: dict[str, str]) -> None:
        ordinal = self._n_methods
        self._n_methods += 1
        if self._class_file is None:
            # A class compiled without debug information names no source file.
            self._methods_without_source += 1
            return
        self._open_method = len(self._methods)
        simple_class = self._class_name.rsplit("/", 1)[-1]
        name = f"{simple_class}.{attrib.get('name', '')}{attrib.get('desc', '')}"
        # line is optional in report.dtd (no debug information); 0 means unknown.
        self._methods.append((self._class_file, name, attrib.get("line", "0"), ordinal))
        self._method_covered.append(None)

    # -- result ------------------------------------------------------------
    def report(self) -> NormalizedReport:
        builder, origin = self._builder, self._report.origin
        if not self._saw_report:
            raise malformed(origin, "not a JaCoCo report (the root element is not <report>)")
        builder.metadata["dialect"] = "xml"
        builder.metadata["sessions"] = self._sessions

        def line_of(i: int) -> int | None:
            return self._line_of("line", i)

        nr = safe_xml.int_column(self._nr, "<line> nr", origin, line_of, safe_xml.I32_MAX)
        _mi, ci, mb, cb = (
            safe_xml.int_column(values, f"<line> {name}", origin, line_of)
            for name, values in (("mi", self._mi), ("ci", self._ci), ("mb", self._mb), ("cb", self._cb))
        )
        starts = np.array([start for start, _ in self._runs], dtype=np.int64)
        files = np.array([file for _, file in self._runs], dtype=np.int64)
        file = np.repeat(files, np.diff(np.append(starts, len(nr))))
        # A line's count is its covered instructions: JaCoCo counts a line as
        # covered when any of its instructions ran (ci > 0), partly covered ones included.
        builder.add("lines", file=file, line=nr, hits=ci)
        keys = (file << 32) | nr
        in_order = bool(np.all(keys[1:] > keys[:-1]))
        branches = mb + cb
        at = np.flatnonzero(branches)
        safe_xml.add_branch_outcomes(builder, self._report, file[at], nr[at], cb[at], branches[at])
        self._add_functions()
        totals = self._totals()
        self._check_detail(totals["lines"], Counter(len(nr), int((ci > 0).sum())), "lines")
        self._check_detail(totals["branches"], Counter(int(branches.sum()), int(cb.sum())), "branches")
        # A source file listed in two groups comes twice: its lines are summed.
        return builder.build(totals, self._file_totals(), merge_lines=None if in_order else "sum")

    def _add_functions(self) -> None:
        if self._methods_without_source:
            self._builder.warn(
                "methods_without_source",
                f"{self._methods_without_source} methods belong to classes that name no source file "
                "(compiled without debug information); they are not in the functions table",
            )
        if not self._methods:
            return
        origin, methods = self._report.origin, self._methods
        # A method without a METHOD counter has no recorded coverage: it counts as not run.
        covered_at = [entry or ("0", -1) for entry in self._method_covered]
        start = safe_xml.int_column(
            [line for _, _, line, _ in methods],
            "<method> line",
            origin,
            lambda i: self._line_of("method", methods[i][3]),
            safe_xml.I32_MAX,
        )
        covered = safe_xml.int_column(
            [covered for covered, _ in covered_at],
            "METHOD counter covered",
            origin,
            lambda i: self._line_of("counter", covered_at[i][1]),
        )
        self._builder.add(
            "functions",
            file=np.array([self._builder.file(path) for path, _, _, _ in methods], dtype=np.int64),
            name=np.array([name for _, name, _, _ in methods], dtype=object),
            start_line=start,
            end_line=0,  # JaCoCo gives a method's first line only; 0 means unknown
            hits=(covered > 0).astype(np.int64),
        )

    def _counter_values(
        self, entries: list[tuple[str | None, str | None, int]], owner: str
    ) -> tuple[list[int], list[int]]:
        """(missed, covered) of counters given as (missed, covered, ordinal)."""
        origin = self._report.origin

        def line_of(i: int) -> int | None:
            return self._line_of("counter", entries[i][2])

        missed = safe_xml.int_column([m for m, _, _ in entries], f"{owner} counter missed", origin, line_of)
        covered = safe_xml.int_column([c for _, c, _ in entries], f"{owner} counter covered", origin, line_of)
        return missed.tolist(), covered.tolist()

    def _totals(self) -> dict[str, Counter]:
        # JaCoCo writes only counters with a non-zero total: an absent one is 0 of 0.
        totals = {name: Counter(0, 0) for name in COUNTERS.values()}
        counters = self._report_counters
        missed, covered = self._counter_values([(m, c, o) for _, m, c, o in counters], "<report>")
        for (kind, *_), m, c in zip(counters, missed, covered, strict=True):
            totals[COUNTERS[kind]] = Counter(m + c, c)
        return totals

    def _file_totals(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per-file figures from the <sourcefile> counters, JaCoCo's own per-file view."""
        n = self._builder.n_files
        result = {name: (np.zeros(n, np.int64), np.zeros(n, np.int64)) for name in COUNTERS.values()}
        counters = self._file_counters
        missed, covered = self._counter_values([(m, c, o) for _, _, m, c, o in counters], "<sourcefile>")
        for (file, kind, *_), m, c in zip(counters, missed, covered, strict=True):
            found, hit = result[COUNTERS[kind]]
            found[file] += m + c
            hit[file] += c
        return result

    def _check_detail(self, total: Counter, detail: Counter, name: str) -> None:
        if total != detail:
            self._builder.warn(
                "totals_differ_from_detail",
                f"the report-level counter says {name} {total.hit}/{total.found} (covered/total); "
                f"the <line> elements add up to {detail.hit}/{detail.found}",
            )


def _path(package: str, source_file: str) -> str:
    """``package/Source.java``; classes of the default package have no package part."""
    return f"{package}/{source_file}" if package else source_file


# -- CSV report --------------------------------------------------------------
_CSV_COLUMNS = CSV_HEADER.decode().split(",")


def _parse_csv(report: ReportBytes) -> NormalizedReport:
    """Totals of JaCoCo's CSV report: one row per class, summed.

    The CSV has no source files and no line detail. Summing its rows is exact
    for every counter but LINE, which counts a source line shared by several
    classes (inner and anonymous ones) once per class; the XML report's
    report-level LINE counter is the exact figure.
    """
    origin = report.origin
    try:
        text = report.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise malformed(origin, f"the CSV report is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    rows = csv.reader(io.StringIO(text, newline=""))
    if next(rows, None) != _CSV_COLUMNS:
        raise malformed(origin, "not a JaCoCo CSV report (unexpected header)", 1)
    sums = dict.fromkeys(_CSV_COLUMNS[3:], 0)
    classes = covered_classes = 0
    for row in rows:
        if not row:
            continue
        if len(row) != len(_CSV_COLUMNS):
            raise malformed(origin, f"expected {len(_CSV_COLUMNS)} fields, got {len(row)}", rows.line_num)
        values = {
            column: count(value, origin, column, rows.line_num)
            for column, value in zip(_CSV_COLUMNS[3:], row[3:], strict=True)
        }
        for column, value in values.items():
            sums[column] += value
        classes += 1
        # JaCoCo counts a class as covered when at least one of its methods ran.
        covered_classes += values["METHOD_COVERED"] > 0
    builder = ReportBuilder(FORMAT, TOOL)
    builder.metadata["dialect"] = "csv"
    builder.warn(
        "lines_summed_over_classes",
        "a JaCoCo CSV report has one row per class; its LINE counts, summed here, count a source "
        "line shared by several classes (inner and anonymous ones) once per class, so the lines "
        "total can exceed the XML report's",
    )
    totals = {
        name: Counter(sums[f"{kind}_MISSED"] + sums[f"{kind}_COVERED"], sums[f"{kind}_COVERED"])
        for kind, name in COUNTERS.items()
        if kind != "CLASS"
    }
    totals["classes"] = Counter(classes, covered_classes)
    return builder.build(totals)
