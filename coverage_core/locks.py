"""OS-backed leases with holder metadata (portalocker / flock).

A lease is an exclusive advisory lock on ``<file>.lock``, held through a live
file descriptor for as long as its owner runs. The holder writes its metadata
(pid, instance id, executable, version, ...) into the locked file, mode 0600.
A crashed owner's lock disappears with its process; the metadata file stays
and is never taken as proof of ownership, and nothing ever deletes it.
The lock file is opened without following a link and must be our own regular
file: a committed symlink or a directory in its place is ``store_unavailable``.

A store's holder also says what it is (``owner``: cli, library or daemon, and
``command``: ``coverage-mcp ingest``, ``notebook kernel``, ``python x.py``), so
whoever waits for it, or is refused, can name it and say how it is released.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from . import safefs
from .errors import CoverageError, ErrorCode
from .version import version

VERSION = version()


# A lease's file beside what it guards: ``<file>.lock``.
LEASE_SUFFIX = ".lock"


def lease_of(path: Path) -> Path:
    """The lease file of ``path`` (a project store's database)."""
    return path.with_name(path.name + LEASE_SUFFIX)


def this_process() -> tuple[str, str]:
    """(owner, command) of this process for a lease's metadata: a coverage-mcp command is ``cli``
    (its command the subcommand), anything else that opens a store is ``library`` (a notebook
    kernel, or the script). The daemon names itself."""
    argv = sys.argv or [""]
    script = Path(argv[0] or "python")
    words = [a for a in argv[1:] if not a.startswith("-")]
    if script.name == "coverage-mcp" or script.parts[-2:] == ("coverage_cli", "__main__.py"):
        return "cli", " ".join(["coverage-mcp", *words[:1]])
    if "ipykernel" in sys.modules:
        return "library", "notebook kernel"
    return "library", "python" if script.name in ("", "-c", "python") else f"python {script.name}"


def describe_holder(holder: dict[str, Any]) -> str:
    """``pid 123 (coverage-mcp ingest)``: who holds a lease, from its metadata."""
    pid = holder.get("pid", "unknown")
    if holder.get("owner") == "daemon":
        return f"pid {pid} (the coverage-mcp daemon)"
    what = holder.get("command") or holder.get("owner")
    return f"pid {pid} ({what})" if what else f"pid {pid}"


def how_to_release(holder: dict[str, Any]) -> str:
    """How a store's holder lets go of it, for the message of whoever waits (in people's terms)."""
    owner, pid = holder.get("owner"), holder.get("pid", "unknown")
    if owner == "daemon":
        return "the daemon keeps its stores until it stops (`coverage-mcp stop`)"
    if owner == "cli":
        return "a coverage-mcp command releases it when it ends"
    return (
        f"a notebook or Python session releases it when its Project is closed (the end of its "
        f"`with open_project(...)` block, or project.close()) or when the process ends (pid {pid}; "
        f"in Jupyter: shut down the kernel)"
    )


def instance_metadata(**extra: Any) -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "instance_id": secrets.token_hex(8),
        "executable": sys.executable,
        "version": VERSION,
        "started_at": time.time(),
        **extra,
    }


class Lease:
    """An exclusive lease on ``path`` (the ``.lock`` file itself)."""

    def __init__(self, path: Path, handle: Any, metadata: dict[str, Any]) -> None:
        self.path = path
        self._handle = handle
        self.metadata = metadata

    @classmethod
    def acquire(cls, path: Path, metadata: dict[str, Any], *, what: str, suggestion: str) -> Lease:
        """The lease, or ``store_locked`` naming the holder (``describe_holder``) with ``suggestion``."""
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = safefs.open_file(path, os.O_RDWR | os.O_CREAT, 0o600)
        handle = os.fdopen(fd, "r+")
        import portalocker  # the holder's side only: a look at a lease (``is_held``) needs none of it

        try:
            portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
        except portalocker.exceptions.LockException:
            holder = read_metadata(path)
            handle.close()
            raise CoverageError(
                ErrorCode.STORE_LOCKED,
                f"{what} is held by another process, {describe_holder(holder)}",
                suggestion,
                {"lock": str(path), "holder": {k: v for k, v in holder.items() if k != "capability"}},
            ) from None
        os.fchmod(fd, 0o600)  # the descriptor, never the path: a path could be swapped for a link
        lease = cls(path, handle, metadata)
        lease._write()
        return lease

    def update(self, **fields: Any) -> None:
        """Rewrite the metadata in the held file; the lock stays held throughout."""
        self.metadata = {**self.metadata, **fields}
        self._write()

    def _write(self) -> None:
        # Write over the old text, then cut what is left of it: a reader never
        # meets an empty file, only the old or the new metadata (plus a tail
        # for an instant, which read_metadata treats as unreadable).
        handle = self._handle
        handle.seek(0)
        handle.write(json.dumps(self.metadata))
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())

    def release(self) -> None:
        if self._handle is not None:
            import portalocker

            try:
                portalocker.unlock(self._handle)
            finally:
                self._handle.close()
                self._handle = None

    @property
    def held(self) -> bool:
        return self._handle is not None

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_metadata(path: Path) -> dict[str, Any]:
    """What the (last) holder wrote; ``{}`` when absent or unreadable."""
    try:
        with os.fdopen(safefs.open_file(path, os.O_RDONLY), "r") as handle:
            metadata: dict[str, Any] = json.loads(handle.read() or "{}")
            return metadata
    except (OSError, ValueError, CoverageError):
        return {}


def is_held(path: Path) -> bool:
    """Whether some live process holds the lease on ``path`` right now. On POSIX, where portalocker's lock is
    ``fcntl.flock``, with ``flock`` itself: a command that only looks at a lease to route a read to the
    daemon then never imports portalocker (its version module imports ``importlib.metadata``, ~10 ms)."""
    try:
        with os.fdopen(safefs.open_file(path, os.O_RDONLY), "r") as handle:
            try:
                import fcntl
            except ImportError:  # not POSIX: portalocker's own lock
                import portalocker

                try:
                    portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
                except portalocker.exceptions.LockException:
                    return True
                portalocker.unlock(handle)
                return False
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held (EWOULDBLOCK), as portalocker's LockException says for any flock error
                return True
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return False
    except (OSError, CoverageError):
        return False
