"""The stdio connector: ``coverage-mcp connect [--repo PATH]`` (alias ``stdio``).

An MCP client launches this process and speaks newline-delimited JSON-RPC on
its stdin and stdout; every message is forwarded, each on its own thread, to
the shared daemon's ``POST /mcp`` with the repository in
``x-coverage-mcp-repo``. The exchange carries the client token, so it goes
over the daemon's Unix socket in the 0700 home, never the shared TCP port
(which only answers the secret-free ``/health`` the launcher verifies).
Messages read after a handshake ``initialize`` wait until its answer has
arrived (they need the session it opens), then go concurrently again. Owned
here: the stdio framing, the MCP session the connector keeps on the client's
behalf (re-established after a daemon restart), the replay rule,
cancellation and the exit on end of input. Finding, starting and handing off
the daemon is ``launcher``'s.

Stdlib only: this runs on every MCP session start, so importing pydantic,
aiohttp or coverage_core here would cost the person most of a second.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import sys
import threading
import time

from coverage_core import nesting
from coverage_core.errors import CoverageError, ErrorCode

from .credentials import socket_path
from .identity import DAEMON_LOG, REPO_HEADER
from .launcher import Daemon, Launcher, Settings, usage
from .rpcid import INVALID_ID_MESSAGE, invalid_id
from .unix_http import UnixHTTPConnection

TYPE_CHECKING = False  # typing costs the connector's start; mypy still reads the block below
if TYPE_CHECKING:
    from collections.abc import Callable

USAGE = """\
usage: coverage-mcp connect [--repo PATH]

Bridge an MCP client (stdio) to the coverage-mcp daemon, starting it if needed.
PATH is the repository to serve (default: the current directory).

Example: claude mcp add coverage -- coverage-mcp connect --repo /path/to/repo
"""

MODERN_META_KEY = "io.modelcontextprotocol/protocolVersion"
NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
# At end of input, answers still in flight get this long to arrive (a piped
# script wants them) and the session DELETE the rest of the second.
EXIT_GRACE_S = 0.5
DELETE_TIMEOUT_S = 0.3

# JSON-RPC codes; -32000..-32019 are implementation-defined.
PARSE_ERROR, INVALID_REQUEST, INTERNAL_ERROR = -32700, -32600, -32603
DAEMON_UNAVAILABLE = -32001  # no usable daemon (unreachable, or refused by a check)
TRANSPORT_INTERRUPTED = -32003  # delivery is uncertain, so the request was not replayed
BAD_DAEMON_REPLY = -32004  # the daemon's HTTP answer carried no JSON-RPC response


def run_connector(argv: list[str]) -> int:
    """Serve stdin/stdout until end of input; the exit code of ``coverage-mcp connect``."""
    try:
        repo = _parse_args(argv)
        settings = Settings.from_env()
    except CoverageError as error:
        _log_error(error)
        return 2 if error.code == ErrorCode.INVALID_ARGUMENT else 1
    if repo is None:
        sys.stdout.write(USAGE)
        return 0
    return Bridge(settings, repo).run()


def _parse_args(argv: list[str]) -> str | None:
    """The absolute repository path; None when help was asked for."""
    repo = "."
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("-h", "--help"):
            return None
        if arg == "--repo" and args:
            repo = args.pop(0)
        elif arg.startswith("--repo="):
            repo = arg.split("=", 1)[1]
        else:
            raise usage(f"unexpected argument {arg!r}", USAGE.strip(), argument=arg)
    path = os.path.abspath(os.path.expanduser(repo))
    if not os.path.isdir(path):
        raise usage(
            f"--repo {repo!r} is not a directory",
            "Pass the path of a repository's checkout.",
            argument="--repo",
        )
    return path


def _log_error(error: CoverageError) -> None:
    """A failure as the person reads it on stderr: its code, message and suggestion."""
    text = f"error [{error.code.value}]: {error.message}"
    if error.suggestion:
        text += f"\n  suggestion: {error.suggestion}"
    _log(text)


def _log(text: str) -> None:
    # os.write, not sys.stderr: a daemon thread still writing at interpreter
    # exit must not hold the buffered stream's lock.
    try:
        os.write(2, f"coverage-mcp connect: {text}\n".encode("utf-8", "replace"))
    except OSError:
        pass


class Interrupted(Exception):
    """The exchange failed after the request may have reached the daemon."""


class Reply:
    """One HTTP answer from ``/mcp``."""

    __slots__ = ("body", "content_type", "session_id", "status")

    def __init__(self, status: int, session_id: str | None, content_type: str, body: bytes) -> None:
        self.status = status
        self.session_id = session_id
        self.content_type = content_type
        self.body = body


class Flight:
    """A request being forwarded: cancelling a stateless one closes its HTTP exchange."""

    __slots__ = ("cancelled", "conn", "modern")

    def __init__(self, modern: bool) -> None:
        self.modern = modern
        self.conn: UnixHTTPConnection | None = None
        self.cancelled = False

    def abort(self) -> None:
        sock = self.conn.sock if self.conn is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Session:
    """The handshake-era MCP session held with the daemon for the client.

    The cached ``initialize`` (and ``notifications/initialized``) are what the
    connector replays when a restarted daemon no longer knows the session.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.id: str | None = None
        self.version: str | None = None
        self.initialize: dict[str, object] | None = None
        self.initialized: dict[str, object] | None = None


