"""project_context in process on the SQLite corpus: this checkout against an older commit, in one run.

    python benchmarks/context.py [--before REV] [--repeat 30] [--no-write]

The SQLite case of benchmarks/review.py (two stored snapshots of the 260,000-line amalgamation, 60 named
tests) is built once; then two child processes each open it and time ``Service.call("project_context")``
warm (the median of ``--repeat`` calls after two warm-ups): one with this checkout's coverage_core, one
with a clean export of ``--before`` on its ``PYTHONPATH``, in turns (before, after, before, after), so
load on this shared machine falls on both alike. Each answer is checked: its claim status is
``supported``, it lists the suite of both snapshots and its compaction counts add up to the two snapshots.

The repository's index is refreshed the way ``git status`` leaves it (``git update-index --refresh``)
before timing: right after the commit that builds it, the index is "racily clean" (files written in the
second it was written), and libgit2 then reads sqlite3.c whole on every status until the index is
written again; a developer's index rarely stays so (any ``git status`` rewrites it). The figure with
the racy index is printed beside (``racy``).

Results go into benchmarks/README.md (section "context").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, library_revision, load_average, machine, write_section
from review import build, cases

CHILD = r"""
import json, statistics, sys, time
import coverage_core
from coverage_core import open_project
from coverage_core.service import Service
repo, repeat = sys.argv[1], int(sys.argv[2])
with open_project(repo) as project:
    service = Service(project)
    service.call("project_context", {}); service.call("project_context", {})
    took = []
    for _ in range(repeat):
        started = time.perf_counter()
        answer = service.call("project_context", {})
        took.append(time.perf_counter() - started)
data = answer["data"]
print(json.dumps({
    "code": coverage_core.__file__,
    "median_ms": statistics.median(took) * 1000,
    "claim": data["claim_status"],
    "suites": [s["suite"] for s in data["suites"]],
    "snapshots": data["compaction"]["relational"] + data["compaction"]["compacted"],
}))
"""


def measure(repo: Path, repeat: int, path: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if path:
        env["PYTHONPATH"] = path
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(repo), str(repeat)],
        env=env,
        cwd=repo.parent,  # not this checkout: its coverage_core would shadow the one on PYTHONPATH
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    expected_code = Path(path or ROOT) / "coverage_core" / "__init__.py"
    if Path(str(found["code"])).resolve() != expected_code.resolve():
        raise SystemExit(f"measured {found['code']}, not {expected_code}")
    if found["claim"] != "supported" or found["suites"] != ["default"] or found["snapshots"] != 2:
        raise SystemExit(f"not the real answer: {found}")
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="99ebb0e", help="the commit to compare with (exported clean)")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="context-bench-"))
    os.environ["COVERAGE_MCP_HOME"] = str(scratch / "home")
    before = scratch / "before"
    before.mkdir()
    archive = subprocess.run(
        ["git", "archive", args.before, "coverage_core"], cwd=ROOT, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
    case = next(c for c in cases() if c.short == "SQLite")
    repo = scratch / "SQLite"
    build(case, repo)
    loads = [load_average()[0]]
    racy = {
        side: measure(repo, args.repeat, path)["median_ms"]
        for side, path in (("before", str(before)), ("after", None))
    }
    subprocess.run(["git", "update-index", "-q", "--really-refresh"], cwd=repo, check=False)
    subprocess.run(["git", "status", "--short"], cwd=repo, capture_output=True, check=True)
    runs: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(2):
        for side, path in (("before", str(before)), ("after", None)):
            runs[side].append(float(measure(repo, args.repeat, path)["median_ms"]))  # type: ignore[arg-type]
            loads.append(load_average()[0])
    b, a = statistics.median(runs["before"]), statistics.median(runs["after"])
    text = "\n".join(
        [
            "## project_context in process (SQLite)",
            "",
            (
                f'`python benchmarks/context.py`: `Service.call("project_context")` warm on the SQLite case of '
                f"benchmarks/review.py (two snapshots of sqlite3.c, 60 named tests), median of {args.repeat} calls "
                f"per process, two processes per side in turns; before is a clean export of {args.before}, after "
                f"{library_revision()}. Every answer was checked (claim supported, suite `default`, two snapshots in "
                f"the compaction counts). {machine()}. Load average (1 minute): "
                f"{' → '.join(f'{x:.2f}' for x in loads)}."
            ),
            "",
            "| index | before | after | after / before |",
            "|---|---:|---:|---:|",
            f"| refreshed (as `git status` leaves it) | {b:.2f} ms | {a:.2f} ms | {a / b:.3f}x |",
            f"| racily clean (just committed) | {racy['before']:.2f} ms | {racy['after']:.2f} ms | "
            f"{racy['after'] / racy['before']:.3f}x |",
            "",
            "- What the answer says about the whole store (the compaction inventory, the newest composite, "
            "the active runs, the command page) is read once per generation of the store (every write starts "
            "a new one; the inventory also each minute); the checkout's state and each file's freshness are "
            "read on every call, so a racily clean index (libgit2 reading sqlite3.c whole on each status) "
            "shows in both columns. Goal (issue 29): under 5 ms.",
        ]
    )
    print(text)
    if not args.no_write:
        write_section("context", text)


if __name__ == "__main__":
    main()
