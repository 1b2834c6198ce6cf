"""A checkout's dirty state stays exact while the working-tree watch keeps the last status.

The oracle is git's own command line (`git status --porcelain`), asked after every change; the answer under
test comes from one long-lived ``Git`` whose status was read before the change, so only the watch can have
told it that something moved.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from coverage_core.git import Git, discover
from coverage_core.worktree_watch import WorktreeWatch

from .gitrepo import commit, git, make_repo

FILES = {
    "top.py": "a = 1\n",
    "pkg/mod.py": "b = 2\n",
    "pkg/sub/deep.py": "c = 3\n",
    "docs/readme.txt": "hi\n",
}


def git_says(repo: Path) -> set[str]:
    """Tracked paths git's command line reports as changed against HEAD (staged or not): `git diff HEAD`."""
    return set(git(repo, "diff", "HEAD", "--name-only", "--no-renames").splitlines())


def _append(repo: Path) -> None:
    with open(repo / "pkg/sub/deep.py", "a") as f:
        f.write("d = 4\n")


def _rename_over(repo: Path) -> None:  # how editors save: a new file renamed over the old one
    (repo / "pkg/mod.py.tmp").write_text("b = 22\n")
    os.replace(repo / "pkg/mod.py.tmp", repo / "pkg/mod.py")


def _delete(repo: Path) -> None:
    (repo / "top.py").unlink()


def _chmod(repo: Path) -> None:
    os.chmod(repo / "pkg/mod.py", 0o755)


def _stage_new(repo: Path) -> None:
    (repo / "pkg/new.py").write_text("e = 5\n")
    git(repo, "add", "pkg/new.py")


def _stage_in_new_folder(repo: Path) -> None:
    (repo / "fresh/inner").mkdir(parents=True)
    (repo / "fresh/inner/x.py").write_text("x = 1\n")
    git(repo, "add", "fresh")


def _remove_folder(repo: Path) -> None:
    shutil.rmtree(repo / "pkg")


def _rename_folder(repo: Path) -> None:  # one event, on the parent, names the folder only
    os.rename(repo / "pkg", repo / "pkg_moved")


def _reset_soft(repo: Path) -> None:
    (repo / "top.py").write_text("a = 10\n")
    commit(repo, "second")
    git(repo, "reset", "-q", "--soft", "HEAD~1")


def _switch_branch_then_edit(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "only_here.py").write_text("o = 1\n")
    commit(repo, "other's file")
    with open(repo / "only_here.py", "a") as f:
        f.write("o = 2\n")


