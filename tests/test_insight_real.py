"""Insight on reports a real coverage.py run produced: it finds what coverage.py finds, where it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coverage_core import open_project
from coverage_core.errors import CoverageError, ErrorCode
from coverage_core.service import Service

from .gitrepo import commit, write
from .realcov import make_package, measure

# A module whose every statement runs while some branches never do: no missing line, three partial ones.
FLAGS = {
    "shop/flags.py": """\
def normalise(value, strict=False):
    if strict:
        value = value.strip()
    if value:
        value = value.lower()
    for ch in value:
        if ch == "!":
            break
    return value
""",
    "tests/test_flags.py": """\
from shop.flags import normalise


def test_normalise_strips_in_strict_mode():
    assert normalise(" Yes! ", strict=True) == "yes!"
""",
}
WHOLE = {"max_words": 50_000, "max_bytes": 2_000_000, "max_files": 200, "max_regions": 500}


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The shop package with flags.py, measured once by coverage.py; its JSON report parsed."""
    repo = make_package(tmp_path_factory.mktemp("real") / "shop")
    write(repo, FLAGS)
    commit(repo, "flags")
    reports = measure(repo)
    return repo, json.loads(reports["json"].read_text())


@pytest.fixture
def service(measured: tuple[Path, dict]):
    repo, _ = measured
    with open_project(repo) as project:
        svc = Service(project)
        svc.call("coverage_import", {"report_path": "coverage.json"})
        yield svc


def _targets(svc: Service, **args) -> dict[tuple[str, str | None], dict]:
    data = svc.call(
        "coverage_review", {"task": "insight", "representation": "audit", "limits": WHOLE, **args}
    )["data"]
    return {(t["path"], t["function"]): t for t in data["targets"]}


def _lines(target: dict, kind: str) -> set[int]:
    return {n for r in target["ranges"] if r["kind"] == kind for n in range(r["start"], r["end"] + 1)}


def test_a_nested_functions_outer_lines_are_charged_to_the_outer_function_not_the_nested_one(
    service: Service, measured
) -> None:
    _, report = measured
    cart = report["files"]["shop/cart.py"]["functions"]
    targets = _targets(service)
    # coverage.py: describe misses line 25 and its branch 24->25; its nested label misses nothing.
    assert cart["describe"]["missing_lines"] == [25] and cart["describe.label"]["missing_lines"] == []
    describe = targets[("shop/cart.py", "describe")]
    assert _lines(describe, "uncovered") == {25} and _lines(describe, "partial") == {24}
    assert ("shop/cart.py", "describe.label") not in targets


def test_every_uncovered_line_and_partial_branch_is_charged_to_the_function_coveragepy_names(
    service: Service, measured
) -> None:
    _, report = measured
    targets = _targets(service)
    for path, entry in report["files"].items():
        for name, fn in entry["functions"].items():
            if not name:
                continue
            partial = {a for a, _ in fn["missing_branches"]} - set(fn["missing_lines"])
            got = targets.get((path, name))
            if not fn["missing_lines"] and not partial:
                assert got is None, (path, name)
                continue
            assert got is not None, (path, name)
            assert _lines(got, "uncovered") == set(fn["missing_lines"]), (path, name)
            assert _lines(got, "partial") == partial, (path, name)


def test_a_file_whose_only_gaps_are_partial_branches_is_a_file_with_gaps(service: Service, measured) -> None:
    _, report = measured
    flags = report["files"]["shop/flags.py"]["summary"]
    assert flags["missing_lines"] == 0 and flags["num_partial_branches"] == 3  # what coverage.py says
    data = service.call("coverage_review", {"task": "insight", "limits": WHOLE})["data"]
    files = {f[0]: f for f in data["files"]}
    assert files["shop/flags.py"][1:] == [0, 9, 3]  # no uncovered line, 9 statements, 3 partial lines
    ranked = [f[0] for f in data["files"]]
    assert ranked.index("shop/cart.py") < ranked.index("shop/flags.py")  # uncovered lines rank first
    normalise = _targets(service)[("shop/flags.py", "normalise")]
    assert normalise["uncovered_lines"] == 0 and _lines(normalise, "partial") == {2, 4, 6}


def test_file_focuses_insight_on_that_file(service: Service) -> None:
    data = service.call("coverage_review", {"task": "insight", "file": "shop/flags.py"})["data"]
    assert data["file"] == "shop/flags.py" and data["files_with_gaps"] == 1
    assert [f[0] for f in data["files"]] == ["shop/flags.py"]
    assert {t[0] for t in data["targets"]} == {"shop/flags.py"}
    clean = service.call("coverage_review", {"task": "insight", "file": "shop/__init__.py"})["data"]
    assert clean["files"] == [] and clean["targets"] == [] and clean["files_with_gaps"] == 0
    with pytest.raises(CoverageError) as err:
        service.call("coverage_review", {"task": "insight", "file": "shop/nowhere.py"})
    assert err.value.code is ErrorCode.NOT_FOUND


def test_a_union_of_two_runs_attributes_like_one_run(measured, tmp_path: Path) -> None:
    repo, _ = measured
    with open_project(repo) as project:
        svc = Service(project)
        ids = [
            svc.call("coverage_import", {"report_path": "coverage.json", "suite": s})["data"]["snapshot"][
                "snapshot_id"
            ]
            for s in ("a", "b")
        ]
        one = _targets(svc, measurement={"snapshot_id": ids[0]})
        both = _targets(svc, measurement={"snapshot_ids": ids})
    assert {k: (_lines(t, "uncovered"), _lines(t, "partial")) for k, t in one.items()} == {
        k: (_lines(t, "uncovered"), _lines(t, "partial")) for k, t in both.items()
    }
