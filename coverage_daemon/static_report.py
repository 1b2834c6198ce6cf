"""The dashboard as one self-contained HTML file: ``coverage-mcp report --html DIR``.

The live page's own HTML, CSS and JavaScript (``static/``) with the CSS and
script inlined and the projection (``coverage_core.review.dashboard``)
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
    ordered = [f["path"] for f in ranked if f["path"] in changed] + [f["path"] for f in ranked if f["path"] not in changed]
    return ordered[:MAX_SOURCES]


def run_candidates(data: dict[str, Any]) -> list[str]:
    """The runs whose logs (first page) the report carries: the newest ``MAX_RUN_LOGS``."""
    runs = data.get("runs") or {}
    return [r["run_id"] for r in (runs.get("items") or [])[:MAX_RUN_LOGS]] if runs.get("available") else []


def render(data: dict[str, Any], sources: dict[str, dict[str, Any]]) -> str:
    """The report's HTML text: the page with its assets inlined and ``data`` (and ``sources``) embedded."""
    kept: dict[str, dict[str, Any]] = {}
    total = 0
    for path, source in sources.items():
        total += len(source.get("lines", []))
        if total > MAX_SOURCE_LINES_TOTAL:
            break
        kept[path] = source
    body = {**data, "sources": kept, "generated_at": dt.datetime.now(dt.UTC).isoformat()}
    # "</" cannot appear inside the JSON script element: a path or test name with "</script>" stays text.
    payload = json.dumps(body, separators=(",", ":")).replace("</", "<\\/")
    script, style = _asset("dashboard.js"), _asset("dashboard.css")
    policy = (f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; img-src data:; "
              "connect-src 'none'; base-uri 'none'; form-action 'none'")
    page = _asset("index.html")
    page = page.replace('<meta name="csrf-token" content="{{csrf}}">\n', "")
    page = page.replace("<!--policy-->", f'<meta http-equiv="Content-Security-Policy" content="{policy}">')
    page = page.replace('<link rel="stylesheet" href="/dashboard.css">', f"<style>{style}</style>")
    page = page.replace("<!--data-->", f'<script type="application/json" id="dashboard-data">{payload}</script>')
    page = page.replace('<script src="/dashboard.js"></script>', f"<script>{script}</script>")
    return page


def write(directory: Path, data: dict[str, Any], sources: dict[str, dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / REPORT_FILE
    out.write_text(render(data, sources), encoding="utf-8")
    return out