class Link:
    """The daemon in use, found once and found again after it went away."""

    def __init__(self, settings: Settings, log: Callable[[str], None]) -> None:
        self._settings = settings
        self._log = log
        self._launcher: Launcher | None = None
        self._lock = threading.Lock()
        self._daemon: Daemon | None = None
        self._error: CoverageError | None = None
        self._finished = 0  # connection attempts completed
        self.served = False

    def get(self, stale: Daemon | None = None) -> Daemon:
        """The current daemon, (re)connecting when there is none or it is ``stale``.

        Requests that queued behind a failed attempt share its error instead
        of each waiting out another start timeout.
        """
        seen = self._finished
        with self._lock:
            if self._daemon is not None and self._daemon is not stale:
                return self._daemon
            if self._finished != seen and self._error is not None:
                raise self._error  # the attempt this request waited for failed
            try:
                if self._launcher is None:
                    self._launcher = Launcher(self._settings, self._log)
                self._daemon = self._launcher.connect()
            except CoverageError as error:
                if self._error is None or self._error.message != error.message:  # say it once
                    _log_error(error)
                self._daemon, self._error = None, error
                raise
            finally:
                self._finished += 1
            self._error = None
            self.served = True
            return self._daemon

    def suspect(self, daemon: Daemon) -> None:
        """After an ambiguous failure, the next request verifies the daemon again."""
        with self._lock:
            if self._daemon is daemon:
                self._daemon = None

    @property
    def failed(self) -> bool:
        return self._error is not None

    def current(self) -> Daemon | None:
        return self._daemon

    def auth_headers(self) -> dict[str, str]:
        """The client token's header; raises CoverageError when the home's token cannot be read."""
        with self._lock:
            if self._launcher is None:
                self._launcher = Launcher(self._settings, self._log)
            launcher = self._launcher
        return launcher.auth_headers()


