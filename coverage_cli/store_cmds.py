"""``ingest``, ``snapshots`` and ``show``: the store from the command line.

Each is one operation on whichever owns the store (``coverage_daemon.client``):
``ingest`` the owner's import (coverage_import's envelope), ``snapshots``
coverage_review task=snapshots, ``show`` task=files or, with ``--file``,
task=file. ``--json`` prints that envelope; the rest renders it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from coverage_core import headline as headlines
from coverage_core.display import counted
from coverage_core.review.budget import MAX_BYTES, MAX_PAGE_SIZE, MAX_WORDS
from coverage_core.vocabulary import COUNTERS

from .options import FILE_ORDERS, PAGE_SIZE, json_option, repo_option
from .options import snapshot_id as checked_snapshot_id
from .output import emit_json, handles_errors, percent
from .owner import Owner, store_owner

# A person's listing is bounded by its page size, not by an agent's word budget.
WHOLE_PAGE = {"max_words": MAX_WORDS, "max_bytes": MAX_BYTES}


def echo_totals(totals: dict[str, Any], fmt: str | None = None, tool: str | None = None) -> None:
    """Each counter by name, rounded as the producing tool rounds its figures (exact without a format)."""
    style = headlines.rule_for(fmt, tool).style if fmt else "exact"
    for name in COUNTERS:
        if name in totals:
            c = totals[name]
            shown = headlines.display(style, c["hit"], c["found"])
            click.echo(f"  {name:<16}{c['hit']:>12,}{c['found']:>12,}{shown:>10}")


def _more(envelope: dict[str, Any]) -> None:
    cursor = (envelope.get("page") or {}).get("next_cursor")
    if cursor:
        click.echo(f"  more: --cursor {cursor}")


# Listing filters, as (option, filter key): the empty-listing message names the ones given.
LISTING_FILTERS = (
    ("--snapshot", "snapshot_id"),
    ("--suite", "suite"),
    ("--branch", "branch"),
    ("--commit", "commit"),
)


@click.group("snapshots", invoke_without_command=True)
@click.option("--suite", help="Only this suite.")
@click.option("--branch", help="Only this branch.")
@click.option("--commit", help="Only this commit (a prefix of 4 or more hex digits is enough).")
@click.option(
    "--snapshot", "snapshot_id", help="Only this snapshot, by id or id prefix (to see its record and totals)."
)
@click.option(
    "--limit", type=PAGE_SIZE, help="At most this many per page (newest first); more with --cursor."
)
@click.option("--cursor", help="page.next_cursor of a previous listing.")
@repo_option
@json_option
@click.pass_context
@handles_errors
def snapshots_command(ctx, suite, branch, commit, snapshot_id, limit, cursor, repo, as_json) -> None:
    """List the snapshots of this repository, newest first.

    --json prints the envelope of coverage_review(task="snapshots",
    representation="review"): data.snapshots holds the records. Delete
    snapshots with `snapshots rm ID...` or `snapshots prune --suite S --keep N`.

    Example: coverage-mcp snapshots --suite unit --limit 5
    """
    if ctx.invoked_subcommand is not None:
        given = [
            p.opts[0]
            for p in ctx.command.params
            if p.name not in ("repo", "as_json")
            and ctx.get_parameter_source(p.name) is not click.core.ParameterSource.DEFAULT
        ]
        if given:
            raise click.UsageError(
                f"{', '.join(given)} filter the listing; give {ctx.invoked_subcommand}'s own "
                f"options after it (coverage-mcp snapshots {ctx.invoked_subcommand} --help)"
            )
        return
    wanted = {
        key: value
        for (_flag, key), value in zip(LISTING_FILTERS, (snapshot_id, suite, branch, commit))
        if value is not None
    }
    args: dict[str, Any] = {
        "task": "snapshots",
        "filter": wanted,
        "representation": "review",
        "limits": WHOLE_PAGE,
    }
    if limit is not None:
        args["page_size"] = limit
    if cursor is not None:
        args["cursor"] = cursor
    with store_owner(repo) as owner:
        envelope = owner.call("coverage_review", args)
        every = None
        if not envelope["data"]["snapshots"] and (wanted or cursor) and not as_json:
            every = owner.call(
                "coverage_review",
                {
                    "task": "snapshots",
                    "representation": "compact",
                    "page_size": MAX_PAGE_SIZE,
                    "limits": WHOLE_PAGE,
                },
            )
    if as_json:
        emit_json(envelope)
        return
    if every is not None:
        click.echo(_nothing_matches(wanted, cursor, every))
        return
    render_snapshots(envelope)


def _nothing_matches(wanted: dict[str, Any], cursor: str | None, every: dict[str, Any]) -> str:
    """Why a listing is empty: no snapshot at all, the end of the pages, or filters nothing passed (and what is there)."""
    rows = every["data"]["snapshots"]  # compact: [id, created, suite, format, commit, branch, ...]
    if not rows:
        return "no snapshots yet: store one with `coverage-mcp ingest REPORT`"
    if not wanted:
        return "no more snapshots (the listing ended on the previous page)"
    more = ", ..." if every["page"]["next_cursor"] else ""
    present = {
        "suite": ("suites", {r[2] for r in rows}),
        "branch": ("branches", {r[5] for r in rows if r[5]}),
    }
    shown = " ".join(f"{flag} {wanted[key]}" for flag, key in LISTING_FILTERS if key in wanted)
    context = "; ".join(
        f"{plural}: {', '.join(sorted(values)) or '-'}{more}"
        for key, (plural, values) in present.items()
        if key in wanted
    )
    return f"no snapshot matches {shown} ({context or f'{len(rows)}{more} snapshots in all'})"


def render_snapshots(envelope: dict[str, Any]) -> None:
    snaps = envelope["data"]["snapshots"]
    if not snaps:
        click.echo("no snapshots yet: store one with `coverage-mcp ingest REPORT`")
        return
    # Names are never cut (two suites may differ only at their end): the column fits the longest.
    width = max([len("suite"), *(len(s[2] if isinstance(s, list) else s["suite"]) for s in snaps)]) + 2
    click.echo(
        f"{'snapshot':<22}{'created':<21}{'suite':<{width}}{'format':<11}{'commit':<13}{'total':>10}  "
        f"{'scope':<9}from"
    )
    for s in snaps:
        if isinstance(s, list):  # the compact representation (see its legend)
            (
                sid,
                created,
                suite,
                fmt,
                commit,
                _branch,
                _dirty,
                scope,
                _counter,
                _hit,
                _found,
                cov,
                origin,
                run,
            ) = s
        else:
            sid, created, suite, fmt, commit, scope, origin = (
                s["snapshot_id"],
                s["created_at"],
                s["suite"],
                s["format"],
                s["commit"],
                s["scope"],
                s["provenance"],
            )
            run = s.get("run") and [s["run"]["run_id"], s["run"]["command"], s["run"]["args"]]
            cov = (s.get("headline") or {}).get("percent", "-")
        when = str(created).replace("T", " ")[:19]
        # Where it came from: an import, or the run, its command and case arguments (escaped: hostile text).
        source = origin if not run else " ".join([run[0], repr(run[1])[1:-1], *(repr(a) for a in run[2])])
        click.echo(
            f"{sid:<22}{when:<21}{suite:<{width}}{fmt:<11}{(commit or '-')[:12]:<13}{cov:>10}  {scope:<9}{source}"
        )
    if len(snaps) == 1 and isinstance(snaps[0], dict):
        echo_totals(snaps[0]["totals"], snaps[0]["format"], snaps[0].get("tool"))
    _more(envelope)


def _deletion_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options ``snapshots rm`` and ``snapshots prune`` share."""
    for option in reversed(
        (
            click.option("--force", is_flag=True, help="Also delete the newest snapshot of a suite."),
            click.option(
                "--dry-run", "dry_run", is_flag=True, help="Say what would be deleted; delete nothing."
            ),
            repo_option,
            json_option,
        )
    ):
        func = option(func)
    return func


