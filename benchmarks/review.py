"""Review tasks in process, timed on the answers users get: medians per task on
real and synthetic snapshots, cold and warm, with each answer's claim status,
and the words and bytes of each representation for the same question.

    python benchmarks/review.py [--repeat 30] [--cold 3] [--only SQLite] [--no-write]

Each case is a real git repository whose tracked files are the measured files
(created at the report's paths below ``/build/<project>-<version>/``, which the
ingest maps by suffix; ``snapshot.path_mapping`` is checked to say every file
mapped), with two commits and one snapshot on each, imported the way an agent
imports (``Service.call("coverage_import")`` with the report inside the
checkout):

- baseline: commit 1, the report of a part of the tests (the first half of the
  named tests; for the synthetic report, other hit counts);
- current: commit 2, which rewrites some executable lines in place, the report
  of every test.

So ``change`` compares two real snapshots across a real git diff and ``all``
answers with its change part. Every timed answer is checked: its claim status
is ``supported`` (or the status is printed beside the figure with its reasons),
and an answer that is an early exit (``not_measured``, an ``all`` without its
change part, an empty answer) stops the script.

Cold: the first call in a fresh process (the module imports and
``open_project`` done, not timed; every cache of the process empty); median of
``--cold`` processes. Warm: the same call again in one process, median of
``--repeat`` after one warm-up (comparisons and source texts are cached by then,
as they are for the second question of a session).

Results go into benchmarks/README.md (section "review"), with the load average
and the coverage_core measured (its commit, ``+ uncommitted edits`` if any). To
measure a commit while others edit the tree, run it on a clean export:

    git archive HEAD coverage_core | tar -x -C DIR && git rev-parse HEAD > DIR/.commit
    PYTHONPATH=DIR python benchmarks/review.py
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    WORK,
    corpus_file,
    library_revision,
    load_average,
    machine,
    median,
    write_section,
)

# Every task of coverage_review, in the order of the table.
TASKS = (
    "insight",
    "history",
    "source",
    "tests",
    "audit",
    "all",
    "change",
    "incremental",
    "snapshots",
    "files",
    "file",
)
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}


class EarlyExit(AssertionError):
    """A timed answer that is not the real one."""


# --------------------------------------------------------------------------- cases


class Case:
    """A repository, its two reports and the question each task is asked."""

    def __init__(
        self,
        name: str,
        short: str,
        report: Path,
        prefix: str,
        baseline_tests: int | None,
        edit_files: int = 10,
    ) -> None:
        self.name, self.short, self.report, self.prefix = name, short, report, prefix
        self.edit_files = edit_files  # files commit 2 edits
        self.baseline_tests = baseline_tests  # named tests kept in the baseline; None: synthetic hit counts

    # The report of the current commit is the corpus report itself; the baseline is derived from it.
    def baseline_report(self, out: Path) -> None:
        kept: set[str] | None = None
        with self.report.open() as src, out.open("w") as dst:
            record: list[str] = []
            for line in src:
                record.append(line)
                if line.startswith("end_of_record"):
                    tn = next((r[3:].strip() for r in record if r.startswith("TN:")), "")
                    if self.baseline_tests is None:
                        dst.write("".join(_reshuffle_hits(r) for r in record))
                    else:
                        if kept is None:
                            kept = set()
                        if tn in kept or len(kept) < self.baseline_tests:
                            kept.add(tn)
                            dst.writelines(record)
                    record = []

    def files(self) -> dict[str, int]:
        """Repository path -> last line the report names (the file's length)."""
        out: dict[str, int] = {}
        path = None
        number = re.compile(r"^(?:DA|BRDA|FN|LN):(\d+)")
        with self.report.open() as src:
            for line in src:
                if line.startswith("SF:"):
                    path = line[3:].strip().removeprefix(self.prefix)
                    out.setdefault(path, 0)
                elif path and (m := number.match(line)):
                    out[path] = max(out[path], int(m.group(1)))
        return out


def _reshuffle_hits(line: str) -> str:
    if line.startswith("DA:"):
        n, hits = line[3:].strip().split(",")[:2]
        return f"DA:{n},{(int(n) + int(hits) + 1) % 3}\n"
    return line


def synthetic_100k(path: Path) -> Path:
    if not path.exists():
        tmp = path.with_suffix(".part")
        with tmp.open("w") as out:
            for i in range(100_000):
                out.write(
                    f"TN:t{i % 7}\nSF:/build/gen-1.0/gen/d{i % 97}/f{i:06d}.c\n"
                    + "".join(f"DA:{n},{(i + n) % 3}\n" for n in range(1, 11))
                    + "end_of_record\n"
                )
        tmp.rename(path)
    return path


def cases() -> list[Case]:
    return [
        Case(
            "SQLite LCOV (60 tests)",
            "SQLite",
            corpus_file("lcov/sqlite-3.53.2.gcov-60tests.lcov.zst"),
            "/build/sqlite-3.53.2/",
            30,
        ),
        Case(
            "cmark-gfm LCOV (9 tests)",
            "cmark-gfm",
            corpus_file("lcov/cmark-gfm-0.29.0.gfm.13.gcov-9tests.lcov"),
            "/build/cmark-gfm-0.29.0.gfm.13/",
            5,
        ),
        Case(
            "synthetic 100,000 files",
            "synthetic",
            synthetic_100k(WORK / "synthetic-100k-files-tn.lcov"),
            "/build/gen-1.0/",
            None,
            edit_files=1000,
        ),
    ]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=GIT_ENV, stdout=subprocess.DEVNULL)


