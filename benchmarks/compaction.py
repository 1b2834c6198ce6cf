"""Compaction: how much smaller a snapshot's detail gets, how long compacting takes, and how
long a detailed answer waits for the restore.

    python benchmarks/compaction.py [--repeat 5] [--no-write]

1. Ratio, on the SQLite LCOV of the corpus (60 named tests; the repository and
   its two snapshots built as benchmarks/review.py builds them). The issue's
   measure is (b): the bytes of the snapshot's relational detail as DuckDB's
   used blocks times its block size (``PRAGMA database_size``; the file never
   shrinks, so its size is no measure), taken in a copy of the store,
   checkpointed, before and after deleting the snapshot's rows from every
   detail table (and checkpointing again): used blocks before minus used
   blocks after, times the block size. (a) is printed beside it: the
   snapshot's detail rows alone, copied in their stored order into an empty
   store and checkpointed, minus that store's used bytes when empty. The
   payload is the zstd frame stored in ``snapshot_payloads``; each ratio is
   relational bytes / payload bytes.
2. Compaction time per snapshot (``compaction.compact_snapshot``: read the
   rows, encode, compress, one transaction), both SQLite snapshots.
3. Restore, on a synthetic 1,000,000-line snapshot (10,000 files of 100 lines,
   a branch pair every 10th line, one function per file) and its baseline,
   each compacted: on a fresh read connection, the restore of every detail
   table of the current snapshot alone, and of both snapshots together (what
   ``change`` waits for); then ``audit`` of one file and ``change`` against the
   baseline, each answered on a fresh connection with both snapshots
   compacted (so the restores of the tables each reads are inside the time)
   beside the same answer with the rows relational (the process's cache of
   finished comparisons emptied before each). Every compacted answer is
   checked to be identical to the relational one (apart from
   ``context.stats``) before a figure is kept, and every restore to give the
   snapshots' row counts.

Results go into benchmarks/README.md (section "compaction").
"""

from __future__ import annotations

import argparse
import json
import shutil
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
from review import Case, build


class Mismatch(AssertionError):
    """A compacted answer that differs from the relational one."""


def _stripped(envelope: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(envelope, default=str))
    out["context"].pop("stats", None)
    return out


def _used_bytes(con) -> int:
    con.execute("CHECKPOINT")
    size = con.execute(
        "SELECT used_blocks, block_size FROM pragma_database_size() WHERE database_name = current_database()"
    ).fetchall()[0]
    return int(size[0]) * int(size[1])


def _isolated_bytes(store_file: Path, snap: int, root: Path) -> int:
    """(a): the snapshot's detail rows alone in an empty database, in stored order, checkpointed."""
    import duckdb

    from coverage_core.storage import payload, schema

    target = root / "isolated.duckdb"
    con = duckdb.connect(str(target))
    schema.migrate(con)
    empty = _used_bytes(con)
    source = root / "source.duckdb"  # a copy: the store itself is open in this process
    shutil.copy(store_file, source)
    con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")
    for table in payload.DETAIL:
        con.execute(
            f"INSERT INTO main.{table} SELECT * FROM src.main.{table} WHERE snap = ? ORDER BY rowid", [snap]
        )
    con.execute("DETACH src")
    source.unlink()
    used = _used_bytes(con) - empty
    con.close()
    target.unlink()
    return used


def _freed_bytes(store_file: Path, snap: int, root: Path) -> int:
    """(b): in a checkpointed copy of the store, the blocks deleting the snapshot's detail rows frees."""
    import duckdb

    from coverage_core.storage import payload

    copy = root / "copy.duckdb"
    shutil.copy(store_file, copy)
    con = duckdb.connect(str(copy))
    before = _used_bytes(con)
    for table in payload.DETAIL:
        con.execute(f"DELETE FROM {table} WHERE snap = ?", [snap])
    freed = before - _used_bytes(con)
    con.close()
    copy.unlink()
    return freed