def _delete(repo: str, body: dict[str, Any]) -> dict[str, Any]:
    """The snapshot_delete row on whichever holds the store: the library's project, or the daemon (the
    capability read from its lock file makes this command the store's owner)."""
    with store_owner(repo) as owner:
        return owner.call("snapshot_delete", body)["data"]


@snapshots_command.command("rm")
@click.argument("snapshot_ids", nargs=-1, required=True, metavar="ID...")
@_deletion_options
@handles_errors
def snapshots_rm_command(snapshot_ids, force, dry_run, repo, as_json) -> None:
    """Delete snapshots (ids or unique id prefixes) and all their detail, in one transaction.

    The newest snapshot of a suite is kept unless --force. --json prints the
    deletion: data.deleted (ids), data.snapshots, data.rows (per table).

    Example: coverage-mcp snapshots rm snap-1a2b --dry-run
    """
    _render_deletion(
        _delete(repo, {"snapshot_ids": list(snapshot_ids), "force": force, "dry_run": dry_run}), as_json
    )


@snapshots_command.command("prune")
@click.option("--suite", required=True, help="The suite to prune.")
@click.option(
    "--keep", type=click.IntRange(0), required=True, help="How many of its newest snapshots to keep."
)
@_deletion_options
@handles_errors
def snapshots_prune_command(suite, keep, force, dry_run, repo, as_json) -> None:
    """Delete every snapshot of a suite but its KEEP newest, in one transaction.

    --keep 0 deletes the newest too, and needs --force. --json prints the
    deletion as `snapshots rm` does.

    Example: coverage-mcp snapshots prune --suite unit --keep 10
    """
    _render_deletion(
        _delete(repo, {"suite": suite, "keep": keep, "force": force, "dry_run": dry_run}), as_json
    )