def placeholder(path: str, lines: int, edited: set[int] = frozenset()) -> str:
    # Placeholder text of the report's length: one line per line the report names.
    return "".join(f"/* {path}:{n}{' edited' if n in edited else ''} */\n" for n in range(1, lines + 1))


def executable_lines(report: Path, prefix: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    path = None
    with report.open() as src:
        for line in src:
            if line.startswith("SF:"):
                path = line[3:].strip().removeprefix(prefix)
            elif line.startswith("DA:") and path:
                out.setdefault(path, []).append(int(line[3:].split(",", 1)[0]))
    return {p: sorted(set(v)) for p, v in out.items()}


def refresh_index(repo: Path) -> None:
    """Leave the index as ``git status`` does. Just after the commit that built it, the files written in the
    second the index was written are "racily clean": libgit2 then reads them whole on every status (sqlite3.c:
    about 20 ms) until the index is written again, which any ``git status`` does (benchmarks/context.py
    measures both states). Past that second first, so the rewritten index is newer than every file."""
    time.sleep(1.1)
    subprocess.run(["git", "update-index", "-q", "--really-refresh"], cwd=repo, check=False)
    subprocess.run(["git", "status", "--short"], cwd=repo, capture_output=True, check=True)


def build(case: Case, root: Path) -> dict[str, Any]:
    """The repository, both snapshots stored; what the questions need (snapshot ids, a file)."""
    from coverage_core import open_project
    from coverage_core.service import Service

    lengths = case.files()
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("*.lcov\n")
    for rel, n in lengths.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(placeholder(rel, n))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "baseline")
    case.baseline_report(root / "baseline.lcov")
    shutil.copy(case.report, root / "current.lcov")

    # Commit 2: rewrite every 40th executable line of the first files (sorted), at most 200 a file.
    exe = executable_lines(case.report, case.prefix)
    edited: dict[str, set[int]] = {}
    for rel in sorted(exe)[: case.edit_files]:
        edited[rel] = set(exe[rel][::40][:200])
        (root / rel).write_text(placeholder(rel, lengths[rel], edited[rel]))
    git(root, "commit", "-qam", "current: edit lines")

    with open_project(root) as project:
        svc = Service(project)
        git(root, "checkout", "-q", "HEAD~1")
        base = svc.call("coverage_import", {"report_path": "baseline.lcov"})["data"]["snapshot"]
        git(root, "checkout", "-q", "main")
        cur = svc.call("coverage_import", {"report_path": "current.lcov"})["data"]["snapshot"]
        for side, snap in (("baseline", base), ("current", cur)):
            pm = snap["path_mapping"]
            if pm["mapped"] != len(lengths) or pm["ambiguous"] or pm["unmapped"]:
                raise EarlyExit(
                    f"{case.name}: {side} path_mapping {pm}, expected {len(lengths)} files mapped"
                )
        # The file asked about: the one with the most uncovered executable lines in the current report.
        target = max(edited, key=lambda p: len(exe[p]))
    return {
        "baseline": base["snapshot_id"],
        "current": cur["snapshot_id"],
        "file": target,
        "files": len(lengths),
        "edited_lines": sum(len(v) for v in edited.values()),
        "edited_files": len(edited),
        "base_commit": base["commit"],
        "current_commit": cur["commit"],
    }


def questions(info: dict[str, Any]) -> dict[str, dict[str, Any]]:
    f = info["file"]
    return {
        "insight": {"task": "insight"},
        "history": {"task": "history"},
        "source": {"task": "source", "file": f},
        "tests": {"task": "tests", "file": f},
        "audit": {"task": "audit"},
        "all": {"task": "all"},
        "change": {"task": "change"},
        "incremental": {
            "task": "incremental",
            "measurement": {"snapshot_id": info["current"]},
            "baseline": {"kind": "explicit", "snapshot_id": info["baseline"]},
        },
        "snapshots": {"task": "snapshots"},
        "files": {"task": "files"},
        "file": {"task": "file", "file": f},
    }


# --------------------------------------------------------------------------- checks


