"""A review task's record and the surfaces derived from it agree: its arguments, its answer's schema, its options.

``coverage_core/operations/review_task_table.py`` declares each task once; the
input schema, the output schema, docs/operations.md and ``review``'s options and
help are read from it. These tests hold the parts that are not derived (the
input schema's argument shapes, the CLI's option table) to the records.
"""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from coverage_cli.options import REVIEW_OPTIONS, review_arguments
from coverage_cli.review_cmds import review_command
from coverage_core.operations.review_task_table import (
    COVERAGE_REVIEW,
    MCP_ONLY,
    NEEDS,
    REVIEW_TASKS,
    TASK_NAMES,
    Task,
    task_envelope,
)
from coverage_core.operations.table import OPERATIONS

REVIEW = OPERATIONS["coverage_review"].input_schema["properties"]
A_SNAPSHOT = "snap-0123456789abcdef"


def _reached(task: str) -> dict[str, str]:
    """The argument each ``review`` option sends for ``task`` (by flag); options refused for it are absent."""
    reached = {}
    for flag in REVIEW_OPTIONS:
        try:
            args = review_arguments(task, {flag: A_SNAPSHOT if flag == "--snapshot" else "x"})
        except click.UsageError:
            continue
        (argument,) = set(args) - {"task"}
        reached[flag] = argument
    return reached


@pytest.mark.parametrize("task", REVIEW_TASKS, ids=lambda t: t.name)
def test_every_argument_a_task_reads_is_in_the_input_schema_and_reached_by_an_option_unless_mcp_only(
    task: Task,
) -> None:
    assert task.reads <= set(REVIEW) - {"task"}
    by_options = set(_reached(task.name).values())
    assert task.reads - MCP_ONLY <= by_options, f"review {task.name} has no option for these arguments"


def test_an_argument_declared_mcp_only_has_no_review_option_for_any_task_and_is_read_by_one() -> None:
    for argument in MCP_ONLY:
        assert all(argument not in _reached(task).values() for task in TASK_NAMES), argument
        assert any(argument in task.reads for task in REVIEW_TASKS), argument
    assert set(NEEDS) | set(NEEDS.values()) <= set().union(*(task.reads for task in REVIEW_TASKS))


@pytest.mark.parametrize("task", [t for t in REVIEW_TASKS if not t.measured], ids=lambda t: t.name)
def test_a_listing_task_takes_only_the_options_whose_arguments_it_reads(task: Task) -> None:
    # A measured task passes an option it does not read on, for the service to refuse naming the tasks
    # that read it (tests/test_cuts.py); a listing's options are its filter's, so the CLI refuses the rest.
    assert set(_reached(task.name).values()) <= task.reads
    assert "filter" in task.reads and "measurement" not in task.reads


def test_a_measured_task_reads_a_measurement_and_no_filter() -> None:
    for task in [t for t in REVIEW_TASKS if t.measured]:
        assert "measurement" in task.reads and "filter" not in task.reads, task.name


@pytest.mark.parametrize("task", REVIEW_TASKS, ids=lambda t: t.name)
def test_a_tasks_answer_schema_holds_its_records_data_keys_and_page_counts(task: Task) -> None:
    envelope = task_envelope(task.name)
    data = envelope["properties"]["data"]["properties"]
    assert data["task"] == {"const": task.name}
    assert {key: data[key] for key in task.data} == task.data
    assert set(envelope["properties"]["page"]["properties"]) == {"next_cursor", *task.page}
    # The one schema every task's answer is published under admits each of its keys and counts.
    shared = COVERAGE_REVIEW["properties"]
    assert set(task.data) <= set(shared["data"]["properties"])
    assert set(task.page) <= set(shared["page"]["properties"])


def test_the_task_enum_of_the_input_the_answer_and_the_cli_is_the_records_names() -> None:
    names = [task.name for task in REVIEW_TASKS]
    assert sorted(REVIEW["task"]["enum"]) == sorted(names) == sorted(TASK_NAMES)
    assert COVERAGE_REVIEW["properties"]["data"]["properties"]["task"]["enum"] == names
    assert list(review_command.params[0].type.choices) == list(TASK_NAMES)  # type: ignore[attr-defined]


def test_review_help_shows_each_tasks_summary_from_its_record() -> None:
    result = CliRunner().invoke(review_command, ["--help"])
    assert result.exit_code == 0
    flat = "".join(result.output.split())  # the help wraps each summary at its own width
    for task in REVIEW_TASKS:
        assert "".join(f"{task.name} {task.summary}".split()) in flat, task.name


def _named_tasks(text: str | None) -> set[str] | None:
    """The tasks a help text opens with ("snapshots, files: records per page"), or None when it names none."""
    match = re.match(r"([a-z_]+(?:, [a-z_]+)*)[:( ]", text or "")
    names = set(match.group(1).split(", ")) if match else set()
    return names if names and names <= set(TASK_NAMES) else None


def test_an_input_argument_whose_description_names_tasks_is_read_by_exactly_those_tasks() -> None:
    described = {name: _named_tasks(schema.get("description")) for name, schema in REVIEW.items()}
    assert {"ranges", "filter", "page_size", "order"} <= {n for n, tasks in described.items() if tasks}
    for name, tasks in described.items():
        if tasks is not None:
            assert tasks == {t.name for t in REVIEW_TASKS if name in t.reads}, name


def test_a_review_option_whose_help_names_tasks_sends_an_argument_exactly_those_tasks_read() -> None:
    helps = {p.opts[0]: _named_tasks(getattr(p, "help", None)) for p in review_command.params}
    assert {"--branch", "--commit", "--page-size", "--order"} <= {f for f, tasks in helps.items() if tasks}
    for flag, tasks in helps.items():
        if tasks is not None:
            readers = {t.name for t in REVIEW_TASKS if _reached(t.name).get(flag) in t.reads}
            assert tasks == readers, flag
