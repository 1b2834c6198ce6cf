"""Drift tests: every declared surface is documented and mapped."""

from __future__ import annotations

import re
from pathlib import Path

from coverage_cli.main import cli
from coverage_cli.output import EXIT_CODES
from coverage_core.config import SETTINGS
from coverage_core.docs import operations_markdown
from coverage_core.errors import ErrorCode
from coverage_core.operations.table import OPERATIONS, TOOLS
from coverage_core.parsers import FORMATS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_every_setting_is_documented_in_the_readme() -> None:
    assert [s.env for s in SETTINGS if f"`{s.env}`" not in README] == []


def test_every_error_code_has_an_exit_code() -> None:
    assert set(EXIT_CODES) == set(ErrorCode)
    assert set(EXIT_CODES.values()) <= {1, 2, 3}


def test_every_error_code_has_an_http_status_a_meaning_and_a_row_in_the_operations_reference() -> None:
    from coverage_core.errors import MEANINGS
    from coverage_daemon.errors_http import HTTP_STATUS

    assert set(HTTP_STATUS) == set(ErrorCode) == set(MEANINGS)
    text = operations_markdown()
    assert [c.value for c in ErrorCode if f"| `{c.value}` |" not in text] == []


def test_every_cli_command_is_documented_in_the_readme() -> None:
    assert [name for name in cli.commands if f"`{name}" not in README] == []


def test_every_cli_command_help_ends_with_an_example() -> None:
    missing = [name for name, cmd in cli.commands.items() if "Example:" not in (cmd.help or "")]
    assert missing == []


def test_every_mcp_tool_and_format_is_documented_in_the_readme() -> None:
    assert [name for name in TOOLS if f"`{name}`" not in README] == []
    assert [fmt for fmt in FORMATS if f"`{fmt}`" not in README] == []


def test_the_committed_operations_reference_is_the_one_generated_from_the_table() -> None:
    committed = (ROOT / "docs" / "operations.md").read_text()
    assert committed == operations_markdown(), "regenerate: python -m coverage_core.docs > docs/operations.md"


def test_the_operations_reference_lists_every_operation_argument_and_task() -> None:
    text = operations_markdown()
    for op in OPERATIONS.values():
        assert f"## {op.name}" in text and op.description in text
        for name, spec in op.input_schema["properties"].items():
            assert f"| `{name}` |" in text
            for nested in spec.get("properties", {}):
                assert f"| `{name}.{nested}` |" in text
    for task in OPERATIONS["coverage_review"].input_schema["properties"]["task"]["enum"]:
        assert f"| `{task}` |" in text
    assert "(docs/operations.md)" in README


def test_the_contributors_guide_is_linked_from_the_readme_and_names_only_files_that_exist() -> None:
    guide = (ROOT / "CONTRIBUTING.md").read_text()
    assert "(CONTRIBUTING.md)" in README
    # Paths into the checkout: a token starting with one of its top-level entries (placeholders aside).
    top = {p.name for p in ROOT.iterdir()}
    named = {
        token
        for token in re.findall(r"`([^`\s]+)`", guide)
        if token.split("/")[0] in top and not set(token) & set("<{*")
    }
    assert "coverage_core/operations/table.py" in named and "tests/test_surface_drift.py" in named
    assert sorted(token for token in named if not (ROOT / token).exists()) == []


def test_every_file_the_suite_starts_first_exists() -> None:
    from .conftest import LONGEST_FIRST

    assert [name for name in LONGEST_FIRST if not (ROOT / name).is_file()] == []


def test_the_architecture_page_names_only_modules_that_exist_and_every_floor_of_the_contract() -> None:
    import tomllib

    page = (ROOT / "docs/architecture.md").read_text()
    named = set(re.findall(r"`(coverage_(?:core|daemon|cli)/[^`\s]*)`", page))
    assert "coverage_core/service.py" in named and "coverage_core/storage/" in named
    assert sorted(path for path in named if not (ROOT / path).exists()) == []
    # Every module or package the floors contract lists is named on the page, so the two cannot drift apart.
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (floors,) = [c for c in contracts if c.get("containers") == ["coverage_core"]]
    listed = {m.strip() for layer in floors["layers"] for m in re.split(r"[:|]", layer)}
    on_page = {p.removeprefix("coverage_core/").split("/")[0].removesuffix(".py") for p in named}
    small = {
        "counts",
        "faults",
        "ids",
        "memo",
        "nesting",
        "settings_table",
        "version",
    }  # "the other small modules"
    assert sorted(listed - on_page - small) == []
    assert (ROOT / "docs/architecture.md").name in (ROOT / "CONTRIBUTING.md").read_text()