def check(task: str, answer: dict[str, Any], info: dict[str, Any]) -> tuple[str, list[str]]:
    """(claim status, reasons) of an answer that is the real one; EarlyExit otherwise."""
    data = answer["data"]
    status = data.get("claim_status")
    reasons = [r if isinstance(r, str) else json.dumps(r) for r in data.get("reasons", [])]

    def need(ok: Any, what: str) -> None:
        if not ok:
            raise EarlyExit(f"task={task}: {what}; claim {status} {reasons}; data keys {sorted(data)}")

    need(status != "not_measured", "an early not_measured exit")
    if task == "snapshots":
        ids = json.dumps(data)
        need(info["baseline"] in ids and info["current"] in ids, "both snapshots listed")
    elif task == "all":
        need("change" in data, "all without its change part")
        need(all(k in data for k in ("insight", "history")), "all without insight or history")
    elif task == "change":
        need(data.get("categories"), "no categories")
        need(sum(v for v in data["categories"].values() if isinstance(v, int)) > 0, "no line categorized")
    elif task == "incremental":
        need(data.get("diff") or data.get("kept") is not None or data.get("projection"), "no projection")
    elif task in ("source", "file", "tests"):
        need(data.get("status") != "unavailable", "no answer (status unavailable)")
        need(info["file"] in json.dumps(data), f"{info['file']} absent from the answer")
    elif task == "insight":
        need(json.dumps(data).count('"') > 20, "an empty answer")
    else:
        need(len(json.dumps(data)) > 40, "an empty answer")
    if status is None:
        return "-", reasons
    return status, reasons


# --------------------------------------------------------------------------- timing


def cold_child(repo: str, args_json: str, task: str, info_json: str) -> None:
    """In a fresh process: open the project (not timed), time the first call, check it."""
    from coverage_core import open_project
    from coverage_core.service import Service

    info = json.loads(info_json)
    with open_project(repo) as project:
        svc = Service(project)
        t = time.perf_counter()
        answer = svc.call("coverage_review", json.loads(args_json))
        seconds = time.perf_counter() - t
        status, reasons = check(task, answer, info)
    print(json.dumps({"seconds": seconds, "status": status, "reasons": reasons}))


def cold(repo: Path, task: str, args: dict[str, Any], info: dict[str, Any], n: int) -> tuple[float, str]:
    times, statuses = [], set()
    for _ in range(n):
        out = subprocess.run(
            [sys.executable, __file__, "--cold-child", str(repo), json.dumps(args), task, json.dumps(info)],
            check=False,
            capture_output=True,
            text=True,
            env=os.environ,
        )
        if out.returncode != 0:
            raise EarlyExit(f"cold task={task} failed:\n{out.stderr[-1500:]}")
        res = json.loads(out.stdout.strip().splitlines()[-1])
        times.append(res["seconds"])
        statuses.add(res["status"])
    return median(times), "/".join(sorted(statuses))


def warm(
    svc, task: str, args: dict[str, Any], info: dict[str, Any], repeat: int
) -> tuple[float, str, list[str]]:
    status, reasons = check(task, svc.call("coverage_review", args), info)  # the warm-up, checked
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        answer = svc.call("coverage_review", args)
        times.append(time.perf_counter() - t)
        if answer["data"].get("claim_status") != (None if status == "-" else status):
            raise EarlyExit(f"task={task}: claim changed between calls")
    return median(times), status, reasons


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


