"""history, file_history and coverage_loss on a real git repository measured by coverage.py at three commits.

The history: commit A is the package as it is; B adds an untested function to
shop/cart.py and an untested module shop/extra.py; C deletes a covered
function with its test and the test of the HALF coupon. Every figure is
checked against the coverage.py JSON reports of those runs (an independent
reader), not against the store.
"""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
from pathlib import Path

import attrs
import pytest

import coverage_core
from coverage_core import (
    CoverageError,
    ErrorCode,
    Project,
    coverage_loss,
    file_history,
    history,
    open_project,
)

from .gitrepo import commit, git, write
from .realcov import PACKAGE, make_package, measure

UNTESTED_REFUND = """

def refund(amount, reason):
    if reason == "damaged":
        return amount
    return amount / 2
"""
EXTRA = '''"""Gift wrapping, never tested."""


def wrap(item, paper="plain"):
    if paper == "gold":
        return f"{item} in gold"
    return f"{item} in {paper}"
'''
DESCRIBE_START = "def describe(items):"
DESCRIBE_END = "def shipping("


@attrs.frozen
class Step:
    sha: str
    reports: Path

    def summary(self) -> dict[str, dict[str, int]]:
        """Per file: coverage.py's own covered and statement counts (the oracle)."""
        doc = json.loads((self.reports / "coverage.json").read_text())
        return {
            path: {"hit": f["summary"]["covered_lines"], "found": f["summary"]["num_statements"]}
            for path, f in doc["files"].items()
        }

    def totals(self) -> tuple[int, int]:
        doc = json.loads((self.reports / "coverage.json").read_text())
        return doc["totals"]["covered_lines"], doc["totals"]["num_statements"]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Step]]:
    """The package's three commits (A, B, C), each measured once; the reports are kept outside the repository."""
    root = tmp_path_factory.mktemp("measured")
    repo = make_package(root / "origin")
    steps = []

    def keep(name: str) -> None:
        out = measure(repo)
        folder = root / "reports" / name
        folder.mkdir(parents=True)
        for path in out.values():
            shutil.copy(path, folder / path.name)
        steps.append(Step(git(repo, "rev-parse", "HEAD"), folder))

    keep("a")
    cart = PACKAGE["shop/cart.py"] + UNTESTED_REFUND
    write(repo, {"shop/cart.py": cart, "shop/extra.py": EXTRA})
    commit(repo, "refund and gift wrapping, untested")
    keep("b")
    cart = cart[: cart.index(DESCRIBE_START)] + cart[cart.index(DESCRIBE_END) :]
    tests = PACKAGE["tests/test_cart.py"].replace("describe, ", "")
    for name in ("test_half_coupon", "test_describe_names_items"):
        start = tests.index(f"def {name}")
        tests = tests[:start] + tests[tests.index("def test_", start + 1) :]
    write(repo, {"shop/cart.py": cart, "tests/test_cart.py": tests})
    commit(repo, "describe goes with its test; the HALF coupon test goes")
    keep("c")
    return repo, steps


@pytest.fixture
def clone(measured: tuple[Path, list[Step]], tmp_path: Path) -> Path:
    """A fresh clone of the measured repository (HEAD at C) with its own, empty store."""
    origin, _ = measured
    target = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(target)], check=True, capture_output=True)
    return target


def _ingest(repo: Path, steps: list[Step], suite: str = "unit") -> list[coverage_core.Snapshot]:
    with open_project(repo) as project:
        return [project.ingest(s.reports / "coverage.json", suite=suite, commit=s.sha) for s in steps]


