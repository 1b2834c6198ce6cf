"""The dashboard as one self-contained HTML file: ``coverage-mcp report --html DIR``.

The live page's own HTML, CSS and JavaScript (``static/``) with the CSS and
script inlined and the projection (the ``dashboard`` row, ``coverage_core.operations.dashboard_view``)
embedded as JSON, plus the annotated source of the files most worth reading
(most missed lines first, bounded) and the logs of the newest runs. It opens from disk with no network: its
Content-Security-Policy allows exactly the inlined script and style (by
hash) and no connection at all.

Stdlib only (no aiohttp): the CLI builds reports without the daemon's server.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

REPORT_FILE = "index.html"
MAX_SOURCES = 200
MAX_SOURCE_LINES_TOTAL = 200_000
MAX_RUN_LOGS = 10


def _asset(name: str) -> str:
    return resources.files("coverage_daemon").joinpath("static", name).read_text("utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def source_candidates(data: dict[str, Any]) -> list[str]:
    """The files whose annotated source the report carries: most missed lines first, then changed ones."""
    rows = (data.get("files") or {}).get("rows") or []
    changed = {f["path"] for f in ((data.get("change") or {}).get("files") or [])}
    ranked = sorted(rows, key=lambda f: (-(f["lines"]["found"] - f["lines"]["hit"]), f["path"]))
    ordered = [f["path"] for f in ranked if f["path"] in changed] + [
        f["path"] for f in ranked if f["path"] not in changed
    ]
    return ordered[:MAX_SOURCES]


def run_candidates(data: dict[str, Any]) -> list[str]:
    """The runs whose logs (first page) the report carries: the newest ``MAX_RUN_LOGS``."""
    runs = data.get("runs") or {}
    return [r["run_id"] for r in (runs.get("items") or [])[:MAX_RUN_LOGS]] if runs.get("available") else []


# Inside a script element the HTML parser reads "</script", "<!--" and "<script" (its double-escaped
# state swallows the rest of the page): no "<", ">" or "&" may appear raw. JSON strings escape them as
# \u003c etc. (the same string to JSON.parse); U+2028/2029 are escaped too, for older script parsers.
_EMBED_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_EMBED_TABLE = str.maketrans(_EMBED_ESCAPES)


def embed_json(value: Any) -> str:
    """``value`` as JSON that is safe as the text of a ``<script type="application/json">`` element."""
    return json.dumps(value, separators=(",", ":")).translate(_EMBED_TABLE)


def _approvals_count(section: dict[str, Any] | None) -> dict[str, Any] | None:
    """A CI artifact carries no pending command (its env values may be secrets): how many wait, and where
    a person reviews and approves them."""
    if not section or not section.get("available"):
        return section
    count = len(section.get("items") or [])
    if not count:
        return {"available": True, "items": [], "empty": "No command waited for approval."}
    more = "+" if section.get("truncated") else ""
    return {
        "available": True,
        "items": [],
        "pending": count,
        "empty": f"{count}{more} command(s) waited for approval when this report was written. The report "
        "carries no command details: review them with `coverage-mcp command list --status pending`.",
    }


def render(data: dict[str, Any], sources: dict[str, dict[str, Any]]) -> str:
    """The report's HTML text: the page with its assets inlined and ``data`` (and ``sources``) embedded."""
    kept: dict[str, dict[str, Any]] = {}
    total = 0
    for path, source in sources.items():
        total += len(source.get("lines", []))
        if total > MAX_SOURCE_LINES_TOTAL:
            break
        kept[path] = source
    body = {
        **data,
        "sources": kept,
        "generated_at": dt.datetime.now(dt.UTC).isoformat(),
        "approvals": _approvals_count(data.get("approvals")),
    }
    payload = embed_json(body)
    script, style = _asset("dashboard.js"), _asset("dashboard.css")
    policy = (
        f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; img-src data:; "
        "connect-src 'none'; base-uri 'none'; form-action 'none'"
    )
    page = _asset("index.html")
    page = page.replace('<meta name="csrf-token" content="{{csrf}}">\n', "")
    page = page.replace("<!--policy-->", f'<meta http-equiv="Content-Security-Policy" content="{policy}">')
    page = page.replace('<link rel="stylesheet" href="/dashboard.css">', f"<style>{style}</style>")
    page = page.replace(
        "<!--data-->", f'<script type="application/json" id="dashboard-data">{payload}</script>'
    )
    page = page.replace('<script src="/dashboard.js"></script>', f"<script>{script}</script>")
    return page


def write(directory: Path, data: dict[str, Any], sources: dict[str, dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / REPORT_FILE
    text = render(data, sources).encode("utf-8")
    # Beside it, then renamed: a full disk leaves the earlier report whole and no half-written page.
    tmp = directory / f".{REPORT_FILE}.tmp"
    try:
        tmp.write_bytes(text)
        os.replace(tmp, out)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(out)) from error
    return out
