"""Each side compared as it was measured, and freshness against the working tree (issue 24).

Real coverage.py runs of a real package with real history (``tests/sidesfixture.py``):
an agent edits files without committing, measures (an import, then a managed
run), and asks what changed. The uncommitted edit both sides measured must not be
counted twice, and a file modified after it was measured must be ``stale``, by name.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coverage_core.execution import commands
from coverage_core.project import Project, open_project
from coverage_core.service import Service

from .gitrepo import write
from .realcov import measure
from .sidesfixture import MEASURE_COMMAND, build

# An uncommitted edit near the top of the cart: every line below it moves down three.
RATE = '"""A shopping cart."""\n\nRATE = 1  # an uncommitted edit\n\n'
# Code change categories: a line the diff added, changed, deleted or excluded.
CHANGE_CATEGORIES = ("UNC", "GNC", "UIC", "GIC", "EUB", "ECB", "DUB", "DCB")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    return build(tmp_path_factory.mktemp("measured"))


@pytest.fixture
def repo(history: tuple[Path, dict[str, str], Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(history[0], tmp_path / "repo"))


@pytest.fixture
def project(repo: Path) -> Iterator[Project]:
    with open_project(repo) as opened:
        yield opened


def call(project: Project, operation: str, **args: Any) -> dict[str, Any]:
    return Service(project).call(operation, args)["data"]


def edit_cart(repo: Path) -> None:
    cart = (repo / "shop/cart.py").read_text()
    write(repo, {"shop/cart.py": cart.replace('"""A shopping cart."""\n', RATE, 1)})


def test_a_run_on_a_dirty_tree_against_an_import_of_the_same_edit_counts_only_the_file_that_changed_since(
    project: Project, repo: Path
) -> None:
    edit_cart(repo)
    report = measure(repo)["json"]
    imported = project.ingest(report, suite="unit")
    assert imported.dirty
    # Then only shop/__init__.py changes, and a managed run measures the tree again.
    write(repo, {"shop/__init__.py": "VERSION = 1\n"})
    command_id = Service(project).call("register_test_command", MEASURE_COMMAND)["data"]["command"]["id"]
    commands.approve(project, command_id, approved_by="tester", via="cli")
    run = call(project, "run_test", command_id=command_id, wait=True)["run"]
    assert run["state"] == "succeeded", run
    current = run["artifacts"][0]["snapshot_id"]

    change = call(
        project, "coverage_review", task="change", representation="review", measurement={"suite": "unit"}
    )
    assert change["current"]["snapshot_ids"] == [current]
    assert change["baseline"]["snapshot_ids"] == [imported.snapshot_id]
    assert change["regression"] == {"status": "none", "lines": 0}
    assert change["categories"]["LBC"] == 0
    rows = {f["path"]: f for f in change["files"]}
    # shop/cart.py was measured with the same text on both sides: no change category, no lost line.
    cart = rows.get("shop/cart.py")
    assert cart is None or not any(cart["lines"].get(c) for c in (*CHANGE_CATEGORIES, "LBC"))
    assert all(r["path"] != "shop/cart.py" for r in change["ranges"])
    # The one file that changed since: its new line is new code, hit at import.
    assert rows["shop/__init__.py"]["lines"].get("GNC") == 1
    assert change["diff"]["files_changed"] == 1


def test_a_dirty_baseline_is_diffed_from_its_measured_text_to_the_clean_commit_it_was_committed_as(
    project: Project, repo: Path
) -> None:
    from .gitrepo import commit

    edit_cart(repo)
    before = project.ingest(measure(repo)["json"], suite="unit")
    assert before.dirty
    commit(repo, "the edit, committed as measured")
    after = project.ingest(measure(repo)["json"], suite="unit")
    assert not after.dirty
    change = call(
        project,
        "coverage_review",
        task="change",
        representation="review",
        measurement={"snapshot_id": after.snapshot_id},
        baseline={"kind": "explicit", "snapshot_id": before.snapshot_id},
    )
    # The commit's diff holds the edit; both sides measured it, so nothing in the cart changed.
    assert change["categories"]["LBC"] == 0 and not any(change["categories"][c] for c in CHANGE_CATEGORIES)
    assert change["diff"]["files_changed"] == 0


def test_a_file_modified_after_it_was_measured_is_stale_by_name_and_no_claim_about_it_is_supported(
    project: Project, repo: Path
) -> None:
    clean = project.ingest(measure(repo)["json"], suite="unit")
    context = call(project, "project_context")
    [suite] = [s for s in context["suites"] if s["suite"] == "unit"]
    assert suite["content"]["files"] == [] and suite["content"]["fresh"] > 1  # fresh files are counted only

    edit_cart(repo)  # not measured since
    context = call(project, "project_context")
    [suite] = [s for s in context["suites"] if s["suite"] == "unit"]
    assert suite["content"]["files"] == [["shop/cart.py", "stale"]]
    assert suite["content"]["stale"] == 1
    assert context["claim_status"] != "supported"
    assert any("shop/cart.py" in r and "modified since" in r for r in context["reasons"])

    source = call(project, "coverage_review", task="source", file="shop/cart.py", lines="1-5")
    assert source["snapshot_id"] == clean.snapshot_id
    assert source["claim_status"] == "stale"
    assert "shop/cart.py" in source["reasons"][0]
    exact = call(project, "coverage_review", task="file", file="shop/cart.py", measurement={"suite": "unit"})
    assert exact["claim_status"] == "stale"
    # A file the edit left alone is still answered as measured.
    other = call(project, "coverage_review", task="source", file="shop/__init__.py")
    assert other["claim_status"] != "stale"
    change = call(
        project, "coverage_review", task="change", measurement={"suite": "unit"}, baseline={"kind": "none"}
    )
    assert change["current"]["freshness"].get("shop/cart.py", "stale") == "stale"
