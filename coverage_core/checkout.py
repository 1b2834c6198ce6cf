"""A checkout's identity (``Checkout``) and where it is on disk, readable without libgit2.

``git.discover`` finds a checkout with libgit2 (its ownership checks, its errors) and builds the record
here. ``locate`` reads the same layout from the files git writes (a ``.git`` folder, or a linked
worktree's ``.git`` file naming its git folder, whose ``commondir`` names the shared one) without
importing pygit2: a command that only needs to know whether the daemon owns the store reads it in
microseconds. It is a guess to route by, never an identity to act on: whoever acts (the daemon) finds the
checkout with libgit2 and the caller compares the two ids.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import attrs

# The project store's file inside ``Checkout.store_dir`` (``storage.store`` opens it).
STORE_FILE = "coverage.duckdb"


def project_id_for(repo_key: str) -> str:
    """Stable short project id: the first 16 hex digits of SHA-256(repo key)."""
    return hashlib.sha256(repo_key.encode()).hexdigest()[:16]


@attrs.frozen
class Checkout:
    """One worktree of a repository, as found from a path inside it."""

    repo_key: str  # real path of git's common directory
    project_id: str
    worktree_path: Path  # root of this checkout
    worktree_name: str  # "main" or the linked worktree's name
    main_worktree: Path | None  # root of the main worktree (None for a bare repository)
    git_dir: Path

    @property
    def store_dir(self) -> Path:
        """Where the project store lives: ``<main worktree>/.coverage-mcp``."""
        base = self.main_worktree if self.main_worktree is not None else Path(self.repo_key)
        return base / ".coverage-mcp"

    @property
    def store_path(self) -> Path:
        return self.store_dir / STORE_FILE

    @property
    def worktree_id(self) -> str:
        return hashlib.sha256(str(self.worktree_path).encode()).hexdigest()[:16]


def checkout_of(git_dir: str | Path, workdir: str | Path) -> Checkout:
    """The checkout whose git folder is ``git_dir`` and whose root is ``workdir`` (both as git names them)."""
    git = Path(os.path.realpath(git_dir))
    common = common_dir(git)
    main = common.parent if common.name == ".git" else None
    repo_key = str(common)
    return Checkout(
        repo_key,
        project_id_for(repo_key),
        Path(os.path.realpath(workdir)),
        git.name if git != common else "main",
        main,
        git,
    )


def common_dir(git_dir: Path) -> Path:
    # git's own rule: a linked worktree's gitdir holds a `commondir` file
    # pointing (usually relatively) at the shared repository directory.
    marker = git_dir / "commondir"
    if marker.is_file():
        target = marker.read_text().strip()
        return Path(os.path.realpath(git_dir / target))
    return git_dir


def locate(path: str | os.PathLike[str]) -> Checkout | None:
    """The checkout containing ``path`` as git's files lay it out, or None wherever that is not plain (no
    ``.git`` above it, an unreadable one, a bare repository): then only ``git.discover`` can tell."""
    try:
        start = Path(os.path.realpath(path))
        for directory in (start, *start.parents):
            dot_git = directory / ".git"
            if dot_git.is_dir():
                return checkout_of(dot_git, directory) if (dot_git / "HEAD").is_file() else None
            if dot_git.is_file():
                text = dot_git.read_text(errors="strict").strip()
                if not text.startswith("gitdir:"):
                    return None
                git = directory / text.removeprefix("gitdir:").strip()
                return checkout_of(git, directory) if (git / "HEAD").is_file() else None
    except (OSError, ValueError):
        return None
    return None
