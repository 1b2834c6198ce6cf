"""``review`` and ``context``: the agent-facing answers, for people and scripts.

``--json`` prints exactly the envelope the MCP tool returns; without it, a
readable rendering of the same answer.
"""

from __future__ import annotations

import textwrap
from typing import Any

import click

from coverage_core.operations import review_task_table

from .options import (
    CONTEXT_MAX_WORDS,
    FILE_ORDERS,
    MAX_BYTES,
    MAX_WORDS,
    PAGE_SIZE,
    REPRESENTATIONS,
    TASKS,
    baseline_options,
    baseline_spec,
    json_option,
    repo_option,
    review_arguments,
)
from .output import emit_json, handles_errors, percent
from .owner import store_owner
from .store_cmds import render_file, render_files, render_snapshots


def _call(repo: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The operation on the store's owner: this process, or the daemon when it holds the store."""
    with store_owner(repo) as owner:
        return owner.call(name, args)


# What each task answers, for `review --help`: its record's summary (a test checks every task is here).
TASK_HELP: dict[str, str] = {name: review_task_table.BY_NAME[name].summary for name in TASKS}


def _review_help() -> str:
    tasks = "\n".join(
        textwrap.fill(TASK_HELP[name], 88, initial_indent=f"  {name:<13}", subsequent_indent=" " * 15)
        for name in TASKS
    )
    return f"""Answer a coverage question about the stored snapshots: TASK is one of

\b
{tasks}

Every answer starts with how far its evidence goes (claim status): supported;
limited (it answers part, or the data is thinner than asked: the reasons say
why); stale (the snapshot measured another state than the checkout's);
not_measured (nothing stored answers it); invalid. Long answers end with
`more: --cursor ...`.

--json prints exactly the envelope of the MCP tool coverage_review with these
arguments.

Example: coverage-mcp review change --baseline main --max-words 300
"""


@click.command("review", help=_review_help())
@click.argument("task", type=click.Choice(TASKS))
@click.option(
    "--snapshot", "snapshot_id", help="Snapshot id (default: latest of the suite); snapshots: only this one."
)
@click.option("--suite", help="Suite whose latest snapshot to read; snapshots: only this suite.")
@click.option("--branch", help="snapshots: only this branch.")
@click.option("--commit", help="snapshots: only this commit (a prefix of 4 or more hex digits is enough).")
@click.option("--file", "file_path", help="Repository-relative file to focus on (file: the file to show).")
@click.option("--lines", help="A line or range A-B within --file.")
@baseline_options(required=False)
@click.option("--max-words", type=MAX_WORDS, help="Word budget of the answer.")
@click.option("--max-bytes", type=MAX_BYTES, help="Byte budget of the answer (its compact JSON).")
@click.option("--representation", type=click.Choice(REPRESENTATIONS), help="Shape of the answer.")
@click.option("--page-size", type=PAGE_SIZE, help="snapshots, files: records per page.")
@click.option("--order", type=click.Choice(FILE_ORDERS), help="files: the order of the files.")
@click.option("--cursor", help="page.next_cursor of a previous answer.")
@repo_option
@json_option
@handles_errors
def review_command(
    task,
    snapshot_id,
    suite,
    branch,
    commit,
    file_path,
    lines,
    baseline,
    merge_base,
    max_words,
    max_bytes,
    representation,
    page_size,
    order,
    cursor,
    repo,
    as_json,
) -> None:
    """Answer a coverage question (help: ``_review_help``, one line per task)."""
    args = review_arguments(
        task,
        {
            "--snapshot": snapshot_id,
            "--suite": suite,
            "--branch": branch,
            "--commit": commit,
            "--file": file_path,
            "--lines": lines,
            "--baseline": baseline_spec(baseline, merge_base),
            "--max-words": max_words,
            "--max-bytes": max_bytes,
            "--representation": representation,
            "--page-size": page_size,
            "--order": order,
            "--cursor": cursor,
        },
    )
    envelope = _call(repo, "coverage_review", args)
    if as_json:
        emit_json(envelope)
        return
    render_review(envelope)


@click.command("context")
@click.option("--max-words", type=CONTEXT_MAX_WORDS, help="Word budget of the answer.")
@repo_option
@json_option
@handles_errors
def context_command(max_words, repo, as_json) -> None:
    """Show the repository's identity, freshness and latest snapshot per suite.

    Example: coverage-mcp context --json
    """
    envelope = _call(repo, "project_context", {"max_words": max_words} if max_words else {})
    if as_json:
        emit_json(envelope)
        return
    data = envelope["data"]
    p = data["project"]
    click.echo(f"{p['checkout_path']} (project {p['project_id']}, worktree {p['worktree']})")
    click.echo(
        f"  HEAD {(p['head'] or '-')[:12]} on {p['branch'] or '(detached)'}{', dirty' if p['dirty'] else ''}"
    )
    for s in data["suites"]:
        cov = s.get("percent") or (percent(*s["covered"]) if s["covered"] else "-")
        click.echo(
            f"  suite {s['suite']:<14}{s['snapshot_id']}  {cov:>8}  {s['behind_head']} behind HEAD  "
            f"[{s['claim_status']}]"
        )
    if not data["suites"]:
        click.echo("  no snapshots yet")
    click.echo(f"  next: {data['next']}")
    kept = data.get("preserved_wal")
    if kept:
        click.echo("  preserved WAL copies: " + ", ".join(kept["copies"]))
        click.echo(f"    {kept['suggestion']}")


def render_review(envelope: dict[str, Any]) -> None:
    """Any coverage_review answer as text: each task's data as named lines and tables, never a repr."""
    data = envelope["data"]
    task = data.get("task")
    listing = {"snapshots": render_snapshots, "files": render_files, "file": render_file}.get(task or "")
    if listing is not None and data.get("claim_status") != "not_measured":
        listing(envelope)
        return
    for text in _task_lines(data, ""):
        click.echo(text)
    page = envelope.get("page") or {}
    if page.get("next_cursor"):
        click.echo(f"more: --cursor {page['next_cursor']}")


# Keys shown in a task's heading (or not at all: the legend names the columns of the tables).
_HEADING = ("task", "claim_status", "reasons", "reason_codes", "legend", "next")


def _task_lines(data: dict[str, Any], pad: str) -> list[str]:
    task = data.get("task", "answer")
    out = [f"{pad}{task}: {data.get('claim_status', '-')}"]
    out += [f"{pad}  - {r}" for r in data.get("reasons", [])]
    if data.get("next"):
        out.append(f"{pad}  next: {data['next']}")
    special = {"insight": _insight, "source": _source, "history": _history}.get(task)
    if special is not None:
        out += special(data, pad + "  ")
    legend = data.get("legend") or {}
    for key, value in data.items():
        if key in _HEADING or (special is not None and key in _SPECIAL_KEYS[task]):
            continue
        if isinstance(value, dict) and "task" in value:  # task=all: each part's own answer
            out += _task_lines(value, pad + "  ")
        else:
            out += _value_lines(key, value, legend.get(key), pad + "  ")
    return out


# Answers write a coverage figure as an exact [hit, found] pair under these names (incremental's
# baseline/current/union, history's window, a side's lines), and its change as delta_*.
_PAIRS = frozenset({"baseline", "current", "union", "newest", "oldest", "min", "max", "lines"})


def _value_lines(key: str, value: Any, legend: Any, pad: str) -> list[str]:
    label = key.replace("_", " ")
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        if key in _PAIRS and 0 <= value[0] <= value[1]:
            return [f"{pad}{label}: {_cell({'hit': value[0], 'found': value[1]})}"]
        if key.startswith("delta"):
            return [f"{pad}{label}: {value[0]:+} hit, {value[1]:+} found"]
    if _is_scalar(value):
        return [f"{pad}{label}: {_cell(value)}"]
    if isinstance(value, dict):
        if _is_count(value) or all(_is_scalar(v) or _is_count(v) for v in value.values()):
            return [f"{pad}{label}: {_cell(value)}"]
        out = [f"{pad}{label}:"]
        for k, v in value.items():
            out += _value_lines(k, v, None, pad + "  ")
        return out
    if not value:
        return [f"{pad}{label}: none"]
    if all(_is_scalar(v) for v in value):
        return [f"{pad}{label}: {_cell(value)}"]
    return [f"{pad}{label}:", *_table(value, legend, pad + "  ")]


def _table(rows: list[Any], legend: Any, pad: str) -> list[str]:
    """Rows (lists named by their legend, or records) as a table sized to its content; cursors listed below."""
    if all(isinstance(r, dict) for r in rows):
        names = list(dict.fromkeys(k for r in rows for k in r))
        cells = [[r.get(k) for k in names] for r in rows]
    else:
        cells = [r if isinstance(r, list) else [r] for r in rows]
        width = max(len(r) for r in cells)
        names = _legend_names(legend, width) or [f"#{i + 1}" for i in range(width)]
    if isinstance(legend, str):  # columns the legend writes as "name [hit, found]" are counts
        counts = {i for i, n in enumerate(names) if f"{n} [hit, found]" in legend}
        cells = [
            [
                {"hit": c[0], "found": c[1]} if i in counts and isinstance(c, list) and len(c) == 2 else c
                for i, c in enumerate(r)
            ]
            for r in cells
        ]
    cursors = [i for i, n in enumerate(names) if n.endswith("cursor")]
    keep = [i for i in range(len(names)) if i not in cursors]
    table = [[names[i].replace("_", " ") for i in keep]]
    table += [[_cell(r[i] if i < len(r) else None) for i in keep] for r in cells]
    widths = [max(len(row[c]) for row in table) for c in range(len(keep))]
    out = [pad + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
    for r in cells:
        for i in cursors:
            if i < len(r) and r[i]:
                out.append(f"{pad}more of {' '.join(_cell(c) for c in r[:2])}: --cursor {r[i]}")
    return out


def _legend_names(legend: Any, width: int) -> list[str] | None:
    """Column names from a legend such as ``[path, status, UNC, LBC]`` (nested brackets are one column)."""
    if not isinstance(legend, str) or not legend.startswith("["):
        return None
    depth, names, word = 0, [], ""
    for ch in legend[1 : legend.rfind("]")] if "]" in legend else legend[1:]:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            names.append(word.strip())
            word = ""
            continue
        if depth == 0 and ch not in "[]":
            word += ch
        elif depth == 1 and ch == "[" and not word.strip():
            word = ""
    names.append(word.strip())
    names = [n.split("[")[0].strip() or f"#{i + 1}" for i, n in enumerate(names)]
    return names if len(names) == width else None


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _is_count(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"hit", "found"}


def _cell(value: Any) -> str:
    """One value as text: counts as hit/found (percent), spans as A-B, lists joined, mappings as k v."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if _is_scalar(value):
        return str(value)
    if _is_count(value):
        return f"{value['hit']}/{value['found']} ({percent(value['hit'], value['found'])})"
    if isinstance(value, dict):
        return ", ".join(f"{str(k).replace('_', ' ')} {_cell(v)}" for k, v in value.items()) or "none"
    if (
        all(isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) for x in v) for v in value)
        and value
    ):
        return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b, _ in value)  # [start, end, line_count]
    return ", ".join(_cell(v) for v in value) or "none"


_SPECIAL_KEYS = {"insight": ("targets",), "source": ("ranges",), "history": ("points", "window")}


def _insight(data: dict[str, Any], pad: str) -> list[str]:
    """Each target: its uncovered ranges, its partial lines with what they missed, and what is left out."""
    out = []
    for t in data.get("targets", []):
        if isinstance(t, list):
            path, fn, unc, part, shown, count, cut, more = t
            ranges = [
                (r[0], r[1], "partial" if len(r) > 3 else "uncovered", r[4] if len(r) > 4 else [])
                for r in shown
            ]
        else:
            path, fn, unc, part = t["path"], t["function"], t["uncovered_lines"], t["partial_lines"]
            count, cut, more = t["region_count"], t["regions_truncated"], t["ranges_cursor"]
            ranges = [(r["start"], r["end"], r["kind"], r.get("missing") or []) for r in t["ranges"]]
        where = f"{path}:{fn}" if fn else path
        out.append(f"{pad}{where}: {_count(unc, 'uncovered line')}, {_count(part, 'partial line')}")
        spans = [str(a) if a == b else f"{a}-{b}" for a, b, kind, _ in ranges if kind == "uncovered"]
        if spans:
            out.append(f"{pad}  uncovered: {', '.join(spans)}")
        for a, _, kind, missing in ranges:
            if kind == "partial":
                out.append(f"{pad}  partial {a}: {'; '.join(missing) or 'a branch not taken'}")
        if cut:
            out.append(f"{pad}  {len(ranges)} of {count} ranges shown; more: --cursor {more}")
    return out


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _source(data: dict[str, Any], pad: str) -> list[str]:
    out = []
    for r in data.get("ranges", []):
        for line in r["lines"]:
            n, mark, text = (
                line if isinstance(line, list) else (line["line"], line["status"][0], line["text"])
            )
            out.append(f"{pad}{n:>6} {mark} {text}")
        out.append("")
    return out


def _history(data: dict[str, Any], pad: str) -> list[str]:
    out = []
    for point in data.get("points", []):
        if isinstance(point, list):
            sid, when, commit, hit, found, scope, run = point
        else:
            sid, when, commit, hit, found, scope = (
                point[k] for k in ("snapshot_id", "created_at", "commit", "hit", "found", "scope")
            )
            run = point["run"] and [point["run"]["run_id"], point["run"]["command"], point["run"]["args"]]
        origin = (
            f"  {run[0]} {repr(run[1])[1:-1]} {' '.join(repr(a) for a in run[2])}".rstrip() if run else ""
        )
        out.append(
            f"{pad}{str(when).replace('T', ' ')[:19]}  {(commit or '-')[:12]}  {percent(hit, found):>8}  "
            f"({hit}/{found})  {scope}  {sid}{origin}"
        )
    window = dict(data.get("window") or {})
    if window:
        change = window.pop("change", None)
        out += _value_lines("window", window, None, pad)
        if change is not None:  # covered units of the counter, not percentage points
            out.append(f"{pad}  change: {change:+} covered {data.get('counter', 'lines')}")
    return out
