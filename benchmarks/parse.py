"""Parse benchmark: our parsers against the readers of the tools that wrote the reports.

Each command runs in a fresh process, ``--repeat`` times, ours and the tools'
in turns so that load on a shared machine falls on all alike; the table shows
medians of wall time, of the process's own CPU time (user + system, which
other processes' load distorts far less) and of its peak RSS. Our side is
``coverage_core.parsers.parse(path)``, reading the file included; the child
reports how long reading and ``parse_bytes`` took, which gives MB/s. The first tool
of a case is the one compared with: it computes what we compute. Corpus files
are decompressed into benchmarks/.work/ first. The Markdown table is printed
and written into benchmarks/README.md (section "parse").

The SQLite LCOV is also read by DuckDB's own line scan in a fresh process:
``read_csv`` of the file as one VARCHAR column (no quotes, no escapes, a
delimiter that never occurs, no detection), ``count(*)`` and
``sum(length(line))`` so that every line is read and materialized; the child
times the query alone, which is compared with our child's reading + parsing.
Its line count is checked against the file's. The streamed row is what an
ingest runs (``parse_stream`` over the report's 2 MiB chunks). The 100,000
small records case is a generated LCOV (10 DA lines per record, 7 TN: tests).
Cobertura is also parsed through the CLI (``coverage-mcp parse --json``,
interpreter start-up and imports included), the user's path, against
``pycobertura show``, whose TOTAL line must give our line totals.
``--code DIR`` measures the coverage_core found in DIR (e.g. a clean export of
main): the children run there.

Example: python benchmarks/parse.py --repeat 5
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from common import ROOT, WORK, corpus_file, load_average, median, write_section

# parse(path) is parse_bytes(read_report(path)); the child calls the two in turn to time each.
CHILD = """
import json, sys, time
from coverage_core.parsers import parse_bytes, read_report
start = time.perf_counter()
data = read_report(sys.argv[1])
read = time.perf_counter()
report = parse_bytes(data)
done = time.perf_counter()
print(json.dumps({"read": read - start, "parse": done - read, "format": report.format, "tests": len(report.tests),
                  "totals": {name: counter.to_dict() for name, counter in report.totals.items()}}))
"""
OURS = "`coverage_core.parsers.parse`"
# What an ingest runs: the report read in chunks, parsed as they arrive.
STREAMED_CHILD = """
import json, sys, time
from coverage_core.parsers import parse_stream, streamed_format
from coverage_core.parsers.opening import open_report
from coverage_core.parsers.reading import ReportStream
start = time.perf_counter()
with open_report(sys.argv[1]) as opened:
    stream = ReportStream(opened)
    fmt = streamed_format(stream.head())
    report = parse_stream(stream.chunks(), sys.argv[1], fmt)
done = time.perf_counter()
print(json.dumps({"read": 0.0, "parse": done - start, "format": report.format, "tests": len(report.tests),
                  "totals": {name: counter.to_dict() for name, counter in report.totals.items()}}))
"""
STREAMED = "`parse_stream` (as an ingest reads: 2 MiB chunks)"
LINE_SCAN = """
import json, sys, time
import duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")  # it prints to stdout when a query runs long
start = time.perf_counter()
lines, chars = con.execute(
    "SELECT count(*), sum(length(line)) FROM read_csv(?, columns = {'line': 'VARCHAR'}, header = false, "
    "delim = '\\x01', quote = '', escape = '', auto_detect = false)", [sys.argv[1]]).fetchall()[0]
