"""Per-repository settings, declared once: kept in the project store's ``settings`` table.

The project_settings rows (the daemon's ``GET``/``PATCH /api/projects/{id}``) show and change exactly
these keys, a store gets their defaults the first time the daemon opens it, the compaction policy, the
approval mode and managed execution's queue and log bounds are read from them. (Process-wide settings,
the ``COVERAGE_MCP_*`` variables, are ``coverage_core.config``; a run bound left at ``None`` here is the
process-wide one, so one repository can be given a tighter or a looser bound than the rest.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs
import duckdb

from ..errors import CoverageError, ErrorCode
from .transactions import transaction

APPROVAL_MODES = ("out_of_band", "attested")


@attrs.frozen
class ProjectSetting:
    """One per-repository setting: its key, default and the values it admits (``choices``, or a whole
    number from ``low`` to ``high``)."""

    key: str
    default: Any
    help: str
    choices: tuple[Any, ...] = ()
    low: int | None = None
    high: int | None = None

    @property
    def variable(self) -> str:
        """The ``COVERAGE_MCP_*`` variable a ``None`` value of this setting stands for (a run bound's)."""
        return f"COVERAGE_MCP_{self.key.upper()}"

    def check(self, value: Any) -> Any:
        """``value`` when this setting admits it; ``invalid_argument`` saying what it admits otherwise.
        A setting whose default is ``None`` (the process-wide value) admits ``None`` again."""
        if value is None and self.default is None:
            return None
        if self.low is not None and self.high is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
                raise CoverageError(
                    ErrorCode.INVALID_ARGUMENT,
                    f"{self.key} must be a whole number from {self.low} to {self.high}, got {value!r}",
                    f"{self.help} Give a whole number from {self.low} to {self.high}"
                    + (", or null for the process-wide value." if self.default is None else "."),
                    {"setting": self.key, "low": self.low, "high": self.high},
                )
        elif value not in self.choices:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"{self.key} cannot be {value!r}",
                f"Use one of: {', '.join(map(str, self.choices))}. {self.help}",
                {"setting": self.key},
            )
        return value


APPROVAL = ProjectSetting(
    "approval_mode",
    "out_of_band",
    "How a registered test command is approved: by a person out of band (default), "
    "or by the agent's attested human approval.",
    choices=APPROVAL_MODES,
)
# The compaction policy (storage.compaction.Policy reads these).
COMPACTION: tuple[ProjectSetting, ...] = (
    ProjectSetting(
        "compaction_after_days",
        30,
        "Snapshots older than this many days are compacted (their detail kept as one zstd payload).",
        low=1,
        high=36500,
    ),
    ProjectSetting(
        "compaction_cadence_minutes",
        60,
        "How often the daemon's maintenance worker looks for snapshots to compact.",
        low=1,
        high=10080,
    ),
    ProjectSetting(
        "compaction_batch_size",
        8,
        "At most this many snapshots are compacted per worker tick.",
        low=1,
        high=1000,
    ),
    ProjectSetting(
        "compaction_protect_recent_runs",
        10,
        "The incremental baselines of this many of the newest finished managed runs stay relational "
        "(besides those of queued and running runs), so their reviews are read again without a restore.",
        low=0,
        high=100_000,
    ),
)
# Managed execution's bounds in this repository (execution.runs, execution.worker); None: the daemon's
# COVERAGE_MCP_RUN_QUEUE_LIMIT / COVERAGE_MCP_RUN_LOG_MAX_BYTES (the same bounds apply to both).
RUN_QUEUE_LIMIT = ProjectSetting(
    "run_queue_limit",
    None,
    "Managed runs waiting queued in this repository; run_test past it is refused (too_many_requests). "
    "null: COVERAGE_MCP_RUN_QUEUE_LIMIT.",
    low=1,
    high=100_000,
)
RUN_LOG_MAX_BYTES = ProjectSetting(
    "run_log_max_bytes",
    None,
    "Bytes of a managed run's stdout, and of its stderr, kept in its log (the rest is counted). "
    "null: COVERAGE_MCP_RUN_LOG_MAX_BYTES.",
    low=1024,
    high=1024 * 1024 * 1024,
)
RUNS: tuple[ProjectSetting, ...] = (RUN_QUEUE_LIMIT, RUN_LOG_MAX_BYTES)
SETTINGS: dict[str, ProjectSetting] = {s.key: s for s in (APPROVAL, *COMPACTION, *RUNS)}
DEFAULTS: dict[str, Any] = {key: s.default for key, s in SETTINGS.items()}


def read(con: duckdb.DuckDBPyConnection, keys: Iterable[str] | None = None) -> dict[str, Any]:
    """The stored value of each setting (of ``keys``), its default where never set or no longer admitted."""
    wanted = list(SETTINGS if keys is None else keys)
    rows = dict(
        con.execute("SELECT key, value FROM settings WHERE list_contains(?, key)", [wanted]).fetchall()
    )
    out: dict[str, Any] = {}
    for key in wanted:
        setting = SETTINGS[key]
        try:
            out[key] = setting.check(json.loads(rows[key])) if key in rows else setting.default
        except (CoverageError, ValueError):
            out[key] = setting.default
    return out


def validate(values: Any) -> dict[str, Any]:
    """Check a settings object: unknown keys and values a setting does not admit are refused."""
    if not isinstance(values, dict) or not values:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            "settings must be a non-empty JSON object",
            f'Send {{"settings": {{...}}}} with any of: {", ".join(SETTINGS)}.',
        )
    unknown = sorted(set(values) - set(SETTINGS))
    if unknown:
        raise CoverageError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown project setting(s): {', '.join(map(repr, unknown))}",
            f"Project settings are: {', '.join(SETTINGS)}.",
            {"unknown": unknown},
        )
    return {key: SETTINGS[key].check(value) for key, value in values.items()}


def write(con: duckdb.DuckDBPyConnection, checked: dict[str, Any]) -> None:
    """Persist values ``validate`` (or a setting's ``check``) admitted, in one transaction."""
    with transaction(con):
        for key, value in checked.items():
            con.execute(
                "INSERT INTO settings VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [key, json.dumps(value)],
            )


def write_defaults(con: duckdb.DuckDBPyConnection) -> None:
    """Give a store every setting it lacks, at its default (what the daemon does when it first opens it)."""
    for key, value in DEFAULTS.items():
        con.execute(
            "INSERT INTO settings VALUES (?, ?) ON CONFLICT (key) DO NOTHING", [key, json.dumps(value)]
        )


def bound(con: duckdb.DuckDBPyConnection, setting: ProjectSetting, process_wide: int) -> tuple[int, str]:
    """A run bound in this repository and where it comes from: the project setting when one is set, else
    the process-wide value (named by its variable)."""
    value = read(con, [setting.key])[setting.key]
    if value is None:
        return process_wide, setting.variable
    return int(value), f"project setting {setting.key}"
