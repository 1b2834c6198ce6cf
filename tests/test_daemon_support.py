"""The daemon's small tables: error codes and bodies, loopback hosts, the settings in serve's help.

The daemons under test are in tests/daemons.py, their fixtures in conftest.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from coverage_core.config import SETTINGS
from coverage_core.errors import CoverageError, ErrorCode, Remedy
from coverage_daemon.errors_http import HTTP_STATUS, error_body, error_from_body
from coverage_daemon.server import check_loopback

# -- the small tables ---------------------------------------------------------------------


def test_every_error_code_has_exactly_one_http_status() -> None:
    assert set(HTTP_STATUS) == set(ErrorCode)
    assert all(400 <= status < 600 for status in HTTP_STATUS.values())


def test_an_error_body_round_trips_through_the_python_client_with_its_remedy() -> None:
    remedy = Remedy(setting="COVERAGE_MCP_STORE_WAIT_MS", value=10000)
    error = CoverageError(ErrorCode.STORE_LOCKED, "held", "wait", {"pid": 7}, remedy)
    body = error_body(error)
    assert body == {
        "error": {
            "code": "store_locked",
            "message": "held",
            "suggestion": "wait",
            "details": {"pid": 7},
            "remedy": {"setting": "COVERAGE_MCP_STORE_WAIT_MS", "value": 10000},
        }
    }
    back = error_from_body(409, body)
    assert (back.code, back.message, back.suggestion, back.details, back.remedy) == (
        error.code,
        "held",
        "wait",
        {"pid": 7},
        remedy,
    )


def test_a_foreign_error_body_is_reported_as_an_unreachable_daemon() -> None:
    assert error_from_body(502, "<html>bad gateway</html>").code == ErrorCode.DAEMON_UNREACHABLE


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1"])
def test_loopback_hosts_are_accepted(host: str) -> None:
    check_loopback(host)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "192.168.1.10", "example.com", "::", "127.1", "127.0.0.1.evil.com"]
)
def test_a_non_loopback_host_or_a_loopback_shorthand_is_refused_as_the_connector_refuses_it(
    host: str,
) -> None:
    with pytest.raises(CoverageError) as caught:
        check_loopback(host)
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT and "loopback" in caught.value.message


def test_serve_help_lists_every_setting_with_its_default_and_range() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "coverage_cli", "serve", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for spec in SETTINGS:
        assert spec.env in out
        assert f"default {spec.default}" in out
        if spec.minimum is not None:
            assert f"range {spec.minimum}..{spec.maximum}" in out
