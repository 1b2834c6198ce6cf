"""The usual conveniences and MCP configs that work, through the real console script.

Snapshot id prefixes, listings that say why they are empty, deleting
snapshots in one transaction, ingest finding the usual report, the
connector's idle exit, a serve that cannot bind leaving nothing behind,
and client configs that name the executable by its absolute path. Each
command runs with this test's own COVERAGE_MCP_HOME (the autouse fixture) and
is judged by its exit code and by which stream said what: in process
(``tests/commandline.py``) where that is all there is to judge, as a child of
the installed ``coverage-mcp`` script where a daemon, a connector, a bind, a
terminal or the executable's own path is what the test is about.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import duckdb
import pytest
from click.testing import CliRunner

from coverage_cli.options import ENVELOPE, output_format
from coverage_core import open_project
from coverage_core.checkout import STORE_FILE
from coverage_core.git import discover
from coverage_core.project import USUAL_REPORTS
from coverage_core.storage.store import snap_tables
from coverage_daemon.launcher import (
    CONNECTOR_IDLE_EXIT_S,
    IDLE_EXIT_ENV,
    daemon_environment,
    read_lease,
)

from . import commandline
from .conftest import make_sample_repo

WAIT_S = 60.0  # generous bound for anything a subprocess must do


def script() -> list[str]:
    """The installed console script (the one beside this Python), else the module."""
    beside = Path(sys.executable).parent / "coverage-mcp"
    return [str(beside)] if beside.is_file() else [sys.executable, "-m", "coverage_cli"]


def cli(
    repo: Path | None, *args: str, env: dict[str, str] | None = None, process: bool = False
) -> subprocess.CompletedProcess[str]:
    """A command on ``repo`` (commandline.cli): in process, or a child where a daemon or a bind is involved."""
    return commandline.cli(*args, repo=repo, env=env, process=process)


def ingest(repo: Path, report: str, suite: str, env: dict[str, str] | None = None) -> str:
    done = cli(repo, "ingest", report, "--suite", suite, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["data"]["snapshot"]["snapshot_id"]


def listed(repo: Path, *args: str) -> list[str]:
    done = cli(repo, "snapshots", *args, "--json")
    assert done.returncode == 0, done.stderr
    return [s["snapshot_id"] for s in json.loads(done.stdout)["data"]["snapshots"]]


def store_file(repo: Path) -> Path:
    return discover(repo).store_dir / STORE_FILE


def row_counts(repo: Path) -> dict[str, dict[int, int]]:
    """Per snap-keyed table (and ``snapshots``), rows per snapshot key, read from the store file itself."""
    con = duckdb.connect(str(store_file(repo)), read_only=True)
    try:
        out = {}
        for table in [*snap_tables(con), "snapshots"]:
            out[table] = dict(con.execute(f"SELECT snap, count(*) FROM {table} GROUP BY snap").fetchall())
        return out
    finally:
        con.close()


def snap_keys(repo: Path) -> dict[str, int]:
    con = duckdb.connect(str(store_file(repo)), read_only=True)
    try:
        return dict(con.execute("SELECT snapshot_id, snap FROM snapshots").fetchall())
    finally:
        con.close()


@pytest.fixture(scope="module")
def stored_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str], str]:
    """The sample with three snapshots of suite unit (oldest first) and one of suite other, ingested once for
    the file (a home of its own: the tests' homes come later), and a pristine copy of checkout and store."""
    base = tmp_path_factory.mktemp("history")
    repo = make_sample_repo(base / "inventory")
    env = {"COVERAGE_MCP_HOME": str(base / "home"), "COVERAGE_MCP_PORT": "0"}
    unit = [
        ingest(repo, name, "unit", env)
        for name in ("step1.coverage.json", "step3.coverage.json", "step3.coverage.lcov")
    ]
    other = ingest(repo, "step3.coverage.json", "other", env)
    shutil.copytree(repo, base / "pristine", symlinks=True)
    return repo, base / "pristine", unit, other


@pytest.fixture
def history(stored_history: tuple[Path, Path, list[str], str]) -> tuple[Path, list[str], str]:
    """Three snapshots of suite unit (oldest first) and one of suite other: the pristine checkout and store
    put back where they were ingested (the store names its worktree by path), so a test that deletes or
    damages starts from the same four snapshots as every other."""
    repo, pristine, unit, other = stored_history
    shutil.rmtree(repo)
    shutil.copytree(pristine, repo, symlinks=True)
    return repo, unit, other


# -- snapshot id prefixes ------------------------------------------------------------------


def shared_prefix(ids: list[str]) -> tuple[str, list[str]]:
    """A prefix two or more ids start with, and those ids."""
    by_first: dict[str, list[str]] = {}
    for i in ids:
        by_first.setdefault(i[:6], []).append(i)
    prefix, found = max(by_first.items(), key=lambda item: len(item[1]))
    return prefix, found


def test_a_unique_prefix_names_its_snapshot_everywhere_an_id_is_taken(
    history: tuple[Path, list[str], str],
) -> None:
    repo, unit, _other = history
    others = [i for i in snap_keys(repo) if i != unit[0]]
    short = next(
        unit[0][:n] for n in range(6, len(unit[0]) + 1) if not any(o.startswith(unit[0][:n]) for o in others)
    )

    shown = cli(repo, "show", short, "--json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["data"]["snapshot_id"] == unit[0]  # answers name the full id
    assert listed(repo, "--snapshot", short) == [unit[0]]

    current = next(
        unit[1][:n]
        for n in range(6, 17)
        if not any(o.startswith(unit[1][:n]) for o in snap_keys(repo) if o != unit[1])
    )
    compared = cli(repo, "review", "change", "--snapshot", current, "--baseline", short, "--json")
    assert compared.returncode == 0, compared.stderr
    sides = json.dumps(json.loads(compared.stdout)["data"])
    assert unit[0] in sides and unit[1] in sides


def test_an_ambiguous_prefix_is_an_error_listing_the_candidates(sample_repo: Path) -> None:
    # Seventeen snapshots: two of them start with the same hex digit.
    with open_project(sample_repo) as project:
        ids = [
            project.ingest(sample_repo / "step1.coverage.json", suite=f"s{i}").snapshot_id for i in range(17)
        ]
    prefix, candidates = shared_prefix(ids)
    assert len(candidates) >= 2

    done = cli(sample_repo, "show", prefix)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "ambiguous" in done.stderr
    assert all(c in done.stderr for c in candidates)

    as_json = cli(sample_repo, "snapshots", "rm", prefix, "--json")
    assert as_json.returncode == 2
    body = json.loads(as_json.stderr)["error"]
    assert body["code"] == "invalid_argument"
    assert sorted(body["details"]["candidates"]) == sorted(candidates)


def test_an_unknown_prefix_is_not_found(history: tuple[Path, list[str], str]) -> None:
    repo, _unit, _other = history
    unknown = next(
        f"snap-{d}" for d in "0123456789abcdef" if not any(i.startswith(f"snap-{d}") for i in snap_keys(repo))
    )
    done = cli(repo, "show", unknown, "--json")
    assert done.returncode == 2
    assert json.loads(done.stderr)["error"]["code"] == "not_found"


# -- listings that say why they are empty ------------------------------------------------------


def test_a_filter_that_matches_nothing_says_so_and_names_what_there_is(
    history: tuple[Path, list[str], str],
) -> None:
    repo, _unit, _other = history
    done = cli(repo, "snapshots", "--suite", "x")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "no snapshot matches --suite x (suites: other, unit)"
    assert "yet" not in done.stdout

    both = cli(repo, "snapshots", "--suite", "unit", "--branch", "nope")
    assert "no snapshot matches --suite unit --branch nope" in both.stdout
    assert "branches: main" in both.stdout


def test_an_empty_store_says_no_snapshots_yet(sample_repo: Path) -> None:
    done = cli(sample_repo, "snapshots", "--suite", "x")
    assert done.returncode == 0
    assert done.stdout.startswith("no snapshots yet")


# -- deleting snapshots ---------------------------------------------------------------------


def test_rm_deletes_snapshots_and_exactly_their_rows(history: tuple[Path, list[str], str]) -> None:
    repo, unit, other = history
    keys = snap_keys(repo)
    before = row_counts(repo)

    done = cli(repo, "snapshots", "rm", unit[0][:12], unit[1], "--json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["data"]
    assert sorted(answer["deleted"]) == sorted(unit[:2])
    gone = {keys[unit[0]], keys[unit[1]]}
    assert answer["rows"] == {
        t: sum(n for k, n in rows.items() if k in gone) for t, rows in before.items() if t != "snapshots"
    }

    after = row_counts(repo)
    # Every table now holds exactly the remaining snapshots' rows, unchanged.
    assert after == {t: {k: n for k, n in rows.items() if k not in gone} for t, rows in before.items()}
    assert sorted(listed(repo)) == sorted([unit[2], other])
    assert cli(repo, "show", unit[2]).returncode == 0


def test_the_newest_snapshot_of_a_suite_is_refused_unless_forced(
    history: tuple[Path, list[str], str],
) -> None:
    repo, unit, other = history
    before = row_counts(repo)
    refused = cli(repo, "snapshots", "rm", unit[2])
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert "newest snapshot of its suite" in refused.stderr and "--force" in refused.stderr
    assert row_counts(repo) == before

    forced = cli(repo, "snapshots", "rm", unit[2], "--force")
    assert forced.returncode == 0, forced.stderr
    assert f"deleted {unit[2]}" in forced.stdout
    assert listed(repo, "--suite", "unit") == [unit[1], unit[0]]
    # The store still opens: the newest-snapshot marker followed the deletion.
    assert sorted(listed(repo)) == sorted([unit[0], unit[1], other])


def test_dry_run_says_what_would_go_and_deletes_nothing(history: tuple[Path, list[str], str]) -> None:
    repo, unit, _other = history
    before = row_counts(repo)
    done = cli(repo, "snapshots", "prune", "--suite", "unit", "--keep", "1", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"would delete {unit[0]}" in done.stdout and f"would delete {unit[1]}" in done.stdout
    assert "nothing was deleted" in done.stdout
    assert row_counts(repo) == before


def test_prune_keeps_the_newest_of_the_suite_only(history: tuple[Path, list[str], str]) -> None:
    repo, unit, other = history
    done = cli(repo, "snapshots", "prune", "--suite", "unit", "--keep", "1")
    assert done.returncode == 0, done.stderr
    assert listed(repo, "--suite", "unit") == [unit[2]]
    assert listed(repo, "--suite", "other") == [other]
    refused = cli(repo, "snapshots", "prune", "--suite", "unit", "--keep", "0")
    assert refused.returncode == 2 and "--force" in refused.stderr
    assert listed(repo, "--suite", "unit") == [unit[2]]


def test_a_deletion_that_fails_midway_rolls_back_and_leaves_everything(
    history: tuple[Path, list[str], str],
) -> None:
    repo, unit, _other = history
    # A real constraint the deletion trips over at its last statement, after
    # every detail table was already emptied of the snapshot's rows.
    con = duckdb.connect(str(store_file(repo)))
    con.execute("CREATE TABLE pins (pinned INTEGER REFERENCES snapshots (snap))")
    con.execute("INSERT INTO pins SELECT snap FROM snapshots WHERE snapshot_id = ?", [unit[0]])
    con.close()
    before = row_counts(repo)

    done = cli(repo, "snapshots", "rm", unit[0], unit[1], "--json")
    assert done.returncode == 1
    assert done.stdout == ""
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "store_unavailable"
    assert "nothing was deleted" in error["message"]
    assert row_counts(repo) == before
    assert sorted(listed(repo, "--suite", "unit")) == sorted(unit)


def test_listing_options_before_a_subcommand_are_a_usage_error(history: tuple[Path, list[str], str]) -> None:
    repo, unit, _other = history
    done = cli(repo, "snapshots", "--suite", "unit", "rm", unit[0])  # click's parsing: no process needed
    assert done.returncode == 2
    assert "--suite" in done.stderr
    assert len(listed(repo)) == 4


# -- ingest conveniences ----------------------------------------------------------------------


def test_ingest_without_a_path_takes_the_one_usual_report_and_says_which(sample_repo: Path) -> None:
    shutil.copy(sample_repo / "step3.coverage.json", sample_repo / "coverage.json")
    done = cli(sample_repo, "ingest", "--suite", "unit")
    assert done.returncode == 0, done.stderr
    assert "using coverage.json" in done.stderr
    assert "stored" in done.stdout and "using" not in done.stdout
    assert len(listed(sample_repo, "--suite", "unit")) == 1


def test_ingest_without_a_path_refuses_to_choose_between_several_reports(sample_repo: Path) -> None:
    shutil.copy(sample_repo / "step3.coverage.json", sample_repo / "coverage.json")
    (sample_repo / "coverage").mkdir()
    shutil.copy(sample_repo / "step3.coverage.lcov", sample_repo / "coverage" / "lcov.info")
    done = cli(sample_repo, "ingest")
    assert done.returncode == 2
    assert done.stdout == ""
    assert "coverage.json" in done.stderr and "coverage/lcov.info" in done.stderr
    assert listed(sample_repo) == []


def test_ingest_without_a_path_and_without_a_report_lists_what_it_looked_for(sample_repo: Path) -> None:
    done = cli(sample_repo, "ingest")
    assert done.returncode == 2
    assert all(name in done.stderr for name in USUAL_REPORTS)


def test_ingesting_coverage_py_data_file_says_to_write_a_report_first(sample_repo: Path) -> None:
    (sample_repo / "hello.py").write_text("print('hi')\n")
    made = subprocess.run(
        [sys.executable, "-m", "coverage", "run", "hello.py"],
        cwd=sample_repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    done = cli(sample_repo, "ingest", ".coverage")
    assert done.returncode == 2
    assert "coverage json --show-contexts" in done.stderr
    assert listed(sample_repo) == []


def test_a_path_map_that_matched_nothing_is_a_warning_on_stderr(sample_repo: Path) -> None:
    done = cli(sample_repo, "ingest", "step3.coverage.json", "--path-map", "/nowhere/app=src")
    assert done.returncode == 0, done.stderr
    assert "warning [path_map_unused]" in done.stderr and "/nowhere/app=src" in done.stderr
    assert "warning" not in done.stdout
    as_json = cli(sample_repo, "ingest", "step1.coverage.json", "--path-map", "/nowhere/app=src", "--json")
    warnings = json.loads(as_json.stdout)["data"]["snapshot"]["warnings"]
    assert [w["code"] for w in warnings] == ["path_map_unused"]


# -- --json and --format ------------------------------------------------------------------------


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table")
@click.option("--json", "as_json", is_flag=True)
def rendering(fmt: str, as_json: bool) -> None:
    click.echo(output_format(as_json, fmt, default="table"))


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        ([], "table"),
        (["--json"], ENVELOPE),
        (["--format", "markdown"], "markdown"),
        (["--format", "json"], "json"),
    ],
)
def test_json_and_format_each_alone_choose_the_output(args: list[str], shown: str) -> None:
    done = CliRunner().invoke(rendering, args)
    assert done.exit_code == 0
    assert done.output.strip() == shown


@pytest.mark.parametrize("fmt", ["markdown", "table", "json"])
def test_json_with_an_explicit_format_is_a_usage_error(fmt: str) -> None:
    done = CliRunner().invoke(rendering, ["--json", "--format", fmt])
    assert done.exit_code == 2
    assert "give one of them" in done.output


# -- the daemon: idle exit and a failed bind --------------------------------------------------------


def lock_is_free(lock: Path) -> bool:
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def wait_until(condition: Any, what: str) -> None:
    give_up = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < give_up, f"gave up waiting for {what}"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def connect_once(repo: Path, env: dict[str, str]) -> int:
    """One MCP session through the stdio connector (answered, then ended); the pid of the daemon it started."""
    proc = subprocess.Popen(
        [*script(), "connect", "--repo", str(repo)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        answer = proc.stdout.readline()  # the connector starts the daemon first
        assert json.loads(answer)["id"] == 1, proc.stderr.read()
        proc.stdin.close()
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    return int(read_lease(Path(env["COVERAGE_MCP_HOME"]) / "daemon.lock").metadata["pid"])


def test_a_daemon_a_connector_started_exits_after_its_idle_time(
    sample_repo: Path, isolated_home: Path
) -> None:
    pid = connect_once(sample_repo, {**os.environ, "COVERAGE_MCP_PORT": "0", IDLE_EXIT_ENV: "1"})
    wait_until(lambda: not alive(pid), "the idle daemon to exit")
    assert lock_is_free(isolated_home / "daemon.lock")
    assert not (isolated_home / "daemon.sock").exists()


def test_a_connector_starts_the_daemon_with_the_documented_idle_exit_unless_one_is_set(
    sample_repo: Path, isolated_home: Path
) -> None:
    assert daemon_environment({})[IDLE_EXIT_ENV] == str(CONNECTOR_IDLE_EXIT_S)
    assert daemon_environment({IDLE_EXIT_ENV: "0"})[IDLE_EXIT_ENV] == "0"
    env = {k: v for k, v in os.environ.items() if k != IDLE_EXIT_ENV}
    env["COVERAGE_MCP_PORT"] = "0"
    pid = connect_once(sample_repo, env)
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"{IDLE_EXIT_ENV}={CONNECTOR_IDLE_EXIT_S}".encode() in environ
    finally:
        assert cli(None, "stop").returncode == 0  # the daemon is a process of its own; stopping it needs none


def test_an_open_connection_keeps_an_idle_daemon_alive_until_it_closes(isolated_home: Path) -> None:
    env = {
        **os.environ,
        "COVERAGE_MCP_PORT": "0",
        IDLE_EXIT_ENV: "1",
        "COVERAGE_MCP_HTTP_IDLE_TIMEOUT_S": "600",
    }
    proc = subprocess.Popen(
        [*script(), "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        line = proc.stderr.readline()
        assert "listening on" in line, line
        port = int(line.split("listening on ")[1].split(" ")[0].rsplit(":", 1)[1])
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(b"GET /health HTTP/1.1\r\n")  # a request still arriving
        # Three idle limits pass with the request unfinished: the daemon must not leave.
        time.sleep(3.5)
        assert proc.poll() is None
        client.close()
        assert proc.wait(timeout=WAIT_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stderr.close()


@pytest.fixture
def taken_port() -> Iterator[int]:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        yield holder.getsockname()[1]
    finally:
        holder.close()


def test_a_serve_that_cannot_bind_leaves_no_socket_and_a_free_lock(
    isolated_home: Path, taken_port: int
) -> None:
    done = cli(None, "serve", "--port", str(taken_port), process=True)
    assert done.returncode == 1
    assert "daemon_conflict" in done.stderr and str(taken_port) in done.stderr
    assert lock_is_free(isolated_home / "daemon.lock")
    assert sorted(p.name for p in isolated_home.iterdir()) == ["daemon.lock"]


# -- MCP configs that work --------------------------------------------------------------------------


def assert_runs_outside_any_environment(command: list[str]) -> None:
    assert Path(command[0]).is_absolute() and Path(command[0]).is_file()
    bare = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    done = subprocess.run(
        [*command[:-3], "--version"] if command[-3:-1] == ["connect", "--repo"] else command,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=bare,
    )
    assert done.returncode == 0, done.stderr
    assert "version" in done.stdout


def test_demo_prints_configs_naming_the_executable_by_absolute_path() -> None:
    done = cli(None, "demo", "--json", process=True)
    assert done.returncode == 0, done.stderr
    mcp = json.loads(done.stdout)["mcp"]
    command = mcp["stdio"]
    assert command[-2] == "--repo"
    assert_runs_outside_any_environment(command)
    assert mcp["cursor"]["mcpServers"]["coverage"]["command"] == command[0]
    vscode = mcp["vscode"]["servers"]["coverage"]
    assert vscode["type"] == "stdio" and vscode["command"] == command[0]
    # The test's own home and port are not the defaults: the command names them (tests/test_small_items.py).
    assert mcp["claude_code"].startswith("claude mcp add coverage ")
    assert f" -- {command[0]} " in mcp["claude_code"]


def test_serve_on_a_terminal_prints_configs_naming_the_executable_by_absolute_path(
    isolated_home: Path,
) -> None:
    main, terminal = pty.openpty()
    env = {**os.environ, "COVERAGE_MCP_PORT": "0"}
    proc = subprocess.Popen([*script(), "serve"], env=env, stdout=terminal, stderr=subprocess.PIPE, text=True)
    os.close(terminal)
    try:
        assert "listening on" in proc.stderr.readline()
        text = b""
        give_up = time.monotonic() + WAIT_S
        while b"VS Code (.vscode/mcp.json):" not in text or not text.endswith(b"\n"):
            assert time.monotonic() < give_up, text
            text += os.read(main, 65536)
    finally:
        proc.terminate()
        proc.wait(timeout=WAIT_S)
        proc.stderr.close()
        os.close(main)
    lines = text.decode().splitlines()
    vscode = json.loads(
        next(line for line in lines if "VS Code (.vscode/mcp.json):" in line and '"stdio"' in line).split(
            ":", 1
        )[1]
    )
    server = vscode["servers"]["coverage"]
    assert server["type"] == "stdio"
    assert_runs_outside_any_environment([server["command"], *server["args"]])
    claude = next(line for line in lines if "claude mcp add" in line)
    assert f"-- {server['command']} connect" in claude


def test_snapshots_rm_goes_through_the_daemon_when_it_holds_the_store_and_needs_the_admin_capability(
    sample_repo: Path, isolated_home: Path
) -> None:
    from coverage_core.errors import CoverageError, ErrorCode

    from .daemons import ServeProcess

    first = cli(sample_repo, "ingest", "step1.coverage.json", "--suite", "unit", "--json")
    old = json.loads(first.stdout)["data"]["snapshot"]["snapshot_id"]
    cli(sample_repo, "ingest", "step3.coverage.json", "--suite", "unit", "--json")
    daemon = ServeProcess(isolated_home)
    try:
        client = daemon.client()
        pid = client.register(sample_repo)["project_id"]  # the daemon now holds the store
        with pytest.raises(CoverageError) as caught:  # the client token alone cannot delete
            client.capability = "guess"
            client.call(pid, "snapshot_delete", {"snapshot_ids": [old]})
        assert caught.value.code is ErrorCode.FORBIDDEN
        done = cli(sample_repo, "snapshots", "rm", old, "--json", process=True)  # routed to the daemon
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["data"]["deleted"] == [old]
        listed = client.call(pid, "coverage_review", {"task": "snapshots", "representation": "review"})
        kept = [s["snapshot_id"] for s in listed["data"]["snapshots"]]
        assert kept != [] and old not in kept
    finally:
        daemon.stop()
