"""Every remedy works on the first try: the call a refusal names succeeds when made as it is written."""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

import coverage_core
from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode, Remedy, error_body
from coverage_core.service import Service

from .commandline import cli
from .conftest import make_sample_repo
from .gitrepo import commit, make_repo, write


@pytest.fixture
def service(sample_repo: Path):
    with open_project(sample_repo) as project:
        svc = Service(project)
        svc.call("coverage_import", {"report_path": "step3.coverage.lcov"})
        yield svc


def _refused(svc: Service, args: dict) -> CoverageError:
    with pytest.raises(CoverageError) as caught:
        svc.call("coverage_review", args)
    return caught.value


@pytest.mark.parametrize(
    "args",
    [
        {"task": "insight", "limits": {"max_words": 5}},  # below the minimum
        {"task": "insight", "limits": {"max_words": 40, "max_bytes": 512}},
        {"task": "source", "file": "inventory/pricing.py", "lines": "1-40", "limits": {"max_words": 40}},
        {"task": "file", "file": "inventory/pricing.py", "limits": {"max_words": 40}},
        {"task": "history", "limits": {"max_words": 40}},
        {"task": "source", "file": "inventory/pricng.py", "lines": "1-3"},  # one letter off
        {"task": "file", "file": "inventory/stok.py"},
    ],
)
def test_a_refusal_with_a_remedy_names_a_call_that_succeeds_as_written(service: Service, args: dict) -> None:
    error = _refused(service, args)
    assert error.remedy is not None, error
    fixed = error.remedy.to_dict()
    assert fixed["operation"] == "coverage_review"
    service.call(fixed["operation"], fixed["arguments"])  # the first try works


def test_a_budget_remedy_asks_for_what_the_page_needs_not_twice_that(service: Service) -> None:
    error = _refused(
        service,
        {"task": "source", "file": "inventory/pricing.py", "lines": "1-40", "limits": {"max_words": 40}},
    )
    need = error.remedy.to_dict()["arguments"]["limits"]["max_words"]
    assert need == error.details["needed_words"]
    with pytest.raises(CoverageError):  # one word less does not answer
        service.call(
            "coverage_review", {**error.remedy.to_dict()["arguments"], "limits": {"max_words": need - 1}}
        )


def test_a_path_one_letter_off_is_not_found_and_names_the_tracked_one(service: Service) -> None:
    error = _refused(service, {"task": "source", "file": "inventory/pricng.py"})
    assert error.code is ErrorCode.NOT_FOUND and "did you mean 'inventory/pricing.py'" in error.message
    assert error.details["nearest"][0] == "inventory/pricing.py"


@pytest.mark.parametrize("words", ["40", "3"])  # at the minimum, and below it
def test_the_command_line_remedy_of_a_budget_is_a_command_that_succeeds(
    service: Service, sample_repo: Path, words: str
) -> None:
    service.project.close()
    done = cli("review", "file", "--file", "inventory/pricing.py", "--max-words", words, repo=sample_repo)
    assert done.returncode == 2
    command = re.search(r"Run: coverage-mcp (.+)", done.stderr).group(1)
    assert "--max-bytes" in command and "--max-words" in command
    again = cli(*shlex.split(command), repo=sample_repo)
    assert again.returncode == 0, again.stderr


SWEEP = [
    ("insight", {}),
    ("change", {}),
    ("history", {}),
    ("source", {}),
    ("tests", {}),
    ("tests", {"file": "inventory/pricing.py"}),
    ("audit", {}),
    ("all", {}),
    ("all", {"baseline": {"kind": "previous_snapshot"}}),
    ("files", {}),
    ("file", {"file": "inventory/pricing.py"}),
    ("snapshots", {}),
]


