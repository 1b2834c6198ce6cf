"""Daemon memory under gzip bombs: RSS before, at peak and idle after twelve refused 1 GiB reports.

    python benchmarks/rss.py [--bombs 12] [--repos 6]

Starts a real ``coverage-mcp serve --port 0`` with a temporary
COVERAGE_MCP_HOME, makes six git repositories each holding two gzip files that
inflate to 1 GiB (about 1 MB compressed), registers them, then imports all
twelve at once over the daemon's REST API (``coverage_import``: the agent's
import, one thread per report). The daemon's VmRSS is sampled from
/proc/<pid>/status every 20 ms. Every answer must be the real refusal,
``report_too_large``. Results are written into benchmarks/README.md (section "rss").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import WORK, machine, write_section

from coverage_core.config import MIB, Settings
from coverage_core.errors import CoverageError

GIB = 1024 * MIB
BEFORE = {"peak": "3.1 GB", "idle": "2.87 GB"}  # the figures before the parse budget and malloc_trim
TARGET = {"peak": 1000, "idle": 400}  # MB


def make_bomb(path: Path, size: int = GIB) -> None:
    """A gzip member of ``size`` zero bytes, written in chunks (never held whole)."""
    zeros = bytes(16 * MIB)
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip header and trailer
    with path.open("wb") as out:
        for _ in range(size // len(zeros)):
            out.write(packer.compress(zeros))
        out.write(packer.flush())


def make_repo(root: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.com",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.com",
    }
    root.mkdir(parents=True)
    (root / "main.c").write_text("int main(void) { return 0; }\n")
    for args in (["init", "-q", "-b", "main"], ["add", "main.c"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", "-C", str(root), *args], env=env, check=True)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


class Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self._done = pid, 0.0, threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, rss_mb(self.pid))
            time.sleep(0.02)

    def stop(self) -> float:
        self._done.set()
        self.join()
        return self.peak


def start_daemon(home: Path) -> tuple[subprocess.Popen, int, object]:
    from coverage_daemon.rest_client import running_daemon

    env = {**os.environ, "COVERAGE_MCP_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "coverage_cli", "serve", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    os.environ["COVERAGE_MCP_HOME"] = str(home)  # running_daemon reads this home's lock and client token
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            found = running_daemon(Settings.from_env())
        except CoverageError:
            found = None
        if found is not None:
            client, meta = found
            client.timeout_s = 600.0
            return proc, int(meta.get("pid") or proc.pid), client
        if proc.poll() is not None:
            raise RuntimeError(f"the daemon exited: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.1)
    proc.terminate()
    raise RuntimeError("the daemon did not publish its port in 30 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bombs", type=int, default=12)
    parser.add_argument("--repos", type=int, default=6)
    parser.add_argument("--idle-wait", type=float, default=5.0, help="seconds to wait before the idle sample")
    opts = parser.parse_args()

    WORK.mkdir(parents=True, exist_ok=True)
    bomb = WORK / "bomb-1gib.gz"
    if not bomb.exists():
        print("writing a 1 GiB gzip bomb (once) ...", flush=True)
        make_bomb(bomb.with_suffix(".part"))
        bomb.with_suffix(".part").rename(bomb)
    scratch = Path(tempfile.mkdtemp(prefix="rss-", dir=WORK))
    home = scratch / "home"
    repos = [scratch / f"repo{i}" for i in range(opts.repos)]
    reports: list[tuple[Path, str]] = []
    for _i, repo in enumerate(repos):
        make_repo(repo)
    for k in range(opts.bombs):
        repo = repos[k % len(repos)]
        shutil.copyfile(bomb, repo / f"bomb{k}.info.gz")
        reports.append((repo, f"bomb{k}.info.gz"))

    proc, pid, client = start_daemon(home)
    try:
        ids = {repo: client.register(repo)["project_id"] for repo in repos}
        time.sleep(1.0)
        before = rss_mb(pid)
        sampler = Sampler(pid)
        sampler.start()

        def one(report: tuple[Path, str]) -> str:
            repo, name = report
            try:
                client.call(ids[repo], "coverage_import", {"report_path": name})
            except CoverageError as error:
                return error.code.value
            return "stored"

        started = time.perf_counter()
        with ThreadPoolExecutor(len(reports)) as pool:
            answers = list(pool.map(one, reports))
        elapsed = time.perf_counter() - started
        peak = sampler.stop()
        time.sleep(opts.idle_wait)
        idle = rss_mb(pid)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(scratch, ignore_errors=True)

    assert answers == ["report_too_large"] * len(reports), answers
    print(
        f"before {before:.0f} MB, peak {peak:.0f} MB, idle after {idle:.0f} MB; {len(reports)} bombs "
        f"refused in {elapsed:.1f} s"
    )
    verdict = "meets" if peak < TARGET["peak"] and idle < TARGET["idle"] else "MISSES"
    write_section(
        "rss",
        f"""## Daemon memory under gzip bombs

`python benchmarks/rss.py`: a real `coverage-mcp serve`, {len(repos)} git repositories, {len(reports)} gzip
files of 1 GiB decompressed (about {bomb.stat().st_size / MIB:.1f} MB each) imported at once through
`coverage_import` (default cap {Settings.from_env().max_report_bytes // MIB} MiB); every answer was
`report_too_large`. Daemon VmRSS from /proc/<pid>/status ({machine()}):

| | before | peak | idle after ({opts.idle_wait:.0f} s) | all refused in |
|---|---:|---:|---:|---:|
| now | {before:.0f} MB | {peak:.0f} MB | {idle:.0f} MB | {elapsed:.1f} s |
| before the parse budget | | {BEFORE["peak"]} | {BEFORE["idle"]} | |

Target: peak under {TARGET["peak"]} MB, idle under {TARGET["idle"]} MB ({verdict}). What bounds it: one
process-wide budget of report bytes in flight (`coverage_core/parsers/memory_budget.py`, 512 MiB by default,
`COVERAGE_MCP_PARSE_BUDGET_BYTES`; a compressed report claims the whole cap, so two bombs inflate at
a time), the refused chunks dropped before the error travels, and glibc's `malloc_trim(0)` after each
large claim.
""",
    )


if __name__ == "__main__":
    main()
