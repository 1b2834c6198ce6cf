"""Managed execution on real processes: registration, approval, runs, process groups, ingest, recovery (issue 13)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.execution import commands, runs
from coverage_core.project import Project, open_project
from coverage_core.service import Service, answer_review

from .gitrepo import make_repo

PY = sys.executable
# Writes an LCOV report of app.py: line 2 hit as often as argv[1] says (default 1), then prints.
GEN = """\
import sys
hits = sys.argv[1].rsplit("/", 1)[-1] if len(sys.argv) > 1 else "1"  # a selector ./0 stands for 0
with open("cov.info", "w") as out:
    out.write("SF:app.py\\nDA:1,1\\nDA:2,%s\\nDA:3,0\\nend_of_record\\n" % hits)
print("generated", hits)
"""
# Starts a grandchild that ignores SIGTERM, records both pids, ignores TERM itself, then sleeps.
STUBBORN = """\
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
with open("pids.tmp", "w") as out:
    out.write(f"{os.getpid()} {child.pid}")
os.replace("pids.tmp", "pids")
time.sleep(600)
"""
# Starts a process that leaves the run's session (setsid), clears its environment (and the run's marker with it),
# ignores TERM and records its pid; then sleeps itself.
ESCAPER = """\
import subprocess, sys, time
subprocess.Popen(["setsid", "env", "-i", sys.executable, "-c",
    "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "open('escaped.tmp', 'w').write(str(os.getpid())); os.replace('escaped.tmp', 'escaped'); time.sleep(600)"])
if sys.argv[1:] == ["wait-for-it"]:  # exit (code 0) once the escaped process is up
    while True:
        try:
            open("escaped").close()
            sys.exit(0)
        except OSError:
            time.sleep(0.05)
time.sleep(600)
"""
FILES = {
    "app.py": "a = 1\nb = 2\nc = 3\n",
    "gen.py": GEN,
    "stubborn.py": STUBBORN,
    "echo_args.py": "import json, sys\nopen('args.json', 'w').write(json.dumps(sys.argv[1:]))\n",
    "chatty.py": "import sys\nsys.stdout.write('x' * 100000)\nsys.stderr.write('warn\\n')\n",
    "sleepy.py": "import time\ntime.sleep(600)\n",
    "escaper.py": ESCAPER,
    ".gitignore": "cov.info\npids\npids.tmp\nargs.json\nescaped\nescaped.tmp\n",
}
LONG_WAIT_S = 60.0


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", FILES)


@pytest.fixture
def project(repo: Path) -> Iterator[Project]:
    with open_project(repo) as opened:
        yield opened


def register(project: Project, argv: list[str], **extra: Any) -> str:
    args = {
        "name": extra.pop("name", "cmd"),
        "argv": argv,
        "artifacts": extra.pop("artifacts", [{"path": "cov.info", "suite": "unit"}]),
        **extra,
    }
    return Service(project).call("register_test_command", args)["data"]["command"]["id"]


def approved(project: Project, argv: list[str], **extra: Any) -> str:
    command_id = register(project, argv, **extra)
    commands.approve(project, command_id, approved_by="tester", via="cli")
    return command_id


def run(project: Project, **args: Any) -> dict[str, Any]:
    return Service(project).call("run_test", args)["data"]["run"]


def wait_for(predicate: Any, what: str, timeout: float = LONG_WAIT_S) -> Any:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper is not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 :].split()[0] not in (b"Z", b"X")


def escaped_of(repo: Path) -> int | None:
    path = repo / "escaped"
    return int(path.read_text()) if path.exists() else None


def pids_of(repo: Path) -> list[int]:
    path = repo / "pids"
    return [int(p) for p in path.read_text().split()] if path.exists() else []


# -- registration and approval -------------------------------------------------------------------


def test_a_pending_command_cannot_run(project: Project) -> None:
    """Seed: "Managed execution requires an immutable human-approved registration." and "Command
    registration and execution are explicit because a registered command runs local code with the
    user's permissions." """
    command_id = register(project, [PY, "gen.py"])
    answer = commands.show_command(project, command_id)
    assert (
        answer["status"] == "pending"
        and answer["approve_with"] == f"coverage-mcp command approve {command_id}"
    )
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=command_id, wait=True)
    assert caught.value.code == ErrorCode.NOT_APPROVED
    assert caught.value.details["approve_with"] == f"coverage-mcp command approve {command_id}"
    assert runs.list_runs(project) == []  # nothing was queued


def test_a_registration_is_immutable_and_the_same_content_finds_the_same_command(project: Project) -> None:
    """Seed: "Coverage snapshots, registered command approvals, and completed runs are immutable records." """
    first = register(project, [PY, "gen.py"])
    assert register(project, [PY, "gen.py"], name="other name") == first
    changed = register(project, [PY, "gen.py", "2"])
    assert changed != first
    commands.approve(project, first, approved_by="ann", via="cli", note="read it")
    assert commands.show_command(project, changed)["status"] == "pending"
    shown = commands.show_command(project, first)
    assert shown["decisions"][0]["by"] == "ann" and shown["decisions"][0]["via"] == "cli"
    commands.reject(project, first, rejected_by="ann", via="dashboard")
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=first)
    assert caught.value.code == ErrorCode.NOT_APPROVED


