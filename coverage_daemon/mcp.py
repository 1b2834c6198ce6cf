"""MCP JSON-RPC dispatch: both protocol eras, the tool and resource surface, one function for every transport.

``dispatch(message, conn, backend)`` answers one decoded JSON-RPC message; the
HTTP endpoint (``mcp_http``) and anything else that carries MCP call it, so
transports cannot diverge in behaviour or errors.

Two eras, as the specification allows a server to speak both:

* handshake (``initialize``, versions 2024-11-05 .. 2025-11-25): an unknown
  requested version gets a counter-offer of the latest handshake version, never
  an error, because a legacy client has no way forward from an error;
* stateless 2026-07-28: every request carries its version and client
  capabilities in ``params._meta``; ``server/discover`` replaces
  ``initialize``; results carry ``resultType`` (and ``ttlMs``/``cacheScope``
  where the schema makes them cacheable).

The tool list derives from ``coverage_core.operations.table.TOOLS`` (the MCP rows) and nothing
else; tools/call runs the same operation table, so listing and dispatch cannot
drift. A client's mistake (bad arguments, a missing repository, a store in use)
is a ``CallToolResult`` with ``isError: true`` and a suggestion; only a
malformed request (unknown tool, bad params shape, unknown method) is a
JSON-RPC error. The hot path uses plain dicts: pydantic and the SDK stay out of
the daemon (tests validate every shape with the SDK's own serializers).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
from typing import Any, Literal, Protocol

import attrs

from coverage_core import faults
from coverage_core.errors import (
    CoverageError,
    ErrorCode,
    Remedy,
    error_body,
    render_setting,
)
from coverage_core.ids import SNAPSHOT_ID
from coverage_core.output_schemas import published

from .answer_context import attach_context
from .errors_http import compact, status_of
from .identity import VERSION
from .rpcid import INVALID_ID_MESSAGE, MAX_ID, invalid_id, is_request, valid_id  # noqa: F401  (re-exported)

log = logging.getLogger("coverage_daemon")

# Protocol revisions, as mcp_types.version names them (a test keeps them equal).
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
DEFAULT_NEGOTIATED = "2025-03-26"  # a handshake-era request without a version header

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700,
    -32600,
    -32601,
    -32602,
    -32603,
)
HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_VERSION = -32020, -32021, -32022
REQUEST_CANCELLED = -32800
LEGACY_RESOURCE_NOT_FOUND = -32002  # 2026-07-28 uses INVALID_PARAMS instead

Era = Literal["handshake", "modern"]

SERVER_INFO = {"name": "coverage-mcp", "title": "Coverage MCP", "version": VERSION}
CAPABILITIES = {"tools": {"listChanged": False}, "resources": {"subscribe": False, "listChanged": False}}

INSTRUCTIONS = (
    "coverage-mcp answers questions about the stored coverage history of one git repository. "
    "Call project_context first: it says which checkout this is (HEAD, branch, dirty) and how fresh each "
    "suite's latest snapshot is. Safe workflow: if there is no snapshot, or it is stale, import a report "
    "that lies inside the checkout with coverage_import (re-importing the same report is harmless: "
    "data.duplicate is true); then coverage_review task=insight for the most valuable uncovered regions, "
    "task=source with a file for annotated lines, task=tests for which named tests cover what. "
    "Read data.claim_status and data.reasons on every answer: never present a stale, limited or "
    "not_measured claim as the current state of the checkout. Errors carry a suggestion: follow it."
)

# A failed call's structuredContent: the canonical error body of every surface
# (coverage_core.errors.error_body), its suggestion rendered as an MCP call.
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        # The envelope's context (repo_key, project_id, checkout_path, suite, schema_revision).
        "context": {"type": "object"},
        "error": {
            "type": "object",
            "required": ["code", "message", "suggestion", "details", "remedy"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "suggestion": {"type": "string"},
                "details": {"type": "object"},
                # The fix as data: {operation, arguments} or {setting, value}.
                "remedy": {"type": ["object", "null"]},
            },
        },
    },
}
# What tools/list says of it, once per tool: that it is the error body (its keys, in every failed call's
# text too: docs/operations.md). Clients that hold an isError result to outputSchema accept it.
LISTED_ERROR_SCHEMA: dict[str, Any] = {"required": ["error"]}


def output_schema(operation_schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's ``outputSchema``: its operation's envelope as listed, or the error body of a failed call."""
    return {"type": "object", "oneOf": [published(operation_schema), LISTED_ERROR_SCHEMA]}


