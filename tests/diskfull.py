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
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

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