def test_a_registration_outside_the_checkout_or_as_a_shell_string_is_refused(project: Project) -> None:
    service = Service(project)
    for bad, code in (
        ({"cwd": "../elsewhere"}, ErrorCode.PATH_OUTSIDE_CHECKOUT),
        ({"artifacts": [{"path": "/tmp/cov.info", "suite": "unit"}]}, ErrorCode.PATH_OUTSIDE_CHECKOUT),
        ({"argv": "pytest -q"}, ErrorCode.INVALID_ARGUMENT),
        ({"env": {"COVERAGE_MCP_HOME": "/"}}, ErrorCode.INVALID_ARGUMENT),
        ({"argv": ["python3 run_tests.py"]}, ErrorCode.INVALID_ARGUMENT),
        ({"argv": ["python3\trun_tests.py", "-q"]}, ErrorCode.INVALID_ARGUMENT),
        ({"artifacts": [{"path": ".coverage-mcp/cov.info", "suite": "unit"}]}, ErrorCode.INVALID_ARGUMENT),
        (
            {"artifacts": [{"path": "sub/../.coverage-mcp/store.duckdb", "suite": "unit"}]},
            ErrorCode.INVALID_ARGUMENT,
        ),
        (
            {
                "artifacts": [
                    {
                        "composite": {
                            "inventory": "inv.json",
                            "reports": [{"component": "c", "path": ".coverage-mcp/runs/x.json"}],
                        }
                    }
                ]
            },
            ErrorCode.INVALID_ARGUMENT,
        ),
    ):
        args = {
            "name": "x",
            "argv": [PY, "gen.py"],
            "artifacts": [{"path": "cov.info", "suite": "unit"}],
            **bad,
        }
        with pytest.raises(CoverageError) as caught:
            service.call("register_test_command", args)
        assert caught.value.code == code, bad
    assert commands.list_commands(project) == []
    with pytest.raises(CoverageError) as caught:
        service.call(
            "register_test_command",
            {
                "name": "x",
                "argv": ["python3 run_tests.py", "-q"],
                "artifacts": [{"path": "cov.info", "suite": "unit"}],
            },
        )
    assert '["python3", "run_tests.py", "-q"]' in caught.value.suggestion
    with pytest.raises(CoverageError) as caught:
        service.call(
            "register_test_command",
            {
                "name": "x",
                "argv": [PY, "gen.py"],
                "artifacts": [{"path": ".coverage-mcp/cov.info", "suite": "unit"}],
            },
        )
    assert ".coverage-mcp/" in caught.value.message


