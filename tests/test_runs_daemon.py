"""Managed execution through the daemon: the CLI approves, agents cannot, runs survive and recover (issue 13).

Every daemon here is a real ``coverage-mcp serve`` child (or an in-process daemon for the MCP client) and
every run a real child process; the command line runs in this process (``process=False``) and reaches the
daemon over HTTP exactly as the installed command does: what is checked is its routing, its answers and
exit codes, not an interpreter start.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.execution import commands
from coverage_core.operations.table import TOOLS
from coverage_daemon.credentials import client_token
from coverage_daemon.projects import Target

from .daemons import Running, ServeProcess, sdk_client
from .environment import checkout_cli
from .gitrepo import make_repo
from .realcov import PACKAGE
from .test_daemon_rest import call, register
from .test_runs import FILES, PY, alive, pids_of, wait_for
from .test_trust_auth import as_nobody

GEN_COMMAND = {"name": "gen", "argv": [PY, "gen.py"], "artifacts": [{"path": "cov.info", "suite": "unit"}]}
SLOW_COMMAND = {
    "name": "slow",
    "argv": [PY, "stubborn.py"],
    "artifacts": [{"path": "cov.info", "suite": "unit"}],
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", FILES)


def test_a_person_approves_with_the_cli_then_the_cli_runs_it_through_the_daemon(
    shared_serve_process: ServeProcess, repo: Path
) -> None:
    client = shared_serve_process.client(repo=str(repo))
    pid = client.register(repo)["project_id"]
    command = client.call(pid, "register_test_command", GEN_COMMAND)["data"]["command"]
    assert command["status"] == "pending"
    refused = shared_serve_process.cli("run", command["id"], "--repo", str(repo), "--json", process=False)
    assert refused.returncode == 1 and json.loads(refused.stderr)["error"]["code"] == "not_approved"
    listed = shared_serve_process.cli(
        "command", "list", "--status", "pending", "--repo", str(repo), process=False
    )
    assert listed.returncode == 0 and command["id"] in listed.stdout and "command approve" in listed.stdout
    approved = shared_serve_process.cli(
        "command", "approve", command["id"], "--note", "read the argv", "--repo", str(repo), process=False
    )
    assert approved.returncode == 0, approved.stderr
    shown = client.call(pid, "command_show", {"command_id": command["id"]})["data"]["command"]
    assert shown["status"] == "approved" and shown["decisions"][0]["via"] == "cli"
    assert shown["decisions"][0]["note"] == "read the argv"
    ran = shared_serve_process.cli("run", command["id"], "--repo", str(repo), "--json", process=False)
    assert ran.returncode == 0, ran.stderr
    run = json.loads(ran.stdout)["data"]["run"]
    assert run["state"] == "succeeded" and run["artifacts"][0]["status"] == "ingested"
    runs = shared_serve_process.cli(
        "runs", "--status", "succeeded", "--repo", str(repo), "--json", process=False
    )
    assert [r["id"] for r in json.loads(runs.stdout)["data"]["runs"]] == [run["id"]]
    logs = shared_serve_process.cli(
        "runs", "show", run["id"], "--logs", "--search", "generated", "--repo", str(repo), process=False
    )
    assert logs.returncode == 0 and "generated 1" in logs.stdout
    # `run --json` prints exactly the run_test envelope (the same run, by its idempotency key).
    keyed = shared_serve_process.cli(
        "run",
        command["id"],
        "--idempotency-key",
        "k2",
        "--no-reuse",
        "--repo",
        str(repo),
        "--json",
        process=False,
    )
    assert keyed.returncode == 0, keyed.stderr
    over_rest = client.call(
        pid,
        "run_test",
        {"command_id": command["id"], "wait": True, "idempotency_key": "k2", "reuse_if_unchanged": False},
    )
    printed = json.loads(keyed.stdout)
    for envelope in (printed, over_rest):
        envelope["context"].pop("stats")
    assert printed == over_rest and printed["data"]["run"]["id"] != run["id"]
    rejected = shared_serve_process.cli(
        "command", "reject", command["id"], "--repo", str(repo), process=False
    )
    assert (
        rejected.returncode == 0
        and client.call(pid, "command_show", {"command_id": command["id"]})["data"]["command"]["status"]
        == "rejected"
    )


async def test_an_mcp_client_with_the_client_token_cannot_approve(daemon: Running, repo: Path) -> None:
    pid = await register(daemon, repo)
    assert not any("approv" in name for name in TOOLS)  # no tool approves
    async with sdk_client(daemon, f"{daemon.url}/p/{pid}/mcp", "auto") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"register_test_command", "run_test", "run_review", "cancel_run"} <= tools
        result = await client.call_tool(
            "register_test_command",
            {**GEN_COMMAND, "human_approved": True, "approved_by": "me", "approval_note": "trust me"},
        )
        command = result.structured_content["data"]["command"]
        assert command["status"] == "pending"  # approval_mode out_of_band: the agent's word is ignored
        refused = await client.call_tool("run_test", {"command_id": command["id"]})
        assert refused.is_error and refused.structured_content["error"]["code"] == "not_approved"
    route = f"/api/projects/{pid}/ops/command_approve"
    status, _, body = await call(daemon, "POST", route, body={"command_id": command["id"], "by": "agent"})
    assert status == 403 and body["error"]["code"] == "forbidden", body
    status, _, body = await call(
        daemon,
        "POST",
        route,
        body={"command_id": command["id"], "by": "agent", "via": "attested"},
        headers=daemon.admin,
    )
    assert status == 400  # attested approvals come only with a registration under attested mode
    status, _, body = await call(
        daemon, "GET", f"/api/projects/{pid}/ops/command_show?command_id={command['id']}"
    )
    assert body["data"]["command"]["status"] == "pending"
    status, _, body = await call(
        daemon, "POST", route, body={"command_id": command["id"], "by": "ann"}, headers=daemon.admin
    )
    assert status == 200 and body["data"]["command"]["status"] == "approved"
    assert body["data"]["command"]["decisions"][-1]["via"] == "cli"


def test_a_foreign_uid_can_neither_approve_nor_run(shared_serve_process: ServeProcess, repo: Path) -> None:
    prefix = as_nobody()
    client = shared_serve_process.client(repo=str(repo))
    pid = client.register(repo)["project_id"]
    command = client.call(pid, "register_test_command", GEN_COMMAND)["data"]["command"]
    token = client_token(shared_serve_process.home) or ""
    stranger = """
