"""Git identity of a checkout (pygit2): repository key, worktree, HEAD, dirty, ancestry.

The canonical repository key is the real path of git's *common* directory, so
every linked worktree of one repository maps to one key, one project id and
one store. Nothing here writes to the repository.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar, cast

import pygit2

from .checkout import Checkout, checkout_of
from .errors import CoverageError, ErrorCode
from .worktree_watch import WorktreeWatch

# Status flags that make a checkout dirty: tracked changes, staged or not.
# Untracked and ignored files (report files among them) do not.
_DIRTY = (
    pygit2.enums.FileStatus.INDEX_NEW
    | pygit2.enums.FileStatus.INDEX_MODIFIED
    | pygit2.enums.FileStatus.INDEX_DELETED
    | pygit2.enums.FileStatus.INDEX_RENAMED
    | pygit2.enums.FileStatus.INDEX_TYPECHANGE
    | pygit2.enums.FileStatus.WT_MODIFIED
    | pygit2.enums.FileStatus.WT_DELETED
    | pygit2.enums.FileStatus.WT_RENAMED
    | pygit2.enums.FileStatus.WT_TYPECHANGE
)


# Trees (path -> blob id) kept per Git object, newest last: HEAD and a snapshot's commit or two.
BLOB_ID_COMMITS = 4


def discover(path: str | os.PathLike[str] = ".") -> Checkout:
    """The checkout containing ``path``, or ``not_a_repository``."""
    start = Path(path).expanduser().absolute()
    try:
        exists = start.exists()
    except (OSError, ValueError) as exc:  # too long, a NUL byte, a loop of links
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CoverageError(
            ErrorCode.NOT_A_REPOSITORY,
            f"{_shown(start)}: not a usable path ({reason})",
            "Run inside a git checkout or pass --repo PATH to one.",
        ) from None
    if not exists:
        raise CoverageError(
            ErrorCode.NOT_A_REPOSITORY,
            f"{_shown(start)}: no such directory",
            "Run inside a git checkout or pass --repo PATH to one.",
        )
    try:
        found = pygit2.discover_repository(str(start))
        repo = pygit2.Repository(found) if found is not None else None
    except pygit2.GitError as exc:
        raise _open_failed(start, exc) from None
    if found is None or repo is None:
        raise CoverageError(
            ErrorCode.NOT_A_REPOSITORY,
            f"{_shown(start)} is not inside a git repository",
            "Run inside a git checkout, pass --repo PATH to one, or create one with `git init`.",
            {"path": str(start)},
        )
    if repo.workdir is None:
        raise CoverageError(
            ErrorCode.NOT_A_REPOSITORY,
            f"{found} is a bare repository: there is no checkout to measure",
            "Run inside a worktree of the repository (git worktree add).",
        )
    return checkout_of(repo.path, repo.workdir)


def _shown(path: Path, limit: int = 300) -> str:
    text = str(path)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _open_failed(start: Path, exc: pygit2.GitError) -> CoverageError:
    """libgit2 refused the repository: someone else's (its ownership check), or a damaged one."""
    owner = _foreign_owner(start)
    if owner is not None:
        directory, uid = owner
        return CoverageError(
            ErrorCode.NOT_A_REPOSITORY,
            f"the repository at {_shown(directory)} belongs to uid {uid}, not to you (uid {os.geteuid()}); "
            "git refuses to open another user's repository",
            f"Run coverage-mcp as the repository's owner. If you trust it, allow it as git does: "
            f"`git config --global --add safe.directory {directory}`.",
            {"path": str(directory), "owner_uid": uid},
        )
    return CoverageError(
        ErrorCode.GIT_ERROR,
        f"git cannot open the repository at {_shown(start)}: {str(exc)[:300]}",
        "Check the repository with `git status` there; `git fsck` finds damage.",
        {"path": str(start)},
    )


def _foreign_owner(start: Path) -> tuple[Path, int] | None:
    """The nearest enclosing directory holding ``.git`` and owned by another user, as libgit2 checks it."""
    me = os.geteuid()
    for directory in (start, *start.parents):
        try:
            if not (directory / ".git").exists() and not (directory / "HEAD").is_file():
                continue
            for candidate in (directory, directory / ".git"):
                info = candidate.stat()
                if info.st_uid != me:
                    return directory, info.st_uid
        except OSError:
            continue
        return None
    return None


P = ParamSpec("P")
R = TypeVar("R")


