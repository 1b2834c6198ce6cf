"""``POST /mcp`` and ``/p/{project_id}/mcp``: MCP's Streamable HTTP transport, JSON answers, both eras.

The era is chosen per request by the ``MCP-Protocol-Version`` header, as the
SDK does: a 2026-07-28 value takes the stateless path (no session; the header,
``Mcp-Method`` and ``Mcp-Name`` must agree with the body, else -32020), anything
else the handshake path, where ``initialize`` opens a session
(``Mcp-Session-Id``) that every later message must carry (missing: 400,
unknown: 404). Statuses follow MCP.md 3.2: 406 Accept, 415 Content-Type, 413
body size, 400 parse/batch/version, 202 for notifications and responses.
The answer itself always comes from ``mcp.dispatch``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

import attrs
from aiohttp import web

from coverage_core import nesting
from coverage_core.operations.table import OPERATIONS
from coverage_core.principals import Principal

from .mcp import (
    DEFAULT_NEGOTIATED,
    HANDSHAKE_VERSIONS,
    HEADER_MISMATCH,
    INVALID_ID_MESSAGE,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    MODERN_VERSIONS,
    PARSE_ERROR,
    UNSUPPORTED_VERSION,
    Conn,
    RpcError,
    declared_modern_version,
    dispatch,
    envelope_version,
    error_response,
    invalid_id,
    is_request,
    request_id_of,
    require_modern,
    unsupported_version,
)
from .projects import Target
from .state import DAEMON, Daemon, json_response, target_of

SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
# The params member each name-bearing method mirrors into Mcp-Name.
NAME_PARAMS = {"tools/call": "name", "resources/read": "uri", "prompts/get": "name"}

# The stateless era's status for a JSON-RPC error; anything else is 200.
MODERN_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}

_ACCEPTED = {"application/json", "application/*", "*/*"}
_B64 = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")


AGENT = frozenset({Principal.AGENT})


@attrs.frozen
class RepoBackend:
    """``mcp.Backend`` for one request: its repository selection and the daemon's MCP concurrency bound."""

    daemon: Daemon
    target: Target

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        # Reads and writes are bounded apart, so that a read never waits behind writes queued at the store's
        # write gate (under a mixed load of 32 clients, 30% imports, reads waited 0.6 s for a slot).
        op = OPERATIONS.get(name)
        slots = self.daemon.mcp_slots if op is None or op.read_only else self.daemon.mcp_write_slots
        async with slots:
            # Whatever else the request carries, an MCP caller is the agent: only the agent's rows admit it.
            return await self.daemon.projects.call(self.target, name, arguments, principals=AGENT)

    async def snapshot_summary(self, snapshot_id: str) -> dict[str, Any]:
        async with self.daemon.mcp_slots:
            return await self.daemon.projects.snapshot_summary(self.target, snapshot_id)


def _rpc(status: int, answer: dict[str, Any] | None, headers: dict[str, str] | None = None) -> web.Response:
    if answer is None:
        return web.Response(status=202, headers=headers)
    return json_response(answer, status, headers)


def _reject(status: int, code: int, message: str, request_id: Any = None, data: Any = None) -> web.Response:
    return _rpc(status, error_response(request_id, RpcError(code, message, data)))


def _accepts_json(accept: str | None) -> bool:
    if not accept:
        return True  # no Accept header means any type (RFC 9110)
    return any(part.split(";")[0].strip().lower() in _ACCEPTED for part in accept.split(","))


async def post(request: web.Request) -> web.Response:
    daemon = request.app[DAEMON]
    if not _accepts_json(request.headers.get("Accept")):
        return _reject(406, INVALID_REQUEST, "Not Acceptable: the client must accept application/json")
    if request.content_type != "application/json":
        return _reject(415, INVALID_REQUEST, "Unsupported Media Type: send Content-Type: application/json")
    limit = daemon.settings.http_max_body_bytes
    try:
        if (request.content_length or 0) > limit:
            raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=request.content_length or 0)
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return _reject(413, INVALID_REQUEST, f"the body exceeds COVERAGE_MCP_HTTP_MAX_BODY_BYTES={limit}")
    if nesting.too_deep(body):
        return _reject(400, PARSE_ERROR, f"Parse error: JSON nested deeper than {nesting.MAX_DEPTH} levels")
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return _reject(400, PARSE_ERROR, "Parse error")
    if isinstance(message, list):
        return _reject(400, INVALID_REQUEST, "batches are not supported: send one JSON-RPC message per POST")
    if not isinstance(message, dict):
        return _reject(
            400, INVALID_REQUEST, "the body must be one JSON-RPC request, notification or response"
        )
    if invalid_id(message):
        return _reject(400, INVALID_REQUEST, INVALID_ID_MESSAGE)
    request_id = request_id_of(message)
    versions = request.headers.getall(VERSION_HEADER, [])
    if len(versions) > 1:
        return _reject(400, HEADER_MISMATCH, f"{VERSION_HEADER} appears more than once", request_id)
    header = versions[0] if versions else None
    backend = RepoBackend(daemon, target_of(request))
    if header in MODERN_VERSIONS:
        return await _stateless(request, message, header, backend)
    if header is not None and header not in HANDSHAKE_VERSIONS:
        return _rpc(400, error_response(request_id, unsupported_version(header)))
    return await _handshake(request, message, backend)