def test_attested_mode_records_the_agents_human_approval_only_with_who_and_a_note(project: Project) -> None:
    # Out of band (the default), the agent's word changes nothing.
    service = Service(project)
    base = {"name": "x", "argv": [PY, "gen.py"], "artifacts": [{"path": "cov.info", "suite": "unit"}]}
    answer = service.call(
        "register_test_command", {**base, "human_approved": True, "approved_by": "bob", "approval_note": "ok"}
    )["data"]
    assert answer["command"]["status"] == "pending" and "ignored" in answer["command"]["note"]
    project.store.con.execute("UPDATE settings SET value = '\"attested\"' WHERE key = 'approval_mode'")
    project.store.con.execute(
        "INSERT INTO settings VALUES ('approval_mode', '\"attested\"') ON CONFLICT DO NOTHING"
    )
    other = {**base, "argv": [PY, "gen.py", "3"]}
    with pytest.raises(CoverageError) as caught:
        service.call("register_test_command", {**other, "human_approved": True, "approved_by": "bob"})
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT
    answer = service.call(
        "register_test_command",
        {**other, "human_approved": True, "approved_by": "bob", "approval_note": "reviewed the argv"},
    )["data"]
    assert answer["command"]["status"] == "approved"
    decision = commands.show_command(project, answer["command"]["id"])["decisions"][0]
    assert (decision["by"], decision["via"], decision["note"]) == ("bob", "attested", "reviewed the argv")


# -- arguments ---------------------------------------------------------------------------------------


def test_args_outside_the_policy_are_refused_and_shell_metacharacters_arrive_literally(
    project: Project, repo: Path
) -> None:
    plain = approved(project, [PY, "echo_args.py"])
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=plain, args=["tests/test_x.py"])
    assert caught.value.details["args_policy"] == "none"
    selectors = approved(project, [PY, "echo_args.py"], args_policy="selectors")
    for bad in ("-p", "--basetemp=/root", "../outside.py", "/etc/passwd", "tests/../../x.py::t"):
        with pytest.raises(CoverageError) as caught:
            run(project, command_id=selectors, args=[bad])
        assert caught.value.details["args_policy"] == "selectors", bad
    assert runs.list_runs(project) == []
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("")
    hostile = [
        "tests/test_x.py::test_y[;id>pwned]",
        "tests/test_x.py::test_y[$(id>pwned2)]",
        "tests::t[a|c&&`id`>out]",
    ]
    done = run(project, command_id=selectors, args=hostile, wait=True)
    assert done["state"] == "succeeded"
    assert json.loads((repo / "args.json").read_text()) == ["./" + h for h in hostile]
    assert not (repo / "pwned").exists() and not (repo / "pwned2").exists() and not (repo / "out").exists()


def test_a_selector_with_whitespace_a_control_character_or_an_assignment_is_refused_naming_the_policy(
    project: Project, repo: Path
) -> None:
    # A command that word-splits its arguments (sh -c 'pytest $*', tox {posargs}, make ARGS=) would turn these
    # into options: the reviewer's `tests/x.py -p evil\n--basetemp=/home` is one of them.
    (repo / "tests").mkdir()
    (repo / "tests" / "x.py").write_text("")
    (repo / "tests" / "ok.py").write_text("")
    selectors = approved(project, [PY, "echo_args.py"], args_policy="selectors")
    for bad in (
        "tests/x.py -p evil\n--basetemp=/home",
        "tests/x.py\t-x",
        "tests/x.py\n",
        "tests/x.py\r",
        "tests/x.py\x1b[0m",
        "tests/x.py\u00a0-p",
        "tests/x.py\u2028-p",
        "tests/x.py\u200b",
        "ARGS=tests/x.py",
        "*",
        "[-]x",
        "?x",
    ):
        with pytest.raises(CoverageError) as caught:
            run(project, command_id=selectors, args=["tests/ok.py", bad])
        assert caught.value.code == ErrorCode.INVALID_ARGUMENT, bad
        assert caught.value.details == {"args_policy": "selectors", "argument": bad}, bad
        assert "args_policy selectors" in caught.value.message, bad
    assert runs.list_runs(project) == []
    # A pytest parameter id (brackets after the test name, '=' in it) is still a selector, in canonical form.
    done = run(
        project, command_id=selectors, args=["tests/x.py::test_y[1-2]", "tests/x.py::t[a=1]"], wait=True
    )
    assert done["state"] == "succeeded"
    assert json.loads((repo / "args.json").read_text()) == [
        "./tests/x.py::test_y[1-2]",
        "./tests/x.py::t[a=1]",
    ]


# -- process groups, timeouts, caps -------------------------------------------------------------------