print(json.dumps({"scan": time.perf_counter() - start, "lines": lines, "chars": chars}))
"""
CLI = ["-m", "coverage_cli", "parse", "--json"]
CODE = ROOT  # the children run here, so that this folder's coverage_core is the one imported (--code)


@dataclass
class Tool:
    label: str
    command: list[str]  # the report's path is appended


@dataclass
class Case:
    title: str
    corpus_name: str  # a corpus file, or "generated:<name>" (GENERATED)
    tools: list[Tool]
    notes: list[str] = field(default_factory=list)
    line_scan: bool = False
    streamed: bool = False
    cli: bool = False


def small_records(path: Path) -> Path:
    """100,000 LCOV records of 10 DA lines each, 7 tests in turn (TN:), one file per record."""
    if not path.exists():
        tmp = path.with_suffix(".part")
        with tmp.open("w") as out:
            for i in range(100_000):
                out.write(
                    f"TN:t{i % 7}\nSF:/build/gen-1.0/gen/d{i % 97}/f{i:06d}.c\n"
                    + "".join(f"DA:{n},{(i + n) % 3}\n" for n in range(1, 11))
                    + "end_of_record\n"
                )
        tmp.rename(path)
    return path


GENERATED = {"small-records": lambda: small_records(WORK / "synthetic-100k-records.lcov")}


def case_file(case: Case) -> Path:
    if case.corpus_name.startswith("generated:"):
        return GENERATED[case.corpus_name.removeprefix("generated:")]()
    return corpus_file(case.corpus_name)


CASES = {
    "lcov": Case(
        "SQLite gcov LCOV, 60 tests",
        "lcov/sqlite-3.53.2.gcov-60tests.lcov.zst",
        [
            # The manifest's ground truth: with branch coverage on, as we read branches too.
            Tool(
                "`lcov --summary --rc lcov_branch_coverage=1`",
                ["lcov", "--rc", "lcov_branch_coverage=1", "--summary"],
            ),
            # lcov's default skips every BRDA line and prints no branch totals.
            Tool("`lcov --summary` (skips branches)", ["lcov", "--summary"]),
        ],
        line_scan=True,
        streamed=True,
    ),
    "small-lcov": Case(
        "100,000 small LCOV records",
        "generated:small-records",
        [Tool("`lcov --summary`", ["lcov", "--summary"])],
        streamed=True,
    ),
    "cobertura": Case(
        "SQLite gcovr Cobertura",
        "cobertura/sqlite-3.53.2.gcovr.cobertura.xml.zst",
        [Tool("`pycobertura show`", ["pycobertura", "show"])],
        cli=True,
    ),
}


def _answer(output: str) -> dict:
    """A child's JSON answer: its whole output (the CLI's indented envelope), else its last line."""
    try:
        return json.loads(output)
    except json.JSONDecodeError:
        return json.loads(output.strip().splitlines()[-1])


@dataclass
class Run:
    wall: float
    cpu: float
    rss: int  # MB
    output: str


@dataclass
class Measured:
    runs: list[Run] = field(default_factory=list)

    def median(self, what: str) -> float:
        return median([getattr(run, what) for run in self.runs])

    def inside(self, what: str) -> float:
        """Our child's own figures: seconds in ``read_report`` ("read") or ``parse_bytes`` ("parse")."""
        return median([_answer(run.output)[what] for run in self.runs])