@pytest.fixture(scope="module")
def two_snapshots(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """Two snapshots of the sample, a commit apart. Built once for the module: its only user, the budget
    sweep (36 cases of every task at three tiny budgets), reads and never writes."""
    sample_repo = make_sample_repo(tmp_path_factory.mktemp("two-snapshots") / "inventory")
    with open_project(sample_repo) as project:
        svc = Service(project)
        svc.call("coverage_import", {"report_path": "step1.coverage.json"})
        write(sample_repo, {"NEWS": "x\n"})
        commit(sample_repo, "later")
        svc.call("coverage_import", {"report_path": "step3.coverage.json"})
        yield svc


@pytest.mark.parametrize("limits", [{"max_words": 40}, {"max_words": 40, "max_bytes": 512}, {"max_words": 3}])
@pytest.mark.parametrize("task, extra", SWEEP)
def test_every_task_at_a_tiny_budget_answers_or_names_a_budget_that_answers_at_once(
    two_snapshots: Service, task: str, extra: dict, limits: dict
) -> None:
    args = {"task": task, **extra, "limits": limits}
    try:
        two_snapshots.call("coverage_review", args)
        return
    except CoverageError as error:
        assert error.code in (ErrorCode.BUDGET_TOO_SMALL, ErrorCode.INVALID_ARGUMENT), error
        assert error.remedy is not None, error
        remedy = error.remedy.to_dict()
    kept = {k: v for k, v in remedy["arguments"].items() if k != "limits"}
    assert kept == {k: v for k, v in args.items() if k != "limits"}  # only the budget changes
    two_snapshots.call(remedy["operation"], remedy["arguments"])


@pytest.mark.parametrize(
    "args, says",
    [
        ({"task": "change", "baseline": {"kind": "ref"}}, "baseline.ref"),
        ({"task": "change", "baseline": {"kind": "merge_base"}}, "baseline.ref"),
        ({"task": "change", "baseline": {"kind": "explicit"}}, "snapshot_id"),
        ({"task": "source", "file": "a.py", "lines": "9-3"}, "'9-3'"),
        ({"task": "source", "file": "a.py", "ranges": ["1-2", "0"]}, "'0'"),
        ({"task": "file"}, "needs file"),
    ],
)
def test_an_argument_error_that_needs_no_store_is_refused_even_with_nothing_stored(
    tmp_path: Path, args: dict, says: str
) -> None:
    repo = make_repo(tmp_path / "empty", {"a.py": "x = 1\n"})
    with open_project(repo) as project:  # nothing stored: any store read would answer not_measured
        with pytest.raises(CoverageError) as caught:
            Service(project).call("coverage_review", args)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT and says in caught.value.message


def test_source_of_a_file_git_has_but_the_snapshot_does_not_measure_is_not_measured(service: Service) -> None:
    data = service.call("coverage_review", {"task": "source", "file": "tests/test_stock.py", "lines": "1-3"})[
        "data"
    ]
    assert (
        data["claim_status"] == "not_measured"
        and "has no coverage for 'tests/test_stock.py'" in data["reasons"][0]
    )
    assert [line[1] for r in data["ranges"] for line in r["lines"]] == ["-", "-", "-"]


def test_source_of_a_path_neither_git_nor_the_snapshot_has_is_not_found(service: Service) -> None:
    error = _refused(service, {"task": "source", "file": "inventory/nowhere.py", "lines": "1-3"})
    assert error.code is ErrorCode.NOT_FOUND and error.remedy is not None


def test_a_remedy_leads_the_suggestion_and_the_errors_own_advice_follows_on_every_surface() -> None:
    from coverage_cli.output import render_remedy as as_command
    from coverage_daemon.mcp import tool_error

    error = CoverageError(
        ErrorCode.NOT_FOUND,
        "no snapshot of suite 'unit'",
        "Store a report of that suite first, or review an unstored report as the current measurement.",
        remedy=Remedy(operation="coverage_import", arguments={"report_path": "cov.json", "suite": "unit"}),
    )
    person = error_body(error, render=as_command)["error"]["suggestion"].splitlines()
    assert person == ["Run: coverage-mcp ingest cov.json --suite unit", error.suggestion]
    agent = tool_error(error)["structuredContent"]["error"]["suggestion"].splitlines()
    assert agent == [
        'Call coverage_import with {"report_path": "cov.json", "suite": "unit"}.',
        error.suggestion,
    ]
    assert error_body(error)["error"]["suggestion"] == error.suggestion  # REST: the remedy is its own key


# Advice that names a command no operation runs (the daemon's lifecycle, a stream on standard input, setting
# up a connection or opening the dashboard to gain a principal) stays text, as does the approval line
# addressed to a person (written without quotes). So does advice naming a person's command whose row an
# agent cannot call (the runs listing, deleting snapshots: no MCP surface): as a remedy it would fail on the
# agent's first try. The dashboard's page text is read on the dashboard, by a person.
WITHOUT_AN_OPERATION = ("stop", "serve", "runs", "snapshots rm", "ingest -", "connect", "dashboard")


def test_no_core_suggestion_spells_a_command_line_that_a_remedy_could_carry() -> None:
    spelled = []
    for path in sorted(Path(coverage_core.__file__).parent.rglob("*.py")):
        if path.name == "dashboard_view.py":
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        texts = [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
        ]
        for match in re.finditer(r"[`(]coverage-mcp ([a-z][a-z -]*)", "\n".join(texts)):
            if not match.group(1).startswith(WITHOUT_AN_OPERATION):
                spelled.append((path.name, match.group(0)))
    assert spelled == []


def test_a_review_of_nothing_stored_on_the_command_line_names_the_import_that_stores_one(
    sample_repo: Path,
) -> None:
    done = cli("diff", "--baseline", "HEAD~1", "--suite", "nothing-here", repo=sample_repo)
    assert done.returncode != 0
    assert "suggestion: Run: coverage-mcp ingest REPORT --suite nothing-here" in done.stderr, done.stderr
