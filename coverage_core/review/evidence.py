"""A report's identity: the evidence that a report file describes the working tree as it is now.

One definition, used wherever a report is taken as the current measurement
without being named as another commit's (``diff``/``gate --current REPORT``).
A report is shown to describe the checkout when all of these hold:

1. **the tree**: no file the report measures has uncommitted changes, or every
   one that has is proven measured as it is now by a content checksum (below);
2. **the time**: the report was written after the tree's last change it
   depends on: after HEAD was committed and after every measured file's
   working-tree modification time;
3. **the lines**: every line the report names lies within its file's length in
   the working tree;
4. **the checksums**, where the format carries them: LCOV ``DA:<line>,<count>,
   <checksum>`` (``geninfo --checksum``: the MD5 of the line's text, base64)
   and regions-v1 ``source_sha256`` (the SHA-256 of the file's bytes) must
   match the working tree.

Whatever is missing is named, one reason each (``Evidence.missing``); the
caller's claim is ``limited`` by them. Naming the commit the report measured
(``--commit``) replaces this evidence: the report is then that commit's.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

import attrs

from ..git import Git
from ..report import NormalizedReport
from ..storage.paths import MAPPED, Mapping

# Reason code of an answer whose current report is not shown to describe the working tree.
REPORT_IDENTITY_UNPROVEN = "report_identity_unproven"
MAX_NAMED = 5  # files a reason names
# LCOV records: SF:<path> ... DA:<line>,<count>,<checksum> ... end_of_record
_LCOV_SF = re.compile(rb"^SF:(.*?)\r?$", re.MULTILINE)
_LCOV_DA_SUM = re.compile(rb"^DA:(\d+),[^,\r\n]*,([^\r\n]+?)\r?$", re.MULTILINE)


@attrs.frozen
class Evidence:
    missing: tuple[str, ...]  # one sentence per piece of evidence that is missing

    @property
    def shown(self) -> bool:
        return not self.missing


def _named(paths: Sequence[str]) -> str:
    more = f" and {len(paths) - MAX_NAMED} more" if len(paths) > MAX_NAMED else ""
    return ", ".join(paths[:MAX_NAMED]) + more


def _lcov_checksums(data: bytes) -> dict[str, dict[int, str]]:
    """Report path -> {line: checksum} of an LCOV tracefile's checksummed DA lines."""
    import numpy as np

    out: dict[str, dict[int, str]] = {}
    marks = [(m.start(), m.group(1).decode("utf-8", "replace")) for m in _LCOV_SF.finditer(data)]
    if not marks or b"DA:" not in data:
        return out
    starts = [s for s, _ in marks]
    for m in _LCOV_DA_SUM.finditer(data):
        i = int(np.searchsorted(starts, m.start(), side="right")) - 1
        if i >= 0:
            out.setdefault(marks[i][1], {})[int(m.group(1))] = m.group(2).decode("ascii", "replace")
    return out


def _commit_time(git: Git, sha: str) -> int:
    with git.lock:  # libgit2 objects are not safe to share across threads
        return int(git.repo[sha].commit_time)  # type: ignore[attr-defined]  # a commit's sha names a Commit


def _md5_line(line: bytes) -> str:
    return base64.b64encode(hashlib.md5(line).digest()).decode().rstrip("=")


def report_identity(
    git: Git, report: NormalizedReport, mapping: Mapping, data: bytes, report_path: Path
) -> Evidence:
    """What is missing for the report to describe the working tree now (see the module docstring)."""
    import numpy as np

    missing: list[str] = []
    root = git.checkout.worktree_path
    measured = {
        i: path for i, (path, status) in enumerate(zip(mapping.paths, mapping.status)) if status == MAPPED
    }
    texts: dict[str, bytes | None] = {p: git.worktree_file(p) for p in measured.values()}
    by_report = {report.files[i].path: p for i, p in measured.items()}

    # 4. checksums, where the format carries them (also what proves a dirty file measured as it is).
    proven: set[str] = set()
    mismatched: list[str] = []
    sha = {
        measured[i]: f.source_sha256 for i, f in enumerate(report.files) if i in measured and f.source_sha256
    }
    for path, digest in sha.items():
        text = texts.get(path)
        if text is not None and hashlib.sha256(text).hexdigest() == digest:
            proven.add(path)
        else:
            mismatched.append(path)
    if report.format == "lcov":
        for name, sums in _lcov_checksums(data).items():
            named = by_report.get(name)
            text = texts.get(named) if named else None
            if named is None or not sums:
                continue
            text_lines = (text or b"").split(b"\n")
            if text is not None and all(
                0 < n <= len(text_lines) and _md5_line(text_lines[n - 1].rstrip(b"\r")) == s.rstrip("=")
                for n, s in sums.items()
            ):
                proven.add(named)
            else:
                mismatched.append(named)
    if mismatched:
        missing.append(
            f"the report's content checksums do not match the working tree's {_named(sorted(mismatched))}"
        )

    # 1. the tree: measured files with uncommitted changes, unless a checksum proves them measured as they are.
    dirty = sorted((set(measured.values()) & git.changed_paths()) - proven)
    if dirty:
        missing.append(
            f"uncommitted changes in {_named(dirty)}, and no content checksum in the report shows it measured them"
        )

    # 2. the time: written after HEAD's commit and after every measured file was last modified.
    try:
        written = os.stat(report_path).st_mtime
    except OSError:
        written = None
    head = git.head_commit()
    if written is not None:
        newer: list[str] = []
        if head is not None and _commit_time(git, head) > written:
            newer.append(f"HEAD {head[:12]}")
        for path in measured.values():
            try:
                if os.stat(root / path).st_mtime > written:
                    newer.append(path)
            except OSError:
                continue
        if newer:
            missing.append(f"the report was written before the last change to {_named(newer)}")

    # 3. the lines: every reported line within its file's length in the working tree.
    lines = report.lines.columns
    if len(lines.get("line", ())):
        files, numbers = np.asarray(lines["file"]), np.asarray(lines["line"])
        past: list[str] = []
        for i, path in measured.items():
            text = texts.get(path)
            if text is None:
                continue
            length = text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)
            mine = numbers[files == i]
            if len(mine) and int(mine.max()) > length:
                past.append(f"{path} (line {int(mine.max())} of {length})")
        if past:
            missing.append(f"reported lines lie past the end of {_named(past)}")
    return Evidence(tuple(missing))
