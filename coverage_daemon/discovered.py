"""Checkouts the daemon found with libgit2, kept per requested path while the folders they rest on are unchanged.

Every request names its repository by a path (the ``x-coverage-mcp-repo`` header), and finding the checkout
behind it (``git.discover``: libgit2's discovery, ownership checks and the repository's open) cost more than
answering a cached read, plus a hop to a worker thread. A found checkout is kept with the identity of each
folder from the path up to the checkout's root and of the root's ``.git`` entry (device, inode, modification
time, owner and mode): a new ``.git`` anywhere on that chain (a nested repository), a folder removed, replaced
or moved, a linked worktree's ``.git`` file rewritten or a change of owner or mode changes one of them, and the
next request discovers again. A path not below its checkout's root as named (through a symbolic link, or
inside ``.git``) is never kept.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from coverage_core.checkout import Checkout

# Requests name a few checkouts; the bound keeps a caller cycling through paths from growing the daemon.
MAX_KEPT = 256

Identity = tuple[tuple[int, int, int, int, int], ...]


def _identity(path: str, root: Path) -> Identity | None:
    """The chain's identities, or None when ``path`` is not at or below ``root`` or a folder is gone."""
    chain: list[str] = []
    current = os.path.normpath(path)
    top = str(root)
    git_entry = os.path.join(top, ".git")
    if current == git_entry or current.startswith(git_entry + os.sep):
        return None
    while True:
        chain.append(current)
        if current == top:
            break
        parent = os.path.dirname(current)
        if parent == current:  # reached / without meeting the root: not below it
            return None
        current = parent
    chain.append(git_entry)
    try:
        stats = [os.stat(p, follow_symlinks=False) for p in chain]
    except OSError:
        return None
    return tuple((s.st_dev, s.st_ino, s.st_mtime_ns, s.st_uid, s.st_mode) for s in stats)


class Discovered:
    """``git.discover``'s answers per requested path (see the module's docstring). ``get`` is cheap enough for
    the event loop; ``find`` discovers (on a worker thread) and keeps what it found."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, tuple[Identity, Checkout]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str) -> Checkout | None:
        with self._lock:
            found = self._kept.get(path)
        if found is None:
            return None
        identity, checkout = found
        if _identity(path, checkout.worktree_path) != identity:
            with self._lock:
                if self._kept.get(path) is found:
                    del self._kept[path]
            return None
        return checkout

    def find(self, path: str, discover: Callable[[str], Checkout]) -> Checkout:
        """``discover(path)``, kept when the chain's identity read after it is that of the checkout a second
        discovery finds (a folder changed during the first then is not kept with the wrong checkout)."""
        checkout = discover(path)
        identity = _identity(path, checkout.worktree_path)
        if identity is not None and discover(path) == checkout:
            with self._lock:
                self._kept[path] = (identity, checkout)
                self._kept.move_to_end(path)
                while len(self._kept) > MAX_KEPT:
                    self._kept.popitem(last=False)
        return checkout
