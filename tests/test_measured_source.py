"""Source text is the measured text: content identity recorded at ingest, on real coverage.py runs.

A report made on a tree with uncommitted edits measured the working-tree text,
so task=source shows that text (kept, zstd-compressed, in the store), and
freshness is decided by content: a file whose blob at HEAD is its measured blob
is fresh however far HEAD has moved.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from coverage_core import open_project
from coverage_core.service import Service

from .gitrepo import commit, git, write
from .realcov import PACKAGE, make_package, measure

CART = PACKAGE["shop/cart.py"]
# Three lines inserted after the docstring, left uncommitted: every later line moves down by three.
EDITED = CART.replace(
    '"""A shopping cart."""\n', '"""A shopping cart."""\n\nRATE = 1  # an uncommitted edit\n\n', 1
)
SHIFT = 3


@pytest.fixture(scope="module")
def measured_dirty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package with EDITED uncommitted in shop/cart.py, measured there (reports untracked beside it)."""
    repo = make_package(tmp_path_factory.mktemp("template") / "shop")
    write(repo, {"shop/cart.py": EDITED})
    measure(repo)
    return repo


@pytest.fixture
def repo(measured_dirty: Path, tmp_path: Path) -> Path:
    """A private copy of the measured repository (its store is made inside it)."""
    return Path(shutil.copytree(measured_dirty, tmp_path / "shop", symlinks=True))


def review(project, **args) -> dict:
    return Service(project).call("coverage_review", args)["data"]


def marked(data: dict) -> dict[int, tuple[str, str]]:
    return {n: (mark, text) for r in data["ranges"] for n, mark, text in r["lines"]}


def assert_shows_the_measured_text(lines: dict[int, tuple[str, str]]) -> None:
    assert lines[2] == ("-", "")
    assert lines[3] == ("c", "RATE = 1  # an uncommitted edit")  # executed at import
    assert lines[4] == ("-", "")
    assert lines[4 + SHIFT] == ("c", "def total(prices, coupon=None):")
    assert lines[7 + SHIFT] == ("p", "        if price < 0:")  # never true
    assert lines[8 + SHIFT] == ("u", '            raise ValueError("negative price")')
    assert lines[12 + SHIFT] == ("p", '    elif coupon == "TENOFF":')
    assert lines[13 + SHIFT] == ("u", "        amount = max(0, amount - 10)")
    assert lines[15 + SHIFT] == ("-", "")


def test_a_report_of_a_dirty_tree_shows_the_working_tree_text_at_the_measured_line_numbers(
    repo: Path,
) -> None:
    with open_project(repo) as project:
        snap = project.ingest(repo / "coverage.json")
        assert snap.dirty
        data = review(project, task="source", file="shop/cart.py", ranges=["1-20"])
    assert_shows_the_measured_text(marked(data))
    assert any("working-tree text kept at ingest" in r for r in data["reasons"])


def test_the_measured_text_is_recorded_by_blob_id_and_kept_compressed_only_where_it_is_not_the_commits(
    repo: Path,
) -> None:
    with open_project(repo) as project:
        project.ingest(repo / "coverage.lcov")
        rows = project.store.con.execute(
            "SELECT f.path, f.content_blob, t.text IS NOT NULL FROM files f "
            "LEFT JOIN file_texts t USING (snap, file_id) ORDER BY f.path"
        ).fetchall()
    assert rows == [
        ("shop/__init__.py", git(repo, "rev-parse", "HEAD:shop/__init__.py"), False),
        ("shop/cart.py", git(repo, "hash-object", "shop/cart.py"), True),
    ]
    assert git(repo, "hash-object", "shop/cart.py") != git(repo, "rev-parse", "HEAD:shop/cart.py")


def test_after_the_edit_is_reverted_source_still_shows_the_text_that_was_measured(repo: Path) -> None:
    with open_project(repo) as project:
        snap = project.ingest(repo / "coverage.json")
    git(repo, "checkout", "--", "shop/cart.py")
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    with open_project(repo) as project:
        data = review(
            project,
            task="source",
            measurement={"snapshot_id": snap.snapshot_id},
            file="shop/cart.py",
            ranges=["1-20"],
        )
    assert_shows_the_measured_text(marked(data))