def _render_deletion(deletion: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit_json({"data": deletion})
        return
    verb = "would delete" if deletion["dry_run"] else "deleted"
    if not deletion["snapshots"]:
        click.echo("nothing to delete")
        return
    for s in deletion["snapshots"]:
        click.echo(
            f"{verb} {s['snapshot_id']}  suite {s['suite']}, commit {(s['commit'] or '-')[:12]}, "
            f"{s['created_at'].replace('T', ' ')[:19]}"
        )
    click.echo(
        f"{verb} {len(deletion['snapshots'])} snapshot(s) and {sum(deletion['rows'].values()):,} detail rows"
        + (" (--dry-run: nothing was deleted)" if deletion["dry_run"] else "")
    )


@click.command("show")
@click.argument("snapshot_id")
@click.option("--file", "file_path", help="Show one file's lines instead of the file list.")
@click.option("--lines", help="With --file: only this line or range A-B.")
@click.option(
    "--order",
    type=click.Choice(FILE_ORDERS),
    default="path",
    show_default=True,
    help="Order of the file list.",
)
@click.option("--limit", type=PAGE_SIZE, default=50, show_default=True, help="Files per page.")
@click.option("--cursor", help="page.next_cursor of a previous answer (replaces --offset).")
@repo_option
@json_option
@handles_errors
def show_command(snapshot_id, file_path, lines, order, limit, cursor, repo, as_json) -> None:
    """Show one snapshot's files, or one file's detail (lines, branches, functions, regions, tests).

    --json prints the envelope of coverage_review(task="files") or, with
    --file, of coverage_review(task="file"). A snapshot's record and totals:
    coverage-mcp snapshots --snapshot SNAPSHOT.

    Example: coverage-mcp show snap-0123456789abcdef --file src/app.py
    """
    args: dict[str, Any] = {
        "measurement": {"snapshot_id": checked_snapshot_id(snapshot_id)},
        "limits": WHOLE_PAGE,
    }
    if file_path:
        args.update(task="file", file=file_path)
        if lines:
            args["lines"] = lines
    else:
        if lines:
            raise click.UsageError("--lines needs --file")
        args.update(task="files", order=order, page_size=limit, representation="review")
    if cursor:
        args["cursor"] = cursor
    with store_owner(repo) as owner:
        envelope = owner.call("coverage_review", args)
        if as_json:
            emit_json(envelope)
            return
        if file_path:
            render_file(envelope)
            return
        data = envelope["data"]
        missing = {
            f["path"]: _missing(owner, data["snapshot_id"], f["path"])
            for f in data["files"]
            if isinstance(f, dict) and _incomplete(f)
        }
        snap = owner.call(
            "coverage_review",
            {"task": "snapshots", "representation": "review", "filter": {"snapshot_id": data["snapshot_id"]}},
        )
    render_files(envelope, missing, snap["data"]["snapshots"][0] if snap["data"]["snapshots"] else None)


def _incomplete(f: dict[str, Any]) -> bool:
    return f["lines"]["hit"] < f["lines"]["found"] or f["branches"]["hit"] < f["branches"]["found"]


def _missing(owner: Owner, snapshot_id: str, path: str) -> tuple[int, str]:
    """One file's BrPart and Missing as ``coverage report -m`` shows them, from its detail (every page)."""
    args: dict[str, Any] = {
        "task": "file",
        "measurement": {"snapshot_id": snapshot_id},
        "file": path,
        "limits": WHOLE_PAGE,
    }
    lines: dict[int, int] = {}
    arcs: list[tuple[int, str, int]] = []
    while True:
        answer = owner.call("coverage_review", args)
        d = answer["data"]
        lines.update(zip(d["lines"]["line"], d["lines"]["hits"]))
        arcs += zip(d["branches"]["line"], d["branches"]["branch"], d["branches"]["taken"])
        cursor = (answer.get("page") or {}).get("next_cursor")
        if cursor is None:
            break
        args["cursor"] = cursor
    return missing_text(lines, arcs)


def missing_text(lines: dict[int, int], arcs: list[tuple[int, str, int]]) -> tuple[int, str]:
    """(BrPart, Missing) the way coverage.py counts and writes them.

    BrPart: branches not taken from lines that ran. Missing: runs of unrun
    statements (a run spans lines that are not statements, as coverage.py's
    ``format_lines`` does), then ``A->B`` for a branch not taken whose source
    and target both ran. Only coverage.py reports name a branch's target
    ("jump to line N", "exit"); for other formats Missing lists lines only.
    """
    missed = {n for n, hits in lines.items() if not hits}
    partial = [(n, label) for n, label, taken in arcs if not taken and lines.get(n)]
    items: list[tuple[int, str]] = []
    start = prev = None
    for n in sorted(lines):
        if n in missed:
            start = n if start is None else start
            prev = n
            continue
        if start is not None:
            items.append((start, f"{start}-{prev}" if start != prev else str(start)))
            start = None
    if start is not None:
        items.append((start, f"{start}-{prev}" if start != prev else str(start)))
    for n, label in partial:
        target = str(label)
        if target == "exit":
            items.append((n, f"{n}->exit"))
        elif target.startswith("jump to line ") and target[13:].isdigit() and int(target[13:]) not in missed:
            items.append((n, f"{n}->{target[13:]}"))
    return len(partial), ", ".join(text for _, text in sorted(items))


def render_files(
    envelope: dict[str, Any],
    missing: dict[str, tuple[int, str]] | None = None,
    snapshot: dict[str, Any] | None = None,
) -> None:
    """The file table with coverage.py's columns; Cover is each file's headline, as the producing tool
    computes and rounds it (coverage.py: statements and branches together; lcov, gcovr, Istanbul: lines).

    ``missing``: BrPart and Missing of the files that miss something (``show`` reads each
    file's detail; without it those columns are left out). ``snapshot``: the snapshot's record,
    for the TOTAL line (its headline: every file, not only this page) and the rounding rule.
    """
    data = envelope["data"]
    click.echo(
        f"{data['snapshot_id']}: {counted(data['total'], 'file')}, suite {envelope['context']['suite']} "
        f"[{data['claim_status']}]" + "".join(f"\n  - {r}" for r in data["reasons"])
    )
    rule = headlines.rule_for(snapshot["format"], snapshot.get("tool")) if snapshot else headlines.LINES_RULE
    rows: list[list[str]] = []
    compact = any(isinstance(f, list) for f in data["files"])
    per_file = [
        (f[10] if len(f) > 10 else 0) if isinstance(f, list) else f.get("excluded", 0) for f in data["files"]
    ]
    excluded = any(per_file)
    for f in data["files"]:
        if isinstance(f, list):  # the compact representation: path, lines hit, lines found (no branches)
            head = {"hit": f[8], "found": f[9]} if len(f) > 9 else {"hit": f[1], "found": f[2]}
            rows.append(
                _row(rule, f[0], {"hit": f[1], "found": f[2]}, None, None, head, f[10] if excluded else None)
            )
        else:
            path = f["path"]
            rows.append(
                _row(
                    rule,
                    path,
                    f["lines"],
                    f["branches"],
                    (missing or {}).get(path, (0, "")) if missing is not None else None,
                    f.get("headline") or f["lines"],
                    f.get("excluded", 0) if excluded else None,
                )
            )
    total_row = None
    if snapshot is not None:
        totals = snapshot["totals"]
        lines = totals.get("statements") or totals.get("lines") or {"hit": 0, "found": 0}
        branches = totals.get("branches") or {"hit": 0, "found": 0}
        head = snapshot.get("headline") or lines
        whole = data["total"] == len(rows) and not (envelope.get("page") or {}).get("offset")
        brpart = sum(part for part, _ in (missing or {}).values()) if whole and missing is not None else None
        total_row = _row(
            rule,
            "TOTAL",
            lines,
            None if compact else branches,
            None if missing is None else (brpart, ""),
            head,
            (sum(per_file) if whole else "") if excluded else None,
        )
    with_missing = missing is not None
    stmts = "Stmts" if rule.style == "coveragepy" else "Lines"
    header = ["Name", stmts, "Miss", "Branch", "BrPart", "Cover"] + (["Excl"] if excluded else [])
    header += ["Missing"] if with_missing else []
    if not with_missing:
        header.remove("BrPart")
    if compact:  # lines only: Cover is the lines' coverage
        header.remove("Branch")
    table = [header, *rows, *([total_row] if total_row else [])]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]

    numbers = len(header) - 1 - with_missing  # right-aligned columns after the name

    def line(cells: list[str]) -> str:
        out = [cells[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1 : 1 + numbers], widths[1:])]
        return "  " + "  ".join(out + cells[1 + numbers :]).rstrip()

    shown = [line(r) for r in rows]
    closing = line(total_row) if total_row else None
    # As wide as the columns (the header's line): a long Missing text is not a reason for a 1,000-dash rule.
    ruler = "  " + "-" * (len(line(header)) - 2)
    click.echo("")
    click.echo(line(header))
    click.echo(ruler)
    for text in shown:
        click.echo(text)
    if closing:
        click.echo(ruler)
        click.echo(closing)
    page = envelope.get("page") or {}
    left = data["total"] - (page.get("offset") or 0) - len(rows)
    if left > 0 and page.get("next_cursor"):
        click.echo(f"  ... {left} more file{'s' if left > 1 else ''}: --cursor {page['next_cursor']}")
    elif page.get("next_cursor"):
        _more(envelope)
    if total_row and with_missing and total_row[4] == "" and not compact:
        click.echo(
            "  (TOTAL's BrPart needs every file's detail: it is shown when one page holds all files, "
            "see --limit)"
        )
    if snapshot is not None and snapshot.get("headline"):
        click.echo(f"  Cover: {snapshot['headline']['counter']} ({rule.name}: {rule.rounding})")


