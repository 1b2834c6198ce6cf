"""Composite benchmark: build a composite snapshot from the corpus's SQLite LLVM JSON plus a coverage.py report.

A git repository in benchmarks/.work/composite-repo tracks the files the two
reports name (placeholder text: LLVM and coverage.py JSON carry no content
hash, so the text does not matter) and an inventory with a native component
(two variants, both given the same SQLite export) and a Python component.
Per repeat, in one process: parsing the two reports alone (``read_report`` +
``parse_bytes``), then ``coverage_core.composite.build`` end to end (which reads
the three given reports, parses each distinct artifact once, maps paths,
aggregates, and stores the composite in a fresh store). The build's own cost is the build minus the parse. The answer is
checked against an independent count from the parsed reports. Medians go to
benchmarks/README.md (section "composite"). Goal: under 1 s on top of parsing.

Example: python benchmarks/composite.py --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import ROOT, WORK, corpus_file, library_revision, load_average, machine, median, write_section

sys.path.insert(0, str(ROOT))

from coverage_core import open_project
from coverage_core.composite import build
from coverage_core.parsers import parse_bytes, read_report
from coverage_core.report import REGION_CODE

LLVM = "llvm/sqlite-3.53.2.llvm-cov.json.zst"
PY = "coveragepy/itsdangerous-2.2.0.coverage.json"
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def make_repo(llvm_paths: list[str], py_paths: list[str]) -> Path:
    repo = WORK / "composite-repo"
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    native = sorted({"native/" + Path(p).name for p in llvm_paths})
    for rel in native + py_paths:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f"placeholder for {rel}\n")
    inventory = {
        "inventory_version": 1,
        "components": [
            {
                "id": "sqlite",
                "language": "native",
                "format": "llvm",
                "sources": ["native/*"],
                "variants": ["debug", "release"],
            },
            {"id": "itsdangerous", "language": "python", "format": "coveragepy", "sources": ["src/**/*.py"]},
        ],
    }
    (repo / "inventory.json").write_text(json.dumps(inventory))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "bench"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=GIT_ENV, capture_output=True)
    return repo


def parse_both(llvm: Path, py: Path):
    return parse_bytes(read_report(llvm)), parse_bytes(read_report(py))


def expected(llvm_report, py_report) -> int:
    """Code regions counted independently: distinct LLVM code-region spans per file (twice: two variants)
    plus coverage.py statements."""
    r = llvm_report.regions
    code = r["kind"] == REGION_CODE
    spans = np.stack([r[c][code] for c in ("file", "start_line", "start_col", "end_line", "end_col")], axis=1)
    n_llvm = len(np.unique(spans, axis=0))
    return 2 * n_llvm + len(py_report.lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    llvm, py = corpus_file(LLVM), corpus_file(PY)
    llvm_report, py_report = parse_both(llvm, py)
    repo = make_repo([f.path for f in llvm_report.files], [f.path for f in py_report.files])
    want_code = expected(llvm_report, py_report)
    del llvm_report, py_report
    parse_s, build_s = [], []
    home = Path(tempfile.mkdtemp(prefix="composite-home-"))
    os.environ["COVERAGE_MCP_HOME"] = str(home)
    record = None
    try:
        for _ in range(args.repeat):
            store = repo / ".coverage-mcp"
            if store.exists():
                shutil.rmtree(store)
            t = time.perf_counter()
            parse_both(llvm, py)
            parse_s.append(time.perf_counter() - t)
            with open_project(repo) as project:
                t = time.perf_counter()
                record = build(
                    project,
                    "inventory.json",
                    [f"sqlite:debug={llvm}", f"sqlite:release={llvm}", f"itsdangerous={py}"],
                )
                build_s.append(time.perf_counter() - t)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert record is not None and record.status == "complete", record and record.blocking
    assert record.totals["code"]["found"] == want_code, (record.totals["code"], want_code)
    p, b = median(parse_s), median(build_s)
    combined = record.totals["combined"]
    text = f"""## Composite build

{machine()}; {library_revision()}; load average {"/".join(f"{x:.1f}" for x in load_average())}.
Median of {args.repeat}: a composite of the corpus's SQLite `llvm-cov export` JSON
({llvm.stat().st_size / 1e6:.0f} MB, given as two variants of one native component) and
itsdangerous's coverage.py JSON, built into a fresh store by `coverage_core.composite.build`.

| step | median |
|---|---|
| parse the two reports alone (`read_report` + `parse_bytes`) | {p:.2f} s |
| `build` end to end (reads the three given reports, parses each distinct artifact once, maps, aggregates, stores) | {b:.2f} s |
| the build's own cost (build − parse) | {b - p:.2f} s (goal: under 1 s) |

The answer is checked: {combined["found"]:,} code + branch regions ({combined["hit"]:,} hit), code regions
equal to an independent count of distinct LLVM code-region spans (×2 variants) plus coverage.py statements.
"""
    print(text)
    write_section("composite", text)


if __name__ == "__main__":
    main()