def sqlite_ratio(root: Path) -> dict[str, Any]:
    from coverage_core import open_project
    from coverage_core.storage import compaction

    case = Case(
        "SQLite LCOV (60 tests)",
        "SQLite",
        corpus_file("lcov/sqlite-3.53.2.gcov-60tests.lcov.zst"),
        "/build/sqlite-3.53.2/",
        30,
    )
    repo = root / "sqlite"
    info = build(case, repo)
    store_file = repo / ".coverage-mcp" / "coverage.duckdb"
    out: dict[str, Any] = {"snapshots": []}
    with open_project(repo) as project:
        _used_bytes(project.store.con)
    for side in ("current", "baseline"):
        with open_project(repo) as project:
            sid = info[side]
            snap = project.store.snap_key(sid)
            rows = {
                t: project.store.con.execute(f"SELECT count(*) FROM {t} WHERE snap = ?", [snap]).fetchall()[
                    0
                ][0]
                for t in ("lines", "branches", "functions", "test_names", "test_observations")
            }
            _used_bytes(project.store.con)
            isolated = _isolated_bytes(store_file, snap, root)
            freed = _freed_bytes(store_file, snap, root)
            row = project.store.con.execute(
                "SELECT created_at, suite FROM snapshots WHERE snap = ?", [snap]
            ).fetchall()[0]
            started = time.perf_counter()
            done = compaction.compact_snapshot(project.store, compaction.Candidate(snap, sid, row[1], row[0]))
            seconds = time.perf_counter() - started
            out["snapshots"].append(
                {
                    "side": side,
                    "rows": rows,
                    "isolated_bytes": isolated,
                    "freed_bytes": freed,
                    "payload_bytes": done.payload_bytes,
                    "detail_bytes": done.detail_bytes,
                    "seconds": seconds,
                }
            )
    return out


def synthetic_report(path: Path, files: int, lines: int, shift: int) -> None:
    with path.open("w") as out:
        for f in range(files):
            rel = f"gen/d{f % 97}/f{f:05d}.c"
            parts = [f"SF:/build/gen-1.0/{rel}\n", f"FN:1,fn{f}\n", f"FNDA:{(f + shift) % 3},fn{f}\n"]
            for n in range(1, lines + 1):
                parts.append(f"DA:{n},{(f + n + shift) % 3}\n")
                if n % 10 == 0:
                    parts.append(f"BRDA:{n},0,0,{(n + shift) % 2}\nBRDA:{n},0,1,{(n + shift + 1) % 2}\n")
            parts.append("end_of_record\n")
            out.write("".join(parts))


