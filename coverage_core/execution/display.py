"""The one display of a registration: what `command show/list/approve`, the dashboard and MCP answers show.

One word per line, each quoted by ``words.quoted`` (LF, TAB, runs of spaces
and every non-ASCII character escaped), so no byte of a registration moves a
terminal's cursor, starts a line of its own or hides under padding, and two
registrations that differ never read alike. The lines hold everything an
approval binds: argv with the executable argv[0] resolves to (path, real path,
content hash), cwd, timeout, environment, args policy and selector roots,
artifacts; then the decisions.
"""

from __future__ import annotations

from typing import Any

from .words import quoted


def _executable(found: dict[str, Any]) -> list[str]:
    if "error" in found:
        return [f"  executable: not found ({found['error']})"]
    which = "approved" if found.get("approved") else "resolves now to (approval records this)"
    return [
        f"  executable {which}: {quoted(found['path'])}",
        f"    real path: {quoted(found['real_path'])}",
        f"    sha256: {found['sha256']}",
    ]


def _artifact(a: dict[str, Any]) -> list[str]:
    if "composite" in a:
        body = a["composite"]
        out = [f"  composite artifact: inventory {quoted(body['inventory'])}"]
        for r in body["reports"]:
            variant = f" variant {quoted(r['variant'])}" if r.get("variant") else ""
            out.append(f"    report: {quoted(r['path'])} component {quoted(r['component'])}{variant}")
        return out
    return [
        f"  artifact: {quoted(a['path'])} suite {quoted(a['suite'])} format {a['format'] or 'detected'} "
        f"scope {a['scope']}"
    ]


def registration_lines(c: dict[str, Any]) -> list[str]:
    """A command record (``registry.show_command`` or a ``list_commands`` item) as display lines."""
    out = [f"command {c['id']}  status {c['status']}", f"  name: {quoted(c['name'])}"]
    if c.get("not_runnable"):
        out.append(f"  NOT RUNNABLE: {c['not_runnable']}")
    out += [f"  argv[{i}]: {quoted(word)}" for i, word in enumerate(c["argv"])]
    if "executable" in c:
        out += _executable(c["executable"])
    if "cwd" in c:
        out.append(f"  cwd: {quoted(c['cwd'])}")
        out.append(f"  timeout: {c['timeout_s']} s")
    out.append(f"  args_policy: {c['args_policy']}")
    if c.get("selector_roots"):
        out.append("  selector_roots: " + " ".join(quoted(r) for r in c["selector_roots"]))
    if "env" in c:
        out += [f"  env: {quoted(k)} = {quoted(v)}" for k, v in c["env"].items()] or [
            "  env: (none registered)"
        ]
    if "runners" in c:  # the declared environment (``environment``): presets and the inherit allow-list
        out.append("  runners: " + (" ".join(quoted(r) for r in c["runners"]) or "(none)"))
        out.append("  inherit: " + (" ".join(quoted(n) for n in c["inherit"]) or "(none)"))
    elif "cwd" in c:
        out.append("  runners: (registered before declared environments: the base only)")
    for a in c.get("artifacts", []):
        out += _artifact(a)
    if "content_hash" in c:
        out.append(f"  content hash: {c['content_hash']}")
    for d in c.get("decisions", []):
        note = f" note {quoted(d['note'])}" if d.get("note") else ""
        out.append(f"  {d['decision']} by {quoted(d['by'])} via {d['via']} at {d['at'][:19]}{note}")
    if c["status"] == "pending" and c.get("approve_with"):
        out.append(f"  approve with: {c['approve_with']}")
    return out