CHANGES: dict[str, Callable[[Path], None]] = {
    "appending to a file two folders down": _append,
    "saving by renaming over the file": _rename_over,
    "deleting a file": _delete,
    "making a file executable": _chmod,
    "staging a new file": _stage_new,
    "staging a file in a new folder": _stage_in_new_folder,
    "removing a whole folder": _remove_folder,
    "renaming a folder": _rename_folder,
    "moving HEAD back with the changes kept staged": _reset_soft,
    "switching branches and editing a file only that branch has": _switch_branch_then_edit,
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", FILES)


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_a_change_after_the_last_status_is_in_the_next_answer(repo: Path, change: str) -> None:
    g = Git(discover(repo))
    assert g.watching, "inotify is available here, so the status must come from the watch"
    assert g.changed_paths() == set() and not g.is_dirty()
    CHANGES[change](repo)
    assert g.changed_paths() == git_says(repo) != set()
    assert g.is_dirty()


def test_a_sequence_of_changes_and_undos_is_followed_by_one_watch(repo: Path) -> None:
    g = Git(discover(repo))
    for change in (_append, _chmod, _stage_new, _delete):
        before = g.changed_paths()
        change(repo)
        assert g.changed_paths() == git_says(repo) != before
    commit(repo, "everything")
    assert g.changed_paths() == set() == git_says(repo)
    _remove_folder(repo)
    assert g.changed_paths() == git_says(repo) != set()
    git(repo, "checkout", "-q", "--", ".")
    assert g.changed_paths() == set() == git_says(repo)


def test_a_file_staged_in_a_new_folder_is_watched_from_then_on(repo: Path) -> None:
    g = Git(discover(repo))
    assert g.changed_paths() == set()
    _stage_in_new_folder(repo)
    assert g.changed_paths() == {"fresh/inner/x.py"}
    git(repo, "commit", "-q", "-m", "fresh")
    assert g.changed_paths() == set()
    (repo / "fresh/inner/x.py").write_text("x = 2\n")
    assert g.changed_paths() == {"fresh/inner/x.py"} == git_says(repo)


def test_a_folder_moved_away_and_back_is_followed(repo: Path) -> None:
    g = Git(discover(repo))
    _rename_folder(repo)
    assert g.changed_paths() == git_says(repo) == {"pkg/mod.py", "pkg/sub/deep.py"}
    os.rename(repo / "pkg_moved", repo / "pkg")
    assert g.changed_paths() == set()
    _append(repo)
    assert g.changed_paths() == {"pkg/sub/deep.py"}


def test_writing_the_same_bytes_again_leaves_the_checkout_clean(repo: Path) -> None:
    g = Git(discover(repo))
    assert not g.is_dirty()
    (repo / "top.py").write_text(FILES["top.py"])
    assert g.changed_paths() == set() == git_says(repo)


def test_a_linked_worktree_sees_its_own_edits_and_not_the_main_ones(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    main_git, linked_git = Git(discover(repo)), Git(discover(linked))
    assert main_git.watching and linked_git.watching
    assert main_git.changed_paths() == linked_git.changed_paths() == set()
    with open(linked / "pkg/mod.py", "a") as f:
        f.write("linked = 1\n")
    assert linked_git.changed_paths() == {"pkg/mod.py"} == git_says(linked)
    assert main_git.changed_paths() == set() == git_says(repo)
    (repo / "top.py").write_text("main = 1\n")
    assert main_git.changed_paths() == {"top.py"}
    assert linked_git.changed_paths() == {"pkg/mod.py"}


def test_files_git_does_not_track_never_make_the_watch_stale(repo: Path) -> None:
    """Reports, caches and build output written next to the sources cost no new status."""
    checkout = discover(repo)
    watch = WorktreeWatch.start(checkout.worktree_path, (checkout.git_dir,), lambda: FILES)
    assert watch is not None
    try:
        assert watch.arm()
        (repo / "coverage.xml").write_text("<coverage/>")
        (repo / "pkg/__pycache__").mkdir()
        (repo / "pkg/__pycache__/mod.cpython-311.pyc").write_bytes(b"\0")
        (repo / "pkg/mod.py.orig").write_text("x")
        assert not watch.stale()
        (repo / "pkg/sub/deep.py").write_text("changed\n")
        assert watch.stale()
        assert watch.arm() and not watch.stale()
    finally:
        watch.close()


def test_two_watches_of_one_checkout_each_see_a_change_and_closing_one_keeps_the_other(repo: Path) -> None:
    first, second = Git(discover(repo)), Git(discover(repo))
    assert first.changed_paths() == second.changed_paths() == set()
    first.close()
    assert not first.watching
    (repo / "top.py").write_text("changed\n")
    assert second.changed_paths() == {"top.py"}
    assert first.changed_paths() == {"top.py"}, "a closed Git still answers, reading the status each time"


def _git_state(repo: Path) -> tuple[str, str | None, bool]:
    branch = git(repo, "branch", "--show-current") or None
    return git(repo, "rev-parse", "HEAD"), branch, bool(git_says(repo))


@pytest.mark.parametrize("between", [False, True], ids=["alone", "after another status read"])
def test_head_branch_and_dirty_are_read_again_after_each_change_and_kept_while_nothing_moves(
    repo: Path, between: bool
) -> None:
    """``Git.state()`` keeps its answer while the watch sees nothing (a daemon asks it on every call), and
    after a commit, a branch switch, a detached HEAD or an edit it answers what git's command line says, even
    when another status read (``changed_paths``) started the watch's new interval in between."""
    g = Git(discover(repo))
    assert g.watching
    assert g.state() == _git_state(repo)
    steps: list[Callable[[Path], object]] = [
        lambda r: (r / "top.py").write_text("a = 2\n"),
        lambda r: commit(r, "second"),
        lambda r: git(r, "checkout", "-q", "-b", "feature"),
        lambda r: commit(r, "on feature"),
        lambda r: git(r, "checkout", "-q", "--detach", "HEAD~1"),
        lambda r: git(r, "checkout", "-q", "main"),
    ]
    for step in steps:
        step(repo)
        if between:
            g.changed_paths()
        assert g.state() == _git_state(repo)
        assert g.state() == _git_state(repo)  # and kept, unchanged, when asked again
