"""coverage_core is a pure library: it never pulls in transport code."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import coverage_core

FORBIDDEN = ("aiohttp", "click", "mcp", "socket", "coverage_daemon", "coverage_cli", "http", "asyncio")


def test_importing_every_core_module_loads_no_transport_or_socket_code() -> None:
    modules = [m.name for m in pkgutil.walk_packages(coverage_core.__path__, "coverage_core.")]
    assert "coverage_core.parsers.lcov" in modules
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    offenders = [m for m in loaded if m.split(".")[0] in FORBIDDEN]
    assert offenders == []