CONTEXT_URI = "coverage://context"
SNAPSHOT_TEMPLATE = "coverage://snapshot/{snapshot_id}/summary"
_SNAPSHOT_URI = re.compile(rf"^coverage://snapshot/({SNAPSHOT_ID})/summary$")
RESOURCES = [
    {
        "uri": CONTEXT_URI,
        "name": "context",
        "title": "Project context",
        "description": "The project_context answer for the selected repository: identity, freshness, latest snapshots.",
        "mimeType": "application/json",
    }
]
RESOURCE_TEMPLATES = [
    {
        "uriTemplate": SNAPSHOT_TEMPLATE,
        "name": "snapshot-summary",
        "title": "Snapshot summary",
        "description": "One snapshot's record (provenance, path mapping, warnings) and its totals.",
        "mimeType": "application/json",
    }
]

# How long a 2026-07-28 client may cache a list: the surface is fixed for a
# daemon's life, while context and summaries are read fresh.
_LIST_TTL_MS = 60_000


class RpcError(Exception):
    """A JSON-RPC protocol error (never a tool's failure, which is an isError result)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class Backend(Protocol):
    """What dispatch needs from the daemon, already bound to the request's repository selection."""

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The envelope of one declared operation; raises CoverageError."""

    async def snapshot_summary(self, snapshot_id: str) -> dict[str, Any]:
        """The envelope of one snapshot's record and totals; raises CoverageError."""


@attrs.define(eq=False)
class Conn:
    """What a transport keeps for one client: its era, version, and requests in flight."""

    era: Era
    version: str
    initialized: bool = False
    inflight: dict[tuple[str, Any], asyncio.Task[Any]] = attrs.field(factory=dict)

    def cancel_all(self) -> None:
        for task in self.inflight.values():
            task.cancel()


# -- the tool surface -------------------------------------------------------------


@functools.cache
@functools.cache
def tools() -> list[dict[str, Any]]:
    """``tools/list``: one entry per agent's row (``operations.table.TOOLS``), in declaration order, in its listed form."""
    from coverage_core.operations.table import TOOLS, listed_input

    return [
        {
            "name": op.name,
            "title": op.title,
            "description": op.description,
            "inputSchema": listed_input(op.input_schema),
            "outputSchema": output_schema(op.output_schema),
            "annotations": tool_annotations(op),
        }
        for op in TOOLS.values()
    ]


# The spec's default of each hint: a hint is listed only where the operation differs from it.
HINT_DEFAULTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}


def tool_annotations(op: Any) -> dict[str, Any]:
    hints = {
        "readOnlyHint": op.read_only,
        "destructiveHint": op.destructive,
        "idempotentHint": op.idempotent,
        "openWorldHint": op.open_world,
    }
    return {"title": op.title, **{k: v for k, v in hints.items() if v != HINT_DEFAULTS[k]}}


@functools.cache
def tool_names() -> frozenset[str]:
    return frozenset(tool["name"] for tool in tools())


def render_remedy(remedy: Remedy) -> str:
    """A remedy for an agent: the setting to change, or the tool call to make."""
    setting = render_setting(remedy)
    if setting is not None:
        return setting
    return f"Call {remedy.operation} with {json.dumps(remedy.arguments, ensure_ascii=False)}."


def tool_error(error: CoverageError) -> dict[str, Any]:
    """A failed call as the agent sees it: the canonical error body, its suggestion an MCP call, and the
    context of the project it was asked of (the schema revision alone before one was chosen)."""
    body = error_body(attach_context(error), render=render_remedy)
    inner = body["error"]
    text = f"{inner['code']}: {inner['message']}"
    if inner["suggestion"]:
        text += f" Suggestion: {inner['suggestion']}"
    return {"content": [{"type": "text", "text": text}], "structuredContent": body, "isError": True}


def tool_result(envelope: dict[str, Any]) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": compact(envelope)}],
        "structuredContent": envelope,
        "isError": False,
    }


# -- the 2026-07-28 envelope ----------------------------------------------------------


