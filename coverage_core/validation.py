"""Argument validation against the operations' JSON Schemas (draft 2020-12).

Messages are path-addressed (``$.limits.max_words: expected integer, got
string``) and every failure is an ``invalid_argument`` CoverageError whose
suggestion names what the schema wants.
"""

from __future__ import annotations

import reprlib
import sys
import threading
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from .errors import CoverageError, ErrorCode

if TYPE_CHECKING:
    import jsonschema

# Libraries jsonschema imports at its own import, if installed, only to check "format" keywords. Our
# schemas use none and no format checker is ever built, yet one of them (rfc3987_syntax, which the
# [notebooks] extra brings) builds a grammar for 1.7 s on import: they are kept out while jsonschema loads.
FORMAT_LIBRARIES = (
    "fqdn",
    "idna",
    "isoduration",
    "jsonpointer",
    "rfc3339_validator",
    "rfc3986_validator",
    "rfc3987",
    "rfc3987_syntax",
    "uri_template",
    "webcolors",
)


_LOADING = threading.Lock()
_LOADED: list[ModuleType] = []  # jsonschema, once a thread has imported it whole


def _jsonschema() -> ModuleType:
    """jsonschema, imported on the first validation (start-up cost: 0.1 s, which reads routed to the daemon
    never pay) without its optional format libraries; a library already imported stays as it is, and one
    kept out is importable again afterwards (only jsonschema's own format table lacks it). One thread
    imports it while the others wait: a daemon's first calls validate at once on several threads, and a
    module another thread is still importing is only partly there."""
    if _LOADED:
        return _LOADED[0]
    with _LOADING:
        if _LOADED:
            return _LOADED[0]
        kept_out = [name for name in FORMAT_LIBRARIES if name not in sys.modules]
        for name in kept_out:
            sys.modules[name] = None  # type: ignore[assignment]  # None in sys.modules makes `import` fail
        try:
            import jsonschema  # start-up cost: on the first validation only (see above)
        finally:
            for name in kept_out:
                if sys.modules.get(name, ...) is None:
                    del sys.modules[name]
        _LOADED.append(jsonschema)
    return jsonschema


DECLARED: list[Validator] = []  # every Validator built: the suite checks each schema against its metaschema


