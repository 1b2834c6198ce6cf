"""Only its own user drives the daemon: the client token, the admin capability, the peer's uid, the private socket."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.operations.table import OPERATIONS
from coverage_core.principals import Principal
from coverage_daemon.app import ROUTES
from coverage_daemon.auth import Access
from coverage_daemon.credentials import TOKEN_FILE, bearer, client_token, socket_path
from coverage_daemon.identity import CAPABILITY_HEADER
from coverage_daemon.rest_client import DaemonClient

from .daemons import COMPACTION_DEFAULTS, RUN_BOUND_DEFAULTS, Running, ServeProcess, in_process
from .environment import checkout_cli, test_env

PID = "0123456789abcdef"
SNAP = "snap-0123456789abcdef"
CID = "cmd-0123456789abcdef"


# Arguments each admin row would run with: refused for the client token before they are read.
ADMIN_ROW_ARGUMENTS: dict[str, dict[str, Any]] = {
    "command_approve": {"command_id": CID, "by": "agent"},
    "command_reject": {"command_id": CID, "by": "agent"},
    "snapshot_delete": {"suite": "default", "keep": 0, "force": True},
    "compact": {"older_than": "0"},
    "owner_import": {"report_path": "/etc/hostname"},
    "project_settings_update": {"settings": {"approval_mode": "attested"}},
}


def concrete(path: str) -> str:
    """A route's pattern with its variables filled in."""
    path = re.sub(r"\{project_id[^}]*\}\}?", PID, path)
    path = re.sub(r"\{command_id[^}]*\}\}?", CID, path)
    return re.sub(r"\{name[^}]*\}\}?", "coverage_review", path)


def every_route() -> list[tuple[str, str, Access]]:
    """Every route of the table, the operations' route once per row (GET too for a read-only one)."""
    routes = [(r.method, concrete(r.path), r.access) for r in ROUTES if "/ops/" not in r.path]
    return routes + [(method, f"/api/projects/{PID}/ops/{name}", Access.ROW) for method, name in every_row()]


def every_row() -> list[tuple[str, str]]:
    return [
        (m, op.name) for op in OPERATIONS.values() for m in (("GET", "POST") if op.read_only else ("POST",))
    ]


async def status_of(d: Running, method: str, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.request(
            method,
            d.url + path,
            data=b"{}",
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        ) as response,
    ):
        text = await response.read()
        return response.status, json.loads(text) if text else None


def refusal_code(body: Any) -> str:
    """The error code of a REST body, or the marker of an MCP endpoint's JSON-RPC refusal."""
    if (
        "error" in body
        and isinstance(body["error"], dict)
        and "code" in body["error"]
        and "jsonrpc" not in body
    ):
        return body["error"]["code"]
    return "jsonrpc" if "jsonrpc" in body else "?"


def test_every_route_declares_who_may_use_it_and_only_health_is_public() -> None:
    public = [(m, p) for m, p, access in every_route() if access is Access.PUBLIC]
    assert public == [("GET", "/health")]
    admin = {(m, p) for m, p, access in every_route() if access is Access.ADMIN}
    assert admin == {("POST", "/api/shutdown"), ("POST", "/api/dashboard/ticket")}
    # the rows' route and the settings alias: the row decides (tests/test_operation_table.py names each row's
    # principals); no route of its own is a session's write any more
    assert {(r.method, r.path) for r in ROUTES if r.access is Access.ROW} == {
        ("PATCH", "/api/projects/{project_id:[0-9a-f]{16}}"),
        ("GET", "/api/projects/{project_id:[0-9a-f]{16}}/ops/{name:[a-z_]{1,64}}"),
        ("POST", "/api/projects/{project_id:[0-9a-f]{16}}/ops/{name:[a-z_]{1,64}}"),
    }


async def test_without_the_client_token_every_route_but_health_is_forbidden(daemon: Running) -> None:
    """Seed: "Loopback binding is an access boundary, not authorization." """
    for method, path, access in every_route():
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": "Basic " + "x" * 40},
            {"Authorization": "Bearer caf\u00e9"},
        ):
            status, body = await status_of(daemon, method, path, headers)
            if access is Access.PUBLIC:
                assert status == 200
                continue
            assert status == 403, (method, path, headers, status, body)
            assert refusal_code(body) in ("forbidden", "jsonrpc"), body
    # an unknown path does not tell a stranger whether it exists
    status, body = await status_of(daemon, "GET", "/api/nothing-here", {})
    assert status == 403 and refusal_code(body) == "forbidden"


async def test_a_403_never_asks_for_oauth(daemon: Running) -> None:
    async with aiohttp.ClientSession() as http, http.post(daemon.url + "/mcp", json={}) as response:
        assert response.status == 403 and "WWW-Authenticate" not in response.headers


