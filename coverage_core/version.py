"""The one version string of coverage-mcp: the installed distribution's metadata.

Stdlib only and cheap: the stdio connector compares it with the daemon's on
every MCP session start. ``importlib.metadata`` costs that start ~10-15 ms
(it imports ``email`` and scans every path entry), so the distribution's
metadata is found the way it does for the two layouts pip writes (a
``coverage_mcp-<version>.dist-info`` directory, whose name carries the
version, and a development ``coverage_mcp.egg-info``), in ``sys.path`` order;
anything else asks ``importlib.metadata``. Not installed at all (a bare
source tree on ``PYTHONPATH``): ``FALLBACK``.
"""

from __future__ import annotations

import os
import sys

DISTRIBUTION = "coverage-mcp"
FALLBACK = "0+unknown"
_PREFIX = "coverage_mcp-"

_cached: str | None = None


def version() -> str:
    """The installed ``coverage-mcp`` version (computed once per process)."""
    global _cached
    if _cached is None:
        _cached = _find() or _from_importlib() or FALLBACK
    return _cached


def _find() -> str | None:
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # a zip, a missing directory
            continue
        for name in names:
            if name.startswith(_PREFIX) and name.endswith(".dist-info"):
                return name[len(_PREFIX) : -len(".dist-info")]
            if name == "coverage_mcp.egg-info":
                found = _version_line(os.path.join(entry or ".", name, "PKG-INFO"))
                if found:
                    return found
    return None


def _version_line(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
                if not line.strip():  # end of the header block
                    break
    except OSError:
        pass
    return None


def _from_importlib() -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