# --------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--cold", type=int, default=3)
    ap.add_argument("--only", action="append", help="case short names (SQLite, cmark-gfm, synthetic)")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--cold-child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cold_child:
        cold_child(*args.cold_child)
        return
    scratch = Path(tempfile.mkdtemp(prefix="bench-review-"))
    os.environ["COVERAGE_MCP_HOME"] = str(scratch / "home")
    from coverage_core import open_project
    from coverage_core.review.budget import size
    from coverage_core.service import Service

    loads = [load_average()]
    results: dict[str, dict[str, tuple[float, float, str]]] = {}
    notes: dict[str, set[str]] = {}
    described: list[str] = []
    sizes: list[str] = []
    try:
        for i, case in enumerate(c for c in cases() if not args.only or c.short in args.only):
            repo = scratch / f"r{i}"
            t = time.perf_counter()
            info = build(case, repo)
            print(f"{case.name}: built and stored in {time.perf_counter() - t:.1f} s: {info}", flush=True)
            refresh_index(repo)
            described.append(
                f"- {case.name}: {info['files']:,} files mapped on both sides; baseline "
                + (
                    f"{case.baseline_tests} named tests"
                    if case.baseline_tests
                    else "other hit counts (7 named tests, one per file record)"
                )
                + f" at commit 1, current all tests at commit 2, which rewrites {info['edited_lines']:,} executable "
                f"lines in {info['edited_files']:,} files; `file` questions ask about `{info['file']}`."
            )
            qs = questions(info)
            loads.append(load_average())
            colds = {task: cold(repo, task, qs[task], info, args.cold) for task in TASKS}
            loads.append(load_average())
            per: dict[str, tuple[float, float, str]] = {}
            with open_project(repo) as project:
                svc = Service(project)
                for task in TASKS:
                    w, status, reasons = warm(svc, task, qs[task], info, args.repeat)
                    c, cold_status = colds[task]
                    if cold_status != status:
                        raise EarlyExit(f"task={task}: cold claim {cold_status}, warm claim {status}")
                    per[task] = (c, w, status)
                    if status not in ("supported", "-"):
                        notes.setdefault(f"{task}: {status}: " + "; ".join(reasons), set()).add(case.short)
                    print(f"  {task:12s} cold {fmt(c):>9s}  warm {fmt(w):>9s}  {status}", flush=True)
                if case.short == "SQLite":
                    for task in ("insight", "all"):
                        for rep in ("compact", "review", "audit"):
                            answer = svc.call(
                                "coverage_review",
                                {
                                    "task": task,
                                    "representation": rep,
                                    "limits": {"max_words": 50_000, "max_bytes": 2_000_000},
                                },
                            )
                            check(task, answer, info)
                            w_, b_ = size(answer["data"])
                            sizes.append(
                                f"| {task} | {rep} | {w_} | {b_} | {answer['data'].get('claim_status')} |"
                            )
            loads.append(load_average())
            results[case.name] = per
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    peak = max(loads, key=lambda la: la[0])
    lines = [
        (
            f"`python benchmarks/review.py`: every `coverage_review` task in process (`Service.call`, compact, "
            f"default limits) on two stored snapshots per repository; {library_revision()}; {machine()}. "
            f"**Cold**: the first call in a fresh process (imports and `open_project` done, not timed; no cache), median of {args.cold} processes. "
            f"**Warm**: the same call again, median of {args.repeat} after one warm-up (comparisons and source texts "
            "cached). Each figure is `cold / warm` with the answer's claim status; every answer was checked to be "
            "the real one (not `not_measured`, `all` with its change part, the asked file in `source`/`tests`/`file`). "
            "Each repository's index is refreshed after it is built, as `git status` leaves it (until 2026-12-02 "
            "it was measured racily clean, which made every status read sqlite3.c whole: about 20 ms per answer "
            "part on SQLite; benchmarks/context.py measures both states). "
            f"Load average while measuring: {' → '.join(f'{la[0]:.2f}' for la in loads)} (1-minute; the machine is "
            f"shared with other engineers' test runs; highest {peak[0]:.2f} / {peak[1]:.2f} / {peak[2]:.2f})."
        ),
        "",
        (
            "Goals: < 10 ms on the corpus snapshots, < 100 ms on 100,000 files. Predecessor (quoted from the seed, "
            "not measured here): 38-80 ms per call over HTTP on small snapshots."
        ),
        "",
        "| task | " + " | ".join(results) + " |",
        "|---|" + "---|" * len(results),
    ]
    for task in TASKS:
        cells = []
        for per in results.values():
            c, w, status = per[task]
            cells.append(f"{fmt(c)} / {fmt(w)} {status if status != '-' else '(no claim: a listing)'}")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    lines += [
        "",
        (
            "The repositories (tracked files are the measured files, at the reports' paths below "
            "`/build/<project>-<version>/`, mapped by suffix; their text is placeholder lines of the report's "
            "length, so `source` shows that text):"
        ),
        "",
        *described,
    ]
    lines += [
        "",
        (
            "- `incremental` asks what the current run adds to the baseline snapshot (both explicit); with a "
            "complete current run on another commit it is the baseline-union-current projection across the diff."
        ),
        (
            "- A cold call on the 100,000-file repository is mostly the claim's dirty check (`git status` of a "
            "100,000-file working tree, about 0.25 s), paid once per process."
        ),
    ]
    misses = [
        f"{task} {fmt(per[task][1])} ({name.split(' ')[0]})"
        for name, per in results.items()
        for task in TASKS
        if per[task][1] >= (0.100 if name.startswith("synthetic") else 0.010)
    ]
    if misses:
        lines.append("- Warm medians over the goal: " + ", ".join(misses) + ".")
    for note, where in notes.items():
        lines.append(f"- Not `supported` ({', '.join(sorted(where))}): {note}")
    if sizes:
        lines += [
            "",
            (
                "Words and bytes of each representation for the same question (SQLite, budget lifted to "
                "50,000 words):"
            ),
            "",
            "| task | representation | words | bytes | claim |",
            "|---|---|---:|---:|---|",
            *sizes,
        ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write and not args.only:
        write_section("review", "## Review tasks\n\n" + text)


if __name__ == "__main__":
    main()
