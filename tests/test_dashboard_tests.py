"""The dashboard's tests view without a browser: named tests grouped by test function, duplicates as groups.

The pytest history is real: a package measured by coverage.py with a
conftest that switches coverage.py's context to each test's node id and
phase, as pytest-cov's ``--cov-context=test`` names them
(``tests/test_m.py::test_twice[1]|run``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from coverage_core.operations.dashboard_tests import family_of, family_sql
from coverage_core.project import open_project
from coverage_core.service import Service

from .gitrepo import make_repo
from .realcov import measure

# What pytest-cov's --cov-context=test does: each phase of each test is a context named by its node id.
CONTEXTS = """\
import coverage
import pytest


def _switch(item, phase):
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(f"{item.nodeid}|{phase}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    _switch(item, "setup")
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _switch(item, "run")
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    _switch(item, "teardown")
    yield
"""

PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/m.py": "def twice(x):\n    if x:\n        return 2 * x\n    return 0\n",
    "tests/conftest.py": CONTEXTS,
    "tests/test_m.py": (
        "import pytest\n\nfrom pkg.m import twice\n\n\n"
        "@pytest.mark.parametrize('x', range(6))\ndef test_twice(x):\n    assert twice(x) == 2 * x\n\n\n"
        "def test_zero():\n    assert twice(0) == 0\n"
    ),
    ".coveragerc": "[run]\nbranch = True\nsource = pkg\n",
    ".gitignore": ".coverage\ncoverage.*\n__pycache__/\n",
}

LCOV = """TN:test_twice[1]|run
SF:pkg/m.py
DA:1,1
DA:2,1
DA:3,1
DA:4,0
end_of_record
TN:test_twice[2]|run
SF:pkg/m.py
DA:1,1
DA:2,1
DA:3,1
DA:4,0
end_of_record
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    repo = make_repo(tmp_path_factory.mktemp("pytest-ids") / "repo", PACKAGE)
    return repo, measure(repo)["json"]


def section_of(repo: Path, report: Path, **ingest: Any) -> dict[str, Any]:
    with open_project(repo) as project:
        snap = project.ingest(report, **ingest)
        data = Service(project).call("dashboard", {"current": snap.snapshot_id})["data"]
    return dict(data["tests"])


def test_a_pytest_node_id_is_grouped_under_its_test_function_with_its_parameters_and_phase_as_the_case(
    measured: tuple[Path, Path], isolated_home: Path
) -> None:
    repo, report = measured
    tests = section_of(repo, report)
    functions = {f["function"]: f for f in tests["functions"]["items"]}
    assert set(functions) == {"tests/test_m.py::test_twice", "tests/test_m.py::test_zero"}
    twice = functions["tests/test_m.py::test_twice"]
    assert twice["cases"] == 6 and not twice["cases_truncated"]
    assert [c["case"] for c in twice["shown"]] == [f"[{x}]|run" for x in range(6)]
    assert functions["tests/test_m.py::test_zero"]["cases"] == 1
    assert tests["functions"]["count"] == 2 and tests["count"] == 7
    # the duplicate candidates as readable groups: test_twice[1..5] cover the same items, [0] and test_zero too
    groups = tests["duplicate_families"]
    assert [g["tests"] for g in groups] == [5, 2]
    assert groups[0]["functions"] == [
        {"function": "tests/test_m.py::test_twice", "cases": [f"[{x}]|run" for x in range(1, 6)], "count": 5}
    ]
    assert {f["function"] for f in groups[1]["functions"]} == set(functions)


def test_lcov_test_names_are_taken_as_given(tmp_path: Path, isolated_home: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"pkg/m.py": PACKAGE["pkg/m.py"]})
    (tmp_path / "r.lcov").write_text(LCOV)
    tests = section_of(repo, tmp_path / "r.lcov")
    # each name is its own test function: nothing is grouped (the page lists the named tests as they are)
    assert tests["functions"] is None
    assert sorted(n["name"] for n in tests["named"]) == ["test_twice[1]|run", "test_twice[2]|run"]
    assert tests["duplicate_families"][0]["functions"] == [
        {"function": "test_twice[1]|run", "cases": [], "count": 1},
        {"function": "test_twice[2]|run", "cases": [], "count": 1},
    ]


@pytest.mark.parametrize(
    ("name", "function"),
    [
        ("tests/a.py::test_f[1-x]|run", "tests/a.py::test_f"),
        ("tests/a.py::TestC::test_f[a|b]|teardown", "tests/a.py::TestC::test_f"),
        ("tests/a.py::test_g|setup", "tests/a.py::test_g"),
        ("tests.test_cart.test_total", "tests.test_cart.test_total"),  # dynamic_context = test_function
        ("tests/a.py::test_h|other", "tests/a.py::test_h|other"),  # not a phase: part of the name
    ],
)
def test_the_pytest_rule_strips_the_phase_then_the_parameters(name: str, function: str) -> None:
    assert family_of("coveragepy", name) == function
    assert family_of("lcov", name) == name
    # the store groups with the same rule in SQL
    sql = duckdb.connect().execute(f"SELECT {family_sql('coveragepy', '?')}", [name]).fetchone()
    assert sql == (function,)
