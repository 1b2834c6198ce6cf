"""What an agent is sent: project_context lists what needs attention and shortens to a small budget (issue 25)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.project import Project, open_project
from coverage_core.review import budget
from coverage_core.service import Service


@pytest.fixture
def project(sample_repo: Path, isolated_home: Path) -> Iterator[Project]:
    opened = open_project(sample_repo)
    try:
        service = Service(opened)
        service.call("coverage_import", {"report_path": "step3.coverage.json", "suite": "unit"})
        service.call("coverage_import", {"report_path": "step1.coverage.json", "suite": "default"})
        yield opened
    finally:
        opened.close()


def context(project: Project, **args: Any) -> dict[str, Any]:
    return Service(project).call("project_context", args)


def test_project_context_lists_only_the_files_that_are_not_fresh_and_counts_the_rest(
    project: Project, sample_repo: Path
) -> None:
    for suite in context(project)["data"]["suites"]:
        assert suite["content"]["files"] == [] and suite["content"]["fresh"] > 1
    edited = sample_repo / "inventory" / "stock.py"
    edited.write_text(edited.read_text() + "\n# edited after it was measured\n")
    for suite in context(project)["data"]["suites"]:
        content = suite["content"]
        assert content["files"] == [["inventory/stock.py", "stale"]], suite["suite"]
        assert content["stale"] == 1 and content["files_truncated"] is False


def test_project_context_with_the_smallest_budget_is_a_shorter_answer_that_says_what_it_left_out(
    project: Project, sample_repo: Path
) -> None:
    edited = sample_repo / "inventory" / "stock.py"
    edited.write_text(edited.read_text() + "\n# edited after it was measured\n")
    whole = context(project)
    assert whole["page"]["omitted"] == []
    small = context(project, max_words=budget.MIN_WORDS)
    assert small["page"]["response_word_count"] <= budget.MIN_WORDS
    assert small["page"]["omitted"] and small["page"]["omitted"][0] == "suites.content.files"
    assert len(json.dumps(small["data"])) < len(json.dumps(whole["data"]))
    # What is left is still true: the same checkout, the same claim.
    data = small["data"]
    assert data["project"]["head"] == whole["data"]["project"]["head"]
    assert data["claim_status"] == whole["data"]["claim_status"]
    assert data["suites_truncated"] or len(data["suites"]) == len(whole["data"]["suites"])


def test_project_context_below_the_smallest_budget_is_refused_by_its_schema(project: Project) -> None:
    with pytest.raises(CoverageError) as refused:
        context(project, max_words=budget.MIN_WORDS - 1)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENT
