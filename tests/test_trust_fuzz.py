"""Generated input at every REST route and every MCP method of a live daemon: never a 5xx, never ``internal``.

The routes come from ``coverage_daemon.app.ROUTES`` and the rows and tools from
``coverage_core.operations.table.OPERATIONS`` (every row, with and without the
principals it admits), so a new route, row or tool is fuzzed without touching
this file. A server-side status (5xx, JSON-RPC -32603, a
tool's ``internal``) is allowed only for ``deadline_exceeded`` and
``store_unavailable``, where it can be the truth.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coverage_core.operations.table import OPERATIONS
from coverage_core.principals import Principal
from coverage_daemon.app import ROUTES
from coverage_daemon.credentials import bearer, client_token
from coverage_daemon.identity import CAPABILITY_HEADER, REPO_HEADER
from coverage_daemon.mcp import METHODS

from .gitrepo import make_repo

SAMPLE = Path(__file__).resolve().parents[1] / "coverage_core" / "sample"
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
META_KEYS = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities")
SERVER_SIDE = ("deadline_exceeded", "store_unavailable")  # the only server faults generated input may meet
INTERNAL_ERROR = -32603

FUZZ = settings(
    deadline=None,
    max_examples=60,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


# -- the live daemon and its data ----------------------------------------------------------------------


class Live:
    """One ``coverage-mcp serve`` with one registered repository holding one snapshot."""

    def __init__(self, home: Path, repo: Path) -> None:
        # Its log goes to a file: a pipe nobody reads would fill up with tracebacks and stall the daemon.
        self.log = home.parent / f"{home.name}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_MCP_")}
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "coverage_cli", "serve"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env={**env, "COVERAGE_MCP_HOME": str(home), "COVERAGE_MCP_PORT": "0"},
            )
        self.home, self.repo, self.session = home, repo, ""
        self.auth: dict[str, str] = {}
        deadline = (
            time.monotonic() + 120
        )  # generous: its start under load is no failure (it ends on the line)
        while "listening on" not in (text := self.log.read_text(errors="replace")):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"serve did not start: {text}")
            time.sleep(0.02)
        self.port = int(text.split("listening on ")[1].split(" ")[0].rsplit(":", 1)[1])

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def setup(self) -> None:
        """Register the repository, import one report, open one handshake session."""
        home, repo = self.home, self.repo
        self.auth = bearer(client_token(home) or "")
        self.capability = json.loads((home / "daemon.lock").read_text())["capability"]
        self.session = ""
        status, _, body = self.request("POST", "/api/projects", json.dumps({"path": str(repo)}).encode())
        assert status in (200, 201), body
        self.project_id = body["context"]["project_id"]
        status, _, body = self.request(
            "POST",
            f"/api/projects/{self.project_id}/ops/coverage_import",
            json.dumps({"report_path": "step3.coverage.json"}).encode(),
        )
        assert status in (200, 201), body
        self.snapshot_id = body["data"]["snapshot"]["snapshot_id"]
        status, headers, body = self.mcp(_initialize(HANDSHAKE), {})
        assert status == 200, body
        self.session = headers["mcp-session-id"]

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str | bytes] | None = None
    ) -> tuple[int, dict[str, str], Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        sent: dict[str, str | bytes] = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            **self.auth,
            **(headers or {}),
        }
        try:
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            data = response.read()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, _decoded(data)
        finally:
            conn.close()

    def mcp(
        self,
        message: Any,
        headers: dict[str, str | bytes],
        raw: bytes | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        body = raw if raw is not None else json.dumps(message).encode()
        return self.request("POST", "/mcp", body, {REPO_HEADER: str(self.repo), **headers})


def _decoded(data: bytes) -> Any:
    try:
        return json.loads(data) if data else None
    except ValueError:
        return data[:300]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    repo = tmp_path_factory.mktemp("fuzz-repo") / "inventory"
    shutil.copytree(SAMPLE / "project", repo)
    make_repo(repo, {".gitignore": "*.json\n*.lcov\n.coverage-mcp/\n"})
    for name in ("step3.coverage.json", "step3.coverage.lcov"):
        shutil.copy(SAMPLE / "reports" / name, repo / name)
    daemon = Live(tmp_path_factory.mktemp("fuzz-home"), repo)
    try:
        daemon.setup()
        yield daemon
        status, _, body = daemon.request("GET", "/health")
        assert status == 200 and body["name"] == "coverage-mcp"  # it survived everything
        # Nothing reached the daemon's last-resort handlers (aiohttp's own 400s for unparsable heads are fine).
        log = daemon.log.read_text(errors="replace")
        assert "coverage-mcp ERROR" not in log, log[log.find("coverage-mcp ERROR") :][:3000]
    finally:
        daemon.stop()


# -- generated values -----------------------------------------------------------------------------------

ODD_NUMBERS = st.sampled_from(
    [float("nan"), float("inf"), -float("inf"), 2**63, -(2**63) - 1, 2**64, 10**30, 2**53, -1, 0, 1e308, -0.0]
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | ODD_NUMBERS
    | st.text(max_size=40)
    | st.sampled_from(["", "\x00", "../../etc/passwd", "/", "snap-0", "é" * 3, "\udcff", "a" * 5000])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=10,
)


# The most of an object schema's own properties one generated object carries. Hypothesis's optional keys of
# fixed_dictionaries take half of them on average: 36 nested values for a REST body (73 properties: every
# tool's), each drawn and sent, where the first wrong one is all a refusal reads. A few keys per body cost a
# fraction of that and reach past the first refusal more often; over the examples every key is still drawn.
MOST_PROPERTIES = 8


def some_properties(values: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with some of ``values``' keys (any of them, at most ``MOST_PROPERTIES``), each drawn from its
    strategy; all of them may appear where there are no more than that."""
    if len(values) <= MOST_PROPERTIES:
        return st.fixed_dictionaries({}, optional=values)
    names = st.lists(st.sampled_from(sorted(values)), unique=True, max_size=MOST_PROPERTIES)

    @st.composite
    def some(draw: st.DrawFn) -> dict[str, Any]:
        return {name: draw(values[name]) for name in draw(names)}

    return some()


