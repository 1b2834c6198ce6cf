"""Each side of a comparison as it was measured: the diff between the texts the two reports measured.

A git diff between two commits (or a commit and the working tree) assumes
each side measured its commit's text (or the tree's). A report of a dirty
tree did not: every stored file carries its content identity (the git blob
id of the text the report measured, ``files.content_blob``, schema revision
4) and, where that text is not the commit's, the text itself
(``file_texts``). ``as_measured`` corrects a diff file by file wherever a
side's identity is not what the diff assumed:

- a file whose measured text is the same on both sides (same blob id) has no
  change at all, so its lines keep their numbers and get no change category
  (an uncommitted edit measured by both sides is not counted twice);
- a file whose measured texts differ from what the diff assumed is diffed
  again, text against text (zero context lines, git's own algorithm);
- a file without a recorded identity on either side keeps git's diff;
- a file only the current side measured that neither commit has (a module
  not committed yet) is added: every line of its measured text is new.

Renames come from the git diff (which file became which); only the hunks
change.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pygit2
import zstandard

from ..diffmap import DiffMap, FileChange
from ..git import Git
from ..model import Snapshot
from .call import Call

if TYPE_CHECKING:
    import numpy as np

Identity = dict[str, str | None]  # path -> blob id of the measured text (None: unknown)


def identity(call: Call, snapshots: Iterable[Snapshot]) -> Identity:
    """Path -> measured blob id of the mapped files of stored ``snapshots`` (the first known wins)."""
    out: Identity = {}
    for s in snapshots:
        for path, blob in call.project.store.content_blobs(s.snapshot_id, call.con).items():
            if out.get(path) is None:
                out[path] = blob
    return out


def worktree_identity(git: Git, paths: Iterable[str], head: str | None, *, new: bool = False) -> Identity:
    """Path -> blob id of ``paths`` as the working tree has them now (what an unstored report measured).

    A path HEAD lacks and git does not track (a module not committed yet) is read from the working tree
    only when ``new``: git's diff to the working tree leaves it out, so what that diff assumed has none."""
    at_head = git.blob_ids(head) if head else {}
    changed = git.changed_paths()
    out: Identity = {}
    for path in paths:
        if path in changed or (new and path not in at_head):
            data = git.worktree_file(path)
            out[path] = None if data is None else Git.blob_id(data)
        else:
            out[path] = at_head.get(path)
    return out


class Texts:
    """The measured text of a blob id: a side's stored text, git's object database, or the working tree."""

    def __init__(self, call: Call, snaps: tuple[int, ...], worktree: bool) -> None:
        self.call, self.snaps, self.worktree = call, snaps, worktree

    def get(self, path: str, blob: str) -> bytes | None:
        call = self.call
        if self.snaps:
            row = call.one(
                "SELECT t.text FROM files f JOIN file_texts t ON t.snap = f.snap AND t.file_id = f.file_id "
                f"WHERE f.snap IN ({','.join(str(int(s)) for s in self.snaps)}) AND f.path = ? "
                "AND f.content_blob = ? LIMIT 1",
                [path, blob],
                detail=("file_texts",),
            )
            if row is not None:
                return zstandard.ZstdDecompressor().decompressobj().decompress(row[0])
        data = call.project.git.read_blob(blob)
        if data is not None:
            return data
        if self.worktree:
            data = call.project.git.worktree_file(path)
            if data is not None and Git.blob_id(data) == blob:
                return data
        return None


def _hunks(old: bytes, new: bytes) -> np.ndarray:
    import numpy as np

    patch = pygit2.Patch.create_from(old, new, context_lines=0)
    rows = [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]
    return np.array(rows, dtype=np.int64).reshape(-1, 4)


def as_measured(
    diff: DiffMap,
    base: Identity,
    cur: Identity,
    base_assumed: dict[str, str],
    cur_assumed: dict[str, str],
    base_texts: Texts,
    cur_texts: Texts,
) -> tuple[DiffMap, list[str]]:
    """``diff`` corrected to the measured texts (see the module docstring), and the paths it corrected.

    ``base_assumed`` / ``cur_assumed``: path -> blob id of the text the git diff compared on each side."""
    import numpy as np

    by_old = {c.old_path: c for c in diff.changes if c.old_path is not None}
    changes = {id(c): c for c in diff.changes}
    added: list[FileChange] = []
    corrected: list[str] = []
    for old_path, b_blob in base.items():
        change = by_old.get(old_path)
        new_path = old_path if change is None else change.new_path
        if b_blob is None or new_path is None:
            continue
        c_blob = cur.get(new_path)
        if c_blob is None:
            continue
        renamed = new_path != old_path
        if b_blob == c_blob:
            if change is None or (renamed and not len(change.hunks)):
                continue
            if not renamed:  # the same measured text on both sides: no change at all
                del changes[id(change)]
                corrected.append(new_path)
                continue
            # A rename whose measured text did not change: the names move, no line does.
            replacement = FileChange("renamed", old_path, new_path, np.empty((0, 4), dtype=np.int64))
        elif b_blob != base_assumed.get(old_path) or c_blob != cur_assumed.get(new_path):
            old, new = base_texts.get(old_path, b_blob), cur_texts.get(new_path, c_blob)
            if old is None or new is None:
                continue  # a measured text that is not kept anywhere: git's diff is the best evidence left
            replacement = FileChange(
                "renamed" if renamed else "modified", old_path, new_path, _hunks(old, new)
            )
        else:
            continue
        corrected.append(new_path)
        if change is not None:
            if replacement.status == "renamed" or len(replacement.hunks):
                changes[id(change)] = replacement
            else:
                del changes[id(change)]
        elif len(replacement.hunks):
            added.append(replacement)
    # A file only the current side measured, that the diff did not see (a module not committed yet, which
    # git's diff to the working tree leaves out while untracked): every line of its measured text is new.
    seen = {c.new_path for c in diff.changes} | {c.new_path for c in added}
    for path, c_blob in cur.items():
        if c_blob is None or path in seen or path in base or c_blob == cur_assumed.get(path):
            continue
        if path in cur_assumed or path in base_assumed:
            continue  # a file of the commits the diff compared: git's diff is right about it
        new = cur_texts.get(path, c_blob)
        if new is None:
            continue
        added.append(FileChange("added", None, path, _hunks(b"", new)))
        corrected.append(path)
    return DiffMap(diff.base, diff.head, (*changes.values(), *added)), corrected