def restore_case(root: Path, repeat: int) -> dict[str, Any]:
    from review import GIT_ENV, git, placeholder  # noqa: F401

    from coverage_core import open_project
    from coverage_core.service import Service
    from coverage_core.storage import compaction

    files, lines = 10_000, 100
    repo = root / "synthetic"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("*.lcov\n")
    for f in range(files):
        rel = repo / f"gen/d{f % 97}/f{f:05d}.c"
        rel.parent.mkdir(parents=True, exist_ok=True)
        rel.write_text(placeholder(str(rel.relative_to(repo)), lines))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "synthetic")
    synthetic_report(repo / "base.lcov", files, lines, 0)
    synthetic_report(repo / "current.lcov", files, lines, 1)
    target = "gen/d0/f00000.c"
    with open_project(repo) as project:
        svc = Service(project)
        base = svc.call("coverage_import", {"report_path": "base.lcov", "suite": "s"})["data"]["snapshot"]
        cur = svc.call("coverage_import", {"report_path": "current.lcov", "suite": "s"})["data"]["snapshot"]
    questions = {
        "audit": {"task": "audit", "file": target, "measurement": {"snapshot_id": cur["snapshot_id"]}},
        "change": {
            "task": "change",
            "measurement": {"snapshot_id": cur["snapshot_id"]},
            "baseline": {"kind": "explicit", "snapshot_id": base["snapshot_id"]},
        },
    }

    from coverage_core.review import comparing

    def answer_fresh(project, args):
        con = project.store.cursor()  # a fresh read connection: nothing restored on it yet
        comparing._CACHE.clear()  # a finished comparison is cached per process: time the real work
        try:
            started = time.perf_counter()
            envelope = Service(project).call("coverage_review", args, con=con)
            return time.perf_counter() - started, envelope
        finally:
            con.close()

    out: dict[str, Any] = {"lines": files * lines, "answers": {}}
    with open_project(repo) as project:
        relational = {}
        for name, args in questions.items():
            answer_fresh(project, args)  # warm-up: imports, caches of the process
            times = [answer_fresh(project, args) for _ in range(repeat)]
            relational[name] = (median([t for t, _ in times]), _stripped(times[0][1]))
        for sid in (base["snapshot_id"], cur["snapshot_id"]):
            snap = project.store.snap_key(sid)
            row = project.store.con.execute(
                "SELECT created_at, suite FROM snapshots WHERE snap = ?", [snap]
            ).fetchall()[0]
            done = compaction.compact_snapshot(project.store, compaction.Candidate(snap, sid, row[1], row[0]))
            out.setdefault("compact_seconds", []).append(done.seconds)
            out.setdefault("payload_bytes", []).append(done.payload_bytes)
        snaps = {project.store.snap_key(sid): sid for sid in (base["snapshot_id"], cur["snapshot_id"])}
        current = {project.store.snap_key(cur["snapshot_id"]): cur["snapshot_id"]}

        def restore_fresh(which: dict[int, str]) -> float:
            con = project.store.cursor()
            try:
                started = time.perf_counter()
                project.store.materialize(con, snaps=which)
                seconds = time.perf_counter() - started
                got = con.execute(
                    "SELECT count(*) FROM lines WHERE list_contains(?, snap)", [list(which)]
                ).fetchall()
                if got[0][0] != files * lines * len(which):
                    raise Mismatch(f"restored {got[0][0]} lines, expected {files * lines * len(which)}")
                return seconds
            finally:
                con.close()

        restore_fresh(snaps)  # warm-up
        out["restore_one"] = median([restore_fresh(current) for _ in range(repeat)])
        out["restore_two"] = median([restore_fresh(snaps) for _ in range(repeat)])
        for name, args in questions.items():
            times = [answer_fresh(project, args) for _ in range(repeat)]
            for _, envelope in times:
                if _stripped(envelope) != relational[name][1]:
                    raise Mismatch(f"{name}: the compacted answer differs from the relational one")
            out["answers"][name] = {
                "relational": relational[name][0],
                "compacted": median([t for t, _ in times]),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="compaction-", dir=WORK))
    try:
        ratio = sqlite_ratio(root)
        restore = restore_case(root, args.repeat)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    def ms(s):
        return f"{s * 1000:,.0f} ms"

    def mb(b):
        return f"{b / 1e6:,.2f} MB"

    text = [
        "## Compaction",
        "",
        f"{machine()}; load average {', '.join(f'{x:.2f}' for x in load_average())}; {library_revision()}.",
        "`python benchmarks/compaction.py` (see its docstring for the method).",
        "",
        "SQLite LCOV, 60 named tests: one snapshot's relational detail (DuckDB used blocks x block size) "
        "against its zstd payload. (b), the issue's measure: the used bytes a copy of the store frees when the "
        "snapshot's detail rows are deleted and it is checkpointed; (a): the rows alone in an empty store.",
        "",
        "| snapshot | lines | branches | test observations | freed in the store (b) | relational, alone (a) "
        "| payload | ratio (b) | ratio (a) | compaction time |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in ratio["snapshots"]:
        r = s["rows"]
        text.append(
            f"| {s['side']} | {r['lines']:,} | {r['branches']:,} | {r['test_observations']:,} | "
            f"{mb(s['freed_bytes'])} | {mb(s['isolated_bytes'])} | {mb(s['payload_bytes'])} | "
            f"{s['freed_bytes'] / s['payload_bytes']:.1f}x | {s['isolated_bytes'] / s['payload_bytes']:.1f}x | "
            f"{ms(s['seconds'])} |"
        )
    text += [
        "",
        f"Synthetic {restore['lines']:,}-line snapshot (10,000 files, 200,000 branches): payload "
        f"{mb(restore['payload_bytes'][1])}, compacted in {ms(restore['compact_seconds'][1])}; restore alone on a "
        f"fresh connection {ms(restore['restore_one'])}, both snapshots together (what change waits for) "
        f"{ms(restore['restore_two'])} (medians of {args.repeat}).",
        "",
        "| answer (fresh read connection) | relational | compacted (restore included) |",
        "|---|---:|---:|",
    ]
    for name, t in restore["answers"].items():
        what = (
            "audit of one file" if name == "audit" else "change against the compacted baseline (two restores)"
        )
        text.append(f"| {what} | {ms(t['relational'])} | {ms(t['compacted'])} |")
    text += [
        "",
        "Every compacted answer was checked identical to the relational one (apart from context.stats). Goals: "
        "at least 10x on the SQLite snapshot; under 200 ms to restore a 1,000,000-line snapshot (change restores "
        "two). The synthetic report is regular, so its payload is tiny; its restore time is the decoding of the "
        "columns and their registration with DuckDB (no rows are copied), which depends on their count, not on "
        "the payload's size. Other helpers share "
        "this machine (see the load average): the figures move by tens of percent between runs.",
    ]
    report = "\n".join(text)
    print(report)
    if not args.no_write:
        write_section("compaction", report)


if __name__ == "__main__":
    main()
