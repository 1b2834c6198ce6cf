"""Brute force: imports racing symlink swaps of their report, counted by the code each ends in.

The deterministic form of each race is a cell of tests/test_faults.py (a swap
made between resolving and opening through ``opening.BEFORE_OPEN``); this loop
looks for any interleaving those cells miss. A thread keeps swapping the
report for a link out of the checkout, a directory, a loop and nothing, while
the service imports it; every answer must be a snapshot or a coded refusal,
never ``internal`` or an uncaught exception.

    python benchmarks/import_races.py [--imports 2000]
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from coverage_core import open_project
from coverage_core.errors import CoverageError
from coverage_core.service import Service

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "coverage_core" / "sample"


def _repo(where: Path) -> Path:
    repo = where / "inventory"
    shutil.copytree(SAMPLE / "project", repo)
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "i"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True)
    shutil.copy(SAMPLE / "reports" / "step3.coverage.json", repo / "good.json")
    return repo


def _swapper(repo: Path, stop: threading.Event) -> None:
    target, good = repo / "cov.json", (repo / "good.json").read_bytes()
    kinds = ("file", "link_out", "dir", "loop", "gone")
    i = 0
    while not stop.is_set():
        kind = kinds[i % len(kinds)]
        i += 1
        try:
            if target.is_dir() and not target.is_symlink():
                target.rmdir()
            else:
                target.unlink(missing_ok=True)
            if kind == "file":
                target.write_bytes(good)
            elif kind == "link_out":
                target.symlink_to("/etc/hostname")
            elif kind == "dir":
                target.mkdir()
            elif kind == "loop":
                target.symlink_to(target)
        except OSError:
            pass
        stop.wait(0.002)  # long enough for an import to start on each kind


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--imports", type=int, default=2000)
    args = parser.parse_args()
    seen: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as where:
        repo = _repo(Path(where))
        stop = threading.Event()
        thread = threading.Thread(target=_swapper, args=(repo, stop), daemon=True)
        thread.start()
        try:
            with open_project(repo) as project:
                service = Service(project)
                for _ in range(args.imports):
                    try:
                        service.call("coverage_import", {"report_path": "cov.json"})
                        seen["imported"] += 1
                    except CoverageError as error:
                        seen[error.code.value] += 1
                    except Exception as error:  # the bug this loop hunts
                        seen[f"UNCAUGHT {type(error).__name__}"] += 1
        finally:
            stop.set()
            thread.join()
    for outcome, n in seen.most_common():
        print(f"{outcome:30} {n}")
    bad = sum(n for outcome, n in seen.items() if outcome == "internal" or outcome.startswith("UNCAUGHT"))
    print(f"{'internal or uncaught':30} {bad}")


if __name__ == "__main__":
    main()
