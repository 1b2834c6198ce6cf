"""``cli()``: the suite's one way to run ``coverage-mcp``, in this process or as a child process.

In process (the default) the click application runs under click's ``CliRunner`` with the test's
environment and working folder: what a rendering or exit-code test checks is the same (its standard
output, standard error and exit code), without paying an interpreter start and the imports for each
command. ``process=True`` runs this checkout's command line (``environment.checkout_cli``) as a child,
for what the process boundary is: routing to a daemon, store leases held by another process, standard
input, signals, terminals, the daemon itself. Both return a ``subprocess.CompletedProcess``.

An in-process command must not be run from the event loop of an in-process daemon it talks to (it
would wait on the loop it blocks): those tests use ``process=True``, or ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from .environment import checkout_cli, test_env

TIMEOUT_S = 120  # a generous bound on a child command: a slow machine is not a failure
# CliRunner swaps the process's standard streams and environment, and a command may change folder:
# one in-process command at a time.
_ONE_AT_A_TIME = threading.Lock()


def cli(
    *args: str,
    repo: Path | str | None = None,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    stdin: str | bytes | None = None,
    process: bool = False,
    timeout: float = TIMEOUT_S,
) -> subprocess.CompletedProcess[Any]:
    """``coverage-mcp ARGS [--repo REPO]`` run in ``cwd`` (default: ``repo``) with the suite's environment
    plus ``env``; its exit code, standard output and standard error (bytes when ``stdin`` is bytes)."""
    argv = [*args, *(["--repo", str(repo)] if repo is not None else [])]
    folder = cwd if cwd is not None else repo
    if process:
        return subprocess.run(
            [*checkout_cli(), *argv],
            cwd=folder,
            env=test_env(**(env or {})),
            input=stdin,
            capture_output=True,
            text=not isinstance(stdin, bytes),
            timeout=timeout,
            check=False,
        )
    from coverage_cli.main import cli as application

    with _ONE_AT_A_TIME, contextlib.chdir(folder) if folder is not None else contextlib.nullcontext():
        result = CliRunner(env=env).invoke(
            application, argv, input=stdin, prog_name="coverage-mcp", catch_exceptions=True
        )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback, which the command line must never show: the test fails on it
    return subprocess.CompletedProcess(
        ["coverage-mcp", *argv], result.exit_code, result.stdout, result.stderr
    )


def cli_json(*args: str, **kwargs: object) -> dict:
    """``cli`` of a ``--json`` command that must succeed: its decoded envelope."""
    done = cli(*args, **kwargs)  # type: ignore[arg-type]
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
