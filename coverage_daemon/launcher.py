"""Finding the daemon of this home, starting it, and replacing an older one.

Owned here: the connector's settings, reading the daemon lease, judging a
``/health`` answer against this build, the detached daemon start and the
verified handoff from an older daemon. The lease decides who the daemon is:
connectors never take it and never create a lock of their own, so racing
connectors may each start a daemon and all but one lose the lease and exit.

Stdlib only (the stdio connector imports this on every MCP session start);
``subprocess`` is imported only on the cold path that starts a daemon.
"""

from __future__ import annotations

import fcntl
import http.client
import json
import os
import signal
import sys
import time
from pathlib import Path

from coverage_core import safefs
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.settings_table import read_env

from .credentials import HomeError, bearer, client_token, socket_path
from .identity import (
    CAPABILITY_HEADER,
    COMMON_DB,
    DAEMON_LOCK,
    DAEMON_LOG,
    DEFAULT_HOST,
    VERSION,
    build_fingerprint,
    is_loopback_host,
)
from .unix_http import UnixHTTPConnection

TYPE_CHECKING = False  # typing costs the connector's start; mypy still reads the block below
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Mapping

START_TIMEOUT_S = 30.0  # a cold start on a loaded 2-core CI box, with racing connectors
HANDOFF_TIMEOUT_S = 15.0  # an older daemon drains its requests before it exits
HEALTH_TIMEOUT_S = 2.0
POLL_S = 0.01
# Starts per connect: a second one only for a daemon that lost its exclusive
# lock attempt to a connector's instant probe; a daemon that cannot start
# fails the same way every time.
MAX_STARTS = 2
# A daemon a connector started exits after this long with no client and no
# work (the next MCP session starts another); one a person runs with
# `coverage-mcp serve` never does. COVERAGE_MCP_IDLE_EXIT_S, when set, decides.
IDLE_EXIT_ENV = "COVERAGE_MCP_IDLE_EXIT_S"
CONNECTOR_IDLE_EXIT_S = 3600


# The connector's failures are CoverageErrors like every other surface's:
# ``invalid_argument`` for what the person must fix (exit code 2),
# ``daemon_unreachable`` when no daemon answered and none could be started,
# ``daemon_conflict`` when a process answers for this home but must not be
# used or replaced, ``store_unavailable`` for a home that is not private
# (exit code 1 for these).
UsageError = CoverageError  # the name the connector's callers and tests catch a usage error by


def unreachable(message: str, suggestion: str, **details: object) -> CoverageError:
    """No daemon answered and none could be started."""
    return CoverageError(ErrorCode.DAEMON_UNREACHABLE, message, suggestion, details)


def refused(message: str, suggestion: str, **details: object) -> CoverageError:
    """A process answers for this home but this connector must not use or replace it."""
    return CoverageError(ErrorCode.DAEMON_CONFLICT, message, suggestion, details)


def usage(message: str, suggestion: str = "", **details: object) -> CoverageError:
    return CoverageError(ErrorCode.INVALID_ARGUMENT, message, suggestion, details)


class Settings:
    """What the connector uses of the settings ``coverage-mcp serve`` reads (``settings_table``).

    Every setting is validated, with the same function and errors as
    ``coverage_core.config.Settings.from_env``: a value the daemon would
    refuse is refused here before a daemon is started.
    """

    __slots__ = ("home", "host", "port", "request_timeout_s")

    def __init__(self, home: Path, host: str, port: int, request_timeout_s: float) -> None:
        self.home = home
        self.host = host
        self.port = port
        self.request_timeout_s = request_timeout_s

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        values = read_env(os.environ if environ is None else environ)
        # The daemon answers its own deadline (COVERAGE_MCP_HTTP_TIMEOUT_S) first;
        # the connector waits a little longer so that answer is what the client sees.
        return cls(values["home"], values["host"], values["port"], values["http_timeout_s"] + 5.0)

    @property
    def lock_path(self) -> Path:
        return self.home / DAEMON_LOCK

    @property
    def common_db(self) -> str:
        return os.path.realpath(self.home / COMMON_DB)


class Lease:
    """What ``daemon.lock`` says, and whether a live process holds it right now."""

    __slots__ = ("held", "metadata")

    def __init__(self, held: bool, metadata: dict[str, object]) -> None:
        self.held = held
        self.metadata = metadata


