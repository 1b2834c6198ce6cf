"""The scale version of tests/test_review.py's page walk: a snapshot of 100,000 files, walked with
``coverage_review(task="audit")`` page by page, must list every file exactly once and in path order, and
``insight`` must count all of them while showing the 200 it is asked for.

    python benchmarks/walk.py [--files 100000] [--no-write]

The suite walks a few thousand files (the same keyset paging over the same path shapes, many pages); this
script checks the same answer at the scale users meet, and times its parts: the ingest of the synthetic
LCOV report (in process, ``Project.ingest``), the whole walk, and the ``insight`` call. The figures and
the load average go into benchmarks/README.md (section "walk"). A wrong answer stops the script.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import commit_all, library_revision, load_average, machine, write_section

from coverage_core import open_project
from coverage_core.model import snapshot_to_dict
from coverage_core.service import Service


def synthetic_report(n: int) -> str:
    """``n`` one-file records over 97 folders, the paths the suite's walk uses (unmapped in the repository:
    the library stores the snapshot anyway)."""
    return "".join(f"SF:gen/d{i % 97}/f{i:06d}.c\nDA:1,{i % 2}\nDA:2,0\nend_of_record\n" for i in range(n))


def walk(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="walk-") as tmp:
        repo = Path(tmp) / "big"
        repo.mkdir()
        (repo / "README").write_text("x\n")
        commit_all(repo, dict(os.environ))
        (repo / "big.info").write_text(synthetic_report(n))
        with open_project(repo) as project:
            svc = Service(project)
            t = time.perf_counter()
            snap = snapshot_to_dict(project.ingest(repo / "big.info"))
            ingest_s = time.perf_counter() - t
            assert snap["files"] == n, snap["files"]
            seen: list[str] = []
            pages = 0
            cursor = None
            t = time.perf_counter()
            while True:
                args = {"task": "audit", "limits": {"max_words": 50_000, "max_bytes": 2_000_000}}
                if cursor:
                    args["cursor"] = cursor
                env = svc.call("coverage_review", args)
                seen += [f[0] for f in env["data"]["files"]]
                pages += 1
                cursor = env["page"]["next_cursor"]
                if not cursor:
                    break
            walk_s = time.perf_counter() - t
            assert len(seen) == n, f"{len(seen)} files walked of {n}"
            assert len(set(seen)) == n, "a file was listed twice"
            assert seen == sorted(seen), "the pages are not in path order"
            t = time.perf_counter()
            insight = svc.call(
                "coverage_review", {"task": "insight", "limits": {"max_files": 200, "max_words": 50_000}}
            )
            insight_s = time.perf_counter() - t
            assert insight["page"]["total_files"] == n and len(insight["data"]["files"]) == 200, insight[
                "page"
            ]
    return {"ingest": ingest_s, "walk": walk_s, "pages": pages, "insight": insight_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    before = load_average()[0]
    figures = walk(args.files)
    after = load_average()[0]
    text = f"""## A {args.files:,}-file snapshot walked page by page

`python benchmarks/walk.py`: {machine()}; {library_revision()}. Load average (1 minute) {before:.2f} → {after:.2f}
(the machine is shared). The answer was checked: every file listed exactly once, in path order, over
{figures["pages"]:,} audit pages of 100 files; `insight` counted {args.files:,} files and showed the 200 asked for.
The suite (tests/test_review.py) walks a few thousand files the same way.

| step | seconds |
|---|---:|
| ingest of the synthetic LCOV report (`Project.ingest`, in process) | {figures["ingest"]:.2f} |
| the whole audit walk ({figures["pages"]:,} calls) | {figures["walk"]:.2f} |
| `insight`, 200 files | {figures["insight"]:.2f} |
"""
    print(text)
    if not args.no_write:
        write_section("walk", text)


if __name__ == "__main__":
    main()
