"""Git diffs as line mappings: which lines a change added, removed or moved.

``diff_trees`` reads the tree diff between a baseline commit and a current
commit (or the working tree) with pygit2, detects renames (``find_similar``)
and keeps, per changed file, its hunks as one small integer array. Nothing
here looks at coverage.

The mapping itself is columnar. A line is an int64 key ``file << 32 | line``
(``file`` is an index the caller chooses), so the lines of every file are
mapped at once with ``searchsorted`` over the hunks of every file, never with a
Python object per line:

- ``forward(keys, hunks)``: where each baseline line is in the current
  version, and whether the diff removed it;
- ``added(keys, hunks)``: which current lines the diff added or changed.

Hunks follow git's unified-diff numbering (read with zero context lines): a
side with ``count`` > 0 covers lines ``start .. start + count - 1``; a side
with ``count`` == 0 is an insertion or deletion point *after* line ``start``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs
import pygit2

from .errors import CoverageError, ErrorCode
from .git import Git

if TYPE_CHECKING:
    import numpy as np

KEY_SHIFT = 32
LINE_MASK = (1 << KEY_SHIFT) - 1

_STATUS = {
    pygit2.enums.DeltaStatus.ADDED: "added",
    pygit2.enums.DeltaStatus.DELETED: "deleted",
    pygit2.enums.DeltaStatus.MODIFIED: "modified",
    pygit2.enums.DeltaStatus.RENAMED: "renamed",
    pygit2.enums.DeltaStatus.COPIED: "added",  # a copy is a new file whatever it resembles
    pygit2.enums.DeltaStatus.TYPECHANGE: "modified",
    pygit2.enums.DeltaStatus.UNTRACKED: "added",
}


@attrs.frozen(eq=False)
class FileChange:
    """One file the diff touches. ``hunks`` columns: old_start, old_lines, new_start, new_lines."""

    status: str  # added | deleted | modified | renamed
    old_path: str | None
    new_path: str | None
    hunks: np.ndarray

    @property
    def path(self) -> str:
        """The file's name in the current version (its old name when deleted)."""
        path = self.new_path if self.new_path is not None else self.old_path
        assert path is not None  # a change has a name on at least one side
        return path

    @property
    def lines_added(self) -> int:
        return int(self.hunks[:, 3].sum()) if len(self.hunks) else 0

    @property
    def lines_removed(self) -> int:
        return int(self.hunks[:, 1].sum()) if len(self.hunks) else 0


@attrs.frozen(eq=False)
class DiffMap:
    """The changes from ``base`` to ``head`` (None: the working tree); empty when they are one commit."""

    base: str | None
    head: str | None
    changes: tuple[FileChange, ...]

    @classmethod
    def empty(cls, commit: str | None = None) -> DiffMap:
        return cls(commit, commit, ())

    def stats(self) -> dict[str, int]:
        count = {s: 0 for s in ("added", "deleted", "modified", "renamed")}
        for c in self.changes:
            count[c.status] += 1
        return {
            "files_changed": len(self.changes),
            **{f"files_{k}": v for k, v in count.items()},
            "lines_added": sum(c.lines_added for c in self.changes),
            "lines_removed": sum(c.lines_removed for c in self.changes),
        }


def diff_trees(git: Git, base: str, head: str | None) -> DiffMap:
    """The diff from commit ``base`` to commit ``head``, or to the working tree when ``head`` is None."""
    with git.lock:  # libgit2 objects are not safe to share across threads
        return _diff_trees(git, base, head)


def _diff_trees(git: Git, base: str, head: str | None) -> DiffMap:
    repo = git.repo
    try:
        base_tree = repo[git.resolve(base)].peel(pygit2.Tree)
        if head is None:
            # `git diff <base>`: the base against the index (staged files, renames
            # among them), merged with the index against the working tree.
            diff = base_tree.diff_to_index(repo.index, context_lines=0)
            diff.merge(repo.diff(context_lines=0))
        else:
            diff = base_tree.diff_to_tree(repo[git.resolve(head)].peel(pygit2.Tree), context_lines=0)
        diff.find_similar()
        # A merged diff regenerates its hunks with git's default context, so
        # its exact changed ranges are read from the line origins instead.
        changes = tuple(_change(patch, zero_context=head is not None) for patch in diff if patch is not None)
    except pygit2.GitError as exc:
        raise CoverageError(
            ErrorCode.GIT_ERROR,
            f"git could not diff {base[:12]} against {(head or 'the working tree')[:12]}: {exc}",
            "Check the repository with `git diff` for the same commits; a damaged object store needs `git fsck`.",
        ) from None
    return DiffMap(base, head, tuple(c for c in changes if c is not None))