def test_a_run_whose_grandchild_ignores_term_is_fully_gone_after_cancel_run(
    project: Project, repo: Path
) -> None:
    """Seed: "Commands run in a dedicated process group so timeout, cancellation, and shutdown reach shell
    descendants." """
    command_id = approved(project, [PY, "stubborn.py"])
    started = run(project, command_id=command_id)
    assert started["state"] in ("queued", "running") and started["reused"] is False
    pids = wait_for(lambda: pids_of(repo), "the run starting its grandchild")
    assert all(alive(p) for p in pids)
    cancelled = Service(project).call("cancel_run", {"run_id": started["id"]})["data"]["run"]
    assert cancelled["state"] == "cancelled" and cancelled["reason"] == "cancel_run"
    assert [p for p in pids if alive(p)] == []
    assert cancelled["artifacts"] == [
        {
            "path": "cov.info",
            "status": "skipped_stale",
            "snapshot_id": None,
            "detail": "the run did not finish; nothing it wrote is ingested",
        }
    ]


def test_a_run_past_its_timeout_ends_timed_out_with_its_group_gone(project: Project, repo: Path) -> None:
    """Seed: "Commands run in a dedicated process group so timeout, cancellation, and shutdown reach shell
    descendants." """
    command_id = approved(project, [PY, "stubborn.py"], timeout_s=2)
    done = run(project, command_id=command_id, wait=True)
    assert done["state"] == "timed_out" and "timeout_s=2" in done["reason"]
    assert [p for p in pids_of(repo) if alive(p)] == []


@pytest.fixture
def escaped(repo: Path) -> Iterator[Path]:
    """The checkout; whatever process escaper.py left is killed after the test, whatever it asserted."""
    yield repo
    pid = escaped_of(repo)
    if pid is not None and alive(pid):
        os.kill(pid, signal.SIGKILL)


def test_a_process_that_left_the_session_and_cleared_its_environment_is_killed_at_the_timeout(
    project: Project, escaped: Path
) -> None:
    command_id = approved(project, [PY, "escaper.py"], timeout_s=3)
    done = run(project, command_id=command_id, wait=True)
    assert done["state"] == "timed_out" and "timeout_s=3" in done["reason"]
    pid = escaped_of(escaped)
    assert pid is not None and not alive(pid)
    # The queue (concurrency 1) is free: the next run runs.
    assert run(project, command_id=approved(project, [PY, "gen.py"]), wait=True)["state"] == "succeeded"


def test_a_process_that_left_the_session_and_cleared_its_environment_is_killed_on_cancel_run(
    project: Project, escaped: Path
) -> None:
    command_id = approved(project, [PY, "escaper.py"])
    started = run(project, command_id=command_id)
    pid = wait_for(lambda: escaped_of(escaped), "the run starting its escaping process")
    assert alive(pid)
    cancelled = Service(project).call("cancel_run", {"run_id": started["id"]})["data"]["run"]
    assert cancelled["state"] == "cancelled" and not alive(pid)


def test_a_process_left_behind_by_a_command_that_exited_is_killed_and_the_run_keeps_its_exit_state(
    project: Project, escaped: Path
) -> None:
    command_id = approved(project, [PY, "escaper.py", "wait-for-it"])
    done = run(project, command_id=command_id, wait=True)
    assert done["state"] == "succeeded" and done["exit_code"] == 0
    pid = escaped_of(escaped)
    assert pid is not None and not alive(pid)


def test_a_commands_exit_code_and_killing_signal_are_reported_as_its_own(project: Project) -> None:
    three = run(project, command_id=approved(project, [PY, "-c", "raise SystemExit(3)"]), wait=True)
    assert (three["state"], three["exit_code"], three["reason"]) == ("failed", 3, "exit code 3")
    killed = run(
        project, command_id=approved(project, [PY, "-c", "import os; os.kill(os.getpid(), 9)"]), wait=True
    )
    assert (killed["state"], killed["exit_code"], killed["reason"]) == ("failed", -9, "killed by signal 9")


def test_a_command_gets_the_default_sigpipe_action_as_a_shell_would_give_it(project: Project) -> None:
    done = run(project, command_id=approved(project, ["grep", "SigIgn", "/proc/self/status"]), wait=True)
    assert done["state"] == "succeeded"
    text = Service(project).call("run_review", {"run_id": done["id"], "view": "logs", "stream": "stdout"})
    ignored = int(text["data"]["text"][0]["text"].split()[1], 16)
    assert not ignored & (
        1 << (signal.SIGPIPE - 1)
    )  # a writer to a closed pipe dies, as `cmd | head` expects


