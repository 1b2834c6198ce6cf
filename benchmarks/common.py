"""Shared helpers of the benchmark scripts: corpus files, timing, RSS, README sections."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / ".work"
CORPUS = ROOT / "tests" / "corpus"
README = ROOT / "benchmarks" / "README.md"


def corpus_file(name: str) -> Path:
    """A corpus file, decompressed once into benchmarks/.work/."""
    WORK.mkdir(parents=True, exist_ok=True)
    src = CORPUS / name
    if not name.endswith(".zst"):
        return src
    out = WORK / Path(name).name.removesuffix(".zst")
    if not out.exists():
        tmp = out.with_suffix(".part")
        with src.open("rb") as f, tmp.open("wb") as g:
            zstandard.ZstdDecompressor(max_window_size=2**31).copy_stream(f, g)
        tmp.rename(out)
    return out


def run_measured(
    cmd: list[str], *, env: dict | None = None, cwd: Path | None = None
) -> tuple[float, int, str]:
    """Run ``cmd`` in a fresh process; (wall seconds, peak RSS in MB, stdout)."""
    wrapper = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "wall = time.perf_counter() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024\n"
        "print(json.dumps({'wall': wall, 'rss': rss, 'rc': p.returncode, 'out': p.stdout[-4000:], 'err': p.stderr[-2000:]}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, env=env, cwd=cwd
    )
    res = json.loads(out.stdout)
    if res["rc"] != 0:
        raise RuntimeError(f"{cmd} failed: {res['err']}")
    return res["wall"], res["rss"], res["out"]


def run_measured_cpu(
    cmd: list[str], *, env: dict | None = None, cwd: Path | None = None
) -> tuple[float, float, int, str, str]:
    """Run ``cmd`` in a fresh process; (wall seconds, CPU seconds (user + system), peak RSS in MB, stdout,
    stderr). CPU time is the steadier figure on a shared machine: other processes' load lengthens the wall
    time of a run, much less its own CPU time."""
    wrapper = (
        "import json, resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "wall = time.perf_counter() - t\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps({'wall': wall, 'cpu': u.ru_utime + u.ru_stime, 'rss': u.ru_maxrss // 1024, "
        "'rc': p.returncode, 'out': p.stdout[-4000:], 'err': p.stderr[-2000:]}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, env=env, cwd=cwd
    )
    res = json.loads(out.stdout)
    if res["rc"] != 0:
        raise RuntimeError(f"{cmd} failed: {res['err']}")
    return res["wall"], res["cpu"], res["rss"], res["out"], res["err"]


def median(values: list[float]) -> float:
    return statistics.median(values)


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def write_section(name: str, text: str) -> None:
    """Replace the text between ``<!-- name:begin -->`` and ``<!-- name:end -->``."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    current = (
        README.read_text()
        if README.exists()
        else "# Benchmarks\n\nMeasured on this project's machine (2 cores); each script rewrites its own section.\n"
    )
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in current and end in current:
        head, rest = current.split(begin, 1)
        _, tail = rest.split(end, 1)
        current = head + block + tail
    else:
        current = current.rstrip() + "\n\n" + block + "\n"
    README.write_text(current)


def machine() -> str:
    return f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}"


def peak_rss_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15-minute load averages (other processes share this machine)."""
    return os.getloadavg()


def library_revision() -> str:
    """Which coverage_core is measured: its checkout's commit (``+ uncommitted edits`` when
    coverage_core/ differs from it), or the commit an exported copy records in ``.commit``."""
    import coverage_core

    src = Path(coverage_core.__file__).resolve().parents[1]
    stamp = src / ".commit"
    if stamp.exists():
        return f"coverage_core at commit {stamp.read_text().strip()[:12]} (a clean export)"

    def run(*a):
        return subprocess.run(
            ["git", "-C", str(src), *a], check=False, capture_output=True, text=True
        ).stdout.strip()

    head = run("rev-parse", "--short=12", "HEAD")
    if not head:
        return f"coverage_core from {src}"
    dirty = run("status", "--porcelain", "--", "coverage_core")
    return f"coverage_core at commit {head}" + (" + uncommitted edits" if dirty else "")


def shutdown_daemon(home: Path, *, wait: bool = False) -> None:
    """Stop the daemon that holds ``home``'s lease, if any, through the home's private socket (the capability
    and client token travel nowhere else); with ``wait``, until its lease is released."""
    from coverage_daemon.credentials import UnixHTTPConnection, bearer, client_token, socket_path
    from coverage_daemon.identity import CAPABILITY_HEADER, DAEMON_LOCK
    from coverage_daemon.launcher import read_lease

    lease = read_lease(home / DAEMON_LOCK)
    if not lease.held:
        return
    conn = UnixHTTPConnection(socket_path(home), timeout=30)
    headers = {CAPABILITY_HEADER: str(lease.metadata["capability"]), **bearer(client_token(home) or "")}
    conn.request("POST", "/api/shutdown", body=b"", headers=headers)
    conn.getresponse().read()
    conn.close()
    while wait and read_lease(home / DAEMON_LOCK).held:
        time.sleep(0.01)


def commit_all(repo: Path, env: dict[str, str]) -> None:
    """``git init`` ``repo`` and commit everything in it as one commit, with no user or system git config."""
    git = {
        **env,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "sample"]):
        subprocess.run(["git", "-C", str(repo), *args], env=git, check=True)


def launch_connector(repo: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``coverage-mcp connect`` on ``repo`` as an MCP client launches it: JSON-RPC lines on its pipes."""
    process = subprocess.Popen(
        [sys.executable, "-m", "coverage_cli", "connect", "--repo", str(repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=repo,
    )
    assert process.stdin is not None and process.stdout is not None
    return process
