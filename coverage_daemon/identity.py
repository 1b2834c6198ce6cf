"""What identifies a daemon build and its home, shared by the daemon and the connector.

The defaults and the loopback rule come from the one settings table
(``coverage_core.settings_table``), the version from package metadata.

Stdlib only: the stdio connector imports this on its hot path.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from coverage_core.settings_table import BY_NAME, is_loopback_host
from coverage_core.version import version

__all__ = [
    "CAPABILITY_HEADER",
    "COMMON_DB",
    "DAEMON_LOCK",
    "DAEMON_LOG",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "REPO_HEADER",
    "VERSION",
    "build_fingerprint",
    "is_loopback_host",
]

# The installed distribution's version (package metadata), the one every side reports.
VERSION = version()
DEFAULT_HOST: str = BY_NAME["host"].default
DEFAULT_PORT: int = BY_NAME["port"].default
REPO_HEADER = "x-coverage-mcp-repo"
CAPABILITY_HEADER = "x-coverage-mcp-capability"
DAEMON_LOCK = "daemon.lock"
COMMON_DB = "common.duckdb"
DAEMON_LOG = "daemon.log"

_PACKAGES = ("coverage_core", "coverage_daemon", "coverage_cli")


def build_fingerprint() -> str:
    """A hash of the installed package's source files.

    An editable install whose code changed gets a new fingerprint, so a
    running daemon of the old code is never mistaken for this build.
    """
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(VERSION.encode())
    for package in _PACKAGES:
        base = root / package
        for path in sorted(base.rglob("*")):
            if path.suffix in (".py", ".html", ".json") and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