class Validator:
    """A schema, compiled on its first ``check``; ``check`` raises ``invalid_argument`` on the first error."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._compiled: jsonschema.protocols.Validator | None = None
        DECLARED.append(self)

    @property
    def compiled(self) -> jsonschema.protocols.Validator:
        """The schema compiled (once: a process that never validates never imports jsonschema). Checking
        it against its metaschema is the suite's (tests/test_validation_messages.py): the schemas are
        constants, and the check cost every process 35 ms per schema on its first call (a CI ``diff``)."""
        if self._compiled is None:
            js = _jsonschema()
            cls = js.validators.validator_for(self.schema, default=js.Draft202012Validator)
            self._compiled = cls(self.schema)
        return self._compiled

    def check(self, value: Any, *, what: str) -> None:
        errors = sorted(self.compiled.iter_errors(value), key=lambda e: (len(e.absolute_path), str(e.path)))
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


EXCERPT_CHARS = 40


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """A short, escaped rendering of an offending value: never the whole of a long argument."""
    if isinstance(value, str):
        text = repr(value[: limit + 1])
    elif isinstance(value, (dict, list)):
        text = reprlib.repr(value)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _size(value: Any) -> str:
    return f"{len(value):,}" if isinstance(value, (str, list, dict)) else "?"


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _describe(err: jsonschema.ValidationError) -> str:
    """What is wrong, from the keyword that failed: the reason first, the value only as a short excerpt
    (jsonschema's own messages start by echoing the whole value)."""
    # The keyword's value and the instance are any JSON (jsonschema's "unset" marker is only on errors
    # built by hand, never on those iter_errors yields).
    kw, limit, value = err.validator, cast(Any, err.validator_value), cast(Any, err.instance)
    shown = excerpt(value)
    if kw == "additionalProperties":
        extra = sorted(set(value) - set(_schema(err).get("properties", {})))
        names = ", ".join(excerpt(k) for k in extra[:5]) + (
            f" and {len(extra) - 5} more" if len(extra) > 5 else ""
        )
        return f"unknown argument(s) {names}"
    if kw == "required":
        missing = [k for k in limit if isinstance(value, dict) and k not in value]
        return f"{', '.join(map(repr, missing)) or 'a required property'} is required"
    if kw == "type":
        return f"expected {limit}, got {type(value).__name__} {shown}"
    if kw == "maxLength":
        return f"is longer than {_plural(limit, 'character')} (got {_size(value)}: {shown})"
    if kw == "minLength":
        return (
            "must not be empty"
            if limit == 1 and value == ""
            else f"is shorter than {_plural(limit, 'character')} (got {_size(value)}: {shown})"
        )
    if kw == "maxItems":
        return f"has {_size(value)} items, more than the {limit} allowed"
    if kw == "minItems":
        return f"has {_size(value)} items, fewer than the {limit} required"
    if kw == "maxProperties":
        return f"has {_size(value)} keys, more than the {limit} allowed"
    if kw == "minProperties":
        return f"has {_size(value)} keys, fewer than the {limit} required"
    if kw == "uniqueItems":
        return "has repeated items; each item may appear once"
    if kw == "pattern":
        return f"{shown} does not match the pattern {limit}"
    if kw == "enum":
        return f"{shown} is not one of: {', '.join(map(str, limit))}"
    if kw == "const":
        return f"must be {limit!r}, got {shown}"
    if kw in ("minimum", "exclusiveMinimum"):
        return f"{shown} is less than {'' if kw == 'minimum' else 'or equal to '}the minimum {limit}"
    if kw in ("maximum", "exclusiveMaximum"):
        return f"{shown} is greater than {'' if kw == 'maximum' else 'or equal to '}the maximum {limit}"
    if kw == "multipleOf":
        return f"{shown} is not a multiple of {limit}"
    if kw == "format":
        return f"{shown} is not a valid {limit}"
    if kw in ("anyOf", "oneOf"):
        return (
            f"{shown} matches none of the allowed forms"
            if kw == "anyOf"
            else f"{shown} does not match exactly one of the allowed forms"
        )
    if kw == "not":
        return f"{shown} is not allowed here"
    message = err.message
    whole = repr(value)
    if message.startswith(whole):  # jsonschema's messages echo the value first: keep only the reason
        message = shown + message[len(whole) :]
    return message if len(message) <= 300 else message[:297] + "..."


def _schema(err: jsonschema.ValidationError) -> Mapping[str, Any]:
    """The (sub)schema whose keyword failed; a boolean schema (``false``) has no keywords to quote."""
    return err.schema if isinstance(err.schema, Mapping) else {}


def _suggest(err: jsonschema.ValidationError) -> str:
    schema = _schema(err)
    kw, limit = err.validator, cast(Any, err.validator_value)
    if kw == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        return f"Remove it; allowed arguments here are: {', '.join(allowed)}."
    if kw == "enum":
        return f"Use one of: {', '.join(map(str, schema['enum']))}."
    if kw == "const":
        return f"Pass {limit!r}."
    if kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum"))
        hi = schema.get("maximum", schema.get("exclusiveMaximum"))
        if lo is not None and hi is not None:
            return f"Pass a value between {lo} and {hi}."
        return f"Pass a value of at least {lo}." if lo is not None else f"Pass a value of at most {hi}."
    if kw == "type":
        return (
            f"Pass a {schema['type']} here{': ' + schema['description'] if 'description' in schema else '.'}"
        )
    if kw == "required":
        return "Add the missing argument; see the tool's input schema."
    if kw == "pattern":
        hint = f" ({schema['description']})" if "description" in schema else ""
        return f"Pass a string matching the pattern {schema['pattern']}{hint}."
    if kw == "maxLength":
        return f"Pass at most {_plural(limit, 'character')} here."
    if kw == "minLength":
        return f"Pass at least {_plural(limit, 'character')} here."
    if kw == "maxItems":
        return f"Pass at most {_plural(limit, 'item')} here."
    if kw == "minItems":
        return f"Pass at least {_plural(limit, 'item')} here."
    if kw == "maxProperties":
        return f"Pass at most {_plural(limit, 'key')} here."
    if kw == "minProperties":
        return f"Pass at least {_plural(limit, 'key')} here."
    if kw == "uniqueItems":
        return "Remove the repeated items."
    return "Check the argument against the tool's input schema."