def run_once(command: list[str]) -> Run:
    """One fresh process: wall time, its CPU time and peak RSS (from wait4), its stdout."""
    with open(os.devnull, "wb") as null, tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=null, cwd=CODE)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if child.returncode:
        raise RuntimeError(f"{' '.join(command[:3])} failed with exit code {child.returncode}: {text[-300:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, text)


def lcov_summary_totals(output: str) -> dict[str, dict[str, int]]:
    """``lines......: 62.0% (43167 of 69595 lines)`` -> {"lines": {"found": 69595, "hit": 43167}}."""
    found = re.findall(r"(lines|functions|branches)\.*: [\d.]+% \((\d+) of (\d+)", output)
    return {name: {"found": int(total), "hit": int(hit)} for name, hit, total in found}


def _attempt(measured: Measured | None, command: list[str], errors: dict[int, str]) -> Measured | None:
    """One run into ``measured``; None from then on if the command fails (e.g. the API is not in --code's copy)."""
    if measured is None:
        return None
    try:
        measured.runs.append(run_once(command))
    except RuntimeError as exc:
        errors[id(measured)] = str(exc).strip().splitlines()[-1][:120]
        return None
    return measured


def run_case(case: Case, repeat: int) -> list[str]:
    path = case_file(case)
    mb = path.stat().st_size / 1e6
    tools = [(tool, Measured()) for tool in case.tools if shutil.which(tool.command[0])]
    # ours: (label, child command, measured); the first is the one the tools are compared with
    variants: list[tuple[str, list[str], Measured | None]] = [
        (OURS, [sys.executable, "-c", CHILD], Measured())
    ]
    if case.streamed:
        variants.append((STREAMED, [sys.executable, "-c", STREAMED_CHILD], Measured()))
    if case.cli:
        variants.append(
            ("`coverage-mcp parse --json` (the CLI, start-up included)", [sys.executable, *CLI], Measured())
        )
    scan: Measured | None = Measured() if case.line_scan else None
    errors: dict[int, str] = {}
    failed: dict[str, str] = {}
    for _ in range(repeat):  # in turns, so that a burst of load hits every command
        for tool, measured in tools:
            measured.runs.append(run_once([*tool.command, str(path)]))
        for i, (label, command, measured) in enumerate(variants):
            kept = _attempt(measured, [*command, str(path)], errors)
            if measured is not None and kept is None:
                failed[label] = errors[id(measured)]
            variants[i] = (label, command, kept)
        scan = _attempt(scan, [sys.executable, "-c", LINE_SCAN, str(path)], errors)
    rows = []
    label = f"{case.title} ({mb:,.1f} MB)"
    for tool, measured in tools:
        wall = measured.median("wall")
        rows.append(
            f"| {label} | {tool.label} | {wall:.2f} s | {measured.median('cpu'):.2f} s | | | "
            f"{mb / wall:,.1f} | {measured.median('rss'):,.0f} MB | |"
        )
        label = ""
    if not tools:
        rows.append(f"| {label} | {case.tools[0].label} | not installed | | | | | | |")
    if scan is not None:
        rows.append(
            f"| | DuckDB line scan (`read_csv`, one VARCHAR column) | {scan.median('wall'):.2f} s | "
            f"{scan.median('cpu'):.2f} s | | {scan.inside('scan'):.2f} s | {mb / scan.inside('scan'):,.1f} | "
            f"{scan.median('rss'):,.0f} MB | |"
        )
    base = tools[0][1] if tools and tools[0][0] is case.tools[0] else None
    result = None
    for name, _, measured in variants:
        if measured is None:
            rows.append(f"| | {name} | not available: {failed.get(name, '')} | | | | | | |")
            continue
        ratio = ""
        if base is not None:
            ratio = (
                f"**{base.median('wall') / measured.median('wall'):.1f}x** faster by wall time, "
                f"**{base.median('cpu') / measured.median('cpu'):.1f}x** by CPU time, "
                f"{measured.median('rss') / base.median('rss'):.2f}x the peak RSS"
            )
        last = _answer(measured.runs[-1].output)
        if "totals" in last and name == OURS:
            result = last
        if "read" in last:
            inside = f"{measured.inside('read'):.2f} s | {measured.inside('parse'):.2f} s | {mb / measured.inside('parse'):,.1f}"
            if scan is not None:
                # By the processes' CPU time (start-up included on both sides): the children's own timers
                # are wall clocks, which this shared machine's load inflates several times over.
                ratio += f"; {measured.median('cpu') / scan.median('cpu'):.2f}x DuckDB's line scan by CPU time (goal: 1.2x)"
        else:  # the CLI: its answer is the JSON summary
            inside = " | | "
            same = result is not None and {k: v for k, v in last["totals"].items()} == result["totals"]
            case.notes.append(
                f"{name} gave {'the same totals as the parse child' if same else 'OTHER totals: ' + json.dumps(last['totals'])}."
            )
        rows.append(
            f"| | {name} | {measured.median('wall'):.2f} s | {measured.median('cpu'):.2f} s | {inside} | "
            f"{measured.median('rss'):,.0f} MB | {ratio} |"
        )
    if result is None:
        return rows
    totals = ", ".join(f"{name} {c['hit']:,}/{c['found']:,}" for name, c in result["totals"].items())
    case.notes.append(f"{case.title}: ours read {result['format']}, {result['tests']} tests, {totals}.")
    for _, _, measured in variants[1:]:
        if measured is not None and "read" in (other := _answer(measured.runs[-1].output)):
            same = other["totals"] == result["totals"]
            case.notes.append(
                f"The streamed parse gave {'the same totals' if same else 'OTHER totals: ' + json.dumps(other['totals'])}."
            )
    if scan is not None:
        answer = _answer(scan.runs[-1].output)
        with path.open("rb") as f:
            newlines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 24), b""))
        case.notes.append(
            f"DuckDB's line scan read {answer['lines']:,} lines ({answer['chars']:,} characters); the file has "
            f"{newlines:,} newlines: {'the same' if answer['lines'] == newlines else 'NOT the same'}."
        )
    for tool, measured in tools:
        if tool.command[0] == "lcov":
            theirs = lcov_summary_totals(measured.runs[-1].output)
            same = bool(theirs) and all(
                result["totals"].get(name, {"found": 0, "hit": 0}) == value for name, value in theirs.items()
            )
            case.notes.append(
                f"{tool.label} printed {', '.join(theirs)}: "
                f"{'the same as ours' if same else 'NOT ours: ' + json.dumps(theirs)}."
            )
        if tool.command[0] == "pycobertura":
            m = re.search(r"^TOTAL\s+(\d+)\s+(\d+)", measured.runs[-1].output, re.M)
            if m:
                stmts, miss = int(m.group(1)), int(m.group(2))
                ours_lines = result["totals"]["lines"]
                more = miss - (ours_lines["found"] - ours_lines["hit"])
                case.notes.append(
                    f"{tool.label} printed TOTAL {stmts:,} statements, {miss:,} missed: statements "
                    f"{'the same as our lines found' if stmts == ours_lines['found'] else 'NOT our lines found'}; "
                    f"{more:,} more missed than our unhit lines, pycobertura's rule of counting a line with an untaken "
                    "branch as missed (on the SQLite report, 8,254 of our hit lines have one)."
                )
    return rows


