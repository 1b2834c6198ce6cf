"""What identifies a daemon build and its home, shared by the daemon and the connector.

Stdlib only: the stdio connector imports this on its hot path.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

VERSION = "0.1.0"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 59471
REPO_HEADER = "x-coverage-mcp-repo"
CAPABILITY_HEADER = "x-coverage-mcp-capability"
DAEMON_LOCK = "daemon.lock"
COMMON_DB = "common.duckdb"
DAEMON_LOG = "daemon.log"

_PACKAGES = ("coverage_core", "coverage_daemon", "coverage_cli")
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


def home() -> Path:
    """``COVERAGE_MCP_HOME`` (default ``~/.coverage-mcp``), absolute."""
    return Path(os.path.expanduser(os.environ.get("COVERAGE_MCP_HOME") or "~/.coverage-mcp")).absolute()


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
