"""The daemon keeps the checkout it found for a requested path while the folders it rests on are unchanged
(coverage_daemon/discovered.py), and discovers again after any change that could give another answer.

The oracle is libgit2's own discovery (``git.discover``) of the same path, asked after each change.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from coverage_core.errors import CoverageError
from coverage_core.git import discover
from coverage_daemon.discovered import MAX_KEPT, Discovered

from .gitrepo import git, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"pkg/sub/mod.py": "a = 1\n", "top.py": "b = 2\n"})


def test_a_path_asked_again_is_answered_without_discovering_until_a_folder_on_its_chain_changes(
    repo: Path,
) -> None:
    kept = Discovered()
    path = str(repo / "pkg" / "sub")
    assert kept.get(path) is None
    assert kept.find(path, discover) == discover(path)
    assert kept.get(path) == discover(path) and kept.get(str(repo)) is None
    (repo / "top.py").write_text("b = 3\n")  # an edit in place changes no folder: still kept
    assert kept.get(path) == discover(path)
    (repo / "pkg" / "sub" / "new.py").write_text("c = 1\n")  # a new entry in a folder of the chain
    assert kept.get(path) is None


@pytest.mark.parametrize("where", ["the asked folder", "a folder between it and the root"])
def test_a_repository_created_inside_the_checkout_is_found_at_the_next_request(
    repo: Path, where: str
) -> None:
    kept = Discovered()
    path = str(repo / "pkg" / "sub")
    kept.find(path, discover)
    nested = repo / "pkg" / "sub" if where == "the asked folder" else repo / "pkg"
    git(nested, "init", "-q", "-b", "main")
    assert kept.get(path) is None
    found = kept.find(path, discover)
    assert found == discover(path) and found.worktree_path == nested.resolve()


def test_a_checkout_moved_away_or_replaced_is_never_answered_from_what_was_kept(
    repo: Path, tmp_path: Path
) -> None:
    kept = Discovered()
    kept.find(str(repo), discover)
    moved = tmp_path / "moved"
    os.rename(repo, moved)
    assert kept.get(str(repo)) is None
    with pytest.raises(CoverageError) as refused:
        kept.find(str(repo), discover)
    assert refused.value.code.value == "not_a_repository"
    make_repo(repo, {"other.py": "x = 1\n"})  # another repository at the same path
    assert kept.get(str(repo)) is None
    assert kept.find(str(repo), discover) == discover(str(repo))
    shutil.rmtree(moved)


def test_a_linked_worktree_whose_git_file_is_rewritten_is_discovered_again(
    repo: Path, tmp_path: Path
) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    kept = Discovered()
    assert kept.find(str(linked), discover).worktree_name == "linked"
    text = (linked / ".git").read_text()
    (linked / ".git").write_text(text)  # rewritten (git worktree repair does this): its mtime moves
    assert kept.get(str(linked)) is None


def test_a_path_inside_the_git_folder_is_never_kept(repo: Path) -> None:
    kept = Discovered()
    inside = str(repo / ".git" / "refs")
    kept.find(inside, discover)
    assert kept.get(inside) is None


def test_the_kept_answers_are_bounded_by_dropping_the_oldest(repo: Path) -> None:
    kept = Discovered()
    folders: list[str] = []
    for i in range(MAX_KEPT + 1):
        folder = repo / "many" / str(i)
        folder.mkdir(parents=True)
        folders.append(str(folder))
    for folder in folders:
        kept.find(folder, discover)
    assert kept.get(folders[0]) is None
    assert kept.get(folders[-1]) == discover(folders[-1])
