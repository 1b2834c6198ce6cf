"""Branch identity survives line moves: the same tree gives the same branch categories in every format.

Each test measures the small ``shop`` package (tests/realcov.py) with real
coverage.py at one commit, edits it in a second commit, measures again, stores
the JSON, LCOV and Cobertura reports of both runs, and asks
``coverage_review(task="change")`` for the branch categories of each format
against that format's snapshot of the previous commit.

The oracle is worked out by hand from the package and its tests. At the first
commit coverage.py measures 16 branch outcomes (arcs), 11 of them taken::

    cart.py  6 for price in prices      -> 7 taken, -> 10 taken
             7 if price < 0             -> 8 missed, -> 9 taken
            10 if coupon == "HALF"      -> 11 taken, -> 12 taken
            12 elif coupon == "TENOFF"  -> 13 missed, -> 14 taken
            19 if item.get("gift")      -> 20 taken, -> 21 taken      (in describe's nested label)
            24 if not names             -> 25 missed, -> 26 taken     (describe)
            30 if express               -> 31 missed, -> 32 taken     (shipping)
            32 if weight > 10           -> 33 missed, -> 34 taken     (shipping)

coverage.py JSON and LCOV name each outcome by its target line ("jump to line
7"); Cobertura only says how many of a line's outcomes were covered, so its
outcomes are ordinals with no target. Where the formats carry the same
branches they must agree; the one place they cannot is a decision whose
outcomes trade coverage (the last test).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import attrs
import pytest

from coverage_core import open_project
from coverage_core.service import Service

from .gitrepo import commit, git, make_repo, write
from .realcov import PACKAGE, REPORTS, make_package, measure

FORMATS = ("json", "lcov", "xml")
CART = PACKAGE["shop/cart.py"]
TESTS = PACKAGE["tests/test_cart.py"]
# Every branch of the first commit: 11 covered, 5 not.
UNCHANGED = {"CBC": 11, "UBC": 5}
# Per function: (covered, uncovered) outcomes at the first commit.
DESCRIBE = (3, 1)
SHIPPING = (2, 2)


def _import_all(repo: Path, reports: dict[str, Path], at: str) -> dict[str, str]:
    """Store the three reports of one run as snapshots of ``at``, one suite per format."""
    with open_project(repo) as project:
        svc = Service(project)
        return {
            fmt: svc.call(
                "coverage_import", {"report_path": str(reports[fmt]), "suite": f"unit-{fmt}", "commit": at}
            )["data"]["snapshot"]["snapshot_id"]
            for fmt in FORMATS
        }


@attrs.frozen
class MeasuredShop:
    """The package measured at its first commit, once per module, at ``repo``; ``pristine`` is a copy of
    that checkout. Cobertura names its source folder by absolute path, so each test gets the pristine
    checkout put back at the path it was measured at (``fresh``): its edits, commits and store never reach
    the next test."""

    repo: Path
    pristine: Path

    def fresh(self) -> Path:
        shutil.rmtree(self.repo, ignore_errors=True)
        return Path(shutil.copytree(self.pristine, self.repo, symlinks=True))


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> MeasuredShop:
    root = tmp_path_factory.mktemp("branch-identity")
    repo = make_package(root / "shop")
    measure(repo)
    return MeasuredShop(repo, Path(shutil.copytree(repo, root / "pristine", symlinks=True)))


def branch_change(
    shop: MeasuredShop, files: dict[str, str], *, rename: tuple[str, str] | None = None
) -> dict[str, dict]:
    """The first commit's measurement stored, ``files`` committed (after ``git mv`` of ``rename``) and
    measured: each format's change answer."""
    repo = shop.fresh()
    base = _import_all(
        repo, {kind: repo / name for kind, name in REPORTS.items()}, git(repo, "rev-parse", "HEAD")
    )
    if rename is not None:
        git(repo, "mv", *rename)
    write(repo, files)
    head = commit(repo, "edit")
    cur = _import_all(repo, measure(repo), head)
    with open_project(repo) as project:
        svc = Service(project)
        return {
            fmt: svc.call(
                "coverage_review",
                {
                    "task": "change",
                    "measurement": {"snapshot_id": cur[fmt]},
                    "baseline": {"kind": "explicit", "snapshot_id": base[fmt]},
                },
            )["data"]
            for fmt in FORMATS
        }