def from_schema(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values near what ``schema`` accepts (right keys, enum members, bounds and just past them), or any JSON."""
    if "enum" in schema:
        near: st.SearchStrategy[Any] = st.sampled_from(schema["enum"])
    elif schema.get("type") == "object" and "properties" in schema:
        near = some_properties({key: from_schema(sub) for key, sub in schema["properties"].items()})
    elif schema.get("type") == "array":
        near = st.lists(from_schema(schema.get("items", {})), max_size=schema.get("maxItems", 3) + 1)
    elif schema.get("type") == "integer":
        low, high = schema.get("minimum", -(2**31)), schema.get("maximum", 2**31)
        near = st.integers(low, high) | st.sampled_from([low - 1, high + 1, 2**63])
    elif schema.get("type") == "string":
        near = st.text(max_size=40) | st.sampled_from(
            [
                "snap-0",
                "snap-" + "f" * 64,
                "1-3",
                "0-0",
                "x",
                "step3.coverage.json",
                "step3.coverage.lcov",
                "inventory/__init__.py",
                "HEAD",
                "main",
                "e30.xx",
            ]
        )
    else:
        near = JSON
    return st.one_of(near, near, near, JSON)  # mostly near the schema, sometimes anything at all


# Header values as bytes: printable ASCII and bytes past ASCII (http.client sends bytes as they are).
HEADER_BYTES = st.binary(max_size=60).map(lambda b: bytes(c for c in b if c >= 0x20 and c != 0x7F))
REPO_VALUES = st.one_of(
    st.builds(lambda b: b, HEADER_BYTES),
    st.sampled_from(
        [
            b"",
            b"relative/path",
            b"/",
            b"/" + b"a" * 5000,
            b"/" + b"b" * 300,
            b"/tmp",
            b"/nonexistent/x",
            b"\xff\xfe",
        ]
    ),
)


CONTENT_TYPES = st.sampled_from(["text/plain", "application/json; charset=latin-1", ""])
HEADER_NAMES = st.lists(
    st.sampled_from(["MCP-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name", "Accept", "Origin"]),
    max_size=2,
    unique=True,
)


REPO_CHOICES = st.sampled_from(["real", "sub", "fuzz"])


# Every strategy below that depends on the live daemon is built once for it (functools.cache; the daemon is
# the module's): a strategy built inside a draw is built again for every example, and Hypothesis works out
# what it needs to know of it (is it empty, may values be reused: a walk of every strategy it contains, JSON's
# recursion included) on each new object.
@functools.cache
def extra_headers(live: Live, admin: bool) -> st.SearchStrategy[dict[str, str | bytes]]:
    protocol_values = st.sampled_from([MODERN, HANDSHAKE, live.session]) | HEADER_BYTES

    @st.composite
    def drawn(draw: st.DrawFn) -> dict[str, str | bytes]:
        headers: dict[str, str | bytes] = {}
        if draw(st.booleans()):
            choice = draw(REPO_CHOICES)
            headers[REPO_HEADER] = (
                str(live.repo).encode()
                if choice == "real"
                else str(live.repo / "inventory").encode()
                if choice == "sub"
                else draw(REPO_VALUES)
            )
        if draw(st.booleans()):
            headers[CAPABILITY_HEADER] = (
                live.capability if admin and draw(st.booleans()) else draw(HEADER_BYTES)
            )
        if draw(st.integers(0, 4)) == 0:
            headers["Content-Type"] = draw(CONTENT_TYPES)
        for name in draw(HEADER_NAMES):
            headers[name] = draw(protocol_values)
        headers.pop(
            "Origin", None
        )  # a foreign Origin is refused before anything else: nothing to learn there
        return headers

    return drawn()


def _header_bytes(text: str) -> bytes:
    """``text`` as a header can carry it: UTF-8, control characters dropped (http.client refuses CR and LF)."""
    return bytes(c for c in text.encode("utf-8", "surrogateescape") if c >= 0x20 and c != 0x7F)


def _body_bytes(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


# -- the oracles ----------------------------------------------------------------------------------------


def assert_rest_answer(status: int, body: Any, what: str) -> None:
    if status >= 500:
        code = body.get("error", {}).get("code") if isinstance(body, dict) else None
        if isinstance(body, dict) and "jsonrpc" in body:  # an MCP endpoint's transport error
            assert status in (503, 504), (what, status, body)
        else:
            assert code in SERVER_SIDE, (what, status, body)


def assert_mcp_answer(status: int, body: Any, what: str) -> None:
    assert status < 500 or status in (503, 504), (what, status, body)
    if not isinstance(body, dict):
        return
    error = body.get("error")
    if isinstance(error, dict) and error.get("code") == INTERNAL_ERROR:
        assert str(error.get("message", "")).startswith(SERVER_SIDE), (what, body)
    result = body.get("result")
    if isinstance(result, dict) and result.get("isError"):
        code = result["structuredContent"]["error"]["code"]
        assert code not in ("internal", "git_error", "not_supported"), (what, result)


# -- REST: every route -----------------------------------------------------------------------------------

_PARAM = re.compile(r"\{(\w+)(?::[^{}]*(?:\{[^{}]*\}[^{}]*)*)?\}")
QUERY_NAMES = [
    "suite",
    "branch",
    "commit",
    "limit",
    "offset",
    "order",
    "path",
    "max_words",
    "cursor",
    "x",
    "",
]


def _route_id(route: Any) -> str:
    return f"{route.method} {route.path}"


@functools.cache
def filled_path(template: str, live: Live) -> st.SearchStrategy[str]:
    parameters = {
        "project_id": st.sampled_from([live.project_id, "0123456789abcdef"]),
        "snapshot_id": st.sampled_from([live.snapshot_id, "snap-" + "0" * 16, "snap-f"]),
        # a well-formed command id no store holds (the fuzz registers none)
        "command_id": st.sampled_from(["cmd-" + "0" * 16, "cmd-0123456789abcdef"]),
        "name": st.sampled_from([*OPERATIONS, "no_such_op"]),  # an operation of the table, or not
    }
    other = st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True)

    @st.composite
    def drawn(draw: st.DrawFn) -> str:
        return _PARAM.sub(lambda match: draw(parameters.get(match.group(1), other)), template)

    return drawn()


QUERY_PAIRS = st.lists(
    st.tuples(
        st.sampled_from(QUERY_NAMES) | st.text(max_size=6),
        st.text(max_size=20)
        | st.sampled_from(["-1", "0", "1", "9" * 30, "1e3", "asc", "desc", "NaN", "\x00"]),
    ),
    max_size=4,
)


def _query_string(pairs: list[tuple[str, str]]) -> str:
    if not pairs:
        return ""
    return "?" + "&".join(
        f"{quote(k, safe='')}={quote(v, safe='', errors='surrogateescape')}" for k, v in pairs
    )


QUERY_STRING = QUERY_PAIRS.map(_query_string)


_ALL_TOOL_PROPERTIES: dict[str, Any] = {
    key: sub for op in OPERATIONS.values() for key, sub in op.input_schema.get("properties", {}).items()
}
# Built once: Hypothesis caches what it learns about a strategy on the strategy object, so building these
# (hundreds of nested strategies) again for each example cost more than the daemon's answers.
REST_BODY = JSON | from_schema(
    {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "settings": {
                "type": "object",
                "properties": {"approval_mode": {"enum": ["out_of_band", "attested"]}},
            },
            **_ALL_TOOL_PROPERTIES,
        },
    }
)


@pytest.mark.parametrize("route", ROUTES, ids=_route_id)
@FUZZ
@given(data=st.data())
def test_generated_requests_to_every_rest_route_never_get_a_server_error(
    live: Live, route: Any, data: st.DataObject
) -> None:
    """Seed: "Coverage reports, source files, logs, command strings, and database contents must be treated
    as potentially hostile input." """
    path = data.draw(filled_path(route.path, live)) + data.draw(QUERY_STRING)
    headers = data.draw(extra_headers(live, admin=route.path != "/api/shutdown"))
    if route.path == "/api/shutdown":  # the one body that would end the run: never the real capability
        headers[CAPABILITY_HEADER] = data.draw(HEADER_BYTES)
    body = (
        None
        if route.method in ("GET", "DELETE") and data.draw(st.booleans())
        else _body_bytes(data.draw(REST_BODY))
    )
    status, _, answer = live.request(route.method, path, body, headers)
    assert_rest_answer(status, answer, f"{route.method} {path}")


@functools.cache
def projects(live: Live) -> st.SearchStrategy[str]:
    return st.sampled_from([live.project_id, "0123456789abcdef"])


# Each row's arguments near its schema, built once (as REST_BODY).
ROW_BODIES = {name: JSON | from_schema(op.input_schema) for name, op in OPERATIONS.items()}


@pytest.mark.parametrize("name", list(OPERATIONS))
@settings(FUZZ, max_examples=15)
@given(data=st.data())
def test_generated_calls_of_every_row_never_get_a_server_error_and_a_caller_it_does_not_admit_is_refused(
    live: Live, name: str, data: st.DataObject
) -> None:
    op = OPERATIONS[name]
    admin = data.draw(st.booleans())
    headers = data.draw(extra_headers(live, admin=False))
    headers[CAPABILITY_HEADER] = live.capability if admin else data.draw(HEADER_BYTES)
    project = data.draw(projects(live))
    method = "GET" if op.read_only and data.draw(st.booleans()) else "POST"
    path = f"/api/projects/{project}/ops/{name}"
    if method == "GET":
        path += data.draw(QUERY_STRING)
    body = None if method == "GET" else _body_bytes(data.draw(ROW_BODIES[name]))
    status, _, answer = live.request(method, path, body, headers)
    assert_rest_answer(status, answer, f"{method} {path}")
    if Principal.CLIENT not in op.principals and not admin:  # the client token alone: refused, whatever else
        assert status == 403 and answer["error"]["code"] == "forbidden", (name, status, answer)


# -- MCP: every method, both eras --------------------------------------------------------------------------


def _initialize(version: Any, request_id: Any = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "0"},
        },
    }