import json, sys, urllib.request, urllib.error
url, token, pid, cid = sys.argv[1:5]
out = []
for path, headers in ((f"/api/projects/{pid}/ops/command_approve", {"x-coverage-mcp-capability": "guess"}),
                      (f"/api/projects/{pid}/ops/run_test", {})):
    body = json.dumps({"command_id": cid, **({"by": "x"} if "approve" in path else {})}).encode()
    request = urllib.request.Request(url + path, data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + token, **headers})
    try:
        out.append(urllib.request.urlopen(request, timeout=20).status)
    except urllib.error.HTTPError as error:
        out.append(error.code)
print(json.dumps(out))
"""
    out = subprocess.run(
        [*prefix, "-c", stranger, shared_serve_process.url, token, pid, command["id"]],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [403, 403]
    # Nor can it open the store itself: the store folder is private to the user.
    peek = subprocess.run(
        [*prefix, "-c", f"import os; os.listdir({str(repo / '.coverage-mcp')!r})"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
    )
    assert peek.returncode != 0 and "PermissionError" in peek.stderr
    assert (
        client.call(pid, "command_show", {"command_id": command["id"]})["data"]["command"]["status"]
        == "pending"
    )


def marked(run_id: str) -> list[int]:
    """Live processes whose environment carries the run's marker (read here from /proc, not by the library)."""
    needle = f"COVERAGE_MCP_RUN_ID={run_id}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and alive(int(entry)):
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if needle in handle.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                continue
    return found


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        stat = handle.read()
    return int(stat[stat.rindex(b")") + 2 :].split()[1])


