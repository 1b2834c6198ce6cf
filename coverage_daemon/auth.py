"""Who may call the daemon: the access level of each route, the two secrets, the peer's uid.

Each route declares one ``Access`` (``app.ROUTES``): ``PUBLIC`` (``/health``
only), ``CLIENT`` (the client token) or ``ADMIN`` (the client token *and* the
admin capability); the dashboard's routes use the browser session
(``BrowserSessions``): ``TICKET`` (the one-time link that starts a session),
``SESSION`` (the session cookie: the page, its assets, its event stream),
``SESSION_READ`` (the cookie or the client token: the aliases of the
dashboard's rows, which the CLI's static report reads too; the row then
decides, as for ``ROW``); ``ROW`` (an operation's route: the
client token or a session gets past the guard, then ``principals`` tells the
row what the request proves and the row admits it or not). ``Authorizer.check`` runs in the app's guard before every
handler and raises ``forbidden`` (403) otherwise. On Linux the uid of the
connection's peer is an extra layer: a loopback TCP peer owned by another uid
is refused even with a stolen token (one netlink sock_diag lookup of the
peer's socket; ``/proc/net/tcp{,6}`` when netlink is unavailable), and so is a
Unix-socket peer (``SO_PEERCRED``). Where the uid cannot be read, the
secrets alone decide.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import ipaddress
import os
import secrets
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from aiohttp import web

from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.principals import Principal

from .credentials import AUTHORIZATION, TOKEN_FILE, client_token
from .identity import CAPABILITY_HEADER


class Access(enum.Enum):
    PUBLIC = "public"
    CLIENT = "client"
    ADMIN = "admin"
    TICKET = "ticket"  # the dashboard's one-time link: the handler redeems it
    SESSION = "session"  # the dashboard session cookie only (the page, its assets, its event stream)
    SESSION_READ = "session_read"  # the session cookie, or the client token (the dashboard's data reads)
    # An operation's row (``/ops/{name}``): any credential gets past the guard, the row's principals decide.
    ROW = "row"


def _same(offered: str, expected: str) -> bool:
    # Bytes, not str: compare_digest refuses non-ASCII text, and a header is
    # attacker-chosen (a non-ASCII byte must be a 403, never a 500).
    return hmac.compare_digest(offered.encode("utf-8", "replace"), expected.encode("utf-8"))


def forbidden(message: str, suggestion: str) -> CoverageError:
    return CoverageError(ErrorCode.FORBIDDEN, message, suggestion)


class Authorizer:
    """The daemon's view of its home's secrets; the token file is re-read when it changes (``token rotate``)."""

    def __init__(self, home: Path, capability: str) -> None:
        self.home = home
        self.capability = capability
        self.sessions = BrowserSessions()
        self._token = client_token(home) or ""
        self._stamp = self._stat()

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            info = os.stat(self.home / TOKEN_FILE, follow_symlinks=False)
        except OSError:
            return None
        return (info.st_ino, info.st_mtime_ns, info.st_size)

    def token(self) -> str:
        stamp = self._stat()
        if stamp != self._stamp:
            self._token = client_token(self.home) or ""
            self._stamp = self._stat()
        return self._token

    def client_ok(self, request: web.Request) -> bool:
        scheme, _, offered = request.headers.get(AUTHORIZATION, "").partition(" ")
        token = self.token()
        return scheme.lower() == "bearer" and bool(token) and _same(offered.strip(), token)

    def admin_ok(self, request: web.Request) -> bool:
        offered = request.headers.get(CAPABILITY_HEADER)
        return offered is not None and _same(offered, self.capability)

    def principals(self, request: web.Request) -> frozenset[Principal]:
        """What the request proves: the client token (CLIENT), with the admin capability too (ADMIN), a
        session cookie (SESSION_READ), with its CSRF token on a POST (SESSION_WRITE)."""
        found: set[Principal] = set()
        if self.client_ok(request):
            found.add(Principal.CLIENT)
            if self.admin_ok(request):
                found.add(Principal.ADMIN)
        csrf = self.sessions.session_of(request)
        if csrf is not None:
            found.add(Principal.SESSION_READ)
            offered = request.headers.get(CSRF_HEADER)
            if request.method == "POST" and offered is not None and _same(offered, csrf):
                found.add(Principal.SESSION_WRITE)
        return frozenset(found)

    def check(self, request: web.Request, access: Access) -> None:
        if access is Access.PUBLIC:
            return
        uid = peer_uid(request)
        if uid is not None and uid not in (os.geteuid(), 0):
            raise forbidden(
                f"this daemon serves uid {os.geteuid()} only; the caller is uid {uid}",
                "Run your own daemon: each user has their own COVERAGE_MCP_HOME and port.",
            )
        if access is Access.TICKET:
            return  # the handler redeems the one-time ticket (BrowserSessions.redeem) or refuses
        if access in (Access.SESSION, Access.SESSION_READ, Access.ROW) and self.sessions.session_of(request):
            return
        if access is Access.SESSION_READ and self.client_ok(request):
            return
        if access in (Access.SESSION, Access.SESSION_READ):
            raise forbidden(
                "this page needs a dashboard session",
                "Open the dashboard with `coverage-mcp dashboard`: it signs this browser in "
                "through a one-time link.",
            )
        if not self.client_ok(request):
            raise forbidden(
                "this request needs the client token (Authorization: Bearer ...)",
                f'Read it from {self.home / TOKEN_FILE}, e.g. export COVERAGE_MCP_TOKEN="$(cat '
                f'{self.home / TOKEN_FILE})" and configure your MCP client to send '
                "'Authorization: Bearer ${COVERAGE_MCP_TOKEN}'; `coverage-mcp connect` does this for you.",
            )
        if access is Access.ADMIN and not self.admin_ok(request):
            raise forbidden(
                f"{request.method} {request.path} changes the daemon and needs its admin capability",
                "Use the coverage-mcp command line (it reads the capability from the daemon's lock file); "
                "MCP clients cannot do this.",
            )


# -- the dashboard's browser sessions ------------------------------------------------------

SESSION_COOKIE = "coverage_mcp_session"
CSRF_HEADER = "x-coverage-mcp-csrf"
TICKET_TTL_S = 120.0
SESSION_TTL_S = 12 * 3600.0
MAX_TICKETS = 32
MAX_SESSIONS = 64


def _key(secret: str) -> str:
    # Looked up by digest: a dict lookup on the secret itself would compare it byte by byte.
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


class BrowserSessions:
    """One-time tickets and the sessions they start; in memory only, so a daemon restart signs everyone out.

    ``coverage-mcp dashboard`` asks (with the admin capability) for a ticket,
    writes the link into a 0600 file of the 0700 home and opens that file; the
    browser follows it to ``/session``, which redeems the ticket once (within
    ``TICKET_TTL_S``) for an HttpOnly, SameSite=Strict session cookie. Every
    session has its own CSRF token, which the page sends with each write.
    """

    def __init__(self) -> None:
        self._tickets: dict[str, float] = {}
        self._sessions: dict[str, tuple[str, float]] = {}  # digest of the cookie -> (csrf, expiry)
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        self._tickets = {k: t for k, t in self._tickets.items() if t > now}
        self._sessions = {k: v for k, v in self._sessions.items() if v[1] > now}

    def mint_ticket(self) -> str:
        ticket = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            while len(self._tickets) >= MAX_TICKETS:
                self._tickets.pop(min(self._tickets, key=self._tickets.__getitem__))
            self._tickets[_key(ticket)] = now + TICKET_TTL_S
        return ticket

    def redeem(self, ticket: str | None) -> tuple[str, str]:
        """(session cookie, CSRF token) for a valid unused ticket, which is then spent; else ``forbidden``."""
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            if not ticket or self._tickets.pop(_key(ticket), None) is None:
                raise forbidden(
                    "this dashboard link is not valid: it was used already, has expired, or was "
                    "made by another daemon",
                    "Run `coverage-mcp dashboard` again for a new link (each opens once, within "
                    f"{int(TICKET_TTL_S)} s).",
                )
            while len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(min(self._sessions, key=lambda k: self._sessions[k][1]))
            cookie, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
            self._sessions[_key(cookie)] = (csrf, now + SESSION_TTL_S)
        return cookie, csrf

    def session_of(self, request: web.Request) -> str | None:
        """The CSRF token of the request's valid session; None without one."""
        cookie = request.cookies.get(SESSION_COOKIE)
        if not cookie:
            return None
        with self._lock:
            found = self._sessions.get(_key(cookie))
        return found[0] if found is not None and found[1] > time.monotonic() else None


