"""``docs/operations.md``, generated from the operation table (``operations.table.OPERATIONS``).

Every operation with its description, behaviour, every argument (nested ones
as ``limits.max_words``) with its type, allowed values and description, what
it answers (``output_schema``), and the tasks of ``coverage_review``. A test
compares the committed file with ``operations_markdown()``; regenerate with::

    python -m coverage_core.docs > docs/operations.md
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .errors import MEANINGS
from .operations.review_task_table import TASK_DATA, TASK_PAGE
from .operations.table import OPERATIONS, Operation
from .principals import Principal, Surface

HEADER = """\
# Operations

<!-- Generated from coverage_core.operations.table.OPERATIONS by `python -m coverage_core.docs > docs/operations.md`;
tests/test_docs.py fails when this file and the table differ. Do not edit by hand. -->

Every surface runs the same operations: MCP tools (`tools/call`), REST
(`POST /api/projects/{id}/ops/{name}`, or `GET` with the arguments as a query
string for read-only operations), the Python client (`DaemonClient.call`) and
the CLI (`--json` prints the operation's envelope). Every answer is the
envelope `{context, data, page}`; every failure is
`{"error": {code, message, suggestion, details, remedy}}`, where `remedy`
names the operation and arguments (or the setting) that fix the call.

Each operation admits some principals, and a caller proving none of them is
refused (`forbidden`, changing nothing): `agent` (an MCP client with the
client token), `client` (the client token over REST: the CLI's reads,
notebooks), `admin` (the daemon's admin capability, which the CLI reads from
the daemon's lock file; in process, the store's owner), `session_read` (a
dashboard session) and `session_write` (the session with its CSRF token).
Its surfaces say where it appears: MCP lists only the `mcp` ones, the others
are unknown tools there.
"""


def operations_markdown() -> str:
    """The whole of ``docs/operations.md``."""
    parts = [HEADER]
    parts.append(
        "| Operation | Title | Read-only | Idempotent | Principals | Surfaces |\n|---|---|---|---|---|---|"
    )
    parts[-1] += "".join(
        f"\n| [`{op.name}`](#{op.name}) | {op.title} | {_yes(op.read_only)} | {_yes(op.idempotent)} | "
        f"{_names(op.principals)} | {_names(op.surfaces)} |"
        for op in OPERATIONS.values()
    )
    for op in OPERATIONS.values():
        parts.append(_operation(op))
    parts.append(_codes())
    return "\n\n".join(parts) + "\n"


def _operation(op: Operation) -> str:
    schema = op.input_schema
    lines = [f"## {op.name}", "", f"**{op.title}.** {op.description}", ""]
    hints = [
        ("read-only" if op.read_only else "writes"),
        ("idempotent" if op.idempotent else "not idempotent"),
    ]
    if op.destructive:
        hints.append("destructive")
    lines += [
        f"Behaviour: {', '.join(hints)}.",
        "",
        f"Principals: {_names(op.principals)}. Surfaces: {_names(op.surfaces)}.",
        "",
        "### Arguments",
        "",
    ]
    rows = list(_arguments(schema, "", set(schema.get("required", ()))))
    if rows:
        lines += ["| Argument | Type | Required | Allowed | Description |", "|---|---|---|---|---|", *rows]
    else:
        lines.append("None.")
    if op.name == "coverage_review":
        lines += [
            "",
            "### Tasks",
            "",
            (
                "`task` selects what `data` holds; every task's data also has "
                "`task`, `claim_status`, `reasons` (and `next` when there is nothing "
                "to show)."
            ),
            "",
            "| Task | Data keys | Page counts |",
            "|---|---|---|",
        ]
        for task, data in TASK_DATA.items():
            keys = ", ".join(f"`{k}`" for k in data["properties"] if k != "task")
            counts = ", ".join(f"`{c}`" for c in TASK_PAGE[task]) or "(one page: null)"
            lines.append(f"| `{task}` | {keys} | {counts} |")
    else:
        lines += ["", "### Answer", "", _answer(op.output_schema)]
    return "\n".join(lines)


def _names(members: frozenset[Principal] | frozenset[Surface]) -> str:
    """Principals or surfaces by value, in declaration order (the order the docs read them in)."""
    every: list[Principal | Surface] = [*Principal, *Surface]
    return ", ".join(f"`{m.value}`" for m in every if m in members)


def _codes() -> str:
    lines = [
        "## Error codes",
        "",
        "`error.code` is one of these; the CLI's exit code (`coverage_cli/output.py`) and the REST status "
        "(`coverage_daemon/errors_http.py`) are each one table of these codes. `internal` is only ever a bug.",
        "",
        "| Code | Meaning |",
        "|---|---|",
    ]
    lines += [f"| `{code.value}` | {_cell(text)} |" for code, text in MEANINGS.items()]
    return "\n".join(lines)


def _answer(envelope: dict[str, Any]) -> str:
    data = envelope["properties"]["data"]
    page = envelope["properties"]["page"]
    required = set(data.get("required", ()))
    keys = ", ".join(f"`{k}`" + ("" if k in required else " (optional)") for k in data["properties"])
    if page.get("type") == "null":
        paged = "`page` is null."
    else:
        counts = ", ".join(f"`{k}`" for k in page["properties"])
        paged = f"`page`: {counts}."
    return f"`data`: {keys}. {paged}"


def _arguments(schema: dict[str, Any], prefix: str, required: set[str]) -> Iterator[str]:
    for name, spec in schema.get("properties", {}).items():
        path = prefix + name
        yield (
            f"| `{path}` | {_type(spec)} | {_yes(name in required)} | {_allowed(spec)} | "
            f"{_cell(spec.get('description', ''))} |"
        )
        if spec.get("type") == "object" and "properties" in spec:
            yield from _arguments(spec, path + ".", set(spec.get("required", ())))


def _type(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return "enum"
    kind = spec.get("type", "any")
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"array of {_type(spec['items'])}"
    return " or ".join(kind) if isinstance(kind, list) else str(kind)


def _allowed(spec: dict[str, Any]) -> str:
    found = []
    if "enum" in spec:
        found.append(", ".join(f"`{v}`" for v in spec["enum"]))
    if "minimum" in spec or "maximum" in spec:
        found.append(f"{spec.get('minimum', '')}..{spec.get('maximum', '')}")
    if "minLength" in spec or "maxLength" in spec:
        found.append(f"length {spec.get('minLength', 0)}..{spec.get('maxLength', '')}")
    if "pattern" in spec:
        found.append(f"pattern `{spec['pattern']}`")
    if "minItems" in spec or "maxItems" in spec:
        found.append(f"{spec.get('minItems', 0)}..{spec.get('maxItems', '')} items")
    if "maxProperties" in spec:
        found.append(f"at most {spec['maxProperties']} key")
    if "default" in spec:
        found.append(f"default `{json.dumps(spec['default'])}`")
    items = spec.get("items")
    if isinstance(items, dict) and items is not spec and _allowed(items):
        found.append(f"each: {_allowed(items)}")
    return "; ".join(found)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


if __name__ == "__main__":
    import sys

    sys.stdout.write(operations_markdown())
