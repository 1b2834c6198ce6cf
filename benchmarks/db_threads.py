"""DuckDB's worker threads per store (``COVERAGE_MCP_DB_THREADS``): the wall time and the CPU time of
each review task and ``project_context``, in process, on the same stored repositories opened with
1, 2, 4 and 8 threads (0, DuckDB's default, is one per core: 2 on this machine).

    python benchmarks/db_threads.py [--repeat 20] [--only sample] [--only SQLite] [--no-write]

The cases are benchmarks/review.py's (built the same way: two commits, two snapshots, the questions it
asks and checks) plus the bundled sample project (two coverage.py reports). Every timed answer is checked
as review.py checks it, and the answers under each thread count are the same data. CPU is the process's
(every thread's: DuckDB's workers included), per call; medians of ``--repeat`` warm calls after one
warm-up. A store answers with many small queries, whose fixed cost grows with the threads DuckDB wakes
for each, and with a few scans of a big file, which more threads make faster: the table shows both.

Results go into benchmarks/README.md (section "db_threads") with the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import load_average, machine, median, write_section
from review import build, cases, check, git, questions

THREADS = (1, 2, 4, 8)
SAMPLE = Path(__file__).resolve().parents[1] / "coverage_core" / "sample"
TASKS = ("project_context", "insight", "source", "tests", "all", "change", "history", "file")


def sample(root: Path) -> dict[str, Any]:
    """The bundled sample project as a repository with its two coverage.py reports stored."""
    from coverage_core import open_project
    from coverage_core.service import Service

    shutil.copytree(SAMPLE / "project", root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "sample")
    for name in ("step1.coverage.json", "step3.coverage.json"):
        shutil.copy(SAMPLE / "reports" / name, root / name)
    with open_project(root) as project:
        svc = Service(project)
        for name in ("step1.coverage.json", "step3.coverage.json"):
            svc.call("coverage_import", {"report_path": name})
    return {"file": "inventory/pricing.py"}


def call(svc: Any, task: str, qs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if task == "project_context":
        return svc.call("project_context", {})
    return svc.call("coverage_review", qs.get(task, {"task": task}))


def measure(repo: Path, info: dict[str, Any], qs: dict[str, Any], threads: int, repeat: int, checked: bool):
    """{task: (wall median, CPU median, data)} with ``threads`` DuckDB threads."""
    from coverage_core import open_project
    from coverage_core.service import Service

    os.environ["COVERAGE_MCP_DB_THREADS"] = str(threads)
    out = {}
    with open_project(repo) as project:
        got = project.store.con.execute("SELECT current_setting('threads')").fetchall()[0][0]
        assert got == threads, f"the store runs {got} threads, not {threads}"
        svc = Service(project)
        for task in TASKS:
            first = call(svc, task, qs)
            if checked and task != "project_context":
                check(task, first, info)
            walls, cpus = [], []
            for _ in range(repeat):
                w, c = time.perf_counter(), time.process_time()
                call(svc, task, qs)
                walls.append(time.perf_counter() - w)
                cpus.append(time.process_time() - c)
            data = {k: v for k, v in first["data"].items() if k != "stats"}
            out[task] = (median(walls), median(cpus), data)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--only", action="append", help="sample, SQLite, cmark-gfm, synthetic")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-threads-"))
    os.environ["COVERAGE_MCP_HOME"] = str(scratch / "home")
    wanted = args.only or ["sample", "SQLite"]
    loads = [load_average()]
    rows = []
    try:
        todo: list[tuple[str, Path, dict[str, Any], bool]] = []
        if "sample" in wanted:
            repo = scratch / "sample"
            todo.append(("sample project (coverage.py JSON)", repo, sample(repo), False))
        for case in cases():
            if case.short in wanted:
                repo = scratch / case.short
                todo.append((case.name, repo, build(case, repo), True))
        for name, repo, info, checked in todo:
            qs = questions(info) if checked else {"source": {"task": "source", "file": info["file"]}}
            if not checked:
                qs["tests"] = {"task": "tests", "file": info["file"]}
                qs["file"] = {"task": "file", "file": info["file"]}
            per = {n: measure(repo, info, qs, n, args.repeat, checked) for n in THREADS}
            loads.append(load_average())
            for task in TASKS:
                datas = [per[n][task][2] for n in THREADS]
                if any(d != datas[0] for d in datas[1:]) and task != "project_context":
                    raise AssertionError(f"{name} {task}: the answer depends on the thread count")
                cells = " | ".join(
                    f"{per[n][task][0] * 1e3:.1f} / {per[n][task][1] * 1e3:.1f}" for n in THREADS
                )
                ratio = per[2][task][1] / per[1][task][1] if per[1][task][1] else float("nan")
                rows.append(f"| {name} | {task} | {cells} | {ratio:.2f} |")
                print(rows[-1], flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    load = max(loads, key=lambda la: la[0])
    text = "\n".join(
        [
            f"`python benchmarks/db_threads.py --repeat {args.repeat}`, {machine()}, load average at most "
            f"{load[0]:.2f} (1 min). Per call, warm, in process: wall ms / CPU ms (every thread of the "
            "process), medians; the last column is the CPU with 2 threads (DuckDB's default here) over 1.",
            "",
            "| case | call | "
            + " | ".join(f"{n} thread{'s' if n > 1 else ''}" for n in THREADS)
            + " | CPU 2/1 |",
            "|---|---|" + "---:|" * (len(THREADS) + 1),
            *rows,
        ]
    )
    print(text)
    if not args.no_write:
        write_section("db_threads", text)


if __name__ == "__main__":
    main()