async def test_a_non_ascii_capability_header_is_forbidden_not_a_500(daemon: Running) -> None:
    status, body = await status_of(
        daemon, "POST", "/api/shutdown", {**daemon.auth, CAPABILITY_HEADER: "caf\u00e9"}
    )
    assert status == 403 and body["error"]["code"] == "forbidden"
    assert not daemon.daemon.stop.is_set()


async def test_the_client_token_alone_cannot_change_settings_import_as_owner_or_stop_the_daemon(
    daemon: Running, sample_repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret.info"
    outside.write_text("SF:/etc/shadow\nDA:1,1\nend_of_record\n")
    outside.chmod(0o600)
    client = daemon.client()
    pid = (await asyncio.to_thread(client.register, sample_repo))["project_id"]
    asked = [
        ("PATCH", f"/api/projects/{pid}", {"settings": {"approval_mode": "attested"}}),
        ("POST", "/api/projects", {"path": str(sample_repo), "settings": {"approval_mode": "attested"}}),
        ("POST", f"/api/projects/{pid}/ops/owner_import", {"report_path": str(outside)}),
        ("POST", "/api/shutdown", {}),
        # every row the client token does not reach, each with arguments it would run with
        *(
            ("POST", f"/api/projects/{pid}/ops/{op.name}", ADMIN_ROW_ARGUMENTS[op.name])
            for op in OPERATIONS.values()
            if Principal.CLIENT not in op.principals
        ),
    ]
    for method, path, body in asked:
        headers = {**daemon.auth, CAPABILITY_HEADER: "not-the-capability", "Content-Type": "application/json"}
        async with (
            aiohttp.ClientSession() as http,
            http.request(method, daemon.url + path, json=body, headers=headers) as response,
        ):
            answer = await response.json()
            assert response.status == 403 and answer["error"]["code"] == "forbidden", (path, answer)
            assert "secret.info" not in json.dumps(answer) and "shadow" not in json.dumps(answer)
    assert (await asyncio.to_thread(client.project, pid))["settings"] == {
        "approval_mode": "out_of_band",
        **COMPACTION_DEFAULTS,
        **RUN_BOUND_DEFAULTS,
    }
    assert await asyncio.to_thread(client.snapshots, pid) == []
    assert not daemon.daemon.stop.is_set()
    # the admin capability does what the client token cannot
    client.capability = daemon.daemon.capability
    changed = await asyncio.to_thread(
        client.call, pid, "project_settings_update", {"settings": {"approval_mode": "attested"}}
    )
    assert changed["data"]["settings"] == {
        "approval_mode": "attested",
        **COMPACTION_DEFAULTS,
        **RUN_BOUND_DEFAULTS,
    }


def test_the_mcp_surface_never_returns_or_accepts_the_admin_capability(
    shared_serve_process: ServeProcess, sample_repo: Path
) -> None:
    capability = shared_serve_process.lock_metadata()["capability"]
    listed = subprocess.run(
        [sys.executable, "-c", _MCP_LIST],
        env={
            **shared_serve_process.env,
            "URL": shared_serve_process.url,
            "REPO": str(sample_repo),
            "TOKEN": client_token(shared_serve_process.home) or "",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "tools" in listed and capability not in listed
    assert "capability" not in json.dumps([t for t in json.loads(listed)["tools"]]).lower()


_MCP_LIST = """
import json, os, urllib.request
def post(body, session=None):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Authorization": "Bearer " + os.environ["TOKEN"], "x-coverage-mcp-repo": os.environ["REPO"]}
    if session:
        headers["Mcp-Session-Id"] = session
        headers["MCP-Protocol-Version"] = "2025-06-18"
    request = urllib.request.Request(os.environ["URL"] + "/mcp", data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request) as response:
        return response.headers.get("Mcp-Session-Id"), response.read().decode()
session, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
                   "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
_, listed = post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session)
_, context = post({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "project_context", "arguments": {}}}, session)
print(json.dumps({"tools": json.loads(listed)["result"]["tools"], "context": json.loads(context)}))
"""


# -- a second uid on the same machine ------------------------------------------------------------

_STRANGER = """
import json, sys, urllib.request, urllib.error
url, token, routes = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
out = []
for method, path in routes:
    for headers in ({}, {"Authorization": "Bearer " + token}):
        request = urllib.request.Request(url + path, method=method, data=b"{}" if method != "GET" else None,
                                         headers={"Content-Type": "application/json",
                                                  "Accept": "application/json, text/event-stream", **headers})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                out.append([method, path, bool(headers), response.status])
        except urllib.error.HTTPError as error:
            out.append([method, path, bool(headers), error.code])
print(json.dumps(out))
"""


def as_nobody() -> list[str]:
    """A command prefix that runs the system python3 as another uid, or a skip saying why it cannot."""
    if os.geteuid() != 0:
        pytest.skip("a second uid needs root to switch to (setpriv); this run is not root")
    setpriv, python = shutil.which("setpriv"), "/usr/bin/python3"
    if setpriv is None or not os.path.exists(python):
        pytest.skip("needs setpriv (util-linux) and /usr/bin/python3 to run a client as nobody")
    return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", python]


def test_a_second_uid_gets_403_from_every_route_but_health_even_with_a_stolen_token(
    shared_serve_process: ServeProcess,
) -> None:
    prefix = as_nobody()
    routes = [(m, p) for m, p, _ in every_route()]
    token = client_token(shared_serve_process.home) or ""
    out = subprocess.run(
        [*prefix, "-c", _STRANGER, shared_serve_process.url, token, json.dumps(routes)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert len(seen) == 2 * len(routes)
    for method, path, with_token, status in seen:
        if (method, path) == ("GET", "/health"):
            assert status == 200
        else:
            assert status == 403, (method, path, with_token, status)
    assert shared_serve_process.proc.poll() is None  # shutdown was refused too


def test_the_home_the_token_and_the_socket_are_private_to_the_user(
    shared_serve_process: ServeProcess,
) -> None:
    home = shared_serve_process.home
    assert stat.S_IMODE(os.lstat(home).st_mode) == 0o700
    token = os.lstat(home / TOKEN_FILE)
    assert stat.S_ISREG(token.st_mode) and stat.S_IMODE(token.st_mode) == 0o600
    sock = os.lstat(socket_path(home))
    assert stat.S_ISSOCK(sock.st_mode) and stat.S_IMODE(sock.st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(home / "daemon.lock").st_mode) == 0o600


def test_a_home_that_is_a_symlink_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir()
    link = tmp_path / "home"
    link.symlink_to(real)
    out = subprocess.run(
        [*checkout_cli(), "serve", "--port", "0"],
        env=test_env(home=link),
        capture_output=True,
        text=True,
        timeout=120,  # generous: a loaded machine is no failure
    )
    assert out.returncode == 1 and "store_unavailable" in out.stderr and str(link) in out.stderr
    assert list(real.iterdir()) == []


# -- secrets travel only on the private socket ----------------------------------------------------


class Listener:
    """A TCP listener that records what it receives: another user's program on a port we might use."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received = b""
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.received += conn.recv(65536)
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


async def test_our_client_sends_its_secrets_over_the_private_socket_never_to_the_tcp_port(
    daemon: Running, sample_repo: Path
) -> None:
    impostor = Listener()
    try:
        # The client is told a TCP address an impostor holds; its requests still reach the real daemon.
        client = DaemonClient.of_home(daemon.daemon.settings.home, f"http://127.0.0.1:{impostor.port}")
        project = await asyncio.to_thread(client.register, sample_repo)
        assert project["checkout_path"] == str(sample_repo)
        await asyncio.to_thread(client.shutdown, daemon.daemon.capability)
        await asyncio.wait_for(daemon.daemon.stop.wait(), 10)
        token = client_token(daemon.daemon.settings.home) or ""
        assert impostor.received == b""
        assert token.encode() not in impostor.received
    finally:
        impostor.close()


def test_the_cli_reaches_a_running_daemon_through_its_socket_with_the_token(
    shared_serve_process: ServeProcess, sample_repo: Path
) -> None:
    client = shared_serve_process.client()
    pid = client.register(sample_repo)["project_id"]  # the daemon now holds the store
    out = shared_serve_process.cli(
        "ingest", "--repo", str(sample_repo), str(sample_repo / "step3.coverage.json"), "--json"
    )
    assert out.returncode == 0, out.stderr
    snap = json.loads(out.stdout)["data"]["snapshot"]
    listed = client.call(pid, "coverage_review", {"task": "snapshots", "representation": "review"})
    assert [s["snapshot_id"] for s in listed["data"]["snapshots"]] == [snap["snapshot_id"]]


# -- token rotation ---------------------------------------------------------------------------------


def test_token_rotate_replaces_the_client_token_in_the_running_daemon_at_once(
    serve_process: ServeProcess,
) -> None:
    old = client_token(serve_process.home) or ""
    url = serve_process.url + "/api/projects"

    def status(token: str) -> int:
        import urllib.error
        import urllib.request

        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=bearer(token)), timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as error:
            return error.code

    assert status(old) == 200
    out = serve_process.cli("token", "rotate")
    assert out.returncode == 0 and TOKEN_FILE in out.stdout and old not in out.stdout
    new = client_token(serve_process.home) or ""
    assert new != old and len(new) >= 40
    assert status(old) == 403 and status(new) == 200
    assert serve_process.cli("status").returncode == 0  # our own tools follow the new token


# -- connections, idle exit, stop -------------------------------------------------------------------


async def test_a_connection_that_sends_nothing_or_a_slow_request_head_is_closed(isolated_home: Path) -> None:
    """Seed: "HTTP/1 keep-alive is disabled so idle client connections cannot retain server tasks
    indefinitely." """
    async with in_process(Settings.from_env(port=0, http_idle_timeout_s=1)) as d:
        silent = await asyncio.open_connection("127.0.0.1", d.daemon.port)
        trickle = await asyncio.open_connection("127.0.0.1", d.daemon.port)

        async def dribble() -> None:  # the whole head would take 45 s: far past the generous deadline below
            for byte in b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200:
                trickle[1].write(bytes([byte]))
                await asyncio.sleep(0.2)

        dribbling = asyncio.create_task(dribble())
        try:
            assert await asyncio.wait_for(silent[0].read(), 30) == b""
            assert await asyncio.wait_for(trickle[0].read(), 30) == b""
        finally:
            dribbling.cancel()
            silent[1].close()
            trickle[1].close()
        async with aiohttp.ClientSession() as http, http.get(d.url + "/health") as response:
            assert response.status == 200  # the daemon itself is unaffected


def test_the_daemon_exits_by_itself_after_the_configured_idle_time(isolated_home: Path) -> None:
    proc = ServeProcess(isolated_home, {"COVERAGE_MCP_IDLE_EXIT_S": "1"})
    try:
        assert proc.proc.wait(timeout=15) == 0
    finally:
        proc.stop()
    assert not socket_path(isolated_home).exists() or not _answers(socket_path(isolated_home))


def _answers(path: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(path))
        return True
    except OSError:
        return False


def test_stop_ends_a_daemon_that_ignores_its_shutdown_and_says_how(isolated_home: Path) -> None:
    import signal

    proc = ServeProcess(isolated_home, {"COVERAGE_MCP_STOP_GRACE_S": "1"})
    try:
        os.kill(proc.proc.pid, signal.SIGSTOP)  # hung: it answers nothing and handles no signal
        out = proc.cli("stop", "--timeout", "1", "--json")
        assert out.returncode == 0, out.stderr
        answer = json.loads(out.stdout)
        assert answer["stopped"] is True and answer["how"] == "SIGKILL"
        assert proc.proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        proc.stop()


def test_stop_says_stopped_only_after_the_process_is_gone(serve_process: ServeProcess) -> None:
    out = serve_process.cli("stop", "--json")
    assert out.returncode == 0 and json.loads(out.stdout) == {
        "stopped": True,
        "pid": serve_process.proc.pid,
        "how": "shutdown",
    }
    # the process has ended by the time stop answered (a zombie until its parent, this test, collects it)
    assert serve_process.proc.wait(timeout=1) == 0


def test_an_unreachable_daemon_through_the_socket_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CoverageError) as caught:
        DaemonClient.of_home(tmp_path / "home", "http://127.0.0.1:9").health()
    assert caught.value.code == ErrorCode.DAEMON_UNREACHABLE and "socket" in caught.value.message


def test_the_printed_http_client_configs_name_the_token_and_never_contain_it(tmp_path: Path) -> None:
    from coverage_cli.daemon_cmds import client_configs

    home = tmp_path / "home"
    token = client_token(home) or ""
    text = client_configs("http://127.0.0.1:59471", Settings.from_env({"COVERAGE_MCP_HOME": str(home)}))
    assert token not in text
    assert "${COVERAGE_MCP_TOKEN}" in text and "${input:coverage-token}" in text
    assert str(home / TOKEN_FILE) in text and "http://127.0.0.1:59471/mcp" in text


@pytest.mark.skipif(
    not os.path.exists("/proc/net/tcp"), reason="the peer-uid layer reads Linux's socket tables"
)
def test_the_peer_uid_of_a_loopback_connection_is_found_by_netlink_and_by_proc_alike() -> None:
    from coverage_daemon.auth import _diag_uid, _proc_uid

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):  # the peer whose socket is looked up
            accepted, peer = server.accept()
            with accepted:
                assert _diag_uid(peer[0], peer[1], "127.0.0.1", port) == os.geteuid()
                assert _proc_uid(peer[0], peer[1], "127.0.0.1", port) == os.geteuid()
                assert _diag_uid(peer[0], peer[1] ^ 1, "127.0.0.1", port) is None  # no such socket
