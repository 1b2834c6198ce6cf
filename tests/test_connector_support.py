"""Shared by the connector tests: real daemons, real connector processes, other builds.

Nothing here is a test. Every daemon a test starts is detached (that is the
connector's job), so ``Daemons.stop_all`` finds them by their home and stops
them through their own shutdown endpoint, or kills them if they hang.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from coverage_daemon.credentials import HomeError, UnixHTTPConnection, bearer, client_token, socket_path
from coverage_daemon.identity import CAPABILITY_HEADER, DAEMON_LOCK
from coverage_daemon.launcher import read_lease

from .environment import test_env
from .gitrepo import commit, make_repo

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "coverage_core" / "sample"
PACKAGES = ("coverage_core", "coverage_daemon", "coverage_cli")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_for(home: Path, port: int, **extra: str) -> dict[str, str]:
    return test_env(home=home, port=port, **extra)


def sample_repo(root: Path) -> Path:
    """The bundled sample project committed as a git repository, its step-3 report beside it (untracked)."""
    files = {
        str(p.relative_to(SAMPLE / "project")): p.read_text() for p in (SAMPLE / "project").rglob("*.py")
    }
    repo = make_repo(root, {**files, ".gitignore": "coverage.json\n*.lcov\n.coverage-mcp/\n"})
    commit(repo, "sample")
    shutil.copyfile(SAMPLE / "reports" / "step3.coverage.json", repo / "coverage.json")
    return repo


def other_build(root: Path, *, version: str | None = None, note: str | None = None) -> Path:
    """A copy of this checkout's packages as a different build, for PYTHONPATH.

    ``version`` installs it as that release (a ``coverage_mcp-<version>.dist-info``
    beside the packages, found on PYTHONPATH before the real install: the
    version comes from package metadata); ``note`` adds a comment (same
    version, other files: another fingerprint).
    """
    for package in PACKAGES:
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    if version is not None:
        dist_info = root / f"coverage_mcp-{version}.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: coverage-mcp\nVersion: {version}\n"
        )
    identity = root / "coverage_daemon" / "identity.py"
    text = identity.read_text()
    if note is not None:
        text += f"\n# {note}\n"
    identity.write_text(text)
    return root


class Connector:
    """``coverage-mcp connect`` as an MCP client launches it, driven line by line."""

    def __init__(self, repo: Path, env: dict[str, str], *args: str) -> None:
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, *args, "-m", "coverage_cli", "connect", "--repo", str(repo)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=repo,
        )

    def send(self, message: dict[str, Any] | bytes) -> None:
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the connector closed stdout; stderr:\n{self.stderr()}"
        return json.loads(line)

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(message)
        return self.receive()

    def initialize(self) -> dict[str, Any]:
        answer = self.request(INITIALIZE)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )

    def close(self, timeout: float = 60.0) -> int:
        """Close stdin and wait for the exit code (a generous deadline: a loaded machine is no failure)."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout)

    def stderr(self) -> str:
        if self.process.poll() is None:
            self.process.kill()
        assert self.process.stderr is not None
        return self.process.stderr.read().decode()


def lease(home: Path) -> dict[str, Any]:
    """The daemon lease's metadata while it is held; {} when nobody holds it."""
    found = read_lease(home / DAEMON_LOCK)
    return dict(found.metadata) if found.held else {}


def serve_processes(home: Path) -> list[int]:
    """Live ``coverage_cli serve`` processes of ``home`` (from /proc: Linux)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if (
            state != "Z"
            and b"serve" in argv
            and b"coverage_cli" in argv
            and f"COVERAGE_MCP_HOME={home}".encode() in environ
        ):
            pids.append(int(entry.name))
    return pids


def start_daemon(home: Path, port: int, *, build: Path | None = None) -> subprocess.Popen[bytes]:
    """``coverage-mcp serve`` in the foreground (of another build when ``build`` is given); waits until it listens."""
    home.mkdir(parents=True, exist_ok=True)
    env = env_for(home, port, **({"PYTHONPATH": str(build)} if build else {}))
    process = subprocess.Popen(
        [sys.executable, "-m", "coverage_cli", "serve"],
        env=env,
        cwd=build or home,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while lease(home).get("port") != port or health(port) is None:
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        assert time.monotonic() < deadline, "the daemon did not start"
        time.sleep(0.02)
    return process


def refuses(port: int) -> bool:
    """Whether nothing listens on ``port`` any more (a connection is refused, not reset)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    except OSError:
        pass
    return False


def health(port: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def stop_all(home: Path) -> None:
    """Stop every daemon of ``home``: through the lease's capability, then by force."""
    held = lease(home)
    if held.get("capability") and held.get("port"):
        # The admin route needs the client token too, sent over the private socket.
        conn = UnixHTTPConnection(socket_path(home), timeout=2)
        try:
            token = client_token(home, create=False)
            headers = {CAPABILITY_HEADER: held["capability"], **(bearer(token) if token else {})}
            conn.request("POST", "/api/shutdown", body=b"", headers=headers)
            conn.getresponse().read()
        except (OSError, http.client.HTTPException, HomeError):
            pass
        finally:
            conn.close()
    deadline = time.monotonic() + 5
    while (pids := serve_processes(home)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