def test_output_past_the_byte_cap_is_counted_and_marked_truncated(repo: Path) -> None:
    """Seed: "Each stream is drained through a pipe and retained only up to the configured byte cap;
    summaries expose byte counts and `truncated`." and "Request bodies, coverage reports, and retained
    command output are explicitly size-bounded; malformed coverage numbers are rejected." """
    settings = Settings.from_env(run_log_max_bytes=1024)
    with open_project(repo, settings=settings) as project:
        command_id = approved(project, [PY, "chatty.py"])
        done = run(project, command_id=command_id, wait=True)
        assert done["state"] == "succeeded"
        assert done["logs"] == {
            "stdout": {"bytes": 100000, "truncated": True},
            "stderr": {"bytes": 5, "truncated": False},
        }
        kept = project.store.path.parent / "runs" / done["id"] / "stdout"
        assert kept.stat().st_size == 1024 and oct(kept.stat().st_mode & 0o777) == "0o600"
        assert oct(kept.parent.stat().st_mode & 0o777) == "0o700"
        logs = Service(project).call("run_review", {"run_id": done["id"], "view": "logs", "stream": "stderr"})
        assert logs["data"]["text"] == [{"stream": "stderr", "offset": 0, "text": "warn\n"}]


def test_a_command_whose_program_is_missing_cannot_be_approved_nor_run_once_it_is_gone(
    project: Project, repo: Path
) -> None:
    # Approval binds the executable argv[0] resolves to (issue 21): a missing one cannot be approved.
    with pytest.raises(CoverageError) as caught:
        approved(project, ["./no-such-program"])
    assert caught.value.code == ErrorCode.NOT_FOUND and "no-such-program" in caught.value.message
    program = repo / "prog"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    command_id = approved(project, ["./prog"])
    program.unlink()
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=command_id, wait=True)
    assert caught.value.code == ErrorCode.NOT_APPROVED and "prog" in caught.value.message


# -- idempotency and reuse -------------------------------------------------------------------------


def test_the_same_idempotency_key_returns_the_same_run_and_reuse_follows_the_fingerprint(
    project: Project, repo: Path
) -> None:
    """Seed: "The durable `run_execution_context` stores those arguments and an explicit incremental
    baseline; reuse and idempotency compare the full context." """
    command_id = approved(project, [PY, "gen.py"])
    first = run(project, command_id=command_id, wait=True, idempotency_key="k1")
    assert first["state"] == "succeeded"
    again = run(project, command_id=command_id, idempotency_key="k1", reuse_if_unchanged=False)
    assert again["id"] == first["id"]
    other = approved(project, [PY, "gen.py", "5"])
    with pytest.raises(CoverageError) as caught:
        run(project, command_id=other, idempotency_key="k1")
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT and caught.value.details["run_id"] == first["id"]
    reused = run(project, command_id=command_id, wait=True)
    assert reused["id"] == first["id"] and reused["reused"] is True
    # An agent's new, untracked test file changes the fingerprint: a new run.
    (repo / "test_new.py").write_text("def test_new():\n    pass\n")
    fresh = run(project, command_id=command_id, wait=True)
    assert fresh["id"] != first["id"] and fresh["reused"] is False
    # So does an edit of a tracked file.
    assert run(project, command_id=command_id, wait=True)["id"] == fresh["id"]
    (repo / "app.py").write_text("a = 1\nb = 2\nc = 4\n")
    assert run(project, command_id=command_id, wait=True)["id"] not in (first["id"], fresh["id"])
    assert len(runs.list_runs(project)) == 3


# -- ingest and review ----------------------------------------------------------------------------


