"""End-to-end ingest (parse + map + store + commit), side by side with lcov --summary.

    python benchmarks/ingest.py [--repeat 3] [--code DIR] [--no-readme]

Each ingest runs `coverage-mcp ingest --json` in a fresh process on a fresh git
repository, so wall time and peak RSS (the child's own, from wait4) are honest;
each answer is checked: the snapshot's totals must be `lcov --summary`'s (SQLite),
four times them (the 4x report) or the generator's (synthetic). The 4x report is
the SQLite LCOV written four times, the copies under new file names (copy1/...),
451 MB: it needs COVERAGE_MCP_MAX_REPORT_BYTES raised, which the run does.
``--code DIR`` measures the coverage_core/coverage_cli found in DIR (e.g. a clean
export of main) instead of this checkout's. Results go into benchmarks/README.md
(section "ingest") unless ``--no-readme``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    ROOT,
    WORK,
    corpus_file,
    library_revision,
    load_average,
    machine,
    median,
    run_measured,
    write_section,
)

SQLITE = "lcov/sqlite-3.53.2.gcov-60tests.lcov.zst"
SQLITE_FILES = ["sqlite3.c", "driver.c", "sqlite3.h"]
COPIES = 4
GOAL_MB = {"sqlite": 300, "4x": 400}  # issue 29
CPU: dict[str, list[float]] = {}  # report path -> CPU seconds of each ingest
CODE = ROOT  # where the measured coverage_core and coverage_cli come from (--code)


def four_times(sqlite: Path) -> Path:
    """The SQLite LCOV four times, copies 1-3 under new file names: a report 4x as large, 4x the files."""
    path = WORK / "sqlite-4x.lcov"
    if not path.exists():
        data = sqlite.read_bytes()
        tmp = path.with_suffix(".part")
        with tmp.open("wb") as out:
            for k in range(COPIES):
                out.write(
                    data
                    if k == 0
                    else data.replace(b"SF:/build/sqlite-3.53.2/", b"SF:/build/sqlite-3.53.2/copy%d/" % k)
                )
        tmp.rename(path)
    return path


def lcov_totals(output: str) -> dict[str, tuple[int, int]]:
    """``lines......: 62.0% (43167 of 69595 lines)`` -> {"lines": (69595, 43167)} (found, hit)."""
    found = re.findall(r"(lines|functions|branches)\.*: [\d.]+% \((\d+) of (\d+)", output)
    return {name: (int(total), int(hit)) for name, hit, total in found}


def ingest_once(cmd: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """One fresh process: (wall seconds, its own peak RSS in MB from wait4, its whole stdout); its CPU
    seconds (user + system) go into CPU, which other processes' load distorts far less than wall time."""
    with tempfile.TemporaryFile() as out, open(os.devnull, "wb") as null:
        start = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=null, env=env, cwd=CODE)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        text = out.read().decode()
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(f"{cmd[:4]} failed: {text[-500:]}")
    CPU.setdefault(str(cmd[-4]), []).append(usage.ru_utime + usage.ru_stime)
    return wall, usage.ru_maxrss // 1024, text


def _hits(n: int, f: int) -> int:
    return 0 if (n + f) % 5 == 0 else (n * 7919 + f * 104729) % 999_983


def synthetic_lcov(path: Path, files: int = 10_000, lines: int = 300) -> Path:
    """10,000 distinct files x 300 lines: 3 million line rows (about 44 MB)."""
    if path.exists():
        return path
    with path.open("w") as out:
        for f in range(files):
            body = "".join(f"DA:{n},{_hits(n, f)}\n" for n in range(1, lines + 1))
            hit = sum(1 for n in range(1, lines + 1) if _hits(n, f))
            out.write(
                f"SF:/ci/build/src/pkg{f % 50}/module_{f:05d}.c\n{body}LF:{lines}\nLH:{hit}\nend_of_record\n"
            )
    return path


def fresh_repo(root: Path, tracked: list[str]) -> Path:
    repo = Path(tempfile.mkdtemp(dir=root))
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    for rel in tracked:
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "init", "--allow-empty"], check=True, env=env)
    return repo