def _change(patch: pygit2.Patch, *, zero_context: bool) -> FileChange | None:
    import numpy as np

    delta = patch.delta
    status = _STATUS.get(delta.status)
    if status is None:
        return None
    if zero_context:
        rows = [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]
    else:
        rows = [r for h in patch.hunks for r in _exact_hunks(h)]
    hunks = np.array(rows, dtype=np.int64).reshape(-1, 4)
    old = None if status == "added" else delta.old_file.path
    new = None if status == "deleted" else delta.new_file.path
    return FileChange(status, old, new, hunks)


def _exact_hunks(hunk: pygit2.DiffHunk) -> list[tuple[int, int, int, int]]:
    """The zero-context hunks inside a hunk that carries context lines."""
    out: list[tuple[int, int, int, int]] = []
    # Positions of the last line seen on each side: an insertion or deletion
    # point is "after" that line, as in a zero-context hunk header.
    old_at = hunk.old_start if hunk.old_lines == 0 else hunk.old_start - 1
    new_at = hunk.new_start if hunk.new_lines == 0 else hunk.new_start - 1
    run: list[int] | None = None  # [old_start, old_lines, new_start, new_lines]
    for line in hunk.lines:
        if line.origin == " ":
            if run is not None:
                out.append((run[0], run[1], run[2], run[3]))
                run = None
            old_at, new_at = line.old_lineno, line.new_lineno
        elif line.origin in ("-", "+"):
            if run is None:
                run = [old_at, 0, new_at, 0]
            if line.origin == "-":
                if run[1] == 0:
                    run[0] = line.old_lineno
                run[1] += 1
                old_at = line.old_lineno
            else:
                if run[3] == 0:
                    run[2] = line.new_lineno
                run[3] += 1
                new_at = line.new_lineno
    if run is not None:
        out.append((run[0], run[1], run[2], run[3]))
    return out


@attrs.frozen(eq=False)
class Hunks:
    """The hunks of many files in one key space, sorted by (file, start)."""

    file_key: np.ndarray  # file << 32
    old_start: np.ndarray
    old_lines: np.ndarray
    new_start: np.ndarray
    new_lines: np.ndarray

    @classmethod
    def collect(cls, changes: tuple[FileChange, ...], file_of: Callable[[FileChange], int | None]) -> Hunks:
        """Hunks of the changes ``file_of`` gives an index to (the others are skipped)."""
        import numpy as np

        parts, files = [], []
        for change in changes:
            index = file_of(change)
            if index is None or not len(change.hunks):
                continue
            parts.append(change.hunks)
            files.append(np.full(len(change.hunks), index, dtype=np.int64))
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return cls(empty, empty, empty, empty, empty)
        h = np.concatenate(parts)
        f = np.concatenate(files)
        order = np.lexsort((h[:, 0], f))
        h, f = h[order], f[order]
        return cls(f << KEY_SHIFT, h[:, 0], h[:, 1], h[:, 2], h[:, 3])


def _inside(keys: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Whether each key lies in one of the sorted, disjoint half-open ranges [start, end)."""
    import numpy as np

    if not len(start):
        return np.zeros(len(keys), dtype=bool)
    j = np.searchsorted(start, keys, side="right") - 1
    hit = j >= 0
    hit[hit] = keys[hit] < end[j[hit]]
    return hit


def forward(keys: np.ndarray, hunks: Hunks) -> tuple[np.ndarray, np.ndarray]:
    """(current key of each baseline key, whether the diff removed that line)."""
    import numpy as np

    if not len(hunks.file_key):
        return keys, np.zeros(len(keys), dtype=bool)
    # Lines at or after a hunk's end shift by its size change; an insertion
    # point (old_lines == 0) after line s shifts lines from s + 1 on.
    threshold = hunks.file_key + hunks.old_start + np.maximum(hunks.old_lines, 1)
    cum = np.concatenate(([0], np.cumsum(hunks.new_lines - hunks.old_lines)))
    after = np.searchsorted(threshold, keys, side="right")
    # Hunks of earlier files also sit before a key: their shift is not this file's.
    earlier = np.searchsorted(threshold, (keys >> KEY_SHIFT) << KEY_SHIFT, side="left")
    shifted = keys + (cum[after] - cum[earlier])
    real = hunks.old_lines > 0
    start = hunks.file_key[real] + hunks.old_start[real]
    removed = _inside(keys, start, start + hunks.old_lines[real])
    return shifted, removed


def added(keys: np.ndarray, hunks: Hunks) -> np.ndarray:
    """Whether the diff added (or changed) each current line."""
    real = hunks.new_lines > 0
    start = hunks.file_key[real] + hunks.new_start[real]
    return _inside(keys, start, start + hunks.new_lines[real])