def test_an_artifact_is_ingested_with_run_provenance_and_an_incremental_review_attached(
    project: Project,
) -> None:
    """Seed: "An incremental terminal run automatically attaches a bounded `incremental_review`" """
    command_id = approved(project, [PY, "gen.py", "1"])
    base = run(project, command_id=command_id, wait=True)
    [artifact] = base["artifacts"]
    assert artifact["status"] == "ingested"
    snap = project.snapshot(artifact["snapshot_id"])
    assert snap.provenance == "run" and snap.suite == "unit" and snap.scope == "complete"
    [(metadata,)] = project.store.con.execute(
        "SELECT metadata FROM snapshots WHERE snapshot_id = ?", [snap.snapshot_id]
    ).fetchall()
    assert json.loads(metadata)["run"] == {
        "run_id": base["id"],
        "command_id": command_id,
        "args": [],
        "command_hash": commands.show_command(project, command_id)["content_hash"],
    }
    misses = approved(project, [PY, "gen.py", "0"])  # the whole suite again, now missing line 2
    done = run(project, command_id=misses, wait=True, baseline={"snapshot_id": snap.snapshot_id})
    review = done["incremental_review"]
    assert review["task"] == "incremental" and review["baseline"]["snapshot_ids"] == [snap.snapshot_id]
    assert review["categories"]["lost"] == 1  # line 2 was hit by the baseline run only
    # The same projection coverage_review computes, over measurement {"run_id"}.
    standalone = Service(project).call(
        "coverage_review",
        {
            "task": "incremental",
            "measurement": {"run_id": done["id"]},
            "baseline": {"kind": "explicit", "snapshot_id": snap.snapshot_id},
            "limits": {"max_files": 5, "max_regions": 5, "max_words": 600},
        },
    )["data"]
    assert standalone["categories"] == review["categories"] and standalone["ranges"] == review["ranges"]
    files = Service(project).call("coverage_review", {"task": "files", "measurement": {"run_id": done["id"]}})
    assert files["data"]["snapshot_id"] == done["artifacts"][0]["snapshot_id"]


def test_a_run_given_case_arguments_stores_a_subset_so_its_review_reports_no_regression(
    project: Project, repo: Path
) -> None:
    """Seed: "`run_test` accepts optional case-specific string arguments without command re-registration." """
    whole = approved(project, [PY, "gen.py", "1"])
    base = run(project, command_id=whole, wait=True)["artifacts"][0]["snapshot_id"]
    # The same suite, given a selection: gen.py's argument "0" stands for a selection that misses line 2.
    selected = approved(project, [PY, "gen.py"], args_policy="selectors")
    (repo / "0").write_text("")  # a selector names an existing path
    done = run(project, command_id=selected, wait=True, args=["0"], baseline={"snapshot_id": base})
    [artifact] = done["artifacts"]
    assert artifact["status"] == "ingested" and "scope subset" in artifact["detail"]  # the answer says so
    snap = project.snapshot(artifact["snapshot_id"])
    assert (snap.suite, snap.scope) == ("unit", "subset")
    review = done["incremental_review"]
    assert review["categories"]["lost"] == 0 and review["categories"]["not_observed"] == 1
    assert review["regression"]["status"] == "not_observed"


def test_an_artifact_the_run_did_not_refresh_is_skipped_stale_and_a_malformed_one_fails(
    project: Project, repo: Path
) -> None:
    command_id = approved(project, [PY, "-c", "print('no report written')"])
    (repo / "cov.info").write_text("SF:app.py\nDA:1,1\nend_of_record\n")
    done = run(project, command_id=command_id, wait=True)
    assert done["state"] == "succeeded"
    assert [(a["status"], a["snapshot_id"]) for a in done["artifacts"]] == [("skipped_stale", None)]
    assert project.snapshots() == []
    broken = approved(project, [PY, "-c", "open('cov.info', 'w').write('this is not a report')"])
    done = run(project, command_id=broken, wait=True)
    assert done["state"] == "succeeded"  # the run's own exit state stands
    [artifact] = done["artifacts"]
    assert artifact["status"] == "failed" and artifact["error_code"] and artifact["snapshot_id"] is None
    assert project.snapshots() == []  # nothing half-ingested
    with pytest.raises(CoverageError) as caught:
        Service(project).call("coverage_review", {"task": "files", "measurement": {"run_id": done["id"]}})
    assert caught.value.code == ErrorCode.NOT_FOUND


