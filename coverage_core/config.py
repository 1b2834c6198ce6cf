"""Settings: declared once, read from the environment, validated once.

Each setting has a documented default and range; ``Settings.from_env`` refuses
an out-of-range or non-numeric value with a ``CoverageError`` that names the
variable. ``SETTINGS`` is the single declaration that ``serve --help`` and the
README derive their listings from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from .errors import CoverageError, ErrorCode

MIB = 1024 * 1024


@attrs.frozen
class SettingSpec:
    name: str  # attribute name on Settings
    env: str
    default: Any
    help: str
    minimum: int | None = None
    maximum: int | None = None
    kind: type = int


SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec("home", "COVERAGE_MCP_HOME", "~/.coverage-mcp",
                "Folder of the common registry, the daemon lease and logs.", kind=str),
    SettingSpec("host", "COVERAGE_MCP_HOST", "127.0.0.1",
                "Loopback address the daemon binds (non-loopback hosts are refused).", kind=str),
    SettingSpec("port", "COVERAGE_MCP_PORT", 59471, "TCP port of the daemon.", 0, 65535),
    SettingSpec("max_report_bytes", "COVERAGE_MCP_MAX_REPORT_BYTES", 256 * MIB,
                "Largest report accepted, counted in decompressed bytes.", 1, 2**40),
    SettingSpec("http_max_body_bytes", "COVERAGE_MCP_HTTP_MAX_BODY_BYTES", 4 * MIB,
                "Largest HTTP request body.", 1024, 1024 * MIB),
    SettingSpec("http_timeout_s", "COVERAGE_MCP_HTTP_TIMEOUT_S", 60,
                "Deadline of one HTTP request, in seconds.", 1, 3600),
    SettingSpec("mcp_concurrency", "COVERAGE_MCP_MCP_CONCURRENCY", 16,
                "MCP requests handled at once.", 1, 1024),
    SettingSpec("db_pool_size", "COVERAGE_MCP_DB_POOL_SIZE", 4,
                "Read connections per project store.", 1, 64),
    SettingSpec("db_acquire_timeout_ms", "COVERAGE_MCP_DB_ACQUIRE_TIMEOUT_MS", 5000,
                "Longest wait for a pooled read connection.", 1, 600_000),
    SettingSpec("db_query_timeout_ms", "COVERAGE_MCP_DB_QUERY_TIMEOUT_MS", 30000,
                "Deadline of one store query (shorter than the HTTP deadline).", 1, 3_600_000),
    SettingSpec("store_wait_ms", "COVERAGE_MCP_STORE_WAIT_MS", 2000,
                "How long the daemon waits for a store another process holds.", 0, 600_000),
    SettingSpec("http_idle_timeout_s", "COVERAGE_MCP_HTTP_IDLE_TIMEOUT_S", 10,
                "A connection that has not sent a complete request head within this many seconds is closed.",
                1, 3600),
    SettingSpec("stop_grace_s", "COVERAGE_MCP_STOP_GRACE_S", 10,
                "`stop`: seconds between SIGTERM and SIGKILL when the daemon ignores its shutdown request.",
                1, 600),
    SettingSpec("idle_exit_s", "COVERAGE_MCP_IDLE_EXIT_S", 0,
                "The daemon exits after this many seconds without a request (0: never).", 0, 7 * 24 * 3600),
    SettingSpec("parse_budget_bytes", "COVERAGE_MCP_PARSE_BUDGET_BYTES", 512 * MIB,
                "Report bytes being read and parsed at once in one process, across all repositories.",
                MIB, 2**40),
)


@attrs.frozen
class Settings:
    home: Path
    host: str = "127.0.0.1"
    port: int = 59471
    max_report_bytes: int = 256 * MIB
    http_max_body_bytes: int = 4 * MIB
    http_timeout_s: int = 60
    mcp_concurrency: int = 16
    db_pool_size: int = 4
    db_acquire_timeout_ms: int = 5000
    db_query_timeout_ms: int = 30000
    store_wait_ms: int = 2000
    http_idle_timeout_s: int = 10
    stop_grace_s: int = 10
    idle_exit_s: int = 0
    parse_budget_bytes: int = 512 * MIB

    @property
    def common_db(self) -> Path:
        return self.home / "common.duckdb"

    @property
    def daemon_lock(self) -> Path:
        return self.home / "daemon.lock"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for spec in SETTINGS:
            raw = overrides.get(spec.name)
            source = "argument"
            if raw is None:
                raw = env.get(spec.env)
                source = spec.env
            if raw is None or raw == "":
                raw = spec.default
                source = "default"
            values[spec.name] = _coerce(spec, raw, source)
        values["home"] = Path(os.path.expanduser(str(values["home"]))).absolute()
        if values["db_query_timeout_ms"] >= values["http_timeout_s"] * 1000:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                "COVERAGE_MCP_DB_QUERY_TIMEOUT_MS must be shorter than the HTTP deadline",
                "Lower COVERAGE_MCP_DB_QUERY_TIMEOUT_MS or raise COVERAGE_MCP_HTTP_TIMEOUT_S.",
            )
        return cls(**values)


def setting(name: str, env: Mapping[str, str] | None = None) -> Any:
    """One setting from the environment, validated like ``Settings.from_env`` (for process-wide values)."""
    spec = next(s for s in SETTINGS if s.name == name)
    raw = (os.environ if env is None else env).get(spec.env) or None
    return _coerce(spec, spec.default if raw is None else raw, "default" if raw is None else spec.env)


def _coerce(spec: SettingSpec, raw: Any, source: str) -> Any:
    if spec.kind is str:
        return str(raw)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{spec.env} must be an integer, got {raw!r} (from {source})",
            f"Set {spec.env} to an integer between {spec.minimum} and {spec.maximum}, "
            f"or unset it for the default {spec.default}.",
        ) from None
    if (spec.minimum is not None and value < spec.minimum) or (
        spec.maximum is not None and value > spec.maximum
    ):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{spec.env}={value} is out of range [{spec.minimum}, {spec.maximum}]",
            f"Choose a value between {spec.minimum} and {spec.maximum}, "
            f"or unset {spec.env} for the default {spec.default}.",
        )
    return value