IDS = st.one_of(st.integers(-(2**53) + 1, 2**53 - 1), st.text(max_size=10), JSON)
NOTIFICATIONS = [
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/message",
]
UNKNOWN = [
    "prompts/list",
    "prompts/get",
    "logging/setLevel",
    "completion/complete",
    "resources/subscribe",
    "tools/call/extra",
    "",
    "Initialize",
    "rpc.discover",
]
MCP_TARGETS = [
    *(f"tools/call {name}" for name in OPERATIONS),  # a row without the MCP surface is an unknown tool
    *(m for m in METHODS if m != "tools/call"),
    "tools/call ?",
    *NOTIFICATIONS,
    "unknown",
]


# Each tool's arguments near its schema, built once (as REST_BODY).
TOOL_ARGUMENTS = {name: from_schema(op.input_schema) for name, op in OPERATIONS.items()}
ANY_ARGUMENTS = from_schema({})


INITIALIZE_PARAMS = (
    st.fixed_dictionaries(
        {},
        optional={
            "protocolVersion": st.sampled_from([HANDSHAKE, MODERN, "2024-11-05", "1999"]) | JSON,
            "capabilities": JSON,
            "clientInfo": JSON,
        },
    )
    | JSON
)
CANCELLED_PARAMS = st.fixed_dictionaries({}, optional={"requestId": IDS, "reason": JSON}) | JSON
UNKNOWN_METHODS = st.sampled_from(UNKNOWN) | st.text(max_size=20)
OTHER_PARAMS = st.fixed_dictionaries({}, optional={"cursor": JSON}) | JSON
UNKNOWN_TOOL = st.text(max_size=20) | JSON


