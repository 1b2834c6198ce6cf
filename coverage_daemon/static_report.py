"""The static report: ``coverage-mcp report --html DIR`` writes a site, ``--single-file`` one page.

The site (``write_site``): ``index.html`` is the dashboard page with the
projection embedded (every file's row, no source), and ``files/`` holds one
page per file of the current snapshot: its counts, how many named tests ran
it, and its annotated source drawn as text in runs of one status (covered,
uncovered, partial, excluded, not code), so the whole site stays within
``SIZE_FACTOR`` times the source bytes plus ``PAGE_COST`` per page. Every
page opens from disk with no network: its Content-Security-Policy allows only
its own inlined style and script (by hash) and no connection. A partial line
with missed branches is an element of its own whose title names them; against
a baseline, a file page embeds its change-category ranges (lcov's differential
categories, as the live dashboard draws them) and its script writes them in a
gutter beside the line numbers, and steps through the missed blocks with n and
p. Run logs are left out unless asked for.

The single file (``write``), kept for ``--single-file``:

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
import html
import json
import os
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

REPORT_FILE = "index.html"
FILES_DIR = "files"
# The site's budget (checked by the tests): its bytes at most SIZE_FACTOR x the sources' plus PAGE_COST a page.
SIZE_FACTOR = 1.5
PAGE_COST = 4096
MAX_SOURCES = 200
# --single-file: a file's lines it carries at most (as the dashboard_file row's bound).
MAX_FILE_LINES = 20_000
# The site's function index carries at most this many functions (the live dashboard pages through all).
MAX_SITE_FUNCTIONS = 20_000
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


# -- the site ----------------------------------------------------------------------------------------

# Classes of a line's status, one letter each: the file pages' only markup per run of lines.
STATUS_CLASS = {"covered": "c", "uncovered": "u", "partial": "p", "excluded": "x", "not code": "n"}
_PAGE_STYLE = (
    ":root{font:14px/1.45 system-ui,sans-serif;--c:#d7f0dc;--u:#fbd9d6;--p:#fbeec4;--m:#5c6166;color-scheme:light dark}"
    "@media (prefers-color-scheme:dark){:root{--c:#1f3a27;--u:#4a2321;--p:#43391a;--m:#a2a8ae}}"
    "body{margin:0 auto;max-width:1240px;padding:8px 24px}h1{font-size:1.1rem;overflow-wrap:anywhere}"
    "p{color:var(--m);margin:4px 0}.src{display:flex;overflow:auto;border:1px solid var(--m);border-radius:6px}"
    "pre{margin:0;font:12.5px/18px ui-monospace,Menlo,monospace}pre.g,pre.k{color:var(--m);text-align:right;"
    "padding:0 8px;user-select:none;min-width:5ch}pre.k{min-width:3ch;padding:0 4px;font-size:10px}"
    "pre.t{flex:1;padding-right:8px}pre.t span{display:block}"
    ".c{background:var(--c)}.u{background:var(--u)}.p{background:var(--p)}.x{font-style:italic;opacity:.7}"
    "pre.t span.h{outline:2px solid #1f5fbf;outline-offset:-2px}a{color:#1f5fbf}"
    "#functions{overflow-x:auto;margin:4px 0}#functions td,#functions th{padding:0 8px;text-align:left;"
    "overflow-wrap:anywhere}"
)
# Numbers the lines (the gutter) and writes each line's change category against the baseline (the
# categories gutter: lcov's, from the embedded ranges, on code lines only (a range spans the blank lines
# between its code lines); a code line in none is unchanged code, CBC when it runs now, partial lines too,
# UBC when not); n/j and p/k step through the missed blocks (uncovered runs and
# partial lines). A line's status is read from the text's own runs.
_PAGE_SCRIPT = (
    "var D=document,Q=function(x){return D.querySelector(x)},t=Q('pre.t'),g=Q('pre.g'),k=Q('pre.k'),a=Q('#at'),"
    "s=[],e=[],c=t.childNodes,i,j;"
    "function to(n){scrollTo(0,t.getBoundingClientRect().top+scrollY+(n-4)*18)}"
    "for(i=0;i<c.length;i++){var x=c[i],m=x.nodeType===1?x.className:'n',n=(x.textContent.match(/\\n/g)||[]).length;"
    "for(j=0;j<n;j++){s.push(m);e.push(x)}}"
    "var o=[];for(i=1;i<=s.length;i++)o.push(i);g.textContent=o.join('\\n');"
    "if(k){var r=JSON.parse(Q('#categories').textContent),q=0,w=[];"
    "for(i=1;i<=s.length;i++){while(q<r.length&&r[q][2]<i)q++;var z=s[i-1];"
    "w.push(z!=='c'&&z!=='p'&&z!=='u'?'':q<r.length&&r[q][1]<=i?r[q][0]:z==='u'?'UBC':'CBC')}"
    "k.textContent=w.join('\\n')}"
    "var b=[];for(i=0;i<s.length;i++)if(s[i]==='u'||s[i]==='p'){if(b.length&&b[b.length-1][1]===i)b[b.length-1][1]=i+1;"
    "else b.push([i+1,i+1])}"
    "var at=-1,lit=[];a.textContent='missed blocks: '+b.length+(b.length?'; n and p step through them':'');"
    "D.addEventListener('keydown',function(v){var d=v.key==='n'||v.key==='j'?1:v.key==='p'||v.key==='k'?-1:0;"
    "if(v.altKey||v.ctrlKey||v.metaKey||!b.length||!d)return;v.preventDefault();at=(at+d+b.length)%b.length;"
    "var f=b[at];lit.forEach(function(y){y.classList.remove('h')});lit=[];"
    "for(i=f[0];i<=f[1];i++)if(e[i-1].nodeType===1&&lit.indexOf(e[i-1])<0){e[i-1].classList.add('h');lit.push(e[i-1])}"
    "to(f[0]);a.textContent='missed block '+(at+1)+' of '+b.length+': lines '+f[0]+(f[1]>f[0]?'\u2013'+f[1]:'')});"
    "function go(){var h=/^#L(\\d+)$/.exec(location.hash);if(h){to(+h[1]);a.textContent='line '+h[1]}}"
    "addEventListener('hashchange',go);go();"
)


def page_name(index: int) -> str:
    """A file's page: numbered, so no path (hostile or long) ever becomes a file name."""
    return f"{FILES_DIR}/{index:05d}.html"


