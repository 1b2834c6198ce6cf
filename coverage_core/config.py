"""Settings: the one table (``settings_table``) read from the environment into a frozen record.

Each setting has one documented default and range, declared in
``coverage_core.settings_table.SETTINGS``; the fields of ``Settings`` are
derived from that table, and ``Settings.from_env`` validates with the same
function the stdio connector uses, so a bad value is refused with the same
``CoverageError`` everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .settings_table import MIB, SETTINGS, SettingSpec, read_env, setting

__all__ = ["MIB", "SETTINGS", "SettingSpec", "Settings", "setting"]


class _SettingsBase:
    """What every Settings has beside its fields (which come from the table)."""

    __slots__ = ()

    if TYPE_CHECKING:  # the fields are made from SETTINGS below
        home: Path
        host: str

        def __getattr__(self, name: str) -> Any: ...

    @property
    def common_db(self) -> Path:
        return self.home / "common.duckdb"

    @property
    def daemon_lock(self) -> Path:
        return self.home / "daemon.lock"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Every setting from ``overrides`` (not None), else the environment, else its default; validated."""
        return cls(**read_env(env, **overrides))


if TYPE_CHECKING:
    Settings = _SettingsBase
else:
    Settings = attrs.make_class(
        "Settings",
        {spec.name: attrs.field(type=spec.kind, kw_only=True) for spec in SETTINGS},
        bases=(_SettingsBase,),
        frozen=True,
        slots=True,
    )
    Settings.__module__ = __name__
    Settings.__doc__ = (
        "The validated settings of one process (fields: ``settings_table.SETTINGS``; no defaults here)."
    )
