"""``UnixHTTPConnection``: ``http.client`` over the daemon's Unix socket (``credentials.socket_path``).

A module of its own so that ``credentials`` (every client's, the stdio connector's hot path) does not import
``http.client``: a command that only reads the daemon's files never needs it (``credentials`` hands this
class out on first use).
"""

from __future__ import annotations

import http.client
import socket
from pathlib import Path


class UnixHTTPConnection(http.client.HTTPConnection):
    """``http.client`` over the daemon's Unix socket: the one channel our clients send secrets on."""

    def __init__(self, path: Path | str, timeout: float | None = None) -> None:
        # The Host header names the loopback daemon, which the Host guard accepts.
        super().__init__("localhost", timeout=timeout)
        self._socket_path = str(path)

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if self.timeout is not None:
                sock.settimeout(self.timeout)
            sock.connect(self._socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