# -- the peer's uid -------------------------------------------------------------------------


def peer_uid(request: web.Request) -> int | None:
    """The uid owning the other end of the request's connection; None where it cannot be known."""
    transport = request.transport
    if transport is None:
        return None
    sock = transport.get_extra_info("socket")
    if sock is None:
        return None
    if sock.family == socket.AF_UNIX:
        return _unix_peer_uid(sock)
    if sys.platform != "linux":
        return None
    peer, local = transport.get_extra_info("peername"), transport.get_extra_info("sockname")
    if not peer or not local:
        return None
    return _tcp_peer_uid(peer[0], peer[1], local[0], local[1])


def _unix_peer_uid(sock: socket.socket) -> int | None:
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    return struct.unpack("3i", creds)[1]


# Linux sock_diag (netlink): one exact lookup of the peer's socket by its 4-tuple, in
# microseconds. Reading /proc/net/tcp instead costs milliseconds per request (the
# kernel prints every socket, TIME_WAIT ones included), so it is only the fallback.
_NETLINK_SOCK_DIAG, _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST = 4, 20, 1
_NO_COOKIE = 0xFFFFFFFF
_UID_AT = 16 + 4 + 48 + 12  # nlmsghdr, then inet_diag_msg: 4 bytes, the socket id, expires/rqueue/wqueue