def read_lease(path: Path) -> Lease:
    """The lease's metadata, trusted only while a live process holds the lock.

    The metadata is read before and after the lock probe and must not change
    in between, so it belongs to the holder seen by the probe. The probe takes
    a *shared* lock for an instant: probing connectors never collide with each
    other, and a daemon that loses its exclusive attempt to a probe is
    restarted by the connector that started it.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return Lease(False, {})
    try:
        before = _read_all(fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            held = True
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            held = False
        after = _read_all(fd)
    finally:
        os.close(fd)
    if before != after:
        return Lease(held, {})
    try:
        metadata = json.loads(after or b"{}")
    except ValueError:  # the holder is rewriting it (the port after binding)
        metadata = {}
    return Lease(held, metadata if isinstance(metadata, dict) else {})


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


class Daemon:
    """A verified daemon: where it listens and what its ``/health`` said."""

    __slots__ = ("health", "host", "port")

    def __init__(self, host: str, port: int, health: dict[str, object]) -> None:
        self.host = host
        self.port = port
        self.health = health

    @property
    def instance_id(self) -> object:
        return self.health.get("instance_id")

    def where(self) -> str:
        return f"http://{self.host}:{self.port}"


_NOBODY = "nobody"  # connection refused: nothing listens
_SILENT = "silent"  # accepted, but no HTTP answer in time
_FOREIGN = "foreign"  # an HTTP answer that is not a coverage-mcp health document


def probe(host: str, port: int, timeout: float = HEALTH_TIMEOUT_S) -> dict[str, object] | str:
    """``GET /health``: the health document, or why there is none."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", "/health", headers={"Accept": "application/json"})
        response = conn.getresponse()
        body = response.read()
        status = response.status
    except ConnectionRefusedError:
        return _NOBODY
    except (OSError, http.client.HTTPException):
        return _SILENT
    finally:
        conn.close()
    if status != 200:
        return _FOREIGN
    try:
        health = json.loads(body)
    except ValueError:
        return _FOREIGN
    if not isinstance(health, dict) or health.get("name") != "coverage-mcp":
        return _FOREIGN
    return health


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    """Orders ``0.9.0`` before ``0.10.0`` before ``0.10.1rc1``-style strings."""
    key = []
    for part in str(version).split("."):
        digits = len(part) - len(part.lstrip("0123456789"))
        key.append((int(part[:digits] or -1), part[digits:]))
    return tuple(key)