class Bridge:
    """One connector process: stdin lines in, daemon answers out."""

    def __init__(self, settings: Settings, repo: str) -> None:
        self.settings = settings
        self.repo = os.fsencode(repo)  # header bytes: a non-ASCII path survives as UTF-8
        self.link = Link(settings, _log)
        self.session = Session()
        self._out = threading.Lock()
        self._flights: dict[str, Flight] = {}
        self._flights_lock = threading.Lock()
        self._closed = threading.Event()
        # Set once the latest handshake initialize has its answer: messages
        # read after it wait here, since they need the session it opens.
        self._handshake = threading.Event()
        self._handshake.set()

    def run(self) -> int:
        # Find the daemon while the client is still writing its first message.
        threading.Thread(target=self._warm_up, name="discover", daemon=True).start()
        stdin = sys.stdin.buffer
        while line := stdin.readline():
            if line.strip():
                self._receive(line)
        return self._close()

    def _warm_up(self) -> None:
        try:
            self.link.get()
        except CoverageError:
            pass  # logged by the link; each request answers it

    # -- input ---------------------------------------------------------------
    def _receive(self, line: bytes) -> None:
        if nesting.too_deep(line):
            self._reject(PARSE_ERROR, f"Parse error: JSON nested deeper than {nesting.MAX_DEPTH} levels")
            return
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as error:
            self._emit(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": PARSE_ERROR, "message": f"Parse error: {error}"},
                }
            )
            return
        if not isinstance(message, dict):
            self._emit(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": INVALID_REQUEST,
                        "message": "Invalid Request: a message is one JSON object (no batches)",
                    },
                }
            )
            return
        if invalid_id(message):  # NaN, Infinity, 1e400...: never echoed (it would not be JSON)
            self._reject(INVALID_REQUEST, INVALID_ID_MESSAGE)
            return
        method = message.get("method")
        if method == "notifications/cancelled" and self._cancel(message):
            return
        key = _key(message["id"]) if "method" in message and "id" in message else None
        modern = _modern_version(message) is not None
        if key is not None:
            with self._flights_lock:
                self._flights[key] = Flight(modern)
        # Only the reader thread swaps the gate, so each message sees the one
        # in force when it was read: its own initialize's answer, never a later one.
        wait_for = None if modern else self._handshake
        opens = None
        if method == "initialize" and not modern:
            opens = self._handshake = threading.Event()
        threading.Thread(
            target=self._forward, args=(message, line, key, wait_for, opens), daemon=True
        ).start()

    def _cancel(self, message: dict[str, object]) -> bool:
        """Mark the cancelled request; True when the notification must not be forwarded.

        A cancelled request gets no answer (the spec's rule; the daemon's
        -32800 is dropped). A stateless request is cancelled by closing its
        HTTP exchange, since that era defines no notifications over HTTP.
        """
        params = message.get("params")
        target = params.get("requestId") if isinstance(params, dict) else None
        if not isinstance(target, (str, int)) or isinstance(target, bool):
            return False  # names no request of ours; the daemon ignores it as well
        with self._flights_lock:
            flight = self._flights.get(_key(target))
        if flight is not None:
            flight.cancelled = True
            if flight.modern:
                flight.abort()
                return True
        return self.session.id is None  # no session: nothing on the daemon to cancel

    # -- forwarding ----------------------------------------------------------
    def _forward(
        self,
        message: dict[str, object],
        line: bytes,
        key: str | None,
        wait_for: threading.Event | None = None,
        opens: threading.Event | None = None,
    ) -> None:
        try:
            if wait_for is not None:
                # Set when the initialize's forwarding ends, answered or failed.
                wait_for.wait()
                flight = self._flight(key)
                if flight is not None and flight.cancelled:
                    return  # cancelled while it waited: never sent, never answered
            reply = self._deliver(message, line.strip(), key)
            if key is not None:
                self._answer(message, key, reply)
        except CoverageError as error:  # the link has told the person on stderr already
            if key is not None:
                self._fail(key, message, DAEMON_UNAVAILABLE, error.message, error.to_dict())
        except ConnectionRefusedError:  # again, after a restart: still not delivered
            log = self.settings.home / DAEMON_LOG
            refused = CoverageError(
                ErrorCode.DAEMON_UNREACHABLE,
                "the daemon refused the connection; nothing was delivered",
                f"Retry; if it persists, look at {log}.",
                {"delivered": False},
            )
            self._fail(key, message, DAEMON_UNAVAILABLE, refused.message, refused.to_dict())
        except Interrupted as error:
            interrupted = CoverageError(
                ErrorCode.DAEMON_UNREACHABLE,
                f"the daemon connection was interrupted: {error}",
                "The request may or may not have run, so it was not repeated; check before retrying.",
                {"delivered": None},
            )
            self._fail(key, message, TRANSPORT_INTERRUPTED, interrupted.message, interrupted.to_dict())
        except Exception as error:  # a bug here must still not leave a request unanswered
            _log(f"internal error: {error!r}")
            self._fail(key, message, INTERNAL_ERROR, f"connector error: {error}", None)
        finally:
            if key is not None:
                with self._flights_lock:
                    self._flights.pop(key, None)
            if opens is not None:
                opens.set()  # after _answer recorded the session id

    def _deliver(self, message: dict[str, object], body: bytes, key: str | None) -> Reply:
        """POST ``body``; replay it only where the daemon provably never processed it."""
        method = message.get("method")
        modern = _modern_version(message)
        if method == "initialize":
            self.session.initialize = message
        elif method == "notifications/initialized":
            self.session.initialized = message
        stateful = modern is None and method != "initialize"
        daemon = self.link.get()
        session_id = self.session.id if stateful else None
        try:
            reply = self._post(daemon, body, self._headers(message, modern), key)
        except ConnectionRefusedError:
            # Refused at connect: the request was not delivered. Start the
            # daemon again (same verified path) and send it once more.
            _log("the daemon went away; reconnecting")
            daemon = self.link.get(stale=daemon)
            reply = self._post(daemon, body, self._headers(message, modern), key)
        if reply.status == 404 and stateful and session_id is not None:
            # An unknown session is rejected before dispatch: a restarted
            # daemon. Re-establish it from the cached handshake and retry once.
            self._reinitialize(daemon, session_id, key)
            reply = self._post(daemon, body, self._headers(message, modern), key)
        return reply

    def _reinitialize(self, daemon: Daemon, lost: str, key: str | None) -> None:
        with self.session.lock:
            if self.session.id != lost:  # another request re-established it already
                return
            init = self.session.initialize
            if init is None:
                return
            reply = self._post(daemon, _encode(init), self._headers(init, None), key)
            result = _json_object(reply.body).get("result") if reply.status == 200 else None
            if not isinstance(result, dict):
                raise Interrupted(f"re-initializing the MCP session failed (HTTP {reply.status})")
            self.session.id = reply.session_id
            self.session.version = str(result.get("protocolVersion") or self.session.version)
            if self.session.initialized is not None:
                notice = self.session.initialized
                self._post(daemon, _encode(notice), self._headers(notice, None), None)
        _log("re-established the MCP session with the restarted daemon")

    def _headers(self, message: dict[str, object], modern: str | None) -> dict[str, str | bytes]:
        headers: dict[str, str | bytes] = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            REPO_HEADER: self.repo,
        }
        method = message.get("method")
        if modern is not None:
            # The stateless era routes on headers that mirror the body.
            headers["MCP-Protocol-Version"] = modern
            if isinstance(method, str):
                headers["Mcp-Method"] = method
                params = message.get("params")
                name = params.get(NAME_PARAM.get(method, "")) if isinstance(params, dict) else None
                if isinstance(name, str):
                    headers["Mcp-Name"] = _header_value(name)
        elif method != "initialize":
            if self.session.id is not None:
                headers["Mcp-Session-Id"] = self.session.id
            if self.session.version is not None:
                headers["MCP-Protocol-Version"] = self.session.version
        return headers

    def _post(self, daemon: Daemon, body: bytes, headers: dict[str, str | bytes], key: str | None) -> Reply:
        """One HTTP exchange over the daemon's socket; ConnectionRefusedError means nothing was sent."""
        headers = {**headers, **self.link.auth_headers()}
        conn = UnixHTTPConnection(socket_path(self.settings.home), timeout=self.settings.request_timeout_s)
        flight = self._flight(key)
        if flight is not None:
            flight.conn = conn
        try:
            try:
                conn.connect()
            except (FileNotFoundError, ConnectionRefusedError):
                # No socket, or a dead daemon's: nothing was delivered.
                raise ConnectionRefusedError(
                    f"no daemon listens on {socket_path(self.settings.home)}"
                ) from None
            conn.request("POST", "/mcp", body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            return Reply(
                response.status,
                response.getheader("Mcp-Session-Id"),
                response.getheader("Content-Type", ""),
                data,
            )
        except ConnectionRefusedError:
            raise
        except (OSError, http.client.HTTPException) as error:
            self.link.suspect(daemon)
            raise Interrupted(str(error) or type(error).__name__) from None
        finally:
            conn.close()

    def _flight(self, key: str | None) -> Flight | None:
        if key is None:
            return None
        with self._flights_lock:
            return self._flights.get(key)

    # -- output --------------------------------------------------------------
    def _answer(self, request: dict[str, object], key: str, reply: Reply) -> None:
        flight = self._flight(key)
        if flight is not None and flight.cancelled:
            return
        response = _json_object(reply.body) if reply.content_type.startswith("application/json") else {}
        if "result" not in response and "error" not in response:
            detail = reply.body[:200].decode("utf-8", "replace").strip()
            self._fail(
                key,
                request,
                BAD_DAEMON_REPLY,
                f"the daemon answered HTTP {reply.status} without a "
                f"JSON-RPC response{': ' + detail if detail else ''}",
                None,
            )
            return
        if response.get("id") is None:  # an HTTP-level error body names no request
            response["id"] = request["id"]
        result = response.get("result")
        if request.get("method") == "initialize" and reply.status == 200 and isinstance(result, dict):
            # Before the client sees the answer: its next message needs both.
            self.session.id = reply.session_id
            self.session.version = str(result.get("protocolVersion") or "") or None
        self._emit(response)

    def _fail(
        self,
        key: str | None,
        request: dict[str, object],
        code: int,
        message: str,
        data: dict[str, object] | None,
    ) -> None:
        if key is None:
            _log(f"{request.get('method')}: {message}")
            return
        flight = self._flight(key)
        if flight is not None and flight.cancelled:
            return
        error: dict[str, object] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._emit({"jsonrpc": "2.0", "id": request.get("id"), "error": error})

    def _reject(self, code: int, message: str) -> None:
        """A message the connector answers itself, naming no request (``"id": null``), as the daemon's HTTP
        endpoint answers it."""
        self._emit({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})

    def _emit(self, message: dict[str, object]) -> None:
        # Compact, one line: no pretty-printed newline can split a message.
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
        with self._out:
            if self._closed.is_set():
                return
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(1, view) :]
            except OSError:  # the client closed stdout: nobody is listening any more
                self._closed.set()

    # -- end of input --------------------------------------------------------
    def _close(self) -> int:
        """Let in-flight answers arrive briefly, cancel the rest, end the session; 1 if never served."""
        deadline = time.monotonic() + EXIT_GRACE_S
        while self._flights and time.monotonic() < deadline:
            time.sleep(0.005)
        with self._out:
            self._closed.set()
        with self._flights_lock:
            flights = list(self._flights.values())
        for flight in flights:
            flight.cancelled = True
            flight.abort()
        daemon = self.link.current()
        if self.session.id is not None and daemon is not None:
            conn = UnixHTTPConnection(socket_path(self.settings.home), timeout=DELETE_TIMEOUT_S)
            try:
                headers: dict[str, str | bytes] = {
                    "Mcp-Session-Id": self.session.id,
                    REPO_HEADER: self.repo,
                    **self.link.auth_headers(),
                }
                if self.session.version:
                    headers["MCP-Protocol-Version"] = self.session.version
                conn.request("DELETE", "/mcp", headers=headers)
                conn.getresponse().read()
            except (OSError, http.client.HTTPException, CoverageError):
                pass  # best effort: the daemon expires idle sessions itself
            finally:
                conn.close()
        return 1 if self.link.failed and not self.link.served else 0


def _modern_version(message: dict[str, object]) -> str | None:
    """The stateless era's per-request version (``params._meta``), if present."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(MODERN_META_KEY) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def _key(request_id: object) -> str:
    # 1 and "1" are different JSON-RPC ids.
    return json.dumps(request_id)


def _encode(message: dict[str, object]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _json_object(body: bytes) -> dict[str, object]:
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _header_value(value: str) -> str:
    """The MCP header encoding: printable ASCII verbatim, anything else base64 in a sentinel."""
    if (
        value.isascii()
        and value.isprintable()
        and value == value.strip()
        and not (value.startswith("=?base64?") and value.endswith("?="))
    ):
        return value
    import base64

    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="
