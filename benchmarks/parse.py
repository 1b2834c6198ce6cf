"""Parse benchmark: our parsers against the readers of the tools that wrote the reports.

Each command runs in a fresh process (wall time from start to exit, peak RSS of
that process), ``--repeat`` times; the table shows medians. Our side is
``coverage_core.parsers.parse(path)``, reading the file included; the child
also reports how long ``parse`` itself took, which gives MB/s. Corpus files
are decompressed into benchmarks/.work/ first. The Markdown table is printed
and written into benchmarks/README.md (section "parse").

Example: python benchmarks/parse.py --repeat 3
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
from dataclasses import dataclass, field
from importlib import metadata

from common import corpus_file, median, run_measured, write_section

CHILD = """
import json, sys, time
start = time.perf_counter()
from coverage_core.parsers import parse
imported = time.perf_counter()
report = parse(sys.argv[1])
done = time.perf_counter()
print(json.dumps({"parse": done - imported, "format": report.format, "tests": len(report.tests),
                  "totals": {name: counter.to_dict() for name, counter in report.totals.items()}}))
"""


@dataclass
class Case:
    title: str
    corpus_name: str
    tool: str
    tool_command: list[str]
    notes: list[str] = field(default_factory=list)


CASES = {
    "lcov": Case("SQLite gcov LCOV, 60 tests", "lcov/sqlite-3.53.2.gcov-60tests.lcov.zst",
                 "`lcov --summary`", ["lcov", "--summary"]),
    "cobertura": Case("SQLite gcovr Cobertura", "cobertura/sqlite-3.53.2.gcovr.cobertura.xml.zst",
                      "`pycobertura show`", ["pycobertura", "show"]),
}


@dataclass
class Measured:
    wall: float
    rss: int
    parse: float | None = None
    output: str = ""


def measure(command: list[str], repeat: int) -> Measured:
    """Medians over ``repeat`` fresh processes; the last run's output is kept."""
    runs = [run_measured(command) for _ in range(repeat)]
    parsed = [json.loads(out) for _, _, out in runs] if command[:2] == [sys.executable, "-c"] else []
    return Measured(
        wall=median([wall for wall, _, _ in runs]),
        rss=int(median([rss for _, rss, _ in runs])),
        parse=median([p["parse"] for p in parsed]) if parsed else None,
        output=runs[-1][2],
    )


def lcov_summary_totals(output: str) -> dict[str, dict[str, int]]:
    """``lines......: 62.0% (43167 of 69595 lines)`` -> {"lines": {"found": 69595, "hit": 43167}}."""
    found = re.findall(r"(lines|functions|branches)\.*: [\d.]+% \((\d+) of (\d+)", output)
    return {name: {"found": int(total), "hit": int(hit)} for name, hit, total in found}


def run_case(case: Case, repeat: int) -> list[str]:
    path = corpus_file(case.corpus_name)
    size = path.stat().st_size
    mb = size / 1e6
    rows = []
    ours_error = None
    try:
        ours = measure([sys.executable, "-c", CHILD, str(path)], repeat)
        result = json.loads(ours.output)
    except (RuntimeError, json.JSONDecodeError) as exc:  # e.g. the parser is not written yet
        ours, result, ours_error = None, None, str(exc).strip().splitlines()[-1][:120]
    tool = None
    if shutil.which(case.tool_command[0]):
        tool = measure([*case.tool_command, str(path)], repeat)
    label = f"{case.title} ({mb:,.1f} MB)"
    if tool is not None:
        rows.append(f"| {label} | {case.tool} | {tool.wall:.2f} s | | {mb / tool.wall:,.1f} | {tool.rss:,} MB | |")
    else:
        rows.append(f"| {label} | {case.tool} | not installed | | | | |")
    if ours is None:
        rows.append(f"| | `coverage_core.parsers.parse` | not available: {ours_error} | | | | |")
        return rows
    ratio = ""
    if tool is not None:
        ratio = f"**{tool.wall / ours.wall:.1f}x faster**, {ours.rss / tool.rss:.2f}x the memory"
    rows.append(f"| | `coverage_core.parsers.parse` | {ours.wall:.2f} s | {ours.parse:.2f} s | "
                f"{mb / ours.parse:,.1f} | {ours.rss:,} MB | {ratio} |")
    totals = ", ".join(f"{name} {c['hit']:,}/{c['found']:,}" for name, c in result["totals"].items())
    case.notes.append(f"{case.title}: ours read {result['format']}, {result['tests']} tests, {totals}.")
    if tool is not None and case.tool_command[0] == "lcov":
        theirs = lcov_summary_totals(tool.output)
        same = all(result["totals"].get(name) == value for name, value in theirs.items())
        case.notes.append(f"{case.title}: `lcov --summary` printed the same lines, functions and branches: "
                          f"{'yes' if same and theirs else 'NO: ' + json.dumps(theirs)}.")
    return rows


def versions() -> str:
    lcov = "no lcov"
    if shutil.which("lcov"):
        lcov = subprocess.run(["lcov", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    try:
        pyco = f"pycobertura {metadata.version('pycobertura')}"
    except metadata.PackageNotFoundError:
        pyco = "no pycobertura"
    import numpy

    return (f"Python {platform.python_version()}, NumPy {numpy.__version__}, {lcov.removeprefix('lcov: ')}, {pyco}; "
            f"{os.cpu_count()} cores; {datetime.date.today().isoformat()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per command (medians are reported)")
    ap.add_argument("--only", choices=sorted(CASES), action="append", help="run only this case (repeatable)")
    ap.add_argument("--no-readme", action="store_true", help="print the table without writing the README")
    args = ap.parse_args()
    rows = []
    cases = [CASES[name] for name in (args.only or CASES)]
    for case in cases:
        print(f"measuring {case.title} ...", file=sys.stderr)
        rows += run_case(case, args.repeat)
    text = "\n".join([
        "## Parsing",
        "",
        (f"Each command in a fresh process, median of {args.repeat} runs: wall time from start to exit "
         "(interpreter start-up and reading the file included) and the process's peak RSS. "
         "\"parsing\" is the time inside `parse(path)` (file read included; imports excluded), which MB/s is "
         "computed from; the tools' MB/s use their wall time. Raw (decompressed) sizes. "
         f"{versions()}. Re-run with `python benchmarks/parse.py`."),
        "",
        "| report | reader | wall | parsing | MB/s | peak RSS | ours vs the tool |",
        "|---|---|---:|---:|---:|---:|---|",
        *rows,
        "",
        *(f"- {note}" for case in cases for note in case.notes),
    ])
    print(text)
    if not args.no_readme:
        write_section("parse", text)


if __name__ == "__main__":
    main()
