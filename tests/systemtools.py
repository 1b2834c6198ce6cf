"""System tools some tests need, declared once in ``scripts/system-packages``, and the peer tools of the
test extra (diff-cover, coverage.py, pycobertura), found beside the interpreter running the suite.

A missing tool skips the test with the command that installs it, except under
``CI=true``, where the run must prove everything and a missing tool fails it.
"""

from __future__ import annotations

import os
import shutil
import sys
from functools import cache
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "scripts" / "system-packages"
NPM_PACKAGES = ROOT / "scripts" / "npm-packages"
NPM_BIN = ROOT / ".cache" / "npm-tools" / "node_modules" / ".bin"
VENV_BIN = Path(sys.executable).parent


@cache
def declared() -> dict[str, str]:
    """Command name -> Debian package, from ``scripts/system-packages``."""
    table = {}
    for line in PACKAGES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            command, package = line.split()
            table[command] = package
    return table


@cache
def declared_npm() -> dict[str, str]:
    """Command name -> pinned npm package, from ``scripts/npm-packages``."""
    table = {}
    for line in NPM_PACKAGES.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            command, spec = line.split()
            table[command] = spec
    return table


def _missing(reason: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and {reason}")
    pytest.skip(reason)


def peer(command: str) -> str:
    """A peer tool of the ``test`` extra (an oracle such as diff-cover): the one installed beside the
    suite's interpreter (its virtual environment), never another on PATH. Skip, or fail under CI=true,
    when it is missing."""
    found = VENV_BIN / command
    if found.is_file() and os.access(found, os.X_OK):
        return str(found)
    _missing(
        f"needs {command} beside {sys.executable}: install the test extra with `pip install -e '.[test]'`"
    )


def require(command: str) -> str:
    """The tool's path; skip (or fail under CI=true) when it is not installed."""
    if command in declared_npm():
        if "/" in command:  # a library, named by its file under node_modules
            library = NPM_BIN.parent / command
            if library.is_file():
                return str(library)
        else:
            found = NPM_BIN / command
            if found.is_file() and os.access(found, os.X_OK):
                return str(found)
        _missing(
            f"needs {command}: install it with `npm install --prefix .cache/npm-tools --no-save "
            f"{declared_npm()[command]}` (or run scripts/test)"
        )
    package = declared()[command]  # a KeyError here means: declare the tool first
    on_path = shutil.which(command)  # PATH starts with the suite's bin folder (environment.scrub)
    if on_path:
        return on_path
    _missing(f"needs {command}: install it with `sudo apt-get install -y {package}` (or run scripts/test)")
