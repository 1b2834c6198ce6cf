"""The handshake era's MCP sessions of one daemon: bounded in number, dropped when idle."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict

from .mcp import Conn


class Sessions:
    """Handshake-era sessions: bounded in number, dropped after an idle hour."""

    MAX = 1024
    IDLE_S = 3600.0

    def __init__(self) -> None:
        self._conns: OrderedDict[str, tuple[Conn, float]] = OrderedDict()

    def open(self, conn: Conn) -> str:
        self._expire()
        while len(self._conns) >= self.MAX:
            _, (oldest, _) = self._conns.popitem(last=False)
            oldest.cancel_all()
        session_id = secrets.token_hex(16)
        self._conns[session_id] = (conn, time.monotonic())
        return session_id

    def get(self, session_id: str) -> Conn | None:
        entry = self._conns.get(session_id)
        if entry is None or time.monotonic() - entry[1] > self.IDLE_S:
            return None
        self._conns[session_id] = (entry[0], time.monotonic())
        self._conns.move_to_end(session_id)
        return entry[0]

    def close(self, session_id: str) -> bool:
        entry = self._conns.pop(session_id, None)
        if entry is not None:
            entry[0].cancel_all()
        return entry is not None

    def close_all(self) -> None:
        for session_id in list(self._conns):
            self.close(session_id)

    def _expire(self) -> None:
        now = time.monotonic()
        for session_id, (_conn, seen) in list(self._conns.items()):
            if now - seen > self.IDLE_S:
                self.close(session_id)

    def __len__(self) -> int:
        return len(self._conns)