def ingest_runs(
    report: Path, tracked: list[str], repeat: int, env_extra: dict[str, str] | None = None
) -> tuple[list[float], list[int], dict[str, tuple[int, int]]]:
    """Walls, peak RSS and the stored totals ({counter: (found, hit)}) of ``repeat`` fresh ingests."""
    walls, rss = [], []
    totals: dict[str, tuple[int, int]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    try:
        for _ in range(repeat):
            repo = fresh_repo(scratch, tracked)
            env = {
                **os.environ,
                "COVERAGE_MCP_HOME": str(scratch / "home"),
                "PYTHONPATH": str(CODE),
                **(env_extra or {}),
            }
            w, r, out = ingest_once(
                [sys.executable, "-m", "coverage_cli", "ingest", str(report), "--json", "--repo", str(repo)],
                env,
            )
            snap = json.loads(out)["data"]["snapshot"]
            assert not snap["duplicate"], "a duplicate stores nothing: not an ingest"
            totals = {k: (v["found"], v["hit"]) for k, v in snap["totals"].items() if v["found"]}
            walls.append(w)
            rss.append(r)
            shutil.rmtree(repo)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return walls, rss, totals


def read_speeds(repeat: int) -> tuple[float, float]:
    """Listing 1,000 snapshots, and the first 1,000-file page of a 10,000-file snapshot."""
    sys.path.insert(0, str(CODE))
    from coverage_core import open_project

    scratch = Path(tempfile.mkdtemp(prefix="bench-reads-"))
    os.environ["COVERAGE_MCP_HOME"] = str(scratch / "home")
    try:
        repo = fresh_repo(scratch, ["a.c"])
        with open_project(repo) as project:
            report = scratch / "r.info"
            for i in range(1000):
                report.write_text(f"SF:a.c\nDA:1,{i}\nDA:2,{i % 2}\nend_of_record\n")
                project.ingest(report, suite=f"s{i % 4}")
            big = project.ingest(synthetic_lcov(WORK / "synthetic-10k-files.lcov"), suite="big")
            t_list, t_page = [], []
            for _ in range(repeat):
                project.store._snapshots.clear()  # measure the query, not the record cache
                t = time.perf_counter()
                snaps = project.snapshots()
                t_list.append(time.perf_counter() - t)
                t = time.perf_counter()
                page = project.files(big.snapshot_id, limit=1000)
                t_page.append(time.perf_counter() - t)
            assert len(snaps) == 1001 and len(page.files) == 1000
        return median(t_list), median(t_page)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    global CODE
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--code", type=Path, default=ROOT, help="measure the coverage_core/coverage_cli in this folder"
    )
    ap.add_argument("--no-readme", action="store_true", help="print the table without writing the README")
    args = ap.parse_args()
    CODE = args.code.resolve()
    sqlite = corpus_file(SQLITE)
    four = four_times(sqlite)
    synth = synthetic_lcov(WORK / "synthetic-10k-files.lcov")
    mb_sqlite = sqlite.stat().st_size / 1e6
    mb_four = four.stat().st_size / 1e6
    mb_synth = synth.stat().st_size / 1e6
    load_before = load_average()

    lcov_w, lcov_r, lcov_cpu = [], [], []
    lcov_out = ""
    for _ in range(args.repeat):
        # With branch data, as the manifest's ground truth and our own parse do.
        before = os.times()
        w, r, lcov_out = run_measured(["lcov", "--summary", "--rc", "lcov_branch_coverage=1", str(sqlite)])
        after = os.times()
        # run_measured's wrapper and lcov are both children: their CPU is the wrapper's children's (mostly lcov's)
        lcov_cpu.append(
            after.children_user + after.children_system - before.children_user - before.children_system
        )
        lcov_w.append(w)
        lcov_r.append(r)
    theirs = lcov_totals(lcov_out)
    sq_w, sq_r, sq_t = ingest_runs(sqlite, SQLITE_FILES, args.repeat)
    assert sq_t == theirs, f"SQLite: stored {sq_t}, lcov --summary says {theirs}"
    copies = SQLITE_FILES + [f"copy{k}/{f}" for k in range(1, COPIES) for f in SQLITE_FILES]
    big = {"COVERAGE_MCP_MAX_REPORT_BYTES": str(2**30)}
    fx_w, fx_r, fx_t = ingest_runs(four, copies, args.repeat, big)
    four_theirs = {k: (COPIES * f, COPIES * h) for k, (f, h) in theirs.items()}
    assert fx_t == four_theirs, f"4x: stored {fx_t}, expected {four_theirs}"
    sy_w, sy_r, sy_t = ingest_runs(
        synth, [f"src/pkg{f % 50}/module_{f:05d}.c" for f in range(10_000)], args.repeat
    )
    synth_hit = sum(1 for f in range(10_000) for n in range(1, 301) if _hits(n, f))
    assert sy_t == {"lines": (3_000_000, synth_hit)}, f"synthetic: stored {sy_t}"
    list_s, page_s = read_speeds(max(5, args.repeat))
    load_after = load_average()

    rows = [
        (
            "`lcov --summary --rc lcov_branch_coverage=1` (SQLite LCOV, summary only)",
            mb_sqlite,
            median(lcov_w),
            max(lcov_r),
        ),
        ("coverage-mcp ingest, SQLite LCOV", mb_sqlite, median(sq_w), max(sq_r)),
        (
            f"coverage-mcp ingest, the SQLite LCOV {COPIES}x (copies under new file names)",
            mb_four,
            median(fx_w),
            max(fx_r),
        ),
        ("coverage-mcp ingest, synthetic 10,000 files x 300 lines", mb_synth, median(sy_w), max(sy_r)),
    ]
    loads = (
        "/".join(f"{x:.2f}" for x in load_before)
        + " before, "
        + "/".join(f"{x:.2f}" for x in load_after)
        + " after"
    )
    lines = [
        f"Ingest, end to end (`coverage-mcp ingest --json` in a fresh process: parse, map, store, commit); "
        f"median of {args.repeat}; peak RSS is the child's own (wait4), the largest of the runs; {machine()}; "
        f"{library_revision()}; load average (1/5/15 min) {loads}.",
        "",
        "| run | MB | median s | median CPU s | MB/s | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    cpus = [median(lcov_cpu)] + [median(CPU[str(p)]) for p in (sqlite, four, synth)]
    for (name, mb, wall, rss), cpu in zip(rows, cpus):
        lines.append(f"| {name} | {mb:.1f} | {wall:.2f} | {cpu:.2f} | {mb / wall:.1f} | {rss} |")
    ratio = median(lcov_w) / median(sq_w)
    stated = ", ".join(f"{k} {h:,}/{f:,}" for k, (f, h) in theirs.items())
    lines += [
        "",
        f"- Answers checked: the SQLite snapshot's totals are `lcov --summary`'s ({stated}); the 4x snapshot's are "
        f"{COPIES} times them; the synthetic one's are 3,000,000 lines, {synth_hit:,} hit, as generated.",
        f"- Peak RSS vs the goals (issue 29): SQLite {max(sq_r)} MB (goal < {GOAL_MB['sqlite']} MB); the {COPIES}x report "
        f"{max(fx_r)} MB (goal < {GOAL_MB['4x']} MB): the LCOV is read in chunks and its named-test observations go into "
        "the ingest's transaction batch by batch, so memory no longer follows the report's size.",
        f"- Full ingest of the SQLite LCOV is **{ratio:.1f}x faster** than `lcov --summary` merely summarizing it "
        f"(acceptance: 6x). Predecessor (quoted from the seed, not measured here): 19.5 s, 759 MB.",
        f"- 3 million line rows in {median(sy_w):.2f} s (goal < 3 s; predecessor, quoted from the seed: about 35 s, 1.6 GB).",
        f"- Listing 1,000 snapshots: {list_s * 1000:.1f} ms; first 1,000-file page of a 10,000-file snapshot: "
        f"{page_s * 1000:.1f} ms (goal < 50 ms each).",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_readme:
        write_section("ingest", "## Ingest\n\n" + text)


if __name__ == "__main__":
    main()
