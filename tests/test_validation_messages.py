"""An argument the schema refuses gets a message that says what is wrong, whatever its size.

jsonschema's own messages start by echoing the offending value; a 5,000-character
argument used to fill the whole (truncated) message with it and never reach the reason.
"""

from __future__ import annotations

import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.service import Service
from coverage_core.usecases import ci
from coverage_core.validation import DECLARED, EXCERPT_CHARS, Validator, _jsonschema, excerpt
from tests.gitrepo import make_repo

LONG = "a" * 5000


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    root = make_repo(tmp_path_factory.mktemp("v") / "r", {"a.py": "x = 1\n"})
    with open_project(root) as project:
        yield Service(project)


CASES = [
    # (tool, arguments, path, the reason, the limit the suggestion names)
    (
        "run_review",
        {"run_id": "run-1", "view": "logs", "search": LONG},
        "$.search",
        "is longer than 200 characters (got 5,000",
        "at most 200 characters",
    ),
    (
        "coverage_import",
        {"report_path": "r.json", "suite": LONG},
        "$.suite",
        "is longer than 200 characters",
        "at most 200 characters",
    ),
    (
        "coverage_import",
        {"inventory_path": "i.json", "reports": ["x"] * 65},
        "$.reports",
        "has 65 items, more than the 64 allowed",
        "at most 64 items",
    ),
    (
        "run_test",
        {"command_id": "cmd-" + "z" * 3000},
        "$.command_id",
        "does not match the pattern ^cmd-[0-9a-f]{16}$",
        "^cmd-[0-9a-f]{16}$",
    ),
    ("coverage_review", {"task": LONG}, "$.task", "is not one of: insight", "Use one of: insight"),
    ("project_context", {"max_words": LONG}, "$.max_words", "expected integer, got str", "integer"),
    (
        "project_context",
        {"max_words": 10**30},
        "$.max_words",
        "is greater than the maximum 50000",
        "between 40",
    ),
    ("coverage_review", {"task": "insight", LONG: 1}, "$", "unknown argument(s)", "allowed arguments"),
    (
        "register_test_command",
        {
            "name": "n",
            "argv": ["x"],
            "artifacts": [{"path": "r.json"}],
            "env": {f"K{i}": "v" for i in range(65)},
        },
        "$.env",
        "has 65 keys, more than the 64 allowed",
        "at most 64 keys",
    ),
]


@pytest.mark.parametrize(
    ("tool", "args", "path", "reason", "limit"),
    CASES,
    ids=[f"{c[0]}-{c[2]}-{c[3].split()[0]}" for c in CASES],
)
def test_a_refused_argument_says_why_with_only_an_excerpt_of_the_value(
    service, tool, args, path, reason, limit
) -> None:
    with pytest.raises(CoverageError) as err:
        service.call(tool, args)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    message = err.value.message
    assert message.startswith(f"{tool}: {path}: "), message
    assert reason in message, message
    assert limit in err.value.suggestion, err.value.suggestion
    assert "a" * (EXCERPT_CHARS + 1) not in message and "z" * (EXCERPT_CHARS + 1) not in message
    assert len(message) < 400, message


def test_an_excerpt_is_short_and_escaped() -> None:
    assert excerpt("x\n\x00" * 100).startswith("'x\\n\\x00x")
    assert all(len(excerpt(v)) <= EXCERPT_CHARS for v in (LONG, [LONG] * 50, {LONG: LONG}, 10**200, "é" * 90))
    assert excerpt("short") == "'short'"


def test_keywords_no_tool_uses_yet_still_lead_with_the_reason() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "exclusiveMinimum": 0, "multipleOf": 2},
            "items": {"type": "array", "uniqueItems": True, "minItems": 2},
            "k": {"const": "fixed"},
            "s": {"type": "string", "minLength": 3},
        },
    }
    v = Validator(schema)
    for value, words, hint in [
        ({"n": 0}, "is less than or equal to the minimum 0", "at least 0"),
        ({"n": 3}, "is not a multiple of 2", "input schema"),
        ({"items": [LONG, LONG]}, "repeated items", "Remove the repeated items"),
        ({"items": [1]}, "has 1 items, fewer than the 2 required", "at least 2 items"),
        ({"k": LONG}, "must be 'fixed', got 'aaaa", "Pass 'fixed'"),
        ({"s": "ab"}, "is shorter than 3 characters", "at least 3 characters"),
    ]:
        with pytest.raises(CoverageError) as err:
            v.check(value, what="t")
        assert words in err.value.message and hint in err.value.suggestion, (
            err.value.message,
            err.value.suggestion,
        )
        assert LONG[: EXCERPT_CHARS + 1] not in err.value.message


def test_every_declared_schema_is_valid_against_its_metaschema() -> None:
    # Validators compile their schema unchecked at run time; a malformed one is caught here instead.
    assert ci.DIFF_SCHEMA in [v.schema for v in DECLARED] and len(DECLARED) > 10
    js = _jsonschema()
    for validator in DECLARED:
        js.validators.validator_for(validator.schema, default=js.Draft202012Validator).check_schema(
            validator.schema
        )


def test_a_schema_that_breaks_its_metaschema_is_caught_by_the_check() -> None:
    js = _jsonschema()
    with pytest.raises(js.exceptions.SchemaError):
        js.Draft202012Validator.check_schema({"type": "object", "properties": {"a": {"type": "integr"}}})
