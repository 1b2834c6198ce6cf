"""Who calls an operation, and where it appears: each row of ``operations.table.OPERATIONS`` names both.

A ``Principal`` is what a caller proved, not how it spoke: the daemon derives
it from the request's credentials (``coverage_daemon.auth``), the MCP endpoint
calls as ``AGENT``, and a process holding the store itself is its owner
(``ADMIN``). ``Service.call`` refuses a row that does not admit the caller.
A ``Surface`` is where a row is listed and reachable; MCP's tools/list is the
rows with ``Surface.MCP``.
"""

from __future__ import annotations

import enum


class Principal(enum.Enum):
    AGENT = "agent"  # an MCP client with the client token
    CLIENT = "client"  # the client token over REST: the CLI's reads, notebooks
    ADMIN = "admin"  # the daemon's admin capability; in process, the store's owner
    SESSION_READ = "session_read"  # a dashboard session cookie
    SESSION_WRITE = "session_write"  # the session cookie and its CSRF token, on a POST


class Surface(enum.Enum):
    MCP = "mcp"
    REST = "rest"
    CLI = "cli"
    DASHBOARD = "dashboard"


# What a caller lacking a principal must do to have it: a ``forbidden`` refusal suggests each a row admits.
HOW_TO_BE = {
    Principal.AGENT: "Call it as an MCP tool (tools/call) through the daemon's /mcp endpoint.",
    Principal.CLIENT: "Send the client token (Authorization: Bearer ...); `coverage-mcp connect` sets it up.",
    Principal.ADMIN: "Use the coverage-mcp command line as the daemon's user (it reads the admin capability "
    "from the daemon's lock file); MCP clients and the client token cannot do this.",
    Principal.SESSION_READ: "Open the dashboard with `coverage-mcp dashboard`.",
    Principal.SESSION_WRITE: "Do it from the dashboard `coverage-mcp dashboard` opens (its page sends the "
    "session's CSRF token).",
}

# When a request proves several principals, the row runs as the first of these it admits.
PREFERENCE = (
    Principal.ADMIN,
    Principal.SESSION_WRITE,
    Principal.CLIENT,
    Principal.SESSION_READ,
    Principal.AGENT,
)