def watchdogs_of(pid: int) -> list[int]:
    """The watchdog processes ``pid`` started (its children running execution/watchdog.py)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        parent = int(stat[stat.rindex(b")") + 2 :].split()[1])
        if parent == pid and b"watchdog.py" in cmdline:
            found.append(int(entry))
    return found


def test_kill_9_of_the_daemon_mid_run_leaves_no_process_of_the_run_at_once_and_an_interrupted_run(
    isolated_home: Path, repo: Path
) -> None:
    """Seed: "When a project store opens after an ungraceful daemon exit, persisted `running` jobs become
    terminal `interrupted` records and persisted `queued` jobs re-enter the normal worker/concurrency
    path." and "Running commands are not replayed because their external side effects may already have
    occurred." """
    first = ServeProcess(isolated_home)
    try:
        client = first.client(repo=str(repo))
        pid = client.register(repo)["project_id"]
        command = client.call(pid, "register_test_command", SLOW_COMMAND)["data"]["command"]
        assert (
            first.cli("command", "approve", command["id"], "--repo", str(repo), process=False).returncode == 0
        )
        run = client.call(pid, "run_test", {"command_id": command["id"]})["data"]["run"]
        # The run's leader and its grandchild, which ignores TERM and would outlive the leader's parent-death signal.
        leader, grandchild = wait_for(lambda: pids_of(repo), "the run starting its grandchild")
        supervisor = parent_of(leader)  # the run's direct child, its process group leader
        assert sorted(marked(run["id"])) == sorted([supervisor, leader, grandchild])
        [watchdog] = wait_for(lambda: watchdogs_of(first.proc.pid), "the daemon's watchdog")
        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait(30)
        # Nobody opens the store: the watchdog alone stops every process of the run, then exits.
        wait_for(lambda: not marked(run["id"]), "every process of the run gone after kill -9 of the daemon")
        assert not alive(supervisor) and not alive(leader) and not alive(grandchild)
        wait_for(lambda: not alive(watchdog), "the watchdog exiting once its owner is gone")
    finally:
        first.stop()
    # No daemon runs: the command line, holding the store itself, says what the run is (its daemon died).
    listed = first.cli("runs", "--repo", str(repo), "--json", process=False)
    assert [r["state"] for r in json.loads(listed.stdout)["data"]["runs"]] == ["interrupted"]
    shown = first.cli("runs", "show", run["id"], "--repo", str(repo), "--json", process=False)
    assert shown.returncode == 0, shown.stderr
    status = json.loads(shown.stdout)["data"]["run"]
    assert status["state"] == "interrupted" and "died" in status["reason"]
    second = ServeProcess(isolated_home)
    try:
        client = second.client(repo=str(repo))
        client.register(repo)  # opening the store recovers it
        status = client.call(pid, "run_review", {"run_id": run["id"]})["data"]["run"]
        assert status["state"] == "interrupted" and status["events"][-1]["detail"] == "recovered"
    finally:
        second.stop()