def test_a_dirty_measurement_imported_later_for_another_commit_says_its_text_is_unavailable(
    repo: Path,
) -> None:
    measured_at = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "--", "shop/cart.py")
    write(repo, {"README": "later\n"})
    commit(repo, "later")
    with open_project(repo) as project:
        # Nothing says this report was of a dirty tree: its identity is taken to be the commit's text,
        # and the report's own line numbers (code past the end, code on blank lines) refute it.
        snap = project.ingest(repo / "coverage.json", commit=measured_at)
        assert not snap.dirty
        data = review(project, task="source", file="shop/cart.py", ranges=["1-20"])
        other = review(
            project,
            task="source",
            file="shop/cart.py",
            lines="1-3",
            measurement={"snapshot_id": snap.snapshot_id},
        )
    assert data["ranges"] == [] and data["claim_status"] == "not_measured"
    assert data["reasons"][0].startswith(
        "measured text unavailable for shop/cart.py: the report measures line"
    )
    assert other["ranges"] == []


def test_a_dirty_snapshot_whose_text_was_not_recorded_says_so_instead_of_showing_the_commits_text(
    repo: Path,
) -> None:
    with open_project(repo) as project:
        snap = project.ingest(repo / "coverage.json")
        # As a store of revision 3 left it: the snapshot is dirty, no identity, no text.
        project.store.con.execute("UPDATE files SET content_blob = NULL")
        project.store.con.execute("DELETE FROM file_texts")
        data = review(project, task="source", file="shop/cart.py", ranges=["1-5"])
    assert snap.dirty and data["ranges"] == []
    assert data["reasons"][0] == (
        "measured text unavailable for shop/cart.py: it was measured on a tree with "
        "uncommitted edits and its text was not recorded"
    )


def suite_content(project) -> dict:
    return Service(project).call("project_context", {})["data"]["suites"][0]["content"]


def test_when_head_moves_on_an_untouched_file_is_fresh_by_content_and_a_touched_one_stale(repo: Path) -> None:
    git(repo, "checkout", "--", "shop/cart.py")
    measure(repo)  # a clean tree now
    with open_project(repo) as project:
        snap = project.ingest(repo / "coverage.json")
        assert suite_content(project)["fresh"] == 2
    write(repo, {"shop/__init__.py": '"""The shop."""\n'})
    commit(repo, "document the package")
    with open_project(repo) as project:
        ctx = Service(project).call("project_context", {})["data"]
        content = ctx["suites"][0]["content"]
        assert ctx["suites"][0]["snapshot_id"] == snap.snapshot_id and ctx["suites"][0]["behind_head"] == 1
        assert content["files"] == [["shop/__init__.py", "stale"]]  # only what is not fresh is named
        assert (content["fresh"], content["stale"], content["unknown"], content["files_truncated"]) == (
            1,
            1,
            0,
            False,
        )
        assert ctx["claim_status"] == "stale"  # the snapshot's claim keeps the commit rule


def test_edits_measured_on_the_working_tree_are_fresh_there_and_once_committed(repo: Path) -> None:
    with open_project(repo) as project:
        project.ingest(repo / "coverage.json")
        # Judged against the working tree, which has the measured edit: fresh before and after the commit
        # (fresh files are counted, not named).
        before = suite_content(project)
        assert (before["fresh"], before["stale"], before["files"]) == (2, 0, [])
    commit(repo, "the edit")
    with open_project(repo) as project:
        after = suite_content(project)
        assert (after["fresh"], after["stale"], after["files"]) == (2, 0, [])