@functools.cache
def mcp_params(target: str, live: Live) -> st.SearchStrategy[tuple[str, Any]]:
    """(method, params) for one target, near what the method expects."""
    if target.startswith("tools/call "):
        name = target.split(" ", 1)[1]
        tool = st.just(name) if name in OPERATIONS else UNKNOWN_TOOL
        arguments = TOOL_ARGUMENTS.get(name, ANY_ARGUMENTS)
        return st.tuples(
            st.just("tools/call"),
            st.fixed_dictionaries({"name": tool}, optional={"arguments": arguments}) | JSON,
        )
    if target == "initialize":
        return st.tuples(st.just(target), INITIALIZE_PARAMS)
    if target == "resources/read":
        uri = st.sampled_from(
            [
                "coverage://context",
                f"coverage://snapshot/{live.snapshot_id}/summary",
                "coverage://snapshot/snap-0/summary",
                "coverage://nope",
                "file:///etc/passwd",
            ]
        )
        return st.tuples(st.just(target), st.fixed_dictionaries({}, optional={"uri": uri | JSON}) | JSON)
    if target == "notifications/cancelled":
        return st.tuples(st.just(target), CANCELLED_PARAMS)
    if target == "unknown":
        return st.tuples(UNKNOWN_METHODS, JSON)
    return st.tuples(st.just(target), OTHER_PARAMS)