def _released_once_followed(
    serve: ServeProcess, command_id: str, repo: Path, release: Path, *extra: str
) -> tuple[int, str, str]:
    """``coverage-mcp run COMMAND`` as a child: once it says it follows the run past the request's deadline
    (the daemon answered run_test(wait=true) while the run was still running), the run is let go (its
    command blocks reading the ``release`` FIFO); (exit code, stdout, stderr). Generous deadlines, no sleep."""
    cli = subprocess.Popen(
        [*checkout_cli(), "run", command_id, "--repo", str(repo), *extra],
        env=serve.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said: list[str] = []

    def read_until_following() -> None:
        for line in cli.stderr:
            said.append(line)
            if "following it until it ends" in line:
                return

    try:
        reader = threading.Thread(target=read_until_following, daemon=True)
        reader.start()
        reader.join(120)
        assert any("following it until it ends" in line for line in said), "".join(said)
        with release.open("w") as fifo:  # the run's command reads it: the run ends now, not before
            fifo.write("go\n")
        out, err = cli.communicate(timeout=120)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
    return cli.returncode, out, "".join(said) + err


def test_the_cli_run_follows_a_run_past_the_request_deadline_until_it_ends_and_exits_1_when_it_failed(
    isolated_home: Path, repo: Path, tmp_path: Path
) -> None:
    # The daemon answers run_test(wait=true) after about 2 s; each run lasts until the command line has
    # said it follows the run past that answer (its command waits on a FIFO the test writes then).
    serve = ServeProcess(
        isolated_home, env={"COVERAGE_MCP_HTTP_TIMEOUT_S": "5", "COVERAGE_MCP_DB_QUERY_TIMEOUT_MS": "2000"}
    )
    releases = {name: tmp_path / f"release-{name}" for name in ("late", "failing")}
    for fifo in releases.values():
        os.mkfifo(fifo)
    try:
        client = serve.client(repo=str(repo))
        pid = client.register(repo)["project_id"]
        late = {
            **GEN_COMMAND,
            "name": "late",
            "argv": [
                PY,
                "-c",
                f"import runpy; open({str(releases['late'])!r}).read(); runpy.run_path('gen.py')",
            ],
        }
        failing = {
            **GEN_COMMAND,
            "name": "failing",
            "argv": [PY, "-c", f"import sys; open({str(releases['failing'])!r}).read(); sys.exit(2)"],
        }
        ids = [client.call(pid, "register_test_command", c)["data"]["command"]["id"] for c in (late, failing)]
        for command_id in ids:
            assert (
                serve.cli("command", "approve", command_id, "--repo", str(repo), process=False).returncode
                == 0
            )
        code, out, err = _released_once_followed(serve, ids[0], repo, releases["late"], "--json")
        assert code == 0, err
        run = json.loads(out)["data"]["run"]
        assert run["state"] == "succeeded" and run["artifacts"][0]["status"] == "ingested"
        assert "following it until it ends" in err
        code, out, err = _released_once_followed(serve, ids[1], repo, releases["failing"])
        assert code == 1, err
        assert "failed, exit code 2" in out
    finally:
        assert serve.stop() == 0


def test_daemon_shutdown_cancels_running_runs_and_the_next_daemon_runs_the_queued_ones(
    isolated_home: Path, repo: Path
) -> None:
    """Seed: "Commands run in a dedicated process group so timeout, cancellation, and shutdown reach shell
    descendants." """
    first = ServeProcess(isolated_home)
    try:
        client = first.client(repo=str(repo))
        pid = client.register(repo)["project_id"]
        slow = client.call(pid, "register_test_command", SLOW_COMMAND)["data"]["command"]["id"]
        gen = client.call(pid, "register_test_command", GEN_COMMAND)["data"]["command"]["id"]
        for command_id in (slow, gen):
            assert (
                first.cli("command", "approve", command_id, "--repo", str(repo), process=False).returncode
                == 0
            )
        running = client.call(pid, "run_test", {"command_id": slow})["data"]["run"]
        queued = client.call(pid, "run_test", {"command_id": gen})["data"]["run"]
        pids = wait_for(lambda: pids_of(repo), "the run starting")
        [watchdog] = wait_for(lambda: watchdogs_of(first.proc.pid), "the daemon's watchdog")
    finally:
        assert first.stop() == 0
    assert [p for p in pids if alive(p)] == []
    # A clean stop closes the watchdog's pipe after the runs stopped: it finds nothing and exits (and is reaped).
    assert not alive(watchdog) and not os.path.exists(f"/proc/{watchdog}")
    second = ServeProcess(isolated_home)
    try:
        client = second.client(repo=str(repo))
        client.register(repo)
        ended = client.call(pid, "run_review", {"run_id": running["id"]})["data"]["run"]
        assert ended["state"] == "cancelled" and ended["reason"] == "the daemon shut down"
        done = wait_for(
            lambda: (
                (r := client.call(pid, "run_review", {"run_id": queued["id"]})["data"]["run"])["state"]
                not in ("queued", "running")
                and r
            ),
            "the queued run ending",
        )
        assert done["state"] == "succeeded"
        watchdogs = watchdogs_of(second.proc.pid)
    finally:
        assert second.stop() == 0
    assert len(watchdogs) == 1 and not any(alive(p) for p in watchdogs)  # one per daemon, gone with it


RUN_TESTS = """\
import subprocess, sys
code = subprocess.call([sys.executable, "-m", "coverage", "run", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        *(sys.argv[1:] or ["tests"])])
subprocess.check_call([sys.executable, "-m", "coverage", "json", "--show-contexts", "-o", "coverage.json"])
sys.exit(code)
"""


async def test_a_real_pytest_and_coverage_suite_runs_end_to_end_over_the_official_mcp_client(
    daemon: Running, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "shop", {**PACKAGE, "run_tests.py": RUN_TESTS})
    pid = await register(daemon, repo)
    async with sdk_client(daemon, f"{daemon.url}/p/{pid}/mcp", "auto") as client:
        answer = await client.call_tool(
            "register_test_command",
            {
                "name": "unit",
                "argv": [PY, "run_tests.py"],
                "timeout_s": 300,
                "args_policy": "selectors",
                # the package's tests are plain pytest: none of this suite's plugins needs to load
                "env": {"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
                "artifacts": [{"path": "coverage.json", "suite": "unit"}],
            },
        )
        command = answer.structured_content["data"]["command"]
        assert command["status"] == "pending"
        # The person's approval, on the daemon's own store (what `coverage-mcp command approve` reaches).
        _, project = await daemon.daemon.projects.resolve(Target(project_id=pid))
        commands.approve(project, command["id"], approved_by="ann", via="cli")
        full = (
            await client.call_tool("run_test", {"command_id": command["id"], "wait": True})
        ).structured_content
        run = full["data"]["run"]
        assert run["state"] == "succeeded", run
        [artifact] = run["artifacts"]
        assert artifact["status"] == "ingested"
        subset = (
            await client.call_tool(
                "run_test",
                {
                    "command_id": command["id"],
                    "wait": True,
                    "args": ["tests/test_cart.py::test_total_sums_prices"],
                    "baseline": {"snapshot_id": artifact["snapshot_id"]},
                },
            )
        ).structured_content["data"]["run"]
        assert subset["state"] == "succeeded" and subset["args"] == [
            "./tests/test_cart.py::test_total_sums_prices"  # its canonical form (issue 21)
        ]
        review = subset["incremental_review"]
        assert (
            review["task"] == "incremental"
            and review["categories"]["not_observed"] + review["categories"]["lost"] > 0
        )  # fewer tests ran: lines the full run hit are not observed now
        insight = (
            await client.call_tool(
                "coverage_review", {"task": "insight", "measurement": {"run_id": run["id"]}}
            )
        ).structured_content["data"]
        assert insight["snapshot_ids"] == [artifact["snapshot_id"]]
        logs = (
            await client.call_tool("run_review", {"run_id": run["id"], "view": "logs", "search": "passed"})
        ).structured_content["data"]
        assert any("4 passed" in m["line"] for m in logs["matches"])
        again = (
            await client.call_tool("run_test", {"command_id": command["id"], "wait": True})
        ).structured_content
        assert again["data"]["run"]["id"] == run["id"] and again["data"]["run"]["reused"] is True


def test_the_library_refuses_an_unknown_run_in_a_measurement(tmp_path: Path) -> None:
    from coverage_core.project import open_project
    from coverage_core.service import Service

    repo = make_repo(tmp_path / "r", FILES)
    with open_project(repo) as project, pytest.raises(CoverageError) as caught:
        Service(project).call("coverage_review", {"task": "insight", "measurement": {"run_id": "run-0000"}})
    assert caught.value.code == ErrorCode.NOT_FOUND