def branches(answers: dict[str, dict]) -> dict[str, dict[str, int]]:
    """Each format's non-zero branch categories."""
    return {fmt: {k: v for k, v in data["branches"].items() if v} for fmt, data in answers.items()}


def line_categories(answers: dict[str, dict]) -> dict[str, set[str]]:
    return {fmt: {k for k, v in data["categories"].items() if v} for fmt, data in answers.items()}


def test_inserting_comment_lines_leaves_every_branch_covered_or_uncovered_baseline_code(
    shop: MeasuredShop,
) -> None:
    edited = (
        CART.replace('"""A shopping cart."""\n', '"""A shopping cart."""\n# one\n# two\n# three\n')
        # Between a branch's source (the for line) and its target: the target moves, the source does not.
        .replace("    for price in prices:\n", "    for price in prices:\n        # refuse negatives\n")
        .replace("\n\ndef shipping", "\n\n# Shipping costs,\n# by weight.\ndef shipping")
    )
    answers = branch_change(shop, {"shop/cart.py": edited})
    assert branches(answers) == {fmt: UNCHANGED for fmt in FORMATS}
    assert line_categories(answers) == {fmt: {"CBC", "UBC"} for fmt in FORMATS}


def test_renaming_the_file_carries_its_branches_into_the_new_name(shop: MeasuredShop) -> None:
    # git's rename detection pairs the files; a comment inside total also moves lines within the renamed file.
    edited = CART.replace("    amount = 0\n", "    # start from nothing\n    amount = 0\n")
    answers = branch_change(
        shop,
        {"shop/basket.py": edited, "tests/test_cart.py": TESTS.replace("shop.cart", "shop.basket")},
        rename=("shop/cart.py", "shop/basket.py"),
    )
    assert all(data["diff"]["files_renamed"] == 1 for data in answers.values())
    assert branches(answers) == {fmt: UNCHANGED for fmt in FORMATS}
    assert line_categories(answers) == {fmt: {"CBC", "UBC"} for fmt in FORMATS}


def _function(name: str) -> str:
    """The text of one top-level function of cart.py, with the two blank lines after it."""
    match = re.search(rf"^def {name}\(.*?(?=^def |\Z)", CART, flags=re.DOTALL | re.MULTILINE)
    assert match is not None
    return match.group(0)


def test_moving_a_function_below_another_deletes_and_adds_only_the_moved_functions_branches(
    shop: MeasuredShop,
) -> None:
    describe, shipping = _function("describe"), _function("shipping")
    moved = CART.replace(describe + shipping, shipping.rstrip("\n") + "\n\n\n" + describe.rstrip("\n") + "\n")
    assert moved != CART
    answers = branch_change(shop, {"shop/cart.py": moved})
    # A diff shows a move as one function deleted and re-added: which one is git's choice. The
    # oracle asks the git command line (not the library the service diffs with) which it re-added.
    added = git(shop.repo, "diff", "-U0", "HEAD~1", "HEAD", "--", "shop/cart.py")
    readded = [name for name in ("describe", "shipping") if f"\n+def {name}(" in added]
    assert len(readded) == 1
    hit, missed = DESCRIBE if readded == ["describe"] else SHIPPING
    expected = {
        "CBC": UNCHANGED["CBC"] - hit,
        "UBC": UNCHANGED["UBC"] - missed,
        "DCB": hit,
        "DUB": missed,
        "GNC": hit,
        "UNC": missed,
    }
    assert branches(answers) == {fmt: expected for fmt in FORMATS}


def test_a_new_tested_if_is_the_only_new_branch(shop: MeasuredShop) -> None:
    guarded = CART.replace(
        "def shipping(weight, express=False):\n",
        'def shipping(weight, express=False):\n    if weight < 0:\n        raise ValueError("negative weight")\n',
    )
    tests = TESTS.replace("from shop.cart", "import pytest\n\nfrom shop.cart") + (
        "\n\ndef test_negative_weight_is_refused():\n"
        "    with pytest.raises(ValueError):\n"
        "        shipping(-1)\n"
    )
    answers = branch_change(shop, {"shop/cart.py": guarded, "tests/test_cart.py": tests})
    # Both outcomes of the new `if weight < 0` ran: two new covered branches, the rest unchanged.
    assert branches(answers) == {fmt: {**UNCHANGED, "GNC": 2} for fmt in FORMATS}