class Launcher:
    """Finds, verifies, starts and hands off the daemon of one home."""

    def __init__(self, settings: Settings, log: Callable[[str], None]) -> None:
        self.settings = settings
        self._log = log
        self._started: list[subprocess.Popen[bytes]] = []
        self._log_offset = 0  # where this connector's starts began writing daemon.log

    def connect(self) -> Daemon:
        """A daemon of this exact build for this home, started or handed off if needed."""
        deadline = time.monotonic() + START_TIMEOUT_S
        starts = 0
        silent_at: tuple[str, int] | None = None
        while True:
            lease: Lease | None = None
            address = self._configured()
            answer: dict[str, object] | str = _NOBODY
            if address is not None:
                answer = probe(*address)
            if not isinstance(answer, dict):
                # With an ephemeral port, or while a daemon of this home listens
                # elsewhere, the lease is where its address is written.
                lease = read_lease(self.settings.lock_path)
                held_at = _lease_address(lease)
                if held_at is not None and held_at != address:
                    address, answer = held_at, probe(*held_at)
            if isinstance(answer, dict):
                assert address is not None
                daemon = Daemon(address[0], address[1], answer)
                if self._accept(daemon):
                    return daemon
                continue  # an older daemon was handed off: start ours
            if answer == _FOREIGN:
                assert address is not None
                raise refused(
                    f"{address[0]}:{address[1]} is held by a program that is not a coverage-mcp daemon; "
                    "it was left alone",
                    "Stop that program, or give coverage-mcp another port with COVERAGE_MCP_PORT "
                    "(set the same value where the MCP client launches `coverage-mcp connect`).",
                )
            if answer == _SILENT:
                silent_at = address
            assert lease is not None  # read above whenever no daemon answered
            if not lease.held and not self._starting():
                if starts == MAX_STARTS:
                    raise self._failed_to_start(silent_at)
                starts += 1
                self._start()
            if time.monotonic() > deadline:
                raise self._failed_to_start(silent_at)
            time.sleep(POLL_S)

    def _configured(self) -> tuple[str, int] | None:
        if self.settings.port == 0:
            return None
        return (self.settings.host, self.settings.port)

    # -- judging a daemon ----------------------------------------------------
    def _accept(self, daemon: Daemon) -> bool:
        """True to use ``daemon``; False after handing it off; raises to refuse it."""
        health = daemon.health
        where = daemon.where()
        theirs = str(health.get("version"))
        if os.path.realpath(str(health.get("common_db"))) != self.settings.common_db:
            raise refused(
                f"the daemon at {where} serves another home ({health.get('common_db')}), "
                f"not {self.settings.common_db}",
                "Use the same COVERAGE_MCP_HOME as that daemon, or give this home its own COVERAGE_MCP_PORT.",
            )
        if version_key(theirs) > version_key(VERSION):
            raise refused(
                f"the daemon at {where} is coverage-mcp {theirs}, newer than this connector ({VERSION}); "
                "a connector never replaces a newer daemon",
                "Upgrade the coverage-mcp that this MCP client launches, or run `coverage-mcp stop` "
                "with the newer version first.",
            )
        if version_key(theirs) < version_key(VERSION):
            self._hand_off(daemon)
            return False
        # Hashed now rather than at connector start: "this build" is the code
        # installed when the daemon is judged, so a daemon this connector just
        # started from freshly edited files is not mistaken for a stale one.
        ours = build_fingerprint()
        if health.get("build_fingerprint") != ours:
            raise refused(
                f"the daemon at {where} is coverage-mcp {theirs} built from other files "
                f"(fingerprint {health.get('build_fingerprint')}, this build {ours})",
                "Run `coverage-mcp stop`; the next connector starts a daemon of this build.",
            )
        if not isinstance(health.get("schema_revision"), int):
            raise refused(
                f"the daemon at {where} reports no schema revision",
                "Run `coverage-mcp stop`; the next connector starts a daemon of this build.",
            )
        # The fingerprint hashes the schema module, so an equal fingerprint is
        # also an equal schema revision; the connector cannot import it to compare.
        return True

    def _hand_off(self, daemon: Daemon) -> None:
        """Stop a verified older daemon of this home through its own shutdown endpoint."""
        lease = read_lease(self.settings.lock_path)
        meta = lease.metadata
        health = daemon.health
        verified = (
            lease.held
            and meta.get("pid") == health.get("pid")
            and meta.get("instance_id") == health.get("instance_id")
            and isinstance(meta.get("instance_id"), str)
            and os.path.realpath(str(meta.get("common_db"))) == self.settings.common_db
            and meta.get("port") == daemon.port
        )
        if not verified:
            raise refused(
                f"the daemon at {daemon.where()} reports coverage-mcp {health.get('version')} (older than "
                f"{VERSION}), but it is not the process holding {self.settings.lock_path}; it was not stopped",
                "Stop that process yourself (its pid is in its /health answer), then reconnect.",
            )
        pid = meta["pid"]
        assert isinstance(pid, int)
        running = running_executable(pid)
        recorded = meta.get("executable")
        if running is None or not isinstance(recorded, str) or os.path.realpath(recorded) != running:
            # The lease's record and the process disagree (or the process is not ours to read): whoever
            # holds the lease, it is not the daemon the record describes.
            raise refused(
                f"the older daemon's lease in {self.settings.lock_path} records the executable {recorded}, "
                f"but its process {pid} runs {running or 'something this user cannot read'}; it was not stopped",
                f"Stop process {pid} yourself if it is yours, then reconnect.",
            )
        self._log(f"handing off the older daemon {health.get('version')} (pid {pid}) at {daemon.where()}")
        capability = meta.get("capability")
        if health.get("handoff_supported") is not True:
            # A verified daemon from before the shutdown endpoint: the platform's termination request, which
            # every coverage-mcp daemon answers with its graceful stop.
            self._log(
                f"the older daemon has no shutdown endpoint; sending process {pid} a termination request"
            )
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError as error:
                raise refused(
                    f"the termination request to the older daemon (pid {pid}) failed: {error}",
                    "Run `coverage-mcp stop` with that daemon's version, then reconnect.",
                ) from None
        elif not isinstance(capability, str) or not self._request_shutdown(daemon, capability):
            raise refused(
                f"the older daemon at {daemon.where()} did not accept the handoff",
                "Run `coverage-mcp stop` with that daemon's version, then reconnect.",
            )
        deadline = time.monotonic() + HANDOFF_TIMEOUT_S
        while probe(daemon.host, daemon.port) != _NOBODY or read_lease(self.settings.lock_path).held:
            if time.monotonic() > deadline:
                raise refused(
                    f"the older daemon at {daemon.where()} did not exit within {HANDOFF_TIMEOUT_S:.0f} s",
                    f"Look at {self.settings.home / DAEMON_LOG}; run `coverage-mcp stop` and reconnect.",
                )
            time.sleep(POLL_S)

    def _request_shutdown(self, daemon: Daemon, capability: str) -> bool:
        # Secrets travel only over the private socket in the 0700 home, never
        # to whatever listens on the shared TCP port.
        conn = UnixHTTPConnection(socket_path(self.settings.home), timeout=HEALTH_TIMEOUT_S)
        try:
            headers = {CAPABILITY_HEADER: capability, **self.auth_headers()}
            conn.request("POST", "/api/shutdown", body=b"", headers=headers)
            response = conn.getresponse()
            response.read()
            return response.status in (200, 202)
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    def auth_headers(self) -> dict[str, str]:
        """The client token's header, read from the home each time (``token rotate`` takes effect at once)."""
        try:
            token = client_token(self.settings.home)
        except HomeError as error:  # as the daemon and the Python client report an unsafe home
            raise CoverageError(
                ErrorCode.STORE_UNAVAILABLE,
                error.message,
                error.suggestion,
                {"home": str(self.settings.home)},
            ) from None
        return bearer(token) if token else {}

    # -- starting a daemon ---------------------------------------------------
    def _start(self) -> None:
        import subprocess  # the cold path only: it costs the warm start a few ms

        self.settings.home.mkdir(parents=True, exist_ok=True)
        # 0600 like every file of the home (an older log made under a looser umask is tightened too).
        fd = safefs.open_file(self.settings.home / DAEMON_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "ab") as log:
            if not self._started:
                self._log_offset = log.tell()
            process = subprocess.Popen(
                [sys.executable, "-m", "coverage_cli", "serve"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                # Its own session: the MCP client's signals to this connector
                # must not reach the shared daemon, which outlives it.
                start_new_session=True,
                cwd=self.settings.home,  # never keep the person's directory busy
                env=daemon_environment(os.environ),
            )
        self._log(f"started the daemon (pid {process.pid}); its log is {self.settings.home / DAEMON_LOG}")
        self._started.append(process)

    def _starting(self) -> bool:
        """Whether a daemon this connector started is still running (and may take the lease)."""
        return any(p.poll() is None for p in self._started)

    def _failed_to_start(self, silent_at: tuple[str, int] | None) -> CoverageError:
        log = self.settings.home / DAEMON_LOG
        tail = _written_since(log, self._log_offset)
        if silent_at is not None:
            return unreachable(
                f"{silent_at[0]}:{silent_at[1]} accepts connections but does not answer /health",
                f"Find the process listening there; look at {log}.",
            )
        return unreachable(
            "no coverage-mcp daemon answered and none could be started" + (f": {tail}" if tail else ""),
            f"Run `coverage-mcp serve` in a terminal to see why; its log is {log}.",
        )


def running_executable(pid: int) -> str | None:
    """The resolved executable process ``pid`` runs (``/proc/<pid>/exe``), when it is this user's process;
    None otherwise (another user's, gone, or a platform without ``/proc``: a handoff then fails closed)."""
    proc = f"/proc/{int(pid)}"
    try:
        if os.stat(proc).st_uid != os.getuid():
            return None
        return os.path.realpath(os.readlink(f"{proc}/exe"))
    except OSError:
        return None


def daemon_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a connector starts ``serve`` with: its own, plus the connector's idle exit unless set."""
    env = dict(environ)
    env.setdefault(IDLE_EXIT_ENV, str(CONNECTOR_IDLE_EXIT_S))
    return env


def _lease_address(lease: Lease) -> tuple[str, int] | None:
    """Where the lease holder says it listens (its port is 0 until it has bound)."""
    if not lease.held:
        return None
    port = lease.metadata.get("port")
    host = lease.metadata.get("host") or DEFAULT_HOST
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        return None
    if not isinstance(host, str) or not is_loopback_host(host):
        return None
    return (str(host), port)


def _written_since(path: Path, offset: int, limit: int = 400) -> str:
    """What the daemons this connector started wrote to their log: usually why they could not start."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read(64 * 1024).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if line.startswith("error")]
    # The last error and its suggestion line, as the CLI prints them; else the last line.
    shown = lines[errors[-1] : errors[-1] + 2] if errors else lines[-1:]
    return " ".join(shown)[:limit]
