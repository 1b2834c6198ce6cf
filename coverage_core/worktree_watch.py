"""Knowing that a checkout has not changed since its last ``git status``, without running another (Linux inotify).

Every answer's claim says whether the checkout is dirty and which measured files changed, so every review
call asks git for the working tree's status. On a 100,000-file checkout one status costs 0.25-0.4 s, and a
stat of every tracked file costs about the same; watching is what makes a warm answer cheap. A
``WorktreeWatch`` watches what a status depends on:

- each directory holding a tracked file (from the index), for events naming a tracked file or directory:
  written, renamed over, deleted, its mode changed;
- the checkout's git folder and the shared one (HEAD, ``index``, ``packed-refs``, ``config``) and the
  ``refs`` tree, for any event at all.

``stale()`` reads the pending events (the kernel queues them before the writing call returns, so a change a
caller has made is always read) and answers whether the last status may be out of date. ``arm()`` is called
before each new status is read: events during that read make the next ``stale()`` true again. A new index
(``git add``, a checkout, a commit) rebuilds the watched directories; a lost event queue marks every
watch stale.

One inotify instance serves the whole process (the per-user limit of instances is 128 by default, shared
with the user's editors). A watch that cannot be set up, on a platform without inotify, at the watch limit,
or on a file system whose changes may come from elsewhere (NFS, SMB, FUSE, 9p), is ``None``: the caller
reads the status on every call, as before. Writes through a shared memory mapping raise no event; no editor
or git command writes tracked files that way.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

_IN_NONBLOCK, _IN_CLOEXEC = 0o4000, 0o2000000
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x2, 0x4, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_Q_OVERFLOW, _IN_IGNORED = 0x4000, 0x8000
_IN_ONLYDIR, _IN_DONT_FOLLOW = 0x01000000, 0x02000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_DONT_FOLLOW
)
_SELF = _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_IGNORED
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name
_READ_SIZE = 1 << 16

# statfs f_type of file systems whose files another machine or process outside the kernel can change
# without an inotify event: NFS, SMB, CIFS, SMB2, FUSE (sshfs and the like), 9p (WSL's Windows drives),
# Ceph, AFS, Coda.
_REMOTE_FS = {
    0x6969,
    0x517B,
    0xFF534D42,
    0xFE534D42,
    0x65735546,
    0x01021997,
    0x00C36400,
    0x5346414F,
    0x73757245,
}


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch, libc.statfs  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def _remote(libc: ctypes.CDLL, path: Path) -> bool:
    buf = ctypes.create_string_buffer(512)  # struct statfs; f_type is its first word on Linux
    if libc.statfs(os.fsencode(path), buf) != 0:
        return True  # unknown: do not trust events from it
    return ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF in _REMOTE_FS


class _Inotify:
    """The process's one inotify instance: watch descriptors shared by every ``WorktreeWatch`` of it."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self.libc, self.fd = libc, fd
        self.lock = threading.Lock()
        # wd -> the watches and their directory keys for it (two watches of one directory share its wd)
        self.owners: dict[int, dict[WorktreeWatch, bytes]] = {}

    def add(self, path: bytes, owner: WorktreeWatch, key: bytes) -> int | None:
        """Watch ``path`` for ``owner``; None when it is gone. Raises OSError at the watch limit."""
        wd = self.libc.inotify_add_watch(self.fd, path, _MASK)
        if wd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                return None
            raise OSError(err, os.strerror(err))
        self.owners.setdefault(wd, {})[owner] = key
        return int(wd)

    def release(self, wd: int, owner: WorktreeWatch) -> None:
        holders = self.owners.get(wd)
        if holders is None:
            return
        holders.pop(owner, None)
        if not holders:
            del self.owners[wd]
            self.libc.inotify_rm_watch(self.fd, wd)

    def drain(self) -> None:
        """Hand every pending event to the watches it concerns."""
        while True:
            try:
                data = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                return
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size
                name = data[offset : offset + size].rstrip(b"\0")
                offset += size
                if mask & _IN_Q_OVERFLOW:
                    for everyone in self.owners.values():
                        for owner in everyone:
                            owner.lost()
                    continue
                for owner, key in list(self.owners.get(wd, {}).items()):
                    owner.event(wd, key, mask, name)
                if mask & _IN_IGNORED:  # the kernel removed the watch (its directory is gone)
                    self.owners.pop(wd, None)


_instance: _Inotify | None = None
_instance_lock = threading.Lock()
_unavailable = False


