"""Managed runs: what the queue adds to a run of `true`, and 100 queued runs at concurrency 2.

    python benchmarks/runs.py [--repeat 30]

1. Overhead: run_test(wait=true, reuse_if_unchanged=false) of a registered,
   approved `true` (through the durable queue, a worker thread, its own process
   group, log capture, the artifact check and every state transition committed)
   against spawning `true` directly with subprocess. Medians; the goal is under
   50 ms added.
2. Throughput and integrity: 100 runs queued at once (wait=false) with
   COVERAGE_MCP_RUN_CONCURRENCY=2; every run must end succeeded exactly once,
   each with exactly one queued, running and succeeded transition, and never
   more than 2 running at a time.

Runs in-process on a fresh git repository (the library's runtime, the same
code the daemon runs). Results go into benchmarks/README.md (section "runs").
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import machine, median, write_section

from coverage_core.config import Settings
from coverage_core.execution import commands, runs
from coverage_core.project import open_project
from coverage_core.service import Service
from coverage_core.storage.exec_db import exec_db


def fresh_repo(root: Path) -> Path:
    repo = root / "repo"
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    (repo / "app.py").write_text("a = 1\n")
    (repo / ".gitignore").write_text("bench.info\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "init"], check=True, env=env)
    return repo


def overhead(repo: Path, repeat: int) -> tuple[float, float, float]:
    true = shutil.which("true") or "/bin/true"
    direct = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([true], check=True)
        direct.append(time.perf_counter() - t)
    with open_project(repo, settings=Settings.from_env(run_concurrency=1)) as project:
        service = Service(project)
        command_id = service.call(
            "register_test_command",
            {"name": "true", "argv": [true], "artifacts": [{"path": "bench.info", "suite": "bench"}]},
        )["data"]["command"]["id"]
        commands.approve(project, command_id, approved_by="bench", via="cli")
        args = {"command_id": command_id, "wait": True, "reuse_if_unchanged": False}
        service.call("run_test", args)  # warm: the runtime starts, the log folder exists
        queued = []
        for _ in range(repeat):
            t = time.perf_counter()
            run = service.call("run_test", args)["data"]["run"]
            queued.append(time.perf_counter() - t)
            assert run["state"] == "succeeded" and run["exit_code"] == 0, run
    d, q = median(direct) * 1000, median(queued) * 1000
    return d, q, q - d


def hundred(repo: Path, n: int = 100, concurrency: int = 2) -> dict[str, float]:
    with open_project(repo, settings=Settings.from_env(run_concurrency=concurrency)) as project:
        service = Service(project)
        command_id = service.call(
            "register_test_command",
            {
                "name": "sleep",
                "argv": [sys.executable, "-c", "import time; time.sleep(0.05)"],
                "artifacts": [{"path": "bench.info", "suite": "bench"}],
            },
        )["data"]["command"]["id"]
        commands.approve(project, command_id, approved_by="bench", via="cli")
        t = time.perf_counter()
        ids = [
            service.call(
                "run_test",
                {"command_id": command_id, "reuse_if_unchanged": False, "idempotency_key": f"bench-{i}"},
            )["data"]["run"]["id"]
            for i in range(n)
        ]
        assert len(set(ids)) == n
        while True:
            states = [runs.get(project.store, i).state for i in ids]
            if all(s not in runs.ACTIVE for s in states):
                break
            time.sleep(0.1)
        wall = time.perf_counter() - t
        assert states == ["succeeded"] * n, {s: states.count(s) for s in set(states)}
        db = exec_db(project.store)
        events = db.rows(
            "SELECT run_id, state, count(*) FROM run_events WHERE list_contains(?, run_id) GROUP BY ALL",
            [ids],
        )
        assert len(events) == 3 * n and all(count == 1 for _, _, count in events)
        # Never more than `concurrency` running at once: sweep the running intervals.
        spans = db.rows("SELECT started_at, ended_at FROM runs WHERE list_contains(?, run_id)", [ids])
        points = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda p: (p[0], p[1]))
        level = peak = 0
        for _, step in points:
            level += step
            peak = max(peak, level)
        assert peak <= concurrency, peak
        return {"wall": wall, "peak": peak, "runs": n}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    opts = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-runs-"))
    os.environ.setdefault("COVERAGE_MCP_HOME", str(scratch / "home"))
    try:
        d, q, added = overhead(fresh_repo(scratch / "a"), opts.repeat)
        h = hundred(fresh_repo(scratch / "b"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    verdict = "met" if added < 50 else "NOT met"
    text = f"""## Managed runs

`python benchmarks/runs.py --repeat {opts.repeat}` ({machine()}).

| | median |
|---|---|
| spawn `true` directly (subprocess) | {d:.1f} ms |
| `run_test` of `true`, `wait=true`, through the durable queue | {q:.1f} ms |
| added by the queue | {added:.1f} ms (goal under 50 ms: {verdict}) |

{h["runs"]} runs of a 50 ms command queued at once with `COVERAGE_MCP_RUN_CONCURRENCY=2`: all
{h["runs"]} succeeded exactly once (one queued, running and succeeded transition each, none lost or
duplicated), at most {h["peak"]} running at a time, {h["wall"]:.1f} s in all.
"""
    write_section("runs", text)
    print(text)


if __name__ == "__main__":
    main()
