"""Shared daemon fixtures (a real daemon in-process or in a subprocess, real repositories), and the small tables.

Other daemon and MCP test modules import their fixtures from here.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from coverage_core.config import SETTINGS, Settings
from coverage_core.errors import CoverageError, ErrorCode, Remedy
from coverage_daemon.client import DaemonClient
from coverage_daemon.errors_http import HTTP_STATUS, error_body, error_from_body
from coverage_daemon.identity import CAPABILITY_HEADER, build_fingerprint
from coverage_daemon.secrets import bearer, client_token
from coverage_daemon.server import check_loopback, running, take_daemon_lock
from coverage_daemon.state import Daemon

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


@pytest.fixture
async def daemon(isolated_home: Path) -> AsyncIterator[Running]:
    """A real daemon in this test's event loop, on an ephemeral loopback port, with its lock taken."""
    async with in_process(Settings.from_env(port=0)) as running_daemon:
        yield running_daemon


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

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "coverage_cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=15)
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()


@pytest.fixture
def serve_process(isolated_home: Path) -> Iterator[ServeProcess]:
    proc = ServeProcess(isolated_home)
    try:
        yield proc
    finally:
        proc.stop()


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


@pytest.fixture
def store_holder(sample_repo: Path) -> Iterator[StoreHolder]:
    holder = StoreHolder(sample_repo)
    try:
        yield holder
    finally:
        holder.close()


# -- the small tables ---------------------------------------------------------------------


def test_every_error_code_has_exactly_one_http_status() -> None:
    assert set(HTTP_STATUS) == set(ErrorCode)
    assert all(400 <= status < 600 for status in HTTP_STATUS.values())


def test_an_error_body_round_trips_through_the_python_client_with_its_remedy() -> None:
    remedy = Remedy(setting="COVERAGE_MCP_STORE_WAIT_MS", value=10000)
    error = CoverageError(ErrorCode.STORE_LOCKED, "held", "wait", {"pid": 7}, remedy)
    body = error_body(error)
    assert body == {
        "error": {
            "code": "store_locked",
            "message": "held",
            "suggestion": "wait",
            "details": {"pid": 7},
            "remedy": {"setting": "COVERAGE_MCP_STORE_WAIT_MS", "value": 10000},
        }
    }
    back = error_from_body(409, body)
    assert (back.code, back.message, back.suggestion, back.details, back.remedy) == (
        error.code,
        "held",
        "wait",
        {"pid": 7},
        remedy,
    )


def test_a_foreign_error_body_is_reported_as_an_unreachable_daemon() -> None:
    assert error_from_body(502, "<html>bad gateway</html>").code == ErrorCode.DAEMON_UNREACHABLE


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_loopback_hosts_are_accepted(host: str) -> None:
    check_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "192.168.1.10", "example.com", "::", "127.1", "127.0.0.1.evil.com"]
)
def test_a_non_loopback_host_or_a_loopback_shorthand_is_refused_as_the_connector_refuses_it(
    host: str,
) -> None:
    with pytest.raises(CoverageError) as caught:
        check_loopback(host)
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT and "loopback" in caught.value.message


def test_serve_help_lists_every_setting_with_its_default_and_range() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "serve", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for spec in SETTINGS:
        assert spec.env in out
        assert f"default {spec.default}" in out
        if spec.minimum is not None:
            assert f"range {spec.minimum}..{spec.maximum}" in out
