"""Argument validation against the operations' JSON Schemas (draft 2020-12).

Messages are path-addressed (``$.limits.max_words: expected integer, got
string``) and every failure is an ``invalid_argument`` CoverageError whose
suggestion names what the schema wants.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from .errors import CoverageError, ErrorCode


class Validator:
    """A compiled schema; ``check`` raises ``invalid_argument`` on the first error."""

    def __init__(self, schema: dict[str, Any]) -> None:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        self.schema = schema
        self._validator = cls(schema)

    def check(self, value: Any, *, what: str) -> None:
        errors = sorted(self._validator.iter_errors(value), key=lambda e: (len(e.absolute_path), str(e.path)))
        if not errors:
            return
        err = errors[0]
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{what}: {path}: {_describe(err)}",
            _suggest(err),
            {"path": path, "errors": len(errors)},
        )


def _describe(err: jsonschema.ValidationError) -> str:
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        return f"unknown argument(s) {', '.join(map(repr, extra))}"
    if err.validator == "required":
        return err.message.replace("is a required property", "is required")
    if err.validator == "type":
        return f"expected {err.validator_value}, got {type(err.instance).__name__} {err.instance!r:.60}"
    return err.message[:300]


def _suggest(err: jsonschema.ValidationError) -> str:
    schema = err.schema
    if err.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        return f"Remove it; allowed arguments here are: {', '.join(allowed)}."
    if err.validator == "enum":
        return f"Use one of: {', '.join(map(str, schema['enum']))}."
    if err.validator in ("minimum", "maximum"):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        return f"Pass a value between {lo} and {hi}."
    if err.validator == "type":
        return f"Pass a {schema['type']} here{': ' + schema['description'] if 'description' in schema else '.'}"
    if err.validator == "required":
        return "Add the missing argument; see the tool's input schema."
    if err.validator == "pattern":
        hint = f" ({schema['description']})" if "description" in schema else ""
        return f"Pass a string matching the pattern {schema['pattern']}{hint}."
    return "Check the argument against the tool's input schema."
