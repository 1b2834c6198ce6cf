"""Daemons under test: a real daemon in this test's event loop (``in_process``) or in a subprocess
(``ServeProcess``), another process holding a store (``StoreHolder``), and a raw MCP POST. The fixtures
built on them (``daemon``, ``serve_process``, ``store_holder``) are in conftest.py."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from coverage_core.config import Settings
from coverage_daemon.credentials import bearer, client_token
from coverage_daemon.identity import CAPABILITY_HEADER, build_fingerprint
from coverage_daemon.rest_client import DaemonClient
from coverage_daemon.server import running, take_daemon_lock
from coverage_daemon.state import Daemon

from . import commandline
from .environment import test_env

ACCEPT = "application/json, text/event-stream"


class Running:
    """A daemon under test: its state, its address, and the secrets its own user holds."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.url = f"http://127.0.0.1:{daemon.port}"
        home = daemon.settings.home
        self.auth = bearer(client_token(home) or "")  # what an HTTP MCP client is configured to send
        self.admin = {**self.auth, CAPABILITY_HEADER: daemon.capability}  # what the CLI sends for admin calls

    def client(self, **kwargs: Any) -> DaemonClient:
        """The client our own tools use: the private socket and the client token."""
        return DaemonClient.of_home(self.daemon.settings.home, self.url, **kwargs)


class in_process:
    """``async with in_process(settings) as d``: lock, bind, serve; graceful stop and release after."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def __aenter__(self) -> Running:
        fingerprint = build_fingerprint()
        self.lease = take_daemon_lock(self.settings, fingerprint)
        self.context = running(self.settings, self.lease, fingerprint)
        return Running(await self.context.__aenter__())

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.context.__aexit__(*exc)
        finally:
            self.lease.release()


async def post_mcp(
    session: aiohttp.ClientSession,
    url: str,
    message: Any,
    *,
    headers: dict[str, str] | None = None,
    repo: Path | None = None,
    raw: bytes | None = None,
) -> tuple[int, dict[str, str], Any]:
    """One raw POST to an MCP endpoint: (status, headers, decoded body or None)."""
    sent = {"Content-Type": "application/json", "Accept": ACCEPT, **(headers or {})}
    if repo is not None:
        sent["x-coverage-mcp-repo"] = str(repo)
    data = raw if raw is not None else json.dumps(message).encode()
    async with session.post(url, data=data, headers=sent) as response:
        text = await response.read()
        return response.status, dict(response.headers), (json.loads(text) if text else None)


class ServeProcess:
    """``coverage-mcp serve`` in a subprocess, on an ephemeral port."""

    def __init__(self, home: Path, env: dict[str, str] | None = None) -> None:
        self.home = home
        self.env = test_env(home=home, port=0, **(env or {}))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "coverage_cli", "serve"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.announce = self.proc.stderr.readline()
        if "listening on" not in self.announce:
            self.proc.kill()
            raise AssertionError(f"serve did not start: {self.announce}{self.proc.stderr.read()}")
        self.url = self.announce.split("listening on ")[1].split(" ")[0]
        self.port = int(self.url.rsplit(":", 1)[1])
        self.auth = bearer(client_token(home) or "")

    def client(self, **kwargs: Any) -> DaemonClient:
        return DaemonClient.of_home(self.home, self.url, **kwargs)

    def lock_metadata(self) -> dict[str, Any]:
        return json.loads((self.home / "daemon.lock").read_text())

    def cli(self, *args: str, process: bool = True) -> subprocess.CompletedProcess[str]:
        """``coverage-mcp ARGS`` with this daemon's home: a child process, or in this process
        (``process=False``) where the process boundary is not what the test checks."""
        # generous: a run followed to its end on a loaded machine is no failure
        return commandline.cli(*args, env=self.env, process=process, timeout=120)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=15)
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()


HOLD_STORE = """
import sys
from coverage_core import open_project
with open_project(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


class StoreHolder:
    """Another process (a CLI ingest, say) holding a repository's store until released."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD_STORE, str(repo)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout.readline().strip() == "held"
        self.pid = self.proc.pid

    def release(self, *, wait: bool = True) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        if wait:
            self.proc.wait(timeout=10)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()


@contextlib.asynccontextmanager
async def sdk_client(
    daemon: Running, url: str, mode: str = "auto", timeout_s: float = 300.0, **headers: str
) -> AsyncIterator[Client]:
    """The official SDK's client over streamable HTTP with the client token, as a person configures it; it
    reads for as long as a run_test(wait=true) or a large answer may take on a loaded machine (the HTTP
    client's default of 5 s is shorter)."""
    async with (
        httpx2.AsyncClient(headers={**daemon.auth, **headers}, timeout=httpx2.Timeout(timeout_s)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


def project_client(daemon: Running, pid: str) -> contextlib.AbstractAsyncContextManager[Client]:
    """The SDK's client on one registered project's MCP endpoint."""
    return sdk_client(daemon, f"{daemon.url}/p/{pid}/mcp")


# The documented defaults of the compaction policy's project settings (README "Compaction"), written out
# here so the settings tests check them rather than read them back from the code.
COMPACTION_DEFAULTS = {
    "compaction_after_days": 30,
    "compaction_cadence_minutes": 60,
    "compaction_batch_size": 8,
    "compaction_protect_recent_runs": 10,
}
# The run bounds' project settings default to null: the daemon's COVERAGE_MCP_RUN_* values (README "Managed
# execution").
RUN_BOUND_DEFAULTS = {"run_queue_limit": None, "run_log_max_bytes": None}
