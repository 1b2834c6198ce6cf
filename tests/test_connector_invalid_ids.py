"""The stdio connector answers a request id it cannot echo as JSON exactly as the daemon's HTTP endpoint does.

A real connector subprocess against a real daemon it starts. Every answer line
is read with a strict JSON reader (NaN and Infinity refused), as a client in
another language would read it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_connector_support import Connector, env_for, free_port, sample_repo, stop_all
from .test_trust_protocol import INVALID_IDS


def _strict(line: bytes) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"the connector wrote {name}, which is not JSON: {line!r}")

    return json.loads(line, parse_constant=refuse)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("ids-home")
    yield path
    stop_all(path)


@pytest.fixture(scope="module")
def connector(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Connector]:
    repo = sample_repo(tmp_path_factory.mktemp("ids-repo") / "inventory")
    running = Connector(repo, env_for(home, free_port()))
    running.initialize()
    yield running
    assert running.close() == 0


def _answer(connector: Connector, raw: bytes) -> Any:
    connector.send(raw)
    assert connector.process.stdout is not None
    line = connector.process.stdout.readline()
    assert line, f"the connector closed stdout; stderr:\n{connector.stderr()}"
    return _strict(line)


@pytest.mark.parametrize("raw_id", INVALID_IDS)
def test_a_request_whose_id_cannot_be_echoed_gets_id_null_and_invalid_request_over_stdio(
    connector: Connector, raw_id: str
) -> None:
    for method in ("ping", "tools/list"):
        body = _answer(
            connector, b'{"jsonrpc": "2.0", "id": %s, "method": "%s"}' % (raw_id.encode(), method.encode())
        )
        assert body["id"] is None and body["error"]["code"] == -32600, body
        assert "id must be" in body["error"]["message"]


def test_string_ids_and_exact_integers_are_still_echoed_as_given_over_stdio(connector: Connector) -> None:
    for request_id in (2**53 - 1, -(2**53 - 1), 0, "", "NaN", "Infinity", "x" * 1000):
        raw = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()
        assert _answer(connector, raw) == {"jsonrpc": "2.0", "id": request_id, "result": {}}


def test_a_line_nested_past_the_depth_limit_is_a_parse_error_and_the_connector_keeps_answering(
    connector: Connector,
) -> None:
    deep = (
        b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    )
    body = _answer(connector, deep)
    assert (
        body["id"] is None and body["error"]["code"] == -32700 and "nested deeper" in body["error"]["message"]
    )
    raw = json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping"}).encode()
    assert _answer(connector, raw) == {"jsonrpc": "2.0", "id": 6, "result": {}}