def _shared() -> _Inotify | None:
    global _instance, _unavailable
    with _instance_lock:
        if _instance is None and not _unavailable:
            libc = _libc()
            fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC) if libc is not None else -1
            if libc is None or fd < 0:
                _unavailable = True  # no inotify, or the user's instances are used up: status on every call
                return None
            _instance = _Inotify(libc, fd)
        return _instance


class WorktreeWatch:
    """Whether a checkout's status may have changed since ``arm()``: see the module's docstring."""

    def __init__(
        self,
        inotify: _Inotify,
        worktree: Path,
        git_dirs: tuple[Path, ...],
        tracked: Callable[[], Iterable[str]],
    ) -> None:
        self._inotify = inotify
        self._worktree = os.fsencode(worktree)
        self._git_dirs = git_dirs
        self._tracked = tracked
        self._files: set[bytes] = set()
        self._dirs: set[bytes] = set()
        self._tree_wds: set[int] = set()
        self._git_wds: set[int] = set()
        self._stale = True
        self._rebuild = True

    @classmethod
    def start(
        cls, worktree: Path, git_dirs: tuple[Path, ...], tracked: Callable[[], Iterable[str]]
    ) -> WorktreeWatch | None:
        """A watch of ``worktree``, or None where events cannot be trusted or watches cannot be had."""
        inotify = _shared()
        if inotify is None or any(_remote(inotify.libc, p) for p in (worktree, *git_dirs)):
            return None
        return cls(inotify, worktree, git_dirs, tracked)

    # -- called by the process's instance, under its lock ----------------------------------------------
    def event(self, wd: int, key: bytes, mask: int, name: bytes) -> None:
        if wd in self._git_wds:
            self._stale = True
            # git replaces its index and refs by renaming a lock file over them (the tracked paths may now
            # differ), and a new refs folder needs a watch of its own
            if mask & (_IN_CREATE | _IN_MOVED_TO | _SELF) or name == b"index":
                self._rebuild = True
            return
        path = key + b"/" + name if key else name
        if path in self._files:
            self._stale = True
        elif path in self._dirs:
            self._stale = self._rebuild = True

    def lost(self) -> None:
        self._stale = self._rebuild = True

    # -- the caller's protocol ---------------------------------------------------------------------------
    def stale(self) -> bool:
        """Whether anything a status depends on may have changed since the last ``arm()``."""
        inotify = self._inotify
        with inotify.lock:
            inotify.drain()
            return self._stale

    def arm(self) -> bool:
        """Start a new interval, just before a status is read; False when the watch had to give up (the
        watch limit): the caller then reads the status on every call."""
        inotify = self._inotify
        with inotify.lock:
            inotify.drain()
            self._stale = False
            if self._rebuild:
                try:
                    self._watch_all()
                except OSError:
                    self._drop()
                    return False
                self._rebuild = False
            return True

    def close(self) -> None:
        inotify = self._inotify
        with inotify.lock:
            self._drop()

    # -- internals -------------------------------------------------------------------------------------
    def _watch_all(self) -> None:
        inotify = self._inotify
        files = {os.fsencode(p) for p in self._tracked()}
        dirs: set[bytes] = set()
        for path in files:
            parent = path.rpartition(b"/")[0]
            while parent and parent not in dirs:
                dirs.add(parent)
                parent = parent.rpartition(b"/")[0]
        wanted = dirs | {b""}
        old = self._tree_wds
        self._tree_wds = set()
        for key in sorted(wanted):
            full = self._worktree + b"/" + key if key else self._worktree
            wd = inotify.add(full, self, key)  # an existing watch of the folder returns its wd
            if wd is not None:
                self._tree_wds.add(wd)
        for wd in old - self._tree_wds:
            inotify.release(wd, self)
        self._files, self._dirs = files, dirs
        git_old = self._git_wds
        self._git_wds = set()
        for folder in self._git_folders():
            wd = inotify.add(os.fsencode(folder), self, b"")
            if wd is not None:
                self._git_wds.add(wd)
        for wd in git_old - self._git_wds:
            inotify.release(wd, self)

    def _git_folders(self) -> list[Path]:
        out: list[Path] = []
        for git_dir in dict.fromkeys(self._git_dirs):
            out.append(git_dir)
            refs = git_dir / "refs"
            if refs.is_dir() and not refs.is_symlink():
                out.extend(Path(root) for root, _dirs, _files in os.walk(refs))
        return out

    def _drop(self) -> None:
        for wd in self._tree_wds | self._git_wds:
            self._inotify.release(wd, self)
        self._tree_wds, self._git_wds = set(), set()
        self._stale = self._rebuild = True