def test_a_dirty_snapshot_matches_the_working_tree_only_while_its_measured_text_is_there(repo: Path) -> None:
    with open_project(repo) as project:
        snap = project.ingest(repo / "coverage.json")
        assert project.measured_matches_worktree(snap)
    write(repo, {"shop/cart.py": EDITED + "# one more edit\n"})
    with open_project(repo) as project:
        assert not project.measured_matches_worktree(snap)
    write(repo, {"shop/cart.py": EDITED, "tests/test_cart.py": PACKAGE["tests/test_cart.py"] + "\n"})
    with open_project(repo) as project:
        assert project.measured_matches_worktree(snap)  # unmeasured files are not part of the identity
    git(repo, "checkout", "--", "shop/cart.py")
    with open_project(repo) as project:
        assert not project.measured_matches_worktree(snap)
    write(repo, {"shop/cart.py": EDITED})
    commit(repo, "the edit")
    with open_project(repo) as project:
        assert not project.measured_matches_worktree(snap)  # HEAD moved: another commit's snapshot


def test_change_reports_per_file_freshness_of_its_current_side(repo: Path) -> None:
    with open_project(repo) as project:
        base = project.ingest(repo / "coverage.json")
    git(repo, "checkout", "--", "shop/cart.py")
    measure(repo, "tests/test_cart.py::test_total_sums_prices")
    with open_project(repo) as project:
        current = project.ingest(repo / "coverage.json")
    args = {
        "measurement": {"snapshot_id": current.snapshot_id},
        "baseline": {"kind": "explicit", "snapshot_id": base.snapshot_id},
    }

    def freshness() -> dict[str, str]:
        with open_project(repo) as project:
            data = review(project, task="change", **args)
        assert list(data["current"]["freshness"]) == [row[0] for row in data["files"]]  # the page's files
        return data["current"]["freshness"]

    assert freshness()["shop/cart.py"] == "fresh"
    write(repo, {"README": "unrelated\n"})
    commit(repo, "HEAD moves on without touching the measured files")
    assert freshness()["shop/cart.py"] == "fresh"
    write(repo, {"shop/cart.py": CART + "# touched\n"})
    commit(repo, "touch the cart")
    assert freshness()["shop/cart.py"] == "stale"


def test_a_clean_snapshot_stored_before_identities_shows_the_commits_text_and_unknown_freshness(
    repo: Path,
) -> None:
    git(repo, "checkout", "--", "shop/cart.py")
    measure(repo)
    with open_project(repo) as project:
        project.ingest(repo / "coverage.json")
        project.store.con.execute("UPDATE files SET content_blob = NULL")  # as revision 3 stored it
        lines = marked(review(project, task="source", file="shop/cart.py", ranges=["1-8"]))
        assert suite_content(project)["files"] == [
            ["shop/__init__.py", "unknown"],
            ["shop/cart.py", "unknown"],
        ]
    assert lines[4] == ("c", "def total(prices, coupon=None):") and lines[8][0] == "u"


def test_line_numbers_are_checked_against_the_measured_text_by_text_of(repo: Path) -> None:
    from coverage_core.review.annotated_source import text_of
    from coverage_core.review.call import Call
    from coverage_core.review.selection import select

    with open_project(repo) as project:
        project.ingest(repo / "coverage.json")
        call = Call(project, project.store.cursor(), {"task": "source"})
        sel = select(call)
        assert len(text_of(call, sel, "shop/cart.py")) == len(EDITED.splitlines()) == 34 + SHIFT
        assert text_of(call, sel, "tests/test_cart.py") == PACKAGE["tests/test_cart.py"].splitlines()


def test_lines_past_the_commits_end_but_within_the_measured_text_are_answered(repo: Path) -> None:
    last = len(EDITED.splitlines())  # the dirty text is SHIFT lines longer than the commit's
    with open_project(repo) as project:
        project.ingest(repo / "coverage.json")
        data = review(project, task="source", file="shop/cart.py", lines=f"{last - 1}-{last}")
        assert [n for n in marked(data)] == [last - 1, last]
        with pytest.raises(Exception) as caught:
            review(project, task="source", file="shop/cart.py", lines=f"{last + 1}-{last + 5}")
        assert f"it has {last} lines as measured" in str(caught.value)
