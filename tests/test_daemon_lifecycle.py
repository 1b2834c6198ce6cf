"""The daemon as a process: its lock, its health, one owner per home, and every way it stops."""

from __future__ import annotations

import json
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.locks import is_held

from .daemons import ServeProcess
from .environment import test_env

LOCK_KEYS = {
    "pid",
    "instance_id",
    "version",
    "build_fingerprint",
    "executable",
    "common_db",
    "capability",
    "host",
    "port",
    "home",
    "started_at",
}
HEALTH_KEYS = {
    "name",
    "version",
    "build_fingerprint",
    "schema_revision",
    "common_db",
    "home",
    "pid",
    "instance_id",
    "handoff_supported",
    "port",
}


def test_serve_takes_a_private_lock_whose_metadata_names_the_bound_port(
    shared_serve_process: ServeProcess,
) -> None:
    """Seed: "Daemon lease metadata includes a per-process instance ID and handoff capability." and "On
    Unix the metadata file is restricted to mode `0600`." """
    lock = shared_serve_process.home / "daemon.lock"
    meta = shared_serve_process.lock_metadata()
    assert LOCK_KEYS <= set(meta)
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert meta["port"] == shared_serve_process.port and meta["pid"] == shared_serve_process.proc.pid
    assert meta["home"] == str(shared_serve_process.home) and meta["common_db"] == str(
        shared_serve_process.home / "common.duckdb"
    )
    assert len(meta["capability"]) >= 40
    assert shared_serve_process.announce.strip() == (
        f"coverage-mcp daemon listening on http://127.0.0.1:{shared_serve_process.port} (home {shared_serve_process.home})"
    )
    assert is_held(lock)


def test_health_identifies_the_daemon_and_never_reveals_the_capability(
    shared_serve_process: ServeProcess,
) -> None:
    """Seed: "The public health response includes the PID, instance ID, and whether handoff is supported,
    but never the capability." """
    health = shared_serve_process.client().health()
    meta = shared_serve_process.lock_metadata()
    assert set(health) == HEALTH_KEYS
    assert health["name"] == "coverage-mcp" and health["handoff_supported"] is True
    assert (health["pid"], health["instance_id"], health["port"]) == (
        meta["pid"],
        meta["instance_id"],
        meta["port"],
    )
    assert health["build_fingerprint"] == meta["build_fingerprint"] and isinstance(
        health["schema_revision"], int
    )
    assert meta["capability"] not in json.dumps(health)


def test_a_second_daemon_on_the_same_home_fails_fast_naming_the_holder(
    shared_serve_process: ServeProcess,
) -> None:
    """Seed: "A duplicate daemon or database owner fails fast with holder metadata instead of deleting a
    lock or attempting concurrent DuckDB access." """
    second = shared_serve_process.cli(
        "serve", "--port", "0"
    )  # fails within cli's generous deadline, never waits
    assert second.returncode == 1
    assert f"pid {shared_serve_process.proc.pid}" in second.stderr and "daemon_conflict" in second.stderr
    assert shared_serve_process.proc.poll() is None  # the owner is untouched


def test_sigterm_stops_the_daemon_gracefully_and_releases_every_lock(
    serve_process: ServeProcess, sample_repo: Path
) -> None:
    client = serve_process.client()
    client.register(sample_repo)  # opens the repository's store under its lease
    store_lock = sample_repo / ".coverage-mcp" / "coverage.duckdb.lock"
    assert is_held(store_lock)
    serve_process.proc.send_signal(signal.SIGTERM)
    assert serve_process.proc.wait(timeout=15) == 0
    assert not is_held(serve_process.home / "daemon.lock") and not is_held(store_lock)


def test_shutdown_with_the_capability_answers_202_and_stops_the_daemon(serve_process: ServeProcess) -> None:
    answer = serve_process.client().shutdown(serve_process.lock_metadata()["capability"])
    assert answer["stopping"] is True and answer["pid"] == serve_process.proc.pid
    assert serve_process.proc.wait(timeout=15) == 0
    assert not is_held(serve_process.home / "daemon.lock")


def test_shutdown_with_a_wrong_or_missing_capability_is_forbidden(shared_serve_process: ServeProcess) -> None:
    client = shared_serve_process.client()
    for offered in ("not-the-capability", ""):
        with pytest.raises(CoverageError) as caught:
            client.shutdown(offered)
        assert caught.value.code == ErrorCode.FORBIDDEN and "capability" in caught.value.message
    time.sleep(0.2)
    assert (
        shared_serve_process.proc.poll() is None and client.health()["pid"] == shared_serve_process.proc.pid
    )


def test_status_and_stop_find_the_daemon_through_its_lock(serve_process: ServeProcess) -> None:
    status = serve_process.cli("status", "--json")
    assert status.returncode == 0
    assert (
        json.loads(status.stdout)["running"] is True
        and json.loads(status.stdout)["pid"] == serve_process.proc.pid
    )
    human = serve_process.cli("status")
    assert f"pid {serve_process.proc.pid}" in human.stdout
    stop = serve_process.cli("stop")
    assert (
        stop.returncode == 0
        and f"stopped the coverage-mcp daemon (pid {serve_process.proc.pid})" in stop.stdout
    )
    assert serve_process.proc.wait(timeout=5) == 0
    after = serve_process.cli("status")
    assert after.returncode == 1 and "no coverage-mcp daemon runs" in after.stdout
    again = serve_process.cli("stop", "--json")
    assert again.returncode == 0 and json.loads(again.stdout) == {"stopped": False, "running": False}


def serve_once(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``coverage-mcp serve`` expected to refuse to start."""
    return subprocess.run(
        [sys.executable, "-m", "coverage_cli", "serve", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=test_env(home=home, **env),
    )


def test_a_non_loopback_host_is_refused_before_anything_is_locked(tmp_path: Path) -> None:
    """Seed: "The server rejects non-loopback bind hosts, validates Host headers, emits restrictive
    browser headers, does not enable CORS, and serves no third-party assets." and "A deployment that
    exposes the HTTP port beyond the local user boundary requires an external authentication,
    authorization, and network-isolation design; that deployment is outside this project's supported
    scope." """
    refused = serve_once(tmp_path / "home", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2 and "loopback" in refused.stderr
    assert not (tmp_path / "home" / "daemon.lock").exists()


def test_settings_out_of_range_are_refused_at_start(tmp_path: Path) -> None:
    refused = serve_once(tmp_path / "home", "--port", "0", COVERAGE_MCP_DB_POOL_SIZE="0")
    assert refused.returncode == 2 and "COVERAGE_MCP_DB_POOL_SIZE" in refused.stderr


def test_a_port_in_use_is_a_clear_error_and_releases_the_lock(tmp_path: Path) -> None:
    """Seed: "The daemon takes `<common-db-parent>/daemon.lock` before binding its listener." """
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = serve_once(tmp_path / "home", "--port", str(port))
    assert refused.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not is_held(tmp_path / "home" / "daemon.lock")