async def _handshake(request: web.Request, message: dict[str, Any], backend: RepoBackend) -> web.Response:
    sessions = backend.daemon.sessions
    request_id = request_id_of(message)
    if declared_modern_version(message) is not None:
        return _reject(
            400,
            HEADER_MISMATCH,
            f"a request declaring params._meta protocolVersion must send the same {VERSION_HEADER} header",
            request_id,
        )
    if is_request(message) and message.get("method") == "initialize":
        fresh = Conn("handshake", DEFAULT_NEGOTIATED)
        answer = await dispatch(message, fresh, backend)
        headers = {SESSION_HEADER: sessions.open(fresh)} if answer and "result" in answer else None
        return _rpc(200, answer, headers)
    session_id = request.headers.get(SESSION_HEADER)
    if not session_id:
        return _reject(
            400, INVALID_REQUEST, "Bad Request: Missing session ID (send initialize first)", request_id
        )
    conn = sessions.get(session_id)
    if conn is None:
        return _reject(
            404, INVALID_REQUEST, "Not Found: unknown or expired session; initialize again", request_id
        )
    answer = await dispatch(message, conn, backend)
    if not is_request(message):
        return _rpc(400, answer) if answer is not None else _rpc(202, None)
    return _rpc(200, answer, {SESSION_HEADER: session_id})


async def _stateless(
    request: web.Request, message: dict[str, Any], header: str, backend: RepoBackend
) -> web.Response:
    if "id" not in message:
        # Notifications are acknowledged and dropped: at 2026-07-28 a client
        # cancels by closing its request's connection, not by notification.
        if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
            return _reject(400, INVALID_REQUEST, "the body must be one JSON-RPC request or notification")
        return _rpc(202, None)
    if not is_request(message):
        return _reject(400, INVALID_REQUEST, "the body must be one JSON-RPC request or notification")
    request_id = message["id"]
    try:
        declared = envelope_version(message.get("params"))
        _check_routing_headers(request, message, header, declared)
        version = require_modern(declared)
    except RpcError as error:
        return _rpc(MODERN_STATUS.get(error.code, 200), error_response(request_id, error))
    answer = await dispatch(message, Conn("modern", version, initialized=True), backend)
    status = MODERN_STATUS.get(answer["error"]["code"], 200) if answer and "error" in answer else 200
    return _rpc(status, answer)


def _check_routing_headers(request: web.Request, message: dict[str, Any], header: str, declared: Any) -> None:
    """Rung 2: the routing headers an intermediary reads must say what the body says."""
    for name in (METHOD_HEADER, NAME_HEADER):
        if len(request.headers.getall(name, [])) > 1:
            raise RpcError(HEADER_MISMATCH, f"{name} appears more than once")
    if header != declared:
        raise RpcError(HEADER_MISMATCH, f"{VERSION_HEADER} does not match params._meta's protocol version")
    method = message.get("method")
    if not isinstance(method, str):
        raise RpcError(INVALID_REQUEST, "method must be a string")
    if request.headers.get(METHOD_HEADER) != method:
        raise RpcError(HEADER_MISMATCH, f"{METHOD_HEADER} does not match the body's method")
    key = NAME_PARAMS.get(method)
    params = message.get("params") or {}
    if (
        key is not None
        and params.get(key) is not None
        and _decode(request.headers.get(NAME_HEADER)) != params[key]
    ):
        raise RpcError(HEADER_MISMATCH, f"{NAME_HEADER} does not match the body's {key!r}")


def _decode(value: str | None) -> str | None:
    """A header value, undoing the spec's ``=?base64?...?=`` sentinel for non-ASCII names."""
    if value is None:
        return None
    match = _B64.fullmatch(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match.group("payload"), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


async def delete(request: web.Request) -> web.Response:
    """End a handshake-era session (the SDK client sends this when it closes)."""
    session_id = request.headers.get(SESSION_HEADER)
    if not session_id:
        return _reject(400, INVALID_REQUEST, "Bad Request: Missing session ID")
    if not request.app[DAEMON].sessions.close(session_id):
        return _reject(404, INVALID_REQUEST, "Not Found: unknown or expired session")
    return web.Response(status=204)
