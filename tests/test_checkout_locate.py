"""``checkout.locate`` reads a checkout from git's files alone; libgit2's discovery is the oracle.

The command line routes a read to the daemon on ``locate``'s word (tests/test_cli_startup.py), so where
git's layout is plain it must name exactly the checkout ``git.discover`` finds, and where it is not it must
say None rather than guess.
"""

from __future__ import annotations

from pathlib import Path

from coverage_core.checkout import locate
from coverage_core.git import discover

from .gitrepo import git, make_repo


def test_locate_names_the_checkout_libgit2_finds_in_a_main_worktree_a_folder_and_a_linked_worktree(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"src/app.py": "x = 1\n"})
    git(repo, "worktree", "add", "-q", "-b", "topic", str(tmp_path / "linked"))
    (tmp_path / "via").symlink_to(repo / "src")
    places = [repo, repo / "src", tmp_path / "linked", tmp_path / "linked" / "src", tmp_path / "via"]
    for place in places:
        assert locate(place) == discover(place), place
    assert locate(tmp_path / "linked").worktree_name == "linked"  # type: ignore[union-attr]
    assert locate(tmp_path / "linked").store_path == repo / ".coverage-mcp" / "coverage.duckdb"  # type: ignore[union-attr]


def test_locate_says_none_outside_a_repository_in_a_bare_one_and_for_a_broken_git_file(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("not a gitdir line\n")
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / ".git").write_text(f"gitdir: {tmp_path / 'gone'}\n")
    for place in (plain, bare, broken, dangling, tmp_path / "missing"):
        assert locate(place) is None, place