def test_a_snapshot_a_queued_run_uses_as_its_baseline_cannot_be_deleted(project: Project, repo: Path) -> None:
    gen = approved(project, [PY, "gen.py"])
    base = run(project, command_id=gen, wait=True)["artifacts"][0]["snapshot_id"]
    blocker = approved(project, [PY, "sleepy.py"], artifacts=[{"path": "cov.info", "suite": "slow"}])
    blocking = run(project, command_id=blocker)
    queued = run(project, command_id=gen, baseline={"snapshot_id": base}, reuse_if_unchanged=False)
    assert project.in_use_by_active_runs([project.snapshot(base)]) == {
        base: f"incremental baseline of queued run {queued['id']}"
    }
    with pytest.raises(CoverageError):
        project.delete_snapshots([base], force=True)
    for run_id in (queued["id"], blocking["id"]):
        Service(project).call("cancel_run", {"run_id": run_id})
    assert project.in_use_by_active_runs([project.snapshot(base)]) == {}


def test_runs_are_durable_rows_with_every_transition(project: Project) -> None:
    command_id = approved(project, [PY, "gen.py"])
    done = run(project, command_id=command_id, wait=True)
    status = Service(project).call("run_review", {"run_id": done["id"]})["data"]["run"]
    assert [e["state"] for e in status["events"]] == ["queued", "running", "succeeded"]
    assert status["exit_code"] == 0 and status["duration_ms"] is not None
    assert [r["id"] for r in runs.list_runs(project, "succeeded")] == [done["id"]]


def test_a_project_closed_mid_run_cancels_it_and_leaves_queued_runs_queued(repo: Path) -> None:
    with open_project(repo) as project:
        slow = approved(project, [PY, "stubborn.py"], artifacts=[{"path": "cov.info", "suite": "slow"}])
        gen = approved(project, [PY, "gen.py"])
        running = run(project, command_id=slow)
        queued = run(project, command_id=gen)
        pids = wait_for(lambda: pids_of(repo), "the run starting")
    assert [p for p in pids if alive(p)] == []
    with open_project(repo) as project:
        # Reopening without a runner reads the rows as the closing owner left them.
        states = {r["id"]: r["state"] for r in runs.list_runs(project)}
        assert states == {running["id"]: "cancelled", queued["id"]: "queued"}
        # A new owner's runtime takes the queued run.
        from coverage_core.operations.execution_ops import ensure_runtime

        ensure_runtime(project, answer_review)
        finished = wait_for(
            lambda: (
                runs.get(project.store, queued["id"]).state not in runs.ACTIVE
                and runs.get(project.store, queued["id"])
            ),
            "the queued run ending",
        )
        assert finished.state == "succeeded"


def test_a_dead_owners_running_run_becomes_interrupted_and_its_processes_are_killed(repo: Path) -> None:
    # A real owner process dies with kill -9 mid-run; the next owner recovers.
    """Seed: "When a project store opens after an ungraceful daemon exit, persisted `running` jobs become
    terminal `interrupted` records and persisted `queued` jobs re-enter the normal worker/concurrency
    path." """
    script = f"""
import sys, time
sys.path[:0] = {sys.path!r}
from coverage_core.project import open_project
from coverage_core.service import Service, answer_review
from coverage_core.execution import commands
with open_project({str(repo)!r}) as p:
    s = Service(p)
    cid = s.call("register_test_command", {{"name": "slow", "argv": [{PY!r}, "stubborn.py"],
        "artifacts": [{{"path": "cov.info", "suite": "unit"}}]}})["data"]["command"]["id"]
    commands.approve(p, cid, approved_by="t", via="cli")
    print(s.call("run_test", {{"command_id": cid}})["data"]["run"]["id"], flush=True)
    time.sleep(600)
"""
    owner = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        run_id = owner.stdout.readline().strip()
        pids = wait_for(lambda: pids_of(repo), "the run starting")
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(30)
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.stdout.close()
    leader, grandchild = pids
    wait_for(lambda: not alive(leader), "the leader dying with its owner (PR_SET_PDEATHSIG)")
    # The grandchild ignores TERM and outlives the parent-death signal: the owner's watchdog kills it, before
    # anyone opens the store again.
    wait_for(lambda: not alive(grandchild), "the owner's watchdog killing the grandchild")
    with open_project(repo) as project:
        # A read by an owner that runs nothing (no runtime) says the truth: the run's owner died.
        status = Service(project).call("run_review", {"run_id": run_id})["data"]["run"]
        assert status["state"] == "interrupted" and "died" in status["reason"]
        assert status["events"][-1]["detail"] == "recovered"
        from coverage_core.operations.execution_ops import ensure_runtime

        ensure_runtime(project, answer_review)  # the new owner's recovery finds nothing left to do
        found = runs.get(project.store, run_id)
        assert found.state == "interrupted"
    assert not alive(grandchild)


