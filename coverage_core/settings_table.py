"""The one settings table: every environment setting, its default, range and check.

``coverage_core.config.Settings`` (the daemon, the CLI, the library) and the
stdio connector (``coverage_daemon.launcher``) both read the environment with
``read_env``, so a setting has one default and a bad value is refused with the
same ``CoverageError`` (``invalid_argument``, naming the variable) on every
side. ``serve --help`` and the README list ``SETTINGS``.

Stdlib only, and cheap to import: the connector reads this on every MCP
session start.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import CoverageError, ErrorCode

TYPE_CHECKING = False  # typing costs the connector's start; mypy still reads the block below
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

MIB = 1024 * 1024
_COMMON_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def is_loopback_host(host: str) -> bool:
    """Whether the daemon may listen on, and a client may call, ``host``: the one rule both sides use.

    ``localhost``, ``::1``, or an IPv4 literal in 127.0.0.0/8 written in
    canonical dotted form. Anything else is refused: names other than
    ``localhost`` (they may resolve anywhere), shorthand such as ``127.1``
    (``inet_aton`` reads it as loopback, other parsers do not),
    ``127.0.0.1.evil.com``, IPv4-mapped or scoped IPv6, and addresses that are
    not loopback at all.
    """
    if host in _COMMON_LOOPBACK:
        return True
    import ipaddress  # usually loaded already (http.client needs it); kept off the import path anyway

    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return isinstance(address, ipaddress.IPv4Address) and address.is_loopback and str(address) == host


class SettingSpec:
    """One setting: its attribute name, variable, default, help and bounds (integers) or kind."""

    __slots__ = ("default", "env", "help", "kind", "maximum", "minimum", "name")

    def __init__(
        self,
        name: str,
        env: str,
        default: Any,
        help: str,
        minimum: int | None = None,
        maximum: int | None = None,
        kind: type = int,
    ) -> None:
        self.name = name  # attribute name on Settings
        self.env = env
        self.default = default
        self.help = help
        self.minimum = minimum
        self.maximum = maximum
        self.kind = kind

    def __repr__(self) -> str:
        return f"SettingSpec({self.env}, default={self.default!r})"


SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "home",
        "COVERAGE_MCP_HOME",
        "~/.coverage-mcp",
        "Folder of the common registry, the daemon lease and logs.",
        kind=Path,
    ),
    SettingSpec(
        "host",
        "COVERAGE_MCP_HOST",
        "127.0.0.1",
        "Loopback address the daemon binds (non-loopback hosts are refused).",
        kind=str,
    ),
    SettingSpec("port", "COVERAGE_MCP_PORT", 59471, "TCP port of the daemon (0: a free one).", 0, 65535),
    SettingSpec(
        "max_report_bytes",
        "COVERAGE_MCP_MAX_REPORT_BYTES",
        256 * MIB,
        "Largest report accepted, counted in decompressed bytes.",
        1,
        2**40,
    ),
    SettingSpec(
        "http_max_body_bytes",
        "COVERAGE_MCP_HTTP_MAX_BODY_BYTES",
        4 * MIB,
        "Largest HTTP request body.",
        1024,
        1024 * MIB,
    ),
    SettingSpec(
        "http_timeout_s",
        "COVERAGE_MCP_HTTP_TIMEOUT_S",
        60,
        "Deadline of one HTTP request, in seconds.",
        1,
        3600,
    ),
    SettingSpec(
        "mcp_concurrency",
        "COVERAGE_MCP_MCP_CONCURRENCY",
        16,
        "MCP tool calls handled at once: as many reads, and apart as many writes (a write waiting for the "
        "store's write gate never holds a read's place).",
        1,
        1024,
    ),
    SettingSpec("db_pool_size", "COVERAGE_MCP_DB_POOL_SIZE", 4, "Read connections per project store.", 1, 64),
    SettingSpec(
        "db_threads",
        "COVERAGE_MCP_DB_THREADS",
        0,
        "DuckDB worker threads per open store (0: DuckDB's own, one per core).",
        0,
        256,
    ),
    SettingSpec(
        "db_acquire_timeout_ms",
        "COVERAGE_MCP_DB_ACQUIRE_TIMEOUT_MS",
        5000,
        "Longest wait for a pooled read connection.",
        1,
        600_000,
    ),
    SettingSpec(
        "db_query_timeout_ms",
        "COVERAGE_MCP_DB_QUERY_TIMEOUT_MS",
        30000,
        "Deadline of one store query (shorter than the HTTP deadline).",
        1,
        3_600_000,
    ),
    SettingSpec(
        "store_wait_ms",
        "COVERAGE_MCP_STORE_WAIT_MS",
        2000,
        "How long the daemon waits for a store another process holds.",
        0,
        600_000,
    ),
    SettingSpec(
        "cli_store_wait_ms",
        "COVERAGE_MCP_CLI_STORE_WAIT_MS",
        30000,
        "How long a coverage-mcp command waits for a store another command or a notebook holds "
        "(then store_locked).",
        0,
        3_600_000,
    ),
    SettingSpec(
        "http_idle_timeout_s",
        "COVERAGE_MCP_HTTP_IDLE_TIMEOUT_S",
        10,
        "A connection that has not sent a complete request head within this many seconds is closed.",
        1,
        3600,
    ),
    SettingSpec(
        "stop_grace_s",
        "COVERAGE_MCP_STOP_GRACE_S",
        10,
        "`stop`: seconds between SIGTERM and SIGKILL when the daemon ignores its shutdown request.",
        1,
        600,
    ),
    SettingSpec(
        "idle_exit_s",
        "COVERAGE_MCP_IDLE_EXIT_S",
        0,
        "The daemon exits after this many seconds without a request or work in flight (0: never; "
        "a daemon a connector starts gets 3600 unless this is set).",
        0,
        7 * 24 * 3600,
    ),
    SettingSpec(
        "parse_budget_bytes",
        "COVERAGE_MCP_PARSE_BUDGET_BYTES",
        512 * MIB,
        "Report bytes being read and parsed at once in one process, across all repositories.",
        MIB,
        2**40,
    ),
    SettingSpec(
        "run_concurrency",
        "COVERAGE_MCP_RUN_CONCURRENCY",
        1,
        "Managed runs (run_test) executing at once per project; the rest wait queued.",
        1,
        64,
    ),
    SettingSpec(
        "run_log_max_bytes",
        "COVERAGE_MCP_RUN_LOG_MAX_BYTES",
        8 * MIB,
        "Bytes of a managed run's stdout, and of its stderr, kept in its log (the rest is counted, "
        "and the stream marked truncated).",
        1024,
        1024 * MIB,
    ),
    SettingSpec(
        "run_queue_limit",
        "COVERAGE_MCP_RUN_QUEUE_LIMIT",
        100,
        "Managed runs waiting queued per project; run_test past it is refused (too_many_requests).",
        1,
        100_000,
    ),
    SettingSpec(
        "run_logs_keep_runs",
        "COVERAGE_MCP_RUN_LOGS_KEEP_RUNS",
        200,
        "Logs are kept for this many of a project's newest ended runs; the maintenance worker removes older ones.",
        1,
        1_000_000,
    ),
    SettingSpec(
        "run_logs_keep_mib",
        "COVERAGE_MCP_RUN_LOGS_KEEP_MIB",
        512,
        "MiB of run logs kept per project, newest runs first; the maintenance worker removes older ones past it.",
        1,
        1024 * 1024,
    ),
    SettingSpec(
        "ingest_wait_s",
        "COVERAGE_MCP_INGEST_WAIT_S",
        60,
        "`ingest` of a FIFO or a pipe: seconds to wait for a writer (saying so on stderr) before giving up.",
        1,
        24 * 3600,
    ),
    SettingSpec(
        "run_force_subreaper",
        "COVERAGE_MCP_RUN_FORCE_SUBREAPER",
        0,
        "1: never put a managed run in a cgroup of its own, even where a delegated cgroup v2 subtree allows it; "
        "the supervisor's subreaper alone stops what the run leaves (the fallback every other platform uses).",
        0,
        1,
    ),
    SettingSpec(
        "dashboard_refresh_s",
        "COVERAGE_MCP_DASHBOARD_REFRESH_S",
        10,
        "How often an open dashboard's event stream checks its project's revision, in seconds "
        "(it sends a refresh only when the revision changed).",
        1,
        3600,
    ),
)
BY_NAME: dict[str, SettingSpec] = {spec.name: spec for spec in SETTINGS}


def read_env(env: Mapping[str, str] | None = None, **overrides: Any) -> dict[str, Any]:
    """Every setting, from ``overrides`` (not None), else the environment (not empty), else its default.

    Raises ``CoverageError(invalid_argument)`` naming the variable for a value
    that is not an integer, out of range, or (the host) not loopback.
    """
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
        values[spec.name] = coerce(spec, raw, source)
    if values["db_query_timeout_ms"] >= values["http_timeout_s"] * 1000:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "COVERAGE_MCP_DB_QUERY_TIMEOUT_MS must be shorter than the HTTP deadline "
            f"({values['db_query_timeout_ms']} ms >= {values['http_timeout_s']} s)",
            "Lower COVERAGE_MCP_DB_QUERY_TIMEOUT_MS or raise COVERAGE_MCP_HTTP_TIMEOUT_S.",
            {"setting": "COVERAGE_MCP_DB_QUERY_TIMEOUT_MS", "value": values["db_query_timeout_ms"]},
        )
    return values


def setting(name: str, env: Mapping[str, str] | None = None) -> Any:
    """One setting from the environment, validated like ``read_env`` (for process-wide values)."""
    spec = BY_NAME[name]
    raw = (os.environ if env is None else env).get(spec.env) or None
    return coerce(spec, spec.default if raw is None else raw, "default" if raw is None else spec.env)


def coerce(spec: SettingSpec, raw: Any, source: str) -> Any:
    """``raw`` as the setting's value, or the one ``invalid_argument`` error every side gives."""
    if spec.kind is Path:
        return Path(os.path.expanduser(str(raw))).absolute()
    if spec.kind is str:
        value = str(raw)
        if spec.name == "host" and not is_loopback_host(value):
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"{spec.env}={value!r} (from {source}) is not a loopback address; "
                "the daemon serves this machine only",
                f"Use {spec.default} (the default), another canonical 127.x.y.z address, localhost or ::1.",
                {"setting": spec.env, "value": value},
            )
        return value
    try:
        number = int(raw)
    except (TypeError, ValueError):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{spec.env} must be an integer, got {raw!r} (from {source})",
            f"Set {spec.env} to an integer between {spec.minimum} and {spec.maximum}, "
            f"or unset it for the default {spec.default}.",
            {"setting": spec.env, "value": str(raw)},
        ) from None
    if (spec.minimum is not None and number < spec.minimum) or (
        spec.maximum is not None and number > spec.maximum
    ):
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"{spec.env}={number} is out of range [{spec.minimum}, {spec.maximum}] (from {source})",
            f"Choose a value between {spec.minimum} and {spec.maximum}, "
            f"or unset {spec.env} for the default {spec.default}.",
            {"setting": spec.env, "value": number},
        )
    return number
