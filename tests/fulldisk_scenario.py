"""Runs that meet a full disk, played inside the disk-full fixture's namespace (``python -m tests.fulldisk_scenario
FOLDER``: FOLDER is the small tmpfs). Prints one JSON object: per case, what a read said while the disk was full
and what the store says once space is freed. ``test_run_terminal`` asserts on it."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from coverage_core.execution import commands, runs
from coverage_core.project import Project, open_project
from coverage_core.service import Service
from coverage_core.storage.exec_db import exec_db

from .gitrepo import make_repo

# Writes its report, fills the disk, then prints (its log cannot take it) and says so with an empty file (a
# name costs no data block on a tmpfs), then exits 0 or sleeps (a timeout or a cancel ends it).
FILLER = """\
import sys, time
open("cov.info", "w").write("SF:app.py\\nDA:1,1\\nend_of_record\\n")
with open("filler", "wb") as out:
    try:
        while True:
            out.write(b"0" * 65536)
            out.flush()
    except OSError:
        pass
sys.stdout.write("x" * 200000)
sys.stdout.flush()
open("printed", "w").close()
if sys.argv[1] in ("sleep", "cancel"):
    time.sleep(600)
"""
DEADLINE_S = 60.0


def _wait(predicate: Any, what: str) -> Any:
    give_up = time.monotonic() + DEADLINE_S
    while time.monotonic() < give_up:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    return None


def _stored(project: Project, run_id: str) -> dict[str, Any] | None:
    """The run's state and reason as the store has them, bypassing anything held in memory."""
    found = exec_db(project.store).one("SELECT state, reason FROM runs WHERE run_id = ?", [run_id])
    return None if found is None else {"state": found[0], "reason": found[1]}


def _free(repo: Path) -> None:
    for name in ("filler", "printed", "hog"):
        (repo / name).unlink(missing_ok=True)


class Hog:
    """Keeps the disk full while the run ends: whatever space a failed write gives back is taken again at once, so
    every write the run's owner makes meanwhile meets a full disk."""

    def __init__(self, repo: Path) -> None:
        self.stop = threading.Event()
        self.out = open(repo / "hog", "wb", buffering=0)
        self.thread = threading.Thread(target=self._take, daemon=True)
        self.thread.start()

    def _take(self) -> None:
        while not self.stop.is_set():
            try:
                self.out.write(b"0" * 4096)
            except OSError:
                time.sleep(0.0005)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.out.close()


def _case(project: Project, repo: Path, how: str, timeout_s: int) -> dict[str, Any]:
    service = Service(project)
    args = {
        "name": f"fill-{how}",
        "argv": [sys.executable, "filler.py", how],
        "artifacts": [{"path": "cov.info", "suite": "unit"}],
        "timeout_s": timeout_s,
    }
    command_id = service.call("register_test_command", args)["data"]["command"]["id"]
    commands.approve(project, command_id, approved_by="tester", via="cli")
    started = service.call("run_test", {"command_id": command_id, "reuse_if_unchanged": False})["data"]["run"]
    run_id = started["id"]
    _wait(lambda: (repo / "printed").exists(), "the disk filled and the output printed")
    hog = Hog(repo)
    if how == "cancel":
        service.call("cancel_run", {"run_id": run_id})
    answered = _wait(
        lambda: (lambda r: r if r.state not in runs.ACTIVE else None)(runs.get(project.store, run_id)),
        "the run's end",
    )
    read = service.call("run_review", {"run_id": run_id, "view": "status"})["data"]["run"]
    context = service.call("project_context", {})["data"]
    out = {
        "while_full": {"state": read["state"], "reason": read["reason"], "ended": answered is not None},
        "active_while_full": [r["id"] for r in context["active_runs"]],
        "run_id": run_id,
    }
    hog.close()
    _free(repo)
    stored = _wait(
        lambda: (lambda s: s if s and s["state"] not in runs.ACTIVE else None)(_stored(project, run_id)),
        "the stored end",
    )
    out["stored"] = stored or _stored(project, run_id)
    out["events"] = service.call("run_review", {"run_id": run_id, "view": "status"})["data"]["run"]["events"]
    return out


def main(folder: str) -> None:
    repo = make_repo(
        Path(folder) / "repo",
        {"app.py": "a = 1\n", "filler.py": FILLER, ".gitignore": "cov.info\nfiller\nprinted\n"},
    )
    results: dict[str, Any] = {}
    with open_project(repo) as project:
        for how, timeout_s in (("exit", 120), ("sleep", 4), ("cancel", 120)):
            results[how] = _case(project, repo, how, timeout_s)
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1])
