"""How change and incremental grow with the files of a snapshot: 10,000, 30,000 and 100,000 files (issue 29).

    python benchmarks/scale.py [--files 10000 30000 100000] [--repeat 15] [--no-write]

Each size is a real git repository built as ``benchmarks/review.py`` builds its
synthetic case (``review.build``): N tracked files of 10 lines, a baseline LCOV
of 7 named tests at commit 1 and the current one at commit 2, which rewrites a
line in 1% of the files; both imported through ``Service.call``. Then, in one
process, ``coverage_review`` ``change`` (compact, the default baseline) and
``incremental`` (both sides explicit), each median of ``--repeat`` warm calls
after one checked warm-up, plus a cold first call of each in that process (its
comparison not yet cached).

The working tree's dirty check (a ``git status`` of the whole tree, which a
working-tree watcher is to replace) is timed inside the calls (every
``Repository.status`` they make, per call on average) and alone: the review's
own work is each call's time minus the status time it spent, median over the calls. Every answer is checked to be
the real one: claim ``supported``, the change's categories count every line of
both sides (``change``: GBC+CBC+... over the current side equals its executable
lines), the incremental projection present. The growth is the ratio of the
100,000-file figure to the 10,000-file one (linear: at most 10x).
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

import review  # the synthetic case and its repository builder
from common import WORK, library_revision, load_average, machine, median, write_section

LINES = 10  # executable lines per synthetic file
CHANGE_GOAL, INCREMENTAL_GOAL = 0.050, 0.150  # seconds at 100,000 files, warm (issue 29)


def synthetic(files: int) -> Path:
    path = WORK / f"synthetic-{files}-files-tn.lcov"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        with tmp.open("w") as out:
            for i in range(files):
                out.write(
                    f"TN:t{i % 7}\nSF:/build/gen-1.0/gen/d{i % 97}/f{i:06d}.c\n"
                    + "".join(f"DA:{n},{(i + n) % 3}\n" for n in range(1, LINES + 1))
                    + "end_of_record\n"
                )
        tmp.rename(path)
    return path


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def check(task: str, answer: dict[str, Any], files: int) -> None:
    data = answer["data"]
    if data.get("claim_status") != "supported":
        raise review.EarlyExit(
            f"{task} at {files} files: claim {data.get('claim_status')} {data.get('reasons')}"
        )
    if task == "change":
        cats = {k: v for k, v in data["categories"].items() if isinstance(v, int)}
        current = sum(cats.get(c, 0) for c in ("UNC", "LBC", "UIC", "UBC", "GBC", "GIC", "GNC", "CBC"))
        if current != files * LINES:
            raise review.EarlyExit(
                f"change at {files} files: {current} current lines categorized, not {files * LINES}"
            )
    else:
        review.check(task, answer, {})


def measure(files: int, root: Path, repeat: int) -> dict[str, Any]:
    from coverage_core import open_project
    from coverage_core.service import Service

    case = review.Case(
        f"synthetic {files:,} files", "synthetic", synthetic(files), "/build/gen-1.0/", None, files // 100
    )
    t = time.perf_counter()
    info = review.build(case, root)
    built = time.perf_counter() - t
    review.refresh_index(root)
    qs = review.questions(info)
    out: dict[str, Any] = {"files": files, "built": built, "edited": info["edited_lines"]}
    with open_project(root) as project:
        svc = Service(project)
        spent = _time_status(project.git.repo)
        for task in ("change", "incremental"):
            t = time.perf_counter()
            answer = svc.call("coverage_review", qs[task])
            out[f"{task}_cold"] = time.perf_counter() - t
            check(task, answer, files)
            walls, own = [], []
            for _ in range(repeat):  # each call's own work: its time less the git status it waited for
                spent.clear()
                t = time.perf_counter()
                svc.call("coverage_review", qs[task])
                walls.append(time.perf_counter() - t)
                own.append(walls[-1] - sum(spent))
            out[task], out[f"{task}_own"] = median(walls), median(own)
            check(task, svc.call("coverage_review", qs[task]), files)
        out["dirty"] = median(timed(project.git.is_dirty, repeat))
    return out


def _time_status(repo: Any) -> list[float]:
    """Time every ``git status`` the calls make (``Repository.status``: the dirty check and the changed paths)."""
    spent: list[float] = []
    status = repo.status

    def timed_status(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return status(*a, **k)
        finally:
            spent.append(time.perf_counter() - t)

    repo.status = timed_status
    return spent


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    os.environ["COVERAGE_MCP_HOME"] = str(scratch / "home")
    loads = [load_average()[0]]
    rows = []
    try:
        for n in args.files:
            r = measure(n, scratch / f"r{n}", args.repeat)
            loads.append(load_average()[0])
            rows.append(r)
            print(
                f"{n:>7,} files: change {fmt(r['change'])} (cold {fmt(r['change_cold'])}), incremental "
                f"{fmt(r['incremental'])} (cold {fmt(r['incremental_cold'])}), dirty check {fmt(r['dirty'])}",
                flush=True,
            )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    small, big = rows[0], rows[-1]
    grow = big["files"] / small["files"]

    def own(r: dict[str, Any], task: str) -> float:
        return float(r[f"{task}_own"])

    lines = [
        "## Scale: change and incremental from 10,000 to 100,000 files",
        "",
        f"`python benchmarks/scale.py`: synthetic repositories of 10-line files (`benchmarks/review.py`'s case, "
        f"sized), two snapshots each, commit 2 rewriting a line in 1% of the files; `coverage_review` in process, "
        f"warm median of {args.repeat} after a checked first call (cold: that first call, its comparison not "
        f"cached); every answer `supported` and the change categorizing every current line. The dirty check "
        f"(a `git status` of the whole tree, which the working-tree watcher is to replace) is timed inside the "
        f"calls (every `Repository.status` each made) and alone (`Git.is_dirty`); **own** is the median over the "
        f"calls of each call's time minus the status time it spent (the dirty state is cached about a second, so "
        f"some calls pay a status and some do not). {library_revision()}; {machine()}. "
        f"Load average (1 minute) while measuring: {' → '.join(f'{x:.2f}' for x in loads)}.",
        "",
        "| files | change warm | own | incremental warm | own | dirty check | change cold | incremental cold |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['files']:,} | {fmt(r['change'])} | {fmt(own(r, 'change'))} | {fmt(r['incremental'])} | "
            f"{fmt(own(r, 'incremental'))} | {fmt(r['dirty'])} | {fmt(r['change_cold'])} | "
            f"{fmt(r['incremental_cold'])} |"
            for r in rows
        ),
        "",
        f"- Growth for {grow:.0f}x the files (linear: at most {grow:.0f}x): change {big['change'] / small['change']:.1f}x "
        f"(own {own(big, 'change') / max(own(small, 'change'), 1e-9):.1f}x), incremental "
        f"{big['incremental'] / small['incremental']:.1f}x (own "
        f"{own(big, 'incremental') / max(own(small, 'incremental'), 1e-9):.1f}x), the dirty check "
        f"{big['dirty'] / small['dirty']:.1f}x.",
        f"- Goals at {big['files']:,} files (warm, without the dirty check until the watcher replaces it): change "
        f"< {CHANGE_GOAL * 1000:.0f} ms: own {fmt(own(big, 'change'))}; incremental < {INCREMENTAL_GOAL * 1000:.0f} "
        f"ms: own {fmt(own(big, 'incremental'))}.",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("scale", text)


if __name__ == "__main__":
    main()