def versions() -> str:
    lcov = "no lcov"
    if shutil.which("lcov"):
        lcov = subprocess.run(
            ["lcov", "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
    try:
        pyco = f"pycobertura {metadata.version('pycobertura')}"
    except metadata.PackageNotFoundError:
        pyco = "no pycobertura"
    import numpy

    return (
        f"Python {platform.python_version()}, NumPy {numpy.__version__}, {lcov.removeprefix('lcov: ')}, {pyco}; "
        f"{os.cpu_count()} cores; {datetime.date.today().isoformat()}"
    )


def _loads(values: tuple[float, float, float]) -> str:
    return "/".join(f"{x:.2f}" for x in values)


def _revision() -> str:
    """Which coverage_core the children import (``library_revision`` run there)."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); "
            "from common import library_revision; print(library_revision())",
        ],
        capture_output=True,
        text=True,
        cwd=CODE,
        check=False,
    )
    return out.stdout.strip() or "coverage_core revision unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per command (medians are reported)")
    ap.add_argument("--only", choices=sorted(CASES), action="append", help="run only this case (repeatable)")
    ap.add_argument("--no-readme", action="store_true", help="print the table without writing the README")
    ap.add_argument("--code", type=Path, default=ROOT, help="measure the coverage_core in this folder")
    args = ap.parse_args()
    global CODE
    CODE = args.code.resolve()
    cases = [CASES[name] for name in (args.only or CASES)]
    load_before = load_average()
    rows = []
    for case in cases:
        print(f"measuring {case.title} ...", file=sys.stderr)
        rows += run_case(case, args.repeat)
    text = "\n".join(
        [
            "## Parsing",
            "",
            (
                f"Each command in a fresh process, ours and the tools' in turns, median of {args.repeat} runs: wall "
                "time from start to exit (interpreter start-up and reading the file included), the process's own CPU "
                "time (user + system; load from other processes on this shared machine inflates wall time far more) "
                "and its peak RSS. Ours is `parse(path)`, which is `parse_bytes(read_report(path))`: the child calls "
                "the two in turn and times each; our MB/s is the raw (decompressed) size over the `parse_bytes` "
                "time, the tools' over their wall time. We compare with the first tool of each report: it computes "
                "what we compute. "
                f"{versions()}; {_revision()}; load average (1/5/15 min) {_loads(load_before)} before, "
                f"{_loads(load_average())} after. Re-run with `python benchmarks/parse.py`."
            ),
            "",
            "| report | reader | wall | CPU | reading | parsing | MB/s | peak RSS | ours vs the tool |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|",
            *rows,
            "",
            *(f"- {note}" for case in cases for note in case.notes),
        ]
    )
    print(text)
    if not args.no_readme:
        write_section("parse", text)


if __name__ == "__main__":
    main()
