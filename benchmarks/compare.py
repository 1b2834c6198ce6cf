"""Comparisons: the change review of two 1-million-line snapshots, and the gate end to end on SQLite.

    python benchmarks/compare.py [--repeat 7]

1. A synthetic repository of 1,000 files x 1,000 lines; the second commit
   inserts, deletes and rewrites lines in 100 files and renames one (a
   5,000-line diff). Both commits are measured (every line executable) and
   ``coverage_review(task="change")`` is timed in process, cold (the
   comparison cache cleared: load both sides, diff, categorize, render) and
   warm (the next call, e.g. a cursor page). Goal: cold < 500 ms median.
2. The SQLite LCOV of the corpus (60 tests) as the baseline of a repository
   whose two files have its line counts, and a modified copy (lines inserted,
   deleted and changed in sqlite3.c; hits shifted accordingly, some flipped)
   as the current snapshot of the next commit. ``coverage-mcp gate`` runs end
   to end in a fresh process (CLI start, store, compare, checks). Goal < 2 s.
   The same gate with ``--current REPORT`` (parse and map the 113 MB report
   in memory, never stored) is reported beside it.

Results go into benchmarks/README.md (section "compare").
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import corpus_file, machine, median, run_measured, write_section

from coverage_core import open_project
from coverage_core.review import comparing
from coverage_core.service import Service

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
    "GIT_CONFIG_NOSYSTEM": "1",
}
FILES, LINES, EDITED = 1000, 1000, 100


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=GIT_ENV
    ).stdout.strip()


def lcov_of(files: dict[str, list[str]], salt: int) -> str:
    """Every line executable, a function every 50 lines, a two-way branch every 20.

    Hits come from a hash of the line's text, so unchanged lines keep theirs,
    except where ``salt`` re-rolls one line in forty (lost and gained coverage).
    """
    out = []
    for path, lines in files.items():
        hits = [(hash((t, salt if hash(t) % 40 == 0 else 0)) % 7) // 2 for t in lines]
        out.append(f"SF:{path}\n")
        out += [
            f"FN:{n},f{n}_{path[-8:-2]}\nFNDA:{hits[n - 1]},f{n}_{path[-8:-2]}\n"
            for n in range(1, len(lines), 50)
        ]
        out += [f"DA:{n},{h}\n" for n, h in enumerate(hits, 1)]
        out += [
            f"BRDA:{n},0,0,{hits[n - 1]}\nBRDA:{n},0,1,{hits[n - 1] // 2}\n" for n in range(1, len(lines), 20)
        ]
        out.append("end_of_record\n")
    return "".join(out)


def synthetic(root: Path) -> tuple[Path, str, str]:
    """A repository with two measured commits; (repo, baseline snapshot id, current snapshot id)."""
    repo = root / "synthetic"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("*.info\n")
    files = {f"src/m{i:04d}.c": [f"m{i} line {n}" for n in range(LINES)] for i in range(FILES)}
    for path, lines in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text("\n".join(lines) + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    (repo / "base.info").write_text(lcov_of(files, 0))
    rnd = random.Random(7)
    for i in range(EDITED):  # each: +20 inserted, -10 deleted, 10 rewritten -> 50 diff lines
        path = f"src/m{i * 7:04d}.c"
        lines = files[path]
        at = rnd.randrange(100, 800)
        lines[at:at] = [f"new {i} {k}" for k in range(20)]
        del lines[at + 100 : at + 110]
        for k in range(10):
            lines[at + 150 + k] = f"rewritten {i} {k}"
        (repo / path).write_text("\n".join(lines) + "\n")
    git(repo, "mv", "src/m0999.c", "src/renamed.c")
    files["src/renamed.c"] = files.pop("src/m0999.c")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "change")
    (repo / "cur.info").write_text(lcov_of(files, 1))
    with open_project(repo) as project:
        base = project.ingest(repo / "base.info", commit="HEAD~1")
        cur = project.ingest(repo / "cur.info")
    return repo, base.snapshot_id, cur.snapshot_id


def bench_review(repo: Path, base: str, cur: str, repeat: int) -> dict[str, float]:
    args = {
        "task": "change",
        "baseline": {"kind": "explicit", "snapshot_id": base},
        "measurement": {"snapshot_id": cur},
    }
    cold, warm = [], []
    with open_project(repo) as project:
        svc = Service(project)
        env = svc.call("coverage_review", args)
        for _ in range(repeat):
            comparing._CACHE.clear()
            t = time.perf_counter()
            svc.call("coverage_review", args)
            cold.append(time.perf_counter() - t)
            t = time.perf_counter()
            svc.call("coverage_review", args)
            warm.append(time.perf_counter() - t)
    data = env["data"]
    return {
        "cold": median(cold),
        "warm": median(warm),
        "diff": data["diff"],
        "categories": data["categories"],
    }


_DA = re.compile(r"^(DA|BRDA|FN):(\d+),", re.MULTILINE)


def sqlite_repo(root: Path) -> tuple[Path, Path, Path]:
    """(repo, baseline report, current report): two commits of the files the SQLite LCOV measures."""
    report = corpus_file("lcov/sqlite-3.53.2.gcov-60tests.lcov.zst")
    text = report.read_text()
    repo = root / "sqlite"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("*.lcov\n")
    tops: dict[str, int] = {}
    for record in text.split("end_of_record"):
        m = re.search(r"^SF:(.+)$", record, re.MULTILINE)
        if m:
            name = Path(m.group(1)).name
            top = max((int(n) for n in re.findall(r"^(?:DA|BRDA):(\d+),", record, re.MULTILINE)), default=0)
            tops[name] = max(tops.get(name, 0), top)
    sources = {name: [f"{name} {n}" for n in range(1, top + 20)] for name, top in tops.items()}
    for name, lines in sources.items():
        (repo / name).write_text("\n".join(lines) + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sqlite")
    base = repo / "base.lcov"
    base.write_text(text)
    # The change: sqlite3.c gets 50 lines inserted after line 1000 (half of them
    # run), loses 20 at 50,000 and has 30 rewritten at 100,000; the report follows
    # (lines shift, deleted ones vanish). Every 20th uncovered line is now hit and
    # every 50th line is no longer hit, in every test's record alike.
    lines = sources["sqlite3.c"]
    lines[1000:1000] = [f"inserted {k}" for k in range(50)]
    del lines[50_050:50_070]
    for k in range(30):
        lines[100_030 + k] = f"rewritten {k}"
    (repo / "sqlite3.c").write_text("\n".join(lines) + "\n")
    git(repo, "commit", "-qam", "change")

    def moved(record: str) -> str:
        source = re.search(r"^SF:(.+)$", record, re.MULTILINE)
        if source is None or not source.group(1).endswith("sqlite3.c"):
            return record

        def shift(m: re.Match[str]) -> str:
            n = int(m.group(2))
            if 50_001 <= n <= 50_020:
                return f"{m.group(1)}:-1,"  # deleted: dropped below
            n = n + 50 if n > 1000 else n
            n = n - 20 if n > 50_070 else n
            return f"{m.group(1)}:{n},"

        kept = [line for line in _DA.sub(shift, record).split("\n") if ":-1," not in line]
        # The inserted lines' records go where gcov writes them: in line order.
        at = next(
            i
            for i, line in enumerate(kept)
            if line.startswith("DA:") and int(line[3 : line.index(",")]) > 1000
        )
        kept[at:at] = [f"DA:{1001 + k},{k % 2}" for k in range(50)]
        return "\n".join(kept)

    def hits(m: re.Match[str]) -> str:
        n, count = int(m.group(1)), int(m.group(2))
        if n % 50 == 0:
            count = 0
        elif n % 20 == 0 and count == 0:
            count = 1
        return f"DA:{n},{count}"

    changed = "end_of_record".join(moved(r) for r in text.split("end_of_record"))
    changed = re.sub(r"^DA:(\d+),(\d+)$", hits, changed, flags=re.MULTILINE)
    cur = repo / "cur.lcov"
    cur.write_text(changed)
    return repo, base, cur


def bench_gate(repo: Path, base: Path, cur: Path, repeat: int) -> dict[str, float]:
    with open_project(repo) as project:
        b = project.ingest(base, commit="HEAD~1")
        project.ingest(cur)
    cli = [sys.executable, "-m", "coverage_cli"]
    stored = ["gate", "--baseline", "HEAD~1", "--fail-under-patch", "0", "--ratchet", "--repo", str(repo)]
    unstored = [
        "gate",
        "--baseline",
        b.snapshot_id,
        "--current",
        str(cur),
        "--fail-under-patch",
        "0",
        "--repo",
        str(repo),
    ]
    out: dict[str, float] = {}
    for name, argv in (("stored", stored), ("report", unstored)):
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            proc = subprocess.run(cli + argv, capture_output=True, text=True, check=False)
            times.append(time.perf_counter() - t)
            if proc.returncode not in (0, 3):
                raise RuntimeError(proc.stderr)
        out[name] = median(times)
    diff = subprocess.run(
        cli + ["diff", "--baseline", "HEAD~1", "--format", "json", "--repo", str(repo)],
        capture_output=True,
        text=True,
        check=True,
    )
    out["diff_json"] = diff.stdout
    out["startup"] = median([run_measured(cli + ["--version"])[0] for _ in range(3)])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        repo, base, cur = synthetic(root)
        setup = time.perf_counter() - t
        review = bench_review(repo, base, cur, opts.repeat)
        print(
            f"synthetic setup {setup:.1f}s; change review cold {review['cold'] * 1000:.1f} ms, "
            f"warm {review['warm'] * 1000:.1f} ms; diff {review['diff']}"
        )
        srepo, sbase, scur = sqlite_repo(root)
        gate = bench_gate(srepo, sbase, scur, opts.repeat)
        print(
            f"gate stored {gate['stored']:.2f}s, report {gate['report']:.2f}s, CLI start {gate['startup']:.2f}s"
        )
    d = review["diff"]
    text = f"""## Comparisons

`coverage_review(task="change")` and `coverage-mcp gate`; median of {opts.repeat}; {machine()}.

| measurement | median | goal |
|---|---:|---:|
| change review, two 1,000,000-line snapshots (each also 100,000 branches, 20,000 functions), {d["lines_added"] + d["lines_removed"]:,}-line diff ({d["files_changed"]} files, one rename), cold | {review["cold"] * 1000:.0f} ms | < 500 ms |
| the same answer again (cached comparison: a cursor page, the gate after a diff) | {review["warm"] * 1000:.1f} ms | |
| `gate --baseline HEAD~1 --fail-under-patch 0 --ratchet`, SQLite LCOV (60 tests) both sides stored, fresh process | {gate["stored"]:.2f} s | < 2 s |
| `gate --baseline snap-... --current cur.lcov` (113 MB report parsed and mapped in memory, not stored) | {gate["report"]:.2f} s | |
| CLI start alone (`coverage-mcp --version`) | {gate["startup"]:.2f} s | |

Cold means the whole comparison: both sides loaded from DuckDB as columns, the
pygit2 diff with rename detection, every line categorized with NumPy, branch
and function categories joined in DuckDB, then the compact answer.
"""
    write_section("compare", text)


if __name__ == "__main__":
    main()