def test_project_context_pages_approved_and_pending_commands_eight_at_a_time_and_lists_active_runs(
    project: Project,
) -> None:
    """Seed: "Active runs are hard-capped at ten and command pages at eight compact summaries." and
    "`data.active_runs_truncated` makes omitted active runs explicit and `page.next_cursor` continues
    commands only." """
    ids = [register(project, [PY, "gen.py", str(i)]) for i in range(10)]
    for command_id in ids[:3]:
        commands.approve(project, command_id, approved_by="ann", via="cli")
    commands.reject(project, ids[9], rejected_by="ann", via="cli")
    slow = approved(project, [PY, "sleepy.py"], artifacts=[{"path": "cov.info", "suite": "slow"}])
    active = run(project, command_id=slow)
    service = Service(project)
    first = service.call("project_context", {})
    shown = first["data"]["commands"]
    assert len(shown) == 8 and [c["status"] for c in shown[:4]] == ["approved"] * 4
    assert all(c["status"] in ("approved", "pending") for c in shown)
    assert [r["id"] for r in first["data"]["active_runs"]] == [active["id"]]
    second = service.call("project_context", {"cursor": first["page"]["next_cursor"]})
    rest = second["data"]["commands"]
    assert second["page"]["next_cursor"] is None
    # 4 approved + 6 pending; the rejected one is not listed.
    assert sorted(c["id"] for c in shown + rest) == sorted([*ids[:9], slow])
    assert all(
        c["approve_with"] == f"coverage-mcp command approve {c['id']}"
        for c in rest
        if c["status"] == "pending"
    )
    service.call("cancel_run", {"run_id": active["id"]})


def test_wait_answers_shortly_before_the_callers_deadline_with_the_run_still_running(
    project: Project,
) -> None:
    command_id = approved(project, [PY, "sleepy.py"])
    started = time.monotonic()
    # The caller's deadline (the daemon passes its request's): the wait answers before it, the run going on.
    answer = Service(project).call(
        "run_test", {"command_id": command_id, "wait": True}, deadline=started + 4
    )["data"]["run"]
    assert answer["state"] == "running"  # answered at the deadline: the 600 s run had not ended
    Service(project).call("cancel_run", {"run_id": answer["id"]})


def test_logs_come_in_bounded_pages_that_a_cursor_continues(project: Project) -> None:
    command_id = approved(project, [PY, "chatty.py"])
    done = run(project, command_id=command_id, wait=True)
    service = Service(project)
    seen, cursor, pages = "", None, 0
    while True:
        args = {
            "run_id": done["id"],
            "view": "logs",
            "stream": "stdout",
            **({"cursor": cursor} if cursor else {}),
        }
        answer = service.call("run_review", args)
        seen += "".join(part["text"] for part in answer["data"]["text"])
        pages += 1
        cursor = answer["page"]["next_cursor"]
        if cursor is None:
            break
    assert seen == "x" * 100000 and pages > 1
    with pytest.raises(CoverageError) as caught:  # a cursor is bound to its query
        service.call(
            "run_review", {"run_id": done["id"], "view": "logs", "cursor": answer_cursor(service, done)}
        )
    assert caught.value.code == ErrorCode.INVALID_CURSOR


def answer_cursor(service: Service, done: dict[str, Any]) -> str:
    first = service.call("run_review", {"run_id": done["id"], "view": "logs", "stream": "stdout"})
    return first["page"]["next_cursor"]


def test_racing_calls_with_one_idempotency_key_make_one_run(project: Project) -> None:
    from concurrent.futures import ThreadPoolExecutor

    command_id = approved(project, [PY, "gen.py"])
    with ThreadPoolExecutor(8) as pool:
        ids = list(
            pool.map(
                lambda _: run(
                    project, command_id=command_id, idempotency_key="race", reuse_if_unchanged=False
                )["id"],
                range(8),
            )
        )
    assert len(set(ids)) == 1 and len(runs.list_runs(project)) == 1