def _row(
    rule: headlines.Rule,
    name: str,
    lines: dict[str, int],
    branches: dict[str, int] | None,
    missing: tuple[int | None, str] | None,
    head: dict[str, int],
    excluded: int | str | None = None,
) -> list[str]:
    cover = headlines.display(rule.style, head["hit"], head["found"])
    excl = [] if excluded is None else [str(excluded)]
    if branches is None:
        return [name, str(lines["found"]), str(lines["found"] - lines["hit"]), cover, *excl]
    row = [name, str(lines["found"]), str(lines["found"] - lines["hit"]), str(branches["found"])]
    if missing is None:
        return [*row, cover, *excl]
    part, text = missing
    return [*row, "" if part is None else str(part), cover, *excl, text]


def render_file(envelope: dict[str, Any]) -> None:
    data = envelope["data"]
    s = data["summary"]
    hit, found = s["lines"]["hit"], s["lines"]["found"]
    click.echo(
        f"{s['path']} in {data['snapshot_id']}: lines {hit}/{found} ({percent(hit, found)}), "
        f"mapping {s['mapping']}"
    )
    missed = [n for n, h in zip(data["lines"]["line"], data["lines"]["hits"]) if h == 0]
    click.echo(f"  uncovered lines: {_ranges(missed) or 'none'}")
    if data.get("excluded_lines"):
        click.echo(f"  excluded lines: {_ranges(data['excluded_lines'])} ({len(data['excluded_lines'])})")
    page = envelope.get("page") or {}
    if page.get("total"):
        shown = f" ({len(data['tests'])} on this page)" if len(data["tests"]) < page["total"] else ""
        click.echo(f"  named tests that ran it: {page['total']}{shown}")
    _more(envelope)


def _ranges(lines: list[int]) -> str:
    out: list[str] = []
    start: int | None = None
    prev = 0  # the last line of the range that starts at ``start``
    for n in lines:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if start != prev else str(start))
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if start != prev else str(start))
    return ", ".join(out)