def test_history_lists_every_snapshot_oldest_first_with_the_reports_own_totals(clone, measured) -> None:
    _, steps = measured
    snaps = _ingest(clone, steps)
    with open_project(clone) as project:
        trend = history(project, suite="unit")
    assert trend.columns == [
        "snapshot_id",
        "created_at",
        "suite",
        "commit",
        "branch",
        "scope",
        "hit",
        "found",
        "percent",
    ]
    rows = trend.fetchall()
    assert [r[0] for r in rows] == [s.snapshot_id for s in snaps]
    assert [r[1] for r in rows] == [s.created_at for s in snaps]
    assert [r[3] for r in rows] == [s.sha for s in steps]
    assert [(r[6], r[7]) for r in rows] == [s.totals() for s in steps]
    assert [r[8] for r in rows] == [
        pytest.approx(100 * hit / found) for hit, found in (s.totals() for s in steps)
    ]


def test_a_history_stays_readable_after_its_project_is_closed(clone, measured) -> None:
    _, steps = measured
    _ingest(clone, steps[:2])
    with open_project(clone) as project:
        trend = history(project)
    columns = trend.fetchnumpy()  # the store is closed by now
    assert list(columns["hit"]) == [steps[0].totals()[0], steps[1].totals()[0]]
    with open_project(clone) as again:  # and nothing of it holds the store
        assert len(history(again).fetchall()) == 2


def test_history_of_one_suite_leaves_other_suites_out_and_no_suite_takes_all(clone, measured) -> None:
    _, steps = measured
    _ingest(clone, steps)
    with open_project(clone) as project:
        project.ingest(steps[2].reports / "coverage.lcov", suite="lcov", commit=steps[2].sha)
        unit = history(project, suite="unit").project("suite").fetchall()
        every = history(project).project("suite").fetchall()
    assert unit == [("unit",)] * 3
    assert every == [("unit",)] * 3 + [("lcov",)]


def test_history_of_branches_counts_branches_and_an_unknown_counter_is_refused(clone, measured) -> None:
    _, steps = measured
    _ingest(clone, steps[:1])
    doc = json.loads((steps[0].reports / "coverage.json").read_text())
    with open_project(clone) as project:
        branches = history(project, counter="branches").project("hit, found").fetchall()
        with pytest.raises(CoverageError) as refused:
            history(project, counter="lnes")
    assert branches == [(doc["totals"]["covered_branches"], doc["totals"]["num_branches"])]
    assert refused.value.code == ErrorCode.INVALID_ARGUMENT


def test_file_history_gives_each_files_counts_on_each_of_the_last_commits(clone, measured) -> None:
    _, steps = measured
    _ingest(clone, steps)
    with open_project(clone) as project:
        rows = file_history(project, last_commits=2, suite="unit").to_dicts()
    expected = [(1, steps[1]), (0, steps[2])]
    assert [(r["commits_ago"], r["commit"], r["path"], r["hit"], r["found"]) for r in rows] == [
        (ago, step.sha, path, counts["hit"], counts["found"])
        for ago, step in expected
        for path, counts in sorted(step.summary().items())
    ]


def test_file_history_skips_unmeasured_commits_and_subset_runs(clone, measured) -> None:
    _, steps = measured
    _ingest(clone, [steps[0], steps[2]])
    one_test = measure(clone, "tests/test_cart.py::test_total_sums_prices")
    with open_project(clone) as project:
        project.ingest(one_test["json"], suite="unit", scope="subset")  # at C: fewer lines, not a loss
        rows = file_history(project, last_commits=3).project("commits_ago, snapshot_id").distinct().fetchall()
        complete = {s.commit: s.snapshot_id for s in project.snapshots(suite="unit") if s.scope == "complete"}
    assert sorted(rows, reverse=True) == [(2, complete[steps[0].sha]), (0, complete[steps[2].sha])]


def test_file_history_of_a_store_with_several_suites_needs_one_named(clone, measured) -> None:
    _, steps = measured
    _ingest(clone, steps[2:])
    with open_project(clone) as project:
        project.ingest(steps[2].reports / "coverage.lcov", suite="lcov", commit=steps[2].sha)
        with pytest.raises(CoverageError) as refused:
            file_history(project, last_commits=3)
        assert len(file_history(project, last_commits=3, suite="lcov").fetchall()) == len(steps[2].summary())
    assert refused.value.code == ErrorCode.INVALID_ARGUMENT
    assert refused.value.details["suites"] == ["lcov", "unit"]