def _runs(lines: list[dict[str, Any]]) -> str:
    """The annotated text: consecutive lines of one status in one element (each line ends in a newline),
    except a partial line with missed branches: an element of its own whose title names them."""
    out: list[str] = []
    status, texts = None, []  # type: ignore[var-annotated]
    for line in lines:
        mark = STATUS_CLASS.get(line["status"], "n")
        missed = line.get("missed") if mark == "p" else None
        if (mark != status or missed) and texts:
            out.append(_run(status, texts))
            texts = []
        text = html.escape(line["text"], quote=False)
        if missed:
            title = html.escape("missed branches: " + ", ".join(missed), quote=True)
            out.append(f'<span class="p" title="{title}">{text}\n</span>')
            status = None
            continue
        status = mark
        texts.append(text)
    if texts:
        out.append(_run(status, texts))
    return "".join(out)


def _run(mark: str | None, texts: list[str]) -> str:
    body = "\n".join(texts) + "\n"
    return body if mark == "n" else f'<span class="{mark}">{body}</span>'


def _function_list(functions: list[dict[str, Any]]) -> str:
    """The file's functions (its part of the function index), each a link to its first line."""
    if not functions:
        return ""
    called = sum(1 for f in functions if f["hits"])
    rows = "".join(
        f'<tr><td><a href="#L{f["start_line"]}">{html.escape(f["name"])}</a></td><td>{f["start_line"]}</td>'
        f"<td{' class=u' if not f['hits'] else ''}>{f['hits']}</td></tr>"
        for f in functions
    )
    return (
        f'<details id="functions"><summary>Functions ({len(functions)}, {called} called)</summary>'
        f"<table><thead><tr><th>Function</th><th>Line</th><th>Calls</th></tr></thead><tbody>{rows}</tbody>"
        "</table></details>"
    )


def _ratio(counter: dict[str, int]) -> str:
    return (
        "—"
        if not counter["found"]
        else f"{100 * counter['hit'] / counter['found']:.2f}% ({counter['hit']}/{counter['found']})"
    )


