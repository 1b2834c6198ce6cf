"""A disk that fills up: a small tmpfs mounted in a private mount namespace, shared by every test that needs one.

Independent of ``conftest.py``: import it and call ``run_on_small_tmpfs``. A
tmpfs needs root (``unshare -m``) or an unprivileged user plus mount namespace
(``unshare -rm``); the program given runs inside that namespace with the tmpfs
mounted on the chosen folder, so nothing outside the namespace ever sees the
mount (and nothing needs unmounting). Where neither is possible the test
skips naming why, except under ``CI=true``, where it must run and fails.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from .lineserver import LineServer

# Mounts the tmpfs ($1: size, $2: folder), then becomes the program (the rest).
_MOUNT_THEN_EXEC = 'mount -t tmpfs -o "size=$1,mode=0700" tmpfs "$2" && shift 2 && exec "$@"'


def _namespace() -> list[str]:
    """The ``unshare`` words that give a private mount namespace this user may mount a tmpfs in."""
    unshare = shutil.which("unshare") or "unshare"
    if os.geteuid() == 0:
        return [unshare, "--mount", "--propagation", "private"]
    return [unshare, "--map-root-user", "--mount", "--propagation", "private"]


@functools.cache
def why_unavailable() -> str | None:
    """None when a small tmpfs can be mounted here, else why not."""
    if not sys.platform.startswith("linux"):
        return f"a private tmpfs needs Linux mount namespaces ({sys.platform})"
    if shutil.which("unshare") is None:
        return "needs unshare (util-linux) for a private mount namespace"
    with tempfile.TemporaryDirectory() as folder:
        try:
            probe = subprocess.run(
                [*_namespace(), "sh", "-c", _MOUNT_THEN_EXEC, "sh", "1m", folder, "true"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"unshare could not run: {exc}"
    if probe.returncode != 0:
        who = "as root" if os.geteuid() == 0 else "without root (unprivileged user namespaces may be off)"
        return f"a tmpfs cannot be mounted {who}: {probe.stderr.strip()[:300]}"
    return None


def require() -> None:
    """Skip (or under CI=true fail) the test, naming why, when no small tmpfs can be mounted."""
    why = why_unavailable()
    if why is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and the disk-full fixture cannot run: {why}")
    pytest.skip(f"the disk-full fixture cannot run here: {why}")


def run_on_small_tmpfs(
    folder: Path,
    argv: Sequence[str],
    *,
    size: str = "16m",
    env: Mapping[str, str] | None = None,
    timeout: float = 600.0,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` with a ``size`` tmpfs on ``folder`` (made empty), inside a private mount namespace."""
    require()
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [*_namespace(), "sh", "-c", _MOUNT_THEN_EXEC, "sh", size, str(folder), *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ if env is None else env),
        check=False,
    )


class Forks(LineServer):
    """One process inside a private mount namespace, as ``run_on_small_tmpfs``'s, that runs each job in a fork
    of itself on a small tmpfs of the job's own: the namespace, the interpreter and the imports are paid once
    for all the jobs instead of once per job, and each job is still a process of its own, with the tmpfs
    mounted under it, its own environment and exit status. ``argv`` starts the server (``serve`` in it,
    which reads one JSON job per line and answers each with its exit status); ``with`` stops it."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> None:
        require()
        self.process = subprocess.Popen(
            [*_namespace(), *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ if env is None else env),
        )

    def run(
        self, folder: Path, argv: Sequence[str], *, size: str, env: Mapping[str, str], output: Path
    ) -> subprocess.CompletedProcess[str]:
        """Job ``argv`` (the server's to read) with a ``size`` tmpfs on ``folder`` and the environment ``env``;
        its standard output and error are written into ``output`` (a folder off the tmpfs) and returned."""
        folder.mkdir(parents=True, exist_ok=True)
        output.mkdir(parents=True, exist_ok=True)
        out, err = output / "stdout", output / "stderr"
        job = {"folder": str(folder), "size": size, "argv": list(argv), "env": dict(env)}
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({**job, "stdout": str(out), "stderr": str(err)}) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise AssertionError(f"the namespace's server ended (exit status {self.process.wait()})")
        return subprocess.CompletedProcess(
            list(argv),
            json.loads(answer)["returncode"],
            out.read_text(errors="replace"),
            err.read_text(errors="replace"),
        )


JOB_TIMEOUT_S = 600  # a generous bound on one job (run_on_small_tmpfs's): a slow machine is no failure


def serve(job: Callable[[list[str]], int]) -> None:
    """The server side of ``Forks``, run inside the namespace: for each job on standard input it mounts the
    job's tmpfs and forks; the fork takes the job's environment and output files and exits with
    ``job(argv)`` (1 on an exception, its traceback on its standard error); the tmpfs is unmounted once it
    has exited. Whatever the server imported before is the forks' for free:
    it must start no thread first (a fork copies only the thread that forks)."""
    for line in sys.stdin:
        request = json.loads(line)
        folder = request["folder"]
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={request['size']},mode=0700", "tmpfs", folder], check=True
        )
        pid = os.fork()
        if pid == 0:  # the job
            status = 1
            try:
                signal.alarm(JOB_TIMEOUT_S)
                os.environ.clear()
                os.environ.update(request["env"])
                with (
                    open(os.devnull) as nothing,
                    open(request["stdout"], "w") as out,
                    open(request["stderr"], "w") as err,
                ):
                    os.dup2(nothing.fileno(), 0)
                    os.dup2(out.fileno(), 1)
                    os.dup2(err.fileno(), 2)
                    sys.stdin, sys.stdout, sys.stderr = nothing, out, err
                    try:
                        status = job(request["argv"])
                    except BaseException:
                        traceback.print_exc()
                    out.flush()
                    err.flush()
            finally:
                os._exit(status)
        _, waited = os.waitpid(pid, 0)
        subprocess.run(["umount", "--lazy", folder], check=False)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(waited)}), flush=True)