@functools.cache
def mcp_exchange(target: str, live: Live) -> st.SearchStrategy[tuple[bytes, dict[str, str | bytes]]]:
    """A message for one target and the headers it is sent with (one strategy per target: see extra_headers)."""

    @st.composite
    def drawn(draw: st.DrawFn) -> tuple[bytes, dict[str, str | bytes]]:
        method, params = draw(mcp_params(target, live))
        notification = target.startswith("notifications/") or draw(st.integers(0, 9)) == 0
        message: dict[str, Any] = {
            "jsonrpc": "2.0" if draw(st.integers(0, 19)) else draw(JSON),
            "method": method,
        }
        if not notification:
            message["id"] = draw(IDS)
        modern = draw(st.booleans())
        if params is not None or draw(st.booleans()):
            if modern and isinstance(params, dict) and draw(st.integers(0, 4)):
                params = {**params, "_meta": {META_KEYS[0]: MODERN, META_KEYS[1]: {}}}
            message["params"] = params
        if modern:
            headers: dict[str, str | bytes] = {
                "MCP-Protocol-Version": MODERN,
                "Mcp-Method": _header_bytes(method),
            }
            name = params.get("name") or params.get("uri") if isinstance(params, dict) else None
            if isinstance(name, str) and name.isascii() and name.isprintable():
                headers["Mcp-Name"] = name
        else:
            headers = {"Mcp-Session-Id": live.session, "MCP-Protocol-Version": HANDSHAKE}
        if draw(st.integers(0, 4)) == 0:
            headers.update(draw(extra_headers(live, admin=False)))
        return _body_bytes(message), headers

    return drawn()


@pytest.mark.parametrize("target", MCP_TARGETS)
@FUZZ
@given(data=st.data())
def test_generated_messages_for_every_mcp_method_never_get_an_internal_error(
    live: Live, target: str, data: st.DataObject
) -> None:
    raw, headers = data.draw(mcp_exchange(target, live))
    status, _, answer = live.mcp(None, headers, raw=raw)
    assert_mcp_answer(status, answer, f"{target}: {raw[:300]!r} {headers}")
