"""The suite's own environment: what a test run inherits from the person's shell is scrubbed once, at
``pytest_configure``, so a subprocess started without ``env=`` inherits a clean environment too.

What a test adds (its home, its port, a setting) goes through ``test_env``. The project's own executables
are the checkout's, run by the interpreter running the suite (``checkout_cli``), never the first
``coverage-mcp`` on PATH.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

# Variables whose value a person's shell may carry and that would change what a test exercises: the
# product's settings and secrets (COVERAGE_MCP_*), coverage.py's measurement hooks, pytest's own
# options, git's overrides (repository, index, config, author), locale categories.
SCRUBBED_PREFIXES = ("COVERAGE_MCP_", "GIT_", "XDG_", "LC_")
SCRUBBED = frozenset(
    {
        "COVERAGE_PROCESS_START",
        "COVERAGE_RCFILE",
        "COVERAGE_FILE",
        "COVERAGE_CORE",
        "PYTEST_ADDOPTS",
        "PYTEST_PLUGINS",
        "LANGUAGE",
    }
)
XDG_FOLDERS = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "XDG_RUNTIME_DIR": "runtime",
}
# The suite's git identity: test repositories commit as this, whatever the person's ~/.gitconfig says.
GITCONFIG = "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"
VENV_BIN = str(Path(sys.executable).parent)


def scrub(root: Path) -> None:
    """Make this process's environment the suite's: person's variables removed, HOME, git's global config
    and the XDG folders inside ``root`` (this run's temporary folder), fixed locale and time zone, and
    the interpreter's bin folder (the virtual environment's) first on PATH so peer tools come from it.

    xdist workers run this too, each with its own ``root``; PATH keeps everything else it had."""
    for name in list(os.environ):
        if name.startswith(SCRUBBED_PREFIXES) or name in SCRUBBED:
            del os.environ[name]
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(home)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(GITCONFIG)
    os.environ["GIT_CONFIG_GLOBAL"] = str(gitconfig)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    for name, folder in XDG_FOLDERS.items():
        path = home / folder
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.environ[name] = str(path)
    os.environ["LANG"] = "C.UTF-8"
    os.environ["TZ"] = "UTC"
    time.tzset()
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != VENV_BIN]
    os.environ["PATH"] = os.pathsep.join([VENV_BIN, *path])


def test_env(home: Path | str | None = None, port: int | str | None = None, **extra: str) -> dict[str, str]:
    """The suite's (scrubbed) environment plus what a test adds: its daemon home, its port, settings."""
    env = dict(os.environ)
    if home is not None:
        env["COVERAGE_MCP_HOME"] = str(home)
    if port is not None:
        env["COVERAGE_MCP_PORT"] = str(port)
    env.update(extra)
    return env


test_env.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test, wherever it is imported


def checkout_cli() -> list[str]:
    """The argv prefix that runs this checkout's command line with the suite's interpreter."""
    return [sys.executable, "-m", "coverage_cli"]