def test_code_inserted_at_a_branch_target_keeps_that_decisions_outcome(shop: MeasuredShop) -> None:
    # The new `if` sits where `elif coupon == "TENOFF"` jumped when false: that outcome now jumps to
    # new code, but it is the same decision's same outcome (Cobertura, which has no targets, agrees).
    # The new `if` itself is never true in the tests: one new covered and one new uncovered branch.
    freebie = CART.replace(
        "    return amount\n", '    if coupon == "FREE":\n        amount = 0\n    return amount\n'
    )
    answers = branch_change(shop, {"shop/cart.py": freebie})
    assert branches(answers) == {fmt: {**UNCHANGED, "GNC": 1, "UNC": 1} for fmt in FORMATS}


def test_outcomes_that_trade_coverage_differ_only_where_cobertura_has_no_targets(shop: MeasuredShop) -> None:
    # shipping(30) instead of shipping(3): `if weight > 10` now jumps to line 33, no longer to 34.
    # coverage.py JSON and LCOV name each outcome: one gained (GBC), one lost (LBC). Cobertura's
    # condition-coverage only says "1 of 2 covered" before and after, so it cannot tell them apart.
    tests = TESTS.replace("assert shipping(3) == 4", "assert shipping(30) == 8")
    answers = branch_change(shop, {"tests/test_cart.py": tests})
    traded = {"CBC": UNCHANGED["CBC"] - 1, "UBC": UNCHANGED["UBC"] - 1, "GBC": 1, "LBC": 1}
    assert branches(answers) == {"json": traded, "lcov": traded, "xml": UNCHANGED}


def _brda(rows: list[tuple[int, int, int, int]], lines: dict[int, int]) -> str:
    """An LCOV record of app.js as istanbul's lcov reporter writes it: BRDA blocks number the file's branches."""
    return (
        "TN:\nSF:app.js\n"
        + "".join(f"BRDA:{n},{b},{o},{t}\n" for n, b, o, t in rows)
        + "".join(f"DA:{n},{h}\n" for n, h in lines.items())
        + "end_of_record\n"
    )


def test_a_branch_added_above_does_not_renumber_the_branches_below(tmp_path: Path) -> None:
    # istanbul (and llvm-cov) number blocks across the whole file, so a branch added above
    # shifts every later block number; a block is identified by its rank on its own line.
    src = [f"line {i}" for i in range(1, 11)]
    repo = make_repo(tmp_path / "js", {"app.js": "\n".join(src) + "\n", ".gitignore": "*.info\n"})
    base_commit = git(repo, "rev-parse", "HEAD")
    write(repo, {"app.js": "\n".join(["if (debug) {", "  log()", "}", *src]) + "\n"})
    head = commit(repo, "a guard at the top")
    base = _brda([(3, 0, 0, 1), (3, 0, 1, 0), (7, 1, 0, 2), (7, 1, 1, 1)], {3: 1, 7: 3})
    # The new `if` (line 1) is block 0 and never true; the old blocks are now 1 and 2, three lines down.
    cur = _brda(
        [(1, 0, 0, 0), (1, 0, 1, 1), (6, 1, 0, 1), (6, 1, 1, 0), (10, 2, 0, 2), (10, 2, 1, 1)],
        {1: 1, 6: 1, 10: 3},
    )
    ids = {}
    with open_project(repo) as project:
        svc = Service(project)
        for name, report, at in (("base", base, base_commit), ("cur", cur, head)):
            (repo / f"{name}.info").write_text(report)
            ids[name] = svc.call("coverage_import", {"report_path": f"{name}.info", "commit": at})["data"][
                "snapshot"
            ]["snapshot_id"]
        data = svc.call(
            "coverage_review",
            {
                "task": "change",
                "measurement": {"snapshot_id": ids["cur"]},
                "baseline": {"kind": "explicit", "snapshot_id": ids["base"]},
            },
        )["data"]
    assert data["branches"] == {"CBC": 3, "UBC": 1, "GNC": 1, "UNC": 1}