def envelope_version(params: Any) -> Any:
    """The version a stateless request declares in ``params._meta`` (rung 1 of the spec's ladder)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {META_PROTOCOL_VERSION!r} "
            f"and {META_CLIENT_CAPABILITIES!r}",
        )
    missing = [key for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if key not in meta]
    if missing:
        raise RpcError(INVALID_PARAMS, f"params._meta is missing {', '.join(missing)}")
    return meta[META_PROTOCOL_VERSION]


def require_modern(version: Any) -> str:
    """Rung 3: the declared version must be one this server serves statelessly."""
    if not isinstance(version, str):
        raise RpcError(INVALID_PARAMS, "the protocol version in params._meta must be a string")
    if version not in MODERN_VERSIONS:
        raise unsupported_version(version)
    return version


def unsupported_version(requested: Any) -> RpcError:
    return RpcError(
        UNSUPPORTED_VERSION,
        "Unsupported protocol version",
        {"supported": [*MODERN_VERSIONS, *HANDSHAKE_VERSIONS], "requested": requested},
    )


def declared_modern_version(message: dict[str, Any]) -> Any:
    """A modern ``_meta`` version the body carries, or None."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None


# -- dispatch ------------------------------------------------------------------------


def request_id_of(message: Any) -> Any:
    """The id an error answer may echo: a request's valid id, else None (never NaN, an object or a list)."""
    if not is_request(message):
        return None
    request_id = message["id"]
    return request_id if valid_id(request_id) else None


def error_response(request_id: Any, error: RpcError) -> dict[str, Any]:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


