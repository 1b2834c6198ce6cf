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

from common import ROOT, corpus_file, median, write_section

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


@dataclass
class Tool:
    label: str
    command: list[str]  # the report's path is appended


@dataclass
class Case:
    title: str
    corpus_name: str
    tools: list[Tool]
    notes: list[str] = field(default_factory=list)


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
    ),
    "cobertura": Case(
        "SQLite gcovr Cobertura",
        "cobertura/sqlite-3.53.2.gcovr.cobertura.xml.zst",
        [Tool("`pycobertura show`", ["pycobertura", "show"])],
    ),
}


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
        return median([json.loads(run.output)[what] for run in self.runs])


def run_once(command: list[str]) -> Run:
    """One fresh process: wall time, its CPU time and peak RSS (from wait4), its stdout."""
    with open(os.devnull, "wb") as null, tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=null, cwd=ROOT)
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


def run_case(case: Case, repeat: int) -> list[str]:
    path = corpus_file(case.corpus_name)
    mb = path.stat().st_size / 1e6
    tools = [(tool, Measured()) for tool in case.tools if shutil.which(tool.command[0])]
    ours: Measured | None = Measured()
    ours_error = ""
    for _ in range(repeat):  # in turns, so that a burst of load hits every command
        for tool, measured in tools:
            measured.runs.append(run_once([*tool.command, str(path)]))
        if ours is not None:
            try:
                ours.runs.append(run_once([sys.executable, "-c", CHILD, str(path)]))
            except RuntimeError as exc:  # e.g. the parser is not written yet
                ours, ours_error = None, str(exc).strip().splitlines()[-1][:120]
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
    if ours is None:
        rows.append(f"| | {OURS} | not available: {ours_error} | | | | | | |")
        return rows
    ratio = ""
    if tools and tools[0][0] is case.tools[0]:
        base = tools[0][1]
        ratio = (
            f"**{base.median('wall') / ours.median('wall'):.1f}x** faster by wall time, "
            f"**{base.median('cpu') / ours.median('cpu'):.1f}x** by CPU time, "
            f"{ours.median('rss') / base.median('rss'):.2f}x the peak RSS"
        )
    rows.append(
        f"| | {OURS} | {ours.median('wall'):.2f} s | {ours.median('cpu'):.2f} s | {ours.inside('read'):.2f} s | "
        f"{ours.inside('parse'):.2f} s | {mb / ours.inside('parse'):,.1f} | {ours.median('rss'):,.0f} MB | {ratio} |"
    )
    result = json.loads(ours.runs[-1].output)
    totals = ", ".join(f"{name} {c['hit']:,}/{c['found']:,}" for name, c in result["totals"].items())
    case.notes.append(f"{case.title}: ours read {result['format']}, {result['tests']} tests, {totals}.")
    for tool, measured in tools:
        if tool.command[0] == "lcov":
            theirs = lcov_summary_totals(measured.runs[-1].output)
            same = bool(theirs) and all(result["totals"].get(name) == value for name, value in theirs.items())
            case.notes.append(
                f"{tool.label} printed {', '.join(theirs)}: "
                f"{'the same as ours' if same else 'NOT ours: ' + json.dumps(theirs)}."
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per command (medians are reported)")
    ap.add_argument("--only", choices=sorted(CASES), action="append", help="run only this case (repeatable)")
    ap.add_argument("--no-readme", action="store_true", help="print the table without writing the README")
    args = ap.parse_args()
    cases = [CASES[name] for name in (args.only or CASES)]
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
                f"{versions()}. Re-run with `python benchmarks/parse.py`."
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
