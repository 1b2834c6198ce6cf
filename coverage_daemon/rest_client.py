"""The daemon's REST API over the standard library, and the route to it that reads only files.

``DaemonClient`` speaks plain HTTP/1.1 (the CLI and notebooks should not pay for an event loop) and answers
the service's envelopes as JSON. ``owning_daemon(path)`` is how a coverage-mcp command finds out whether
this home's daemon owns the store of the checkout at ``path`` without importing DuckDB, NumPy or pygit2:
the checkout from git's files (``checkout.locate``), the store's and the daemon's leases, then the
daemon's own word (its pid in ``/health``, the project it registers for the path). A read routed so starts
in a fraction of the time a process that opens the store needs (benchmarks/cli.py); anything unusual
answers None, and the caller takes the library's way (``coverage_daemon.client.open_project``), which
finds the same owner or opens the store itself.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coverage_core.checkout import locate
from coverage_core.config import Settings
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.locks import is_held, lease_of, read_metadata
from coverage_core.operations.table import OPERATIONS
from coverage_core.principals import Principal
from coverage_core.review.budget import MAX_BYTES, MAX_PAGE_SIZE, MAX_WORDS

if TYPE_CHECKING:
    import http.client

    import numpy as np

    from coverage_core.model import FileDetail, FilesPage, Snapshot

from .credentials import HomeError, bearer, client_token, socket_path
from .errors_http import error_from_body
from .identity import CAPABILITY_HEADER, REPO_HEADER


class DaemonClient:
    """The REST API of one daemon; ``repo`` (a checkout path) selects the worktree for project calls.

    ``DaemonClient.of_home(home)`` is how our own tools talk to their daemon:
    over its private Unix socket, with the home's client token (and the admin
    capability for the calls that need it). A client built on a TCP URL sends
    the ``token`` it is given, if any; it is meant for tests and for people
    who point it at a daemon themselves.
    """

    def __init__(
        self,
        base_url: str,
        *,
        repo: str | None = None,
        timeout_s: float = 60.0,
        token: str | None = None,
        unix_socket: Path | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme != "http" or not parsed.hostname or not parsed.port:
            raise CoverageError(
                ErrorCode.INVALID_ARGUMENT,
                f"{base_url!r} is not http://HOST:PORT",
                "Pass the daemon's address, e.g. http://127.0.0.1:59471.",
            )
        self.base_url = base_url.rstrip("/")
        self._host, self._port = parsed.hostname, parsed.port
        self.repo = repo
        self.timeout_s = timeout_s
        self._token = token
        self._socket = unix_socket
        # The daemon's admin capability, read from its locked lease file by its own user (``DaemonProject``):
        # sent only to the rows that need it.
        self.capability: str | None = None

    @classmethod
    def of_home(cls, home: Path, base_url: str, **kwargs: Any) -> DaemonClient:
        """The client our own tools use: the home's private socket and its client token."""
        try:
            token = client_token(home)
        except HomeError as error:
            raise CoverageError(
                ErrorCode.STORE_UNAVAILABLE, error.message, error.suggestion, {"home": str(home)}
            ) from None
        return cls(base_url, token=token, unix_socket=socket_path(home), **kwargs)

    def _connection(self) -> http.client.HTTPConnection:
        import http.client  # on the first request: a read that opens the store itself sends none

        from .unix_http import UnixHTTPConnection

        if self._socket is not None:
            return UnixHTTPConnection(self._socket, timeout=self.timeout_s)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout_s)

    # -- transport ------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """One exchange: (status, decoded JSON). A REST error body raises its CoverageError."""
        if query:
            path += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        sent = {
            "Accept": "application/json",
            **(bearer(self._token) if self._token else {}),
            **(headers or {}),
        }
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        if self.repo is not None:
            sent[REPO_HEADER] = self.repo
        conn = self._connection()
        try:
            conn.request(method, path, body=payload, headers=sent)
            response = conn.getresponse()
            raw = response.read()
        except OSError as exc:
            where = f"{self.base_url} (socket {self._socket})" if self._socket else self.base_url
            raise CoverageError(
                ErrorCode.DAEMON_UNREACHABLE,
                f"the daemon at {where} did not answer ({exc})",
                "Check it with `coverage-mcp status`; start it with `coverage-mcp serve`.",
                {"url": self.base_url},
            ) from None
        finally:
            conn.close()
        decoded = json.loads(raw) if raw else None
        if response.status >= 400:
            raise error_from_body(response.status, decoded)
        return response.status, decoded

    def _get(self, route: str, **query: Any) -> Any:
        return self.request("GET", route, query=query)[1]

    # -- daemon -------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self._get("/health")

    def shutdown(self, capability: str) -> dict[str, Any]:
        return self.request("POST", "/api/shutdown", headers={CAPABILITY_HEADER: capability})[1]

    # -- projects ---------------------------------------------------------------------
    def projects(self) -> list[dict[str, Any]]:
        return self._get("/api/projects")["data"]["projects"]

    def register(
        self,
        path: str | os.PathLike[str],
        settings: dict[str, Any] | None = None,
        *,
        capability: str | None = None,
    ) -> dict[str, Any]:
        """Open (and register) a checkout's project; settings at creation need the admin capability."""
        body: dict[str, Any] = {"path": str(Path(path).absolute())}
        if settings:
            body["settings"] = settings
        headers = {CAPABILITY_HEADER: capability} if capability else None
        return self.request("POST", "/api/projects", body=body, headers=headers)[1]["data"]["project"]

    def project(self, project_id: str) -> dict[str, Any]:
        return self._get(f"/api/projects/{project_id}")["data"]["project"]

    # -- operations: the service's envelopes, from the one table --------------------------------
    def call(self, project_id: str, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Any row of the table (``coverage_core.operations.table.OPERATIONS``): the envelope ``Service.call`` returns.
        A row the client token does not reach is sent with the admin capability, when this client has it."""
        op = OPERATIONS.get(name)
        needs_admin = op is not None and Principal.CLIENT not in op.principals
        headers = {CAPABILITY_HEADER: self.capability} if needs_admin and self.capability else None
        path = f"/api/projects/{project_id}/ops/{name}"
        return self.request("POST", path, body=dict(arguments or {}), headers=headers)[1]

    def _pages(
        self, project_id: str, key: str, args: dict[str, Any], wanted: int | None = None
    ) -> tuple[list[Any], dict[str, Any]]:
        """The records of a paged coverage_review listing, following its cursors (``wanted`` at most),
        and the first page's data (for what every page repeats, such as a total)."""
        args = {**args, "limits": {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES}}
        records: list[Any] = []
        first: dict[str, Any] | None = None
        while True:
            answer = self.call(project_id, "coverage_review", args)
            first = first or answer["data"]
            records += answer["data"][key]
            cursor = answer["page"]["next_cursor"]
            if cursor is None or (wanted is not None and len(records) >= wanted):
                return records[:wanted], first
            args["cursor"] = cursor

    # -- reads as the library's records (imported here: a routed command never asks for them) ----------
    def snapshots(
        self,
        project_id: str,
        *,
        suite: str | None = None,
        branch: str | None = None,
        commit: str | None = None,
        limit: int | None = None,
        chosen: bool = False,
    ) -> list[Snapshot]:
        from coverage_core.model import Snapshot, converter

        wanted: dict[str, Any] = {
            k: v for k, v in (("suite", suite), ("branch", branch), ("commit", commit)) if v is not None
        }
        if chosen:
            wanted["chosen"] = True
        args = {"task": "snapshots", "filter": wanted, "representation": "review", "page_size": MAX_PAGE_SIZE}
        return [
            converter.structure(s, Snapshot) for s in self._pages(project_id, "snapshots", args, limit)[0]
        ]

    def snapshot(self, project_id: str, snapshot_id: str) -> Snapshot:
        from coverage_core.model import Snapshot, converter

        args = {"task": "snapshots", "filter": {"snapshot_id": snapshot_id}, "representation": "review"}
        found = self.call(project_id, "coverage_review", args)["data"]["snapshots"]
        if not found:
            raise CoverageError(
                ErrorCode.NOT_FOUND,
                f"no snapshot {snapshot_id!r} in this repository",
                "List snapshots with `coverage-mcp snapshots`.",
                {"snapshot_id": snapshot_id},
            )
        return converter.structure(found[0], Snapshot)

    def files(
        self, project_id: str, snapshot_id: str, *, offset: int = 0, limit: int = 1000, order: str = "path"
    ) -> FilesPage:
        from coverage_core.model import FilesPage, FileSummary, converter

        args = {
            "task": "files",
            "measurement": {"snapshot_id": snapshot_id},
            "order": order,
            "representation": "review",
            "page_size": MAX_PAGE_SIZE,
        }
        listed, first = self._pages(project_id, "files", args, offset + limit)
        return FilesPage(
            snapshot_id,
            first["total"],
            offset,
            tuple(converter.structure(f, FileSummary) for f in listed[offset:]),
        )

    def file_detail(self, project_id: str, snapshot_id: str, path: str) -> FileDetail:
        import numpy as np

        from coverage_core.model import FileDetail, FileSummary, converter

        args: dict[str, Any] = {
            "task": "file",
            "measurement": {"snapshot_id": snapshot_id},
            "file": path,
            "limits": {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES},
        }
        pages = []
        while True:
            answer = self.call(project_id, "coverage_review", args)
            pages.append(answer["data"])
            if answer["page"]["next_cursor"] is None:
                break
            args["cursor"] = answer["page"]["next_cursor"]

        def table(name: str) -> dict[str, np.ndarray]:
            return {
                column: np.asarray([v for page in pages for v in page[name][column]])
                for column in pages[0][name]
            }

        first = pages[0]
        return FileDetail(
            snapshot_id=snapshot_id,
            summary=converter.structure(first["summary"], FileSummary),
            lines=table("lines"),
            branches=table("branches"),
            functions=table("functions"),
            regions=table("regions"),
            tests=tuple(name for page in pages for name in page["tests"]),
            excluded_lines=tuple(first.get("excluded_lines", ())),
        )


def running_daemon(settings: Settings) -> tuple[DaemonClient, dict[str, Any]] | None:
    """The daemon of this home (client, lock metadata), or None when none holds ``daemon.lock``."""
    lock = settings.daemon_lock
    if not is_held(lock):
        return None
    meta = read_metadata(lock)
    if not meta.get("port"):
        raise CoverageError(
            ErrorCode.DAEMON_UNREACHABLE,
            f"a daemon (pid {meta.get('pid', 'unknown')}) holds {lock} but has not published its port",
            "It is probably starting: retry in a moment.",
            {"lock": str(lock)},
        )
    host = meta.get("host") or "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    return DaemonClient.of_home(settings.home, f"http://{host}:{meta['port']}"), meta


class DaemonRoute:
    """The project of one checkout on the daemon that owns its store: ``call`` runs a row there."""

    def __init__(self, client: DaemonClient, project_id: str) -> None:
        self.client = client
        self.project_id = project_id

    def call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """The row's envelope from the daemon (its stages are its own: ``progress`` is not told)."""
        return self.client.call(self.project_id, name, arguments)


def owning_daemon(path: str | os.PathLike[str], settings: Settings) -> DaemonRoute | None:
    """The route to this home's running daemon when it holds the store of the checkout at ``path``, as
    the files say and the daemon confirms; None when anything of that does not hold (no plain checkout,
    the store free or held by another process, no daemon, another pid or home, another project)."""
    checkout = locate(path)
    if checkout is None:
        return None
    lease = lease_of(checkout.store_path)
    holder = read_metadata(lease)
    if holder.get("owner") != "daemon" or not is_held(lease):
        return None
    try:
        found = running_daemon(settings)
        if found is None:
            return None
        client, meta = found
        health = client.health()
        if health.get("pid") != holder.get("pid") or health.get("home") != str(settings.home):
            return None
        client.repo = str(checkout.worktree_path)
        # Read from the daemon's locked lease file by its own user: it makes this process the store's
        # owner (the admin rows), exactly as if it held the store itself.
        client.capability = meta.get("capability")
        project = client.register(checkout.worktree_path)
    except CoverageError:
        return None  # the library's way says what is wrong, with its own remedy
    if project.get("project_id") != checkout.project_id:
        return None
    return DaemonRoute(client, checkout.project_id)