def _serialized(method: Callable[Concatenate[Git, P], R]) -> Callable[Concatenate[Git, P], R]:
    """One call at a time per repository: libgit2 objects are not safe to share across threads."""

    @functools.wraps(method)
    def wrapper(self: Git, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.lock:
            return method(self, *args, **kwargs)

    # functools.wraps types its result by the wrapper's signature, whose ``self`` a caller could also name; the
    # decorated method keeps the method's own signature.
    return cast("Callable[Concatenate[Git, P], R]", wrapper)


class Git:
    """Read-only git questions about one checkout; safe to call from several threads."""

    def __init__(self, checkout: Checkout) -> None:
        self.checkout = checkout
        self.repo = pygit2.Repository(str(checkout.worktree_path))
        self.lock = threading.RLock()
        self._blob_ids: dict[str, dict[str, str]] = {}
        # The last status's changed paths, kept while the watch sees nothing that could change them.
        self._changed: frozenset[str] | None = None
        # Each arm of the watch starts a new interval; HEAD, branch and dirty are kept for the interval they
        # were read in, while the watch sees nothing (HEAD, refs and the index are watched with the tree).
        self._interval = 0
        self._state: tuple[int, tuple[str | None, str | None, bool]] | None = None
        self._watch = WorktreeWatch.start(
            checkout.worktree_path, (checkout.git_dir, Path(checkout.repo_key)), self._indexed_paths
        )
        if self._watch is not None:
            weakref.finalize(self, self._watch.close)

    @property
    def watching(self) -> bool:
        """Whether the working tree is watched, so an unchanged checkout's status is not read again."""
        return self._watch is not None

    def close(self) -> None:
        """Stop watching the working tree (the process's watch descriptors are shared and limited)."""
        with self.lock:
            if self._watch is not None:
                self._watch.close()
                self._watch = None
            self._changed = None

    # -- state of the checkout ---------------------------------------------
    @_serialized
    def head_commit(self) -> str | None:
        if self.repo.head_is_unborn:
            return None
        return str(self.repo.head.target)

    @_serialized
    def branch(self) -> str | None:
        if self.repo.head_is_unborn or self.repo.head_is_detached:
            return None
        return self.repo.head.shorthand

    @_serialized
    def is_dirty(self) -> bool:
        return bool(self._status())

    @_serialized
    def state(self) -> tuple[str | None, str | None, bool]:
        """HEAD's commit, the branch and whether tracked files changed; where the tree is watched, read again
        only after the watch saw something move (a daemon asks this on every call)."""
        kept = self._state
        if (
            self._watch is not None
            and kept is not None
            and kept[0] == self._interval
            and not self._watch.stale()
        ):
            return kept[1]
        dirty = bool(self._status())  # arms the watch first when it was stale: a change from here on is seen
        value = (self.head_commit(), self.branch(), dirty)
        self._state = (self._interval, value) if self._watch is not None else None
        return value

    # -- commits ----------------------------------------------------------
    @_serialized
    def resolve(self, ref: str) -> str:
        """A full commit id for a ref, a branch, a tag or an abbreviated hash."""
        try:
            obj = self.repo.revparse_single(ref)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            raise CoverageError(
                ErrorCode.NOT_FOUND,
                f"{ref!r} does not name a commit in {self.checkout.worktree_path}",
                "Use a branch, a tag or a commit hash that exists here (git log --oneline).",
                {"ref": ref},
            ) from None
        return str(commit.id)

    @_serialized
    def has_commit(self, sha: str) -> bool:
        try:
            return isinstance(self.repo.get(sha), pygit2.Commit)
        except (ValueError, pygit2.GitError):
            return False

    @_serialized
    def merge_base(self, a: str, b: str) -> str | None:
        base = self.repo.merge_base(self.resolve(a), self.resolve(b))
        return None if base is None else str(base)

    @_serialized
    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        a, d = self.resolve(ancestor), self.resolve(descendant)
        return a == d or self.repo.descendant_of(d, a)

    @_serialized
    def distance(self, commit: str, head: str) -> tuple[int, int]:
        """(commits ``head`` has that ``commit`` lacks, and the reverse)."""
        ahead, behind = self.repo.ahead_behind(self.resolve(head), self.resolve(commit))
        return ahead, behind

    @_serialized
    def parent(self, commit: str) -> str | None:
        parents = self.repo[self.resolve(commit)].peel(pygit2.Commit).parent_ids
        return str(parents[0]) if parents else None

    # -- content ------------------------------------------------------------
    @_serialized
    def tracked_files(self, commit: str | None) -> list[str]:
        """Every file path in the tree of ``commit`` (the index when None)."""
        if commit is None:
            return [entry.path for entry in self.repo.index]
        return list(self.blob_ids(commit))  # one tree walk, cached per commit (the lock is reentrant)

    @_serialized
    def blob_ids(self, commit: str) -> dict[str, str]:
        """Path -> git blob id (hex) of every file in the tree of ``commit``, from the trees alone (no
        blob is read). A commit never changes, so the last few answers are kept; do not mutate them."""
        sha = self.resolve(commit)
        cached = self._blob_ids.get(sha)
        if cached is not None:
            return cached
        tree = self.repo[sha].peel(pygit2.Tree)
        out: dict[str, str] = {}
        stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
        while stack:
            prefix, node = stack.pop()
            for entry in node:  # a tree's entries are its subtrees and blobs themselves, always named
                if isinstance(entry, pygit2.Tree):
                    stack.append((f"{prefix}{entry.name}/", entry))
                elif isinstance(entry, pygit2.Blob):
                    out[f"{prefix}{entry.name}"] = str(entry.id)
        self._blob_ids[sha] = out
        while len(self._blob_ids) > BLOB_ID_COMMITS:
            self._blob_ids.pop(next(iter(self._blob_ids)))
        return out

    @_serialized
    def changed_paths(self) -> set[str]:
        """Tracked paths whose index or working-tree content differs from HEAD (what makes the checkout dirty)."""
        return set(self._status())

    def _status(self) -> frozenset[str]:
        # Read anew unless the working-tree watch saw nothing since the last read (worktree_watch.py); the
        # watch is armed before the read, so a change during it makes the next call read again.
        watch = self._watch
        if watch is not None and self._changed is not None and not watch.stale():
            return self._changed
        if watch is not None and not watch.arm():
            self._watch = watch = None
        self._interval += 1
        status = self.repo.status(untracked_files="no", ignored=False)
        changed = frozenset(path for path, flags in status.items() if flags & _DIRTY)
        self._changed = changed if watch is not None else None
        return changed

    def _indexed_paths(self) -> list[str]:
        index = self.repo.index
        index.read(False)  # the index as it is on disk now (a no-op when unchanged)
        return [entry.path for entry in index]

    @_serialized
    def read_blob(self, blob_id: str) -> bytes | None:
        """The content of blob ``blob_id``, or None when the object database has no such blob."""
        try:
            return self._blob_data(blob_id)
        except (ValueError, KeyError, TypeError, pygit2.GitError):
            return None

    def _blob_data(self, oid: str | pygit2.Oid) -> bytes | None:
        """A blob's content read once from the object database: a ``Blob`` object inflates the object
        twice (looked up, then read), 83 ms against 42 ms for the SQLite amalgamation's 9 MB."""
        kind, data = self.repo.odb.read(oid)
        return data if kind == pygit2.enums.ObjectType.BLOB else None

    @_serialized
    def new_file(self, path: str) -> bool:
        """Whether ``path`` (repository-relative) is a file of this checkout that git does not ignore: what
        a report of HEAD may measure before it is committed (staged or untracked). Ask only of paths HEAD's
        tree lacks."""
        if not path or path.startswith("../") or path == ".." or path.startswith("/"):
            return False
        root = self.checkout.worktree_path
        target = root / path
        try:
            if not target.is_file() or target.is_symlink():
                return False
            if not Path(os.path.realpath(target)).is_relative_to(root):
                return False
            return not self.repo.path_is_ignored(path)
        except (OSError, ValueError, pygit2.GitError):
            return False

    def worktree_file(self, path: str) -> bytes | None:
        """The working-tree bytes of tracked ``path``: a regular file inside this checkout, else None."""
        root = self.checkout.worktree_path
        target = root / path
        try:
            if not target.is_file() or target.is_symlink():
                return None
            if not Path(os.path.realpath(target)).is_relative_to(root):  # a linked directory on the way
                return None
            return target.read_bytes()
        except (OSError, ValueError):
            return None

    @staticmethod
    def blob_id(data: bytes) -> str:
        """The git blob id ``data`` would have (git hash-object, no filters)."""
        return str(pygit2.hash(data))

    @_serialized
    def read_file(self, commit: str, path: str) -> bytes | None:
        """The blob at ``path`` in ``commit``, or None when git has no such file."""
        tree = self.repo[self.resolve(commit)].peel(pygit2.Tree)
        try:
            entry = tree[path]
        except KeyError:
            return None
        return self._blob_data(entry.id)