async def dispatch(message: Any, conn: Conn, backend: Backend) -> dict[str, Any] | None:
    """Answer one JSON-RPC message; None for notifications and responses."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return error_response(None, RpcError(INVALID_REQUEST, "expected one JSON-RPC 2.0 object"))
    method = message.get("method")
    if method is None:
        if "id" in message and ("result" in message or "error" in message):
            return None  # a response to a request we never send; nothing to do
        return error_response(
            None, RpcError(INVALID_REQUEST, "expected a request, a notification or a response")
        )
    request_id = message.get("id")
    if "id" in message and not valid_id(request_id):
        return error_response(None, RpcError(INVALID_REQUEST, INVALID_ID_MESSAGE))
    if not isinstance(method, str):
        return error_response(
            request_id, RpcError(INVALID_REQUEST, "Invalid Request: method must be a string")
        )
    params = message.get("params")
    if "id" not in message:
        _notify(method, params, conn)
        return None
    # The work runs as its own task so notifications/cancelled can stop it
    # while this exchange still answers; cancelling the caller (a disconnect,
    # a deadline, shutdown) reaches the work through the await.
    key = (type(request_id).__name__, request_id)
    work = asyncio.ensure_future(_answer(method, params, conn, backend))
    conn.inflight[key] = work
    try:
        result = await work
    except RpcError as error:
        return error_response(request_id, error)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
        # Only the work was cancelled: the HTTP exchange still owes a body,
        # so it answers -32800 like the SDK's 2025-era transport.
        return error_response(request_id, RpcError(REQUEST_CANCELLED, "Request cancelled"))
    finally:
        if conn.inflight.get(key) is work:
            del conn.inflight[key]
    return {"jsonrpc": "2.0", "id": request_id, "result": _finish(method, result, conn)}


def _notify(method: str, params: Any, conn: Conn) -> None:
    if method == "notifications/initialized":
        conn.initialized = True
    elif method == "notifications/cancelled" and isinstance(params, dict):
        request_id = params.get("requestId")
        if not valid_id(request_id):
            return  # names no request we could be running; a notification has no answer to refuse it with
        task = conn.inflight.get((type(request_id).__name__, request_id))
        if task is not None:
            task.cancel()
    # progress, roots and anything else: nothing to do


async def _answer(method: str, params: Any, conn: Conn, backend: Backend) -> dict[str, Any]:
    handler = _METHODS.get(method)
    if handler is None or conn.era not in handler.eras:
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
    if params is not None and not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object")
    if conn.era == "handshake" and not conn.initialized and method not in ("initialize", "ping"):
        raise RpcError(INVALID_PARAMS, "send initialize first")
    return await handler.run(params or {}, conn, backend)


@attrs.frozen
class _Method:
    run: Any
    eras: tuple[Era, ...]
    cacheable: bool = False


async def _initialize(params: dict[str, Any], conn: Conn, _backend: Backend) -> dict[str, Any]:
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise RpcError(INVALID_PARAMS, "initialize needs params.protocolVersion (a string)")
    conn.version = requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE
    conn.initialized = True  # the SDK gates on initialize, not on the racing initialized notification
    return {
        "protocolVersion": conn.version,
        "capabilities": CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": INSTRUCTIONS,
    }


async def _ping(_params: dict[str, Any], _conn: Conn, _backend: Backend) -> dict[str, Any]:
    return {}


async def _discover(_params: dict[str, Any], _conn: Conn, _backend: Backend) -> dict[str, Any]:
    return {
        "supportedVersions": [*MODERN_VERSIONS, *HANDSHAKE_VERSIONS],
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
    }


def _no_cursor(params: dict[str, Any]) -> None:
    if params.get("cursor") is not None:
        raise RpcError(INVALID_PARAMS, "invalid cursor: this list has one page")


async def _tools_list(params: dict[str, Any], _conn: Conn, _backend: Backend) -> dict[str, Any]:
    _no_cursor(params)
    return {"tools": tools()}


async def _tools_call(params: dict[str, Any], _conn: Conn, backend: Backend) -> dict[str, Any]:
    name = params.get("name")
    arguments = params.get("arguments")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "tools/call needs params.name (a string)")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "params.arguments must be an object")
    if name not in tool_names():
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}", {"tools": sorted(tool_names())})
    try:
        return tool_result(await backend.call(name, arguments))
    except CoverageError as error:
        return tool_error(error)
    except Exception as exc:  # a bug must reach the agent as a tool error, never a dropped request
        coded = faults.classify(exc)
        if coded is not None:
            return tool_error(coded)
        log.exception("tools/call %s failed", name)
        return tool_error(
            CoverageError(
                ErrorCode.INTERNAL,
                f"internal error: {type(exc).__name__}",
                "This is a bug in coverage-mcp; the daemon's log has the traceback.",
            )
        )


async def _resources_list(params: dict[str, Any], _conn: Conn, _backend: Backend) -> dict[str, Any]:
    _no_cursor(params)
    return {"resources": RESOURCES}


async def _templates_list(params: dict[str, Any], _conn: Conn, _backend: Backend) -> dict[str, Any]:
    _no_cursor(params)
    return {"resourceTemplates": RESOURCE_TEMPLATES}


async def _resources_read(params: dict[str, Any], conn: Conn, backend: Backend) -> dict[str, Any]:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RpcError(INVALID_PARAMS, "resources/read needs params.uri (a string)")
    match = _SNAPSHOT_URI.match(uri)
    try:
        if uri == CONTEXT_URI:
            envelope = await backend.call("project_context", {})
        elif match:
            envelope = await backend.snapshot_summary(match.group(1))
        else:
            raise _not_found(conn, uri, f"no resource {uri!r}; read {CONTEXT_URI} or {SNAPSHOT_TEMPLATE}")
    except CoverageError as error:
        if error.code == ErrorCode.NOT_FOUND:
            raise _not_found(conn, uri, error.message) from None
        # Resources have no isError channel: the error object carries the
        # suggestion, and the code says whose fault it is by the one status
        # table (a missing repository is the client's, a store the server's).
        code = INTERNAL_ERROR if status_of(error) >= 500 else INVALID_PARAMS
        raise RpcError(
            code,
            f"{error.code.value}: {error.message}",
            {"uri": uri, **error_body(error, render=render_remedy)},
        ) from None
    return {"contents": [{"uri": uri, "mimeType": "application/json", "text": compact(envelope)}]}


def _not_found(conn: Conn, uri: str, message: str) -> RpcError:
    code = INVALID_PARAMS if conn.era == "modern" else LEGACY_RESOURCE_NOT_FOUND
    return RpcError(code, message, {"uri": uri})


_BOTH: tuple[Era, ...] = ("handshake", "modern")
_METHODS: dict[str, _Method] = {
    "initialize": _Method(_initialize, ("handshake",)),
    "ping": _Method(_ping, ("handshake",)),
    "server/discover": _Method(_discover, ("modern",), cacheable=True),
    "tools/list": _Method(_tools_list, _BOTH, cacheable=True),
    "tools/call": _Method(_tools_call, _BOTH),
    "resources/list": _Method(_resources_list, _BOTH, cacheable=True),
    "resources/templates/list": _Method(_templates_list, _BOTH, cacheable=True),
    "resources/read": _Method(_resources_read, _BOTH, cacheable=True),
}
METHODS = tuple(_METHODS)
CACHEABLE_METHODS = frozenset(name for name, method in _METHODS.items() if method.cacheable)


def _finish(method: str, result: dict[str, Any], conn: Conn) -> dict[str, Any]:
    """Add what the 2026-07-28 schema requires on results; handshake results stay as they are."""
    if conn.era != "modern":
        return result
    out = {**result, "resultType": "complete", "_meta": {META_SERVER_INFO: SERVER_INFO}}
    if method in CACHEABLE_METHODS:
        out["ttlMs"] = 0 if method == "resources/read" else _LIST_TTL_MS
        out["cacheScope"] = "private"
    return out
