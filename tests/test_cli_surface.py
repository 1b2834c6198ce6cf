"""The command line is a rendering of the declared surface: same envelopes, one error handler, one error body.

The drift test runs the command line (in process: its output and exit code are what it checks) for
every operation of ``OPERATIONS`` and compares its ``--json`` with ``Service.call`` on the same
arguments (``context.stats`` apart).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from coverage_cli.main import cli
from coverage_cli.options import REVIEW_OPTIONS, review_arguments, review_argv
from coverage_cli.output import OPERATION_COMMANDS, render_remedy
from coverage_core import open_project
from coverage_core.errors import Remedy
from coverage_core.operations.table import OPERATIONS, TOOLS
from coverage_core.review import selectors
from coverage_core.review.budget import MAX_BYTES, MAX_WORDS
from coverage_core.service import Service

from . import commandline
from .gitrepo import commit, git


def run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return commandline.cli(*args, repo=repo)


def comparable(envelope: dict[str, Any]) -> dict[str, Any]:
    """An envelope without what differs between two calls: its timing (and project_context's snapshot ages)."""
    out = json.loads(json.dumps(envelope))
    out["context"].pop("stats")
    for suite in out["data"].get("suites", []) if isinstance(out["data"].get("suites"), list) else []:
        if isinstance(suite, dict):
            suite.pop("age_s", None)
    return out


def all_commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found.update(all_commands(command, f"{prefix}{name} "))
            if command.invoke_without_command:  # a group that runs on its own (``snapshots`` lists)
                found[prefix + name] = command
        else:
            found[prefix + name] = command
    return found


def parsed(argv: list[str]) -> tuple[str, dict[str, Any]]:
    """The command and parameter values click reads from a command line (nothing runs)."""
    command = cli.commands[argv[0]]
    ctx = command.make_context(argv[0], argv[1:])
    return argv[0], ctx.params


# -- one error handler, one table from operations to commands ---------------------------------


def test_every_cli_command_is_wrapped_by_the_one_error_handler() -> None:
    commands = all_commands(cli)
    assert {"review", "diff", "gate", "show", "snapshots", "ingest", "token rotate", "connect"} <= set(
        commands
    )
    unwrapped = [
        name
        for name, command in commands.items()
        if not getattr(command.callback, "handles_coverage_errors", False)
    ]
    assert unwrapped == []


def test_every_operation_has_a_command_line_rendering_that_click_accepts() -> None:
    assert set(OPERATION_COMMANDS) == set(TOOLS)
    examples = {
        "project_context": {"max_words": 300},
        "coverage_review": {
            "task": "change",
            "baseline": {"kind": "merge_base", "ref": "main"},
            "measurement": {"suite": "unit"},
            "limits": {"max_words": 400},
            "representation": "review",
        },
        "coverage_import": {
            "report_path": "coverage.json",
            "suite": "unit",
            "scope": "subset",
            "format": "lcov",
        },
        "register_test_command": {
            "name": "unit",
            "argv": ["python", "-m", "pytest"],
            "cwd": "src",
            "artifacts": [{"path": "coverage.json", "suite": "unit"}],
            "timeout_s": 60,
            "args_policy": "selectors",
        },
        "run_test": {
            "command_id": "cmd-0123456789abcdef",
            "wait": False,
            "reuse_if_unchanged": False,
            "idempotency_key": "k",
            "baseline": {"snapshot_id": "snap-01"},
            "args": ["tests/t.py::t"],
        },
        "run_review": {
            "run_id": "run-0123456789abcdef",
            "view": "logs",
            "search": "FAILED",
            "stream": "stdout",
        },
        "cancel_run": {"run_id": "run-0123456789abcdef"},
    }
    assert set(examples) == set(TOOLS)
    for name, arguments in examples.items():
        argv, rest = OPERATION_COMMANDS[name](arguments)
        assert rest == {}, name
        parsed(argv)  # every word is an option of that command
    assert render_remedy(Remedy(operation="coverage_review", arguments=examples["coverage_review"])) == (
        "Run: coverage-mcp review change --suite unit --baseline merge_base:main --max-words 400 "
        "--representation review"
    )


def test_review_options_and_coverage_review_arguments_map_both_ways_through_one_table() -> None:
    cases = [
        {
            "task": "file",
            "measurement": {"snapshot_id": "snap-0123"},
            "file": "a.py",
            "lines": "3-9",
            "cursor": "c1",
        },
        {
            "task": "files",
            "measurement": {"suite": "unit"},
            "order": "uncovered",
            "page_size": 7,
            "representation": "audit",
        },
        {
            "task": "snapshots",
            "filter": {"suite": "unit", "branch": "main", "commit": "abcd"},
            "page_size": 3,
        },
        {
            "task": "change",
            "baseline": {"kind": "explicit", "snapshot_id": "snap-00aa"},
            "limits": {"max_words": 99},
        },
    ]
    for args in cases:
        argv, rest = review_argv(args)
        assert rest == {}
        _, params = parsed(argv)
        flags = {
            flag: params[flag.lstrip("-").replace("-", "_")]
            for flag in REVIEW_OPTIONS
            if flag not in ("--snapshot", "--file", "--baseline")
        }
        flags.update(
            {
                "--snapshot": params["snapshot_id"],
                "--file": params["file_path"],
                "--baseline": params["baseline"] and selectors.parse_selector(params["baseline"]),
            }
        )
        assert review_arguments(params["task"], flags) == args


def test_an_argument_no_option_carries_is_still_named_in_the_rendered_suggestion() -> None:
    text = render_remedy(Remedy(operation="coverage_review", arguments={"task": "source", "ranges": ["1-3"]}))
    assert text == 'Run: coverage-mcp review source (with {"ranges": ["1-3"]}, which no option carries)'
    assert render_remedy(Remedy(setting="COVERAGE_MCP_MAX_REPORT_BYTES", value=1)).startswith(
        "Set COVERAGE_MCP_MAX_REPORT_BYTES=1"
    )


# -- one --baseline parser ---------------------------------------------------------------------


def test_one_baseline_rule_names_every_kind_the_schema_declares() -> None:
    declared = OPERATIONS["coverage_review"].input_schema["properties"]["baseline"]["properties"]["kind"][
        "enum"
    ]
    assert sorted(selectors.KINDS) == sorted(declared)
    parse = selectors.parse_selector
    assert parse("snap-00ff") == {"kind": "explicit", "snapshot_id": "snap-00ff"}
    assert [parse(k) for k in selectors.NAMED_KINDS] == [{"kind": k} for k in selectors.NAMED_KINDS]
    assert (
        parse("merge_base:origin/main")
        == parse("origin/main", merge_base=True)
        == {"kind": "merge_base", "ref": "origin/main"}
    )
    assert parse("v1.2") == {"kind": "ref", "ref": "v1.2"}
    for text in ("previous_snapshot", "snap-00ff", "merge_base:x", "HEAD~1", "none"):
        assert parse(selectors.selector_text(parse(text))) == parse(text)


def test_review_and_diff_read_a_named_baseline_kind_the_same_way(sample_repo: Path) -> None:
    assert (
        run(sample_repo, "ingest", str(sample_repo / "step1.coverage.json"), "--suite", "unit").returncode
        == 0
    )
    assert (
        run(sample_repo, "ingest", str(sample_repo / "step3.coverage.json"), "--suite", "unit").returncode
        == 0
    )
    review = run(
        sample_repo,
        "review",
        "change",
        "--suite",
        "unit",
        "--baseline",
        "previous_snapshot",
        "--representation",
        "audit",
        "--max-words",
        str(MAX_WORDS),
        "--json",
    )
    diff = run(sample_repo, "diff", "--suite", "unit", "--baseline", "previous_snapshot", "--json")
    assert review.returncode == diff.returncode == 0, (review.stderr, diff.stderr)
    r, d = json.loads(review.stdout)["data"], json.loads(diff.stdout)["data"]
    assert r["baseline"] == d["baseline"] and r["baseline"]["kind"] == "previous_snapshot"
    assert r["categories"] == d["categories"] and r["files"] == d["files"]
    wrong = run(sample_repo, "diff", "--baseline", "previous_snapshot", "--merge-base")
    assert wrong.returncode == 2 and "--merge-base needs a git ref" in wrong.stderr


# -- one error body ----------------------------------------------------------------------------


@pytest.fixture
def changed(sample_repo: Path) -> Path:
    """Step 1's report stored at the first commit; a second commit; step 3's report stored at it."""
    assert (
        run(sample_repo, "ingest", str(sample_repo / "step1.coverage.json"), "--suite", "unit").returncode
        == 0
    )
    (sample_repo / "NOTES.md").write_text("notes\n")
    git(sample_repo, "add", "NOTES.md")
    commit(sample_repo, "notes")
    assert (
        run(sample_repo, "ingest", str(sample_repo / "step3.coverage.json"), "--suite", "unit").returncode
        == 0
    )
    return sample_repo


def test_a_failed_gate_prints_its_envelope_and_the_canonical_error_body_with_a_command_to_run(
    changed: Path,
) -> None:
    out = run(
        changed, "gate", "--baseline", "HEAD~1", "--suite", "unit", "--fail-under-total", "99.5", "--json"
    )
    assert out.returncode == 3
    assert json.loads(out.stdout)["data"]["passed"] is False
    body = json.loads(out.stderr)
    assert set(body) == {"error"} and set(body["error"]) == {
        "code",
        "message",
        "suggestion",
        "details",
        "remedy",
    }
    error = body["error"]
    assert error["code"] == "threshold_not_met" and error["details"] == {"failed": ["total"]}
    assert error["remedy"] == {
        "operation": "coverage_review",
        "arguments": {
            "task": "change",
            "baseline": {"kind": "ref", "ref": "HEAD~1"},
            "representation": "review",
            "measurement": {"suite": "unit"},
        },
    }
    # The remedy as a command line, alone on its line, then the error's own advice: nothing lost.
    command, advice = error["suggestion"].split("\n")
    assert (
        command == "Run: coverage-mcp review change --suite unit --baseline 'HEAD~1' --representation review"
    )
    assert advice.startswith("Cover the listed lines")
    human = run(changed, "gate", "--baseline", "HEAD~1", "--suite", "unit", "--fail-under-total", "99.5")
    assert human.returncode == 3
    assert human.stderr.splitlines() == [
        "error [threshold_not_met]: 1 of 1 checks failed: total",
        f"  suggestion: {command}",
        f"              {advice}",
    ]
    suggested = run(changed, *shlex.split(command.removeprefix("Run: coverage-mcp ")))
    assert suggested.returncode == 0 and suggested.stdout.startswith("change: "), suggested.stderr


def test_json_errors_of_bad_input_and_of_a_missing_repository_are_the_canonical_body(
    sample_repo: Path, tmp_path: Path
) -> None:
    bad = run(sample_repo, "show", "snap-0000", "--json")
    assert bad.returncode == 2 and bad.stdout == ""
    assert json.loads(bad.stderr)["error"]["code"] == "not_found"
    nowhere = run(tmp_path, "snapshots", "--json")
    assert nowhere.returncode == 1 and json.loads(nowhere.stderr)["error"]["code"] == "not_a_repository"


# -- the drift test: every operation, CLI --json == Service.call --------------------------------

WHOLE = {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES}


def cases(
    snapshot_id: str, report: str, run_id: str = "run-0"
) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(operation, CLI words, the same call's arguments). run_test is the daemon's alone (`coverage-mcp run`
    starts one): its CLI drift is tests/test_runs_daemon.py's."""
    return [
        ("project_context", ["context"], {}),
        ("project_context", ["context", "--max-words", "300"], {"max_words": 300}),
        (
            "coverage_review",
            ["review", "insight", "--suite", "unit"],
            {"task": "insight", "measurement": {"suite": "unit"}},
        ),
        (
            "coverage_review",
            [
                "review",
                "change",
                "--suite",
                "unit",
                "--baseline",
                "HEAD~1",
                "--representation",
                "review",
                "--max-words",
                "2000",
            ],
            {
                "task": "change",
                "measurement": {"suite": "unit"},
                "baseline": {"kind": "ref", "ref": "HEAD~1"},
                "representation": "review",
                "limits": {"max_words": 2000},
            },
        ),
        (
            "coverage_review",
            ["review", "history", "--suite", "unit"],
            {"task": "history", "measurement": {"suite": "unit"}},
        ),
        (
            "coverage_review",
            ["review", "snapshots", "--suite", "unit", "--page-size", "1"],
            {"task": "snapshots", "filter": {"suite": "unit"}, "page_size": 1},
        ),
        (
            "coverage_review",
            ["review", "files", "--snapshot", snapshot_id, "--order", "uncovered"],
            {"task": "files", "measurement": {"snapshot_id": snapshot_id}, "order": "uncovered"},
        ),
        (
            "coverage_review",
            ["review", "file", "--snapshot", snapshot_id, "--file", "inventory/stock.py", "--lines", "1-20"],
            {
                "task": "file",
                "measurement": {"snapshot_id": snapshot_id},
                "file": "inventory/stock.py",
                "lines": "1-20",
            },
        ),
        (
            "coverage_review",
            ["snapshots", "--suite", "unit"],
            {"task": "snapshots", "filter": {"suite": "unit"}, "representation": "review", "limits": WHOLE},
        ),
        (
            "coverage_review",
            ["show", snapshot_id, "--limit", "2"],
            {
                "task": "files",
                "measurement": {"snapshot_id": snapshot_id},
                "order": "path",
                "page_size": 2,
                "representation": "review",
                "limits": WHOLE,
            },
        ),
        (
            "coverage_review",
            ["show", snapshot_id, "--file", "inventory/pricing.py"],
            {
                "task": "file",
                "measurement": {"snapshot_id": snapshot_id},
                "file": "inventory/pricing.py",
                "limits": WHOLE,
            },
        ),
        (
            "coverage_import",
            ["ingest", report, "--suite", "unit"],
            {"report_path": "step3.coverage.json", "suite": "unit"},
        ),
        (
            "register_test_command",
            [
                "command",
                "register",
                "--name",
                "drift",
                "--artifact",
                "drift.json:unit",
                sys.executable,
                "-c",
                "print('drift')",
            ],
            DRIFT_COMMAND,
        ),
        ("run_review", ["runs", "show", run_id], {"run_id": run_id, "view": "status"}),
        ("run_review", ["runs", "show", run_id, "--logs"], {"run_id": run_id, "view": "logs"}),
        ("cancel_run", ["runs", "cancel", run_id], {"run_id": run_id}),
    ]


DRIFT_COMMAND = {
    "name": "drift",
    "argv": [sys.executable, "-c", "print('drift')"],
    "artifacts": [{"path": "drift.json", "suite": "unit"}],
}


def finished_run(repo: Path) -> str:
    """A finished run of an approved command in ``repo``'s store (the approval a person's, on the store)."""
    from coverage_core.execution import commands

    with open_project(repo) as project:
        service = Service(project)
        # The case's own registration, first: `context` lists commands, so none may appear mid-table.
        service.call("register_test_command", DRIFT_COMMAND)
        command_id = service.call(
            "register_test_command",
            {**DRIFT_COMMAND, "name": "ran", "argv": [sys.executable, "-c", "print('ran')"]},
        )["data"]["command"]["id"]
        commands.approve(project, command_id, approved_by="tester", via="cli")
        return service.call("run_test", {"command_id": command_id, "wait": True})["data"]["run"]["id"]


def test_every_operation_answers_the_cli_json_exactly_as_the_service(changed: Path) -> None:
    latest = json.loads(run(changed, "snapshots", "--limit", "1", "--json").stdout)["data"]["snapshots"][0]
    table = cases(latest["snapshot_id"], str(changed / "step3.coverage.json"), finished_run(changed))
    assert {name for name, _, _ in table} == set(TOOLS) - {"run_test"}
    printed = []
    for _name, words, _ in table:
        out = run(changed, *words, "--json")
        assert out.returncode == 0, (words, out.stderr)
        printed.append(json.loads(out.stdout))
    with open_project(changed) as project:
        service = Service(project)
        expected = [service.call(name, args) for name, _, args in table]
    for (_name, words, _), got, want in zip(table, printed, expected):
        assert comparable(got) == comparable(want), words
    imported = next(got for (name, _, _), got in zip(table, printed) if name == "coverage_import")
    assert imported["data"]["duplicate"] is True  # the report was stored before: one snapshot, either way