def _tcp_peer_uid(peer_host: str, peer_port: int, local_host: str, local_port: int) -> int | None:
    # The peer's own socket has the peer as its source and us as its destination.
    try:
        return _diag_uid(peer_host, peer_port, local_host, local_port)
    except OSError:
        return _proc_uid(peer_host, peer_port, local_host, local_port)


def _diag_uid(peer_host: str, peer_port: int, local_host: str, local_port: int) -> int | None:
    family = socket.AF_INET6 if ":" in peer_host else socket.AF_INET

    def packed(host: str) -> bytes:
        return ipaddress.ip_address(host.split("%", 1)[0]).packed.ljust(16, b"\0")

    request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF)
    request += struct.pack(">HH", peer_port, local_port) + packed(peer_host) + packed(local_host)
    request += struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
    message = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0) + request
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as link:
        link.settimeout(1.0)
        link.sendto(message, (0, 0))
        answer = link.recv(65536)
    _, kind = struct.unpack_from("=IH", answer)
    if kind != _SOCK_DIAG_BY_FAMILY or len(answer) < _UID_AT + 4:
        return None  # an error message: no such socket (it has gone)
    return struct.unpack_from("=I", answer, _UID_AT)[0]


def _proc_address(host: str, port: int) -> str:
    """An address as ``/proc/net/tcp{,6}`` prints it: the address in host byte order, hex, then the port."""
    packed = ipaddress.ip_address(host.split("%", 1)[0]).packed
    words = struct.unpack(f"={len(packed) // 4}I", packed)
    return "".join(f"{w:08X}" for w in words) + f":{port:04X}"


def _proc_uid(peer_host: str, peer_port: int, local_host: str, local_port: int) -> int | None:
    want = (_proc_address(peer_host, peer_port), _proc_address(local_host, local_port))
    table = "/proc/net/tcp6" if ":" in peer_host else "/proc/net/tcp"
    try:
        with open(table) as rows:
            next(rows, None)
            for row in rows:
                fields = row.split()
                if len(fields) > 7 and (fields[1], fields[2]) == want:
                    return int(fields[7])
    except OSError:
        return None
    return None
