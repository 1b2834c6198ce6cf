"""Review tasks in process: medians per task on real and synthetic snapshots,
and the words and bytes of each representation for the same question.

    python benchmarks/review.py [--repeat 30]

Results go into benchmarks/README.md (section "review").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import WORK, corpus_file, machine, median, write_section  # noqa: E402

TASKS = ("insight", "history", "source", "tests", "audit", "all")
SNAPSHOTS = {
    "SQLite LCOV (60 tests)": ("lcov/sqlite-3.53.2.gcov-60tests.lcov.zst", ["sqlite3.c", "driver.c"]),
    "cmark-gfm LCOV (9 tests)": ("lcov/cmark-gfm-0.29.0.gfm.13.gcov-9tests.lcov", None),
}


def synthetic_100k(path: Path) -> Path:
    if not path.exists():
        with path.open("w") as out:
            for i in range(100_000):
                out.write(f"SF:gen/d{i % 97}/f{i:06d}.c\n" + "".join(
                    f"DA:{n},{(i + n) % 3}\n" for n in range(1, 11)) + "end_of_record\n")
    return path


def repo_with(root: Path, files: list[str]) -> Path:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("\n" * 300_000 if rel.endswith(".c") else "")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "init", "--allow-empty"], check=True, env=env)
    return root


def measure(svc, args: dict, repeat: int) -> float:
    svc.call("coverage_review", args)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        svc.call("coverage_review", args)
        times.append(time.perf_counter() - t)
    return median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-review-"))
    os.environ["COVERAGE_MCP_HOME"] = str(scratch / "home")
    from coverage_core import open_project
    from coverage_core.review.budget import size
    from coverage_core.service import Service

    results: dict[str, dict[str, float]] = {}
    sizes: list[str] = []
    try:
        cases = {k: (corpus_file(v[0]), v[1]) for k, v in SNAPSHOTS.items()}
        cases["synthetic 100,000 files"] = (synthetic_100k(WORK / "synthetic-100k-files.lcov"), None)
        for i, (name, (report, tracked)) in enumerate(cases.items()):
            repo = repo_with(scratch / f"r{i}", tracked or ["README"])
            with open_project(repo) as project:
                svc = Service(project)
                svc.call("coverage_import", {"report_path": str(shutil.copy(report, repo / report.name))})
                results[name] = {t: measure(svc, {"task": t}, args.repeat) for t in TASKS}
                if name.startswith("SQLite"):
                    for task in ("insight", "all"):
                        for rep in ("compact", "review", "audit"):
                            data = svc.call("coverage_review", {"task": task, "representation": rep,
                                                                "limits": {"max_words": 50_000, "max_bytes": 2_000_000}})["data"]
                            w, b = size(data)
                            sizes.append(f"| {task} | {rep} | {w} | {b} |")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    lines = [
        f"coverage_review tasks in process (`Service.call`, compact, default limits); median of {args.repeat} "
        f"after one warm-up; {machine()}. Goals: < 10 ms on the corpus snapshots, < 100 ms on 100,000 files "
        "(predecessor: 38-80 ms over HTTP on small snapshots).",
        "",
        "| snapshot | " + " | ".join(TASKS) + " |",
        "|---|" + "---:|" * len(TASKS),
    ]
    for name, per in results.items():
        lines.append(f"| {name} | " + " | ".join(f"{per[t] * 1000:.1f} ms" for t in TASKS) + " |")
    lines += ["", "Words and bytes of each representation for the same question (SQLite, budget lifted to 50,000 words):",
              "", "| task | representation | words | bytes |", "|---|---|---:|---:|", *sizes]
    text = "\n".join(lines)
    print(text)
    write_section("review", "## Review tasks\n\n" + text)


if __name__ == "__main__":
    main()