def test_coverage_loss_ranks_files_by_newly_uncovered_lines_as_the_reports_count_them(
    clone, measured
) -> None:
    _, steps = measured
    _ingest(clone, steps)
    with open_project(clone) as project:
        loss = coverage_loss(project, last=3, suite="unit").to_dicts()
    first, last = steps[0].summary(), steps[2].summary()
    zero = {"hit": 0, "found": 0}
    oracle = {
        path: (last[path]["found"] - last[path]["hit"])
        - (first.get(path, zero)["found"] - first.get(path, zero)["hit"])
        for path in last
    }
    assert {r["path"]: r["lost"] for r in loss} == {p: n for p, n in oracle.items() if n > 0}
    assert [r["lost"] for r in loss] == sorted((r["lost"] for r in loss), reverse=True)
    by_path = {r["path"]: r for r in loss}
    extra = by_path["shop/extra.py"]  # new in the window: it starts at 0 of 0
    assert (extra["first_hit"], extra["first_found"], extra["first_percent"]) == (0, 0, None)
    cart = by_path["shop/cart.py"]
    assert (cart["first_hit"], cart["first_found"]) == (
        first["shop/cart.py"]["hit"],
        first["shop/cart.py"]["found"],
    )
    assert (cart["last_hit"], cart["last_found"]) == (
        last["shop/cart.py"]["hit"],
        last["shop/cart.py"]["found"],
    )
    assert {(r["from_commit"], r["to_commit"]) for r in loss} == {(steps[0].sha, steps[2].sha)}


def test_deleting_covered_code_is_not_a_loss_but_new_untested_code_is(clone, measured) -> None:
    _, steps = measured
    _ingest(clone, steps)
    with open_project(clone) as project:
        b_to_c = {r["path"]: r for r in coverage_loss(project, last=2).to_dicts()}
        a_to_b = {r["path"]: r for r in coverage_loss(project, last=2, ref=steps[1].sha).to_dicts()}
    # B -> C: describe() went with its test (its one uncovered line with it) and the HALF coupon's test went
    # (one more uncovered line): cart.py's percent falls, yet by coverage.py's own count no more lines are missed.
    b, c = steps[1].summary()["shop/cart.py"], steps[2].summary()["shop/cart.py"]
    assert c["hit"] / c["found"] < b["hit"] / b["found"]
    assert c["found"] - c["hit"] == b["found"] - b["hit"]
    assert "shop/cart.py" not in b_to_c
    # A -> B: the untested refund() and the untested module are the loss.
    assert set(a_to_b) == {"shop/cart.py", "shop/extra.py"}


def test_a_loss_needs_two_measured_commits_in_the_window(clone, measured) -> None:
    _, steps = measured
    _ingest(clone, steps[2:])
    with open_project(clone) as project:
        with pytest.raises(CoverageError) as refused:
            coverage_loss(project, last=10)
        with pytest.raises(CoverageError) as zero:
            coverage_loss(project, last=0)
    assert refused.value.code == ErrorCode.NOT_FOUND
    assert refused.value.details["measured_commits"] == 1
    assert zero.value.code == ErrorCode.INVALID_ARGUMENT


def test_the_analysis_functions_are_exported_with_docstrings_that_show_an_example() -> None:
    for name in ("history", "file_history", "coverage_loss"):
        assert name in coverage_core.__all__
        doc = inspect.getdoc(getattr(coverage_core, name))
        assert doc and "Example" in doc and "Columns" in doc, name


def test_every_public_method_of_project_has_a_docstring() -> None:
    public = [name for name, member in vars(Project).items() if callable(member) and not name.startswith("_")]
    assert public
    assert [name for name in public if not inspect.getdoc(getattr(Project, name))] == []
    assert inspect.getdoc(open_project)
