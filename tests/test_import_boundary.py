"""coverage_core is a pure library: it never pulls in transport code."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import coverage_core

# Third-party or sibling packages that must never be loaded by the core.
NEVER_LOADED = ("aiohttp", "click", "mcp", "pydantic", "coverage_daemon", "coverage_cli", "asyncio")
# Standard modules the core's own code must not import (pygit2 itself loads
# ssl and therefore socket, which is why this half is checked in the source).
NEVER_IMPORTED = NEVER_LOADED + ("socket", "http", "urllib", "ssl", "selectors")

CORE = Path(coverage_core.__file__).parent


def test_importing_every_core_module_loads_no_transport_package() -> None:
    modules = [m.name for m in pkgutil.walk_packages(coverage_core.__path__, "coverage_core.")]
    assert "coverage_core.parsers.lcov" in modules and "coverage_core.storage.store" in modules
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    assert [m for m in loaded if m.split(".")[0] in NEVER_LOADED] == []


def test_no_core_module_imports_sockets_http_or_transport_code() -> None:
    offenders = []
    for path in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in NEVER_IMPORTED]
    assert offenders == []