def file_page(
    row: dict[str, Any],
    source: dict[str, Any] | None,
    tests: int | None,
    baseline: str | None = None,
    functions: list[dict[str, Any]] | None = None,
) -> str:
    """One file's page: its figures, how many named tests ran it, its functions and its annotated source;
    against ``baseline`` (a snapshot id) each line's change category, from ``source["categories"]``."""
    path = html.escape(row["path"])
    policy = (
        f"default-src 'none'; style-src {_hash(_PAGE_STYLE)}; script-src {_hash(_PAGE_SCRIPT)}; "
        "img-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
    )
    figures = " · ".join(
        f"{name} {_ratio(row[name])}" for name in ("lines", "branches", "functions") if row.get(name)
    )
    head = row.get("headline") or {}
    total = f"total {head['text']} ({head['hit']}/{head['found']}) · " if head.get("found") else ""
    ran = "" if tests is None else f" · {tests} named test{'s' if tests != 1 else ''} ran it"
    legend = "covered · partial (its title names the missed branches) · uncovered · excluded (italic)"
    if source is None or not source.get("lines"):
        body = "<p>This report carries no source for this file.</p>"
    else:
        cut = (
            f"<p>The first {len(source['lines'])} of {source['file_lines']} lines.</p>"
            if source.get("truncated")
            else ""
        )
        categories = source.get("categories") if baseline else None
        gutter = data = ""
        if categories is not None and categories.get("available"):
            gutter = '<pre class="k" aria-hidden="true"></pre>'
            data = (
                f'<script type="application/json" id="categories">{embed_json(categories["ranges"])}</script>'
            )
            legend += (
                f" · left column: each code line's change against the baseline {html.escape(baseline or '')} "
                "(lcov's categories, named in the index's <a href=\"../index.html#change\">change view</a>)"
            )
        elif categories is not None:
            legend += (
                f" · no change categories: {html.escape(str(categories.get('reason') or 'unavailable'))}"
            )
        body = (
            f"{_function_list(functions or [])}"
            f'<div class="src">{gutter}<pre class="g"></pre><pre class="t">{_runs(source["lines"])}</pre></div>'
            f"{cut}{data}"
        )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}"><link rel="icon" href="data:,">'
        f"<title>{path}</title><style>{_PAGE_STYLE}</style></head><body>"
        f'<p><a href="../index.html">all files</a></p><h1>{path}</h1><p>{total}{figures}{ran}</p>'
        f'<p>{legend}</p><p id="at" aria-live="polite"></p>{body}<script>{_PAGE_SCRIPT}</script></body></html>\n'
    )


def write_site(
    directory: Path,
    data: dict[str, Any],
    rows: list[dict[str, Any]],
    sources: dict[str, dict[str, Any]],
    tests: dict[str, int] | None,
    baseline: str | None = None,
    functions: dict[str, Any] | None = None,
) -> Path:
    """The site: ``index.html`` (the dashboard, every file's row, each linked to its page) and one page per
    file under ``files/``. Written beside the target, then moved in: a failure leaves the earlier site whole."""
    pages = {row["path"]: page_name(i) for i, row in enumerate(rows, 1)}
    body = {
        **data,
        "files": {**(data.get("files") or {}), "rows": rows, "total": len(rows), "truncated": False},
    }
    body["pages"] = pages
    by_file: dict[str, list[dict[str, Any]]] = {}
    if functions is not None:
        body["functions"] = functions
        for f in functions["rows"]:
            by_file.setdefault(f["path"], []).append(f)
    directory.mkdir(parents=True, exist_ok=True)
    staging = directory / f".{FILES_DIR}.tmp"
    if staging.exists():
        shutil.rmtree(staging)
    try:
        staging.mkdir()
        for row in rows:
            text = file_page(
                row,
                sources.get(row["path"]),
                None if tests is None else tests.get(row["path"], 0),
                baseline,
                by_file.get(row["path"]),
            )
            (directory / pages[row["path"]].replace(FILES_DIR, staging.name, 1)).write_text(text, "utf-8")
        index_tmp = directory / f".{REPORT_FILE}.tmp"
        index_tmp.write_text(render(body, {}), "utf-8")
        old = directory / FILES_DIR
        if old.exists():
            shutil.rmtree(old)
        os.replace(staging, old)
        os.replace(index_tmp, directory / REPORT_FILE)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        (directory / f".{REPORT_FILE}.tmp").unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(directory)) from error
    return directory / REPORT_FILE
