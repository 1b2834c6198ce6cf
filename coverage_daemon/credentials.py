"""The two secrets of a home and the private channel they travel on.

Loopback is an access boundary, not authorization: every user of the machine
can reach 127.0.0.1. So every route but ``/health`` needs one of two secrets,
each in a 0600 file inside the 0700 ``COVERAGE_MCP_HOME``:

- the **client token** (``client.token``): MCP calls, reads, imports. Sent as
  ``Authorization: Bearer <token>``. It lasts until ``coverage-mcp token
  rotate`` replaces it, so HTTP MCP clients can be configured with it (through
  an environment variable or their secret-input mechanism, never a literal).
- the **admin capability** (the ``capability`` of the locked ``daemon.lock``,
  new for every daemon start): settings, approvals, owner import, shutdown.
  Sent as ``x-coverage-mcp-capability``. Only the CLI (and later an
  authenticated dashboard session) holds it; the MCP surface never sees it.

Our own clients (the connector, the CLI, ``coverage_daemon.client``) send a
secret only over the daemon's Unix socket ``daemon.sock`` inside the 0700
home: nobody but this user can create or reach it, so a listener another user
bound on the shared TCP port while the daemon was down never receives one.

Stdlib only: the stdio connector imports this on its hot path.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path
from typing import Any

TOKEN_FILE = "client.token"
SOCKET_FILE = "daemon.sock"
AUTHORIZATION = "Authorization"
# sun_path is 108 bytes on Linux and 104 on macOS, the terminating NUL included.
MAX_SOCKET_PATH = 103


class HomeError(Exception):
    """The home is not a private directory of this user (``store_unavailable``)."""

    def __init__(self, message: str, suggestion: str) -> None:
        super().__init__(message)
        self.message = message
        self.suggestion = suggestion


def private_home(home: Path) -> Path:
    """``home`` created 0700 if absent; refused when it is a link, not a directory, or someone else's."""
    try:
        os.mkdir(home, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(home.parent, exist_ok=True)
        return private_home(home)
    info = os.lstat(home)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise HomeError(
            f"{home} is not a directory (a symbolic link or another file)",
            "Point COVERAGE_MCP_HOME at a real directory of your own.",
        )
    if info.st_uid != os.geteuid():
        raise HomeError(
            f"{home} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()})",
            "Point COVERAGE_MCP_HOME at a directory you own.",
        )
    if info.st_mode & 0o077:
        os.chmod(home, 0o700)
    return home


def _read_private(path: Path) -> str | None:
    """A secret file's text, opened without following links; None when absent."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HomeError(
            f"cannot read {path}: {exc.strerror}",
            "Remove it if it is a symbolic link; `coverage-mcp token rotate` writes a new one.",
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise HomeError(
                f"{path} is not a private (0600) file of yours",
                "Run `coverage-mcp token rotate` to write a new one.",
            )
        return os.read(fd, 4096).decode("ascii", "replace").strip() or None
    finally:
        os.close(fd)


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` atomically with a 0600 file holding ``text`` (never through a link)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            _write_all(fd, text.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as error:
        # A full disk (or any refusal) leaves the old file as it was and no half-written copy.
        tmp.unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(path)) from error


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:  # a short write (a disk filling up) is not the whole secret
        view = view[os.write(fd, view) :]


def client_token(home: Path, *, create: bool = True) -> str | None:
    """The home's client token, created on first use (by the daemon, the CLI or the connector)."""
    path = private_home(home) / TOKEN_FILE if create else home / TOKEN_FILE
    token = _read_private(path)
    if token is None and create:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:  # another process created it first: use theirs
            return _read_private(path)
        try:
            try:
                token = secrets.token_urlsafe(32)
                _write_all(fd, token.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:  # never leave an empty or partial token for the next reader
            path.unlink(missing_ok=True)
            raise OSError(error.errno, error.strerror, str(path)) from error
    return token


def rotate_client_token(home: Path) -> str:
    """A new client token; the old one stops working at once (the daemon reads the file on change)."""
    token = secrets.token_urlsafe(32)
    write_private(private_home(home) / TOKEN_FILE, token)
    return token


def socket_path(home: Path) -> Path:
    return home / SOCKET_FILE


def bearer(token: str) -> dict[str, str]:
    return {AUTHORIZATION: f"Bearer {token}"}


def __getattr__(name: str) -> Any:
    """``UnixHTTPConnection``, from ``unix_http`` on first use: a command that reads the daemon's files to
    learn whether it owns a store (``rest_client.owning_daemon``) and then opens the store itself never
    imports ``http.client`` (and the ``email`` and ``ssl`` modules it brings)."""
    if name == "UnixHTTPConnection":
        from .unix_http import UnixHTTPConnection

        return UnixHTTPConnection
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
